"""Secrets whose layout hides them from the rules that read a line at a time: a token the
terminal wrapped (or a shell command continued with ``\\``) onto the next line, a YAML
block scalar (``password: |`` and the indented lines under it), base64 decoded by the
command it is piped to (``echo <base64> | base64 -d``) and a Solana keypair's array of
64 bytes.

Each starts from a literal or from the spans the other rules found: a wrap is read only
at the end of a line that ends in a secret (or in a token's known prefix; then over
the lines that follow, indented or followed by words, when a format ends exactly where
they do), a block only
under ``: |`` or ``: >``, base64 only before ``base64 -d``, an array only after ``[``
and a digit.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kenning.redact import formats
from kenning.redact.entropy import decoded_printable
from kenning.redact.lazy import lazy
from kenning.redact.named import _credential_like, _name_kind, _skip_value, password_shaped

Add = Callable[[tuple[int, int, str]], None]
_Span = tuple[int, int, str]
_F = re.ASCII

# --- a token wrapped onto the next line ---------------------------------------------------

# The characters of a token's body (base64, hex, url-safe base64, a vendor's alphabet).
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.~-")
# The line break of a wrap: a newline, or a shell's "\" before it (then the next line may
# be indented); the second half a run of the token's characters ("=" only as padding).
_BREAK = lazy(r"(?P<cont>\\)?\r?\n(?(cont)[ \t]*)", _F)
_TAIL = lazy(r"[A-Za-z0-9_+/.~-]{4,4096}+=*", _F)
# What may follow the second half: its line's end, a quote, or (after a "\") the next
# word of the command.
_TAIL_END = frozenset("\r\n\"'`")
_MIN_HALF = 12  # the first half's characters: a shorter secret is a password, not a token
_WORDS_AND_NUMBERS = lazy(r"[a-z]+(?:[-.][a-z0-9]+)+|v?[0-9]+(?:\.[0-9]+)+[a-z0-9.-]*", _F)
# A path of lower-case names (/usr/bin/python3, ./node_modules/.bin/tsc): the next command's
# or its output's first word, never the rest of a token (whose "/" comes among capitals).
_PATH = lazy(r"(?:~|\.{1,2})?(?:/[a-z0-9._+-]+)+/?", _F)


def wrapped(text: str, raw: bytes, spans: list[_Span], add: Add) -> None:
    """The second half of a secret broken at the end of its line: after a span (found
    by any rule) that ends its line, or after a token's known prefix left too short to
    be one, the run of token characters that starts the next line, when the two make
    one token (a format that needs the second half to fit) or the second half looks
    random on its own."""
    if b"\n" not in raw:
        return
    ends = {end: (start, kind) for start, end, kind in spans}
    for end, (start, kind) in ends.items():
        if text[end : end + 1] in _BREAK_START and end - start >= _MIN_HALF:
            found = _tail(text, end)
            if (
                found is not None
                and _token(text, start, end)
                and _random_tail(text[found[0] : found[1]])
            ):
                add((found[0], found[1], kind))
                continue
            # a format's prefix in the span: its lines may complete the format (words
            # after its tail, an indented tail, a tail over more lines)
            run = end
            while run > start and text[run - 1] in _TOKEN_CHARS:
                run -= 1
            if end - run >= 2 and _prefix_at(text, run, end) and not _whole(text[run:end]):
                _prefixed(text, run, end, add)
    # a prefix the formats refused for being short: ghp_ and 15 characters, then the rest
    # (found on a byte map of the text: the ends of lines of 8 token characters or more,
    # before a line that starts with one or after a shell's "\")
    mapped = raw.translate(_WRAP_MAP)
    needles = [b"aaaaaaaa\na", b"aaaaaaaa\n "]
    if b"\r" in raw:
        needles += [b"aaaaaaaa\r\na", b"aaaaaaaa\r\n "]
    if b"\\\n" in raw or b"\\\r" in raw:
        needles += [b"aaaaaaaa\\\n", b"aaaaaaaa\\\r\n"]
    for needle in needles:
        at = mapped.find(needle)
        while at >= 0:
            end = at + 8
            if end not in ends:
                head = mapped[max(0, end - 300) : end]
                start = end - (len(head) - len(head.rstrip(b"a")))
                if _prefix_at(text, start, end):
                    _prefixed(text, start, end, add)
            at = mapped.find(needle, end)


_BREAK_START = frozenset("\\\r\n")


def _prefix_at(text: str, start: int, end: int) -> bool:
    """Does a format's prefix start the run, or a value after a "=" in it?"""
    prefixes = formats.prefixes()
    at = start
    while 0 <= at < end:
        if any(text.startswith(p, at, end) for p in prefixes.get(text[at : at + 2], ())):
            return True
        at = text.find("=", at, end)
        at = at + 1 if at >= 0 else -1
    return False


