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
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    if argv is None:
        _in_utf8_mode()
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"] and not set(args[1:]) & {"-h", "--help"}:
        raise SystemExit(hook(args[1:]))
    if args[:1] == ["mcp"] and not set(args[1:]) & {"-h", "--help"}:
        raise SystemExit(mcp())
    for number, arg in enumerate(args, 1):
        if not _is_text(arg):
            # Python keeps bytes that are not UTF-8 as lone surrogates, which nothing can
            # store or print: say so before any command half runs.
            sys.stderr.write(f"ken: argument {number} is not UTF-8 text; nothing was done\n")
            raise SystemExit(1)
    from kenning.cli import cli

    cli.main(args=args, prog_name="ken")


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
        from kenning.hooks.client import main as hook_main

        return hook_main(argv)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent
        _log_broken(argv, exc)
        return 0


def _log_broken(argv: list[str], exc: BaseException) -> None:
    """Log a failure of the hook path itself, with the hook log's own writer when it can
    still be imported, else with nothing but `os`."""
    message = f"kenning is not whole here ({type(exc).__name__}: {exc}); reinstall it"
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
            fh.write(f"{stamp} {agent} {event} {' '.join(message.split())[:500]}\n")
    except Exception:  # noqa: BLE001, S110 - the log is best effort
        pass


if __name__ == "__main__":
    main()
