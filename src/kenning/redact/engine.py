"""The redaction engine: runs every rule over the original text, merges their spans and
writes the markers.  See the package docstring for the design."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kenning.redact import (
    entropy,
    exports,
    formats,
    layout,
    named,
    personal,
    phrases,
    platforms,
    printed,
    vendors,
)
from kenning.redact.lazy import lazy

_F = re.ASCII
_Span = tuple[int, int, str]

#: Every kind :func:`redact` can report, most specific first.  When spans of different
#: kinds overlap, the merged span takes the kind that comes first here.
KINDS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            "private_key",
            "anthropic_key",
            "openai_key",
            *(kind for kind, _, _ in formats.FORMATS),
            *(kind for kind, _, _ in formats.OTHER),
            *formats.WEBHOOK_KINDS,
            "discord_token",
            "aws_access_key_id",
            "aws_secret_key",
            "jwt",
            "azure_sas",
            *vendors.KINDS,
            "recovery_code",
            "card_number",
            "password_hash",
            "password",
            "secret_assignment",
            "high_entropy",
        )
    )
)
_RANK = {kind: rank for rank, kind in enumerate(KINDS)}


@dataclass(frozen=True, slots=True)
class Redaction:
    """The result of :func:`redact`."""

    text: str  # the text with each secret replaced by "[redacted:<kind>]"
    kinds: tuple[str, ...]  # kinds found, in order of first appearance, no duplicates
    secret_chars: int  # how many characters of the input were secret
    # (kind, how many) in order of first appearance; not compared: it follows from the text
    counts: tuple[tuple[str, int], ...] = field(default=(), compare=False)


# BEGIN line, a body of base64 and "Proc-Type: 4,ENCRYPTED"-style headers (with literal
# \n when JSON-escaped), and the END line when it is there.
_PEM = lazy(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"(?P<body>(?:[A-Za-z0-9+/=\s:,.\\]|-(?!----))*+)"
    r"(?P<end>-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
    _F,
)
_PEM_MIN_BODY = 32  # base64 characters; less is code that mentions the header line
# PuTTY key files: the private part follows "Private-Lines: N".
_PUTTY = lazy(
    r"Private-Lines:[ \t]*[0-9]{1,3}[ \t]*\r?\n(?P<body>(?:[A-Za-z0-9+/=]{4,}+(?:\r?\n|\Z))+)", _F
)
_ALNUM = lazy(r"[A-Za-z0-9]", _F)
_AWS_SECRET_NEAR = lazy(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])", _F)
_PURE_PART = lazy(r"(?:0x)?[0-9a-fA-F]*|[A-Za-z]*|[0-9]*", _F)


# Short texts found to hold no secret, which come again and again (tags, provenance:
# agent names, folders, hosts; an import's repeated scopes): each is judged once. Only
# clean texts are kept, so no secret stays in memory here.
_CLEAN_LONGEST = 160
_CLEAN_KEPT = 4096
_clean: set[str] = set()


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` by ``[redacted:<kind>]``."""
    short = len(text) <= _CLEAN_LONGEST
    if short and text in _clean:
        return Redaction(text, (), 0)
    found = _apply(text, _spans(text))
    if short and not found.kinds:
        if len(_clean) >= _CLEAN_KEPT:
            _clean.clear()
        _clean.add(text)
    # A marker can join what was around it into a new secret's shape (a PEM header glued
    # to the name of an assignment): redacting the redacted text again must change
    # nothing, so a memory's text is redacted until it does not change, a few times at
    # most. A longer text (a transcript, a pasted log) is read once: another pass would
    # double its cost, and it is redacted again whole if it is ever stored again.
    for _ in range(_PASSES - 1 if len(text) <= _AGAIN_LONGEST else 0):
        if not found.kinds or not (again := _spans(found.text)):
            break
        found = _again(text, found, _apply(found.text, again))
    return found


def _outside_markers(text: str, spans: list[_Span]) -> list[_Span]:
    """The spans that neither start nor end inside a marker: a marker is a word, and
    what cuts into one (`user:password` read across `[redacted:stripe_key]`) is not a
    secret."""
    marks = [m.span() for m in _MARKER.finditer(text)]
    return [
        (start, end, kind)
        for start, end, kind in spans
        if not any(a < start < b or a < end < b for a, b in marks)
    ]


_PASSES = 4
_AGAIN_LONGEST = 20_000


def _again(text: str, before: Redaction, after: Redaction) -> Redaction:
    """`after` (a pass over `before.text`) as a redaction of `text`: its markers less the
    ones `text` held already, the secret characters of both passes."""
    counts = count_markers(after.text) - count_markers(text)
    kinds = tuple(dict.fromkeys(k for k in _MARKER.findall(after.text) if counts[k] > 0))
    secret = min(len(text), before.secret_chars + after.secret_chars)
    if not kinds:  # it only joined markers the text held already
        return replace(after, kinds=before.kinds, secret_chars=secret, counts=before.counts)
    return Redaction(after.text, kinds, secret, tuple((k, counts[k]) for k in kinds))


