"""The hook wrapper: `ken hook EVENT [--agent NAME]`, stdin JSON in, context out.

A memory tool never breaks an agent. Whatever goes wrong (bad JSON, a locked or
missing store, a bug), this logs one line to `$XDG_STATE_HOME/kenning/log`, prints
nothing and exits 0. Only the standard library and the kenning modules the handlers
need are imported: no click, rich, pydantic or mcp.

An agent kills a hook that outlives its timeout (`ken integrate` installs 3 to 15
seconds), so a hook waits for a locked store only until its budget (BUSY_BUDGET, a
fraction of that timeout) has passed since it started. What it could not write then
goes to the spool (kenning.spool), which this and every later hook or `ken` command
replays first.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from kenning import config as config_mod
from kenning.errors import KenningError
from kenning.hooklog import log
from kenning.hooks.answer import write_answer
from kenning.hooks.wire import MAX_STDIN_BYTES, hook_args

# Seconds a hook may wait for the store's write lock, counted from its start: well under
# the timeout `ken integrate` installs for the event (SessionEnd 3 s, prompts 10 s,
# SessionStart 15 s), leaving room for Python, git and the answer.
BUSY_BUDGET = {
    "session_start": 3.0,
    "prompt": 2.0,
    "tool": 1.0,
    "stop": 2.0,
    "pre_compact": 2.0,
    "session_end": 1.0,
}
REPLAY_WAIT = 0.25  # seconds the replay of earlier writes waits before they stay spooled


class OpenStores:
    """Stores kept open between hook calls (by the hook server), one per file.

    A store is reopened when its file was replaced or removed since it was opened.
    """

    def __init__(self) -> None:
        self.open: dict[str, tuple[int, Any]] = {}

    def get(self, env: Mapping[str, str] | None = None) -> Any:
        from kenning import paths
        from kenning.store import open_store

        path = paths.db_path(env)
        try:
            inode = os.stat(path).st_ino
        except OSError:
            inode = -1
        cached = self.open.get(path)
        if cached and cached[0] == inode and inode != -1:
            return cached[1]
        if cached:
            cached[1].close()
        store = open_store(path)
        self.open[path] = (os.stat(path).st_ino, store)
        return store

    def close(self) -> None:
        for _, store in self.open.values():
            store.close()
        self.open.clear()


def run(
    argv: list[str],
    stdin: bytes,
    stores: OpenStores | None = None,
    later: list[Callable[[], None]] | None = None,
    caller: int | None = None,
    starts: list[tuple[list[str], str | None]] | None = None,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
    started: float | None = None,
) -> str:
    """Handle one hook call; returns what to print. Raises on any problem.

    `caller` is the hook's own process when another process (the hook server) handles
    it: the agent process is looked for above it, and the `ken` commands the hook would
    start (a summary) go to `starts`, for the hook's client to start. None: this process
    is the hook's, and starts them itself. `env` is the hook's environment when it is
    not this process's (the hook server's request): everything the hook reads, down to
    the paths of the store, config, log and spool, comes from it. `deadline` (a
    time.monotonic()) ends the store waits sooner than the event's budget: when the hook
    server's client gives up on its answer. `started`: when the hook began, when that
    was before this call (a client that waited for a server first): the budget counts
    from then."""
    if env is not None:
        from kenning.paths import serving

        with serving(env):
            return run(
                argv, stdin, stores, later, caller, starts, deadline=deadline, started=started
            )
    from dataclasses import replace

    from kenning import agents, deliver, paths, sessions
    from kenning.agents.agent import BadPayload
    from kenning.hooks import handlers
    from kenning.store import open_store, report_migrations_to

    started = time.monotonic() if started is None else started
    event_name, name, _ = hook_args(argv)
    if not stdin.strip():
        raise BadPayload("empty stdin")
    if len(stdin) > MAX_STDIN_BYTES:
        raise BadPayload(f"payload of {len(stdin):,} bytes is too large")
    try:
        payload = json.loads(stdin.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadPayload("stdin is not UTF-8") from None
    except ValueError as exc:
        raise BadPayload(f"stdin is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise BadPayload(f"expected a JSON object, got {type(payload).__name__}")
    agent = agents.from_payload(payload) if name is None else agents.AGENTS.get(name)
    if agent is None:
        raise BadPayload(f"unknown agent '{name}'")
    event = agent.parse(payload, event_name, paths.environ())
    chain = sessions.process_chain() if caller is None else sessions.process_chain(caller)[1:]
    event = replace(event, chain=tuple(chain))
    config = config_mod.Config()
    # A setting out of range (memory.enabled among them) would stop the hook halfway (a
    # session recorded, its prompt not): it stops before anything is written, with the
    # setting's line in the log, and tells kenning's own commands that nothing was done,
    # as when memory is off.
    try:
        config.check()
    except KenningError as exc:
        log(agent.name, event.name, f"{type(exc).__name__}: {exc}")
        return agent.render(event, handlers.off_notice(event, f"kenning: {exc}"), "")
    if not config.memory_enabled:
        # Silent, but for kenning's own commands: the agent would take a bare
        # `/remember ...` as done.
        off = f"kenning: memory is turned off ({deliver.why_off(config)})"
        return agent.render(event, handlers.off_notice(event, off), "")
    budget = BUSY_BUDGET.get(event.event.value, 2.0)
    # A hook says nothing to its agent: that it migrated the store goes to the hook log.
    report_migrations_to(lambda line: log(agent.name, event.name, line))
    if stores is not None:
        store = stores.get(env)
        _bound(store, started + budget if deadline is None else min(started + budget, deadline))
        if starts is not None:
            handlers.spawn = lambda args, cwd: starts.append((args, cwd))
        try:
            text = handlers.handle(store, event, config, later)
            return agent.render(event, text, handlers.waiting_notice(store, event))
        finally:
            handlers.spawn = handlers.start_detached
    store = open_store(busy_seconds=budget)
    try:
        _bound(store, started + budget)
        text = handlers.handle(store, event, config)
        notice = handlers.waiting_notice(store, event)
    finally:
        store.close()
    return agent.render(event, text, notice)


def _bound(store: Any, deadline: float) -> None:
    """Give the store this hook's deadline and a spool, after replaying what earlier
    hooks left there (whatever is still left keeps this hook's writes behind it)."""
    from kenning import spool

    store.set_deadline(deadline)
    left = spool.replay(store, wait=REPLAY_WAIT)
    store.spool = spool.Spool(store.path, active=left > 0)


def handle_bytes(
    argv: list[str],
    stdin: bytes,
    debug: bool = False,
    stores: OpenStores | None = None,
    later: list[Callable[[], None]] | None = None,
    caller: int | None = None,
    starts: list[tuple[list[str], str | None]] | None = None,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
    started: float | None = None,
) -> str:
    """Handle one hook call; what to print ("" on any problem, which is logged, in the
    hook's own log when `env` is the hook's)."""
    if env is not None:
        from kenning.paths import serving

        with serving(env):
            return handle_bytes(
                argv,
                stdin,
                debug,
                stores,
                later,
                caller,
                starts,
                deadline=deadline,
                started=started,
            )
    event_name, agent, _ = hook_args(argv)
    try:
        return run(argv, stdin, stores, later, caller, starts, deadline=deadline, started=started)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the agent
        log(agent or "", event_name or "", f"{type(exc).__name__}: {exc}")
        if debug:
            import traceback

            traceback.print_exc()
        return ""


def main(argv: list[str], stdin: bytes | None = None, started: float | None = None) -> int:
    """`ken hook` in this process; `started`: when the hook began (`run`)."""
    event_name, agent, debug = hook_args(argv)
    if stdin is None:
        try:
            stdin = sys.stdin.buffer.read()
        except Exception as exc:  # noqa: BLE001
            log(agent or "", event_name or "", f"cannot read stdin: {exc}")
            return 0
    write_answer(argv, handle_bytes(argv, stdin, debug, started=started))
    return 0
