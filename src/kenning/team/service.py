"""What the team server does, apart from HTTP: who may act, push, pull and decide.

The HTTP API and the review page both call `Team`; neither holds a rule of its own.

- **Auth.** A token belongs to one workspace and one role. A request for another
  workspace is refused (`Forbidden`) whatever the role, and a member may not decide.
- **Push.** Each entry is claimed by its `push_id` before it is written (see
  `store.directory`), so a retry stores nothing twice. The text is checked and redacted
  again as a local store would (`items.new_item`: a mostly-secret text is refused); the
  scope must be a repo the workspace covers or the workspace itself. A member's entries
  arrive proposed; an admin's own memories active.
- **Decide.** approve, reject, dismiss (with a reason), restore and forget, each a new
  version of the memory (forget deletes it and its versions), each recorded with who
  decided and why. Approving a *revision* writes its text onto the memory it revises (a
  new version of that memory, which keeps its id); the revision itself is superseded.
  When that memory still waits (proposed), the revision takes its place: it is
  superseded, and the revision is approved as a team memory of its own; so it is when
  that memory is no longer active (dismissed, rejected, archived).
- **Uses.** Each host reports, per team memory it used, its own running count of
  uses; the directory keeps one count per (token, memory) and never lowers it, so a
  report sent twice counts once. A memory's `uses` is the sum, and the hosts. The
  "used N times on H hosts" an admin weighs must not be a member's to make up: a token
  is one host, and a token made to replace it (a rotation) the same host (the report's
  `host` names nothing the count trusts); a use counts only of a memory a pull served
  that token as active (a proposed one never was, nor one withdrawn before the pull
  reached it); and a count is capped at USES_PER_DAY for each day since the memory was
  first served.
- **Pull.** Every change that makes a memory active, changes an active one or takes one
  out of active is appended to the workspace's feed; a pull reads the feed after a
  cursor and answers each memory once, as it is now.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from kenning import ids, items
from kenning.errors import InvalidInput, KenningError, NotFound, RevisionConflict, StoreError
from kenning.ids import short_id
from kenning.model import Item, Link, Provenance, Scope, ScopeType, Status, normalize_name
from kenning.store import ItemQuery, Store, Words, now_iso
from kenning.store.directory import Directory, Token
from kenning.team.stores import Workspaces

MAX_PUSH = 500
MAX_PULL = 1000
MAX_USES = 500  # entries in one uses report
MAX_CHAIN = 50  # revisions of revisions followed back
MAX_COUNT = 2**53  # a use count the JSON of any client still reads exactly
USES_PER_DAY = 1000  # a host's uses of one memory a day, far above what packs and recall make
WHATS = ("memory", "lesson", "proposal", "revision")
ACTIONS = ("approve", "reject", "dismiss", "restore", "forget")
PUSH_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")  # fullmatch: "$" would let a newline end it
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z")


class TeamError(KenningError):
    status = 400
    code = "bad_request"


class Unauthorized(TeamError):
    status = 401
    code = "unauthorized"


class Forbidden(TeamError):
    status = 403
    code = "forbidden"


class Conflict(TeamError):
    status = 409
    code = "conflict"


@dataclass(frozen=True, slots=True)
class Refused(Exception):
    reason: str


class Team:
    """The server's work on its directory and its workspaces' stores."""

    def __init__(self, directory: Directory, workspaces: Workspaces) -> None:
        self.directory = directory
        self.workspaces = workspaces

    # auth

    def authenticate(self, header: str | None) -> Token:
        """The live token of an `Authorization: Bearer …` header."""
        scheme, _, text = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not text.strip():
            raise Unauthorized("send Authorization: Bearer <token> (ken serve token create)")
        token = self.directory.authenticate(text.strip())
        if token is None:
            raise Unauthorized("this token is unknown or revoked: ask an admin for a new one")
        return token

    def token_of(self, text: str) -> Token | None:
        return self.directory.authenticate(text.strip())

    @staticmethod
    def check(token: Token, workspace: str, *, admin: bool = False) -> str:
        """The workspace named in a path, if `token` may act in it (as an admin when
        `admin`); else Forbidden."""
        name = normalize_name(workspace)
        if name != token.workspace:
            raise Forbidden(f"this token belongs to another workspace than '{workspace}'")
        if admin and token.role != "admin":
            raise Forbidden("only an admin's token may decide on team memory")
        return name

    # reading

    def whoami(self, token: Token) -> dict[str, Any]:
        return {
            "workspace": token.workspace,
            "role": token.role,
            "token_id": token.id,
            "name": token.name,
        }

    def repos(self, workspace: str) -> list[str]:
        return self.directory.repos(workspace)

    def wire(self, workspace: str, found: list[Item]) -> list[dict[str, Any]]:
        """Memories as the API sends them: the local JSON form and `origin`."""
        item_ids = [i.id for i in found]
        origins = self.directory.origins(workspace, item_ids) if found else {}
        uses = self.directory.uses(workspace, item_ids) if found else {}
        revises = self._revises(workspace, list(origins.values()))
        out = []
        for item in found:
            data = item.to_dict()
            count, hosts = uses.get(item.id, (0, 0))
            data["uses"] = {"count": count, "hosts": hosts}
            origin = origins.get(item.id)
            data["origin"] = (
                {
                    "host": origin["host"],
                    "token_id": origin["token_id"],
                    "name": origin["name"],
                    "local_id": origin["local_id"],
                    "what": origin["what"],
                    "base": origin["base"],
                    "revises": revises.get(origin["base"] or ""),
                }
                if origin
                else None
            )
            out.append(data)
        return out

    def _revises(self, workspace: str, origins: list[dict[str, Any]]) -> dict[str, Any]:
        """For the review: what each revision revises (id, title, status), and whether
        that memory was rewritten since the revision was sent (`changed`)."""
        bases = {o["base"]: o["base_revision"] for o in origins if o["base"]}
        found: dict[str, Any] = {}
        if not bases:
            return found
        with self.workspaces.store(workspace) as store:
            for base_id, seen in bases.items():
                try:
                    base = store.get_item(base_id)
                except NotFound:
                    continue
                found[base_id] = {
                    "id": base.id,
                    "title": base.title,
                    "status": base.status.value,
                    "changed": _rewritten_since(store, base, seen),
                }
        return found

    def list_items(
        self, workspace: str, status: str | None = None, q: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """The workspace's memories in `status` (any when None), newest first; with `q`,
        those whose text matches it, best first."""
        statuses = (items.parse_status(status).value,) if status else ()
        query = ItemQuery(statuses=statuses, include_expired=True, limit=limit, captured_first=True)
        with self.workspaces.store(workspace) as store:
            if q and q.strip():
                found = [item for item, _ in store.search(Words(typed=q), query)]
            else:
                found = store.list_items(query)
        return self.wire(workspace, found)

    def get_item(self, workspace: str, item_id: str) -> dict[str, Any]:
        """One memory with its versions (oldest first), the decisions made on it, and the
        other memories of the team that say the same."""
        with self.workspaces.store(workspace) as store:
            item = _get(store, item_id)
            history = [rev.to_dict() for rev in store.revisions(item.id)]
            twins = items.same_text(store, item, limit=50)
        data = self.wire(workspace, [item])[0]
        data["history"] = history
        data["decisions"] = self.directory.decisions(workspace, item.id)
        data["same_text"] = [
            {"id": t["id"], "status": t["status"], "origin": t["origin"]}
            for t in self.wire(workspace, twins)
        ]
        return data

    def same_text_counts(self, workspace: str, item_ids: list[str]) -> dict[str, int]:
        """How many other memories of the team say the same as each of these, each sent
        by someone else (another token, or another memory of its host): the same memory
        sent again by its host (a version an admin rejected, then sent again) is no
        one more in the team."""
        twins: dict[str, list[str]] = {}
        with self.workspaces.store(workspace) as store:
            for item_id in item_ids:
                try:
                    found = items.same_text(store, store.get_item(item_id), 50)
                except NotFound:
                    continue
                twins[item_id] = [t.id for t in found]
        every = set(twins) | {t for found in twins.values() for t in found}
        origins = self.directory.origins(workspace, sorted(every)) if every else {}

        def sender(item_id: str) -> tuple[str, str] | None:
            origin = origins.get(item_id) or {}
            if not origin.get("token_id") or not origin.get("local_id"):
                return None
            return (str(origin["token_id"]), str(origin["local_id"]))

        return {
            item_id: len([t for t in found if sender(t) is None or sender(t) != sender(item_id)])
            for item_id, found in twins.items()
        }

    # push

    def push(self, token: Token, workspace: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object with 'host' and 'items'")
        host, entries = body.get("host"), body.get("items")
        if not isinstance(host, str) or not host.strip() or len(host) > 200:
            raise InvalidInput("'host' must be the sending host's name (200 characters at most)")
        if not isinstance(entries, list):
            raise InvalidInput("'items' must be a list of entries")
        if len(entries) > MAX_PUSH:
            raise InvalidInput(f"{len(entries)} entries in one push: send {MAX_PUSH} at most")
        for number, entry in enumerate(entries, 1):
            if not isinstance(entry, dict):
                raise InvalidInput(f"entry {number} is not an object")
            push_id = entry.get("push_id")
            if push_id is None:
                raise InvalidInput(f"entry {number} needs a 'push_id' (a uuid4)")
            if not isinstance(push_id, str) or not PUSH_ID.fullmatch(push_id):
                raise InvalidInput(
                    f"entry {number}'s 'push_id' is not a push id: 1 to 100 letters, "
                    "digits and . _ : - (a uuid4, as ken sends, is one)"
                )
        covered = set(self.directory.repos(workspace))
        results = [self._push_one(token, workspace, host.strip(), e, covered) for e in entries]
        return {"results": results}

    def _push_one(
        self, token: Token, workspace: str, host: str, entry: dict[str, Any], covered: set[str]
    ) -> dict[str, Any]:
        push_id = entry["push_id"]
        claim = self.directory.claim_push(workspace, push_id, token.id, ids.new_ulid())
        if claim.answer is not None:
            return _repeated(claim.answer)
        assert claim.item_id is not None
        what = entry.get("what", "memory")
        try:
            if what not in WHATS:
                raise Refused(f"unknown 'what' {what!r}: use {', '.join(WHATS)}")
            status = (
                Status.ACTIVE if token.role == "admin" and what == "memory" else Status.PROPOSED
            )
            item = _item_from_wire(entry.get("item"), claim.item_id, status, host)
            if status is Status.ACTIVE:  # an admin's own word: reviewed as it arrives
                item = replace(item, reviewed_at=item.updated_at)
            _check_scope(item.scope, workspace, covered)
            base = entry.get("base") if what == "revision" else None
            if what == "revision" and not isinstance(base, str):
                raise Refused("a revision names the team memory it revises in 'base'")
            with self.workspaces.store(workspace) as store:
                base_revision = _get(store, base).revision if base is not None else None
                stored = _insert_once(store, item)
        except (Refused, InvalidInput, NotFound) as exc:
            reason = exc.reason if isinstance(exc, Refused) else str(exc)
            answer = {
                "push_id": push_id,
                "status": "refused",
                "id": None,
                "item_status": None,
                "reason": reason,
            }
            first = self.directory.answer_push(workspace, push_id, answer)
            return answer if first is None else _repeated(first)
        local = entry["item"].get("id")
        answer = {
            "push_id": push_id,
            "status": "stored",
            "id": stored.id,
            "item_status": stored.status.value,
            "reason": None,
        }
        origin = {
            "item_id": stored.id,
            "host": host,
            "token_id": token.id,
            "local_id": local if isinstance(local, str) else None,
            "what": what,
            "base": base,
            "base_revision": base_revision,
        }
        feed = [(stored.id, "upsert")] if stored.status is Status.ACTIVE else []
        first = self.directory.finish_push(workspace, push_id, answer, origin, feed)
        return answer if first is None else _repeated(first)

    # uses

    def record_uses(self, token: Token, workspace: str, body: Any) -> dict[str, Any]:
        """A host's running counts of its uses of team memories. Answers how many were
        recorded, the ids this workspace does not hold (forgotten, or never its) and
        those it holds but never served this token in a pull (`not_pulled`)."""
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object with 'host' and 'uses'")
        host, entries = body.get("host"), body.get("uses")
        if not isinstance(host, str) or not host.strip() or len(host) > 200:
            raise InvalidInput("'host' must be the sending host's name (200 characters at most)")
        if not isinstance(entries, list):
            raise InvalidInput("'uses' must be a list of {id, count}")
        if len(entries) > MAX_USES:
            raise InvalidInput(f"{len(entries)} entries in one report: send {MAX_USES} at most")
        counts: dict[str, int] = {}
        for number, entry in enumerate(entries, 1):
            item_id = entry.get("id") if isinstance(entry, dict) else None
            count = entry.get("count") if isinstance(entry, dict) else None
            if not isinstance(item_id, str) or not item_id:
                raise InvalidInput(f"entry {number} needs the memory's 'id'")
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < MAX_COUNT:
                raise InvalidInput(f"entry {number} needs a 'count' (a whole number, 0 or more)")
            counts[item_id] = max(count, counts.get(item_id, 0))
        unknown: list[str] = []
        known: list[tuple[str, int]] = []
        with self.workspaces.store(workspace) as store:
            for item_id, count in counts.items():
                try:
                    known.append((_get(store, item_id).id, count))
                except NotFound:
                    unknown.append(item_id)
        kept = set(self.directory.record_uses(workspace, token, known, USES_PER_DAY))
        not_pulled = [item_id for item_id, _ in known if item_id not in kept]
        return {"recorded": len(kept), "unknown": unknown, "not_pulled": not_pulled}

    # pull

    def pull(
        self, token: Token, workspace: str, since: str | None, limit: int = 500
    ) -> dict[str, Any]:
        text = (since or "").strip()
        if text and not text.isdigit():
            raise InvalidInput(f"bad cursor '{since}': give the cursor the last pull answered")
        start = int(text or 0)
        limit = max(1, min(limit, MAX_PULL))
        rows = self.directory.feed(workspace, start, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        last: dict[str, int] = {}
        for seq, item_id, _ in rows:
            last.pop(item_id, None)
            last[item_id] = seq  # each memory once, where it last changed
        changes: list[dict[str, Any]] = []
        active: list[Item] = []
        with self.workspaces.store(workspace) as store:
            for item_id in last:
                try:
                    item = store.get_item(item_id)
                except NotFound:
                    changes.append({"id": item_id, "change": "remove", "item": None})
                    continue
                if item.status is Status.ACTIVE:
                    active.append(item)
                    changes.append({"id": item_id, "change": "upsert", "item": None})
                else:
                    changes.append({"id": item_id, "change": "remove", "item": None})
        wired = {data["id"]: data for data in self.wire(workspace, active)}
        for change in changes:
            if change["change"] == "upsert":
                change["item"] = wired[change["id"]]
        if rows:  # what this token was served: the memories it may report uses of
            self.directory.mark_pulled(token.id, rows[-1][0])
        cursor = str(rows[-1][0]) if rows else str(start)
        return {"changes": changes, "cursor": cursor, "more": more}

    # decisions

    def act(
        self,
        token: Token,
        workspace: str,
        item_id: str,
        action: str,
        reason: str | None = None,
        note: str | None = None,
    ) -> dict[str, Any]:
        """An admin's decision on one memory; answers the memory as it is after it."""
        if action not in ACTIONS:
            raise NotFound(f"no action '{action}': use {', '.join(ACTIONS)}")
        # Checked before anything is written: a bad reason or note changes nothing.
        if action == "dismiss" and not (reason or "").strip():
            raise InvalidInput("dismiss needs a reason: covered, wrong, one_off or other")
        why = items.dismiss_reason_of(reason) if action == "dismiss" else _said(reason, "reason")
        said_note = _said(note, "note")
        feed: list[tuple[str, str]] = []
        with self.workspaces.store(workspace) as store:
            item = _get(store, item_id)
            if action == "forget":
                store.delete_items([item.id])
                stored = None
                feed.append((item.id, "remove"))
            else:
                bases = self._bases_of(workspace, item) if action == "approve" else []
                with store.together():
                    stored, base = _decide(store, item, action, why, bases)
                if base is not None and base.status is Status.ACTIVE:
                    feed.append((base.id, "upsert"))
                if stored.status is Status.ACTIVE:
                    feed.append((stored.id, "upsert"))
                elif item.status is Status.ACTIVE:
                    feed.append((stored.id, "remove"))
        if action == "forget":
            self.directory.forget(workspace, item.id)
            self.directory.append_feed(workspace, feed)
        else:
            self.directory.record_decision(
                workspace, item.id, action, token.id, why, said_note, feed
            )
        if stored is None:
            return {"item": None, "forgotten": item.id}
        return {"item": self.wire(workspace, [stored])[0]}

    def _bases_of(self, workspace: str, item: Item) -> list[tuple[str, str | None]]:
        """What `item` revises, nearest first: its base, and that base's base while the
        base is a revision too (a second edit sent before the first was approved); each
        with the version of it the revision was sent against."""
        chain: list[tuple[str, str | None]] = []
        current = item.id
        while len(chain) < MAX_CHAIN:
            origin = self.directory.origins(workspace, [current]).get(current)
            seen = [base for base, _ in chain]
            if not origin or origin["what"] != "revision" or origin["base"] in (None, *seen):
                return chain
            current = origin["base"]
            chain.append((current, origin["base_revision"]))
        return chain


