"""Which handoff to show first: one rule for every face that shows handoffs.

A session may leave two kinds of handoff. Its agent's own (`memory_handoff`: done,
state, next, open questions) goes to the workstream it runs in (which may be a branch
it checked out mid-session), its project's `log.md`, or on a detached HEAD outside a
project its session scope; an entry someone writes into `log.md` by hand, headed
`YYYY-MM-DD HH:MM AGENT: title` within the session's time, counts as the agent's own
too. The automatic one SessionEnd writes (or the next start, for a session left
without one) holds its prompts, commits and the change left, in the workstream the
session began in (else its project, else its repo).

The agent's own wins: it stands in for its session's automatic handoff, which is then
a fallback: a pack leaves it out, and `ken handoff` gives it as a one-line pointer
after the agent's own. Between sessions, the handoffs of the session active last come
first (as `ken handoff` continues the session active last): a later session's
automatic handoff is where the work stands now, and comes before an earlier session's
own. A session's handoffs count from its end once it ended (a log.md entry edited
later is no newer), from when they were written while it runs; a handoff no session
left (one a person wrote) from when it was written.

`to_show` orders the handoffs a pack gathers, `left_by` the handoffs of one session,
for `ken handoff`; both go by this rule, so the pack (`ken pack`, the SessionStart
hooks, MCP `memory_context`) and `ken handoff` ("Continuing from", "Since your last
turn") agree on which comes first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kenning.errors import NotFound
from kenning.model import Item, Kind, ScopeType, Session
from kenning.store import ItemQuery, Store

_LOG_HEADING = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) (\S+): ")
READ_PER_SESSION = 50  # handoffs of one session read (a resumed one keeps one automatic)
READ_LOG = 200  # log.md entries read to find a session's


def last_active(session: Session) -> str:
    """When a session was last active: its end, else its start (a resumed session keeps
    its start and ends anew)."""
    return max(session.started_at, session.ended_at or "")


def heading_agent(title: str) -> str | None:
    """The agent a log.md entry's heading names, when it is headed as memory_handoff
    heads one (`YYYY-MM-DD HH:MM AGENT: title`)."""
    match = _LOG_HEADING.match(title)
    return match.group(2) if match else None


def written_in(item: Item, session: Session) -> bool:
    """Whether a project's log.md entry is this session's: headed (as memory_handoff
    writes it) with the session's agent and a time within the session."""
    return headed_in(item.title, session)


def headed_in(title: str, session: Session) -> bool:
    """Whether a log.md heading names `session`'s agent and a time within it."""
    match = _LOG_HEADING.match(title)
    if not match or match.group(2) != session.agent:
        return False
    start = session.started_at[:16].replace("T", " ")
    end = (session.ended_at or "9999")[:16].replace("T", " ")
    return start <= match.group(1) <= end


def left_in(item: Item, session: Session) -> bool:
    """Whether `item` is a handoff `session` left: its automatic one, its agent's own,
    or an entry of its project's log.md headed as its (`written_in`)."""
    if item.kind is not Kind.HANDOFF:
        return False
    if item.provenance.session == session.id:
        return True
    log = f"project:{session.project}:log.md#"
    in_log = bool(session.project) and (item.source or "").startswith(log)
    return in_log and written_in(item, session)


def written_at(item: Item) -> str:
    """When a handoff was left: an automatic one at its session's last end (a resumed
    session brings it up to date), any other when written (an older log.md entry
    edited in place is no newer for it)."""
    return item.updated_at if item.automatic_handoff else item.created_at


def _newest_first(found: Sequence[Item]) -> list[Item]:
    return sorted(found, key=lambda i: (written_at(i), i.id), reverse=True)


def left_by(store: Store, session: Session, log: Sequence[Item] | None = None) -> list[Item]:
    """The handoffs a session left: its agent's own (wherever it went) first, newest
    first; then the automatic one of its end. `log`: its project's log.md entries, when
    read already."""
    found = {
        i.id: i
        for i in store.list_items(
            ItemQuery(kinds=("handoff",), session_id=session.id, limit=READ_PER_SESSION)
        )
    }
    if session.project:
        entries = log if log is not None else log_entries(store, session.project)
        found.update((i.id, i) for i in entries if written_in(i, session))
    newest = _newest_first(list(found.values()))
    own = [i for i in newest if not i.automatic_handoff]
    return own + [i for i in newest if i.automatic_handoff]


