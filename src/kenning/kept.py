"""Files kenning keeps between processes in its state folder, so that a hook running in
its own process reads what an earlier one worked out instead of working it out again:
the compiled methods of the dataclasses (`kenning.hooks.classcode`) and recall's word
lists, stemmed (`kenning.recall.lexicon`).

Each is one `marshal` file, read in a few milliseconds where JSON took several times as
long. Marshal trusts what it reads, so a file is read only when it is this user's own and
nobody else may write it (and never through a symbolic link); anything else, or a file
that does not load, reads as nothing, and the caller works it out as if it were missing.
A file is written whole under another name, then moved into place.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any


def read(path: str) -> object | None:
    """What the file at `path` holds, or None (missing, not this user's alone, broken)."""
    import marshal

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        found = os.fstat(fh.fileno())
        if found.st_uid != os.getuid() or found.st_mode & 0o022:
            return None
        try:
            data: object = marshal.loads(fh.read())
        except (EOFError, ValueError, TypeError, OSError):
            return None
    return data


def write(path: str, data: Any) -> bool:
    """Write `data` to `path` (0600, its folder 0700), whole or not at all; False when it
    could not be written."""
    import marshal

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            marshal.dump(data, fh)
        os.replace(tmp, path)
        return True
    except (OSError, ValueError):
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
