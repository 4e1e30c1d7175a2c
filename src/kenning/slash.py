"""`/remember` and `/recall` typed inside an agent: the person's own words, kept as typed.

`ken integrate AGENT` installs both commands in the agent's own way (`Agent.commands`).
However the agent expands them, its prompt hook sees the person's line (Claude Code and
Codex pass `/remember …` as typed; Gemini CLI passes the command's prompt, which kenning
writes as `/remember {{args}}`), and this module reads it there:

- `/remember [--scope SCOPE] TEXT` stores TEXT exactly, in the repo here (else global)
  or the scope given. It is the person's own memory (active, who=user, how=slash) only
  when the words came from the agent CLI itself: the hook's environment carries what
  the CLI gives its hooks and not what it gives the commands its model runs
  (`from_cli`; found with each real CLI, see docs/howto/remember.md). Otherwise,
  say a model ran `ken hook` from its own shell with a forged prompt, the words are only
  proposed, with themselves as evidence.
- `/recall WORDS` shows what memory holds for them: the search's best hits go back to
  the agent as context, for it to show the person.

Either way the prompt gets no per-prompt recall: the command is the answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kenning import agents, items, policy
from kenning.agents.agent import Agent
from kenning.errors import InvalidInput, KenningError
from kenning.ids import short_id
from kenning.model import Scope, ScopeType, Status
from kenning.printable import clean
from kenning.store import Store
from kenning.where import Where

if TYPE_CHECKING:
    from kenning.config import Config

_COMMAND = re.compile(r"^\s*/(?:prompts:)?(remember|recall)(?:\s+(.*))?\s*$", re.S)
_SCOPE = re.compile(r"^--scope(?:=|\s+)(\S+)(?:\s+(.*))?$", re.S)
RECALL_LIMIT = 8


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # remember or recall
    text: str
    scope: str | None = None


def parse(prompt: str) -> Command | None:
    """The `/remember` or `/recall` a prompt is, else None."""
    found = _COMMAND.match(prompt)
    if not found:
        return None
    name, rest = found.group(1), _unquoted((found.group(2) or "").strip())
    scope = None
    if name == "remember" and (given := _SCOPE.match(rest)):
        scope, rest = given.group(1), (given.group(2) or "").strip()
    return Command(name, rest, scope)


def _unquoted(words: str) -> str:
    """The words without one pair of quotes around all of them: `opencode run --command
    remember 'Use pnpm, never npm'` passes its one argument on so (OpenCode quotes an
    argument that holds a space), options and all. `"a" or "b"` is left as it is."""
    if len(words) >= 2 and words[0] == words[-1] and words[0] in "\"'":
        inner = words[1:-1]
        if words[0] not in inner:
            return inner.strip()
    return words


def run(
    store: Store,
    command: Command,
    where: Where,
    agent: str,
    from_cli: bool,
    session: str | None = None,
    withheld: frozenset[str] = frozenset(),
    config: Config | None = None,
) -> str:
    """Do the command; what the agent is told (for it to confirm to the person). A
    memory `/remember` stores is the `session`'s own: recall does not tell it again.
    `/recall` finds nothing of the `withheld` repos (`deliver.withheld`); `/remember`
    stores nothing where `config`'s switches refuse the scope (`deliver.check_write`:
    capture off for a repo it belongs to, wherever it is typed)."""
    if not command.text:
        return f"kenning: /{command.name} needs words after it, e.g. /{command.name} use pnpm"
    if command.name == "recall":
        return _recall(store, command.text, where, withheld)
    return _remember(store, command, where, agent, from_cli, session, config)


def capture_refused(
    config: Config, where: Where, scopes: Sequence[Scope] = (), store: Store | None = None
) -> str:
    """What `/remember` answers where the switches take nothing (`deliver.capture_off`,
    the projects registered in `store` counted), wherever it is typed; "" where they
    take it."""
    from kenning import deliver

    projects = store.projects() if store is not None else ()
    why = deliver.capture_off(config, where, scopes, projects=projects)
    return f"kenning: {why}: nothing was stored." if why else ""


def _remember(
    store: Store,
    command: Command,
    where: Where,
    agent: str,
    from_cli: bool,
    session: str | None,
    config: Config | None = None,
) -> str:
    try:
        scope = where.scope(command.scope) if command.scope else _default_scope(where)
    except KenningError as exc:
        return f"kenning: nothing stored: {exc}"
    if config is not None and (refused := capture_refused(config, where, [scope], store)):
        return refused
    from kenning.onboard import guess_kind

    words = command.text
    # The person's own words, or an agent's proposal with themselves as the evidence.
    who = "user" if from_cli else agent
    actor = policy.Actor.working_in(None if from_cli else agent, where)
    try:
        held = items.held_there(store, items.new_item(words, scope=scope), actor)
        if held is not None:  # typed again: one memory, not two
            return (
                f"kenning holds this already: [m:{short_id(held.id)}] in {scope} "
                f'({held.status.value}): "{clean(held.title, one_line=True)}". '
                "Tell the person so in one short line."
            )
        item = items.add(
            store,
            words,
            scope=scope,
            kind=guess_kind(words),
            status=Status.ACTIVE if from_cli else Status.PROPOSED,
            evidence="" if from_cli else words,
            provenance=where.provenance(who, "slash", session=session),
            actor=actor,
        )
    except InvalidInput as exc:  # a secret, or too long: say so, rather than nothing
        return f"kenning: nothing stored: {exc}. Tell the person so in one short line."
    what = (
        "stored the person's words as"
        if from_cli
        else "proposed (a person approves it with `ken review`)"
    )
    return (
        f"kenning {what} memory [m:{short_id(item.id)}] in {item.scope}: "
        f'"{clean(item.title, one_line=True)}". Tell the person so in one short line; '
        "do nothing else."
    )


def _default_scope(where: Where) -> Scope:
    return where.scope("repo") if where.repo else Scope(ScopeType.GLOBAL)


def _recall(store: Store, words: str, where: Where, withheld: frozenset[str]) -> str:
    from kenning import deliver

    scopes = deliver.deliverable_scopes(where.scopes, set(withheld), where.repo)
    try:
        found = (
            items.search(store, words, scopes=scopes, limit=RECALL_LIMIT, exclude_repos=withheld)
            if scopes
            else []
        )
        hits = [f.item for f in found if not deliver.withheld(f.item, withheld)]
    except KenningError:
        hits = []
    if not hits:
        return f'kenning holds nothing for "{words}" here. Tell the person so in one line.'
    lines = [
        f"- ({i.kind.value}) {clean(i.title, one_line=True)} [m:{short_id(i.id)}] ({i.scope})"
        for i in hits
    ]
    return (
        f'What kenning\'s memory holds for "{words}" here, best first. Show the person this '
        "list as it is, and nothing else:\n" + "\n".join(lines)
    )


def from_cli(agent: Agent, env: Mapping[str, str]) -> bool:
    """Whether a hook's environment is the one the agent CLI gives its hooks: every
    hook-only variable set, and no variable that marks an agent's shell (any agent's, or
    KEN_AGENT) but those its own hooks carry too. An agent that declares neither
    hook-only nor shell-only variables gives no such signal: never."""
    if not agent.hook_only_env and not agent.tool_only_env:
        return False
    return all(env.get(v) for v in agent.hook_only_env) and not agents.shell_marks(agent, env)
