"""What each hook event does. Runs inside the wrapper in `run.py`, which turns any
error into a log line and silence."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace

from kenning import child, deliver, paths, sessions
from kenning import where as where_mod
from kenning.agents.agent import Event, HookEvent
from kenning.config import Config, team_path
from kenning.errors import KenningError
from kenning.locate import here
from kenning.model import Session
from kenning.store import ItemQuery, Store

Later = list[Callable[[], None]]  # writes that may wait until the agent has its answer
# Starts `ken ARGS` detached, in a folder (the summarizer). A hook process starts it
# itself, with the agent's environment; the hook server sets this for each hook to hand
# the command to the hook's client, which starts it so (kenning.hooks.run).
Spawn = Callable[[list[str], str | None], None]
MAX_PROMPT_BYTES = 64 * 1024
# A fork or a resume carries the conversation, and with it the pack it was given.
PACK_SOURCES = {"startup", "clear", "compact"}


class Skip(Exception):
    """Nothing to do for this event; the reason goes to the log."""


def locate(store: Store, event: HookEvent, config: Config) -> where_mod.Where:
    found = here(
        store,
        config,
        event.cwd,
        agent=event.agent,
        session=f"{event.agent}:{event.session_id}" if event.session_id else None,
    )
    refused = paths.refusals()  # a git file not read (a FIFO, a huge one): told once
    if refused:
        from kenning import hooklog

        for line in refused:
            hooklog.log(event.agent, event.name, line)
    return found


def _session(
    store: Store,
    event: HookEvent,
    config: Config,
    where: where_mod.Where,
    later: Later,
    source: str = "startup",
) -> Session | None:
    if not deliver.may_capture(config, where):
        return None
    # A repo whose memory is told nowhere is a place of its own even inside the plain
    # folder a session began in (`sessions.same_place`).
    withheld = deliver.blocked_repos(config) if where.repo else frozenset[str]()
    if event.session_id:
        found = store.find_session(event.agent, event.session_id)
        if (
            found
            and source == "startup"
            and event.event is not Event.SESSION_START
            and sessions.same_place(found, where, withheld)
            and not sessions.rekeyed(found, where)
        ):
            return found
    return sessions.start(
        store,
        agent=event.agent,
        agent_session_id=event.session_id,
        where=where,
        model=event.model,
        transcript_path=event.transcript_path,
        source=source,
        pid=sessions.agent_pid(event.agent, event.chain),
        idle_hours=config.hooks_idle_close_hours,
        continued_from=config.env.get("KEN_CONTINUES") or None,
        on_close=lambda ended: _closed(store, config, ended, where, later),
        withheld=withheld,
    )


def _closed(
    store: Store, config: Config, ended: Session, where: where_mod.Where, later: Later
) -> None:
    """The wrap-up of a session this start closed (left without SessionEnd). Its handoff
    is written before this start's pack is built when the pack may show it (it goes to
    a scope here), so the first pack after it has it; another place's after the answer.
    Its summary, a model's work, is started with the answer either way."""
    from kenning import handoff, summarize

    if summarize.enabled_for(config, ended):
        _summarize_later(ended, final=True)
    scope = handoff.handoff_scope(ended)
    if scope is None or scope not in where.scopes:
        later.append(lambda: wrap_up(store, config, ended, summary=False))
        return
    try:
        # Its transcript is written: the model is read once, not waited for.
        wrap_up(store, config, ended, summary=False, model_wait=0.0)
    except KenningError as exc:  # a store too busy: the pack goes without it, as before
        from kenning import hooklog

        hooklog.log(ended.agent, "wrap-up", f"{type(exc).__name__}: {exc}")


