"""Secret redaction for everything kenning stores.

Every piece of text that reaches the store (item titles, bodies, evidence, tags, and the
prompts that the agent hooks capture on every turn) goes through :func:`redact` first.
Each secret is replaced by ``[redacted:<kind>]``; :func:`mostly_secret` tells the caller
when an item is basically nothing but a secret and should be refused outright.

Design
======

The module sits on the prompt hook's hot path, so it uses the standard library only,
does nothing at import time beyond compiling some regular expressions and building two
small tables, and is linear in the size of its input.  Python's regex engine is only
fast when a pattern starts with a literal (it then skips ahead with a substring search),
so every token rule starts with its prefix (``ghp_``, ``sk-ant-``, ``AKIA``, ``eyJ``,
``://``...) and checks what comes before it afterwards; the NAME=value rule searches
for four literal keywords in an ASCII-lower-cased byte copy of the text and only then
runs its full pattern; and long runs for the entropy rule are found with a byte
translation plus a substring search.  Quantifiers are possessive or bounded, no pattern
is retried along a long run, and a bare value is measured once however many keywords it
holds, so the cost stays linear (the tests feed 200 kB of every rule's prefix repeated).
Measured on a loaded 2-core box (CPU time): a 1 MB prompt of code, prose, logs and a few
secrets takes ~25 ms, 1 MB of Python source ~14 ms, 1 MB made of nothing but secrets and
look-alikes ~85 ms, and the worst adversarial megabyte (``token: `` repeated) ~1 s.

Redaction works in two phases over the *original* text:

1. **Structured rules** find spans that are secrets by their shape or by what they are
   assigned to.  Each has a kind:

   ``private_key``
       A whole PEM block, ``-----BEGIN … PRIVATE KEY-----`` through the matching ``END``
       line (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP, plain PKCS#8), including
       ``Proc-Type``/``DEK-Info`` headers and JSON-escaped ``\\n`` line breaks.  A block
       whose ``END`` line is missing (a truncated paste) is redacted to the end of its
       base64 body.  A body of fewer than 32 base64 characters is code that mentions
       the header line, not a key.
   ``github_token``
       ``ghp_ gho_ ghu_ ghs_ ghr_`` + 36 or more base62 characters, and fine-grained
       ``github_pat_`` tokens (60 or more characters after the prefix, leniently).
   ``anthropic_key``
       ``sk-ant-`` + 20 or more key characters (real keys such as ``sk-ant-api03-…`` and
       ``sk-ant-admin01-…`` are ~100).  The OpenAI rule refuses ``sk-ant-``, so an
       Anthropic key is never reported as an OpenAI key.
   ``openai_key``
       ``sk-`` (``sk-proj-``, ``sk-svcacct-``, ...) + 20 or more characters of
       ``[A-Za-z0-9_-]`` including a digit (which keeps words like ``sk-learn-…`` out).
   ``aws_access_key_id``
       ``AKIA``/``ASIA``/``ABIA``/``ACCA`` + exactly 16 uppercase letters or digits.
   ``aws_secret_key``
       A 40-character ``[A-Za-z0-9/+]`` value assigned to a name that says "secret" and
       "aws" or "access" (``aws_secret_access_key``, ``"SecretAccessKey": …``), or a
       standalone mixed-case 40-character token within 120 characters of an access key
       id (credential CSVs, ``aws configure`` transcripts).
   ``slack_token``
       ``xoxb- xoxp- xoxa- xoxr- xoxs- xoxo- xoxe-`` tokens, ``xapp-`` app tokens, and the
       path of ``hooks.slack.com/services|workflows|triggers/…`` webhook URLs.
   ``jwt``
       Three base64url segments whose header starts with ``eyJ`` (base64 of ``{"``); the
       signature may be empty.
   ``secret_assignment``
       * ``NAME=value``, ``NAME: value``, ``export NAME=value``, ``"NAME": "value"``,
         ``--name=value``, ``?name=value&...`` (quotes optional) where NAME has a word
         that is or ends with SECRET, TOKEN, PASSWORD, PASSWD or APIKEY / API_KEY,
         case-insensitively (``DB_PASSWORD``, ``githubToken``, ``x-api-key``,
         ``PGPASSWORD``, ``csrftoken``, ``settings.SECRET_KEY``).  The name and the
         separator stay, the value goes: ``DB_PASSWORD=[redacted:secret_assignment]``.
       * the password of ``scheme://user:password@host`` URLs (up to the last ``@``);
       * the credential of ``Authorization: Bearer|Basic|Token …`` headers, and of a bare
         ``Bearer <token>`` when the token has 16+ characters including a digit.
   ``high_entropy`` (phase 2)
       Runs of 32 or more characters of ``[A-Za-z0-9+/_-]`` (plus ``=`` padding) in the
       text *between* the phase-1 spans, when they look random: see below.

   A token rule does not fire inside a longer word (``task-…`` is not ``sk-…``), unless
   the character before it belongs to another secret: a key glued to the dashes of a
   PEM ``END`` line is still a key.

2. Overlapping spans are merged, and a merged span takes the most specific kind among
   its parts (``OPENAI_API_KEY=sk-proj-…`` reports ``openai_key``, not
   ``secret_assignment``; the order is :data:`KINDS`); spans that merely touch stay
   separate.  ``secret_chars`` counts the characters of the input inside the spans.

What is deliberately left alone
===============================

*Assignments* are where false positives would hurt most, because prompts are full of code:

* Names whose secret word is only part of a longer word (``max_tokens``, ``tokenizer``,
  ``secretary``, ``passwordless``), or is followed by a metadata word (``token_count``,
  ``TOKEN_LIMIT``, ``password_min_length``, ``token_uri``, ``secretName``,
  ``PASSWORD_FILE``), or is an object whose attribute is assigned (``token.info``), do
  not name secrets.
* Empty values, values containing ``[redacted:``, and placeholders stay: ``$VAR``,
  ``${VAR}``, ``$(cmd)``, ``%VAR%``, ``{{ var }}``, ``{}``, ``%s``, ``<your-token>``,
  ``xxx``, ``****``, anything containing ``...`` or ``…``, ``your_…``/``…_here``, and
  the words ``changeme``, ``placeholder``, ``redacted``, ``none``, ``null``, ``true``,
  ``false``, ``todo``, ``dummy``, ``example``, ``secret``, ``password``, ``token``, ``str``…
  URL and path values (``SECRET=/run/secrets/db``) and colours stay too.
* Code stays: annotations (``password: str``, ``token: Optional[str]``,
  ``secret: SecretStr``), calls and subscripts of word-like names and bracketed values
  (``token = get_token()``, ``os.environ["API_KEY"]``, ``(0, x)``; ``Kp(2mQ`` is data),
  attribute paths (``self.token``, ``process.env.API_KEY``),
  identifiers that are themselves secret names (``token=access_token``), constants
  (``FG_DEFAULT``) and small numbers (``ERRORTOKEN = 60``), keyword arguments passing a
  variable (``login(password=pw)``), spaced assignments of a digit-free identifier or of
  an expression (``password = pw``, ``TOKEN = Ignore + Plain``; an ini file's
  ``password = hunter2`` still goes, thanks to the digit), and quoted values containing
  whitespace or regex syntax (messages and patterns, not secrets).
* After a colon with an unquoted name the separator needs a space (``passwd:shell`` is
  a format), and a bare value must end the line or be followed by ``,`` ``;`` ``)``
  ``]`` ``}``, a quote or a comment: prose such as ``Token: see the docs`` survives
  while YAML lines and HTTP headers are caught.

*High entropy* is the backstop for unknown token formats, tuned to let look-alikes
through.  A run (or, for a path, a ``/`` segment) is reported only if all of these hold:

* it is at least 32 characters long, not counting ``=`` padding;
* it is not a hash or an identifier: runs whose ``-``/``_``/``/``/``+``-separated parts
  are each pure hex, pure letters or pure digits stay (git SHAs, sha256 digests, UUIDs,
  ``0x…`` constants, ``NODE_FUSE_<hex>``), and so do ``sha256-``/``sha384-``/``sha512-``
  subresource-integrity digests;
* it has no ``_``/``-`` separator every 10 characters (snake/kebab words such as
  ``sodium_crypto_aead_aes256gcm_encrypt``);
* it mixes at least two of upper case, lower case and digits;
* it is not an alphabet listing (``ABCDEFGH…``, ``01234567…``);
* its Shannon entropy is at least 3.8 bits per character;
* it does not read as words: at most 40% of its letter pairs are among the 100 most
  common English letter pairs (identifiers score 50-80%, random base62 about 15%).

A run with ``/`` and a lower-case word as one of its segments is a path or URL and is
judged segment by segment, so ``/home/user/src/…`` survives and a random 32+ character
segment of a URL path does not.  Runs over 512 characters are judged on their first 512.
ULIDs (26 characters) and short SHAs are under the length floor.  Measured: random
base62/base64 tokens are caught 99% of the time at 32-40 characters and 99.9% at 64;
of the 38,769 distinct 32+ character runs in a Python installation's paths, sources and
docs, 23 are flagged, and they are base64 data, random test strings, Google Docs ids
and a few texinfo anchors.  Base64 of ordinary words *is* flagged: it cannot be told
from a key without decoding, and redacting it costs little.

Idempotence
===========

``redact(redact(x).text).text == redact(x).text``.  No rule can match inside a marker
(they hold no prefix, no ``=``/``: `` after a keyword, no 32-character run), values and
passwords containing ``[redacted:`` are left alone, phase 2 cuts runs at phase-1 spans
exactly where a second pass finds markers, and a token after a redacted neighbour is
accepted in the first pass just as it is after a ``]`` in the second.
"""