_WRAP_MAP = bytes(
    ord("a") if chr(b) in _TOKEN_CHARS else b if chr(b) in "\r\n\\" else ord(" ")
    for b in range(256)
)


def _token(text: str, start: int, end: int) -> bool:
    return all(c in _TOKEN_CHARS for c in text[start:end])


def _tail(text: str, end: int) -> tuple[int, int] | None:
    """The run of token characters that starts the line after `end`, if it stands alone
    there (its line ends after it, or a quote closes it, or the command goes on)."""
    brk = _BREAK.match(text, end)
    if brk is None:
        return None
    m = _TAIL.match(text, brk.end())
    if m is None:
        return None
    after = text[m.end() : m.end() + 1]
    if after and after not in _TAIL_END and not (brk.group("cont") and after in " \t"):
        return None
    return m.start(), m.end()


def _random_tail(tail: str) -> bool:
    """Does the second half look like the rest of a random token, not a word, a number,
    a version or words joined by hyphens?"""
    if len(tail) < 6 or _WORDS_AND_NUMBERS.fullmatch(tail) or _PATH.fullmatch(tail):
        return False
    digits = any(c.isdigit() for c in tail)
    letters = sum(c.isalpha() for c in tail)
    if digits and letters:
        return True
    # letters alone: both cases, changing inside the run (not a Word or a WORD)
    return letters >= 10 and not tail.isupper() and not tail[1:].islower()


def _whole(run: str) -> bool:
    """Whether a format takes the whole run already: a complete token is not read on
    into the next line (a checksum or a word may start it)."""
    token = formats.match_at(run, 0)
    return token is not None and token[1] == len(run)


def _prefixed(text: str, start: int, end: int, add: Add) -> None:
    """A token's known prefix at the end of a line, too short to be its format: when the
    runs that start the next lines complete it, the token's characters on every line go.
    The tail may be followed by words on its line, or indented with no shell's "\\", only
    when the format ends exactly where the tail does."""
    runs = _runs(text, end)
    if not runs:
        return
    first = text[runs[0][0] : runs[0][1]]
    if first.isalpha() and (first.islower() or first.istitle()):
        return  # a word: the line goes on in prose
    joined = text[start:end]
    for n, (lo, hi) in enumerate(runs):
        joined += text[lo:hi]
        before = len(joined) - (hi - lo)  # where this run starts in `joined`
        for pos in range(end - start):
            if pos and joined[pos - 1] != "=":
                continue
            token = formats.match_at(joined, pos)
            if token is None or token[1] <= before:
                continue
            if token[1] != len(joined) and not _clean_end(text, lo, hi):
                continue
            add((start + pos, end, token[2]))
            for run_lo, run_hi in runs[:n]:
                add((run_lo, run_hi, token[2]))
            add((lo, lo + token[1] - before, token[2]))
            return


# Where a wrapped token's next line starts: after its break (a shell's "\\" or none), past
# any indentation.
_NEXT_LINE = lazy(r"\\?\r?\n[ \t]*", _F)
_MAX_LINES = 8  # the lines a wrapped token is read over after its first


def _runs(text: str, end: int) -> list[tuple[int, int]]:
    """The runs of token characters that start the lines after `end`: the next line's,
    and the one after while each fills its line."""
    runs: list[tuple[int, int]] = []
    pos = end
    while len(runs) < _MAX_LINES:
        brk = _NEXT_LINE.match(text, pos)
        m = None if brk is None else _TAIL.match(text, brk.end())
        if m is None:
            break
        runs.append(m.span())
        if text[m.end() : m.end() + 1] not in _BREAK_START:
            break
        pos = m.end()
    return runs