def log_entries(store: Store, project: str) -> list[Item]:
    """A project's log.md entries (its handoffs), newest first."""
    log = f"project:{project}:log.md#"
    return store.list_items(
        ItemQuery(kinds=("handoff",), source_prefix=log, recent_first=True, limit=READ_LOG)
    )


def to_show(
    store: Store,
    found: Sequence[Item],
    *,
    scopes: Sequence[str] | None = None,
    keep: Callable[[Item], bool] | None = None,
    most: int | None = None,
) -> list[Item]:
    """The handoffs in `found` to show, the first to show first: each session's
    automatic handoff replaced by its agent's own, the session active last first.

    An agent's own handoff that is not in `found` stands in for its automatic one too
    (it went to a branch the agent checked out, or to its session scope on a detached
    HEAD), when it lies in `scopes` (None: anywhere) or in the same repo, and `keep`
    keeps it; one `keep` leaves out (already told) still replaces it.

    With `most`, only the first `most` are sure to be in their places: the sessions of
    the rest, written before them, are not looked up (a pack is made at every start).
    """
    sessions: dict[str, Session | None] = {}
    logs: dict[str, list[Item]] = {}

    def session_of(session_id: str | None) -> Session | None:
        if not session_id:
            return None
        if session_id not in sessions:
            try:
                sessions[session_id] = store.get_session(session_id)
            except NotFound:  # not in this store (imported from another), or forgotten
                sessions[session_id] = None
        return sessions[session_id]

    def own_of(session: Session) -> list[Item]:
        log = None
        if session.project:
            if session.project not in logs:
                logs[session.project] = log_entries(store, session.project)
            log = logs[session.project]
        return [i for i in left_by(store, session, log) if not i.automatic_handoff]

    newest = _newest_first(found)
    shown = {i.id: i for i in newest}
    owner: dict[str, Session] = {}  # the session of each own handoff looked at
    settled = 0
    for item in newest:
        if most is not None and settled >= most:
            break
        if item.id not in shown:
            continue
        settled += 1
        session = session_of(item.provenance.session)
        if session is None:
            continue
        if not item.automatic_handoff:
            owner.setdefault(item.id, session)
            continue
        own = own_of(session)
        for mine in own:
            owner.setdefault(mine.id, session)
        standing = [i for i in own if i.id in shown or _may_pull(i, item, scopes)]
        if not standing:
            continue
        del shown[item.id]
        settled -= 1
        if standing[0].id not in shown and (keep is None or keep(standing[0])):
            shown[standing[0].id] = standing[0]
            settled += 1

    def when(item: Item) -> tuple[str, str, str]:
        # An ended session's own handoff counts from its end, as its automatic one does
        # (a log.md entry whose heading is edited is read anew, but is no newer).
        session = owner.get(item.id)
        at = last_active(session) if session is not None and session.ended_at else ""
        return (at or written_at(item), written_at(item), item.id)

    return sorted(shown.values(), key=when, reverse=True)


def _may_pull(own: Item, automatic: Item, scopes: Sequence[str] | None) -> bool:
    """Whether a session's own handoff found outside the scopes read may stand in for
    its automatic one there: anywhere when no scopes are given, else only within them, or
    within the repo the automatic one was read in (its branch or the repo itself, so the
    repo's memory may be given here): a branch of it, or the session's scope there."""
    if scopes is None or str(own.scope) in scopes:
        return True
    if automatic.scope.type not in (ScopeType.WORKSTREAM, ScopeType.REPO):
        return False
    repo = automatic.provenance.repo
    return bool(repo) and own.provenance.repo == repo and own.scope.type in _IN_A_REPO


_IN_A_REPO = (ScopeType.WORKSTREAM, ScopeType.SESSION, ScopeType.REPO)
