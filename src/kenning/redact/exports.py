"""Password managers' exports: the password and one-time-password columns of a CSV file
whose header names them, and the protected values of a KeePass XML file.

Every password manager and browser exports a CSV file with a header row (Bitwarden's
``login_password,login_totp``, 1Password's, Chrome's, Firefox's, LastPass's, Dashlane's
``password,...,otpSecret``, KeePassXC's ``"Password"``, Apple Passwords'), and a person
pastes its first rows to ask about an import.  The values under a column whose name ends
in a password's or a one-time password's word are secrets, whatever their shape (a
passphrase of words, ``Bruno18!!``): the header says so.  A column whose name only holds
the word (Firefox's ``timePasswordChanged``, a ``password_hint``) does not count.  A header
is a line of names, a few words each, that ends the line; a call's arguments
(``f(None, user, passwd)``), a list of names that goes on to the next line (``"text",
"password", "label",``) and prose between commas ("if you run one pass, it ...") are
none, and a line of more cells than the header is none of its rows.

KeePass's XML export holds each field as ``<Key>Password</Key><Value>...</Value>``.

A PostgreSQL dump's ``COPY table (id, user_id, token) FROM stdin;`` is a header too: the
rows after it, tab-separated up to ``\\.``, hold under a column named as a secret
(``token``, ``password_digest`` is not) values that are secrets.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kenning.redact.lazy import lazy
from kenning.redact.named import (
    _WORDS,
    _name_kind,
    _named_secret,
    _secret_word,
    _skip_value,
)

Add = Callable[[tuple[int, int, str]], None]

# The last word of a column's name that makes its values secrets.
_COLUMN_WORDS = frozenset(
    ("password", "passwd", "pass", "pwd", "passphrase", "secret", "totp", "otp", "pin")
)
# A header's cell: a short name, quoted or not.
_HEADER_CELL = lazy(r"[A-Za-z][A-Za-z0-9 _.()/-]{0,39}", re.ASCII)
_HEADER_WORDS = (b"pass", b"pwd", b"totp", b"otp", b"secret")
_NAME_WORDS = 3  # a column's name is a few words at most ("Last Modified")
_ROWS_MAX = 2000  # rows read under one header
_LINE_MAX = 2000  # a header is a short line: its start is looked for this far back


def csv_columns(text: str, low: bytes, add: Add) -> None:
    """The values under a password (or TOTP) column of a CSV table whose header names it."""
    if b"," not in low:
        return
    heads: set[int] = set()
    for word in _HEADER_WORDS:
        at = low.find(word)
        while at >= 0:
            heads.add(text.rfind("\n", max(0, at - _LINE_MAX), at) + 1)
            line_end = text.find("\n", at)
            at = low.find(word, line_end + 1) if line_end >= 0 else -1
    done = -1
    for start in sorted(heads):
        if start < done:
            continue  # a row of a table already read
        done = _table(text, start, add)


def _table(text: str, start: int, add: Add) -> int:
    """Read the table whose header starts at ``start``; where its rows end."""
    end = _line_end(text, start)
    header = _cells(text, start, end)
    if len(header) < 3:
        return end
    names = [text[s:e].strip().strip("\"'").strip() for s, e in header]
    if not names[-1]:
        return end  # a list that goes on to the next line ("text", "password", ...,)
    if not all(not name or _column_name(name) for name in names):
        return end  # not names: code, or clauses of prose between commas
    columns = [i for i, name in enumerate(names) if _secret_column(name)]
    if not columns:
        return end
    pos = end + 1
    for _ in range(_ROWS_MAX):
        if pos >= len(text):
            break
        row_end = _line_end(text, pos)
        if "," not in text[pos:row_end]:
            break  # a blank line or the prose after the table
        cells = _cells(text, pos, row_end)
        if len(cells) > len(header):
            pos = row_end + 1
            continue  # a row holds its header's cells (one cut short still counts)
        for i in columns:
            if i < len(cells):
                s, e = cells[i]
                while s < e and text[s] in " \t":
                    s += 1
                while e > s and text[e - 1] in " \t\r":
                    e -= 1
                if e - s >= 2 and text[s] == '"' == text[e - 1]:
                    s, e = s + 1, e - 1
                value = text[s:e]
                if value and not _skip_value(value.replace('""', '"')):
                    add((s, e, "password"))
        pos = row_end + 1
    return pos


def _column_name(name: str) -> bool:
    """A column's name: a few words, whose brackets close what they open ("Email (work)",
    not a call's ``set_login(None``)."""
    if not _HEADER_CELL.fullmatch(name) or len(name.split()) > _NAME_WORDS:
        return False
    depth = 0
    for c in name:
        depth += (c == "(") - (c == ")")
        if depth < 0:
            return False
    return depth == 0


