"""The `ken` console entry point.

`ken hook …` runs on every prompt of every agent, so it is dispatched here before
click or anything heavy is imported. A hook never breaks an agent, not even when
kenning itself is half installed (an upgrade in progress, a module missing or cut
short): whatever the hook path fails with, down to importing it, becomes a line in the
hook log and a silent exit 0.

Under a C locale Python reads arguments, paths and stdin as UTF-8 (its UTF-8 mode),
unless told not to (`PYTHONUTF8=0`): then it reads them as ASCII, and `Ünïcode` typed
or in a folder's name is bytes it cannot read. Kenning's text is UTF-8 whatever the
locale, so `ken` then runs itself again in UTF-8 mode (`_in_utf8_mode`), before
anything else, hooks included.

What the shell gave as stdin, stdout and stderr is settled here too, once for every
command. One that is closed (`<&-`) is opened on /dev/null before anything else can
take its number (a file opened later would be written by whatever writes to fd 1):
stdin then reads as empty, as `</dev/null` does; stdout is opened read-only, so that a
write fails as it did closed, and is reported. stdout is wrapped so that a write that
fails is known for one (`OutputLost`): a full disk or a closed stdout becomes one
`ken:` line and exit 1, and a reader that stops early (`ken export | head -1`) exits
141, as a shell shows a program SIGPIPE stopped, with nothing said.
"""

from __future__ import annotations

import errno
import io
import sys

# The exit a shell shows for a program that SIGPIPE stopped (128 + 13): `cat`'s and
# `git log`'s when the reader of their output stops early.
READER_GONE = 141


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        _in_utf8_mode()
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"] and not set(args[1:]) & {"-h", "--help"}:
        raise SystemExit(hook(args[1:]))
    if args[:1] == ["mcp"] and not set(args[1:]) & {"-h", "--help"}:
        _open_closed_streams(stdout_writes=True)
        raise SystemExit(mcp())
    _open_closed_streams(stdout_writes=False)
    for number, arg in enumerate(args, 1):
        if not _is_text(arg):
            # Python keeps bytes that are not UTF-8 as lone surrogates, which nothing can
            # store or print: say so before any command half runs.
            sys.stderr.write(f"ken: argument {number} is not UTF-8 text; nothing was done\n")
            raise SystemExit(1)
    raise SystemExit(run_cli(args))


