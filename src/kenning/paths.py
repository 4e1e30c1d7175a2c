"""Where kenning keeps its files, as plain strings (no pathlib: the hook client reads
these on every prompt, before anything heavier is imported, not even collections.abc).
`config` wraps them.

Each function reads the environment in force (`environ()`), or `env` when given: `ken
doctor` works out which store an agent's MCP server will open from the variables it is
given. The environment in force is this process's, except while the hook server handles
a hook (`serving`): then it is the one that hook's client sent, for that hook alone and
in that thread alone (a context variable; the process environment is never touched).
"""

from __future__ import annotations

import os
import stat
from contextvars import ContextVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import TypeVar

    T = TypeVar("T")

_SERVED: ContextVar[Mapping[str, str] | None] = ContextVar("kenning_served_env", default=None)


def environ() -> Mapping[str, str]:
    """The environment in force: the served hook's, else this process's."""
    served = _SERVED.get()
    return os.environ if served is None else served


def served_env() -> dict[str, str] | None:
    """The served hook's environment, for a program a hook runs (git), or None outside
    the hook server, where programs inherit this process's own."""
    served = _SERVED.get()
    return None if served is None else dict(served)


class serving:  # noqa: N801 - used as `with serving(env):`, like a function
    """`with serving(env):` the environment in force is `env` (the hook server's
    request); this module imports no contextlib, for the hook client's sake."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.token: object = None

    def __enter__(self) -> Mapping[str, str]:
        self.token = _SERVED.set(self.env)
        return self.env

    def __exit__(self, *exc: object) -> None:
        _SERVED.reset(self.token)  # type: ignore[arg-type]


def home(env: Mapping[str, str] | None = None) -> str:
    return (environ() if env is None else env).get("HOME") or os.path.expanduser("~")


def is_full_path(folder: str) -> bool:
    """Whether a folder a person wrote in config names one place: a full path, or one
    from a home folder (`~/src`, `~me/src`). A relative one names none: relative to
    where a command runs, `.` would hold every folder."""
    return folder.startswith(("/", "~"))


def xdg(var: str, fallback: str, env: Mapping[str, str] | None = None) -> str:
    value = (environ() if env is None else env).get(var)
    return value if value and os.path.isabs(value) else os.path.join(home(env), fallback)


def data_dir(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(xdg("XDG_DATA_HOME", ".local/share", env), "kenning")


def config_dir() -> str:
    return os.path.join(xdg("XDG_CONFIG_HOME", ".config"), "kenning")


def state_dir() -> str:
    return os.path.join(xdg("XDG_STATE_HOME", ".local/state"), "kenning")


def db_path(env: Mapping[str, str] | None = None) -> str:
    """The store file: $KEN_DB, else $XDG_DATA_HOME/kenning/memory.db.

    A relative KEN_DB is refused (InvalidInput), not read from the folder a process runs
    in: hooks run in every repo an agent works in, so `KEN_DB=mem.db` would quietly make
    a store of its own in each one, and an MCP registration would bake in a name that
    means another file wherever the agent starts."""
    override = (environ() if env is None else env).get("KEN_DB")
    if override:
        if override == "~" or override.startswith("~/"):
            return os.path.join(home(env), override[2:])
        path = os.path.expanduser(override)
        if not os.path.isabs(path):
            from kenning.errors import InvalidInput  # only when refusing

            # (A served hook's folder is not this process's: no example there.)
            here = "" if _SERVED.get() else f", e.g. KEN_DB={os.path.abspath(path)}"
            raise InvalidInput(
                f"KEN_DB={override} is a relative path, which names another store in each "
                f"folder kenning runs in (hooks run in every repo): set KEN_DB to a full path{here}"
            )
        return os.path.normpath(path)
    return os.path.join(data_dir(env), "memory.db")


KEPT_FILES = 64  # parsed files a process keeps (`read_parsed`), then it starts again
KEPT_BYTES = 2 * 1024 * 1024  # and the most of their text it keeps parsed, all told
# The most of a config file (git's, ssh's, an include) kenning reads: git sets no limit,
# but a real one is a few KiB, and one tracking 10,000 branches stays below this.
MAX_CONFIG_BYTES = 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)

MAX_REFUSED = 64  # refused files a process keeps to tell
_refused: dict[str, str] = {}  # files not read, by path: why (`refusals`)
_told: set[str] = set()  # the ones `refusals` has given out, once each per process


class NotRegular(Exception):
    """`read_regular` opened no regular file (a FIFO, a device, a folder): its mode."""

    def __init__(self, mode: int) -> None:
        super().__init__(mode)
        self.mode = mode


class TooLarge(Exception):
    """`read_regular` found more bytes than its cap."""


def read_regular(path: str, cap: int) -> bytes:
    """The bytes of the regular file at `path`, at most `cap`: the one reader of files
    someone else chose (git's, ssh's, an agent's instruction file). Raises OSError (or
    ValueError, for a path holding a NUL) when it cannot be opened or read, NotRegular
    for a FIFO, a device or a folder, and TooLarge for more than `cap` bytes.

    A FIFO would block a read for ever, and a sparse 1 GB file would fill memory. So the
    file is opened without blocking (a FIFO opens at once) and judged by what was opened
    (fstat), not by a look before (another file could be put in its place between the
    two); and no more than `cap` bytes and one more are read."""
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(st.st_mode)
        if st.st_size > cap:
            raise TooLarge
        chunks: list[bytes] = []
        left = cap + 1  # one byte more tells a file that grew past the cap since
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:  # it grew past the cap since
        raise TooLarge
    return b"".join(chunks)


def read_file(path: str, cap: int = MAX_CONFIG_BYTES) -> bytes | None:
    """The bytes of the regular file at `path` (`read_regular`); None when it cannot be
    read, or is no regular file (a FIFO, a device, a folder), or holds more than `cap`
    bytes.

    Files that git and ssh name are read on every prompt, and a repo's own files are the
    repo's to choose. A file refused as a FIFO, a device or too large is told once
    (`refusals`): kenning goes on as if it were missing."""
    try:
        return read_regular(path, cap)
    except (OSError, ValueError):
        return None
    except NotRegular as exc:
        if not stat.S_ISDIR(exc.mode):  # a folder is what a missing file is
            refuse(path, "it is not a regular file (a FIFO or a device)")
        return None
    except TooLarge:
        refuse(path, f"it holds more than {cap // 1024} KiB, which no such file does")
        return None


def refuse(path: str, why: str) -> None:
    """Note the file at `path` as not read, and why, for `refusals` to tell."""
    if len(_refused) < MAX_REFUSED:
        _refused.setdefault(path, why)


def refusals() -> list[str]:
    """The files refused (`read_file`) not told yet, each once per process: `PATH was not
    read: WHY`, for the hook log and `ken where` to say."""
    out = []
    for path, why in list(_refused.items()):
        if path not in _told:
            _told.add(path)
            out.append(refusal(path, why))
    return out


def refused() -> dict[str, str]:
    """Every file refused (`read_file`) in this process so far, by path: why. For
    `ken doctor`, which names each as a check of its own (`refusal` says it)."""
    return dict(_refused)


def refusal(path: str, why: str) -> str:
    """One line saying the file at `path` was not read, and why."""
    return f"{as_text(path)} was not read: {why}; kenning took it as missing"


def read_parsed(
    path: str,
    parse: Callable[[str], T],
    kept: dict[str, tuple[tuple[int, int, int], T]],
    empty: T,
    cap: int = MAX_CONFIG_BYTES,
) -> T:
    """`parse` of the text of the file at `path`, kept in `kept` until the file changes
    (its time, size or inode): a hook server reads git's and ssh's config files once,
    not on every prompt. `empty` when the file cannot be read, or is refused
    (`read_file`: no regular file, or more than `cap` bytes)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return empty
    sig = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = kept.get(path)
    if cached is not None and cached[0] == sig:
        return cached[1]
    data = read_file(path, cap)
    if data is None:
        return empty
    parsed = parse(data.decode("utf-8", errors="replace"))
    if len(kept) >= KEPT_FILES or sum(k[0][1] for k in kept.values()) + len(data) > KEPT_BYTES:
        kept.clear()
    kept[path] = (sig, parsed)
    return parsed


