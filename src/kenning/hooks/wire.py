"""How the hook client and the hook server talk: a few netstrings, no JSON.

The client must start faster than `python -c "import sqlite3, json"`, so it imports
nothing it can do without: a request is three netstrings (`<length>:<bytes>`): the
arguments and the environment, each NUL-separated, then stdin as it came. The answer
is one byte, `O` followed by what to print, or `S` when the server steps aside.
"""

from __future__ import annotations

OK = b"O"
STEP_ASIDE = b"S"
STOP = "--stop-server"


def _text(value: str) -> bytes:
    return value.encode("utf-8", "surrogateescape")


def _netstring(data: bytes) -> bytes:
    return str(len(data)).encode() + b":" + data


def pack_request(argv: list[str], env: dict[str, str], stdin: bytes) -> bytes:
    args = b"\0".join(_text(a) for a in argv)
    pairs = b"\0".join(_text(f"{k}={v}") for k, v in env.items())
    return _netstring(args) + _netstring(pairs) + _netstring(stdin)


def _split(blob: bytes) -> list[str]:
    return [part.decode("utf-8", "surrogateescape") for part in blob.split(b"\0")] if blob else []


def unpack_request(data: bytes) -> tuple[list[str], dict[str, str], bytes]:
    """The request's parts; raises ValueError when it is not a whole request."""
    fields: list[bytes] = []
    at = 0
    for _ in range(3):
        colon = data.index(b":", at)
        size = int(data[at:colon])
        field = data[colon + 1 : colon + 1 + size]
        if len(field) != size:
            raise ValueError("a cut-off hook request")
        fields.append(field)
        at = colon + 1 + size
    if at != len(data):
        raise ValueError("not a hook request")
    env = dict(pair.partition("=")[::2] for pair in _split(fields[1]) if "=" in pair)
    return _split(fields[0]), env, fields[2]
