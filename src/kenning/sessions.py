"""Sessions: one run of one agent, opened and closed by the hooks.

A session row records who ran (agent, model, the agent's own session id and transcript),
where (repo, folder, scopes), when, the first and last prompt (the person's own words
only, see `person_prompt`; redacted, 500 characters at most), the commit it started
on, the commits made during it and the uncommitted change at the end. It also records
the agent's process id, so that other processes of that agent (its MCP server) can
find the session by walking up their process tree.

Sessions are closed by SessionEnd; a new start after `/clear` in the same folder closes
the one it replaces; sessions whose agent process is gone, or idle past a limit, are
closed at the next start, since some agents (older Codex) send no SessionEnd. Either
way a closed session gets the same wrap-up (its handoff, and a summary when on); the
next start writes that handoff before its own pack when the pack may show it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kenning import agents, git, ids, paths
from kenning.ids import short_id
from kenning.model import Session
from kenning.store import SessionUpdate, Store, now_iso
from kenning.where import Where, find_git

MAX_PROMPT_CHARS = 500
MAX_REASON_CHARS = 80  # a session's end reason, as its agent gave it
# What `ken handoff` writes into an agent's first message (its pack, and its own request
# when the person gave none) is one block in this tag, the person's words after it.
HANDOFF_TAG = "kenning-handoff"
_HANDOFF_OPEN, _HANDOFF_CLOSE = f"<{HANDOFF_TAG}>", f"</{HANDOFF_TAG}>"


def _redacted(text: str) -> str:
    """`text` redacted. The redactor is imported only when there is text to redact: a
    SessionStart that names no model needs none."""
    from kenning.redact import redact

    return redact(text).text


def handoff_message(ours: str, words: str | None = None) -> str:
    """A first message from `ken handoff`: kenning's text in its block, then the
    person's `words` when there are any."""
    block = f"{_HANDOFF_OPEN}\n{ours.strip()}\n{_HANDOFF_CLOSE}"
    return f"{block}\n\n{words}" if words and words.strip() else block


def person_prompt(prompt: str) -> str:
    """The person's words in a prompt: the block `ken handoff` opened it with taken out
    ("" when that was all). Up to the block's last closing tag: the pack quotes commit
    subjects and memory titles, which may name the tag."""
    text = prompt.lstrip()
    if not text.startswith(_HANDOFF_OPEN):
        return prompt
    end = text.rfind(_HANDOFF_CLOSE)
    return text[end + len(_HANDOFF_CLOSE) :].strip() if end >= 0 else ""


def clip_prompt(prompt: str) -> str:
    text = _redacted(prompt.strip())
    return text if len(text) <= MAX_PROMPT_CHARS else text[: MAX_PROMPT_CHARS - 1] + "…"


def _stat(pid: int) -> tuple[str, list[str]] | None:
    """A process's command name and the fields after it (state, parent pid, ...), from
    /proc; the name may hold spaces and parentheses."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            stat = file.read()
    except OSError:
        return None
    return stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()


def _proc(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) of a process, from /proc."""
    found = _stat(pid)
    return None if found is None else (found[0], int(found[1][1]))


def process_chain(start: int | None = None, depth: int = 12) -> list[tuple[int, str]]:
    """This process's ancestors, nearest first, as (pid, name)."""
    pid = start if start is not None else os.getppid()
    chain: list[tuple[int, str]] = []
    while pid > 1 and len(chain) < depth:
        info = _proc(pid)
        if info is None:
            break
        chain.append((pid, info[0]))
        pid = info[1]
    return chain


def agent_process(agent: str, chain: Sequence[tuple[int, str]]) -> int | None:
    """The nearest process in `chain` that is the agent's own (by its name), or None."""
    known = agents.AGENTS.get(agent)
    names = (*known.process_names, *known.host_process_names) if known else (agent,)
    for pid, name in chain:
        if any(name.startswith(n) for n in names):
            return pid
    return None


def agent_pid(agent: str, chain: Sequence[tuple[int, str]] | None = None) -> int | None:
    """The nearest ancestor that is the agent's own process, else the parent."""
    chain = process_chain() if chain is None else chain
    found = agent_process(agent, chain)
    if found is not None:
        return found
    return chain[0][0] if chain else None