def _clean_end(text: str, lo: int, hi: int) -> bool:
    """Does the tail stand alone on its line (the old reading: the line ends, a quote
    closes it, or a shell's continued command goes on)?"""
    return _tail(text, _line_break_before(text, lo)) == (lo, hi)


def _line_break_before(text: str, lo: int) -> int:
    at = text.rfind("\n", 0, lo)
    if at > 0 and text[at - 1] == "\r":
        at -= 1
    if at > 0 and text[at - 1] == "\\":
        at -= 1
    return at


# --- YAML block scalars -------------------------------------------------------------------

# A secret's name whose value is a block: "password: |", "private_key: >-", then the
# lines indented under it.
_BLOCK_HEAD = lazy(
    r"(?P<indent>[ \t]*)(?:-[ \t]+)?[\"']?(?P<name>[A-Za-z_][\w.-]{0,80})[\"']?[ \t]*:[ \t]*"
    r"[|>][-+0-9]{0,2}[ \t]*(?:#[^\r\n]*)?\r?\n",
    _F,
)


def yaml_blocks(text: str, low: bytes, add: Add) -> None:
    """The indented lines under a secret's name whose value is a YAML block scalar,
    when each is one unbroken value (a key's base64 or hex lines, a password): a block
    of prose ("description: |") is none."""
    for marker in (b": |", b": >", b":|", b":>"):
        at = low.find(marker)
        while at >= 0:
            line = text.rfind("\n", 0, at) + 1
            m = _BLOCK_HEAD.match(text, line)
            if m is not None and m.end() > at:
                _block(text, m, add)
            at = low.find(marker, at + len(marker))


def _block(text: str, head: re.Match[str], add: Add) -> None:
    kind = _name_kind(head.group("name"))
    if kind is None:
        return
    indent = len(head.group("indent").expandtabs())
    pos = head.end()
    first = last = -1
    values = []
    while pos < len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        line = text[pos:line_end].rstrip("\r")
        body = line.strip()
        if body:
            if len(line) - len(line.lstrip()) <= indent or " " in body:
                break  # the block ends with its indentation; a line of words is prose
            if first < 0:
                first = pos + len(line) - len(line.lstrip())
            last = pos + len(line.rstrip())
            values.append(body)
        pos = line_end + 1
    value = "".join(values)
    if first < 0 or _skip_value(value) or len(values) > 200:
        return
    password = "pass" in head.group("name").lower()
    if kind in ("key", "auth") and not _credential_like(value, quoted=True):
        return
    if password_shaped(value) or _credential_like(value, quoted=True):
        add((first, last, "password" if password else "secret_assignment"))


# --- base64 decoded by the command it is piped to -------------------------------------------

# echo <base64> | base64 -d, printf '%s' <base64> | base64 --decode (read back from
# "base64 -d" over its line), base64 -D <<< <base64> (read on from it)
_PIPED = lazy(
    r"\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)?(?:'%s'[ \t]+|\"%s\"[ \t]+)?"
    r"(?P<q>[\"']?)(?P<b64>[A-Za-z0-9+/_-]{8,4096}={0,2})(?P=q)[ \t]*\|[ \t]*\Z",
    _F,
)
_DECODE_FLAG = lazy(r"base64[ \t]+(?:-d|-D|--decode)\b(?P<here>[ \t]*<<<[ \t]*)?", _F)
_HERE = lazy(r"(?P<q>[\"']?)(?P<b64>[A-Za-z0-9+/_-]{8,4096}={0,2})(?P=q)", _F)
_PAIR = lazy(r"[\w.@+~-]{1,64}:[^\s]{3,200}\s?", _F)
# echo -n 'user:password' | base64: the pair is encoded, and what base64 prints is the pair
_ENCODE_FLAG = lazy(r"base64(?:[ \t]+(?:-w[ \t]?0|--wrap=0))?[ \t]*(?:\r?\n|\Z)", _F)
_ECHOED_PAIR = lazy(
    r"\b(?:echo|printf)[ \t]+(?P<n>-[neE]+[ \t]+)?(?:'%s'[ \t]+|\"%s\"[ \t]+)?"
    r"(?P<q>[\"']?)(?P<user>[\w.@+~-]{1,64}):(?P<pw>[^\s\"'|]{3,200})(?P=q)[ \t]*\|[ \t]*\Z",
    _F,
)
_PRINTED_RUN = lazy(r"[ \t]*(?P<b64>[A-Za-z0-9+/]{8,600}={0,2})[ \t]*\r?$", _F | re.MULTILINE)