def session_start(store: Store, event: HookEvent, config: Config, later: Later) -> str:
    where = locate(store, event, config)
    source = (event.source or "startup").lower()
    session = _session(store, event, config, where, later, source)
    if source == "compact" and session is not None:
        deliver.note_compaction(store, session)
    if session is not None and config.memory_collect:
        later.append(lambda: _collect(store, where.cwd, event.agent))
    if source not in PACK_SOURCES:
        return ""
    if source in NOTICE_SOURCES and session is not None:
        # A session given a pack before starts again (Copilot's, OpenCode's and Gemini's
        # resumes): the agent rebuilt its start context, and the old pack is gone from it.
        from kenning import agents

        keeps_recall = agents.get(event.agent).resume_keeps_recall
        deliver.note_repack(store, session, keeps_recall=keeps_recall)
    if source in NOTICE_SOURCES and config.team_sync_at_start:
        _team_sync(store, config, event)
    # Within what the hook may print, so the session is told exactly what is recorded.
    pack = deliver.start_pack(store, config, where, event.agent, session=session)
    return pack.text if pack is not None else ""


def _team_sync(store: Store, config: Config, event: HookEvent) -> None:
    """Team memory approved since the last sync, into the store before the pack is made;
    bounded in time, and silent to the agent: a problem is a line in the hook log."""
    if not team_path().exists():
        return  # in no team: what `sync.at_start` finds, without its HTTP and TLS modules
    from kenning import hooklog
    from kenning.team import sync

    problem = sync.at_start(store, config.team_start_timeout_secs)
    if problem:
        hooklog.log(event.agent, event.name, problem)


def _collect(store: Store, cwd: str, agent: str) -> None:
    """What changed in the agents' own memory since the last look, as proposals; a file
    not read (too large, empty for a moment, ...) is a line in the hook log."""
    from kenning import collect

    done = collect.collect(store, changed_only=True, cwd=cwd)
    if done.notes:
        from kenning import hooklog

        for note in done.notes:
            hooklog.log(agent, "SessionStart", note)


NOTICE_SOURCES = {"startup", "clear"}  # a new session: where the person is told once


def waiting_notice(store: Store, event: HookEvent) -> str:
    """At a new session's start, when memories wait for review: one line for the person
    (the agent shows it to them, not to the model; see `Agent.render`)."""
    if event.event is not Event.SESSION_START:
        return ""
    if (event.source or "startup").lower() not in NOTICE_SOURCES:
        return ""
    waiting = store.count_items(ItemQuery(statuses=("proposed",), include_expired=True))
    if not waiting:
        return ""
    what = "memory waits" if waiting == 1 else "memories wait"
    return f"◇ {waiting} {what} for your review: ken review"


def prompt(store: Store, event: HookEvent, config: Config, later: Later) -> str:
    """Recall for the prompt. Recording the prompt and what was told is put in `later`,
    which the hook server runs after it has answered (a hook process, at once)."""
    from kenning import lessons  # a prompt's, a tool's and Stop's: not SessionStart's

    sent = event.prompt or ""
    if lessons.is_ours(sent):
        return ""  # Stop's own question, sent back as a prompt (Gemini): not the person's
    # `ken handoff`'s first message: its pack and its request are not the person's words
    # (nor a label for the session, nor something to recall for); what they added is.
    text = sessions.person_prompt(sent)
    if len(text.encode("utf-8", "replace")) > MAX_PROMPT_BYTES:
        raise Skip(f"prompt of {len(text):,} characters is over the recall limit; no recall")
    where = locate(store, event, config)
    session = _session(store, event, config, where, later)
    slashed = bool(SLASH.match(text))
    # `/remember` and `/recall` are the person's words to kenning, not to the agent: not
    # the session's prompts (a session of only those did nothing to hand off), and
    # `/remember` stored the rule itself, so nothing to ask about at Stop either. A turn
    # of kenning's own handoff words alone is counted, not recorded.
    if session is not None and sent.strip() and not slashed:
        clipped = sessions.clip_prompt(text) if text.strip() else None
        later.append(lambda: store.note_prompt(session.id, clipped))
        if text.strip():
            later.append(lambda: lessons.note_prompt(store, session, text, config))
    if session is not None and not session.model:
        # Claude's hooks carry no model: its transcript has it once the agent answered.
        later.append(lambda: _note_model(store, session))
    if slashed:
        return _slash(store, event, config, where, text, session)
    if not text.strip() or not deliver.may_deliver(config, event.agent, where):
        return ""
    from kenning import transcripts  # and with it the redactor: not SessionStart's

    context = transcripts.user_turns(
        event.agent, event.transcript_path, session_id=event.session_id
    )
    context = [turn for turn in context if turn.strip() != text.strip()]
    result = deliver.recall_for(
        store, config, where, text, session=session, context=context, record=False
    )
    if session is not None:
        later.append(lambda: deliver.record_recall(store, session, text, result))
    return result.text


