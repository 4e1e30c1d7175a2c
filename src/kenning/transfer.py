"""Export and import as JSON lines.

An export line is an item with its provenance and version history. An import brings
items back as *proposed*, so it never changes what agents are told until a person
approves them, and it keeps their ids (a ULID kenning could have made, or none), so
importing the same file twice adds nothing, and
their scopes as the export wrote them (read as text, not through the checkouts here). A
line is also skipped when its scope already holds the same statement (the same text after
case, punctuation and spacing) under another id: a hand-written file without ids, imported
twice, adds nothing either.
With `keep_status`, a person brings their own export back as it was: statuses, pins,
dismiss and archive reasons, review and expiry times, use counts, provenance and the
source a memory is kept in sync from (a collected file, a project's file), so `ken
collect` and `ken project sync` go on revising and archiving it. The whole
file is checked before anything is written: one bad line imports nothing.
An agent's import is its proposals: new ids, its own name as the writer, no source.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from kenning import ids, policy
from kenning.deliver import withheld
from kenning.errors import InvalidInput, StoreError
from kenning.items import (
    archive_reason_of,
    may_know,
    new_item,
    parse_kind,
    parse_scope,
    parse_status,
    statement_key,
)
from kenning.model import DismissReason, Item, Provenance, Scope, Status
from kenning.store import ItemQuery, Store, Version

BOM = "\ufeff"
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")

# What kenning writes as a memory's source (collect.source_of, projects._source,
# team.sync's copy_source): a line, never a control character that could forge another.
SOURCE = re.compile(r"(?:collect|project|team):[^\x00-\x1f\x7f-\x9f]+")


def export_lines(
    store: Store,
    query: ItemQuery | None = None,
    skip: frozenset[str] = frozenset(),
    known: Callable[[Item], bool] | None = None,
) -> Iterator[str]:
    """Each memory `query` finds as a JSON line with its history; none that belongs to a
    repo in `skip` (`deliver.withheld`: what an agent's shell may not read), nor one
    `known` leaves out (another agent's proposal, in an agent's shell)."""
    query = query or ItemQuery(statuses=(), include_expired=True)
    for item in store.list_items(query):
        if (skip and withheld(item, skip)) or (known is not None and not known(item)):
            continue
        data = item.to_dict()
        data["history"] = [rev.to_dict() for rev in store.revisions(item.id)]
        yield json.dumps(data, ensure_ascii=False, sort_keys=True)


def _time(data: dict[str, Any], key: str, where: str, past: bool = True) -> str | None:
    """A time of a line, as `ken export` writes it. A `past` one (when it was made,
    changed, reviewed, used) may not be later than now, as an id may not (`ids.is_ulid`,
    with the same day's slack for another machine's clock): a memory dated 2099 would
    sort as the newest for ever."""
    value = data.get(key)
    if value in (None, ""):
        return None
    when = None
    if isinstance(value, str) and TIME.match(value):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:  # matches the pattern, but no day of the calendar (2026-13-45)
            when = None
    if when is None:
        raise InvalidInput(f"{where}: '{key}' must be a UTC time as `ken export` writes it")
    if past and when.timestamp() * 1000 > time.time() * 1000 + ids.FUTURE_SLACK_MS:
        raise InvalidInput(
            f"{where}: '{key}' is {value}, later than now: give the time it happened, or "
            "leave it out"
        )
    return value


def _as_it_was(item: Item, data: dict[str, Any], where: str) -> Item:
    """`item` with the status, review, expiry and use of the exported line."""
    try:
        status = parse_status(str(data.get("status", "active")))
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    reason = data.get("dismiss_reason")
    if status is Status.DISMISSED:
        if reason not in {r.value for r in DismissReason}:
            raise InvalidInput(f"{where}: a dismissed item needs a 'dismiss_reason'")
    else:
        reason = None
    archive_reason = data.get("archive_reason") if status is Status.ARCHIVED else None
    if archive_reason is not None and not isinstance(archive_reason, str):
        raise InvalidInput(f"{where}: 'archive_reason' must be text")
    try:
        archive_reason = archive_reason_of(archive_reason)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    uses = data.get("use_count", 0) or 0
    if not isinstance(uses, int) or isinstance(uses, bool) or uses < 0:
        raise InvalidInput(f"{where}: 'use_count' must be a whole number, 0 or more")
    expires = (
        _time(data, "expires_at", where, past=False) if "expires_at" in data else item.expires_at
    )
    # The revision it had, so an agent that read it (`expected_revision`) still names its
    # current version: a memory new to the store comes back at that version, not a new one.
    revision = data.get("revision")
    if not (isinstance(revision, str) and len(revision) == 26 and ids.is_valid_ref(revision)):
        revision = item.revision
    return replace(
        item,
        revision=ids.normalize_ref(revision),
        status=status,
        dismiss_reason=reason,
        archive_reason=archive_reason,
        updated_at=_time(data, "updated_at", where) or item.updated_at,
        reviewed_at=_time(data, "reviewed_at", where),
        expires_at=expires,
        use_count=uses,
        last_used_at=_time(data, "last_used_at", where),
    )


def _scope(data: dict[str, Any]) -> str:
    """A line's scope as written: global when the key is left out."""
    scope = data.get("scope", "global")
    if scope is None or (isinstance(scope, str) and not scope.strip()):
        raise InvalidInput(
            "its 'scope' is missing (null or empty): give one (global, "
            "repo:<name>, ...), or leave the key out for global"
        )
    if not isinstance(scope, str):
        raise InvalidInput(f"'scope' must be text (global, repo:<name>, ...), not {scope}")
    return scope


def _item_from(data: Any, number: int, keep_status: bool = False) -> Item:
    where = f"line {number}"
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: expected a JSON object, as `ken export` writes")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput(f"{where}: missing a text 'title'")
    body = data.get("body", "")
    if not isinstance(body, str):
        raise InvalidInput(f"{where}: 'body' must be text")
    item_id = data.get("id")
    if item_id is not None and not (isinstance(item_id, str) and ids.is_ulid(item_id)):
        raise InvalidInput(
            f"{where}: 'id' is not a kenning id (a ULID: 26 characters of Crockford base32, "
            "made no later than now); leave it out and the memory gets a new one"
        )
    tags = data.get("tags", [])
    links = data.get("links", [])
    if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise InvalidInput(f"{where}: 'tags' must be a list of text")
    if not (isinstance(links, list) and all(isinstance(x, str) for x in links)):
        raise InvalidInput(f"{where}: 'links' must be a list of text")
    created_at = _time(data, "created_at", where)
    pinned = data.get("pinned", False)
    if not isinstance(pinned, bool):
        raise InvalidInput(f"{where}: 'pinned' must be true or false")
    evidence = data.get("evidence", "") or ""
    prov = data.get("provenance", {})
    if not isinstance(evidence, str) or not isinstance(prov, dict):
        raise InvalidInput(f"{where}: 'evidence' must be text and 'provenance' an object")
    source = data.get("source") or None
    if source is not None and not (isinstance(source, str) and SOURCE.fullmatch(source)):
        raise InvalidInput(
            f"{where}: 'source' must be what kenning writes there: collect:AGENT:PATH, "
            "project:SLUG:FILE#KEY or team:WORKSPACE#ID, on one line (what the memory is "
            "kept in sync from)"
        )
    try:
        item = new_item(
            title.strip() + ("\n" + body if body else ""),
            # As it was stored, even where it never applies or where a checkout here has
            # since changed: an import loses nothing.
            scope=parse_scope(_scope(data), to_find=True, as_key=True),
            kind=parse_kind(str(data.get("kind", "note"))),
            tags=tags,
            links=links,
            # A pin makes an item told in every pack: only a person's own export keeps it.
            pinned=keep_status and pinned,
            status=Status.PROPOSED,
            evidence=evidence,
            provenance=Provenance.from_dict(prov if keep_status else {**prov, "how": "import"}),
            item_id=ids.normalize_ref(item_id) if item_id else None,
            created_at=created_at or None,
            # What `ken collect` or a project's sync revises it from: kept as it was by a
            # person's own restore only, so a proposal is no file's copy.
            source=source if keep_status else None,
        )
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    return _as_it_was(item, data, where) if keep_status else item


def _history(item: Item, data: dict[str, Any], where: str) -> list[Version]:
    """The versions an exported line lists (`history`), as the item stood at each: kept
    with `keep_status`, checked and redacted like the item itself."""
    raw = data.get("history", [])
    if not isinstance(raw, list):
        raise InvalidInput(f"{where}: 'history' must be a list of versions")
    out: list[Version] = []
    for n, rev in enumerate(raw):
        at = f"{where}: history[{n}]"
        if not isinstance(rev, dict):
            raise InvalidInput(f"{at} must be an object, as `ken export` writes")
        rev_id = rev.get("id")
        if not (isinstance(rev_id, str) and len(rev_id) == 26 and ids.is_valid_ref(rev_id)):
            raise InvalidInput(f"{at}: 'id' is not a kenning id")
        change = rev.get("change")
        if not (isinstance(change, str) and 0 < len(change) <= 40):
            raise InvalidInput(f"{at}: 'change' must be a short text (add, edit, approve...)")
        title, body = rev.get("title"), rev.get("body", "")
        if not (isinstance(title, str) and title.strip() and isinstance(body, str)):
            raise InvalidInput(f"{at}: 'title' and 'body' must be text")
        tags, links = rev.get("tags", []), rev.get("links", [])
        if not (isinstance(tags, list) and isinstance(links, list)):
            raise InvalidInput(f"{at}: 'tags' and 'links' must be lists of text")
        scope = Scope.from_stored(str(rev.get("scope", item.scope)))
        if scope.unreadable:
            raise InvalidInput(f"{at}: bad scope {str(scope)!r}: {scope.unreadable}")
        try:
            version = new_item(
                title.strip() + ("\n" + body if body else ""),
                scope=scope,
                kind=parse_kind(str(rev.get("kind", item.kind.value))),
                tags=[str(t) for t in tags],
                links=[str(x) for x in links],
                status=parse_status(str(rev.get("status", item.status.value))),
                evidence=str(rev.get("evidence", "") or ""),
                provenance=Provenance.from_dict(rev.get("provenance") or {}),
                item_id=item.id,
                created_at=item.created_at,
            )
        except (InvalidInput, ValueError) as exc:
            raise InvalidInput(f"{at}: {exc}") from None
        when = _time(rev, "created_at", at) or item.created_at
        out.append(
            Version(replace(version, revision=ids.normalize_ref(rev_id), updated_at=when), change)
        )
    return out


@dataclass(frozen=True, slots=True)
class Repeat:
    """A line of an import file that has the id of an earlier line (`first`)."""

    line: int
    first: int
    id: str


def read_items(
    lines: Iterable[str | bytes],
    keep_status: bool = False,
    history: dict[str, list[Version]] | None = None,
    repeated: list[Repeat] | None = None,
) -> list[Item]:
    """Parse and check every line; raises InvalidInput naming the first bad line.

    Items come back proposed, unless `keep_status` (a person's own export, as it was):
    then, given a `history` to fill, each item's earlier versions go in it, by item id.
    A line whose id an earlier line has (a file edited by hand) is left out: the first
    is the memory, and `repeated` gets the line and the first one's.
    """
    items: list[Item] = []
    first: dict[str, int] = {}
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInput(f"line {number}: not UTF-8 text") from None
        if number == 1:
            raw = raw.removeprefix(BOM)  # a file saved by Notepad, say: its mark, no text
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {number}: not JSON ({exc.msg})") from None
        item = _item_from(data, number, keep_status)
        if item.id in first:
            if repeated is not None:
                repeated.append(Repeat(number, first[item.id], item.id))
            continue
        first[item.id] = number
        if keep_status and history is not None and isinstance(data, dict):
            history[item.id] = _history(item, data, f"line {number}")
        items.append(item)
    return items


def import_items(
    store: Store,
    items: list[Item],
    progress: Callable[[int, int], None] | None = None,
    batch: int = 500,
    actor: policy.Actor | None = None,
    history: Mapping[str, Sequence[Version]] | None = None,
    differ: list[str] | None = None,
    renumbered: list[str] | None = None,
) -> tuple[int, int]:
    """Store checked items in batches, each with its earlier versions in `history`;
    returns (added, skipped). Items that are not proposals (an export brought back as it
    was) need a person. `differ`, when given, gets the ids of the skipped items whose
    text differs from the stored memory of that id: an import never changes a memory.
    `renumbered` gets the ids of the items whose versions got new revision ids, since
    another memory has theirs (`_own_revisions`).
    An agent's import is its own proposal, whoever the lines say wrote them, and each line
    a new memory: it proposes, it does not restore, so the ids and times the file gives
    are not kept (an id chosen to end as a person's memory's does would make that one's
    short id ambiguous wherever it is typed)."""
    who = policy.resolve(actor)
    if any(item.status is not Status.PROPOSED or item.pinned for item in items):
        policy.require_person(who, "import an export with its statuses")
    if who.agent is not None:
        mine = Provenance(who=who.agent, how="import")
        items = [
            replace(
                item,
                id=ids.new_ulid(),
                created_at=item.updated_at,  # when it was read: now
                provenance=mine,
                source=None,  # an agent's proposal is no file's copy
            )
            for item in items
        ]
    here = _already_said(store, items, differ, who)
    total = len(items)
    added, skipped = 0, len(items)
    items = [item for item in items if item.id not in here]
    skipped -= len(items)
    items, history = _own_revisions(store, items, history, renumbered)
    earlier, changes = _current_versions(items, history)
    done = total - len(items)  # the ones found here already count as done
    for start in range(0, len(items), batch):
        # Runs of the same change, in the file's order: each item's own version is
        # recorded as the change that made it, when its history says which.
        chunk = items[start : start + batch]
        run = 0
        while run < len(chunk):
            change = changes.get(chunk[run].id, "import")
            end = run
            while end < len(chunk) and changes.get(chunk[end].id, "import") == change:
                end += 1
            try:
                a, s = store.insert_many(
                    chunk[run:end], change=change, batch=batch, history=earlier
                )
            except StoreError as exc:
                # Each batch lands whole or not at all, and a rerun skips what is here.
                raise type(exc)(
                    f"{exc}; the import stopped there: the {added} of {total} memories it "
                    "added before are kept, and running the same import again adds the "
                    "rest and skips those"
                ) from None
            added, skipped, done = added + a, skipped + s, done + a + s
            run = end
        if progress:
            progress(done, total)
    return added, skipped


def _own_revisions(
    store: Store,
    items: Sequence[Item],
    history: Mapping[str, Sequence[Version]] | None,
    renumbered: list[str] | None,
) -> tuple[list[Item], dict[str, Sequence[Version]]]:
    """The items, and their versions, with no revision id another memory has. A line
    copied under a new id (an export edited by hand, two exports merged) brings the
    revision ids of the memory it copies, in the store or on an earlier line: each of
    that item's versions gets a new id, in the file's order (versions are read in the
    order of their ids), and `renumbered` its id. Every other item keeps its own, so a
    restore with nothing copied stays exact."""
    out: list[Item] = []
    versions_of: dict[str, Sequence[Version]] = dict(history or {})

    def ids_of(item: Item) -> list[str]:
        return [v.item.revision for v in versions_of.get(item.id, ())] + [item.revision]

    owners = store.revision_owners(sorted({r for item in items for r in ids_of(item)}))
    for item in items:
        versions = versions_of.get(item.id, ())
        listed = [v.item.revision for v in versions]
        # An export lists the current version last, under the item's own revision id.
        current_listed = bool(listed) and listed[-1] == item.revision
        repeats = len(set(listed)) < len(listed) or item.revision in listed[:-1]
        others = any(owners.get(r, item.id) != item.id for r in ids_of(item))
        if repeats or others:
            fresh = [ids.new_ulid() for _ in versions]
            versions_of[item.id] = [
                Version(replace(v.item, revision=f), v.change)
                for v, f in zip(versions, fresh, strict=True)
            ]
            item = replace(item, revision=fresh[-1] if current_listed else ids.new_ulid())
            if renumbered is not None:
                renumbered.append(item.id)
        owners.update(dict.fromkeys(ids_of(item), item.id))
        out.append(item)
    return out, versions_of


def _current_versions(
    items: Sequence[Item], history: Mapping[str, Sequence[Version]] | None
) -> tuple[dict[str, Sequence[Version]], dict[str, str]]:
    """The versions before each item's own, and the change that made its own: an export
    lists the current version last, under the item's revision; brought back as it was,
    that version is the item itself, not an earlier one plus an `import`."""
    earlier: dict[str, Sequence[Version]] = dict(history or {})
    changes: dict[str, str] = {}
    for item in items:
        versions = earlier.get(item.id, ())
        if versions and versions[-1].item.revision == item.revision:
            earlier[item.id] = versions[:-1]
            changes[item.id] = versions[-1].change
    return earlier, changes


def _already_said(
    store: Store,
    items: list[Item],
    differ: list[str] | None = None,
    who: policy.Actor = policy.PERSON,
) -> set[str]:
    """Ids of the items whose scope already holds a memory of the same statement (in any
    status), under another id, one the importer `who` may know of (`items.may_know`: an
    agent's import is not told of what it may not see). Copies within the file are kept:
    they were written so. `differ` gets the ids stored already with another text."""
    stored: dict[str, set[str]] = {}
    texts: dict[str, str] = {}
    for scope in {str(item.scope) for item in items}:
        query = ItemQuery(scopes=(scope,), statuses=(), include_expired=True)
        found = store.list_items(query)
        stored[scope] = {statement_key(f.text) for f in found if may_know(who, f)}
        if differ is not None:
            texts.update((f.id, f.text) for f in found)
    if differ is not None:
        differ += dict.fromkeys(i.id for i in items if i.id in texts and texts[i.id] != i.text)
    return {
        item.id
        for item in items
        if stored[str(item.scope)] and statement_key(item.text) in stored[str(item.scope)]
    }