def _apply(text: str, spans: list[_Span]) -> Redaction:
    if not spans:
        return Redaction(text, (), 0)
    out: list[str] = []
    counts: dict[str, int] = {}
    pos = 0
    secret = 0
    for start, end, kind in spans:
        out.append(text[pos:start])
        out.append(f"[redacted:{kind}]")
        counts[kind] = counts.get(kind, 0) + 1
        secret += end - start
        pos = end
    out.append(text[pos:])
    return Redaction("".join(out), tuple(counts), secret, tuple(counts.items()))


def redact_lines(first: str, rest: str) -> tuple[str, str, bool]:
    """Redact a title and a body as the one text they are (a secret can start in one and
    end in the other), in one pass: (title, body, mostly_secret of the whole)."""
    text = f"{first}\n{rest}"
    spans = _spans(text)
    total = len("".join(text.split()))
    secret = sum(len("".join(text[s:e].split())) for s, e, _ in spans)
    joint = len(first)
    if any(s <= joint < e for s, e, _ in spans):  # a span across the line break
        return redact(first).text, redact(rest).text, secret * 2 > total
    head = [sp for sp in spans if sp[1] <= joint]
    tail = [(s - joint - 1, e - joint - 1, k) for s, e, k in spans if s > joint]
    title, body = _apply(first, head).text, _apply(rest, tail).text
    if spans:  # as `redact`, until it does not change
        title, body = redact(title).text, redact(body).text
    return title, body, secret * 2 > total


def mostly_secret(text: str) -> bool:
    """True when secrets make up most of the text's non-whitespace characters (> 50%)
    after redaction, i.e. the item is basically a secret and should be refused."""
    total = len("".join(text.split()))
    if not total:
        return False
    secret = sum(len("".join(text[s:e].split())) for s, e, _ in _spans(text))
    return secret * 2 > total


_MARKER = lazy(r"\[redacted:([a-z0-9_]+)\]", _F)


def count_markers(text: str) -> Counter[str]:
    """How many ``[redacted:kind]`` markers of each kind ``text`` holds."""
    return Counter(_MARKER.findall(text))


def holds_secret(text: str) -> bool:
    """Does ``text`` hold a secret that a structured rule finds?  (For base64 that
    decodes to text: the entropy rule leaves it alone unless it does, and `layout`
    redacts what is piped to ``base64 -d`` if it does.)"""
    return bool(_structured(text, text.encode("ascii", "replace")))


def _asked_once() -> Callable[[str], bool]:
    """`holds_secret`, answering each text once: within one redaction, the base64
    piped to ``base64 -d`` and the entropy rule ask it of the same decoded text."""
    answers: dict[str, bool] = {}

    def secret(text: str) -> bool:
        if text not in answers:
            answers[text] = holds_secret(text)
        return answers[text]

    return secret


# --------------------------------------------------------------------------------------


def _structured(
    text: str,
    raw: bytes,
    public: list[tuple[int, int]] | None = None,
    low: bytes = b"",
    secret: Callable[[str], bool] = holds_secret,
) -> list[_Span]:
    """The spans of every rule but the two that judge what is left (named values and
    entropy), merged.  (``low``: ``raw`` lower-cased, made once for the rules that find
    their literals in it.)"""
    found: list[_Span] = []
    low = low or raw.lower()
    add = found.append
    if "PRIVATE KEY" in text:
        for m in _PEM.finditer(text):
            body = m.start("body")
            if len(_ALNUM.findall(text, body, min(m.end("body"), body + 256))) >= _PEM_MIN_BODY:
                # A truncated block (no END line) ends with its last base64 character.
                end = m.end() if m.group("end") else body + len(m.group("body").rstrip())
                add((m.start(), end, "private_key"))
    if "Private-Lines:" in text:
        for m in _PUTTY.finditer(text):
            add((m.start("body"), m.start("body") + len(m.group("body").rstrip()), "private_key"))
    formats.find_formats(text, raw, add)
    named.urls_and_headers(text, add)
    named.assignments(text, raw, add, low)
    named.commands(text, add)
    named.files(text, raw, add, low)
    platforms.platforms(text, raw, low, add)
    phrases.phrases(text, low, add)
    exports.csv_columns(text, low, add)
    exports.keepass(text, add)
    exports.plist(text, add)
    exports.copy_rows(text, add)
    personal.cards(text, low, add)
    personal.pins(text, low, add)
    personal.security_answers(text, low, add)
    personal.seed_phrases(text, low, add)
    personal.recovery_and_setup_keys(text, low, add)
    personal.password_hashes(text, add)
    printed.printed(text, low, add)
    vendors.short_ids(text, add)
    if b": " in low or b":|" in low or b":>" in low:
        layout.yaml_blocks(text, low, add)
    layout.decoded_base64(text, low, add, secret)
    if "[" in text:
        layout.keypairs(text, add)
    if public is None:
        public = entropy.public_spans(text, raw, low)
    if public and found:  # nothing inside a certificate or a public key is a secret
        blocks = _merge([(s, e, "") for s, e in public])
        at = [s for s, _, _ in blocks]
        found = [s for s in found if s[2] == "private_key" or not _inside(s, blocks, at)]
    merged = _merge(found)
    starts = {start for start, _, _ in merged}
    ends = [end for _, end, _ in merged]
    while ends:  # tokens glued to the end of another secret: a key right after a PEM END
        glued = [
            g
            for end in ends
            if end not in starts and (g := formats.match_at(text, end)) is not None
        ]
        starts.update(start for start, _, _ in glued)
        ends = [end for _, end, _ in glued]
        if glued:
            merged = _merge(merged + glued)
    return merged


