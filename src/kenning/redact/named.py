"""Secrets recognised by what names them: assignments, headers, URLs, prose, commands.

A value is a secret here because of the words around it, not its shape:
``DB_PASSWORD=hunter2``, ``https://user:pw@host``, ``Authorization: Bearer ...``,
``the password is hunter2``, ``mysql -p'hunter2'``, ``<password>hunter2</password>``,
``curl -u deploy:hunter2``, ``machine x login y password hunter2``.  Each rule starts
from a literal (a keyword found in a lower-cased byte copy of the text, ``://``,
``uthorization``, a command name) and looks a bounded distance around it, so the work
stays linear; see ``kenning.redact`` for what is deliberately left alone.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Iterator

from kenning.redact.entropy import public_prefix, random_letters
from kenning.redact.formats import unsigned_jwt
from kenning.redact.lazy import lazy

_F = re.ASCII
_FI = re.ASCII | re.IGNORECASE
_Span = tuple[int, int, str]
Add = Callable[[_Span], None]


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# --- URLs and headers ----------------------------------------------------------------

# The password runs to the last @ of the authority: "p@ss" is often left unencoded.
# (a password holding a raw "?" is read too: people paste postgres://app:Ab?cd@host)
_URL_CREDS = lazy(
    r"://[^\s/?#@:\[\]]{0,256}:([^\s/?]{1,256}|[^\s/?=&@]{1,128}\?[^\s/?=&@]{1,128})@", _F
)
# A token alone before the @ is the credential (a Sentry DSN's key, a token used as the
# user name): https://<32 hex>@o1.ingest.sentry.io/2, https://<token>@git.example.com
_URL_USER = lazy(r"://(?P<user>[A-Za-z0-9_.~+-]{20,256})@(?P<host>[^\s/?#@]{1,256})", _F)
_URL_USER_HEX = lazy(r"[0-9a-f]{32,}", _F)
# ${PASS}, $PASS, <password>, ****, xxx, [redacted:...]; literal words are redacted.
_URL_PLACEHOLDER = lazy(r"\$|<[^<>]*>\Z|[*xX]+\Z|.*\[redacted:|\{+[^{}]*\}+\Z|%\(", _F)
# The word itself, as docs write the shape: postgres://user:password@localhost/db
_URL_WORDS = frozenset(("password", "passwd", "pwd", "secret"))
_AUTH_HEADER = lazy(
    r"uthorization(?<=[Aa]uthorization)(?<![A-Za-z0-9_][Aa]uthorization)"
    # its value after : or =, or after a space when a scheme follows (nginx's
    # proxy_set_header Authorization "Basic ...")
    # or as the next argument of a call that sets a header: ("Authorization", "Basic ...")
    r"[\"']?(?:[ \t]*[:=][ \t]*[\"']?|[ \t]+[\"']?(?=(?:bearer|basic|token|digest)[ \t])"
    r"|(?<=[\"'])[ \t]*,[ \t]*[\"'](?=(?:bearer|basic|token|digest)[ \t]))"
    r"(?P<scheme>(?:bearer|basic|token|digest|ssws|splunk|geniekey|api-?key|key|oauth|jwt|mac)"
    r"[ \t]+|key=)?"
    r"(?P<v>[A-Za-z0-9._~+/=-]{8,}+)",
    _FI,
)
_BEARER = lazy(
    r"earer(?<=[Bb]earer)(?<![A-Za-z0-9][Bb]earer)[ \t]+(?P<v>[A-Za-z0-9._~+/=-]{16,}+)", _F
)
# Azure shared access signatures and other signed URLs: the signature is the secret.
_SIGNATURE = lazy(
    r"[?&;](?:sig|signature|x-amz-signature|x-goog-signature)=([A-Za-z0-9%+/=_-]{16,}+)", _FI
)
# ODBC connection strings quote a value holding ; in braces: Pwd={p;ss}.  (Unbraced
# pairs, Password=x; AccountKey=..., are assignments like any other.)
_CONN_BRACED = lazy(
    r"(?<![A-Za-z0-9_])(?:password|pwd|accountkey|sharedaccesskey|accesskey|secret|clientsecret)"
    r"[ \t]*=[ \t]*\{(?P<braced>[^{}\r\n]{1,256})\}(?=[ \t]*(?:;|$|[\"']))",
    _FI | re.MULTILINE,
)
# {password}, {password!r}, {cfg.password:>10}: a template, not a value
_TEMPLATE = lazy(r"[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:![rsa])?(?::[^{}]*)?", _F)

# --- NAME=value assignments ------------------------------------------------------------

_ASSIGN = lazy(
    r"""
    (?:secret|token|passw(?:or)?d|pass(?:phrase|code)?|pwd|pw|psk|api[_-]?key|key|auth
      |credentials?)
    [A-Za-z0-9_.-]{0,48}+                        # the rest of the name
    (?P<nq>\\?["']|["']\]|)                      # closing quote of a quoted name (\" in JSON
                                                 # escaped in a string, "] of a subscript)
    [ \t]*+
    (?P<sep>:(?![:=])|=(?![=>]|~[\s/])|(?<=["'])[ \t]*,)  # not ::, :=, ==, =>, =~ /re/;
                                                        # "NAME", "value"
    (?P<sp>[ \t]*+)
    (?:
        [bfru]{0,2}"(?P<dq>[^"\\\r\n]*+(?:\\.[^"\\\r\n]*+)*+)"   # b"...", r'...', f"..."
      | [bfru]{0,2}'(?P<sq>[^'\\\r\n]*+(?:\\.[^'\\\r\n]*+)*+)'
      | \\"(?P<eq>[^"\\\r\n]++)\\"               # \"value\" in an escaped JSON string
      | (?P<bare>[^\s"'`,;)\]}])                  # its first character; see assignments
    )
    """,
    _FI | re.VERBOSE,
)
_KEYWORDS = lazy(rb"secret|token|pass|pw|psk|api|key|auth|credential")
_NAME_CHARS = string.ascii_letters + string.digits + "_.-"
_NAME_RUN = lazy(r"[A-Za-z0-9_.-]*+", _F)
_WORDS = lazy(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", _F)
_SECRET_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "pwd",
    "secret",
    "token",
    "apikey",
    "psk",
)
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
    timeout ttl type types uri url usage validator var id ids stdin hash digest
    fingerprint scope scopes duration policies accessor accessors
    """
)
# A token that says where a paged listing goes on, not who may read it.
_CURSOR_WORDS = frozenset(("page", "continuation", "pagination", "cursor", "sync"))
# "<word> key" names that are not about credentials: primary key, cache_key, ...
_NOT_CREDENTIAL_KEYS = _wordset(
    """
    primary foreign sort partition cache hash map row lookup index unique composite hot
    short public pub publishable host idempotency dedup dedupe group shard routing object
    file table column field json yaml registry translation i18n list dict react keyboard
    private_key_id fingerprint gpg pgp ssh next prev previous last first cursor
    page event message msg item node entry record lock redis s3 bucket storage_path kms
    ordering order search tenant user customer account_id metric label tag env var site
    """
)
_PLACEHOLDER_WORDS = _wordset(
    """
    changeme replaceme placeholder redacted none null nil undefined true false todo tbd
    fixme dummy example secret secrets password passwd pass token tokens apikey key
    required optional str string bytes int bool any number unknown object bearer basic
    include omit same-origin sameorigin hidden empty masked sensitive prompt stdin yes no
    on off passwort kennwort contraseña contrasena senha wachtwoord parola haslo hasło
    """
)
_PLACEHOLDER = lazy(
    r"""
    \$[{(]                         # ${VAR}, $(cmd)
    | \$[A-Za-z_][A-Za-z0-9_]*\Z   # $VAR
    | %[A-Za-z_][A-Za-z0-9_]*%\Z   # %VAR%
    | \{                           # {{ template }}, {}, {0}, f"{password!r}"
    | <                            # <your-token>, <your password here>
    | [xX*.\u2022_-]+\Z            # xxxx, ****, ----
    | (?:your|my|insert|put|enter|replace|add)[-_]
    | .*[-_]here\Z
    | .*(?:\.\.\.|\u2026)          # truncated: ghp_...
    # sk_test_xxx, sk-ant-***
    | [A-Za-z0-9]{1,12}(?:[_.-][A-Za-z0-9]{1,12}){0,3}[_.-](?:x{3,}|X{3,}|\*{3,})\Z
    | %\(                          # %(password)s
    | .*\[redacted:                # already redacted
    | %[-\#0-9.]*[sdrfxiu]\Z       # printf-style %s, %r
    | \#[0-9a-f]{3,8}\Z            # a colour
    | [A-Za-z][A-Za-z0-9+.-]*://   # a URL (credentials in it have their own rule)
    | (?:~|\.{1,2})?/(?:[\w.@+~-]*+/)++  # a path of folders: /run/secrets/db, ./x/
    | (?:~|\.{1,2})?/[\w.@+~-]*+\Z     # a path: ~/.pgpass, /data (not /Xk9~Qv2=p)
    | (?:~|\.{1,2})?/[\w.@+~-]*+\.[A-Za-z]{1,5}\Z  # a file: /id_rsa.pub
    | (?:env|file|fd|stdin|vault): # openssl -passin env:VAR, file:path, vault:kv/app#pw
    | \$__(?:file|env|vault)\{      # Grafana: admin_password = $__file{/run/secrets/x}
    | \[(?:redacted|filtered|masked|hidden|removed|secret)\]\Z  # a log's mask: "[REDACTED]"
    | !vault\b                     # Ansible: password: !vault |
    | !(?:secret|env_var|include|input)\b  # Home Assistant: password: !secret wifi_password
    | \*SENSITIVE\*DATA\*DELETED\*\Z  # what sysprep leaves of an answer file's password
    """,
    _FI | re.VERBOSE,
)
_DOTTED = lazy(r"[A-Za-z_$][\w$]*+(?:\.[A-Za-z_$][\w$]*+)++[!?]?", _F)
# A bracket first, or a call or subscript of a word-like name: (0, x), get_token(),
# b64encode(, os.environ[, len(x); but not A000000( or aB3(dE5, which are data.
# (A run of [\w$] that holds three letters and ends at the bracket, taken from its start
# only: `.*?[A-Za-z]{3}[\w$]*+[(\[]` read each run again from each of its letters.)
_CALL = lazy(r"[(\[]|.*?(?<![\w$])(?=[\w$]*?[A-Za-z]{3})[\w$]++[(\[]", _F)
# a word glued to a closing bracket: no call or subscript ends so (a Django SECRET_KEY's
# alphabet has parentheses: ...uqud(i)_zha)
_NOT_CALL = lazy(r"[)\]][A-Za-z0-9_]", _F)
_IDENT = lazy(r"[A-Za-z_][A-Za-z0-9_]*+", _F)
_CONSTANT = lazy(r"[A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++", _F)
_TYPE_NAME = lazy(
    r"[A-Z][a-z]++(?:[A-Z][a-z]++)*+"
    # GraphQL's non-null scalars and lists: password: String!, tokens: [ID!]!
    r"|(?:String|ID|Int|Float|Boolean)!|\[[A-Z][A-Za-z]{0,40}!?\]!?",
    _F,
)
_SMALL_NUMBER = lazy(r"[-+]?[0-9]{1,4}(?:\.[0-9]+)?", _F)
_ALNUM = lazy(r"[A-Za-z0-9]", _F)
_DIGIT = lazy(r"[0-9]", _F)
_REGEX_SYNTAX = lazy(r"\(\?|\\[wdsbWDSB]|\[\^|\][+*?]|\[(?:a-z|A-Z|0-9)", _F)
_BARE_STOP = lazy(r"[\s\"'`,;)\]}]", _F)
# what may follow a ) inside a bare value: more of it, not the end of a call's arguments
_GLUED_ON = lazy(r"[^\s\"'`,;)\]}.]", _F)
_VALUE_SAMPLE = 512  # longer bare values are judged on their first 512 characters
_NEXT_PARAM = lazy(r"&(?=[A-Za-z0-9_.\[\]-]+=)", _F)
_PARAM_NEXT = lazy(r"[A-Za-z0-9_.\[\]-]+=", _F)
# The entities XML escapes a value's characters with: &amp; &lt; &gt; &quot; &apos; &#38;
_ENTITY = lazy(r"&(?:amp|lt|gt|quot|apos|#[0-9]{1,5}|#x[0-9A-Fa-f]{1,4})", _F)


def _entity_before(text: str, start: int, end: int) -> bool:
    """Does ``text[start:end]`` end with an XML entity but its ``;``?"""
    amp = text.rfind("&", start, end)
    return amp >= 0 and _ENTITY.fullmatch(text, amp, end) is not None


_COLON_END = lazy(r"[ \t]*+(?:\Z|[\r\n,;)\]}#]|//)", _F)
# After "name: value" with more words following, only a value that can be nothing but a
# credential counts: a letter and a digit or symbol, and not words and numbers joined
# by separators (gpt-4, v1.2.3, sha256-based, short-lived).
_VALUE_PARTS = lazy(r"[-_./:]+", _F)
_LETTER = lazy(r"[^\W\d_]")  # a letter, of any script
_DIGIT_OR_SYMBOL = lazy(r"[0-9!@#$%^&*+=~?]")
_HYPHENATED_WORDS = lazy(r"[A-Za-z]++(?:-[A-Za-z]++)++", _F)
# A generated passphrase: three words or more of three letters or more joined by one of
# - . _ (orchid-kestrel-nimbus, Sorrel.Pylon.Orchid91, walrus_paprika_Walrus9, as password
# managers and people make them), each in lower case or capitalised, digits at the end
# of one.
_PASS_WORD = r"(?:[A-Z][a-z]{2,11}|[a-z]{3,12})[0-9]{0,4}"
_PASSPHRASE = lazy(
    _PASS_WORD + r"([-._])" + _PASS_WORD + r"(?:\1" + _PASS_WORD + r"){1,6}",
    _F,
)
# Words that make dotted or snake_case words a name rather than a passphrase: a host's or
# a file's (www.example.com, config.yaml.example), code's (self.db.password,
# max_new_tokens, get_user_name).
_NAME_PARTS = _wordset(
    """
    www com net org io dev app co uk de fr eu us local lan internal intranet corp home
    example sample test tmp temp json yaml yml toml ini cfg conf config txt md py js ts
    env xml html sh lock log bak old new dist min map gz zip tar
    self this cls super config settings options opts params args kwargs env environ os
    process request req response res ctx context app db database data user users name
    names id key keys value values item items list dict count size len type types error
    result default get set has is to from max min num str int bool file path dir url
    uri auth token tokens secret secrets password passwd pass pwd credentials creds
    api client server service host port mode flag field table index model view form
    page info init load save read write text image time date main handler profile
    admin login session cache state store props field vault prod staging
    """
)


def passphrase(value: str) -> bool:
    """Words joined as a passphrase (see _PASSPHRASE), not a host, a file or code."""
    m = _PASSPHRASE.fullmatch(value)
    if m is None:
        return False
    if m.group(1) == "-" and value.islower() and not _DIGIT.search(value):
        return True  # orchid-kestrel-nimbus (hyphenated words of prose stay: see callers)
    parts = value.lower().split(m.group(1))
    return not any(part.rstrip("0123456789") in _NAME_PARTS for part in parts)


_MORE_ON_LINE = lazy(r"[ \t]*+[,;][ \t]*+[A-Za-z]", _F)
_SPACES = frozenset(" \t")
_QUOTES = frozenset("\"'`")
_CREDENTIAL = lazy(r"[A-Za-z0-9_.+/=~!@#$%^&*:-]{12,}", _F)
# Between quotes a value may hold any printable character but its quote (a WordPress
# salt: `(`, `?`, `;`, `<`, `|` ...), and only spaces and control characters end it.
_QUOTED_CREDENTIAL = lazy(r"[!-~]{12,}", _F)


def urls_and_headers(text: str, add: Add) -> None:
    # Each scan only when its literal is there: a substring test costs far less.
    if "://" in text:
        for m in _URL_CREDS.finditer(text):
            value = m.group(1)
            if (
                not _URL_PLACEHOLDER.match(value)
                and value.lower() not in _URL_WORDS
                and not _METAVAR.fullmatch(value)  # USER:PASS@HOST, as docs write the shape
            ):
                add((m.start(1), m.end(1), "secret_assignment"))
        for m in _URL_USER.finditer(text):
            user = m.group("user")
            if _URL_USER_HEX.fullmatch(user) or _credential_like(user):
                kind = "sentry_token" if "sentry" in m.group("host") else "secret_assignment"
                add((m.start("user"), m.end("user"), kind))
    low = text.lower() if "uthoriz" in text or "UTHORIZ" in text or "earer" in text else ""
    for pattern in (_AUTH_HEADER, _BEARER):
        if ("uthoriz" if pattern is _AUTH_HEADER else "earer") not in low:
            continue
        for m in pattern.finditer(text):
            value = m.group("v")
            if _placeholder(value) or (pattern is _BEARER and not _DIGIT.search(value)):
                continue
            if unsigned_jwt(value):
                continue  # eyJ....eyJ....<signature>: the docs' shape of a token
            if pattern is _AUTH_HEADER and not m.group("scheme") and not _credential_like(value):
                continue  # no scheme: only a value that looks like a credential
            add((m.start("v"), m.end("v"), "secret_assignment"))
    if "=" not in text:
        return
    for m in _SIGNATURE.finditer(text):
        if not _placeholder(m.group(1)):
            add((m.start(1), m.end(1), "azure_sas"))
    for m in _CONN_BRACED.finditer(text):
        if not _TEMPLATE.fullmatch(m.group("braced")):
            add((m.start("braced"), m.end("braced"), "secret_assignment"))


# --- assignments -------------------------------------------------------------------------


def assignments(text: str, raw: bytes, add: Add, low: bytes = b"") -> None:
    """``NAME=value`` and its kin, secrets in prose, and secret flags given with a space.

    Each keyword hit is judged from the text around it only (66 characters before, 400
    after), so the judgement of a hit is remembered by that window: text made of one
    shape repeated (the adversary's megabyte) is judged once per distinct window."""
    # Searching for literals in lower-cased bytes is ~20x faster than one
    # case-insensitive alternation over the text.
    low = low or raw.lower()
    pos = 0
    seen: dict[tuple[int, str], tuple[tuple[_Span, ...], int]] = {}
    bare_run = [0, 0]  # the last long bare value's extent: values inside end where it ends
    for hit_m in _KEYWORDS.finditer(low):
        hit = hit_m.start()
        if hit < pos:
            continue
        lo = max(0, hit - _BEFORE)
        key = (hit - lo, text[lo : hit + _AFTER])
        known = seen.get(key)
        if known is None:
            found: list[_Span] = []
            rel = _hit(text, hit, found.append, bare_run) - hit
            known = (tuple([(s - hit, e - hit, k) for s, e, k in found]) if found else (), rel)
            # a judgement that reached the end of the window is not the window's alone
            if rel <= _AFTER - 60 and (not found or max(e for _, e, _ in known[0]) <= _AFTER - 60):
                if len(seen) > 4096:
                    seen.clear()
                seen[key] = known
        if known[0]:
            for s, e, k in known[0]:
                add((hit + s, hit + e, k))
        if hit + known[1] > pos:
            pos = hit + known[1]


_BEFORE = 66
_AFTER = 400


def _hit(text: str, hit: int, add: Add, bare_run: list[int]) -> int:
    """Judge one keyword hit; returns where the next hit may start."""
    # Hits further on in the same name (api_key_token) lead to the same separator and
    # value, unless the name is too long for the pattern to reach it from here.
    name_end = _NAME_RUN.match(text, hit, hit + _AFTER).end()  # type: ignore[union-attr]
    pos = name_end - 48
    after = hit + (3 if text[hit] in "kK" else 6)  # past "key" or "secret"
    if (
        text[hit] in "kKsS"
        and text[after : after + 1] in _SETUP_KEY_NEXT
        and (setup := _SETUP_KEY.match(text, hit)) is not None
    ):
        value = setup.group("v")
        if any(c in "234567" for c in value) and (value.islower() or value.isupper()):
            add((setup.start("v"), setup.end("v"), "secret_assignment"))
            return setup.end()
    m = _ASSIGN.match(text, hit)
    if m is None:
        if _prose(text, hit, add) or _flag(text, hit, add) or _shell_set(text, hit, add):
            return max(pos, hit + 1)
        return pos
    if m.group("bare") is None:
        group = _given(m, ("dq", "sq", "eq"))
        start, end = m.span(group)
        value = m.group(group)
    else:
        start = m.start("bare")
        stop = _BARE_STOP.search(text, start, start + _VALUE_SAMPLE)
        end = stop.start() if stop else min(len(text), start + _VALUE_SAMPLE)
        while stop is not None and text[end] == ";" and _entity_before(text, start, end):
            # XML escapes & as &amp;: Password=Tr0ub&amp;dor92; in a web.config goes on
            # past the entity's ;, unless a parameter follows it (?user=u&amp;password=x)
            if _PARAM_NEXT.match(text, end + 1):
                end = text.rfind("&", start, end)
                break
            stop = _BARE_STOP.search(text, end + 1, start + _VALUE_SAMPLE)
            end = stop.start() if stop else min(len(text), start + _VALUE_SAMPLE)
        while (
            stop is not None
            and text[end] == ")"
            and (
                (
                    (text[end + 1 : end + 2].isalnum() or text[end + 1 : end + 2] == "_")
                    and "(" in text[start:end]
                )
                or (_GLUED_ON.match(text, end + 1) is not None and not _opened_before(text, hit))
            )
        ):
            # a ( ... ) glued to more of the value is part of it, not a call's closing
            # bracket (a Django SECRET_KEY's alphabet has parentheses: ...uqud(i)_zha);
            # so is a ) that closes no bracket opened before the name on its line and is
            # glued to more (DJANGO_SECRET_KEY=ggd)+0fg-k&2r(y+...)
            stop = _BARE_STOP.search(text, end + 1, start + _VALUE_SAMPLE)
            end = stop.start() if stop else min(len(text), start + _VALUE_SAMPLE)
        if stop is None and end < len(text):
            # A bare value over 512 characters is judged on its first 512 and ends where it
            # ends; its end is found once, not again for each keyword inside it.
            if not bare_run[0] <= start < bare_run[1]:
                far = _BARE_STOP.search(text, end)
                bare_run[:] = [start, far.start() if far else len(text)]
            end = bare_run[1]
        value = text[start : min(end, start + _VALUE_SAMPLE)]
        if cut := _NEXT_PARAM.search(value):
            value = value[: cut.start()]  # a=b&c=d: the value ends at the next one
            end = start + len(value)
    span = _assignment_span(text, m, value, start, end)
    if span is not None:
        add(span)
        return max(pos, end)
    if _prose(text, hit, add):
        return max(pos, hit + 1)
    # Go on inside a value that stays: a URL held in ``tokenhttps://…?x=1&api_key=…``
    # has an assignment of its own.
    return max(pos, start)


def _opened_before(text: str, hit: int) -> bool:
    """Whether a bracket opened before ``hit`` on its line is still open there: the
    name is an argument (f(password=x)), and a ) after its value closes the call."""
    line = text.rfind("\n", max(0, hit - _BEFORE * 4), hit) + 1
    before = text[line:hit]
    return before.count("(") > before.count(")")


def _assignment_span(text: str, m: re.Match[str], value: str, start: int, end: int) -> _Span | None:
    head = m.start()
    before_keyword = text[max(0, head - 64) : head]
    head -= len(before_keyword) - len(before_keyword.rstrip(_NAME_CHARS))
    # token.info is an attribute of a token object; settings.SECRET_KEY is a secret.
    name = text[head : m.start("nq")].lstrip(".-").rpartition(".")[2]
    name_kind = _name_kind(name)
    if name_kind is None or value == name:
        return None  # (pass_fds=pass_fds passes a variable of the same name)
    if name_kind == "key" and _KEY_ID.fullmatch(value) and "signing" in name.lower():
        return None  # git's user.signingkey: the id of a key in gpg's keyring
    quote = m.group("nq")
    opening = "[" + quote[0] if quote.endswith("]") else quote  # environ["TOKEN"] = ...
    if quote and not text.endswith(opening, 0, head):
        return None
    quoted_name = bool(quote)
    comma = m.group("sep").endswith(",")
    if comma and (
        not quoted_name
        or m.group("bare") is not None
        or _KEY_AFTER.match(text, end + 1)
        or _LIST_GOES_ON.match(text, end + 1)
        or _later_element(text, head)
    ):
        # define('DB_PASSWORD', 'x') passes a value; f("token", tok) a variable,
        # {"name": "DB_PASSWORD", "value": ...} goes on with a key, "password",
        # "httpRealm", ... is a list of names (a CSV file's header), and in an array
        # ["run", "-e", "GITHUB_TOKEN", "ghcr.io/..."] the element after a name is the next
        # argument (docker's -e NAME takes the value from the environment)
        return None
    colon = m.group("sep") == ":" and not quoted_name  # YAML, headers, prose
    if colon and not m.group("sp"):
        return None  # passwd:shell, password:%s
    if _skip_password(value) if _password_name(name) else _skip_value(value):
        return None
    if _key_of_secret(name, value):
        return None
    if name_kind == "key" or name_kind == "auth":
        # Names that are credentials only sometimes: the value must look like one.
        quoted = m.group("bare") is None
        if not (_credential_like(value, quoted) or (name_kind == "auth" and _basic_pair(value))):
            return None
        if colon and not _colon_value_ends(text, end, value):
            return None
        return (start, end, "secret_assignment")
    bare = m.group("bare") is not None
    if not bare:
        if any(c.isspace() for c in value) or _REGEX_SYNTAX.search(value):
            return None  # a message or a pattern, not a secret
    else:
        if _code(value):
            return None
        variable = bool(
            _IDENT.fullmatch(value) and not _DIGIT.search(value) and not random_letters(value)
        )
        if quoted_name and variable:
            return None  # {"token": tok} in code
        if m.group("sep") == "=":
            spaced = bool(m.group("sp")) or text[m.start("sep") - 1] in _SPACES
            if spaced and (variable or not _COLON_END.match(text, end)):
                return None  # code: password = pw, TOKEN = Ignore + PlainToken
            if _IDENT.fullmatch(value) and _kwarg(text, head, end):
                return None  # login(password=pw)
        elif colon and _TYPE_NAME.fullmatch(value):
            return None  # an annotation: secret: SecretStr, password: String!
    # After a colon a bare value must end the line (or the item, or a quoted header),
    # else it is prose ("Token: see the docs"), unless it can only be a credential
    # ("password: Qx7pLm2v (rotate monthly)").
    if colon and bare and not _colon_value_ends(text, end, value):
        return None
    if name_kind == "aws_secret_key" and _AWS_SECRET_VALUE.fullmatch(value):
        return (start, end, "aws_secret_key")
    return (start, end, "secret_assignment")


# A gpg key's short or long id, or its fingerprint: 8, 16 or 40 hex digits.
_KEY_ID = lazy(r"(?:0x)?(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{16}|[0-9A-Fa-f]{40})!?", _F)
_AWS_SECRET_VALUE = lazy(r"[A-Za-z0-9/+]{40}", _F)
_KEY_AFTER = lazy(r"\\?[ \t]*:", _F)
_LIST_GOES_ON = lazy(r"[ \t]*,", _F)


def _later_element(text: str, head: int) -> bool:
    """Is the quoted name at ``head`` an element of an array right after docker's ``-e``
    or ``--env`` flag (``[..., "-e", "NAME", ...]``), not a flag (``"--token"``)? A pair's
    first element (``[["password", "x"]]``), a call's argument (``set("db", "password",
    "x")``) and any other element (``["config:set", "DB_PASSWORD", "x"]``) are not."""
    if text[head] == "-":
        return False
    before = text[max(0, head - 1 - _ARRAY_BACK) : head - 1].rstrip()
    if not before.endswith(",") or not _ENV_FLAG_BEFORE.search(before):
        return False  # only docker's -e NAME: elsewhere the next element is the value
    depth = 0
    for c in reversed(before):
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                return c == "["
            depth -= 1
    return False


_ARRAY_BACK = 200
# The element before the name is docker's (podman's) -e or --env flag: ["-e", "NAME", ...]
_ENV_FLAG_BEFORE = lazy(r"[\[,][ \t\r\n]*([\"'])(?:-e|--env)\1[ \t\r\n]*,$", _F)


def _colon_value_ends(text: str, end: int, value: str) -> bool:
    """Is a bare value after ``name:`` the whole value: it ends the line (or a quoted
    header), or words follow it but it can be nothing but a credential?"""
    if text[end : end + 1] in _QUOTES:
        return True
    if _COLON_END.match(text, end):
        # "Token: short-lived, refreshed by the sidecar" is prose; a passphrase of words
        # (password: correct-horse-battery-staple) ends its line
        return not (_HYPHENATED_WORDS.fullmatch(value) and _MORE_ON_LINE.match(text, end))
    return _credential_shaped(value)


@functools.lru_cache(maxsize=4096)
def _credential_shaped(value: str) -> bool:
    """A word of prose that can only be a credential: 6+ characters mixing letters with
    digits or symbols, not code, and not words and numbers joined by ``-_./:``
    (``gpt-4``, ``v1.2.3``, ``sha256-based``, ``utf-8``)."""
    value = value.rstrip(_TRAIL)
    if len(value) < 6 or _code(value) or _skip_value(value):
        return False
    if _LETTER.search(value) is None or _DIGIT_OR_SYMBOL.search(value) is None:
        return False
    parts = [p for p in _VALUE_PARTS.split(value) if p]
    return not all(p.isalpha() or p.isdigit() or (len(p) <= 6 and p.isalnum()) for p in parts)


# A password as people choose one: a word, digits, perhaps a symbol between or after
# (Simba.19!, Kiki86, Luna95!), which `_credential_shaped` reads as a word and a number.
_HUMAN_PASSWORD = lazy(r"[A-Za-z][a-z]{1,11}[._@#*+-]?[0-9]{2,6}[!?#*.$%&@]{0,3}", _F)


# ... or two words or more and a number, joined (Willow-Canyon-15, tundra-comet-453), or a
# word with digits for letters and a year (L4g00n_2010, F4lc0n-1996): what `passphrase`
# and `_credential_shaped` read as words and numbers (one word and a number, gpt-4 or
# ubuntu-22, stays a name).
_WORDS_AND_NUMBER = lazy(
    r"(?:[A-Z][a-z]{2,11}|[a-z]{3,12})(?:[-._](?:[A-Z][a-z]{2,11}|[a-z]{3,12})){1,4}"
    r"[-._][0-9]{2,6}[!?#*$%&@]{0,3}",
    _F,
)
_LEET_AND_NUMBER = lazy(
    r"(?=[A-Za-z0-9]*[A-Za-z][0-9]+[A-Za-z])[A-Za-z][A-Za-z0-9]{3,11}[-._#!@][0-9]{2,6}[!?#*]?",
    _F,
)


def password_shaped(value: str) -> bool:
    """After a word that names a password: a value that can be nothing else."""
    if _FILE_NAME.fullmatch(value):
        return False  # where it is kept: "a chave pública fica em id_ed25519.pub"
    return (
        _credential_shaped(value)
        or passphrase(value)
        or bool(_HUMAN_PASSWORD.fullmatch(value))
        or _joined_password(value)
    )


def _joined_password(value: str) -> bool:
    if _LEET_AND_NUMBER.fullmatch(value):
        return True
    if not _WORDS_AND_NUMBER.fullmatch(value):
        return False
    parts = re.split(r"[-._]", value.lower())
    return not any(part in _NAME_PARTS for part in parts)


# A file's name, of the kinds keys and passwords are kept in.
_FILE_NAME = lazy(
    r"[\w.-]+\.(?:pub|pem|key|crt|cer|der|p12|pfx|jks|keystore|kdbx|gpg|asc|txt|json|ya?ml"
    r"|toml|ini|cfg|conf|env|csv|xml|log|bak)",
    _F,
)


# The verbs a camelCase method's name starts with (setToken, getApiKey, useAuthToken),
# never the words a secret's name starts with (refreshToken, resetToken, Gradle's
# storePassword, a readToken, a clearPassword).
_METHOD_VERBS = _wordset(
    """
    set get use fetch load save create generate rotate revoke delete remove parse decode
    encode validate check handle has is should with on
    """
)


@functools.lru_cache(maxsize=1024)
def _name_kind(name: str) -> str | None:
    """None unless ``name`` names a secret; "aws_secret_key" when it names an AWS secret
    access key; "key" or "auth" when it names something that is a credential only when
    its value looks like one (MAILGUN_KEY, accountKey, "auth")."""
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words:
        return None
    if len(words) > 1 and name[:1].islower() and words[0] in _METHOD_VERBS and "_" not in name:
        return None  # a method or a hook: setToken, getApiKey, useAuthToken, loadSecret
    if _secret_name(words):
        if "secret" in words and ("aws" in words or "access" in words):
            return "aws_secret_key"
        return "secret_assignment"
    last = words[-1]
    if last in ("credential", "credentials", "creds"):
        if words[0] in ("load", "import") and len(words) == 2:
            return None  # systemd's LoadCredential=id:path, ImportCredential=glob
        return "secret_assignment" if not any(w in _META_WORDS for w in words) else None
    if last == "auth" and len(words) <= 2:
        return "auth"
    if last in ("key", "keys") or (last.endswith("key") and len(last) > 3):
        qualifiers = words[:-1] if last in ("key", "keys") else [last[:-3]]
        if not qualifiers or any(
            w in _NOT_CREDENTIAL_KEYS or w in _META_WORDS for w in (*words, *qualifiers)
        ):
            return None
        return "key"
    return None


# a key's name in a Secret object: postgres-password, admin_password, token
_KEY_NAME = lazy(r"[a-z]++(?:[-_.][a-z]++)*+", _F)


def _key_of_secret(name: str, value: str) -> bool:
    """Is ``value`` the name of the key that holds a secret, not the secret: a Helm chart's
    ``adminPasswordKey: postgres-password``, ``existingSecretTokenKey: api-token``?"""
    words = [w.lower() for w in _WORDS.findall(name)]
    return (
        len(words) >= 2
        and words[-1] == "key"
        and words[-2] in ("password", "passwd", "token", "secret", "passphrase")
        and bool(_KEY_NAME.fullmatch(value))
    )


def _secret_name(words: list[str]) -> bool:
    """Does a name (split into lower-case words) name a secret?"""
    for i, word in enumerate(words):
        hit = word == "api" and words[i + 1 : i + 2] in (["key"], ["keys"])
        hit = hit or word in ("pass", "pw")  # DB_PASS, SMTP_PW (but not bypass, compass)
        if not hit:
            for secret in _SECRET_WORDS:
                at = word.find(secret)
                if at >= 0 and word[at + len(secret) :] in ("", "key", "keys"):
                    hit = True
                    break
        if hit and i and words[i - 1] in _CURSOR_WORDS and word in ("token", "tokens"):
            continue  # nextPageToken, continuation_token: where a listing goes on
        if hit and i and words[i - 1] == "existing" and word in ("secret", "secrets"):
            continue  # a Helm chart's existingSecret: the name of a Secret object
        if hit and words[max(0, i - 2) : i] == ["public", "key"] and word == "token":
            continue  # .NET's publicKeyToken: a hash of an assembly's public key
        if hit and not any(w in _META_WORDS for w in words[i + 1 :]):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _placeholder(value: str) -> bool:
    if _PLACEHOLDER.match(value):
        return True
    if "****" in value or "xxxxxxxx" in value.lower() or _MASKED.search(value):
        return True  # masked: sk-proj-XXXXXXXX..., sk-ab12****cd34, ghp_••••••••abcd
    return value.lower().replace("_", "").replace("-", "") in _PLACEHOLDER_WORDS


# Four mask characters in a row: how an interface shows a secret it hides.
_MASKED = lazy("[\u2022\u25cf\u00b7\u2217]{4}")
# A version or a range of versions, as package manifests give them: "^9.0.2", "~1.0.0",
# ">=2.1,<3", "16.4.6", "1.2.x", "2.0.0-rc.1" (a dependency named "jsonwebtoken" names a
# package, not a token).
_VERSION = lazy(
    r"(?:(?:[\^~]|[<>]=?|==?|v)?[0-9]{1,5}(?:\.(?:[0-9]{1,5}|[x*])){1,3}"
    r"(?:-[0-9A-Za-z.]{1,20})?(?:\+[0-9A-Za-z.]{1,20})?(?:[ \t]*(?:,|\|\|)[ \t]*|[ \t]+|\Z))+",
    _F,
)


@functools.lru_cache(maxsize=4096)
def _skip_value(value: str) -> bool:
    """Values that are not secrets whatever they are assigned to."""
    if not _ALNUM.search(value) or _placeholder(value) or public_prefix(value):
        return True  # (a publishable key, Mapbox's pk. token: public by design)
    if value[:1] in "^~<>=v0123456789" and _VERSION.fullmatch(value):
        return True
    if value.isalpha() and not value.isascii():
        return True  # a word of an interface's language: "api_key": "APIキー"
    if value in _UNATTEND_PASSES:
        return True
    if _SECRET_REF.fullmatch(value):
        return True  # a secret's name: --secret=stripe-key, "test-token", "fake-key"
    if _IDENT.fullmatch(value) and not _DIGIT.search(value):
        # another secret's name: token=access_token, CHALLENGE_PASSWORD: "challengePassword"
        flat = value.lower().replace("_", "")
        return any(word in flat for word in _SECRET_WORDS)
    # another setting's name after a slash, as prose lists two: LoadCredential=/SetCredential=
    return value[:1] == "/" and _NEXT_SETTING.fullmatch(value) is not None


# Lower-case words joined by - or _ whose last word is a secret's noun: what names a
# secret (gcloud's --secret=stripe-key, a Secret object's db-password) or stands in for
# one in a test ("test-token", "fake-key", "dummy-secret"), not a value of one.
_SECRET_REF = lazy(
    r"(?:[a-z]++[-_])++(?:key|keys|token|tokens|secret|secrets|password|passwd|credentials?"
    r"|creds)",
    _F,
)


# The configuration passes of a Windows answer file: <settings pass="oobeSystem">
_UNATTEND_PASSES = frozenset(
    (
        "windowsPE",
        "offlineServicing",
        "generalize",
        "specialize",
        "auditSystem",
        "auditUser",
        "oobeSystem",
    )
)


_NEXT_SETTING = lazy(r"/(?:[A-Z][a-z]+){2,}=[.,;:)]?", _F)
# Dots inside a value, between letters, digits or symbols: Sp...rk9!zQ, abc...XYZ123.
_ELIDED = lazy(r"[^\s.\u2026]{2,}+\.\.\.[^\s.\u2026]{3,}+", _F)
_PASSWORD_NAMES = ("password", "passwd", "passphrase", "pwd")


def _skip_password(value: str) -> bool:
    """`_skip_value` for a value a password's name gives.  Tools show a *token* cut short
    (``sk-...Xq9z``, ``ghp_abc...``), never a password, so ``...`` between the other
    characters of one that mixes letters with digits or symbols is part of it."""
    if _ELIDED.fullmatch(value):
        joined = value.replace("...", "")
        return _skip_value(joined) or not _credential_shaped(joined)
    return _skip_value(value)


def _password_name(name: str) -> bool:
    """Does a name (DB_PASSWORD, PGPASSWORD, smtp_pass) name a password, not a token?"""
    words = [w.lower() for w in _WORDS.findall(name)]
    return any(w in ("pass", "pw") or w.endswith(_PASSWORD_NAMES) for w in words)


@functools.lru_cache(maxsize=4096)
def _code(value: str) -> bool:
    """An unquoted value that is an expression, constant or number rather than data."""
    return (
        bool(_CALL.match(value) and not _NOT_CALL.search(value))  # get_token(), os.environ[
        or bool(  # self.token (but not a passphrase of dotted words)
            _DOTTED.fullmatch(value)
            and not _DIGIT.search(value)
            and not random_letters(value)
            and not passphrase(value)
        )
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


def _credential_like(value: str, quoted: bool = False) -> bool:
    """Does a value named by a weaker name (``*_KEY``, ``auth``) look like a credential:
    12+ characters without spaces, mixing letters with digits, and not an identifier or
    a dotted or hyphenated run of words? A `quoted` value may hold any punctuation."""
    alphabet = _QUOTED_CREDENTIAL if quoted else _CREDENTIAL
    if len(value) < 12 or not alphabet.fullmatch(value) or _placeholder(value):
        return False
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if not letters or not digits:
        return False
    parts = [p for p in re.split(r"[-_.:/]", value) if p]
    # snake_case_v2, user-service-01, 1.2.3-beta: words with a few numbers
    return not (len(parts) > 1 and all(len(p) < 10 for p in parts))


def _basic_pair(value: str) -> bool:
    """A base64 ``user:password`` pair, as in docker's ``"auth": "..."``."""
    import base64
    import binascii

    if len(value) < 8 or len(value) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", value):
        return False
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


# --- prose, flags, commands, files ---------------------------------------------------

# "the password for the staging db is hunter2", "API key: ...", "my token was ..."
_PROSE = lazy(
    r"""
    (?:passw(?:or)?d|pass(?:phrase|code)?|pwd|pw|secret|token|api[ _-]?key|access[ _-]key)s?
    (?![A-Za-z0-9_])
    # up to five words in between (for root on db-1), never a connecting word
    (?P<gap>(?:[ \t]++(?!(?:is|was|are|were|set|changed|reset|rotated|updated|reads|became
        |has|got|been)(?![A-Za-z0-9_]))[A-Za-z0-9_@.'-]{1,24}+){0,6}+)
    [ \t]*+
    (?P<conn>
        (?:(?:is|was|has[ \t]+been|got|been)[ \t]++)?+(?:set|changed|reset|rotated|updated)
        [ \t]++to
      | :|=|->|=>|\u2192
      | (?:is|was|are|were)(?:[ \t]++(?:now|still|just|simply|currently|literally))?+
        (?:[ \t]*+:)?+
      | reads | became
    )
    [ \t]++
    (?:
        "(?P<dq>[^"\r\n]{1,100})"
      | '(?P<sq>[^'\r\n]{1,100})'
      | `(?P<bq>[^`\r\n]{1,100})`
      | \u201c(?P<cq>[^\u201d\r\n]{1,100})\u201d
      | (?P<bare>[^\s"'`]{1,200}+)
    )
    """,
    _FI | re.VERBOSE,
)
_GAP_STOP = _wordset(
    """
    policy policies manager managers reset resets rule rules requirement requirements field
    fields length hash hashes hashing prompt prompts file files expiry expiration change
    changes strength complexity store stores vault vaults rotation history hint hints
    form forms input inputs column columns auth authentication login logins flow flows
    endpoint endpoints id ids name names type types count limit limits budget usage
    scope scopes failed failure error errors duration if whose which because unless
    whether
    """
)
# Words after "password is" that describe it rather than give it.
_NOT_A_PASSWORD = _wordset(
    """
    a an the in on at of for to from with by as into onto via under over not no now still
    just also already only stored saved kept set required needed missing wrong correct
    incorrect invalid valid empty blank expired expiring rotated changed reset hashed
    encrypted salted protected hidden masked secure insecure weak strong long short
    too very too same different unique random generated managed handled shared known
    unknown available unavailable there here that this it its them they which what when
    where who how why ok okay fine good bad right true false null none nil undefined yes
    please see check read use using ask asked sent given provided printed shown logged
    mandatory optional case sensitive insensitive being been be is was are were will
    would should could can may might must something anything nothing everything mine
    yours his hers ours theirs your my our their changeme secret password token example
    placeholder default defaults same literally simply plain plaintext cleartext
    never always ever
    """
)
_PASSWORDISH_SUFFIXES = (
    "ed",
    "ing",
    "ly",
    "able",
    "ible",
    "tion",
    "ment",
    "ness",
    "ous",
    "ful",
    "less",
    "ive",
)
_TRAIL = ".,;:!?)]}>"


# "password hunter2!", "the wifi password to Xy7#..." with no verb: only a value that
# could be nothing but a password (letters mixed with digits or symbols)
_PROSE_BARE = lazy(
    r"(?:passw(?:or)?d|passphrase|pwd|pw)(?![A-Za-z0-9_])[ \t]++(?:to[ \t]++)?"
    r"(?:\"(?P<dq>[^\"\r\n]{4,100})\"|'(?P<sq>[^'\r\n]{4,100})'|(?P<bare>[^\s\"'`]{6,200}+))",
    _FI,
)


def _prose(text: str, hit: int, add: Add) -> bool:
    """A secret given in a sentence right after the word that names it."""
    if _prose_verb(text, hit, add):
        return True
    m = _PROSE_BARE.match(text, hit)
    if m is None or (hit and (text[hit - 1].isalnum() or text[hit - 1] in "_/\\")):
        return False  # (a file in a path names no password: awk </etc/passwd '...')
    group = m.lastgroup or "bare"  # the one of dq, sq, bare that matched
    value, end = m.group(group), m.end(group)
    if group == "bare":
        stripped = value.rstrip(_TRAIL)
        value, end = stripped, end - (len(value) - len(stripped))
    letters = _LETTER.search(value) is not None
    others = not value.isalpha()
    if not (letters and others) or _skip_value(value) or _code(value) or value.startswith("-"):
        return False
    if not _passwordish(value) or (group == "bare" and ("=" in value or "/" in value)):
        return False
    if group == "bare" and " to" in text[hit : m.start(group)] and _THING_IS.match(text, end):
        return False  # "the password to server01 is in the vault": what it opens
    add((m.start(group), end, "password"))
    return True


_THING_IS = lazy(r"[ \t]+(?:is|was|are|lives|sits)\b", _F)


def _prose_verb(text: str, hit: int, add: Add) -> bool:
    start = hit
    # the keyword may start a few characters before the hit ("access key", "pwd")
    m = _PROSE.match(text, start)
    if m is None or (start and (text[start - 1].isalnum() or text[start - 1] == "_")):
        if m is None:
            return False
        name_start = _word_start(text, start)
        name = text[name_start : m.start("gap")]
        if _name_kind(name) is None:
            return False  # "max_tokens is 1024": not a secret's name
    gap_words = [w.lower().strip(".'") for w in m.group("gap").split()]
    if any(w in _GAP_STOP for w in gap_words):
        return False
    if gap_words and gap_words[0] in _META_WORDS:
        return False  # "Secret source: Actions", "Token type: Bearer": about the secret
    # "pass" alone is also a word of prose (the first pass was slow, a boarding pass):
    # it names a password only when the value can be nothing else
    bare_pass = m.group(0)[:4].lower() == "pass" and not m.group(0)[4:5].isalpha()
    for group in ("dq", "sq", "bq", "cq"):
        value = m.group(group)
        if value is not None:
            skip = _skip_password if _password_word(m) else _skip_value
            if skip(value) or len(value.split()) > 6 or _REGEX_SYNTAX.search(value):
                return False
            if bare_pass and not password_shaped(value):
                return False
            add(
                (
                    m.start(group),
                    m.end(group),
                    "password" if _password_word(m) else "secret_assignment",
                )
            )
            return True
    value = m.group("bare")
    end = m.end("bare")
    while value and value[-1] in _TRAIL:
        value, end = value[:-1], end - 1
    conn = m.group("conn").strip().lower()
    skip = _skip_password if _password_word(m) else _skip_value
    if not value or skip(value) or not _passwordish(value, conn):
        return False
    if bare_pass and not password_shaped(m.group("bare").rstrip(".,;:)]}>")):
        return False
    if conn in (":", "=") and not gap_words:
        return False  # NAME: value and NAME=value are assignments, judged as such
    if _password_word(m) and value.isalpha() and value.islower():
        # a passphrase of words to the end of the sentence: yarrow cedar walnut lantern
        words = _MORE_WORDS.match(text, end)
        if words is not None and not any(
            w in _NOT_A_PASSWORD or w in _JOINING_WORDS or not _passwordish(w)
            for w in words.group().split()
        ):
            end = words.end()
    add((m.start("bare"), end, "password" if _password_word(m) else "secret_assignment"))
    return True


# Three to nine more lower-case words that end the sentence (or the line).
_MORE_WORDS = lazy(r"(?:[ \t][a-z]{3,12}+){3,9}+(?=[.!;]?+[ \t]*+(?:\r?\n|\Z)|[.!;][ \t])", _F)
_JOINING_WORDS = _wordset(
    "and or but nor then so because if unless when while with without than after before until"
)


def _password_word(m: re.Match[str]) -> bool:
    return m.group(0)[:2].lower() in ("pa", "pw")


# Digits inside a run of letters (Iv1Xk): a generated value's, not a name's.
_INNER_DIGITS = lazy(r"(?<=[A-Za-z])[0-9]++(?=[A-Za-z])", _F)


def _dotted_name(value: str) -> bool:
    """Is a dotted value (Vault.Secrets.Prod) a name rather than a generated password
    with a dot in it (rUwZWiPWd36.DfGYp9XBLg, LA22vwxoIv1Xk.R)?"""
    return not random_letters(value) and len(_INNER_DIGITS.findall(value)) < 2


def _passwordish(value: str, conn: str = "") -> bool:
    """Could an unquoted word of prose be a password (``hunter2``, ``Tr0ub4dor&3``,
    ``swordfish``) rather than the sentence going on (``stored``, ``in``)?"""
    low = value.lower()
    if passphrase(value):
        return True
    if low in _NOT_A_PASSWORD or _code(value) or (_DOTTED.fullmatch(value) and _dotted_name(value)):
        return False
    if _HYPHENATED_WORDS.fullmatch(value) and not random_letters(value):
        return False  # short-lived, auto-generated, URL-safe, case-sensitive
    if len(value) < 4:
        return False
    if value.isalpha():
        if value.islower() or (value[0].isupper() and value[1:].islower()):
            # a lone word: a password only if it does not read as grammar
            return not low.endswith(_PASSWORDISH_SUFFIXES)
        return True
    return True


# --password hunter2, --api-token abc, -storepass changeit123, -passin pass:x
_FLAG = lazy(
    r"(?<![A-Za-z0-9_-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]{1,40}+)[ \t]+"
    r"(?:\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})'|(?P<bare>[^\s\"'`|;&<>]{1,300}))",
    _F,
)
_FLAG_NAMES = _wordset(
    """
    pass storepass keypass srcstorepass deststorepass srckeypass destkeypass passin
    passout pw pwd password passwd passphrase
    """
)


# What a command's help writes for a flag's value (click's TEXT, argparse's dest in
# capitals): a word in capitals, with no digit, of 12 letters at most.
_METAVAR = lazy(r"[A-Z][A-Z_]{1,11}", _F)


# A flag that starts with a verb names an action on secrets, and what follows it is not
# one: --export-secret-keys, --list-secrets, --delete-token, --show-password.
_ACTIONS = _wordset(
    """
    export import list delete remove show print gen generate create revoke rotate fetch
    get read dump
    """
)


def _given(m: re.Match[str], groups: tuple[str, ...] = ("dq", "sq", "bare")) -> str:
    """Which of a value's alternative groups (double-quoted, single-quoted, bare) matched."""
    found = m.groupdict()
    return next(g for g in groups if found.get(g) is not None)


def _word_start(text: str, pos: int) -> int:
    """Where the name holding ``pos`` starts (64 characters back at most)."""
    head = text[max(0, pos - 64) : pos]
    return pos - (len(head) - len(head.rstrip(_NAME_CHARS)))


# An environment variable set with a blank for its `=`: fish's `set -x NAME value` (and
# -gx, -Ux, ...), csh's and launchctl's `setenv NAME value`, judged from the name's
# keyword: what comes before the name, then the value after it. Without a flag, `set`
# takes only a name in capitals (an environment variable's, not a word of prose).
_SET_BEFORE = lazy(
    r"(?<![\w-])(?:(?P<setenv>setenv)|set(?P<flags>(?:[ \t]++-[A-Za-z]{1,4}+)*+))[ \t]++\Z", _F
)
_SET_VALUE = lazy(
    r"[ \t]++(?:\"(?P<dq>[^\"\r\n]{1,256})\"|'(?P<sq>[^'\r\n]{1,256})'"
    r"|(?P<bare>[^\s\"'`;|&]{1,256}+))",
    _F,
)
_CAPITALS = lazy(r"[A-Z][A-Z0-9_]*+", _F)


# Inside a shell's (or compose's) ${NAME:?message} or ${NAME?message}: the message is
# prose printed when NAME is unset, not a value.
_PARAM_MESSAGE = lazy(r"\$\{[A-Za-z_][A-Za-z0-9_]*+:?\?[^}\r\n]*+\Z", _F)


def _shell_set(text: str, hit: int, add: Add) -> bool:
    if text.rfind("set", max(0, hit - 104), hit) < 0:
        return False  # the common case, found at C speed
    start = _word_start(text, hit)
    before = _SET_BEFORE.search(text, max(0, start - 40), start)
    if before is None:
        return False
    if _PARAM_MESSAGE.search(text, max(0, start - 200), start):
        return False  # ${REDIS_PASSWORD:?set REDIS_PASSWORD in .env}: the error's message
    end = _NAME_RUN.match(text, start).end()  # type: ignore[union-attr]
    name = text[start:end]
    if not (before.group("setenv") or before.group("flags") or _CAPITALS.fullmatch(name)):
        return False  # "set token expiry to 5 minutes"
    m = _SET_VALUE.match(text, end)
    if m is None or "." in name:
        return False
    group = _given(m)
    value = m.group(group)
    if group == "bare" and (_code(value) or value.startswith("-")):
        return False  # gh secret set DEPLOY_TOKEN --env prod: a flag, not the value
    if not _named_secret(name, value, quoted=group != "bare"):
        return False
    add((m.start(group), m.end(group), _secret_word(name)))
    return True


def _flag(text: str, hit: int, add: Add) -> bool:
    start = _word_start(text, hit)
    m = _FLAG.match(text, start)
    if m is None:
        return False
    name = m.group("name")
    if name.partition("-")[0].lower() in _ACTIONS:
        return False  # gpg --export-secret-keys ops@example.com: an action, not a value
    if name.lower() not in _FLAG_NAMES and _name_kind(name) not in (
        "secret_assignment",
        "aws_secret_key",
    ):
        return False
    group = _given(m)
    value = m.group(group)
    s = m.start(group)
    if value.startswith("pass:"):
        value, s = value[5:], s + 5
    if (group == "bare" and value.startswith("-")) or _skip_value(value) or _code(value):
        return False
    if group == "bare" and _METAVAR.fullmatch(value):
        return False  # a command's help: --password TEXT, --token VALUE
    if group == "bare" and _flag_talk(value):
        return False  # prose about the flag: "pass the --token flag", "--password to be asked"
    add(
        (
            s,
            m.end(group),
            _secret_word(name),
        )
    )
    return True


# Words that follow a flag's name in a sentence about it, never as its value.
_FLAG_WORDS = _wordset(
    """
    flag flags option options argument arguments arg args parameter parameters param
    params switch switches value values field fields variable variables env setting
    settings prompt prompts instead and or if then else so but because first too
    """
)


def _flag_talk(value: str) -> bool:
    word = value.rstrip(_TRAIL).lower()
    return word in _FLAG_WORDS or word in _NOT_A_PASSWORD


# Commands that take a password in a flag of their own.
_COMMAND = lazy(
    r"(?<![A-Za-z0-9_.-])(?P<cmd>mysql(?:dump|admin|import|show|check|sh)?|mariadb(?:-dump)?"
    r"|sshpass|curl|docker|podman|nerdctl|helm|redis-cli|sqlcmd|bcp|zip|unzip|7za?|(?:un)?rar|smbclient"
    r"|ldap(?:search|add|modify|delete|whoami|passwd)|mongo(?:sh|dump|restore|import|export)?"
    r"|lftp|xfreerdp|rdesktop|http|https|az|sqlplus|htpasswd|wget|openssl|poetry"
    r"|[Pp]s[Ee]xec(?:64)?(?:\.exe)?|winrs(?:\.exe)?|rabbitmqctl|net|rclone|gh|cf|dotnet"
    r"|ssh-keygen|cmdkey|ipmitool)"
    r"(?![A-Za-z0-9_-])",
    _F,
)
# A command's segment ends at a newline, a pipe, ; or &, but not inside quotes
# ('violet&4062river' is one argument) nor at a newline a backslash continues.
_SEGMENT = lazy(r"(?:\"[^\"\r\n]*+\"|'[^'\r\n]*+'|\\\r?\n|[^\r\n|;&])*+", _F)
_ARG = r"(?:\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})'|(?P<bare>[^\s\"'`|;&<>]{1,200}))"
_COMMAND_FLAGS = {
    "mysql": lazy(r"(?<=[ \t])-p" + _ARG, _F),
    "sshpass": lazy(r"(?<=[ \t])-p[ \t]*" + _ARG, _F),
    "login": lazy(r"(?<=[ \t])(?:-p|--password)[ \t=]+" + _ARG, _F),
    "redis-cli": lazy(r"(?<=[ \t])(?:-a|--pass)[ \t]+" + _ARG, _F),
    "upper-p": lazy(r"(?<=[ \t])-P[ \t]*" + _ARG, _F),
    "zip": lazy(r"(?<=[ \t])(?:-P[ \t]+|--password[ \t=]+)" + _ARG, _F),
    "7z": lazy(r"(?<=[ \t])-p" + _ARG, _F),
    "ldap": lazy(r"(?<=[ \t])-w[ \t]+" + _ARG, _F),
    "mongo": lazy(r"(?<=[ \t])(?:-p|--password)[ \t=]+" + _ARG, _F),
    "xfreerdp": lazy(r"(?<=[ \t])[/-]p:" + _ARG, _F),
    "winrs": lazy(r"(?<=[ \t])[/-]p(?:assword)?:" + _ARG, _FI),
    "rdesktop": lazy(r"(?<=[ \t])-p[ \t]+" + _ARG, _F),
    "az": lazy(r"(?<=[ \t])(?:-p|--password)[ \t]+" + _ARG, _F),
    # htpasswd -b [-c -B ...] FILE USER PASSWORD
    "htpasswd": lazy(
        r"(?<=[ \t])-[a-zA-Z]*b[a-zA-Z]*(?:[ \t]+-[a-zA-Z]+(?:[ \t]+[0-9]+)?)*"  # -C 12
        r"[ \t]+\S+[ \t]+\S+[ \t]+" + _ARG,
        _F,
    ),
    # openssl enc -k <password> (and -pass pass:<password>, which _FLAG finds)
    "openssl": lazy(r"(?<=[ \t])-k[ \t]+" + _ARG, _F),
    # poetry config http-basic.<repository> <user> <password>
    "poetry": lazy(r"(?<=[ \t])http-basic\.[A-Za-z0-9_.-]+[ \t]+\S+[ \t]+" + _ARG, _F),
    # rabbitmqctl add_user <user> <password>, change_password <user> <password>
    "rabbitmqctl": lazy(r"(?<=[ \t])(?:add_user|change_password)[ \t]+\S+[ \t]+" + _ARG, _F),
    # net use Z: \\host\share /user:DOMAIN\name <password>
    "net": lazy(r"(?<=[ \t])(?:/user:\S+|user[ \t]+[^\s/]+)[ \t]+" + _ARG, _FI),
    # rclone config create <name> <type> ... pass <password>
    "rclone": lazy(r"(?<=[ \t])pass(?:word)?[ \t]+" + _ARG, _F),
    # dotnet user-secrets set <KEY> <value>: the project's secret store
    "dotnet": lazy(r"(?<=[ \t])user-secrets[ \t]+set[ \t]+(?:\"[^\"\r\n]+\"|\S+)[ \t]+" + _ARG, _F),
    # ssh-keygen -N <new passphrase>, -P <old passphrase>
    "ssh-keygen": lazy(r"(?<=[ \t])-[NP][ \t]*" + _ARG, _F),
    # cmdkey /add:<target> /user:<name> /pass:<password>
    "cmdkey": lazy(r"(?<=[ \t])/pass(?:word)?:" + _ARG, _FI),
    # gh secret set <NAME> ... --body <value> (gh issue create --body is text)
    # (found by _gh_bodies, which reads each stretch once)
    "gh": lazy(r"(?<=[ \t])secret[ \t]+set[ \t]+\S++", _F),
}
# what follows gh's `secret set NAME` up to its value: up to a newline, | ; or & (but the
# value's quotes may hold them)
_GH_BODY = lazy(r"[^\r\n|;&]*?[ \t](?:--body|-b)[ \t=]+" + _ARG, _F)
_GH_STOP = lazy(r"[\r\n|;&]", _F)
# user:password after -u/--user (curl, wget, http), user%password (smbclient),
# user,password (lftp), user/password@ (sqlplus)
_USER_PASS = {
    "curl": lazy(
        r"(?<=[ \t])(?:-u|--user|--proxy-user|-U)[ \t=]*['\"]?[^\s:'\"]{1,64}"
        r":(?P<bare>[^\s'\"]{1,200})",
        _F,
    ),
    "http": lazy(
        r"(?<=[ \t])(?:-a|--auth)[ \t=]*['\"]?[^\s:'\"]{1,64}:(?P<bare>[^\s'\"]{1,200})", _F
    ),
    "smbclient": lazy(
        r"(?<=[ \t])(?:-U|--user)[ \t=]*['\"]?[^\s%'\"]{1,64}%(?P<bare>[^\s'\"]{1,200})", _F
    ),
    "lftp": lazy(r"(?<=[ \t])-u[ \t]+['\"]?[^\s,'\"]{1,64},(?P<bare>[^\s'\"]{1,200})", _F),
    "sqlplus": lazy(r"(?<=[ \t])['\"]?[A-Za-z0-9_$#]{1,64}/(?P<bare>[^\s@/'\"]{1,128})@", _F),
}
_COMMAND_RULE = {
    "mysql": "mysql",
    "mariadb": "mysql",
    "sshpass": "sshpass",
    "docker": "login",
    "podman": "login",
    "nerdctl": "login",
    "helm": "login",
    "redis-cli": "redis-cli",
    "sqlcmd": "upper-p",
    "bcp": "upper-p",
    "zip": "zip",
    "unzip": "zip",
    "7z": "7z",
    "7za": "7z",
    "rar": "7z",  # rar a -pX, unrar x -pX
    "unrar": "7z",
    "winrs": "winrs",
    "ldap": "ldap",
    "mongo": "mongo",
    "xfreerdp": "xfreerdp",
    "rdesktop": "rdesktop",
    "az": "az",
    "htpasswd": "htpasswd",
    "curl": "curl",
    "wget": "curl",
    "http": "http",
    "https": "http",
    "smbclient": "smbclient",
    "lftp": "lftp",
    "sqlplus": "sqlplus",
    "openssl": "openssl",
    "poetry": "poetry",
    "psexec": "rdesktop",  # -p <password>
    "rabbitmqctl": "rabbitmqctl",
    "net": "net",
    "rclone": "rclone",
    "gh": "gh",
    "cf": "az",  # Cloud Foundry: cf login -u USER -p PASSWORD
    "dotnet": "dotnet",
    "ssh-keygen": "ssh-keygen",
    "cmdkey": "cmdkey",
    "ipmitool": "upper-p",  # ipmitool -U ADMIN -P <password>
}
# Rules a command has besides its first: htpasswd -nb USER PASSWORD (no file: it prints
# the line), openssl passwd [-6 | -salt S] PASSWORD, net use Z: \\host\share PASSWORD
# /user:NAME (the password before the user).
_ARG_IN_CALL = (
    r"(?:\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})'|(?P<bare>[^\s\"'`|;&<>()]{1,200}))"
)
_MORE_FLAGS = {
    "htpasswd": (
        lazy(
            r"(?<=[ \t])-(?=[a-zA-Z]*n)(?=[a-zA-Z]*b)[a-zA-Z]+"
            r"(?:[ \t]+-[a-zA-Z]+(?:[ \t]+[0-9]+)?)*[ \t]+\S+[ \t]+" + _ARG + r"(?![^\s])",
            _F,
        ),
    ),
    "openssl": (
        lazy(
            r"(?<=[ \t])passwd(?:[ \t]+-(?:salt[ \t]+\S+|[0-9]|apr1|aixmd5|crypt))*[ \t]+"
            + _ARG_IN_CALL,
            _F,
        ),
    ),
    "net": (
        lazy(
            r"(?<=[ \t])use[ \t]+(?:[A-Za-z]:[ \t]+|\*[ \t]+)?\\\\\S+[ \t]+"
            + _ARG
            + r"(?=[ \t]+/user:)",
            _FI,
        ),
    ),
}


# Container engines (and Cloud Foundry's cf) take a password only in their login command.
_LOGIN_ONLY = frozenset(("docker", "podman", "nerdctl", "cf"))
_LOGIN = lazy(r"(?<![A-Za-z0-9_-])login(?![A-Za-z0-9_-])", _F)


def _gh_bodies(text: str, start: int, end: int) -> Iterator[re.Match[str]]:
    """The values `secret set NAME ... --body VALUE` gives between `start` and `end`: what
    one regex's finditer found, but without reading the rest of the stretch again from
    each `secret set` in it (a line of them took seconds).  When the first in a stretch
    finds no --body there, neither can a later one whose NAME ends in that stretch."""
    pos, dead = start, -1
    while (a := _COMMAND_FLAGS["gh"].search(text, pos, end)) is not None:
        if a.end() > dead:
            if (f := _GH_BODY.match(text, a.end(), end)) is not None:
                yield f
                pos = f.end()
                continue
            stop = _GH_STOP.search(text, a.end(), end)
            dead = end if stop is None else stop.start()
        pos = a.start() + 1


def commands(text: str, add: Add) -> None:
    """Passwords given to commands that take them in flags of their own; each command's
    segment (up to a newline, pipe, ; or &) is read once."""
    pos = 0
    while (m := _COMMAND.search(text, pos)) is not None:
        seg_end = _SEGMENT.match(text, m.end()).end()  # type: ignore[union-attr]
        cmd = m.group("cmd").lower().removesuffix(".exe").removesuffix("64")  # PsExec64.exe
        family = next((f for f in ("mysql", "mariadb", "ldap", "mongo") if cmd.startswith(f)), cmd)
        rule = _COMMAND_RULE.get(family)
        if family in _LOGIN_ONLY and not _LOGIN.search(text, m.end(), seg_end):
            rule = None  # docker run -p 8080:8080 publishes a port
        pattern = _COMMAND_FLAGS.get(rule or "") or _USER_PASS.get(rule or "")
        patterns = (pattern,) if pattern is not None else ()
        for pattern in (*patterns, *_MORE_FLAGS.get(rule or "", ())):
            if pattern is _COMMAND_FLAGS["gh"]:
                found = _gh_bodies(text, m.end(), seg_end)
            else:
                found = pattern.finditer(text, m.end(), seg_end)
            for f in found:
                group = _given(f)
                value = f.group(group)
                if _skip_value(value) or value.startswith("$"):
                    continue
                if group == "bare" and value.startswith("-"):  # the next flag; '-x9' is not
                    continue
                add((f.start(group), f.end(group), "password"))
        pos = max(seg_end, m.end())


# .netrc: machine host login user password secret
_NETRC = lazy(
    r"(?<![A-Za-z0-9_-])(?:machine|login|default)[ \t]++\S++"
    # at most 8 more pairs: unbounded, each login of a long run of them read the rest of
    # the run again (a longer chain's password is still found, from a login nearer it)
    r"(?:[ \t\r\n]++(?:login|account|port)[ \t]++\S++){0,8}"
    r"[ \t\r\n]++password[ \t]++(?P<v>\S{1,200})",
    _F,
)
# XML: <password>x</password>, <add key="Password" value="x"/>, <entry key="pw">x</entry>
_XML_ELEMENT = lazy(
    r"<(?P<tag>[A-Za-z_][A-Za-z0-9_.:-]{0,60})(?:[ \t][^<>]{0,200})?>"
    r"(?P<v>[^<>\r\n]{1,256})</(?P=tag)>",
    _F,
)
_XML_PAIR = lazy(
    # (quotes doubled inside a C# verbatim string: key=""Password"" value=""x"")
    r"(?:key|name)[ \t]*=[ \t]*\"\"?(?P<n>[^\"]{1,80})\"\"?[ \t\r\n]+"
    r"value[ \t]*=[ \t]*\"\"?(?P<v>[^\"\r\n]{1,256})\"",
    _FI,
)
_XML_ENTRY = lazy(
    r"<[A-Za-z_][A-Za-z0-9_.:-]{0,40}[ \t]+(?:key|name)[ \t]*=[ \t]*\"(?P<n>[^\"]{1,80})\"[ \t]*>"
    r"(?P<v>[^<>\r\n]{1,256})<",
    _FI,
)


# Bundler's credentials for a gem server, by host (Sidekiq Enterprise's among them):
# BUNDLE_ENTERPRISE__CONTRIBSYS__COM=user:password
# The name is read to its end at once and its host's "__" looked for after: a name that
# skipped lazily to the "__" read the rest of a long run of capitals again from each
# "BUNDLE_" in it. The assignment is optional so that a run without one is read once.
_BUNDLER = lazy(
    r"BUNDLE_(?P<name>[A-Z0-9_]*+)"
    r"(?:[\"']?[ \t]*[:=][ \t]*[\"']?(?P<v>[^\s\"',;]{3,300}))?",
    _F,
)
_BUNDLER_HOST = lazy(r"[A-Z0-9]__[A-Z0-9_]", _F)
# bundle config set --global gems.contribsys.com user:password
_BUNDLE_CONFIG = lazy(
    r"bundle[ \t]+config[ \t]+(?:set[ \t]+)?(?:--(?:global|local)[ \t]+)?"
    r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/?[ \t]+[\"']?(?P<v>[^\s\"':]{1,100}:[^\s\"']{1,200})",
    _F,
)


# .pgpass: hostname:port:database:username:password on a line of its own (a : or \ in a
# field is escaped with \); the match starts at the port, the host is checked behind it.
_PGPASS = lazy(
    r":(?:[0-9]{1,5}|\*):(?P<db>(?:\\.|[^\s:\\]){1,64}+):(?P<user>(?:\\.|[^\s:\\]){1,64}+)"
    r":(?P<v>(?:\\.|[^\s:\\]){1,256}+)[ \t]*(?=\r?\n|\Z)",
    _F,
)
_PGPASS_HOST = lazy(r"(?:[A-Za-z0-9_.-]{1,253}|\*)\Z", _F)
# What may come before the host on its line when the file is quoted in a note: indent, a
# list's bullet or number or a quote's marker, each followed by a blank ("- host:..."; a
# "*" with no blank after it is the any-host wildcard).
_LINE_LEAD = lazy(r"(?:[ \t]*(?:[-*+>]|[0-9]{1,3}[.)])[ \t]+)*[ \t]*", _F)
_LETTER_OR_STAR = lazy(r"[A-Za-z*]", _F)
# A service-account key's id (Google's JSON key files): 40 hex digits that name the key
# the file holds, and with the rest of the file let one use it.
_PRIVATE_KEY_ID = lazy(
    r"private_key_id[\"']?[ \t]*[:=][ \t]*[\"']?(?P<v>[0-9a-f]{40})(?![0-9a-f])", _F
)
# name: X_PASSWORD / value: ... pairs (Kubernetes env, ECS task definitions, Actions)
_NAME_VALUE = lazy(
    r"name[\"']?[ \t]*:[ \t]*[\"']?(?P<n>[A-Za-z_][A-Za-z0-9_.-]{0,80}+)[\"']?[ \t]*"
    r"(?:,[ \t\r\n]*|\r?\n(?:[ \t]*>)*[ \t]*-?[ \t]*)[\"']?value[\"']?[ \t]*:[ \t]*"
    r"(?:\"(?P<dq>[^\"\r\n]{1,256})\"|'(?P<sq>[^'\r\n]{1,256})'|(?P<bare>[^\s\"'#,}][^\s\"',}]{0,255}))",
    _F,
)
# Session cookies: the cookie is the login (JSESSIONID, PHPSESSID, sessionid, session_id,
# connect.sid, laravel_session, _myapp_session, __Host-session); the match starts at the word.
_SESSION = lazy(
    r"(?:sessid|session[_-]?id|session|sess|\.sid)=(?P<v>[A-Za-z0-9%._~+/=-]{16,4096}+)", _FI
)
# found on lower-cased bytes, each by a pattern that starts with a literal (one
# alternation of the two would be tried at every position)
# (_gh_sess=: "sess" alone only after an underscore)
_SESSION_WORDS = (
    lazy(rb"sess(?:id|ion[_-]?id|ion)="),
    lazy(rb"(?<=_)sess="),
    lazy(rb"\.sid="),
)


def _session_name(head: str) -> bool:
    """Is what comes before "session=" in a cookie's name a cookie's (``laravel_``,
    ``connect``, ``__Host-``, ``PHP`` of PHPSESSID, nothing), not a longer word's?"""
    return not head or head[-1] in "_.-" or (head.isupper() and len(head) <= 8)


# Calls that take the password as a positional argument: PHP's PDO and mysqli
# (dsn or host, user, password), Twilio's clients (account SID, auth token).
# (and JDBC's DriverManager.getConnection(url, user, password))
_POSITIONAL_CALLS = (b"PDO", b"mysqli", b"mysql_connect", b"getConnection")
_POSITIONAL = lazy(
    r"(?:_connect)?[ \t]*\([ \t]*(?:[\"'][^\"'\r\n]{0,200}[\"']"
    r"|\$?[A-Za-z_][\w.]*)[ \t]*,[ \t]*(?:[\"'][^\"'\r\n]{0,100}[\"']|\$?[A-Za-z_][\w.]*)"
    r"[ \t]*,[ \t]*"
    r"(?:\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})')",
    _F,
)
_TWILIO_PAIR = lazy(r"AC[0-9a-f]{32}[\"']?[ \t]*,[ \t]*[\"']?(?P<v>[0-9a-f]{32})(?![0-9a-f])", _F)


def files(text: str, raw: bytes, add: Add, low: bytes = b"") -> None:
    """Passwords in .netrc and .pgpass files, Bundler's host credentials, secrets in
    XML elements and attributes and in name/value pairs, positional passwords, session
    cookies, the key id of a Google service-account key, SQL's IDENTIFIED BY, `vault kv
    get` tables, seed phrases, TOTP setup keys and recovery codes under their heading."""
    if text.count(":") >= 4:
        _pgpass(text, add)
    _positional(text, raw, add)
    # The literals below are found at C speed on one byte a character, each once (and
    # written without an "a" where they can: a needle's letter repeated in the text is
    # its slow case).
    low = low or raw.lower()
    login, cred = b"login" in low, b"cred" in low
    if login or cred or b"uth" in low:
        _credential_calls(text, raw, add)
    for at in _hits(low, b"identified"):
        if (m := _IDENTIFIED_BY.match(text, at)) is not None:
            group = _given(m)
            value = m.group(group)
            if _skip_value(value) or (group == "bare" and not _credential_shaped(value)):
                continue
            add((m.start(group), m.end(group), "password"))
    if b"password" in low:
        _sql_passwords(text, low, add)
    for at in _hits(low, b"jdbc:oracle:"):
        if (m := _ORACLE_THIN.match(text, at)) is not None and not _skip_value(m.group("v")):
            add((m.start("v"), m.end("v"), "password"))
    if b"insert" in low and b"values" in low:
        for at in _hits(low, b"insert"):
            _sql_insert(text, at, add)
    if b"update" in low and b"where" in low:
        for at in _hits(low, b"update"):
            if (m := _SQL_SETTING.match(text, at)) is not None and _named_secret(
                m.group("n"), m.group("v")
            ):
                add((m.start("v"), m.end("v"), _secret_word(m.group("n"))))
    if b"---" in raw and b"Value" in raw:
        _kv_tables(text, raw, add)
    for needle in (b"mnemonic", b"phr"):
        for at in _hits(low, needle):
            if (m := _SEED_PHRASE.match(text, at)) is not None:
                add((m.start("v"), m.end("v"), "secret_assignment"))
    for at in _hits(low, b"code"):
        _recovery_codes(text, at, add)
    for needle in (b"login",) * login + (b"cred",) * cred:
        for at in _hits(low, needle):
            _login_pair(text, at, add)
    if "AC" in text:
        for m in _TWILIO_PAIR.finditer(text):
            add((m.start("v"), m.end("v"), "twilio_key"))
    if "private_key_id" in text:
        for m in _PRIVATE_KEY_ID.finditer(text):
            add((m.start("v"), m.end("v"), "google_key"))
    if "value" in text and "name" in text:
        _name_values(text, add)
    if '"sensitive"' in text:
        _terraform_sensitive(text, add)
    if b"-[ record " in low:
        _psql_records(text, low, add)
    if b"requirepass" in low or b"masterauth" in low or b"auth" in low:
        _redis(text, low, add)
    if "ess" in text or "ESS" in text or ".sid=" in text:
        _sessions(text, low, add)
    if "bundle" in text:
        for m in _BUNDLE_CONFIG.finditer(text):
            if not _skip_value(m.group("v").partition(":")[2]):
                add((m.start("v"), m.end("v"), "secret_assignment"))
    if "BUNDLE_" in text:
        for m in _BUNDLER.finditer(text):
            value = m.group("v")
            if value is None or _BUNDLER_HOST.search(m.group("name")) is None:
                continue
            user, colon, password = value.partition(":")
            pair = bool(colon and user and password and not _skip_value(password))
            if (pair or _credential_like(value)) and not _skip_value(value):
                add((m.start("v"), m.end("v"), "secret_assignment"))
    if "password" in text:
        for m in _NETRC.finditer(text):
            if not _skip_value(m.group("v")):
                add((m.start("v"), m.end("v"), "password"))
        for at in _hits(raw, b'"random_password"'):
            for m in _TF_RESULT.finditer(text, at, min(len(text), at + 4000)):
                if not _skip_value(m.group("v")):
                    add((m.start("v"), m.end("v"), "password"))
    if "<" in text:
        for m in _XML_ELEMENT.finditer(text):
            _xml_value(m, m.group("tag").rpartition(":")[2], add)
        for pattern in (_XML_PAIR, _XML_ENTRY):
            for m in pattern.finditer(text):
                _xml_value(m, m.group("n"), add)


# SQL: CREATE/ALTER USER ... IDENTIFIED [WITH plugin] BY 'password' (MySQL, MariaDB;
# Oracle's unquoted IDENTIFIED BY Tiger2024).  BY PASSWORD '*hash' is a hash, found by
# the rule for "password X".
_IDENTIFIED_BY = lazy(
    r"identified[ \t]++(?:with[ \t]++[A-Za-z0-9_'\"]{1,64}+[ \t]++)?by[ \t]++(?!password[ \t])"
    r"(?:'(?P<sq>[^'\r\n]{1,200})'|\"(?P<dq>[^\"\r\n]{1,200})\"|(?P<bare>[^\s;'\"]{1,200}+))",
    _FI,
)
# SQL's password clauses: PostgreSQL's CREATE/ALTER ROLE|USER ... [WITH] [ENCRYPTED]
# PASSWORD 'x', SQL Server's CREATE/ALTER LOGIN ... WITH PASSWORD = N'x' and a stored
# procedure's @password = N'x' (@rmtpassword), MySQL's SET PASSWORD FOR u = 'x'.
# Oracle's JDBC thin URL takes user/password before the @: jdbc:oracle:thin:scott/tiger@//h
# (jdbc:oracle:thin:@//h and /@wallet name no password).
_ORACLE_THIN = lazy(
    r"jdbc:oracle:(?:thin|oci8?):[A-Za-z0-9_$#.\"-]{1,64}/(?P<v>[^\s@/\"']{1,128})@", _FI
)
_SQL_PASSWORD_BEFORE = lazy(
    r"(?:(?<![A-Za-z])(?:with|encrypted|unencrypted|(?:role|user)[ \t]++[\w\"]{1,64}+)"
    r"[ \t]++|@[A-Za-z_]{0,24}+|(?<![A-Za-z])set[ \t]++)\Z",
    _FI,
)
_SQL_PASSWORD = lazy(
    r"password(?:[ \t]++for[ \t]++[^\s=]{1,120}+)?[ \t]*+(?:=[ \t]*+)?N?'(?P<v>[^'\r\n]{1,200})'",
    _FI,
)
# INSERT INTO t (a, password, c) VALUES (1, 'x', 3), (...): the values under a secret's
# column; UPDATE settings SET value = 'x' WHERE key = 'stripe_secret_key'.
_SQL_INSERT = lazy(
    r"insert[ \t]++into[ \t]++[\w.\"`\[\]]{1,120}+[ \t]*+\((?P<cols>[^()]{1,2000})\)"
    r"\s*+values\s*+",
    _FI,
)
_SQL_ROW = lazy(r"\s*+\((?P<row>(?:'(?:[^'\r\n]|'')*+'|[^'()\r\n]|\([^()\r\n]*+\))*+)\)\s*+,?", _F)
_SQL_CELL = lazy(r"[ \t]*+(?:N?'(?P<q>(?:[^'\r\n]|'')*+)'|[^,]*+)[ \t]*+(?:,|\Z)", _F)
_SQL_SETTING = lazy(
    r"update[ \t]++[\w.\"`]{1,120}+[ \t]++set[ \t]++[\w\"`]{1,40}+[ \t]*+=[ \t]*+"
    r"N?'(?P<v>[^'\r\n]{1,500})'[ \t]++where[ \t]++[\w\"`]{1,40}+[ \t]*+=[ \t]*+"
    r"'(?P<n>[\w.-]{1,80})'",
    _FI,
)


def _sql_passwords(text: str, low: bytes, add: Add) -> None:
    for at in _hits(low, b"password"):
        # The quoted value first: it is rare, and the words before it cost a search back.
        m = _SQL_PASSWORD.match(text, at)
        if m is None or _SQL_PASSWORD_BEFORE.search(text, max(0, at - 80), at) is None:
            continue
        if not _skip_value(m.group("v")):
            add((m.start("v"), m.end("v"), "password"))


def _sql_insert(text: str, at: int, add: Add) -> None:
    m = _SQL_INSERT.match(text, at)
    if m is None:
        return
    names = [c.strip().strip('"`[]') for c in m.group("cols").split(",")]
    secret = {i: n for i, n in enumerate(names) if _name_kind(n) is not None}
    if not secret:
        return
    pos = m.end()
    while (row := _SQL_ROW.match(text, pos)) is not None and row.group("row"):
        cell_at, column = row.start("row"), 0
        while cell_at < row.end("row") and (cell := _SQL_CELL.match(text, cell_at, row.end("row"))):
            value = cell.group("q")
            name = secret.get(column)
            if name is not None and value and _named_secret(name, value, quoted=True):
                add((cell.start("q"), cell.end("q"), _secret_word(name)))
            if cell.end() == cell_at:
                break
            cell_at, column = cell.end(), column + 1
        pos = row.end()


# Constructors and calls that take a user and a password: .NET's NetworkCredential,
# requests' and httpx's HTTPBasicAuth/BasicAuth/DigestAuth, Go's SetBasicAuth, Java's
# PasswordAuthentication and UsernamePasswordCredentials, smtplib's and ftplib's login.
_CREDENTIAL_CALLS = (
    b"NetworkCredential",
    b"BasicAuth",
    b"DigestAuth",
    b"PasswordAuthentication",
    b"UsernamePasswordCredentials",
    b".login",
)
_USER_AND_PASSWORD = lazy(
    r"[ \t]*+\([ \t]*+(?:\"[^\"\r\n]{0,200}\"|'[^'\r\n]{0,200}'|[A-Za-z_$][\w$.]{0,64}+)"
    r"[ \t]*+,[ \t]*+(?:\"(?P<dq>[^\"\r\n]{1,200})\"|'(?P<sq>[^'\r\n]{1,200})')",
    _F,
)
# `vault kv get` and `vault read` print a table: "Key  Value", "---  -----", rows.
_KV_HEAD = lazy(r"Key[ \t]++Value[ \t]*+\r?\n-{3}[ \t]++-{5}[ \t]*+(?:\r?\n|\Z)", _F)
_KV_ROW = lazy(
    r"(?P<n>[A-Za-z_][A-Za-z0-9_.-]{0,80}+)[ \t]{2,}+(?P<v>[^\s][^\r\n]{0,255}?)[ \t]*+"
    r"(?:\r?\n|\Z)",
    _F,
)
# A wallet's seed phrase: 12 to 24 words of 3 to 8 letters named as one.
_SEED_PHRASE = lazy(
    r"(?:(?<![A-Za-z])mnemonic|(?:(?<=seed)|(?<=seed[ _-])|(?<=recovery)|(?<=recovery[ _-])"
    r"|(?<=secret)|(?<=secret[ _-]))phrase)[A-Za-z0-9_]{0,40}+"
    r"(?:[ \t]++[A-Za-z]{1,12}+){0,5}+"  # seed phrase for the test wallet: ...
    r"[\"']?[ \t]*+[:=][ \t]*+(?P<q>[\"'`]?)"
    r"(?P<v>[a-z]{3,8}+(?:[ \t]++[a-z]{3,8}+){11,23}+)(?P=q)(?![A-Za-z])",
    _FI,
)
# A TOTP setup key as authenticator apps show it: groups of four base32 characters.
_SETUP_KEY_NEXT = frozenset(" \t:")
_SETUP_KEY = lazy(
    r"(?:key|secret)(?:[ \t]++is)?+(?:[ \t]*+:)?+[ \t]++"  # key: X, key is X
    r"(?P<v>[A-Za-z2-7]{4}(?:[ ][A-Za-z2-7]{4}){3,15}+)(?![A-Za-z0-9])",
    _FI,
)
# Recovery (backup) codes listed under their heading, one a line: GitHub's 5-5 hex,
# Google's 4 4 digits, and others of 8 to 12 letters and digits.
_CODES_BEFORE = lazy(
    r"(?<![A-Za-z])(?:recovery|backup|2fa|two[ -]factor|mfa|emergency|one[ -]time)[ \t_-]++"
    r"(?:(?:verification|login|sign-in|security|access)[ \t_-]++)?\Z",  # BACKUP VERIFICATION CODES
    _FI,
)
_CODES_HEAD = lazy(r"codes?(?![A-Za-z])[^\r\n]{0,120}+(?:\r?\n|\Z)", _FI)
_CODE_LINE = lazy(
    r"[ \t]*+(?:[-*+\u2022]|[0-9]{1,2}[.)])?+[ \t]*+"
    r"(?P<c>[A-Za-z0-9]{4,6}(?:[- ][A-Za-z0-9]{4,6}){1,3}|[A-Za-z0-9]{8,12})[ \t]*+(?:\r?\n|\Z)",
    _F,
)
_BLANK_LINES = lazy(r"(?:[ \t]*+\r?\n)*+", _F)
_NOTE_LINE = lazy(r"[^\r\n]{1,120}+\r?\n(?:[ \t]*+\r?\n)*+", _F)  # "Keep them somewhere safe."


def _credential_calls(text: str, raw: bytes, add: Add) -> None:
    for call in _CREDENTIAL_CALLS:
        for at in _hits(raw, call):
            m = _USER_AND_PASSWORD.match(text, at + len(call))
            if m is not None:
                group = _given(m, ("dq", "sq"))
                value = m.group(group)
                if not _skip_value(value) and not _REGEX_SYNTAX.search(value):
                    add((m.start(group), m.end(group), "password"))


def _kv_tables(text: str, raw: bytes, add: Add) -> None:
    for at in _hits(raw, b"Key"):
        if at and text[at - 1] != "\n" or (head := _KV_HEAD.match(text, at)) is None:
            continue
        pos = head.end()
        while (row := _KV_ROW.match(text, pos)) is not None:
            pos = row.end()
            name, value = row.group("n"), row.group("v")
            if _named_secret(name, value):
                add((row.start("v"), row.end("v"), _secret_word(name)))


# "the login for grafana is admin / Xq7pLm2v", "creds: deploy / Xq7pLm2v": a user and a
# password after a slash, the password one that can be nothing else.
_LOGIN_PAIR = lazy(
    r"(?:login|logins|cred|creds|credentials)(?![A-Za-z])"
    r"(?:[ \t]++(?!(?:is|are)(?![A-Za-z0-9_]))[A-Za-z0-9_.'-]{1,24}+){0,5}+"
    r"[ \t]*+(?:is|are|:|=)[ \t]++[\"'`]?[A-Za-z0-9_.@+-]{1,64}+[\"'`]?[ \t]*+/[ \t]*+"
    r"(?:[\"'`](?P<q>[^\"'`\s]{4,100})[\"'`]|(?P<bare>[^\s\"'`]{4,100}+))",
    _FI,
)
_PAIR_TRAIL = ".,;:)]}>"
# Terraform state keeps a random_password's value in the clear ("result"; "bcrypt_hash").
_TF_RESULT = lazy(r"\"(?:result|bcrypt_hash)\"[ \t]*+:[ \t]*+\"(?P<v>[^\"\\\r\n]{1,256})\"", _F)


def _login_pair(text: str, at: int, add: Add) -> None:
    if at and text[at - 1].isalnum():
        return
    m = _LOGIN_PAIR.match(text, at)
    if m is None:
        return
    group = "q" if m.group("q") is not None else "bare"
    value, end = m.group(group), m.end(group)
    if group == "bare":
        stripped = value.rstrip(_PAIR_TRAIL)
        value, end = stripped, end - (len(value) - len(stripped))
    if _credential_shaped(value) and "/" not in value:
        add((m.start(group), end, "password"))


def _recovery_codes(text: str, at: int, add: Add) -> None:
    if _CODES_BEFORE.search(text, max(0, at - 40), at) is None:
        return
    if (head := _CODES_HEAD.match(text, at)) is not None:
        pos = _BLANK_LINES.match(text, head.end()).end()  # type: ignore[union-attr]
        if _CODE_LINE.match(text, pos) is None and (note := _NOTE_LINE.match(text, pos)):
            pos = note.end()  # one line of advice (or the account's address) first
        codes = []
        while (line := _CODE_LINE.match(text, pos)) is not None:
            codes.append(line.span("c"))
            pos = line.end()
        # codes are random: most hold a digit (a list of words does not), though some
        # of Discord's eight letters happen to hold none
        digits = sum(1 for start, end in codes if _DIGIT.search(text, start, end))
        if len(codes) >= 3 and digits * 3 >= len(codes) * 2:
            for start, end in codes:
                add((start, end, "recovery_code"))


def _hits(raw: bytes, needle: bytes) -> Iterator[int]:
    """Where ``needle`` is in ``raw`` (the text one byte a character, or lower-cased)."""
    at = raw.find(needle)
    while at >= 0:
        yield at
        at = raw.find(needle, at + len(needle))


def _named_secret(name: str, value: str, quoted: bool = False) -> bool:
    """Is ``value``, given under ``name`` (a key, an element, a table's row, a variable),
    a secret? Names that are credentials only sometimes (``*_KEY``, ``auth``) need a
    value that looks like one."""
    kind = _name_kind(name)
    if kind is None or _skip_value(value):
        return False
    return kind not in ("key", "auth") or _credential_like(value, quoted)


def _secret_word(name: str) -> str:
    """The kind a value named ``name`` is redacted as: a password when the name says so."""
    low = name.lower()
    return "password" if "pass" in low or "pw" in low else "secret_assignment"


# A sentence, as an app's strings file gives one under a secret's name: "Forgot
# password?", "Your session token expired. Please sign in again."
_SENTENCE = lazy(
    r"(?:[A-Za-z][A-Za-z']*+|[0-9]++)[,;]?+"
    r"(?:[ \t]++(?:[A-Za-z][A-Za-z']*+|[0-9]++)[.,;:!?]?+){1,40}+",
    _F,
)


def _xml_value(m: re.Match[str], name: str, add: Add) -> None:
    value = m.group("v").strip()
    if not value or not _named_secret(name.rpartition(".")[2], value):
        return
    if value[-1] in ".?!" and _SENTENCE.fullmatch(value):
        return
    start = m.start("v") + (len(m.group("v")) - len(m.group("v").lstrip()))
    add((start, start + len(value), _secret_word(name)))


def _pgpass(text: str, add: Add) -> None:
    for m in _PGPASS.finditer(text):
        line = text.rfind("\n", 0, m.start()) + 1
        lead = _LINE_LEAD.match(text, line, m.start())
        line = lead.end() if lead else line
        if (
            _PGPASS_HOST.match(text, line, m.start())
            and _LETTER_OR_STAR.search(m.group("db"))
            and _LETTER_OR_STAR.search(m.group("user"))
            and not _skip_value(m.group("v"))
        ):
            add((m.start("v"), m.end("v"), "password"))


def _positional(text: str, raw: bytes, add: Add) -> None:
    for call in _POSITIONAL_CALLS:
        for at in _hits(raw, call):
            m = _POSITIONAL.match(text, at + len(call))
            if m is not None:
                group = _given(m, ("dq", "sq"))
                if not _skip_value(m.group(group)):
                    add((m.start(group), m.end(group), "password"))


def _name_values(text: str, add: Add) -> None:
    for m in _NAME_VALUE.finditer(text):
        group = _given(m)
        value = m.group(group)
        if _code(value):
            continue
        if _named_secret(m.group("n"), value) or _cookie_pair(m.group("n"), value):
            add((m.start(group), m.end(group), "secret_assignment"))


def _cookie_pair(name: str, value: str) -> bool:
    """A session cookie given as a name and a value (a HAR file's ``"cookies"``, a
    browser's cookie export): ``{"name": "PHPSESSID", "value": "..."}``."""
    if len(value) < 16 or _skip_value(value):
        return False
    m = _SESSION.search(name + "=" + value)
    if m is None or m.end() != len(name) + 1 + len(value):
        return False
    head = name[: m.start()]
    return (
        (m.group().startswith(".") or _session_name(head))
        and bool(_DIGIT.search(value) or random_letters(value))
        and bool(_LETTER.search(value))
    )


# terraform output -json, terraform show -json: a value its output marks sensitive
_TF_SENSITIVE = lazy(
    r"\"sensitive\"[ \t]*+:[ \t]*+true[ \t]*+,\s{0,80}+"
    r"(?:\"type\"[ \t]*+:[ \t]*+\"[a-z]{1,10}\"[ \t]*+,\s{0,80}+)?+"
    r"\"value\"[ \t]*+:[ \t]*+\"(?P<v>(?:[^\"\\\r\n]|\\.){1,4096}+)\"",
    _F,
)
# psql's expanded display (\x): "-[ RECORD 1 ]--+----" then "name | value" rows
_PSQL_ROW = lazy(
    r"(?P<n>[A-Za-z_][A-Za-z0-9_]{0,62}+)[ \t]*+\|[ \t](?P<v>[^\r\n]*?)[ \t]*+(?:\r?\n|\Z)", _F
)
# redis-cli: CONFIG GET requirepass answers "1) "requirepass"" then "2) "<password>""
# (or, not to a terminal, the two lines bare); MONITOR and the prompt show AUTH's arguments
_REDIS_CONFIG = lazy(
    r"(?:[0-9]{1,4}\)[ \t]+)?\"?(?:requirepass|masterauth)\"?[ \t]*\r?\n"
    r"(?:[ \t]*[0-9]{1,4}\)[ \t]+\"(?P<q>[^\"\r\n]{1,256})\"|(?P<bare>[^\s\"]{1,256}))"
    r"[ \t]*(?:\r?\n|\Z)",
    _F,
)
_REDIS_AUTH = lazy(
    r"\"auth\"(?:[ \t]+\"[^\"\r\n]{1,64}\")?[ \t]+\"(?P<q>[^\"\r\n]{1,256})\"[ \t]*(?:\r?\n|\Z)"
    r"|auth(?:[ \t]+[^\s\"]{1,64})?[ \t]+(?P<bare>[^\s\"]{1,256})[ \t]*(?:\r?\n|\Z)",
    _FI,
)
_REDIS_PROMPT = lazy(r"(?:[\w.-]++|\[[0-9a-f:]++\]):[0-9]{1,5}(?:\[[0-9]{1,2}\])?>", _F)


def _terraform_sensitive(text: str, add: Add) -> None:
    for m in _TF_SENSITIVE.finditer(text):
        if not _skip_value(m.group("v")):
            add((m.start("v"), m.end("v"), "secret_assignment"))


def _psql_records(text: str, low: bytes, add: Add) -> None:
    """The rows of psql's expanded records whose name says they hold a secret."""
    for at in _hits(low, b"-[ record "):
        line_end = text.find("\n", at)
        pos = line_end + 1 if line_end >= 0 else len(text)
        while pos < len(text):
            m = _PSQL_ROW.match(text, pos)
            if m is None:
                break
            value = m.group("v")
            if value and _named_secret(m.group("n"), value):
                add((m.start("v"), m.end("v"), _secret_word(m.group("n"))))
            pos = m.end()


def _redis(text: str, low: bytes, add: Add) -> None:
    for needle in (b"requirepass", b"masterauth"):
        for at in _hits(low, needle):
            start = text.rfind("\n", max(0, at - 12), at) + 1
            if start == 0 and at > 12:
                continue  # not at the start of a line
            if (m := _REDIS_CONFIG.match(text, start)) is not None and m.start() <= at:
                group = "q" if m.group("q") is not None else "bare"
                if not _skip_value(m.group(group)):
                    add((m.start(group), m.end(group), "password"))
    for at in _hits(low, b"auth"):
        quoted = at > 0 and text[at - 1] == '"'
        if quoted:
            m = _REDIS_AUTH.match(text, at - 1)
        else:
            # typed at redis-cli's prompt: 127.0.0.1:6379> AUTH [user] password
            lo = max(0, at - 80)
            line_start = text.rfind("\n", lo, at) + 1 or lo
            prompt = text[line_start:at].rstrip(" \t")
            if not prompt.endswith(">"):
                continue
            if not _REDIS_PROMPT.fullmatch(prompt, max(prompt.rfind(" "), prompt.rfind("\t")) + 1):
                continue
            m = _REDIS_AUTH.match(text, at)
        if m is None:
            continue
        group = "q" if m.group("q") is not None else "bare"
        if m.group(group) is not None and not _skip_value(m.group(group)):
            add((m.start(group), m.end(group), "password"))


# A cookie made in code or a copied request: new Cookie("JSESSIONID", "..."), .NET's
# System.Net.Cookie("ASP.NET_SessionId", "...", "/", "host")
_COOKIE_CALL = lazy(
    r"Cookie[ \t]*\([ \t]*[\"'](?P<n>[^\"'\r\n]{1,60})[\"'][ \t]*,[ \t]*"
    r"[\"'](?P<v>[^\"'\r\n]{1,4096})[\"']",
    _F,
)


def _sessions(text: str, low: bytes, add: Add) -> None:
    if b"cookie" in low:
        for call in _COOKIE_CALL.finditer(text):
            if _cookie_pair(call.group("n"), call.group("v")):
                add((call.start("v"), call.end("v"), "secret_assignment"))
    hits = sorted(h.start() for words in _SESSION_WORDS for h in words.finditer(low))
    for hit in hits:
        m = _SESSION.match(text, hit)
        if m is None:
            continue
        value = m.group("v")
        # a name starts after a run of dashes (a PEM footer glued on: -----PHPSESSID=)
        head = text[_word_start(text, m.start()) : m.start()].rpartition("--")[2]
        if (
            (m.group().startswith(".") or _session_name(head))
            and head != "WT_"  # Windows Terminal's WT_SESSION: the GUID of a tab
            and not _skip_value(value)
            and (_DIGIT.search(value) or random_letters(value))
            and _LETTER.search(value)
        ):
            add((m.start("v"), m.end("v"), "secret_assignment"))