def run_cli(args: list[str]) -> int:
    """The click commands, with stdout such that a write it loses is one line, or for a
    reader gone, none."""
    sys.stdout = _guarded(sys.stdout)
    from kenning.cli import cli

    try:
        try:
            cli.main(args=args, prog_name="ken")
        finally:
            sys.stdout.flush()  # what is still buffered, while a failure can be reported
    except OutputLost as exc:
        if "--debug" in args:
            raise
        if exc.error.errno == errno.EPIPE:
            return READER_GONE
        if exc.error.errno == errno.EBADF:
            say = "stdout is closed (or not open for writing): what was to be printed is lost"
        else:
            say = f"cannot write to stdout ({exc.error.strerror}): the output is cut short"
        try:
            sys.stderr.write(f"ken: {say}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # stderr is gone too: the exit code is all that is left to say it
        return 1


class OutputLost(Exception):  # noqa: N818 - what it is, not an error of the input
    """A write to stdout failed: the OSError it failed with, kept apart from the OSErrors
    of the files a command reads and writes."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Stdout(io.FileIO):
    """fd 1, raising `OutputLost` for the first write that fails and dropping every
    write after it (Python's exit flushes stdout once more; the failure is told once)."""

    lost: OSError | None = None

    def write(self, data: object) -> int:
        if self.lost is not None:
            return memoryview(data).nbytes  # type: ignore[arg-type]
        try:
            return super().write(data)  # type: ignore[arg-type]
        except BlockingIOError:
            raise
        except OSError as exc:
            self.lost = exc
            raise OutputLost(exc) from exc


def _guarded(stream: object) -> io.TextIOWrapper:
    """A text stdout over `_Stdout`, as Python made `stream` (its encoding, its errors,
    line-buffered on a terminal), or as it would have made it had fd 1 been open."""
    raw = _Stdout(1, "w", closefd=False)
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=getattr(stream, "encoding", None) or "utf-8",
        errors=getattr(stream, "errors", None) or "strict",
        line_buffering=bool(getattr(stream, "line_buffering", raw.isatty())),
        write_through=bool(getattr(stream, "write_through", False)),
    )


def _open_closed_streams(*, stdout_writes: bool) -> frozenset[int]:
    """Open each of fds 0, 1 and 2 that is closed on /dev/null, lowest first (so each
    takes its own number), and give Python a stream for it; the ones that were closed.
    stdout is opened for writing when `stdout_writes` (what is written is dropped), else
    read-only (every write fails, as it did)."""
    import os

    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in closed:
        flags = os.O_WRONLY if fd == 2 or (fd == 1 and stdout_writes) else os.O_RDONLY
        opened = os.open(os.devnull, flags)
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
    if 0 in closed:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - for the run
    if 1 in closed:
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    if 2 in closed:
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    return frozenset(closed)


def mcp() -> int:
    """`ken mcp`: the MCP server, or one line saying why it cannot start."""
    try:
        from kenning.mcp_server import main as mcp_main
    except ModuleNotFoundError as exc:
        # Whatever is missing that is not kenning's own is the SDK or what it needs
        # (mcp, mcp_types, pydantic, anyio, ...): a plain `pip install kenning` has none.
        missing = (exc.name or "kenning").split(".")[0]
        if missing == "kenning":
            raise
        from kenning.integrate import mcp_install_hint

        sys.stderr.write(
            f"ken: `ken mcp` needs the MCP SDK, which is not installed for this kenning "
            f"(no module {missing!r}): {mcp_install_hint()}\n"
        )
        return 1
    from kenning.errors import KenningError

    try:
        return mcp_main()
    except KenningError as exc:  # a config.toml that does not parse, a store it cannot open
        sys.stderr.write(f"ken: `ken mcp` cannot start: {exc}\n")
        return 1


def _in_utf8_mode() -> None:
    """Run this `ken` again with Python's UTF-8 mode on, when Python reads the OS's bytes
    as ASCII (see the docstring); else return. Nothing has been read or written yet."""
    if sys.flags.utf8_mode or sys.getfilesystemencoding() != "ascii":
        return
    import os

    argv = getattr(sys, "orig_argv", None)
    if os.name != "posix" or not sys.executable or not argv:
        return
    try:
        os.execv(sys.executable, [sys.executable, "-X", "utf8", *argv[1:]])
    except OSError:
        return  # as it is: an argument that is not ASCII is refused below


def _is_text(arg: str) -> bool:
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def hook(argv: list[str]) -> int:
    """`ken hook …`: the hook client, whatever state kenning's files are in."""
    try:
        closed = _open_closed_streams(stdout_writes=True)
        from kenning.hooks import wire

        if 0 in closed and argv[:1] != [wire.STOP]:
            # Nothing to read the event from: no fault of kenning's install.
            _log_hook(argv, "stdin is closed: the agent sent no payload; nothing was done")
            return 0
        from kenning.hooks.client import main as hook_main

        return hook_main(argv)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent
        _log_broken(argv, exc)
        return 0


def _log_broken(argv: list[str], exc: BaseException) -> None:
    """Log a failure of the hook path itself, with the hook log's own writer when it can
    still be imported, else with nothing but `os`."""
    _log_hook(argv, f"kenning is not whole here ({type(exc).__name__}: {exc}); reinstall it")


def _log_hook(argv: list[str], message: str) -> None:
    """One line in the hook log, written as `_log_broken` says."""
    event = argv[0] if argv else "-"
    # `--agent NAME`, as `ken integrate` installs it (read here with nothing of kenning's)
    agent = next((argv[n + 1].lower() for n, a in enumerate(argv[:-1]) if a == "--agent"), "-")
    try:
        import kenning.redact  # noqa: F401 - `log` imports it when it writes, silently
        from kenning.hooklog import log

        log(agent, event, message)
        return
    except Exception:  # noqa: BLE001, S110 - the log below needs nothing of kenning's
        pass
    import os
    import time

    try:
        home = os.environ.get("HOME") or os.path.expanduser("~")
        state = os.environ.get("XDG_STATE_HOME") or ""
        folder = os.path.join(
            state if os.path.isabs(state) else os.path.join(home, ".local/state"), "kenning"
        )
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(folder, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        # Names as the hook log's own writer shows them, but with no redactor to ask: a
        # short run of letters (`claude`, `SessionStart`), else `?`.
        agent, event = (
            n if n.isascii() and n.isalpha() and len(n) <= 20 else "?" for n in (agent, event)
        )
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            # Control characters escaped, as the hook log's own writer shows them.
            line = "".join(
                c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                for c in " ".join(message.split())
            )
            fh.write(f"{stamp} {agent} {event} {line[:500]}\n")
    except Exception:  # noqa: BLE001, S110 - the log is best effort
        pass


if __name__ == "__main__":
    main()