# Before importing `slash`: the command, then a space or the end ("/recall/hooks.py: ..."
# is a path in a prompt, not the command).
SLASH = re.compile(r"\s*/(?:prompts:)?(remember|recall)(?:\s|$)")
NOTHING_DONE = {"remember": "nothing was stored", "recall": "nothing was recalled"}


def off_notice(event: HookEvent, why: str) -> str:
    """With memory turned off (or a setting kenning cannot read: `why`), what a prompt of
    kenning's own command is told: that nothing was done (every other event stays
    silent). Reads no store."""
    if event.event is not Event.PROMPT:
        return ""
    command = SLASH.match(sessions.person_prompt(event.prompt or ""))
    return f"{why}: {NOTHING_DONE[command.group(1)]}." if command else ""


def _slash(
    store: Store,
    event: HookEvent,
    config: Config,
    where: where_mod.Where,
    text: str,
    session: Session | None,
) -> str:
    """`/remember` or `/recall`: the person's own words, stored as typed when the CLI ran
    this hook (see `kenning.slash`)."""
    from kenning import agents, slash

    command = slash.parse(text)
    if command is None:
        return ""
    # What is off says which switch, as MCP's answers do: a person turns that one back.
    if command.name == "remember" and (refused := slash.capture_refused(config, where)):
        return refused
    if command.name == "recall" and not deliver.may_deliver(config, event.agent, where):
        return f"kenning: {deliver.delivery_off(config, event.agent)}: nothing was recalled."
    from_cli = slash.from_cli(agents.get(event.agent), config.env)
    withheld = frozenset(deliver.blocked_repos(config))
    ses = session.id if session else None
    return slash.run(store, command, where, event.agent, from_cli, ses, withheld, config)


def _open_here(store: Store, event: HookEvent, config: Config) -> Session | None:
    """The open session of the event's agent session, when the event comes from the place
    it works in and may be recorded there. An agent that went into another repo works
    there now (its next prompt opens a session of that repo, or none where capture is
    off): what its tools do there is not this session's. The folder is looked at only
    when the event's is not the session's own, which is most tool calls' case."""
    session = store.find_session(event.agent, event.session_id or "")
    if session is None or session.ended_at is not None:
        return None
    if session.cwd == event.cwd:
        return session if _may_keep(config, session.repo) else None
    where = locate(store, event, config)
    if not deliver.may_capture(config, where):
        return None
    withheld = deliver.blocked_repos(config) if where.repo else frozenset[str]()
    return session if sessions.same_place(session, where, withheld) else None


def _may_keep(config: Config, repo: str | None) -> bool:
    """Whether memory is on, and capture for `repo` (None: no repo) when there is one."""
    return config.memory_enabled and (repo is None or config.repo_capture(repo))


def tool(store: Store, event: HookEvent, config: Config, later: Later) -> str:
    """A tool call ran: note it for run lessons (a failure, a denial, a repeat). This runs
    on every tool call, so it reads one session row and writes one or two, after the
    answer; no git, no scopes."""
    if event.tool is None or not event.session_id or config.memory_lessons != "ask":
        return ""
    session = _open_here(store, event, config)
    if session is None:
        return ""
    from kenning import lessons

    used = event.tool
    later.append(lambda: lessons.note_tool(store, session, used))
    return ""


def stop(store: Store, event: HookEvent, config: Config, later: Later) -> str:
    """The end of a turn: ask, once per session, for the lessons its signals point to.
    What is returned is the reason the agent's Stop hook gives for going on; never while
    the agent already goes on because a Stop hook asked (`stop_hook_active`)."""
    if event.continuing or not event.session_id or config.memory_lessons != "ask":
        return ""
    session = _open_here(store, event, config)
    if session is None:
        return ""
    from kenning import lessons

    asked = lessons.question(store, config, session)
    return asked.text if asked is not None else ""


