"""What every `ken` command shares: the state (config, store, where we are), the group
class that turns library errors into one line, and the decorators and helpers that take
the state. Command modules import this; nothing here imports a command module."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import wraps
from typing import Any, TypeVar

import click

from kenning import agentenv, config, deliver, editing, items, locate, policy
from kenning import where as where_mod
from kenning.cli import output
from kenning.cli.output import say
from kenning.errors import KenningError
from kenning.model import Item, Kind, Provenance, Scope
from kenning.store import Store, open_store

F = TypeVar("F", bound=Callable[..., Any])


class KenGroup(click.Group):
    """Turns library errors into one line on stderr and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KenningError as exc:
            if isinstance(ctx.obj, State) and ctx.obj.debug:
                raise
            say(f"ken: {said(str(exc))}")
            ctx.exit(exc.exit_code)


def said(message: str) -> str:
    """An error message with any secret it echoes from the input redacted: what goes to
    an agent's shell goes to its model and transcript."""
    from kenning.redact import redact

    return redact(message).text


class State:
    """What commands share: the config, the store (opened on first use), where we are."""

    def __init__(self, debug: bool) -> None:
        self.debug = debug
        self._store: Store | None = None
        self._config: config.Config | None = None
        self._where: where_mod.Where | None = None

    @property
    def config(self) -> config.Config:
        if self._config is None:
            self._config = config.Config()
        return self._config

    @property
    def store(self) -> Store:
        if self._store is None:
            from kenning import spool

            self._store = open_store()
            spool.replay(self._store, wait=1.0)  # what hooks could not write, first
        return self._store

    def where(self) -> where_mod.Where:
        if self._where is None:
            store = self.store if config.db_path().exists() else None
            self._where = locate.here(store, self.config, agent=agentenv.detect_agent())
        return self._where

    def actor(self) -> policy.Actor:
        """Who runs this command: a person, or the agent whose shell this is."""
        return policy.Actor.working_in(agentenv.detect_agent(), self.where())

    def memory(self, ref: str, *, deciding: bool = False) -> Item:
        """The memory `ref` names, among those whoever runs this may know of
        (`items.get_known`): a person, any; an agent, none of a withheld repo and no
        other agent's proposal, so an ambiguous id names none of them either, and a
        change of one is answered as `ken show` and MCP's `memory_update` answer it: no
        item matches. `deciding`: a person's decision (approve, reject, ...), which an
        agent's shell is refused whatever it names, saying a person decides it."""
        return items.get_known(
            self.store, ref, self.actor(), self.withheld(), proposals=not deciding
        )

    def known(self) -> Callable[[Item], bool] | None:
        """Which memories whoever runs this may be told of in what a command lists,
        counts or exports (`items.known_to`): None in a person's shell; in an agent's,
        what its MCP tools give it (no other agent's proposal, nothing waiting but its
        own, nothing of a repo kept from agents)."""
        if agentenv.detect_agent() is None:
            return None  # a person's: read no config for it (it may not parse)
        return items.known_to(self.actor(), self.withheld())

    def withheld(self) -> frozenset[str]:
        """The repos whose memories and sessions this command may not show: none in a
        person's shell; in an agent's, those the switches keep from agents, as the MCP
        tools keep them (refused outright when memory reaches no agent here)."""
        if agentenv.detect_agent() is None:
            return frozenset()  # a person's: read no config for it (it may not parse)
        here = self.where()
        return deliver.hidden_from(self.config, here.agent, here)

    def scope(self, text: str, *, to_find: bool = False) -> Scope:
        """A scope as typed on the command line; a bare `repo` etc. is the one here.
        `to_find`: a filter, which may name a scope that never applies (memories an older
        kenning stored there are still listed and forgotten by it)."""
        if ":" in text or text.strip() == "global":
            return items.parse_scope(text, to_find=to_find)
        return self.where().scope(text, to_find=to_find)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def pass_state(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(click.get_current_context().obj, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def renders(fn: Callable[..., output.Result]) -> Callable[..., None]:
    """Give a command `--json`: the command returns a `Result` and `output.render` prints
    it as text, or as JSON with the flag. Put it above `pass_state`."""

    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @wraps(fn)
    def command(*args: Any, as_json: bool, **kwargs: Any) -> None:
        output.render(fn(*args, **kwargs), as_json=as_json)

    return command


def example(text: str) -> str:
    return f"\n\n\b\nExample:\n  {text}"


def provenance_here(state: State, how: str = "cli") -> Provenance:
    """Who writes from here, how, where; in an agent's shell that gives its session id
    (Codex's CODEX_THREAD_ID), the session its hooks recorded under that id, if any: a
    statement repeated from three sessions' shells is three sessions, not one."""
    here = state.where()
    session = None
    own = agentenv.agent_session_id(here.agent)
    if here.agent and own and config.db_path().exists():
        found = state.store.find_session(here.agent, own)
        session = found.id if found else None
    return replace(
        here.provenance(here.agent or "user", how, session=session), host=os.uname().nodename
    )


def guard_change(
    state: State,
    item: Item,
    action: str,
    new_scope: Scope | None = None,
    new_kind: Kind | None = None,
    actor: policy.Actor | None = None,
) -> policy.Actor:
    """Refuse the change when the policy wants a person (from an agent's shell, for
    anything but its own working note), or the switches refuse an agent's write (as
    MCP's memory_update: what it may not read it may not change); the actor to change it
    as."""
    actor = actor or state.actor()
    if actor.agent is not None:
        here = state.where()
        deliver.check_visible(item, state.withheld())
        deliver.check_agent_write(
            state.config,
            actor.agent,
            here,
            [item.scope, *([new_scope] if new_scope else [])],
            projects=state.store.projects(),
        )
    return policy.check_change(actor, item, action, new_scope, new_kind)


def read_stdin_text(nothing: str = "nothing was stored") -> str:
    """Text piped in or from a file (`ken add < note.txt`), without the byte order mark
    a Windows editor writes first: it would reach agents as an invisible character."""
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise KenningError(f"stdin is not UTF-8 text; {nothing}") from None
    return data.removeprefix("\ufeff")


class Fraction(click.FloatRange):
    """A number in a closed range, and a number: "nan" is in no range, though a
    comparison with it is never false."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number", param, ctx)
        return number


def in_range(key: str) -> click.FloatRange | click.IntRange:
    """A flag's type that takes what the setting `key` it overrides takes: one range,
    wherever a value comes from."""
    setting = config.BY_KEY[key]
    if setting.type is float:
        return Fraction(setting.low, setting.high)
    low, high = setting.low, setting.high
    return click.IntRange(None if low is None else int(low), None if high is None else int(high))


def scope_filter(state: State, scope: Sequence[str], here: bool) -> list[str]:
    """The scopes a command's --scope (a bare `repo` means this repo) and --here name."""
    scopes = [str(state.scope(s, to_find=True)) for s in scope]
    if here:
        scopes += [str(s) for s in state.where().scopes]
    return scopes


def save_edit(
    state: State,
    item: Item,
    edit: editing.Edit,
    *,
    in_place: bool = False,
    actor: policy.Actor | None = None,
) -> Item:
    """Save what the person wrote in the editor over `item` (a new version), asking a
    person first when the policy wants one."""
    new_scope = state.scope(edit.scope) if edit.scope else None
    new_kind = items.parse_kind(edit.kind) if edit.kind else None
    actor = guard_change(state, item, "edit", new_scope, new_kind, actor=actor)
    return editing.save(state.store, item, edit, scope=new_scope, in_place=in_place, actor=actor)