# --- a path's name as text ---------------------------------------------------------------
#
# A folder's name is bytes. Python hands over bytes that are not UTF-8 (a Latin-1
# `lat\xe9in`) as lone surrogates, which SQLite, JSON and a terminal all refuse. Kenning
# keys and shows such a path as text with each of those bytes written `\xNN`
# (`as_text`), and turns that text back into the name the OS knows before it looks at
# the folder (`os_path`). A name that is UTF-8 is its own text, unchanged. The one name
# this mistakes is one that spells `\xNN` (NN from 80 to ff) with a real backslash.


def as_text(path: str) -> str:
    """`path`, a name as the OS gave it, as text that can be stored, printed and sent:
    each byte that is not UTF-8 written `\\xNN`. Text already is returned as it is."""
    if path.isascii():
        return path
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        pass
    try:  # bytes kept as surrogates (surrogateescape), or a C locale's ASCII decoding
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte makes (a JSON `\ud800`)
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def os_path(text: str) -> str:
    """The name the OS knows for `text`, a path as `as_text` writes it (or as the OS
    gave it: that is returned as it is)."""
    if "\\x" in text:
        parts = text.split("\\x")
        out = [parts[0]]
        for part in parts[1:]:
            byte = part[:2]
            if len(byte) == 2 and byte[0] in "89abcdef" and byte[1] in "0123456789abcdef":
                out.append(chr(0xDC00 + int(byte, 16)) + part[2:])
            else:
                out.append("\\x" + part)
        text = "".join(out)
    if text.isascii():
        return text
    try:
        os.fsencode(text)
    except UnicodeEncodeError:  # text the OS's encoding cannot hold (a C locale's ASCII)
        return os.fsdecode(text.encode("utf-8", "surrogateescape"))
    return text


def outside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> str | None:
    """Where `path` really is, when a link (of `path` or of a folder on the way) takes it
    out of `folder`; None when it stays inside. A handoff is written through a project's
    log.md linked inside its folder (a person's own layout), never through one linked out
    of it into a file elsewhere (a `~/.bashrc`); `agents.saved.read_file` makes the same
    check for `ken collect` (agent modules import only the standard library)."""
    real, within = os.path.realpath(path), os.path.realpath(folder)
    return None if os.path.commonpath((real, within)) == within else real