# What a terminal or a JSON encoder puts between a secret's name and its value: a colour
# code (``NAME\x1b[0m=\x1b[33mvalue``) and the ``\u003d`` that Go and Gson write for ``=``
# (``&`` is ``\u0026``). The rules read the text without them, and the spans found are
# mapped back onto the text as it is.
_HIDDEN = lazy(r"\x1b\[[0-9;?]{0,32}[A-Za-z]|\\u00(?:3[dDcCeE]|26|27)", _F)
_ESCAPED = {"3d": "=", "3c": "<", "3e": ">", "26": "&", "27": "'"}


# A JSON string (a tool result in an agent's transcript: an env dump, a log, a file read)
# writes its line breaks and tabs as \n, \r and \t: within one, they end a value as the
# characters they stand for do. A string counts only when every backslash in it starts a
# JSON escape (so not C:\Users\nina) and an escape of a break or a tab is followed by more
# of the string (a trailing "...\n" changes nothing).
_JSON_STRING = lazy(r'(?<!\\)"(?:[^"\\\r\n]++|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*+"', _F)
_JSON_ESCAPE = lazy(r"\\(.)", _F | re.DOTALL)
_BREAKS = {"n": "\n", "r": "\r", "t": "\t"}


def _spans(text: str) -> list[_Span]:
    """All secret spans of ``text``, merged, sorted and non-overlapping."""
    if "\\n" not in text and "\\r" not in text and "\\t" not in text:
        return _escaped_spans(text)
    at = [
        e.start()
        for m in _JSON_STRING.finditer(text)
        if "\\" in m.group()
        for e in _JSON_ESCAPE.finditer(text, m.start() + 1, m.end() - 2)
        if e.group(1) in _BREAKS and not _leads_value(text, e.start(), e.group(1))
    ]
    if not at:
        return _past_leads(text, _escaped_spans(text))
    # The text read with those escapes as one character each; a span maps back by the
    # escapes before its ends (each one character longer in the text).
    parts: list[str] = []
    pos = 0
    for i in at:
        parts.append(text[pos:i])
        parts.append(_BREAKS[text[i + 1]])
        pos = i + 2
    parts.append(text[pos:])
    read = [i - n for n, i in enumerate(at)]  # where each escape is in the text as read
    return _past_leads(
        text,
        [
            (s + bisect_left(read, s), e + bisect_left(read, e), k)
            for s, e, k in _escaped_spans("".join(parts))
        ],
    )


_LEAD = lazy(r"(?:\\t|\\\\(?:\\r)?\\n)+", _F)


def _past_leads(text: str, spans: list[_Span]) -> list[_Span]:
    """Spans that start with the escapes `_leads_value` left, moved past them: the value
    is what follows (``password=\\t[redacted]``)."""
    out = []
    for s, e, k in spans:
        if text.endswith("=", 0, s) and (m := _LEAD.match(text, s, e)) and m.end() < e:
            s = m.end()
        out.append((s, e, k))
    return out


def _leads_value(text: str, at: int, escape: str) -> bool:
    """Does the escape at ``at`` (``\\t``, or ``\\n`` after an escaped backslash) come
    straight after ``NAME=``, before its value? ``password=\\tx`` and a shell's line
    continuation (``PGPASSWORD=\\\\\\nx``) still give a value: such an escape is left as
    it is written, not read as a break that would end an empty value."""
    if escape != "t":
        if escape == "n" and text.endswith("\\r", 0, at):
            at -= 2  # \\r\\n
        if not text.endswith("\\\\", 0, at):
            return False
        at -= 2
    while text.endswith("\\t", 0, at):
        at -= 2
    return text.endswith("=", 0, at)


