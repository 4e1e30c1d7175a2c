"""A file written where a person names it (`ken export -o FILE`, `ken curate --plan FILE`).

It is written beside its path under a name no one can guess, private to this user (it may
hold every memory), and renamed over the path only once whole, so a reader never sees
half of it. A path that is there and is not a regular file (a device such as /dev/full, a
pipe, a symbolic link, a folder) is refused rather than replaced: renaming over it would
swap a device for a plain file, or write where a link points; and so is the store itself.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from kenning import paths
from kenning.errors import InvalidInput


def _is_the_store(found: os.stat_result) -> bool:
    """Whether the file `found` describes is the store (or its -wal or -shm), which
    writing over would destroy."""
    store = paths.db_path()
    for name in (store, f"{store}-wal", f"{store}-shm"):
        try:
            there = os.stat(name)
        except OSError:
            continue
        if (there.st_dev, there.st_ino) == (found.st_dev, found.st_ino):
            return True
    return False


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[TextIO]:
    """A text file to write, mode 0600, that takes `path`'s place once the block ends
    without an error (and is removed when it raises). Raises InvalidInput for a path that
    is not, or cannot be, a regular file."""
    target = Path(path)
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise InvalidInput(f"cannot write {target}: {exc.strerror or exc}") from None
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise InvalidInput(
            f"{target} is not a regular file (a device, a pipe, a link or a folder): "
            "name a file to write, not that"
        )
    if found is not None and _is_the_store(found):
        raise InvalidInput(f"{target} is the memory store itself: name another file")
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise InvalidInput(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InvalidInput(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