def hook_folder(
    agent: str, cwd: str, chain: Sequence[tuple[int, str]], *, lags: bool = False
) -> str:
    """The folder a hook of `agent` works in: the payload's `cwd`, unless the agent's own
    process works in a repo and that folder lies in another one.

    A session belongs to the place it works in. An agent's hooks report the folder it
    works in, which follows its `cd` but stays in the repo its process works in. A
    payload naming a folder in another repo was written by hand (a model running `ken
    hook` from its shell to leave a session or a handoff in another repo): raises
    ValueError, and nothing is recorded. Unless the agent's own hooks do that (`lags`,
    `Agent.payload_folder_lags`: Copilot CLI's `--resume=ID` names the folder the session
    began in): then the hook is the process's folder's, and a session that began
    elsewhere moves (see `start`). When the process is not found (no /proc, another
    user's), the payload's folder stands. When the process works in no repo and the
    payload's folder is not inside its folder, there is no place to tell: ValueError."""
    pid = agent_process(agent, chain)
    if pid is None:
        return cwd
    try:
        home = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return cwd
    here = Path(cwd).resolve()
    own = Path(home)
    if here == own or own in here.parents:
        return cwd
    theirs, ours = find_git(here), find_git(own)
    if ours is None:
        raise ValueError(
            f"the payload's folder {cwd} lies outside {home}, where {agent} (pid {pid}) "
            "works, in no repo: a hook run by hand? not recorded"
        )
    if theirs is not None and theirs.key == ours.key:
        return cwd
    if lags:
        return home
    raise ValueError(
        f"the payload's folder {cwd} lies in another repo than {home}, where {agent} "
        f"(pid {pid}) works: a hook run by hand? not recorded"
    )


def same_place(session: Session, where: Where, withheld: Container[str] = ()) -> bool:
    """Whether `where` is the place `session` works in.

    - The same repo: any folder of it, any worktree, whatever its key is now (an origin
      added or removed during the session, or `git init` run in its folder, changes the
      key, not the checkout: see `rekeyed`).
    - A session begun outside repos: its folder and the folders inside it (or around
      it), and the repos inside it, as an agent started in a folder holding several
      repos goes in and out of them; except a repo in `withheld` (`deliver = false`),
      whose sessions are its own so that nothing typed there reaches a handoff told
      elsewhere.
    - Any other repo is another place."""
    if session.repo and session.repo == where.repo:
        return True
    if _now_in(session, where):
        return True
    if session.repo or where.repo in withheld:
        return False
    if not session.cwd:
        return True
    ours, theirs = Path(session.cwd), Path(where.cwd)
    inside = ours == theirs or ours in theirs.parents
    return inside if where.repo else inside or theirs in ours.parents


def _now_in(session: Session, where: Where) -> bool:
    """Whether the session's folder lies, as it is now, in the repository `where` is in
    (the same `.git`, whatever key it has). Read only when the keys differ."""
    if where.git is None or not session.cwd:
        return False
    try:
        now = find_git(paths.os_path(session.cwd))
    except OSError:
        return False
    return now is not None and now.common_dir == where.git.common_dir


def rekeyed(session: Session, where: Where) -> bool:
    """Whether `session` works in the repo `where` is in, under a key it no longer has
    (its path, or none, before the origin was added or `git init` run): its place is
    named by the new key from here on."""
    return session.repo != where.repo and _now_in(session, where)


def foreign_shell(
    agent: str, env: Mapping[str, str], chain: Sequence[tuple[int, str]]
) -> str | None:
    """Why a hook of `agent` is not `agent`'s own, by where it ran; None when it may be.

    A hook whose environment marks another agent's shell (its markers, or a KEN_AGENT
    naming another) ran either in `agent` started from that shell (a model running
    `codex exec`), and then `agent`'s own process is above it; or from that shell by a
    model, as `ken hook ... --agent AGENT` with a payload of its own making: a session,
    prompts taken for the person's words and a handoff, all made up. The second is not
    recorded. (A model naming its own agent's hook is that agent still: `kenning.slash`
    takes its `/remember` as a proposal.)"""
    spec = agents.AGENTS.get(agent)
    if spec is None:
        return None
    own = {*spec.env_markers, *spec.tool_only_env}
    named = (env.get("KEN_AGENT") or "").strip().lower()
    others = [
        v
        for v in agents.shell_marks(spec, env)
        if v not in own and not (v == "KEN_AGENT" and named == agent)
    ]
    if not others or agent_process(agent, chain) is not None:
        return None
    return (
        f"run from another agent's shell ({', '.join(others)} set) with no {agent} process "
        "above it: a hook run by hand? not recorded"
    )


ZOMBIE_STATES = {"Z", "X"}  # exited and not reaped yet; being reaped