from __future__ import annotations

import functools
import math
import operator
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["KINDS", "Redaction", "mostly_secret", "redact"]

#: Every kind :func:`redact` can report, most specific first.  When spans of different
#: kinds overlap, the merged span takes the kind that comes first here.
KINDS: tuple[str, ...] = (
    "private_key",
    "anthropic_key",
    "openai_key",
    "github_token",
    "slack_token",
    "aws_access_key_id",
    "aws_secret_key",
    "jwt",
    "secret_assignment",
    "high_entropy",
)
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}


@dataclass(frozen=True, slots=True)
class Redaction:
    """The result of :func:`redact`."""

    text: str  # the text with each secret replaced by "[redacted:<kind>]"
    kinds: tuple[str, ...]  # kinds found, in order of first appearance, no duplicates
    secret_chars: int  # how many characters of the input were secret


_Span = tuple[int, int, str]


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_F = re.ASCII
_FI = re.ASCII | re.IGNORECASE

# --- token formats -------------------------------------------------------------------

# BEGIN line, a body of base64 and "Proc-Type: 4,ENCRYPTED"-style headers (with literal
# \n when JSON-escaped), and the END line when it is there.
_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?P<body>(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----))*+)"
    r"(?P<end>-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
    _F,
)
_PEM_MIN_BODY = 32  # base64 characters; less is code that mentions the header line