def _repeated(first: dict[str, Any]) -> dict[str, Any]:
    """The answer to a `push_id` answered before: its first answer, `duplicate` when that
    stored it (a refusal is refused again)."""
    again = dict(first)
    if again["status"] == "stored":
        again["status"] = "duplicate"
    return again


def _get(store: Store, item_id: str) -> Item:
    if not ids.is_valid_ref(item_id) or len(item_id) != 26:
        raise NotFound(f"no memory '{item_id}' in this workspace: give its full id")
    try:
        return store.get_item(ids.normalize_ref(item_id))
    except NotFound:
        raise NotFound(f"no memory {item_id} in this workspace") from None


def _insert_once(store: Store, item: Item) -> Item:
    """Store `item` unless its id is there: a retry of a push cut off after the write,
    or the same push sent twice at once, finds it there (one of two racing inserts
    fails on the primary key; the item it lost to is the one). When it is not there, the
    store itself failed (the database just went away or came back): that error goes up,
    a 503 that leaves the push unanswered, so its retry writes it; never a refusal."""
    try:
        store.insert_many([item], change="push")
    except StoreError as exc:
        try:
            return store.get_item(item.id)
        except NotFound:
            raise exc from None
    return store.get_item(item.id)


def _rewritten_since(store: Store, base: Item, seen: str | None) -> bool:
    """Whether an approved revision rewrote `base` after its version `seen` (unknown,
    for a revision sent before the server kept it: then not)."""
    if seen is None or seen == base.revision:
        return False
    history = store.revisions(base.id)
    at = next((n for n, version in enumerate(history) if version.id == seen), None)
    return at is not None and any(v.change == "revise" for v in history[at + 1 :])