def _alive(pid: int | None) -> bool:
    """Whether the process runs. A zombie does not: it exited and waits for its parent to
    reap it, which may never come (Gemini CLI's node child, killed, in a container whose
    PID 1 reaps nothing) while a signal still finds its pid. Where there is no /proc, the
    signal alone decides."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    found = _stat(pid)
    return found is None or found[1][0] not in ZOMBIE_STATES


def _alive_once(seen: dict[int, bool], pid: int) -> bool:
    if pid not in seen:
        seen[pid] = _alive(pid)
    return seen[pid]


def _git(cwd: str, *args: str) -> git.Output:
    out = git.call(*args, cwd=cwd)  # only at session start and end, not on every prompt
    return out if out.text is None else git.Output(out.text.strip())


def close_stale(
    store: Store,
    agent: str,
    cwd: str,
    keep: str | None,
    idle_hours: float,
    source: str = "startup",
    pid: int | None = None,
    on_close: Callable[[Session], None] | None = None,
) -> list[str]:
    """Close sessions replaced by `/clear` here, whose agent exited, or idle too long;
    `on_close` gets each one closed (to leave its handoff, as SessionEnd would).

    `/clear` replaces the session of the same agent process (`pid`), when both are
    known: another window of that agent in the same folder keeps its session.
    """
    closed = []
    cutoff = (datetime.now(UTC) - timedelta(hours=idle_hours)).strftime("%Y-%m-%dT%H:%M:%S")
    # Each process looked at once: the sessions of one agent process (a long-lived one
    # hosts many) share its pid, and this runs on every hook.
    alive: dict[int, bool] = {}
    for session, last_seen in store.open_sessions():
        if session.id == keep:
            continue
        same_process = not (pid and session.pid) or session.pid == pid
        if source == "clear" and session.agent == agent and session.cwd == cwd and same_process:
            reason = "replaced"
        elif session.pid and not _alive_once(alive, session.pid):
            reason = "agent exited"
        elif last_seen < cutoff:
            reason = "idle"
        else:
            continue
        ended = finish(store, session, reason)
        if on_close is not None:
            on_close(ended)
        closed.append(session.id)
    return closed


def start(
    store: Store,
    *,
    agent: str,
    agent_session_id: str | None,
    where: Where,
    model: str | None = None,
    transcript_path: str | None = None,
    source: str = "startup",
    pid: int | None = None,
    idle_hours: float = 12.0,
    continued_from: str | None = None,
    on_close: Callable[[Session], None] | None = None,
    withheld: Container[str] = (),
) -> Session:
    """Open (or, on resume, reopen) the session for this agent run, closing the ones it
    replaces or that were left open (see close_stale).

    A session belongs to the place it works in. An agent's session that goes on in
    another place (`same_place`: another repo, or a `withheld` one inside the plain
    folder it began in) is a new session there, continued from the one before, which is
    closed ("moved") with its handoff where it was: what is done in the new place, its
    prompts and its handoff, is that place's, under its switches, and never shows in the
    old place's packs. A session whose repo changed its key (`rekeyed`) goes on under
    the new one."""
    model = _redacted(model) if model else model  # what the agent says it is, stored
    existing = store.find_session(agent, agent_session_id) if agent_session_id else None
    if existing and not same_place(existing, where, withheld):
        if existing.ended_at is None:
            ended = finish(store, existing, "moved")
            if on_close is not None:
                on_close(ended)
        model = model or existing.model
        transcript_path = transcript_path or existing.transcript_path
        continued_from = existing.id
        existing = None
    if existing and rekeyed(existing, where):
        existing = replace(existing, repo=where.repo, workstream=where.workstream)
    if existing:
        session = replace(
            existing,
            model=model or existing.model,
            transcript_path=transcript_path or existing.transcript_path,
            pid=pid or existing.pid,
            ended_at=None,
            end_reason=None,
            # Resumed after it ended: its commits so far are kept, and those made while it
            # was away (another agent's) are not its own, so its next end counts from here.
            # A session still open (a compaction, a second start) counts from its start.
            start_commit=(
                (where.git.head if where.git else None) or existing.start_commit
                if existing.ended_at
                else existing.start_commit
            ),
        )
    else:
        session = Session(
            id=ids.new_ulid(),
            agent=agent,
            agent_session_id=agent_session_id,
            model=model,
            transcript_path=transcript_path,
            repo=where.repo,
            cwd=where.cwd,
            workspace=where.workspace,
            workstream=where.workstream,
            project=where.project,
            started_at=now_iso(),
            start_commit=where.git.head if where.git else None,
            pid=pid,
            continued_from=continued_from,
        )
    scopes = [str(s) for s in where.scopes]
    session = store.upsert_session(session, scopes)
    close_stale(store, agent, where.cwd, session.id, idle_hours, source, pid, on_close)
    return session


def note_model(store: Store, session: Session, wait: float = 0.0) -> Session:
    """Fill in the model from the transcript when the agent's hooks did not say it;
    `wait`: seconds to look again while the transcript does not say it yet."""
    if session.model:
        return session
    import time

    from kenning import transcripts

    deadline = time.monotonic() + wait
    while True:
        model = transcripts.last_model(
            session.agent, session.transcript_path, session.agent_session_id
        )
        if model is not None or not session.transcript_path or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if model is None:
        return session
    model = _redacted(model)  # text from a transcript, stored
    store.update_session(session.id, SessionUpdate(model=model))
    return replace(session, model=model)


def _head(cwd: str) -> str | None:
    found = find_git(cwd)
    return found.head if found is not None else None


def finish(store: Store, session: Session, reason: str | None = None) -> Session:
    """Close a session: its end, the commits made since it started (or was last
    resumed: what it made before stays), the diff left."""
    commits: tuple[str, ...] = session.commits
    diff = session.diff_stat
    if reason:  # an agent's word ("exit", "logout"), but the payload may say anything
        reason = " ".join(_redacted(reason).split())[:MAX_REASON_CHARS]
    if session.cwd and os.path.isdir(paths.os_path(session.cwd)):
        unknown = []
        if session.start_commit and _head(session.cwd) != session.start_commit:
            # (the same head: none since, as read from .git, a git process less)
            log = _git(session.cwd, "rev-list", "--reverse", f"{session.start_commit}..HEAD")
            if log.text is not None:
                made = (line for line in log.text.splitlines() if line)
                commits = tuple(dict.fromkeys((*session.commits, *made)))
            elif not log.ran:
                unknown.append("commits")
        stat = _git(session.cwd, "diff", "HEAD", "--shortstat")
        if stat.text is not None:
            diff = stat.text or None
        elif not stat.ran:
            # Git could not be run (not on the agent's PATH): the record says the change
            # is unknown, and why, rather than nothing, which reads as none.
            diff = stat.unknown(" and ".join([*unknown, "changes"]))
    ended = replace(session, ended_at=now_iso(), end_reason=reason, commits=commits, diff_stat=diff)
    store.update_session(
        session.id,
        SessionUpdate(ended_at=ended.ended_at, end_reason=reason, commits=commits, diff_stat=diff),
    )
    return ended


def resolve_all(store: Store, ref: str, hidden: Container[str] = ()) -> list[Session]:
    """The sessions `ref` names, oldest first: one, by its id or a unique start or end of
    it; or every session of one agent's own session id, which went on in several places
    (`start`: a session there, continued from the one before). None that ran in a repo
    of `hidden` (`deliver = false`, read in an agent's shell): such a session is named as
    no session is, and an ambiguous ref does not list it."""
    from kenning.errors import AmbiguousId, InvalidInput, NotFound

    if not ref.strip():
        raise InvalidInput(
            "give a session: 4 to 26 characters of its id (the last 6 are shown), "
            "or its agent's own session id"
        )
    found = store.find_session_ids(ids.normalize_ref(ref)) or store.find_session_ids(ref)
    if hidden:
        found = [s for s in found if store.get_session(s).repo not in hidden]
    if not found:
        short = (
            " (give 4 to 26 characters of its id, or its agent's own session id)"
            if len(ref.strip()) < ids.MIN_REF_LEN
            else ""
        )
        raise NotFound(f"no session matches '{ref}'{short}; `ken sessions --all` lists them")
    named = [store.get_session(s) for s in found]
    if len(named) == 1:
        return named
    if (
        len({(s.agent, s.agent_session_id) for s in named}) == 1
        and named[0].agent_session_id == ref
    ):
        return sorted(named, key=lambda s: (s.started_at, s.id))
    # An agent's own id is given whole: more characters of it name nothing more.
    by_agent = any(s.agent_session_id == ref for s in named)
    raise AmbiguousId(
        ref,
        [
            f"{short_id(s.id)} ({s.agent}, {s.id})" if by_agent else f"{short_id(s.id)} ({s.id})"
            for s in named
        ],
        "sessions",
        "name one by its kenning id (ken sessions --all)" if by_agent else "give more characters",
    )


def resolve(store: Store, ref: str) -> Session:
    """A session by its id, a unique start or end of it, or the agent's own session id;
    of an agent session that went on in several places, the newest (`resolve_all`)."""
    return resolve_all(store, ref)[-1]