_Rx = re.Pattern[str]


def _token_rule(kind: str, prefix: str, body: str, word: str) -> tuple[str, _Rx, _Rx]:
    """A token format: ``prefix`` (fixed width) then ``body``.  The scanning pattern
    starts with the prefix, so that the regex engine can skip ahead to it with a
    substring search, and then refuses a prefix preceded by a ``word`` character (the
    token is part of a longer word: "task-..." is not "sk-..."; this also keeps a failed
    match from being retried at every position of a long run).  The second pattern has
    no such check; it is tried where another secret ends, because a token glued to a
    secret (a key right after the dashes of a PEM END line) is a token all the same."""
    scan = re.compile(f"{prefix}(?<![{word}]{prefix}){body}", _F)
    return kind, scan, re.compile(prefix + body, _F)


_TOKEN_RULES = (
    _token_rule("github_token", "gh[pousr]_", "[A-Za-z0-9]{36,255}+", "A-Za-z0-9_"),
    _token_rule("github_token", "github_pat_", "[A-Za-z0-9_]{60,255}+", "A-Za-z0-9_"),
    _token_rule("anthropic_key", "sk-ant-", "[A-Za-z0-9_-]{20,}+", "A-Za-z0-9_-"),
    _token_rule("openai_key", "sk-", "(?!ant-)[A-Za-z0-9_-]{20,}+", "A-Za-z0-9_-"),
    _token_rule(
        "aws_access_key_id", "A(?:KIA|SIA|BIA|CCA)", "[A-Z0-9]{16}(?![A-Za-z0-9])", "A-Za-z0-9"
    ),
    _token_rule("slack_token", "xox[abeoprs]-", "[A-Za-z0-9-]{10,}+", "A-Za-z0-9"),
    _token_rule("slack_token", "xapp-", "[0-9]-[A-Za-z0-9-]{10,}+", "A-Za-z0-9"),
    _token_rule(
        "jwt", "eyJ", r"[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+", "A-Za-z0-9_-"
    ),
)
_DIGIT = re.compile(r"[0-9]")
_SLACK_HOOK = re.compile(
    r"hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_-]{8,}+)", _F
)
_AWS_SECRET_NEAR = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _F)
_AWS_SECRET_VALUE = re.compile(r"[A-Za-z0-9/+]{40}", _F)

