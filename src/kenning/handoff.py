"""Handoffs: leaving work for the next agent, and continuing it in another one.

At SessionEnd, a session that did something (a prompt to its agent or a commit) leaves
a handoff item in its workstream (or project): agent, model, session, first and last
prompt, commits, and the change left uncommitted. Kenning's own commands typed in the
agent (`/remember`, `/recall`) are not prompts to it: a session of only those leaves no
handoff, and `ken handoff` continues the session before it (`worked`).

`ken handoff --to AGENT` continues the latest session here in another agent. It builds
a pack headed "Continuing from" (the previous agent's prompts, commits, the uncommitted
change, its handoff and its transcript) and starts the agent with it, the agent's own
way. Going back to an agent already used in this line of work resumes that agent's own
session when its transcript still exists, with a "Since your last turn" update instead:
each agent that worked since, the commits since and what memory gained since (what is
active; a proposal is told to no agent, only counted). That update goes in the first
message whatever the context mode: a resumed Claude Code or Codex keeps the system
prompt and developer instructions its session began with.

What kenning writes into a first message (a pack, its own request) is one
`<kenning-handoff>` block, the person's `--prompt` after it: the hooks record and
recall only the person's words (`sessions.person_prompt`).

How each agent is started is configurable under `[agents.NAME]` in config.toml:
`command` (text split as a shell would, or a list of words), `context`
(append_system_prompt, developer_instructions, first_message, flag:<flag> or none;
system, developer and message are older names), `model_flag`
(`--model {model}`), `prompt_flag` and `resume` (arguments with `{id}`). Codex's own
`developer_instructions` stay: the pack follows them. Each agent's defaults are its
module's `launch` (`kenning.agents`). Each value set is checked before anything runs
(`agent.launch_problem`, which `ken doctor` and `ken config list` report too).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kenning import agents, deliver, git, handoffs, items, paths, policy, sessions
from kenning.agents import agent as agent_value
from kenning.agents.agent import (
    CONTEXT_ALIASES,
    LaunchSettings,
    context_flag,
    launch_problem,
    words,
)
from kenning.config import Config, config_path
from kenning.errors import InvalidInput
from kenning.ids import short_id
from kenning.model import Item, Kind, Scope, ScopeType, Session, Status
from kenning.pack import cut_to, one_line, toml_string
from kenning.printable import clean
from kenning.redact import redact
from kenning.store import ItemQuery, SessionQuery, Store
from kenning.where import Where

DEFAULT_PROMPT = (
    "You are continuing work another agent started here; the context above says where "
    "it stands. First check the current state (git status, recent commits, the handoff), "
    "then carry on."
)
# The tags no pack `ken handoff` gives holds: every agent's, and its own block's.
HANDOFF_TAGS = (*agents.CONTEXT_TAGS, sessions.HANDOFF_TAG)
RESUME_PROMPT = (
    "Others worked here since your last turn; the update above says what changed. Check "
    "the current state, then carry on."
)


def git_text(cwd: str | None, *args: str) -> str:
    if not cwd or not os.path.isdir(paths.os_path(cwd)):
        return ""
    return (git.run(*args, cwd=cwd, timeout=10) or "").rstrip()


def commit_lines(cwd: str | None, shas: tuple[str, ...] | list[str]) -> list[str]:
    lines = []
    for sha in shas:
        subject = git_text(cwd, "log", "-1", "--format=%h %s", sha)
        lines.append(subject or sha[:10])
    return lines


def handoff_scope(session: Session) -> Scope | None:
    """Where a session's automatic handoff goes: its workstream, else its project, else
    (on a detached HEAD, checking out a tag or bisecting) its repo."""
    if session.workstream:
        return Scope(ScopeType.WORKSTREAM, session.workstream)
    if session.project:
        return Scope(ScopeType.PROJECT, session.project)
    if session.repo:
        return Scope(ScopeType.REPO, session.repo)
    return None


def session_handoff(store: Store, session: Session) -> Item | None:
    """The handoff a finished session leaves, when it did something."""
    if not session.did_something:
        return None
    scope = handoff_scope(session)
    if scope is None:
        return None
    when = (session.started_at or "")[:16].replace("T", " ")
    first = one_line(session.first_prompt or "")
    title = f"{session.agent} session {when}: {cut_to(first, 80) or 'no prompt'}"
    lines = [
        f"Agent: {session.agent}" + (f" ({session.model})" if session.model else ""),
        f"Session: {session.agent_session_id or session.id}",
    ]
    if session.first_prompt:
        lines.append(f"First prompt: {first}")
    if session.last_prompt and session.last_prompt != session.first_prompt:
        lines.append(f"Last prompt: {one_line(session.last_prompt)}")
    if session.commits:
        lines.append("Commits: " + "; ".join(commit_lines(session.cwd, session.commits)))
    if session.diff_stat:
        lines.append(f"Uncommitted: {session.diff_stat}")
    if session.transcript_path:
        lines.append(f"Transcript: {session.transcript_path}")
    text = title + "\n" + "\n".join(lines)
    # A session resumed and ended again (`--continue`) keeps one handoff, brought up to
    # date as a new version of it.
    query = ItemQuery(kinds=("handoff",), session_id=session.id, include_expired=True)
    earlier = [i for i in store.list_items(query) if i.automatic_handoff]
    if earlier:
        return items.change(store, earlier[0].id, text=text, scope=scope, actor=policy.KENNING)
    return items.add(
        store,
        text,
        scope=scope,
        kind=Kind.HANDOFF,
        status=Status.ACTIVE,
        provenance=session.provenance("hook"),
        actor=policy.KENNING,
    )


# --- continuing in another agent -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Launch:
    agent: str
    mode: str  # fresh or resume
    argv: list[str]
    pack: str
    env: dict[str, str]
    cwd: str
    continues: Session

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "mode": self.mode,
            "argv": self.argv,
            "command": shlex.join(self.argv),
            "pack": self.pack,
            "cwd": self.cwd,
            "continues": self.continues.id,
        }


def agent_settings(config: Config, agent: str) -> dict[str, Any]:
    """How to start `agent`: its defaults, then `[agents.NAME]` from config.toml, each
    value checked (`agent.launch_problem`: one line naming the key and what it takes);
    the context mode in its canonical name."""
    table = config.file.get("agents", {})
    user = table.get(agent, {}) if isinstance(table, dict) else {}
    if not isinstance(user, dict):
        raise InvalidInput(
            f"[agents.{agent}] in {config_path()} is not a table: write [agents.{agent}] "
            "with command, context, model_flag, prompt_flag or resume under it"
        )
    for key, value in user.items():
        problem = launch_problem(key, value)
        if problem:
            raise InvalidInput(f"[agents.{agent}] {key} {problem}; fix it in {config_path()}")
    known = agents.AGENTS.get(agent)
    # An agent kenning does not know is started by its name, the pack as its first message.
    launch = known.launch if known else LaunchSettings(agent, model_flag="--model")
    merged = {**launch.settings(), **user}
    context = merged["context"]
    merged["context"] = CONTEXT_ALIASES.get(context, context)
    return merged


def model_args(model_flag: str, model: str) -> list[str]:
    """`--model {model}` with the model put in; the older form, a bare flag, takes the
    model after it."""
    if "{model}" in model_flag:
        return [part.replace("{model}", model) for part in shlex.split(model_flag)]
    return [*shlex.split(model_flag), model]


def own_instructions(agent: str) -> str:
    """The agent's own instructions that a `developer_instructions` handoff replaces
    (Codex's `developer_instructions` in its config.toml): kept, the pack after them."""
    known = agents.AGENTS.get(agent)
    return known.instructions(paths.environ()) if known and known.instructions else ""


def _line_sessions(store: Store, where: Where) -> list[Session]:
    if where.workstream:
        found = store.list_sessions(SessionQuery(workstream=where.workstream, limit=200))
        if found:
            return found
    if where.repo:
        return store.list_sessions(SessionQuery(repo=where.repo, limit=200))
    return store.list_sessions(SessionQuery(cwd=where.cwd, limit=200))


def _handoff_lines(item: Item, label: str, *, body: bool = True) -> list[str]:
    lines = [f"- {label}: {clean(item.title, one_line=True)} [m:{short_id(item.id)}]"]
    if body:
        for line in item.body.splitlines():
            if not line.strip() or line.startswith("Transcript:"):
                continue
            # memory_handoff's parts are `## Done` etc.: headings inside a list item.
            lines.append(f"  {line[3:].strip()}:" if line.startswith("## ") else f"  {line}")
    return lines


def _session_block(store: Store, session: Session, heading: str) -> list[str]:
    who = session.agent + (f" ({session.model})" if session.model else "")
    lines = [f"## {heading}: {who}, {session.started_at[:16].replace('T', ' ')} UTC"]
    if session.first_prompt:
        lines.append(f"- First prompt: {one_line(session.first_prompt)}")
    if session.last_prompt and session.last_prompt != session.first_prompt:
        lines.append(f"- Last prompt: {one_line(session.last_prompt)}")
    if session.commits:
        lines.append("- Commits: " + "; ".join(commit_lines(session.cwd, session.commits)))
    left = handoffs.left_by(store, session)
    if left:
        # The agent's own handoff wins; the automatic one is a fallback.
        lines += _handoff_lines(left[0], "Handoff")
        automatic = [i for i in left[1:] if i.automatic_handoff]
        if automatic and not left[0].automatic_handoff:
            lines += _handoff_lines(automatic[0], "Automatic handoff", body=False)
    if session.transcript_path:
        lines.append(f"- Transcript: {session.transcript_path}")
    return lines


def continuing_pack(store: Store, latest: Session, cwd: str) -> str:
    lines = ["# Continuing from another agent", ""]
    lines += _session_block(store, latest, "Previous session")
    lines.append("")
    lines += uncommitted_lines(cwd)
    return "\n".join(lines)


def uncommitted_lines(cwd: str) -> list[str]:
    """The uncommitted change: git's summary of the tracked files, and `git status
    --short` (new files git does not track yet count too). When git gives no answer (not
    on PATH, say) the change is unknown, and said to be: "none" would tell the next agent
    something false."""
    answer = git.call("status", "--short", cwd=cwd, timeout=10)
    if answer.text is None:
        return ["## Uncommitted change", answer.unknown("changes")]
    status = answer.text.rstrip()
    stat = git_text(cwd, "diff", "HEAD", "--shortstat")
    if not status:
        return ["## Uncommitted change", stat or "none"]
    listed = "\n".join(status.splitlines()[:30])
    return ["## Uncommitted change", stat or "no tracked file changed", f"```\n{listed}\n```"]


def since_pack(
    store: Store,
    resumed: Session,
    later: list[Session],
    cwd: str,
    scopes: list[str],
    blocked: frozenset[str] = frozenset(),
) -> str:
    since = resumed.ended_at or resumed.started_at
    lines = ["# Since your last turn", ""]
    for session in sorted(later, key=lambda s: s.started_at):
        lines += _session_block(store, session, "Then")
        lines.append("")
    base = resumed.commits[-1] if resumed.commits else resumed.start_commit
    if base:
        log = git.call("log", "--format=%h %s", f"{base}..HEAD", cwd=cwd, timeout=10)
        said = log.unknown("commits") if log.text is None else log.text.rstrip()
        lines.append("## Commits since\n" + (said or "none"))
    found = [
        i
        for i in store.list_items(
            ItemQuery(scopes=tuple(scopes), statuses=("active", "proposed"), limit=200)
        )
        if i.created_at > since and i.kind is not Kind.HANDOFF and not deliver.withheld(i, blocked)
    ]
    # A proposal is told to no agent until a person approves it: only how many wait.
    added = [i for i in found if i.status is Status.ACTIVE]
    waiting = len(found) - len(added)
    lines.append("")
    lines.append("## Added to memory since")
    lines += [_added_line(i) for i in added[:20]]
    if waiting:
        lines.append(
            f"{waiting} proposal{' waits' if waiting == 1 else 's wait'} for a person's review "
            "(not told to agents)"
        )
    if not found:
        lines.append("nothing")
    lines.append("")
    lines += uncommitted_lines(cwd)
    return "\n".join(lines)


def _added_line(item: Item) -> str:
    """A memory added since, as packs show it: an agent's unreviewed note says whose."""
    agent = policy.unreviewed_from(item)
    origin = f" (from {agent}, unreviewed)" if agent else ""
    title = clean(item.title, one_line=True)
    return f"- ({item.kind.value}) {title}{origin} [m:{short_id(item.id)}]"


def worked(store: Store, session: Session) -> bool:
    """Whether a session did something to continue from: its agent was prompted (by the
    person, or by `ken handoff`'s words alone; kenning's own `/remember` and `/recall` are
    not prompts: `hooks.handlers.prompt`), it made commits, or its agent left a handoff
    of its own. The change left uncommitted is not the session's to claim: it may be an
    earlier one's, and `ken handoff` reads it from git anyway."""
    if session.did_something:
        return True
    return any(not i.automatic_handoff for i in handoffs.left_by(store, session))


def close_left(store: Store, config: Config) -> None:
    """Close the sessions whose agent has exited (or that sat idle too long) without a
    SessionEnd, leaving their commits and handoff as a clean end would, before reading
    them (`ken handoff`, `ken pack`): the next agent's hook would, but these may come
    first."""

    from kenning import summarize

    def leave_handoff(ended: Session) -> None:
        ended = sessions.note_model(store, ended)
        session_handoff(store, ended)
        if summarize.enabled_for(config, ended):  # and its summary, as a hook's close
            summarize.start_later(ended)

    sessions.close_stale(
        store, "", "", None, config.hooks_idle_close_hours, "handoff", on_close=leave_handoff
    )


def plan(
    store: Store,
    config: Config,
    where: Where,
    to: str,
    *,
    model: str | None = None,
    prompt: str | None = None,
    fresh: bool = False,
) -> Launch:
    """How to continue the latest session here in agent `to`, as the switches allow
    (`deliver.check_handoff`): nothing of a repo whose memory is not delivered."""
    blocked = deliver.check_handoff(config, where, to)
    close_left(store, config)
    # Latest by last activity: a resumed session keeps its start but ends anew.
    line = sorted(
        (
            s
            for s in _line_sessions(store, where)
            if not deliver.session_withheld(s, blocked) and worked(store, s)
        ),
        key=handoffs.last_active,
        reverse=True,
    )
    if not line:
        raise InvalidInput("no earlier agent session here to continue; run an agent first")
    latest = line[0]
    settings = agent_settings(config, to)
    argv = words(settings["command"]) or []  # checked: never empty
    if model:
        argv += model_args(str(settings["model_flag"]), model)
    mine = [s for s in line if s.agent == to and s.agent_session_id]
    resumable = (
        not fresh
        and mine
        and settings.get("resume")
        and mine[0].transcript_path
        and Path(mine[0].transcript_path).exists()
        and mine[0].id != latest.id
    )
    if resumable:
        resumed = mine[0]
        since = handoffs.last_active(resumed)
        later = [s for s in line if s.id != resumed.id and handoffs.last_active(s) > since]
        scopes = deliver.deliverable_scopes(where.scopes, set(blocked), where.repo)
        pack = since_pack(store, resumed, later, where.cwd, scopes, blocked)
        argv += [a.replace("{id}", str(resumed.agent_session_id)) for a in settings["resume"]]
        default = RESUME_PROMPT
        mode = "resume"
    else:
        pack = continuing_pack(store, latest, where.cwd)
        default = DEFAULT_PROMPT
        mode = "fresh"
    # Commit subjects and file names come from git as they are: redacted like memory,
    # and with no agent's context tag in them (`agents.defused`), nor kenning's own block
    # (`sessions.HANDOFF_TAG`): a subject closing either would go on as words that are
    # not kenning's. The handoffs and prompts quoted here are defused with them, and
    # shown as every text given an agent is (`printable.clean`): a prompt's or commit's
    # tag characters would hand the next agent an instruction no person sees.
    pack = clean(agent_value.defused(redact(pack).text, HANDOFF_TAGS))
    context = settings["context"]
    if mode == "resume" and context != "none":
        # A resumed session keeps the system prompt and developer instructions it began
        # with (Claude's --append-system-prompt and Codex's -c developer_instructions
        # given again do not reach the model): the update goes in the message.
        context = "first_message"
    flag = settings.get("prompt_flag")
    before_first = [str(flag)] if flag else []
    # kenning's words (the pack, its request) in their block: not recorded as the
    # person's prompt (`sessions.person_prompt`); the person's own --prompt after it.
    first = prompt or sessions.handoff_message(default)
    if context == "append_system_prompt":
        argv += ["--append-system-prompt", pack, *before_first, first]
    elif context == "developer_instructions":
        instructions = "\n\n".join(t for t in (own_instructions(to), pack) if t)
        argv += ["-c", f"developer_instructions={toml_string(instructions)}", *before_first, first]
    elif context == "first_message":
        ours = pack if prompt else f"{pack}\n\n{default}"
        argv += [*before_first, sessions.handoff_message(ours, prompt)]
    elif context == "none":
        argv += [*before_first, first]
    else:
        argv += [str(context_flag(context)), pack, *before_first, first]
    env = {"KEN_CONTINUES": latest.id}
    return Launch(to, mode, argv, pack, env, where.cwd, latest)