def _escaped_spans(text: str) -> list[_Span]:
    """`_plain_spans`, with terminal colours and Go's \u003d read through."""
    if "\x1b[" not in text and "\\u00" not in text:
        return _plain_spans(text)
    # The text read without its escapes, and where each of its characters came from.
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in _HIDDEN.finditer(text):
        parts.append(text[pos : m.start()])
        starts.extend(range(pos, m.start()))
        ends.extend(range(pos + 1, m.start() + 1))
        if m.group().startswith("\\"):
            parts.append(_ESCAPED[m.group()[4:].lower()])
            starts.append(m.start())
            ends.append(m.end())
        pos = m.end()
    if not parts:
        return _plain_spans(text)
    parts.append(text[pos:])
    starts.extend(range(pos, len(text)))
    ends.extend(range(pos + 1, len(text) + 1))
    return [(starts[s], ends[e - 1], k) for s, e, k in _plain_spans("".join(parts))]


def _plain_spans(text: str) -> list[_Span]:
    """All secret spans of ``text`` as it reads, merged, sorted and non-overlapping."""
    if len(text) < formats.MIN_TOKEN and text.isalnum() and text.isascii():
        return []  # no rule can find anything in a short word ("user", "cli", a tag)
    # One byte per character (non-ASCII becomes "?"), for fast case-folded and
    # character-class searches that keep the offsets of ``text``.
    raw = text.encode("ascii", "replace")
    low = raw.lower()
    public = entropy.public_spans(text, raw, low)
    secret = _asked_once()
    merged = _structured(text, raw, public, low, secret)
    ids = [span for span in merged if span[2] == "aws_access_key_id"]
    if ids:
        windows = _merge([(max(0, s - 120), e + 120, k) for s, e, k in ids])
        near = [  # the secret access key next to an access key id
            (m.start(), m.end(), "aws_secret_key")
            for start, end, _ in windows
            for m in _AWS_SECRET_NEAR.finditer(text, start, end)
            if _mixed_case(m.group()) and not entropy.path_like(m.group())
        ]
        merged = _merge(merged + near)
    # Phase 2: named values, then high-entropy runs, in the gaps between the spans so
    # far and outside certificates and public keys.
    occupied = _merge(merged + [(s, e, "") for s, e in public])
    extra: list[_Span] = []
    finder = vendors.Finder(text, raw, entropy.looks_random)
    for lo, hi in _gaps(occupied, len(text), vendors.MIN_VALUE):
        finder.spans(lo, hi, extra)
    if extra:
        merged = _merge(merged + extra)
        occupied = _merge(occupied + extra)
    extra = []
    scanner = entropy.Scanner(text, raw, secret)
    for lo, hi in _gaps(occupied, len(text), entropy.MIN_GAP):
        scanner.spans(lo, hi, extra)
    if extra:
        merged = sorted(merged + extra)
    extra = []
    layout.wrapped(text, raw, merged, extra.append)
    if extra:
        merged = _merge(merged + extra)
    if "[redacted:" in text:  # redacted before: a marker is a word no span cuts into
        merged = _outside_markers(text, merged)
    return merged


def _gaps(spans: list[_Span], size: int, least: int) -> list[tuple[int, int]]:
    gaps = []
    pos = 0
    for start, end, _ in [*spans, (size, size, "")]:
        if start - pos >= least:
            gaps.append((pos, start))
        pos = max(pos, end)
    return gaps


def _inside(span: _Span, blocks: list[_Span], starts: list[int]) -> bool:
    """Is ``span`` inside one of ``blocks`` (merged, sorted, their ``starts``)?  By
    bisection: a text of many certificates and many secrets would otherwise cost
    their product."""
    i = bisect_right(starts, span[0]) - 1
    return i >= 0 and span[1] <= blocks[i][1]


def _merge(spans: list[_Span]) -> list[_Span]:
    if len(spans) < 2:
        return spans
    spans.sort()
    merged: list[_Span] = []
    cur_start, cur_end, cur_kind = spans[0]
    for start, end, kind in spans[1:]:
        if start < cur_end:  # overlap: one span, the most specific kind
            cur_end = max(cur_end, end)
            if _RANK.get(kind, len(_RANK)) < _RANK.get(cur_kind, len(_RANK)):
                cur_kind = kind
        else:
            merged.append((cur_start, cur_end, cur_kind))
            cur_start, cur_end, cur_kind = start, end, kind
    merged.append((cur_start, cur_end, cur_kind))
    return merged


def _mixed_case(token: str) -> bool:
    return not token.isupper() and not token.islower() and not _PURE_PART.fullmatch(token)