# The password runs to the last @ of the authority: "p@ss" is often left unencoded.
_URL_CREDS = re.compile(r"://[^\s/?#@:\[\]]{0,256}:([^\s/?#]{1,256})@", _F)
# ${PASS}, $PASS, <password>, ****, xxx, [redacted:...]; literal words are redacted.
_URL_PLACEHOLDER = re.compile(r"\$|<[^<>]*>\Z|[*xX]+\Z|.*\[redacted:", _F)
_AUTH_HEADER = re.compile(
    r"uthorization(?<=[Aa]uthorization)(?<![A-Za-z0-9_][Aa]uthorization)"
    r"[\"']?[ \t]*[:=][ \t]*[\"']?(?:[Bb]earer|[Bb]asic|[Tt]oken)[ \t]+"
    r"([A-Za-z0-9._~+/=-]{8,}+)",
    _F,
)
_BEARER = re.compile(
    r"earer(?<=[Bb]earer)(?<![A-Za-z0-9][Bb]earer)[ \t]+([A-Za-z0-9._~+/=-]{16,}+)", _F
)

# --- NAME=value assignments ------------------------------------------------------------

_ASSIGN = re.compile(
    r"""
    (?:secret|token|passw(?:or)?d|api[_-]?key)   # the secret word inside the name
    [A-Za-z0-9_.-]{0,48}+                        # the rest of the name
    (?P<nq>["']?)                                # closing quote of a quoted name
    [ \t]*+
    (?P<sep>:(?![:=])|=(?![=>~]))                # not ::, :=, ==, =>, =~
    (?P<sp>[ \t]*+)
    (?:
        [bfru]{0,2}"(?P<dq>[^"\\\r\n]*+(?:\\.[^"\\\r\n]*+)*+)"   # b"...", r'...', f"..."
      | [bfru]{0,2}'(?P<sq>[^'\\\r\n]*+(?:\\.[^'\\\r\n]*+)*+)'
      | (?P<bare>[^\s"'`,;)\]}])                  # its first character; see _assignments
    )
    """,
    _FI | re.VERBOSE,
)
_KEYWORDS = tuple(re.compile(word) for word in (b"secret", b"token", b"passw", b"api"))
_NAME_CHARS = string.ascii_letters + string.digits + "_.-"
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", _F)
_SECRET_WORDS = ("password", "passwd", "secret", "token", "apikey")
# Words that, after the secret word, make the name about the secret rather than the
# secret itself: TOKEN_LIMIT, password_min_length, token_uri, SECRET_NAME, ...
_META_WORDS = _wordset(
    """
    budget cache class cmd command config cost count counts counter dir encoding
    endpoint env error errors estimate expiration expires expiry field fields file files
    format header helper hint idx index kind label len length lifetime limit limits loc
    location manager map max message min model msg name names offset options opts param
    path paths pattern placeholder policy position prefix price prompt provider range
    rate ref regex required rules schema settings size source store strength suffix
    timeout ttl type types uri url usage validator var
    """
)
_PLACEHOLDER_WORDS = _wordset(
    """
    changeme replaceme placeholder redacted none null nil undefined true false todo tbd
    fixme dummy example secret secrets password passwd pass token tokens apikey key
    required optional str string bytes int bool any number unknown object bearer basic
    """
)
_PLACEHOLDER = re.compile(
    r"""
    \$[{(]                         # ${VAR}, $(cmd)
    | \$[A-Za-z_][A-Za-z0-9_]*\Z   # $VAR
    | %[A-Za-z_][A-Za-z0-9_]*%\Z   # %VAR%
    | \{                           # {{ template }}, {}, {0}, f"{password!r}"
    | <[^<>]*>\Z                   # <your-token>
    | [xX*.\u2022_-]+\Z            # xxxx, ****, ----
    | (?:your|my|insert|put|enter|replace|add)[-_]
    | .*[-_]here\Z
    | .*(?:\.\.\.|\u2026)          # truncated: ghp_...
    | .*\[redacted:                # already redacted
    | %[-\#0-9.]*[sdrfxiu]\Z       # printf-style %s, %r
    | \#[0-9a-f]{3,8}\Z            # a colour
    | [A-Za-z][A-Za-z0-9+.-]*://   # a URL (credentials in it have their own rule)
    | (?:/|~/|\./|\.\./)           # a path
    """,
    _FI | re.VERBOSE,
)
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*+(?:\.[A-Za-z_$][\w$]*+)++[!?]?", _F)
# A bracket first, or a call or subscript of a word-like name: (0, x), get_token(),
# b64encode(, os.environ[, len(x); but not A000000( or aB3(dE5, which are data.
_CALL = re.compile(r"[(\[]|.*?[A-Za-z]{3}[\w$]*+[(\[]", _F)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*+", _F)
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++", _F)
_TYPE_NAME = re.compile(r"[A-Z][a-z]++(?:[A-Z][a-z]++)*+", _F)
_SMALL_NUMBER = re.compile(r"[-+]?[0-9]{1,4}(?:\.[0-9]+)?", _F)
_ALNUM = re.compile(r"[A-Za-z0-9]", _F)
_REGEX_SYNTAX = re.compile(r"\(\?|\\[wdsbWDSB]|\[\^|\][+*?]", _F)
_BARE_STOP = re.compile(r"[\s\"'`,;)\]}]", _F)
_VALUE_SAMPLE = 512  # longer bare values are judged on their first 512 characters
_NEXT_PARAM = re.compile(r"&(?=[A-Za-z0-9_.\[\]-]+=)", _F)
_COLON_END = re.compile(r"[ \t]*+(?:\Z|[\r\n,;)\]}#]|//)", _F)
_SPACES = frozenset(" \t")
_QUOTES = frozenset("\"'`")

