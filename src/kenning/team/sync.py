"""Sync with the team server: push what this host shares, pull approved team memory.

**Pull.** The server's approved memories arrive as pages of changes after a cursor
(docs/reference/team-api.md). Each becomes a local copy: active, in the scope it has on
the server, `provenance.how = sync`, and `source = team:<workspace>#<server id>`, which
marks it read-only here (`policy.check_local_change`) and keeps curation and the cap off
it; packs and recall read it like any repo memory. A removal deletes the copy. A memory
this host pushed itself is not copied back: its original here is adopted as the team's
copy, in its own scope and with its own pin (the team's scope is in the push record),
and is the person's own again when the team drops it, or the host leaves.

**Push.** What a person approved here in a scope the team covers (a repo the server lists
under `GET repos`, or `workspace:<W>`), of the kinds worth sharing beyond this machine
(not tasks, handoffs or summaries), and what the person chose with `ken team share ID`.
Each version is pushed once: an entry gets its `push_id` and goes into the outbox on
disk *before* it is sent, so a push that timed out is sent again with the same id and
the server stores it once. A later version of a pushed memory goes as a `revision` of
the server's copy when its words changed (`WORDS`: a pin or a use is no change to send;
the push record keeps a digest of the words sent). `ken edit` of a team memory files a
revision the same way.

**Uses.** After the push, the host reports how often it used each team memory: for
each copy whose local use count (`Store.record_uses`, from packs and recall) grew since
the last report, its count as it is now, a running total of this host's uses and not
the increase. An adopted original (below) counts from its adoption: the push record
keeps its use count then (`uses_from`), and only what came after is the team's. The
server keeps one count per (token, host, memory) and never lowers it, so a report that
timed out and is sent again, or arrives twice, counts once: that is exactly-once
without a receipt per report. The state keeps the count last reported
per server id, so a sync sends only what grew.

**State** is a JSON file beside the hook log, `$XDG_STATE_HOME/kenning/team-sync.json`
(`kenning.team.state`), one section per store (the cursor, what was pushed, the outbox,
the shared items, the covered repos last seen, the use counts last reported). Leaving a
team keeps only what was pushed to it, per server and workspace: joining the same team
again sends none of it twice. `ken forget` takes a forgotten memory out of the outbox,
so it is never sent. One sync at a time holds its lock; the SessionStart hook does not
wait for it (another sync is running, so it skips).

The standard library only, like the client: the SessionStart hook runs `at_start`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from kenning import config as config_mod
from kenning import ids, items, policy
from kenning.errors import InvalidInput, NotFound
from kenning.ids import short_id
from kenning.model import (
    KINDS,
    Item,
    Kind,
    Link,
    Provenance,
    Scope,
    ScopeType,
    Status,
)
from kenning.store import ItemQuery, Store, now_iso
from kenning.team.client import Client, Membership, TeamError, load_membership
from kenning.team.client import membership as required_membership

# Re-exported: `ken team` and the tests read the state through the sync.
from kenning.team.state import Busy as Busy
from kenning.team.state import load_state as load_state
from kenning.team.state import locked as locked
from kenning.team.state import save_state as save_state

PAGE = 500  # the contract's most entries a push, and the pull page asked for
REPOS_MAX_AGE = 3600  # seconds SessionStart trusts the covered repos it last asked for
START_TIMEOUT = 1.5  # seconds SessionStart gives the whole sync (team.start_timeout_secs)
# Kinds pushed: what `ken promote` would write into a steering repo, the same notion of
# memory worth keeping beyond this machine (not tasks, handoffs or summaries).
SHARED_KINDS = tuple(k.value for k, spec in KINDS.items() if spec.promotable)


@dataclass
class Report:
    """What one sync did."""

    pulled: int = 0
    removed: int = 0
    own: int = 0  # pulled changes to memories this host pushed (not copied back)
    skipped: list[str] = field(default_factory=list)  # pulled entries refused here
    pushed: int = 0
    duplicates: int = 0
    refused: list[dict[str, str]] = field(default_factory=list)
    waiting: int = 0  # entries still in the outbox (not answered)
    uses: int = 0  # team memories whose grown use count was reported
    more: bool = False  # the pull stopped with more to come (out of time)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pulled": self.pulled,
            "removed": self.removed,
            "own": self.own,
            "skipped": self.skipped,
            "pushed": self.pushed,
            "duplicates": self.duplicates,
            "refused": self.refused,
            "waiting": self.waiting,
            "uses": self.uses,
            "more": self.more,
            "error": self.error,
        }


# --- what to push ---------------------------------------------------------------------


def covered_scopes(membership: Membership, repos: list[str]) -> list[Scope]:
    """The scopes the team covers: its repos and its workspace."""
    found = [Scope.of(ScopeType.WORKSPACE, membership.workspace)]
    for repo in repos:
        with contextlib.suppress(ValueError):
            found.append(Scope.of(ScopeType.REPO, repo))
    return found


def approved_here(item: Item) -> bool:
    """A memory a person made or approved here (not a copy, not an agent's unreviewed
    note, not a file's memory that the file keeps in sync)."""
    return (
        item.status is Status.ACTIVE
        and not item.source
        and item.kind.value in SHARED_KINDS
        and (item.provenance.who in policy.PEOPLE or item.reviewed_at is not None)
    )


def wire_item(item: Item, scope: Scope | None = None) -> dict[str, Any]:
    """A memory as it goes on the wire: its JSON form, in the scope it is shared to."""
    data = item.to_dict()
    data.pop("short_id", None)
    if scope is not None:
        data["scope"] = str(scope)
    return data


# What the team reads of a memory: a version that changes none of it (a pin, a use, a
# review here) is not sent again.
WORDS = ("title", "body", "kind", "tags", "links", "evidence", "scope")


def words_of(data: dict[str, Any]) -> str:
    """A digest of what a wire item says (`WORDS`), kept in the push record."""
    said = json.dumps([data.get(k) for k in WORDS], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(said.encode("utf-8")).hexdigest()


def entry_for(item: Item, state: dict[str, Any], what: str, scope: Scope) -> dict[str, Any]:
    """One push entry for this version of `item`: a revision of the server's copy when
    an earlier version was stored there."""
    before = state["pushed"].get(item.id) or {}
    entry: dict[str, Any] = {
        "push_id": str(uuid.uuid4()),
        "what": what,
        "item": wire_item(item, scope),
        "local_id": item.id,
        "revision": item.revision,
    }
    if before.get("server_id") and before.get("status") != "refused":
        entry["what"] = "revision"
        entry["base"] = before["server_id"]
    return entry


def choose_pushes(
    store: Store,
    membership: Membership,
    state: dict[str, Any],
    withheld: frozenset[str] | set[str] = frozenset(),
) -> list[dict[str, Any]]:
    """New push entries: versions not pushed yet (nor waiting in the outbox) of what a
    person approved in a covered scope, and of what they shared (`ken team share`). The
    memory of a `withheld` repo (deliver = false: no agent is told it, from anywhere) is
    not sent for other hosts' agents unless a person shares it by name."""
    from kenning import deliver

    waiting = {(e.get("local_id"), e.get("revision")) for e in state["outbox"]}

    def fresh(item: Item, scope: Scope) -> bool:
        done = state["pushed"].get(item.id) or {}
        if done.get("revision") == item.revision or (item.id, item.revision) in waiting:
            return False
        # A version whose words are those the server holds (only a pin or a use changed
        # here) is not sent: it would file an admin's rejected memory again.
        return not holds_words(done, item, scope)

    scopes = covered_scopes(membership, state["repos"])
    found = store.list_items(ItemQuery(scopes=tuple(str(s) for s in scopes), kinds=SHARED_KINDS))
    chosen = [
        entry_for(item, state, "memory", item.scope)
        for item in found
        if approved_here(item)
        and fresh(item, item.scope)
        and not deliver.withheld(item, set(withheld))
    ]
    for local_id, shared in state["shared"].items():
        try:
            item = store.get_item(local_id)
        except NotFound:
            continue
        # A team copy is the server's already; a file's or agent's memory a person shared
        # by name goes like any other.
        scope = Scope.from_stored(shared["scope"])
        if (
            policy.team_origin(item)
            or not fresh(item, scope)
            or any(e["local_id"] == item.id for e in chosen)
        ):
            continue
        chosen.append(entry_for(item, state, shared["what"], scope))
    return chosen


def share_what(item: Item) -> str:
    """How a shared item goes: a lesson, a proposal (waiting here), or a memory."""
    if item.kind is Kind.LESSON:
        return "lesson"
    return "proposal" if item.status is Status.PROPOSED else "memory"


def holds_words(record: dict[str, Any], item: Item, scope: Scope) -> bool:
    """Whether the team holds `item`'s words in `scope` as its push `record` says they
    were sent (a pin or a use changed here since: no new version to send)."""
    said = record.get("words")
    return (
        bool(said)
        and record.get("status") != "refused"
        and said == words_of(wire_item(item, scope))
    )


def check_shareable(item: Item) -> None:
    """Refuse, in one line, sharing a memory a sync never pushes: team memory already,
    or a kind that stays on this machine (a task, handoff or summary)."""
    if policy.team_origin(item):
        raise InvalidInput(f"{short_id(item.id)} is team memory already")
    if item.kind.value not in SHARED_KINDS:
        *some, last = SHARED_KINDS
        raise InvalidInput(
            f"{short_id(item.id)} is a {item.kind.value}, which stays on this machine: "
            f"only a {', '.join(some)} or {last} goes to the team"
        )


def share_scope(
    item: Item, membership: Membership, repos: list[str], sent: dict[str, Any] | None = None
) -> Scope:
    """Where a shared item goes on the server: where the team holds it already (`sent`,
    its push record, when the server stored it), else its own scope when the team covers
    it, else the repo it was written in when covered, else the team's workspace."""
    if sent and sent.get("server_id") and sent.get("status") != "refused" and sent.get("scope"):
        return Scope.from_stored(str(sent["scope"]))
    covered = covered_scopes(membership, repos)
    if item.scope in covered:
        return item.scope
    if item.provenance.repo:
        with contextlib.suppress(ValueError):
            repo = Scope.of(ScopeType.REPO, item.provenance.repo)
            if repo in covered:
                return repo
    return covered[0]


# --- sending --------------------------------------------------------------------------


def send_outbox(
    client: Client, membership: Membership, state: dict[str, Any], save: Any, report: Report
) -> None:
    """Send what waits in the outbox, a page at a time, and record each answer."""
    while state["outbox"]:  # out of time, the push raises Unreachable: they stay queued
        page = state["outbox"][:PAGE]
        wire = [{k: v for k, v in e.items() if k not in ("local_id", "revision")} for e in page]
        results = client.push(membership.host, wire)
        by_id = {r.get("push_id"): r for r in results}
        answered = set()
        for entry in page:
            result = by_id.get(entry["push_id"])
            if result is None:
                continue  # not answered: it stays in the outbox, with its id
            answered.add(entry["push_id"])
            status = str(result.get("status") or "")
            record = {
                "revision": entry.get("revision"),
                "push_id": entry["push_id"],
                "server_id": result.get("id"),
                "status": result.get("item_status") or status,
                "scope": (entry.get("item") or {}).get("scope"),
                "words": words_of(entry.get("item") or {}),
            }
            if status == "refused":
                record["status"] = "refused"
                record["reason"] = str(result.get("reason") or "")
                report.refused.append(
                    {"id": str(entry.get("local_id")), "reason": record["reason"]}
                )
            elif status == "duplicate":
                report.duplicates += 1
            else:
                report.pushed += 1
            if entry.get("local_id"):
                before = state["pushed"].get(entry["local_id"]) or {}
                if status == "refused" and before.get("server_id"):
                    record["server_id"] = before["server_id"]  # the revision was refused
                state["pushed"][entry["local_id"]] = record
        state["outbox"] = [e for e in state["outbox"] if e["push_id"] not in answered]
        save(state)
        if not answered:
            break


def report_uses(
    store: Store,
    client: Client,
    membership: Membership,
    state: dict[str, Any],
    save: Any,
    report: Report,
) -> None:
    """Report the use counts of the team copies that grew since the last report (each
    a running total: the server keeps the greatest, so a resend counts once)."""
    sent: dict[str, int] = state["uses"]
    here: dict[str, int] = {}
    for copy in copies(store, membership.workspace):
        origin = policy.team_origin(copy)
        if origin is None:
            continue
        # An adopted original counts from its adoption: the uses before were of the
        # person's own memory, not of the team's.
        since = int((state["pushed"].get(copy.id) or {}).get("uses_from") or 0)
        count = max(0, copy.use_count - since) if is_authors(state, copy) else copy.use_count
        here[origin[1]] = max(count, here.get(origin[1], 0))
    for gone in [k for k in sent if k not in here]:
        del sent[gone]  # the copy went; the server keeps the count it had
    grown = [(k, n) for k, n in here.items() if n > int(sent.get(k) or 0)]
    for start in range(0, len(grown), PAGE):
        page = dict(grown[start : start + PAGE])
        client.report_uses(membership.host, page)
        sent.update(page)  # ids the server no longer holds too: nothing to resend
        report.uses += len(page)
        save(state)


# --- pulling --------------------------------------------------------------------------


def copy_source(workspace: str, server_id: str) -> str:
    return f"{policy.TEAM_SOURCE}{workspace}#{server_id}"


def find_copy(store: Store, workspace: str, server_id: str) -> Item | None:
    source = copy_source(workspace, server_id)
    found = store.list_items(
        ItemQuery(statuses=(), include_expired=True, source_prefix=source, limit=10)
    )
    return next((i for i in found if i.source == source), None)


def copies(store: Store, workspace: str | None = None) -> list[Item]:
    """Every local copy of team memory (of one workspace, when given)."""
    prefix = policy.TEAM_SOURCE + (f"{workspace}#" if workspace else "")
    return store.list_items(ItemQuery(statuses=(), include_expired=True, source_prefix=prefix))


def local_copy(data: dict[str, Any], membership: Membership, existing: Item | None) -> Item:
    """The local copy of a server memory; InvalidInput when it cannot be stored here."""
    server_id = str(data.get("id") or "")
    try:
        scope = Scope.parse(str(data.get("scope") or ""), to_find=True)  # as the server has it
        kind = Kind(str(data.get("kind") or "note"))
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    origin = data.get("origin") if isinstance(data.get("origin"), dict) else {}
    given = data.get("provenance") if isinstance(data.get("provenance"), dict) else {}
    provenance = replace(
        Provenance.from_dict(given or {}),
        how="sync",
        host=str((origin or {}).get("host") or (given or {}).get("host") or "") or None,
    )
    links = []
    for text in data.get("links") or []:
        with contextlib.suppress(ValueError):
            links.append(Link.parse(str(text)))
    now = now_iso()
    copy = Item(
        id=existing.id if existing else ids.new_ulid(),
        title=str(data.get("title") or ""),
        body=str(data.get("body") or ""),
        kind=kind,
        scope=scope,
        status=Status.ACTIVE,
        pinned=bool(data.get("pinned")),
        tags=tuple(str(t) for t in data.get("tags") or []),
        links=tuple(links),
        evidence=str(data.get("evidence") or ""),
        provenance=provenance,
        created_at=str(data.get("created_at") or now),
        updated_at=now,
        # An admin approved it: it is no agent's unreviewed word here.
        reviewed_at=str(data.get("reviewed_at") or data.get("updated_at") or now),
        expires_at=None,
        use_count=existing.use_count if existing else 0,
        last_used_at=existing.last_used_at if existing else None,
        revision=ids.new_ulid(),
        source=copy_source(membership.workspace, server_id),
    )
    if not copy.title.strip():
        raise InvalidInput(f"team memory {server_id} has no text")
    return items.clean_copy(copy)


def _same(a: Item, b: Item) -> bool:
    keep = ("id", "revision", "updated_at", "reviewed_at", "use_count", "last_used_at")
    return replace(a, **{k: getattr(b, k) for k in keep}) == b


def own_original(
    store: Store, membership: Membership, state: dict[str, Any], data: dict[str, Any]
) -> Item | None:
    """The memory here that a pulled one was pushed from, when this host pushed it."""
    server_id = str(data.get("id") or "")
    local_ids = [k for k, r in state["pushed"].items() if r.get("server_id") == server_id]
    origin = data.get("origin") if isinstance(data.get("origin"), dict) else {}
    same_token = not membership.token_id or (origin or {}).get("token_id") == membership.token_id
    if origin and origin.get("local_id") and same_token:
        local_ids.append(str(origin["local_id"]))
    for local_id in local_ids:
        try:
            here = store.get_item(local_id)
        except NotFound:
            continue
        if not here.source:
            return here
    return None


def is_authors(state: dict[str, Any], copy: Item) -> bool:
    """Whether a team memory here is the original this host pushed (adopted, below)."""
    origin = policy.team_origin(copy)
    record = state["pushed"].get(copy.id) or {}
    return origin is not None and record.get("server_id") == origin[1]


def own_again(store: Store, state: dict[str, Any], copy: Item) -> None:
    """An adopted original the team no longer holds goes back to being the person's
    own memory here (not deleted, and not pushed again for that)."""
    mine = store.replace_item(
        replace(copy, source=None, updated_at=now_iso(), revision=ids.new_ulid()), "unsync"
    )
    state["pushed"][copy.id] = {**state["pushed"][copy.id], "revision": mine.revision}


def apply_changes(
    store: Store,
    membership: Membership,
    state: dict[str, Any],
    changes: list[dict[str, Any]],
    report: Report,
) -> None:
    """Apply one pull page to the store: its new and changed copies in one transaction,
    then its removals (a delete wipes the text off the disk, outside any transaction).

    A memory this host pushed comes down approved as the original it was pushed from:
    that original is adopted (it becomes the team's copy, read-only here, and follows
    the team's later revisions) rather than copied beside it. It keeps its own scope
    and pin here, which may not be the team's (a global preference shared to a repo is
    still global on this host); only its words follow the team. When the team drops
    it, it is the person's own memory again, as it was."""
    removed: list[str] = []
    with store.together():
        for change in changes:
            server_id = str(change.get("id") or "")
            if not server_id:
                continue
            existing = find_copy(store, membership.workspace, server_id)
            data = change.get("item")
            if change.get("change") == "remove" or not isinstance(data, dict):
                if existing is not None and is_authors(state, existing):
                    own_again(store, state, existing)
                    report.removed += 1
                elif existing is not None:
                    removed.append(existing.id)
                continue
            adopted = False
            if existing is None:
                existing = own_original(store, membership, state, {**data, "id": server_id})
                adopted = existing is not None
            try:
                copy = local_copy({**data, "id": server_id}, membership, existing)
            except InvalidInput as exc:
                report.skipped.append(f"{server_id}: {exc}")
                continue
            if adopted or (existing is not None and is_authors(state, existing)):
                # The person's original: the team's words, its own scope and pin here
                # (the scope it has on the server is the push record's `scope`).
                assert existing is not None
                copy = replace(
                    copy,
                    scope=existing.scope,
                    pinned=existing.pinned,
                    created_at=existing.created_at,
                )
            if adopted:
                assert existing is not None
                store.replace_item(copy, "sync")
                record = state["pushed"].setdefault(existing.id, {})
                # Its uses until now were the person's own: the team's count starts here.
                record.update(
                    server_id=server_id,
                    revision=copy.revision,
                    status="active",
                    uses_from=existing.use_count,
                    # where the team holds it, which its later edits go to: a record
                    # started again (the state file was lost) has no scope of its own
                    scope=str(data.get("scope") or record.get("scope") or "") or None,
                )
                report.own += 1
                continue
            if existing is None:
                store.insert_item(copy, "sync")
            elif not _same(existing, copy):
                store.replace_item(copy, "sync")
            else:
                continue
            report.pulled += 1
    if removed:
        report.removed += store.delete_items(removed)


def pull(
    store: Store,
    client: Client,
    membership: Membership,
    state: dict[str, Any],
    save: Any,
    report: Report,
) -> None:
    """Pull pages until none is left or the time is up; the cursor is saved after each."""
    while True:
        page = client.pull(state["cursor"], PAGE)
        changes = [c for c in page.get("changes") or [] if isinstance(c, dict)]
        apply_changes(store, membership, state, changes, report)
        state["cursor"] = str(page.get("cursor") or state["cursor"])
        save(state)
        report.more = bool(page.get("more"))
        if not report.more or client.left() <= 0:
            return


# --- one sync ---------------------------------------------------------------------------


def sync(
    store: Store,
    membership: Membership | None = None,
    *,
    timeout: float = 15.0,
    do_pull: bool = True,
    do_push: bool = True,
    wait: bool = True,
    refresh_repos: bool = True,
    from_start: bool = False,
) -> Report:
    """Pull, then push, within `timeout` seconds in all. A server that cannot be reached
    (or runs out the time) is the report's `error`; what was done before stays done, and
    what is to be pushed is queued in the outbox all the same.
    `from_start` pulls everything again (after the server was restored from a backup,
    the cursor may point past what it holds); the copies are updated in place."""
    member = membership or required_membership()
    report = Report()
    client = Client.of(member, timeout)
    with locked(wait):
        state = load_state(store.path)
        # Joined again after leaving this team: what was pushed to it then is known again.
        state["pushed"] = {**state["left"].pop(team_key(member), {}), **state["pushed"]}
        if from_start:
            state["cursor"] = ""

        def save(section: dict[str, Any]) -> None:
            save_state(store.path, section)

        try:
            if do_pull:
                pull(store, client, member, state, save, report)
            stale = time.time() - float(state.get("repos_at") or 0) > REPOS_MAX_AGE
            if do_push and (refresh_repos or stale or not state["repos"]):
                state["repos"] = client.repos()
                state["repos_at"] = time.time()
        except TeamError as exc:
            report.error = str(exc)
        if do_push:
            # Queued even when the server is away (chosen by the covered repos last seen):
            # it waits in the outbox, counted, until a sync reaches the server.
            withheld = config_mod.Config().repos_not_delivered()
            fresh = choose_pushes(store, member, state, withheld)
            if fresh:
                state["outbox"].extend(fresh)
                save(state)  # on disk before it is sent: a retry reuses the ids
            try:
                if report.error is None:
                    send_outbox(client, member, state, save, report)
                    report_uses(store, client, member, state, save, report)
            except TeamError as exc:
                report.error = str(exc)
        state["last_sync"] = now_iso()
        state["last_error"] = report.error
        report.waiting = len(state["outbox"])
        save(state)
    return report


def share(store: Store, item: Item, scope: Scope, what: str) -> None:
    """Mark `item` shared with the team in `scope`; the next sync pushes it. A version
    the server refused goes again (to the scope chosen now); one it stored keeps the
    scope it went to (InvalidInput for another)."""
    with locked():
        state = load_state(store.path)
        sent = state["pushed"].get(item.id) or {}
        if sent.get("status") == "refused":
            state["pushed"][item.id] = {**sent, "revision": None}  # fresh again
        elif sent.get("server_id") and sent.get("scope") not in (None, str(scope)):
            raise InvalidInput(
                f"{short_id(item.id)} went to the team in {sent['scope']} already, and a "
                "team memory keeps its scope"
            )
        state["shared"][item.id] = {"scope": str(scope), "what": what}
        save_state(store.path, state)


def tally(state: dict[str, Any]) -> dict[str, int]:
    """What this store's sync state counts: versions the server stored (pushed) or
    refused, entries waiting in the outbox, and memories shared and not refused."""
    refused = {k for k, r in state["pushed"].items() if r.get("status") == "refused"}
    return {
        "pushed": len(state["pushed"]) - len(refused),
        "refused": len(refused),
        "waiting": len(state["outbox"]),
        "shared": len([k for k in state["shared"] if k not in refused]),
    }


def file_revision(store: Store, copy: Item, revised: Item) -> None:
    """Queue a proposed revision of a team memory (the person's edit of its local copy);
    the copy itself stays as the server has it until an admin approves."""
    origin = policy.team_origin(copy)
    if origin is None:
        raise InvalidInput("not a team memory")
    with locked():
        state = load_state(store.path)
        # An adopted original keeps its own scope here: the revision goes in the team's.
        sent = state["pushed"].get(copy.id) or {}
        theirs = sent.get("scope") if is_authors(state, copy) else None
        scope = Scope.from_stored(theirs) if theirs else None
        state["outbox"].append(
            {
                "push_id": str(uuid.uuid4()),
                "what": "revision",
                "base": origin[1],
                "item": wire_item(replace(revised, source=None), scope),
                "revision": revised.revision,
            }
        )
        save_state(store.path, state)


def leave(store: Store, membership: Membership) -> int:
    """Forget this store's sync state and delete the team memory sync brought in; returns
    how many copies went. The host's own memories stay (those it pushed, adopted as the
    team's, are its own again)."""
    with locked():
        state = load_state(store.path)
        found = copies(store, membership.workspace)
        gone = [i for i in found if not is_authors(state, i)]
        for mine in found:
            if is_authors(state, mine):
                own_again(store, state, mine)
        if gone:
            store.delete_items([i.id for i in gone])
        # What was pushed is remembered (and only that), so joining this team again sends
        # none of it twice: the server holds it already.
        left = {**state["left"], team_key(membership): state["pushed"]}
        save_state(store.path, {"left": left})
    return len(gone)


def team_key(membership: Membership) -> str:
    """One team: its server and workspace."""
    return f"{membership.url} {membership.workspace}"


def at_start(store: Store, timeout: float = START_TIMEOUT) -> str | None:
    """SessionStart's sync: at most `timeout` seconds, no waiting on another sync, never
    an error. Returns a line for the hook log when something went wrong (None when it
    went well, or when this host is in no team)."""
    started = time.monotonic()
    try:
        member = load_membership()
        if member is None:
            return None
        report = sync(store, member, timeout=timeout, wait=False, refresh_repos=False)
    except Busy:
        return None
    except Exception as exc:  # noqa: BLE001 - the hook goes on without the sync
        return f"team sync: {type(exc).__name__}: {exc}"
    if report.error:
        spent = time.monotonic() - started
        return f"team sync: {report.error} (gave up after {spent:.1f} s; the pack went without it)"
    return None