def _said(text: str | None, what: str) -> str | None:
    """A reason or note in the admin's words: one line, redacted, 200 characters at most."""
    return items.archive_reason_of(text, what)


def _decide(
    store: Store, item: Item, action: str, reason: str | None, bases: list[tuple[str, str | None]]
) -> tuple[Item, Item | None]:
    """The memory after `action` (stored), and the memory a revision rewrote. `reason`
    is a dismiss's, already checked; `bases` what an approved revision revises, nearest
    first. Its writes are one transaction (the caller's `store.together()`)."""
    if item.status not in items.allowed_from(action):
        raise Conflict(
            f"cannot {action} {short_id(item.id)}: it is {item.status.value}, and only "
            f"{' or '.join(s.value for s in items.allowed_from(action))} memories can be"
        )
    now = now_iso()
    match action:
        case "approve":
            target = Status.ACTIVE
        case "reject":
            target = Status.REJECTED
        case "dismiss":
            target = Status.DISMISSED
        case _:
            target = items.restored_status(store, item)
    rewritten = None
    links = item.links
    for base_id, seen in bases:
        try:
            base = store.get_item(base_id)
        except NotFound:
            break  # forgotten: nothing left to revise
        if base.status is Status.PROPOSED:
            # Approved while what it revises still waits: it takes that one's place, so
            # approving the older text later cannot make a second, contradicting memory.
            store.replace_item(
                replace(
                    base,
                    status=Status.SUPERSEDED,
                    links=(*base.links, Link("item", item.id)),
                    updated_at=now,
                    revision=ids.new_ulid(),
                ),
                "supersede",
                expected_revision=base.revision,
            )
            continue
        # A revision of a memory no longer active (dismissed, rejected, archived) has
        # nothing to rewrite: approved, it is a team memory of its own.
        if base.status is Status.ACTIVE:
            if _rewritten_since(store, base, seen):
                raise Conflict(
                    f"this revision of “{base.title}” ({short_id(base.id)}) was sent before "
                    "that memory was last revised: approving it would undo that change. "
                    "Reject it, and edit the memory as it is now"
                )
            rewritten = store.replace_item(
                replace(
                    base,
                    title=item.title,
                    body=item.body,
                    kind=item.kind,
                    tags=item.tags,
                    links=item.links,
                    evidence=item.evidence,
                    updated_at=now,
                    reviewed_at=now,
                    revision=ids.new_ulid(),
                ),
                "revise",
            )
            target = Status.SUPERSEDED  # its text lives on in the memory it revised
            links = (*item.links, Link("item", base.id))
        break
    updated = replace(
        item,
        status=target,
        links=links,
        dismiss_reason=reason if action == "dismiss" else None,
        updated_at=now,
        reviewed_at=now if action == "approve" else item.reviewed_at,
        revision=ids.new_ulid(),
    )
    try:
        stored = store.replace_item(updated, action, expected_revision=item.revision)
    except RevisionConflict as exc:
        raise Conflict(str(exc)) from None
    return stored, rewritten