# --- high entropy ----------------------------------------------------------------------

# Runs of token characters, [A-Za-z0-9+/_-]{32,} plus "=" padding, are found on bytes.
_MIN_RUN = 32
_RUN_NEEDLE = b"a" * _MIN_RUN
_RUN_CHARS = string.ascii_letters + string.digits + "+/_-"
_RUN_BYTES = bytes(ord("a") if chr(b) in _RUN_CHARS else ord(" ") for b in range(256))
_NON_HEX_BYTES = bytes(
    ord("n") if chr(b) in _RUN_CHARS and chr(b) not in string.hexdigits + "-" else ord(" ")
    for b in range(256)
)
_HEX_RUN = re.compile(r"(?:0x)?[0-9a-fA-F]++(?:[-_/+][0-9a-fA-F]++)*+", _F)
_PURE_PART = re.compile(r"(?:0x)?[0-9a-fA-F]*|[A-Za-z]*|[0-9]*", _F)
_PART_SEP = re.compile(r"[-_/+]", _F)
_SRI = re.compile(r"sha(?:256|384|512)-", _F)
_PATH_SEGMENT = re.compile(r"[a-z0-9._-]*[a-z]{2}[a-z0-9._-]*", _F)
_LETTER_RUNS = re.compile(r"[a-z]{2,}", _F)
_VOWEL = re.compile(r"[aeiouy]", _F)
_CONSONANTS4 = re.compile(r"[b-df-hj-np-tv-xz]{4}", _F)
# The hundred most frequent letter pairs of English text.
_COMMON_PAIRS = _wordset(
    """
    th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou
    io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di
    fo ho pe ec pr no ct us ac ot il tr ly nc et ut ss so rs un lo wa ge ie wh ee wi em
    ad ol rt po we na ul ni ts mo ow pa im mi ai sh ir su id os iv
    """
)
_MIN_ENTROPY = 3.8
_MAX_WORDINESS = 0.4
_SAMPLE = 512  # long runs (base64 blobs) are judged on their first _SAMPLE characters
_MAX_PATH = 1024
_C_LOG_C = (0.0, *(c * math.log2(c) for c in range(1, _SAMPLE + 1)))
_UPPER = re.compile(r"[A-Z]", _F)
_LOWER = re.compile(r"[a-z]", _F)