def _note_model(store: Store, session: Session) -> None:
    sessions.note_model(store, session)


def session_end(store: Store, event: HookEvent, config: Config, later: Later) -> str:
    if not event.session_id:
        raise Skip("SessionEnd without a session id")
    session = store.find_session(event.agent, event.session_id)
    if session is None:
        raise Skip(f"no open session {event.session_id} for {event.agent}")
    if session.ended_at is not None:
        raise Skip(f"session {event.session_id} of {event.agent} has ended already")
    ended = sessions.finish(store, session, event.reason or "end")
    wrap_up(store, config, ended)
    return ""


# An agent may write its transcript in batches (Copilot CLI's events file can still be
# unwritten when its sessionEnd hook runs): how long the end waits for it to name the model.
MODEL_WAIT = 0.5


def wrap_up(
    store: Store,
    config: Config,
    ended: Session,
    summary: bool = True,
    model_wait: float = MODEL_WAIT,
) -> None:
    """What a session leaves when it ends, with SessionEnd or without: the model (from
    its transcript, when its hooks did not say; looked for up to `model_wait` seconds),
    its handoff, and its summary when on (unless `summary` is False: started already)."""
    from kenning import handoff, summarize

    ended = sessions.note_model(store, ended, wait=model_wait)
    handoff.session_handoff(store, ended)
    if summary and summarize.enabled_for(config, ended):
        _summarize_later(ended, final=True)


def pre_compact(store: Store, event: HookEvent, config: Config, later: Later) -> str:
    from kenning import summarize

    session = store.find_session(event.agent, event.session_id) if event.session_id else None
    if session is None:
        return ""
    deliver.note_compaction(store, session)
    if summarize.enabled_for(config, session):
        _summarize_later(session, final=False)
    return ""


def _summarize_later(session: Session, *, final: bool) -> None:
    """Summarize in a detached process: agents give these hooks a few seconds at most."""
    from kenning import summarize

    summarize.start_later(session, final=final, spawn=spawn)


start_detached = child.start_detached
spawn: Spawn = start_detached


HANDLERS: dict[Event, Callable[[Store, HookEvent, Config, Later], str]] = {
    Event.SESSION_START: session_start,
    Event.PROMPT: prompt,
    Event.TOOL: tool,
    Event.STOP: stop,
    Event.PRE_COMPACT: pre_compact,
    Event.SESSION_END: session_end,
}


def handle(
    store: Store,
    event: HookEvent,
    config: Config,
    later: Later | None = None,
) -> str:
    """Handle one event. Writes that can wait go to `later` when given (the caller runs
    them after answering); without it they run before this returns."""
    handler = HANDLERS.get(event.event)
    if handler is None:
        return ""
    if not os.path.isdir(paths.os_path(event.cwd)):
        raise Skip(f"cwd {paths.as_text(event.cwd)} is not a folder")
    foreign = sessions.foreign_shell(event.agent, config.env, event.chain)
    if foreign is not None:
        raise Skip(foreign)
    # Where the agent works, which a payload may not say (Copilot's `--resume=ID` names
    # the folder its session began in): the one rule for every agent's hooks.
    from kenning import agents

    lags = agents.get(event.agent).payload_folder_lags
    try:
        folder = sessions.hook_folder(event.agent, event.cwd, event.chain, lags=lags)
    except ValueError as exc:
        raise Skip(str(exc)) from None
    if folder != event.cwd:
        event = replace(event, cwd=folder)
    pending: Later = [] if later is None else later
    out = handler(store, event, config, pending)
    if later is None:
        for action in pending:
            try:
                action()
            except KenningError as exc:  # bookkeeping after the answer: the answer stands
                from kenning import hooklog

                hooklog.log(event.agent, event.name, f"{type(exc).__name__}: {exc}")
    return out