def _secret_column(name: str) -> bool:
    words = [w.lower() for w in _WORDS.findall(name)]
    return bool(words) and words[-1] in _COLUMN_WORDS


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The cells of one CSV line, as (start, end); a quoted cell may hold commas (and
    doubled quotes), but not a line break."""
    cells = []
    pos = start
    while pos <= end:
        if pos < end and text[pos] == '"':
            close = pos + 1
            while True:
                close = text.find('"', close, end)
                if close < 0:
                    close = end
                    break
                if text.startswith('""', close):
                    close += 2
                    continue
                close += 1
                break
            comma = text.find(",", close, end)
        else:
            comma = text.find(",", pos, end)
        comma = end if comma < 0 else comma
        cells.append((pos, comma))
        pos = comma + 1
    return cells


# KeePass 2 XML: <String><Key>Password</Key><Value ProtectInMemory="True">...</Value>
_KEEPASS = lazy(
    r"<Key>(?P<n>[^<>\r\n]{1,60})</Key>\s{0,40}<Value(?:[ \t][^<>]{0,80})?>"
    r"(?P<v>[^<>\r\n]{1,1000})</Value>",
    re.ASCII,
)


def keepass(text: str, add: Add) -> None:
    """The values of a KeePass XML export's fields whose key names a secret."""
    if "<Key>" not in text:
        return
    for m in _KEEPASS.finditer(text):
        if _named_secret(m.group("n"), m.group("v"), quoted=True):
            add((m.start("v"), m.end("v"), "password"))


# A property list's entry: <key>PurchasesAPIKey</key> <string>...</string>
_PLIST = lazy(
    r"<key>(?P<n>[^<>\r\n]{1,80})</key>\s{0,40}<string>(?P<v>[^<>\r\n]{1,1000})</string>",
    re.ASCII,
)


def plist(text: str, add: Add) -> None:
    """The values of a property list's (Info.plist's, a .mobileconfig's) entries whose key
    names a secret: the key is the value's name, as a KeePass field's is."""
    if "<key>" not in text:
        return
    for m in _PLIST.finditer(text):
        name, value = m.group("n").strip(), m.group("v").strip()
        if value and _named_secret(name, value, quoted=True):
            start = m.start("v") + m.group("v").index(value)
            add((start, start + len(value), _secret_word(name)))


# pg_dump's data block: COPY public.api_tokens (id, user_id, token) FROM stdin;
_COPY = lazy(
    r"^COPY[ \t]+[\w.\"]{1,200}[ \t]*\((?P<cols>[^()\r\n]{1,2000})\)[ \t]+FROM[ \t]+stdin;",
    re.ASCII | re.MULTILINE,
)


def copy_rows(text: str, add: Add) -> None:
    """The values under a secret's column in the rows of a ``COPY ... FROM stdin`` block."""
    if "COPY " not in text:
        return
    pos = 0
    # each line is read once: the next block is looked for after the rows of the last
    while (m := _COPY.search(text, pos)) is not None:
        names = [name.strip().strip('"') for name in m.group("cols").split(",")]
        pos = _line_end(text, m.end()) + 1
        if not any(_name_kind(name) for name in names):
            continue
        for _ in range(_ROWS_MAX):
            if pos >= len(text) or text.startswith(("\\.", "COPY "), pos):
                break  # the block's end
            end = _line_end(text, pos)
            cell = pos
            for name in names:
                stop = text.find("\t", cell, end)
                stop = end if stop < 0 else stop
                value = text[cell:stop].rstrip("\r")
                if value != "\\N" and _named_secret(name, value, quoted=True):
                    add((cell, cell + len(value), _secret_word(name)))
                if stop >= end:
                    break
                cell = stop + 1
            pos = end + 1