# --------------------------------------------------------------------------------------


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` by ``[redacted:<kind>]``."""
    spans = _spans(text)
    if not spans:
        return Redaction(text, (), 0)
    out: list[str] = []
    kinds: dict[str, None] = {}
    pos = 0
    secret = 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(f"[redacted:{kind}]")
        kinds[kind] = None
        secret += end - start
        pos = end
    out.append(text[pos:])
    return Redaction("".join(out), tuple(kinds), secret)


def mostly_secret(text: str) -> bool:
    """True when secrets make up most of the text's non-whitespace characters (> 50%)
    after redaction, i.e. the item is basically a secret and should be refused."""
    total = len("".join(text.split()))
    if not total:
        return False
    secret = sum(len("".join(text[s:e].split())) for s, e, _ in _spans(text))
    return secret * 2 > total


# --------------------------------------------------------------------------------------


def _spans(text: str) -> list[_Span]:
    """All secret spans of ``text``, merged, sorted and non-overlapping."""
    found: list[_Span] = []
    add = found.append
    # One byte per character (non-ASCII becomes "?"), for fast case-folded and
    # character-class searches that keep the offsets of ``text``.
    raw = text.encode("ascii", "replace")
    if "PRIVATE KEY" in text:
        for m in _PEM.finditer(text):
            body = m.start("body")
            if len(_ALNUM.findall(text, body, min(m.end("body"), body + 256))) >= _PEM_MIN_BODY:
                # A truncated block (no END line) ends with its last base64 character.
                end = m.end() if m.group("end") else body + len(m.group("body").rstrip())
                add((m.start(), end, "private_key"))
    for kind, scan, _ in _TOKEN_RULES:
        for m in scan.finditer(text):
            if _token_ok(kind, m):
                add((m.start(), m.end(), kind))
    for m in _SLACK_HOOK.finditer(text):
        add((m.start(1), m.end(1), "slack_token"))
    for m in _URL_CREDS.finditer(text):
        if not _URL_PLACEHOLDER.match(m.group(1)):
            add((m.start(1), m.end(1), "secret_assignment"))
    for pattern in (_AUTH_HEADER, _BEARER):
        for m in pattern.finditer(text):
            value = m.group(1)
            if _placeholder(value) or (pattern is _BEARER and not _DIGIT.search(value)):
                continue
            add((m.start(1), m.end(1), "secret_assignment"))
    _assignments(text, raw, add)

    merged = _merge(found)
    ends = [end for _, end, _ in merged]
    while ends:  # tokens glued to the end of another secret; see _token_rule
        glued = [
            (g.start(), g.end(), kind)
            for end in ends
            for kind, _, pattern in _TOKEN_RULES
            if (g := pattern.match(text, end)) is not None and _token_ok(kind, g)
        ]
        ends = [end for _, end, _ in glued]
        merged = _merge(merged + glued)
    ids = [span for span in merged if span[2] == "aws_access_key_id"]
    if ids:
        windows = _merge([(max(0, s - 120), e + 120, k) for s, e, k in ids])
        near = [  # the secret access key next to an access key id
            (m.start(), m.end(), "aws_secret_key")
            for start, end, _ in windows
            for m in _AWS_SECRET_NEAR.finditer(text, start, end)
            if _mixed_case(m.group())
        ]
        merged = _merge(merged + near)
    # Phase 2: high-entropy runs in the gaps between the structured spans.
    entropy: list[_Span] = []
    mapped = raw.translate(_RUN_BYTES)
    non_hex = raw.translate(_NON_HEX_BYTES)
    pos = 0
    for start, end, _ in [*merged, (len(text), len(text), "")]:
        if start - pos >= _MIN_RUN:
            _entropy_spans(text, raw, mapped, non_hex, pos, start, entropy)
        pos = end
    if entropy:
        merged = sorted(merged + entropy)
    return merged


def _token_ok(kind: str, m: re.Match[str]) -> bool:
    return kind != "openai_key" or _DIGIT.search(m.group()) is not None  # not sk-learn-…


def _merge(spans: list[_Span]) -> list[_Span]:
    if len(spans) < 2:
        return spans
    spans.sort()
    merged: list[_Span] = []
    cur_start, cur_end, cur_kind = spans[0]
    for start, end, kind in spans[1:]:
        if start < cur_end:  # overlap: one span, the most specific kind
            cur_end = max(cur_end, end)
            if _RANK[kind] < _RANK[cur_kind]:
                cur_kind = kind
        else:
            merged.append((cur_start, cur_end, cur_kind))
            cur_start, cur_end, cur_kind = start, end, kind
    merged.append((cur_start, cur_end, cur_kind))
    return merged


def _mixed_case(token: str) -> bool:
    return not token.isupper() and not token.islower() and not _PURE_PART.fullmatch(token)


# --- assignments -------------------------------------------------------------------------


def _assignments(text: str, raw: bytes, add: Callable[[_Span], None]) -> None:
    # Searching for four literals in lower-cased bytes is ~20x faster than one
    # case-insensitive alternation over the text.
    low = raw.lower()
    hits = sorted(m.start() for kw in _KEYWORDS for m in kw.finditer(low))
    pos = 0
    bare_run = (0, 0)  # the last bare value's extent: values inside it end where it ends
    for hit in hits:
        if hit < pos:
            continue
        m = _ASSIGN.match(text, hit)
        if m is None:
            continue
        if m.group("bare") is None:
            group = "dq" if m.group("dq") is not None else "sq"
            start, end = m.span(group)
            value = m.group(group)
        else:
            # The regex takes one character of a bare value; its end is found here, once
            # per run, so that a long run holding many keywords is not rescanned for each.
            start = m.start("bare")
            if not bare_run[0] <= start < bare_run[1]:
                stop = _BARE_STOP.search(text, start)
                bare_run = (start, stop.start() if stop else len(text))
            end = bare_run[1]
            value = text[start : min(end, start + _VALUE_SAMPLE)]
            if cut := _NEXT_PARAM.search(value):
                value = value[: cut.start()]  # a=b&c=d: the value ends at the next one
                end = start + len(value)
        span = _assignment_span(text, m, value, start, end)
        if span is not None:
            add(span)
        # Go on after a redacted value, or inside a value that stays: a URL held in
        # ``tokenhttps://…?x=1&api_key=…`` has an assignment of its own.
        pos = end if span is not None else start


def _assignment_span(text: str, m: re.Match[str], value: str, start: int, end: int) -> _Span | None:
    head = m.start()
    before_keyword = text[max(0, head - 64) : head]
    head -= len(before_keyword) - len(before_keyword.rstrip(_NAME_CHARS))
    # token.info is an attribute of a token object; settings.SECRET_KEY is a secret.
    name_kind = _name_kind(text[head : m.start("nq")].lstrip(".-").rpartition(".")[2])
    if name_kind is None:
        return None
    before = text[head - 1] if head else ""
    quote = m.group("nq")
    if quote and before != quote:
        return None
    quoted_name = bool(quote)
    colon = m.group("sep") == ":" and not quoted_name  # YAML, headers, prose
    if colon and not m.group("sp"):
        return None  # passwd:shell, password:%s
    if _skip_value(value):
        return None
    bare = m.group("bare") is not None
    if not bare:
        if any(c.isspace() for c in value) or _REGEX_SYNTAX.search(value):
            return None  # a message or a pattern, not a secret
    else:
        if _code(value):
            return None
        if quoted_name and _IDENT.fullmatch(value) and not _DIGIT.search(value):
            return None  # {"token": tok} in code
        if m.group("sep") == "=":
            spaced = bool(m.group("sp")) or text[m.start("sep") - 1] in _SPACES
            if spaced and (
                (_IDENT.fullmatch(value) and not _DIGIT.search(value))
                or not _COLON_END.match(text, end)
            ):
                return None  # code: password = pw, TOKEN = Ignore + PlainToken
            if _IDENT.fullmatch(value) and _kwarg(text, head, end):
                return None  # login(password=pw)
        elif colon and _TYPE_NAME.fullmatch(value):
            return None  # an annotation: secret: SecretStr
    # After a colon a bare value must end the line (or the item, or a quoted header),
    # else it is prose: "Token: see the docs".
    if colon and bare and text[end : end + 1] not in _QUOTES and not _COLON_END.match(text, end):
        return None
    if name_kind == "aws_secret_key" and _AWS_SECRET_VALUE.fullmatch(value):
        return (start, end, "aws_secret_key")
    return (start, end, "secret_assignment")


@functools.lru_cache(maxsize=512)
def _name_kind(name: str) -> str | None:
    """None unless ``name`` names a secret; "aws_secret_key" when it names an AWS
    secret access key (aws_secret_access_key, SecretAccessKey)."""
    words = [w.lower() for w in _WORDS.findall(name)]
    if not _secret_name(words):
        return None
    if "secret" in words and ("aws" in words or "access" in words):
        return "aws_secret_key"
    return "secret_assignment"


def _secret_name(words: list[str]) -> bool:
    """Does a name (split into lower-case words) name a secret?"""
    for i, word in enumerate(words):
        hit = word == "api" and words[i + 1 : i + 2] in (["key"], ["keys"])
        if not hit:
            for secret in _SECRET_WORDS:
                at = word.find(secret)
                if at >= 0 and word[at + len(secret) :] in ("", "key", "keys"):
                    hit = True
                    break
        if hit and not any(w in _META_WORDS for w in words[i + 1 :]):
            return True
    return False


def _placeholder(value: str) -> bool:
    if _PLACEHOLDER.match(value):
        return True
    return value.lower().replace("_", "").replace("-", "") in _PLACEHOLDER_WORDS


def _skip_value(value: str) -> bool:
    """Values that are not secrets whatever they are assigned to."""
    if not _ALNUM.search(value) or _placeholder(value):
        return True
    if _IDENT.fullmatch(value) and not _DIGIT.search(value):
        # another secret's name: token=access_token, CHALLENGE_PASSWORD: "challengePassword"
        flat = value.lower().replace("_", "")
        return any(word in flat for word in _SECRET_WORDS)
    return False


def _code(value: str) -> bool:
    """An unquoted value that is an expression, constant or number rather than data."""
    return (
        bool(_CALL.match(value))  # get_token(), os.environ[
        or bool(_DOTTED.fullmatch(value) and not _DIGIT.search(value))  # self.token
        or bool(_CONSTANT.fullmatch(value))  # FG_DEFAULT
        or bool(_SMALL_NUMBER.fullmatch(value))  # ERRORTOKEN = 60, token = -1
    )


def _kwarg(text: str, head: int, end: int) -> bool:
    """Is ``name=value`` a keyword argument: after ( or , and before , or )?"""
    i = head - 1
    while i >= 0 and text[i] in _SPACES:
        i -= 1
    j = end
    while j < len(text) and text[j] in _SPACES:
        j += 1
    return i >= 0 and text[i] in "(," and j < len(text) and text[j] in ",)"


# --- high entropy ----------------------------------------------------------------------


def _runs(raw: bytes, mapped: bytes, non_hex: bytes, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """Where the runs of 32+ token characters are in ``raw[lo:hi]`` (``raw`` has one byte
    per character of the text), with up to two "=" of padding, leaving out runs of
    nothing but hex digits and "-" (hashes, UUIDs), which are never secrets.  The
    scanning is done by bytes methods: ``mapped`` has "a" for every token byte, so a
    run starts where a substring search finds 32 of them; ``non_hex`` has "n" for every
    token byte that is not a hex digit or "-"."""
    start = mapped.find(_RUN_NEEDLE, lo, hi)
    while start >= 0:
        end = mapped.find(b" ", start, hi)
        if end < 0:
            end = hi
        if non_hex.find(b"n", start, end) >= 0:
            stop = end  # "=" padding, as long as no token character follows it
            while stop < hi and stop - end < 2 and raw[stop] == 61:  # "="
                stop += 1
            while stop > end and stop < hi and mapped[stop] == 97:  # "a"
                stop -= 1
            yield start, stop
        start = mapped.find(_RUN_NEEDLE, end, hi)


def _entropy_spans(
    text: str, raw: bytes, mapped: bytes, non_hex: bytes, lo: int, hi: int, out: list[_Span]
) -> None:
    """Add the random-looking runs of ``text[lo:hi]`` to ``out``."""
    for start, stop in _runs(raw, mapped, non_hex, lo, hi):
        run = text[start:stop]
        if "/" in run and _path_like(run):
            pos = start
            for segment in run.split("/"):
                if len(segment) >= _MIN_RUN and _random(segment):
                    out.append((pos, pos + len(segment), "high_entropy"))
                pos += len(segment) + 1
        elif _random(run):
            out.append((start, stop, "high_entropy"))


@functools.lru_cache(maxsize=1024)
def _path_like(run: str) -> bool:
    """A run with a lower-case word as one of its ``/`` segments is a path or URL.
    Runs longer than any sensible path are base64 blobs, whatever their segments."""
    if len(run) > _MAX_PATH:
        return False
    for segment in run.split("/"):
        if len(segment) >= 3 and _PATH_SEGMENT.fullmatch(segment):
            for word in _LETTER_RUNS.findall(segment):
                if len(word) >= 3 and _VOWEL.search(word) and not _CONSONANTS4.search(word):
                    return True
    return False


@functools.lru_cache(maxsize=4096)  # logs repeat their paths and ids
def _random(run: str) -> bool:
    """Does a run of token characters look like a random secret?"""
    core = run.rstrip("=")[:_SAMPLE]
    n = len(core)
    if n < _MIN_RUN or _HEX_RUN.fullmatch(core) or _SRI.match(core):
        return False  # hex hashes and UUIDs (the common case, checked first)
    if all(_PURE_PART.fullmatch(part) for part in _PART_SEP.split(core)):
        return False  # WORDS_AND_123, NODE_FUSE_<hex>
    if (core.count("_") + core.count("-")) * 10 >= n:
        return False  # snake_case or kebab-case words
    if (_UPPER.search(core) is None) + (_LOWER.search(core) is None) + (
        _DIGIT.search(core) is None
    ) > 1:
        return False  # a single character class
    low = core.lower()
    if "abcdefgh" in low or "01234567" in low:
        return False  # an alphabet listing: ABCDEFGH..., 0123456789...
    if _entropy(core) < _MIN_ENTROPY:
        return False
    return _wordiness(low) <= _MAX_WORDINESS


def _entropy(s: str) -> float:
    """Shannon entropy in bits per character: log2(n) - sum(c * log2(c)) / n."""
    n = len(s)
    return math.log2(n) - sum(map(_C_LOG_C.__getitem__, Counter(s).values())) / n


def _wordiness(low: str) -> float:
    """The share of adjacent letter pairs (of lower-cased text) common in English."""
    runs = _LETTER_RUNS.findall(low)
    pairs = sum(map(len, runs)) - len(runs)
    if not pairs:
        return 0.0
    common = sum(map(_COMMON_PAIRS.__contains__, map(operator.add, low, low[1:])))
    return common / pairs
