"""Giving memory to agents: packs and recall, with the privacy switches applied, and a
record of exactly what each session was told.

The switches bind every face that gives memory to agents or takes it from them: hooks,
the MCP server, `ken pack`, `ken recall`, `ken handoff`, and the read and write commands
of `ken` run in an agent's shell (`kenning.agentenv`). A person's own shell sees the
whole store: it is theirs.

- `memory.enabled = false` turns everything off: nothing is delivered, and every
  write an agent asks for is refused with why.
- `memory.deliver_to` names the agents that get packs and recall; unset (`*`), every
  agent does, one kenning knows only by `KEN_AGENT` too.
- A repo with `deliver = false` in `[memory.repos."<repo>"]` never has its items or
  sessions given to an agent, wherever the agent runs: not in a pack, a recall, a
  search, a get by id, a session history or a handoff. What belongs to a repo
  (`origin_repos`): what is in its repo scope or its workstreams (`<repo>#<branch>`),
  and whatever was written in it, in any scope (a workstream KEN_WORKSTREAM names, a
  project, a detached HEAD's repo scope, global): its provenance records the repo.
  A session belongs to the repo it ran in.
- A memory onboarded from an instruction file (`ken import --from CLAUDE.md`) is never
  told to an agent that loads that file itself (`Agent.instruction_files`), nor one
  collected from an agent's own memory (`ken collect`) to that agent.
- A repo with `capture = false` is not recorded at all (not even a session row), and
  an agent's write there, or to that repo's scopes from elsewhere (its workstreams, a
  project added from it or whose folder is in it: `projects.repos_of`), is refused. A
  project of several repos takes an agent's write only where capture is on for all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from kenning import agents, handoffs, origins
from kenning.config import BY_KEY, Config
from kenning.errors import InvalidInput
from kenning.ids import short_id
from kenning.model import Item, Kind, Scope, ScopeType, Session
from kenning.origins import in_blocked
from kenning.origins import origin_repos as origin_repos  # its readers find it here too
from kenning.origins import scope_repo as scope_repo
from kenning.origins import withheld as withheld
from kenning.pack import GENERIC_TOOLS, NO_TOOLS, Pack, Tools, build_pack
from kenning.recall import Recall, RecallSettings, recall
from kenning.sessions import clip_prompt
from kenning.store import ItemQuery, Project, Store
from kenning.where import Where


def blocked_repos(config: Config) -> set[str]:
    """Every repo whose memory must not be delivered (`deliver = false`), wherever the
    agent runs."""
    return config.repos_not_delivered()


def deliverable_scopes(
    scopes: Sequence[Scope], blocked: set[str], here_repo: str | None = None
) -> list[str]:
    """The scopes whose memory may be delivered: without the repo and workstreams of
    repos with `deliver = false`, and without the session when it runs in one."""
    out = []
    for scope in scopes:
        if in_blocked(scope, blocked):
            continue
        if scope.type is ScopeType.SESSION and here_repo in blocked:
            continue
        out.append(str(scope))
    return out


def session_withheld(session: Session, blocked: set[str] | frozenset[str]) -> bool:
    """Whether `session` ran in a repo whose memory is not delivered."""
    return session.repo in blocked


NOT_DELIVERED = origins.NOT_DELIVERED


def check_visible(item: Item, blocked: set[str] | frozenset[str]) -> Item:
    """`item`, unless it belongs to a repo whose memory is not delivered: then refused,
    with nothing of the memory said but its id."""
    if withheld(item, blocked):
        raise InvalidInput(f"memory {short_id(item.id)} belongs to {NOT_DELIVERED}")
    return item


def check_session_visible(session: Session, blocked: set[str] | frozenset[str]) -> Session:
    """`session`, unless it ran in a repo whose memory is not delivered."""
    if session_withheld(session, blocked):
        raise InvalidInput(f"session {short_id(session.id)} ran in {NOT_DELIVERED}")
    return session


def why_off(config: Config) -> str:
    """The switch that turned memory off (`memory.enabled` false), as the person set it:
    `KEN_ENABLED=0` in the environment, or the line of config.toml."""
    setting = BY_KEY["memory.enabled"]
    if setting.env and config.source(setting) == f"env {setting.env}":
        return f"{setting.env}={config.env[setting.env]}"
    return "memory.enabled = false in config.toml"


def delivery_off(config: Config, agent: str | None) -> str:
    """Why memory is not delivered to `agent` here (`may_deliver` is false), naming the
    switch that does it: a person turns that one back."""
    if not config.memory_enabled:
        return f"memory delivery is turned off here ({why_off(config)})"
    listed = ", ".join(config.memory_deliver_to) or "no agent"
    return f"memory delivery is turned off here for {agent} (memory.deliver_to names {listed})"


def hidden_from(config: Config, agent: str | None, where: Where) -> frozenset[str]:
    """The repos whose memories and sessions a reader may not see: none for a person
    (the store is theirs); for an agent, every repo with `deliver = false`, as the MCP
    tools read them. An agent that memory does not reach here (memory.enabled,
    memory.deliver_to) is refused outright, as the MCP tools refuse it."""
    if agent is None:
        return frozenset()
    if not may_deliver(config, agent, where):
        raise InvalidInput(f"{delivery_off(config, agent)}: {agent} is told nothing")
    return frozenset(blocked_repos(config))


ONBOARD = "onboard"  # provenance.how of a memory onboarded from an instruction file
COLLECT = "collect"  # provenance.how of a memory collected from an agent's own memory


def onboarded_from(item: Item) -> str | None:
    """The instruction file (its name) a memory was onboarded from, else None."""
    if item.provenance.how != ONBOARD:
        return None
    return next((Path(x.target).name for x in item.links if x.type == "file"), None)


def loaded_by_itself(agent: str | None) -> Callable[[Item], bool] | None:
    """Whether a memory is one the agent has already, without kenning: onboarded from
    an instruction file it loads itself, or collected from its own memory. None for an
    agent kenning does not know."""
    found = agents.AGENTS.get(agent or "")
    if found is None:
        return None
    files = found.instruction_files

    def has(item: Item) -> bool:
        made = item.provenance
        if made.how == COLLECT:
            return made.who == found.name
        return bool(files) and onboarded_from(item) in files

    return has


def own_handoff(item: Item, session_id: str) -> bool:
    """Whether `item` is a handoff session `session_id` left (SessionEnd's before a
    resume, or its agent's own): written for the next session, never told to itself."""
    return item.kind is Kind.HANDOFF and item.provenance.session == session_id


def _known_to(agent: str | None, session: Session | None) -> Callable[[Item], bool] | None:
    """What a pack leaves out as the agent's already (`loaded_by_itself`), and the
    session's own handoffs (a log.md entry its agent headed as its too): a pack after a
    compaction would tell it its own otherwise."""
    has = loaded_by_itself(agent)
    if session is None:
        return has
    return lambda item: handoffs.left_in(item, session) or (has is not None and has(item))


def _left_out(blocked: set[str], known: Callable[[Item], bool] | None) -> Callable[[Item], bool]:
    """What a pack or recall leaves out: what belongs to a repo whose memory is not
    delivered (whatever scope it sits in), and what the agent knows already."""
    if known is None:
        return lambda item: withheld(item, blocked)
    return lambda item: withheld(item, blocked) or known(item)


def may_deliver(config: Config, agent: str | None, where: Where) -> bool:
    return bool(config.memory_enabled) and config.delivers_to(agent)


def _repos_written(
    where: Where, scopes: Iterable[Scope] = (), projects: Sequence[Project] = ()
) -> dict[str, str]:
    """The repos a write from `where` to `scopes` touches, each with the project that
    makes it one ("" when none does): the one it runs in, the repos of its workstream
    and project (a branch of another repo, a project added from one), those of the
    scopes written to, and every repo of a project written to (`projects.repos_of`:
    the one it was added from and the one its folder is in), wherever the write comes
    from. A project of several repos is written to only when capture is on for all."""
    repos: dict[str, str] = {}

    def add(repo: str | None, project: str = "") -> None:
        if repo:
            repos.setdefault(repo, project)

    add(where.repo)
    add(where.project_repo, where.project or "")
    for scope in where.scopes:
        if scope.type is ScopeType.WORKSTREAM:
            add(scope_repo(scope))
    registered = {p.slug: p for p in projects}
    for scope in scopes:
        add(scope_repo(scope))
        if scope.type is not ScopeType.PROJECT:
            continue
        if scope.value == where.project:
            add(where.project_repo, scope.value)
        if scope.value in registered:
            from kenning.projects import repos_of

            for repo in repos_of(registered[scope.value]):
                add(repo, scope.value)
    return repos


def may_capture(config: Config, where: Where) -> bool:
    """Whether anything may be recorded from `where`: memory is on, and capture is on for
    every repo this place belongs to (`_repos_written`)."""
    if not config.memory_enabled:
        return False
    return all(config.repo_capture(repo) for repo in _repos_written(where))


def capture_off(
    config: Config,
    where: Where,
    scopes: Iterable[Scope] = (),
    *,
    projects: Sequence[Project],
) -> str | None:
    """Why the switches take no write from `where` to `scopes`, naming the switch (a
    person turns that one back): memory is off, or capture is off for the repo it runs
    in or writes to (`projects`: those registered, whose repos a write to their scope
    touches). None when they take it. Each face ends the line as it says it."""
    if not config.memory_enabled:
        return f"memory is turned off ({why_off(config)})"
    for repo, project in _repos_written(where, scopes, projects).items():
        if not config.repo_capture(repo):
            of = f", a repo of project {project}" if project else ""
            return (
                f"memory capture is off for {repo}{of} "
                f"({config.switch_source(repo, 'capture')} in config.toml)"
            )
    return None


def check_write(
    config: Config,
    where: Where,
    scopes: Iterable[Scope] = (),
    *,
    projects: Sequence[Project],
) -> None:
    """Refuse an agent's write when the switches say memory is not taken here
    (`capture_off`)."""
    why = capture_off(config, where, scopes, projects=projects)
    if why is not None:
        raise InvalidInput(f"{why}: nothing was saved")


def check_agent_write(
    config: Config,
    agent: str | None,
    where: Where,
    scopes: Iterable[Scope] = (),
    *,
    projects: Sequence[Project],
) -> None:
    """`check_write` for an agent's write, from any face; a person's own write is
    theirs (the switches say what kenning and agents may keep, not what the person
    may)."""
    if agent is not None:
        check_write(config, where, scopes, projects=projects)


def check_handoff(config: Config, where: Where, to: str) -> frozenset[str]:
    """Refuse to hand this place's work over to agent `to` when the switches say it may
    not be told it: memory is off, `to` is not in memory.deliver_to, or this repo's
    memory is not delivered. The repos whose sessions and memories it may not be told
    otherwise."""
    if not config.memory_enabled:
        raise InvalidInput(f"memory is turned off ({why_off(config)}): nothing was handed over")
    if not config.delivers_to(to):
        raise InvalidInput(
            f"{to} is not in memory.deliver_to: it is told no memory, so nothing was handed over"
        )
    blocked = frozenset(blocked_repos(config))
    if where.repo in blocked:
        raise InvalidInput(f"{where.repo} is {NOT_DELIVERED}: nothing was handed over")
    return blocked


def pack_for(
    store: Store,
    config: Config,
    where: Where,
    *,
    session: Session | None = None,
    budget: int | None = None,
    max_chars: int | None = None,
    record: bool = True,
    tools: Tools = GENERIC_TOOLS,
) -> Pack:
    """The context pack here (after syncing this project's files); when given to a
    session, its items' uses are counted. `tools`: how the agent it is for reaches
    memory itself (`tools_of`)."""
    if where.project and any(p.slug == where.project for p in store.projects()):
        from kenning import projects
        from kenning.errors import StoreBusy
        from kenning.hooklog import log

        try:
            with store.unspooled():  # the file stays the truth: a later sync reads it again
                for reason in projects.sync(store, where.project).skipped:
                    log("", "project-sync", f"skipped {reason}")  # the pack goes without it
        except StoreBusy as exc:
            log("", "project-sync", f"not synced: {exc}")
    blocked = blocked_repos(config)
    scopes = deliverable_scopes(where.scopes, blocked, where.repo)
    # A prompt's recall may come first (Copilot CLI runs both hooks at once): what it
    # told the session is not told again.
    recalled = _recalled(store, session.id) if session is not None else set()
    pack = build_pack(
        store,
        scopes,
        budget=budget or config.memory_budget,
        repo=None if where.repo in blocked else where.repo,
        exclude_session=session.id if session else None,
        exclude_items=recalled,
        max_chars=max_chars,
        skip=_left_out(blocked, _known_to(where.agent, session)),
        exclude_repos=blocked,  # read among what may be given (`build_pack`)
        tools=tools,
    )
    if record and session is not None:
        ids = [item.id for item in pack.items]
        store.record_delivery(session.id, "pack", ids)
        store.record_uses(ids, session.id, "pack")
    return pack


def tools_of(agent: str | None, config: Config, *, connected: bool = False) -> Tools:
    """How `agent` reaches memory itself, as its pack tells it: kenning's MCP tools by
    the names it shows its model, when the server is registered in its config; `ken` in
    its shell when not. An agent calling the tools now (`connected`) may have them under
    any name the person registered the server by, and so may one kenning does not know
    (KEN_AGENT): the tools' own names."""
    found = agents.AGENTS.get(agent or "")
    if found is None or connected:
        return GENERIC_TOOLS
    if found.mcp.registered(config.env):
        return Tools(found.mcp.tool("{tool}"))
    return NO_TOOLS


START_PACK_CHARS = 9000  # what a hook may print (agents.agent.MAX_OUTPUT_CHARS)


def start_pack(
    store: Store,
    config: Config,
    where: Where,
    agent: str | None,
    *,
    session: Session | None = None,
    budget: int | None = None,
    record: bool = True,
) -> Pack | None:
    """What an agent is told when it starts here (None: nothing, by the switches). The
    SessionStart hooks give this, and `ken pack --for AGENT` shows it."""
    if not may_deliver(config, agent, where):
        return None
    return pack_for(
        store,
        config,
        where,
        session=session,
        budget=budget,
        max_chars=START_PACK_CHARS,
        record=record,
        tools=tools_of(agent, config),
    )


def recall_for(
    store: Store,
    config: Config,
    where: Where,
    prompt: str,
    *,
    session: Session | None = None,
    context: Sequence[str] = (),
    settings: RecallSettings | None = None,
    record: bool = True,
) -> Recall:
    """Recall for a prompt here, skipping what this session already holds: what it was
    told and what it wrote (since its last compaction: what came before is no longer in
    its context)."""
    blocked = blocked_repos(config)
    scopes = deliverable_scopes(where.scopes, blocked, where.repo)
    if not scopes:
        return Recall((), (), "", 0)  # every scope asked for is private (none: every scope)
    exclude = in_context(store, session.id) if session is not None else set()
    settings = settings or RecallSettings.from_config(config)
    skip = _left_out(blocked, None)

    def fitting(exclude: set[str]) -> Recall:
        return recall(
            store,
            prompt,
            scopes,
            settings=settings,
            context=context,
            exclude=exclude,
            skip=skip,
            exclude_repos=blocked,  # chosen among what may be given (`recall`)
        )

    result = fitting(exclude)
    has = loaded_by_itself(where.agent)

    def known_to(item: Item) -> bool:
        # its own handoffs: those it wrote are in `exclude`; a log.md entry its agent
        # headed as its is found by its heading
        if session is not None and handoffs.left_in(item, session):
            return True
        return has is not None and has(item)

    for _ in range(3):  # rare: only when an onboarded memory or such an entry fits
        known = {c.item.id for c in result.kept if known_to(c.item)}
        if not known:
            break
        exclude = exclude | known
        result = fitting(exclude)
    if record and session is not None:
        record_recall(store, session, prompt, result)
    return result


def record_recall(store: Store, session: Session, prompt: str, result: Recall) -> None:
    """Record what a recall told a session (its items' uses count once per session)."""
    if not result.kept:
        return
    ids = [c.item.id for c in result.kept]
    # The prompt as sessions keep it: redacted, then clipped to 500 characters.
    store.record_delivery(session.id, "recall", ids, query=clip_prompt(prompt))
    store.record_uses(ids, session.id, "recall")


COMPACTION = "compact"  # a delivery row with no items: the session's context was compacted
# A delivery row with no items: the agent rebuilt the session's start-of-session context
# (Copilot's and OpenCode's resumes give the pack again and keep no earlier one).
REPACK = "repack"
# The same, when the agent also dropped turns that carried recall (Gemini's resume drops
# the turn the pack came in, and in `gemini -p` that is the first prompt's too).
RESTART = "restart"


def note_compaction(store: Store, session: Session) -> None:
    """Record that a session's context was compacted: what it was told before may be
    recalled again."""
    store.record_delivery(session.id, COMPACTION, [])


def note_repack(store: Store, session: Session, keeps_recall: bool = True) -> None:
    """Before a new start pack for a session that was given one already: the packs it
    was given before are no longer in its context, so recall may give their memories
    again. What recall told it is too, unless the agent `keeps_recall` in the
    conversation."""
    if any(entry.what == "pack" for entry in store.deliveries(session.id)):
        store.record_delivery(session.id, REPACK if keeps_recall else RESTART, [])


def told_since_compaction(store: Store, session_id: str) -> set[str]:
    """The items a session was told that are still in its context: those given since
    its last compaction."""
    return _since_compaction(store, session_id)[0]


def in_context(store: Store, session_id: str) -> set[str]:
    """The items still in a session's context: those it was told and those it wrote
    (the handoff its own SessionEnd left before a resume, what it proposed), since its
    last compaction. A resumed conversation holds them already."""
    told, since = _since_compaction(store, session_id)
    written = store.list_items(ItemQuery(session_id=session_id))
    # Its own handoffs are for the next session: held, however long ago they were written.
    held = (i for i in written if own_handoff(i, session_id) or not since or i.created_at >= since)
    return told | {item.id for item in held}


def _recalled(store: Store, session_id: str) -> set[str]:
    """What recall told a session since its last compaction."""
    return _since_compaction(store, session_id, only="recall")[0]


def _since_compaction(store: Store, session_id: str, only: str = "") -> tuple[set[str], str | None]:
    """What a session was told since its last compaction (by `only`, when given: "pack"
    or "recall"), and when that was. What packs told it before a new start pack
    (`REPACK`) is left out: the agent dropped them; after a `RESTART`, what recall told it
    too (what it wrote is still in its answers, which the agent kept)."""
    packed: set[str] = set()
    recalled: set[str] = set()
    since: str | None = None
    for entry in store.deliveries(session_id):
        if entry.what == COMPACTION:
            packed, recalled, since = set(), set(), entry.at
        elif entry.what == REPACK:
            packed = set()  # the new pack replaced the old one; recall's answers stay
        elif entry.what == RESTART:
            packed, recalled = set(), set()
        elif entry.what == "recall":
            recalled.update(entry.item_ids)
        else:
            packed.update(entry.item_ids)
    told = {"pack": packed, "recall": recalled}.get(only, packed | recalled)
    return told, since