def _check_scope(scope: Scope, workspace: str, covered: set[str]) -> None:
    if scope.type is ScopeType.WORKSPACE and scope.value == workspace:
        return
    if scope.type is ScopeType.REPO and scope.value in covered:
        return
    if scope.type is ScopeType.REPO:
        raise Refused(
            f"the team does not cover {scope.value}: an admin adds it with "
            f"`ken serve repos add '{workspace}' {scope.value}`"
        )
    raise Refused(
        f"scope {scope} is not shared with the team: send repo:<covered repo> or "
        f"workspace:{workspace}"
    )


def _item_from_wire(data: Any, item_id: str, status: Status, host: str) -> Item:
    """The memory an entry carries, checked and redacted again, with the server's id."""
    if not isinstance(data, dict):
        raise Refused("'item' must be a memory object (Item.to_dict())")
    title, body = data.get("title"), data.get("body", "") or ""
    if not isinstance(title, str) or not title.strip() or not isinstance(body, str):
        raise Refused("a memory needs a text 'title' (and 'body', if any, is text)")
    tags, links = data.get("tags", []) or [], data.get("links", []) or []
    if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise Refused("'tags' must be a list of text")
    if not (isinstance(links, list) and all(isinstance(x, str) for x in links)):
        raise Refused("'links' must be a list of text")
    evidence, prov = data.get("evidence", "") or "", data.get("provenance", {}) or {}
    if not isinstance(evidence, str) or not isinstance(prov, dict):
        raise Refused("'evidence' must be text and 'provenance' an object")
    created = data.get("created_at")
    if not (isinstance(created, str) and TIME.fullmatch(created)):
        created = None
    provenance = replace(Provenance.from_dict(prov), host=host)
    return items.new_item(
        title.strip() + ("\n" + body if body.strip() else ""),
        scope=items.parse_scope(str(data.get("scope", "global"))),
        kind=items.parse_kind(str(data.get("kind", "note"))),
        tags=tags,
        links=links,
        status=status,
        evidence=evidence,
        provenance=provenance,
        item_id=item_id,
        created_at=created,
    )