def decoded_base64(text: str, low: bytes, add: Add, secret: Callable[[str], bool]) -> None:
    """Base64 piped to ``base64 -d`` (or given to it as a here-string) that decodes to
    ``user:password`` or to text that holds a secret: what it decodes to is in the text
    as surely as if it were written out."""
    at = low.find(b"base64")
    done = 0  # where the last one ended: each part of the text is read back once
    seen: dict[str, bool] = {}  # a run pasted again is judged once
    while at >= 0:
        flag = _DECODE_FLAG.match(text, at)
        if flag is not None:
            if flag.group("here"):
                m = _HERE.match(text, flag.end())
            else:
                line = text.rfind("\n", max(0, at - 4200), at) + 1
                m = _PIPED.search(text, max(line, done, at - 4200), at)
            done = flag.end()
            if m is not None:
                run = m.group("b64")
                if run not in seen:
                    seen[run] = _decoded_secret(run, secret)
                if seen[run]:
                    add((m.start("b64"), m.end("b64"), "secret_assignment"))
        elif (flag := _ENCODE_FLAG.match(text, at)) is not None:
            line = text.rfind("\n", max(0, at - 300), at) + 1
            m = _ECHOED_PAIR.search(text, max(line, done, at - 300), at)
            done = flag.end()
            if m is not None:
                _encoded_pair(text, m, flag.end(), add)
        at = low.find(b"base64", at + 6)


def _encoded_pair(text: str, m: re.Match[str], end: int, add: Add) -> None:
    """``echo -n 'user:X' | base64``: X, and the base64 printed on the next line."""
    import base64

    password = m.group("pw")
    if _skip_value(password) or not (password_shaped(password) or _credential_like(password, True)):
        return
    add((m.start("pw"), m.end("pw"), "password"))
    pair = f"{m.group('user')}:{password}"
    newline = "" if m.group("n") and "n" in m.group("n") else "\n"
    printed = base64.b64encode((pair + newline).encode()).decode()
    if (run := _PRINTED_RUN.match(text, end)) is not None and run.group("b64") == printed:
        add((run.start("b64"), run.end("b64"), "secret_assignment"))


def _decoded_secret(run: str, secret: Callable[[str], bool]) -> bool:
    decoded = decoded_printable(run)
    if decoded is None or not any(c.isdigit() for c in decoded):
        return False  # a credential has a digit; text without one is read no further
    return bool(_PAIR.fullmatch(decoded)) or secret(decoded)


# --- a Solana keypair -----------------------------------------------------------------------

# A keypair file (~/.config/solana/id.json) is a JSON array of the 64 bytes of the secret
# key and the public key: [12,34,...] (also inside Uint8Array.from([...]) in code).
_BYTE = r"[ \t\r\n]*(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])[ \t\r\n]*"
_KEYPAIR = lazy(r"\[(?:" + _BYTE + r",){63}" + _BYTE + r"\]", _F)


def keypairs(text: str, add: Add) -> None:
    """64 numbers of 0 to 255 in brackets that look random (most of them distinct, not in
    order): a Solana keypair's bytes, of which the first 32 are its secret key."""
    for m in _KEYPAIR.finditer(text):  # a scan for "[" in C, each start tried once
        numbers = [int(n) for n in m.group()[1:-1].split(",")]
        if len(set(numbers)) >= 40 and numbers != sorted(numbers):
            add((m.start(), m.end(), "private_key"))
