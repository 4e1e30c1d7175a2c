"""Maintenance plans: the one way to change many memories at once, safely.

A plan is a JSON file a person (or `ken curate --plan`, or an agent over MCP) writes:

    {"schema": 1, "id": "...", "owner": "...", "operations": [...]}

with 1 to 100 operations, each an object whose `op` is one of

- `revise`: `id`, `expected_revision`, and any of `text`, `kind`, `scope`, `tags`
  (the new list), `sources`;
- `create`: `text`, `kind`, `scope`, and optionally `evidence`, `tags`, `sources`;
- `retire`: `id`, `expected_revision`, `reason` (the item is archived with it);
- `retire_into`: `ids`, `expected_revisions` (id to revision, for every id and for an
  existing `into`), and `into`: an existing item's id, or a new record
  (`text`, `kind`, `scope`, optional `evidence`, `tags`, `sources`). The ids become
  `superseded` by it, and it cites them all.

The life of a plan:

1. `read_plan` / `parse_plan` check its shape and limits with no store: 1 MiB at most;
   texts within an item's 4 KB and evidence within 8 KB; at most 64 `sources`
   (file:PATH[:LINE], PATH:LINE, a URL, item:ID, session:ID, commit:SHA) of 4,096
   characters each; an id in one operation at most. Each refusal names the operation
   as `operations[N]` and says what to fix, in one line.
2. Its **digest** is the sha256 of its canonical JSON (keys sorted, no spaces): plan id,
   owner and operations with their expected revisions. It names the plan: a person
   confirms it, and it is the idempotency key its receipt is stored under.
3. `preview` resolves the ids against the store and says, per operation, what is there
   now and what will be, and the **conflicts** that block applying it:
   `revision_changed` (the item moved on since the plan was written),
   `target_missing`, `already_retired` (retiring what is not active or proposed).
4. `apply` needs a person (`kenning.policy`); the face shows owner, operation count and
   the digest's first 12 characters, and passes the prefix the person confirmed. The
   store re-checks every expected revision inside one `BEGIN IMMEDIATE` transaction and
   writes everything and the receipt, or nothing (`kenning.store.plans`). Applying the
   same plan again returns its receipt and writes nothing.
5. `receipt` answers "did it commit?" after a crash: the receipt exists exactly when
   the writes do.

Agents may draft plans (validate and preview, over MCP) but never apply them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kenning import drafts, ids, items, origins, policy, projects
from kenning.errors import AmbiguousId, InvalidInput, NotFound, PlanConflict
from kenning.ids import short_id
from kenning.model import (
    MAX_EVIDENCE_BYTES,
    MAX_LINK_CHARS,
    MAX_LINKS,
    Item,
    Kind,
    Link,
    Provenance,
    Scope,
    Status,
)
from kenning.store import PlanReceipt, ReceiptStep, ReceiptWrite, Store, now_iso
from kenning.store.base import Conflict, PlannedChange

SCHEMA = 1
MAX_PLAN_BYTES = 1024 * 1024
MAX_OPERATIONS = 100
MAX_SOURCES = MAX_LINKS  # a source becomes a link
MAX_SOURCE_CHARS = MAX_LINK_CHARS
MAX_NAME = 200  # a plan's id and owner
MIN_DIGEST_PREFIX = 12
OPS = ("revise", "create", "retire", "retire_into")
RETIRABLE = (Status.ACTIVE.value, Status.PROPOSED.value)
TOP_FIELDS = ("schema", "id", "owner", "operations")
FIELDS = {
    "revise": ("op", "id", "expected_revision", "text", "kind", "scope", "tags", "sources"),
    "create": ("op", "text", "kind", "scope", "evidence", "tags", "sources"),
    "retire": ("op", "id", "expected_revision", "reason"),
    "retire_into": ("op", "ids", "expected_revisions", "into"),
}
NEW_RECORD = ("text", "kind", "scope", "evidence", "tags", "sources")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FILE_LINE = re.compile(r"^[^\s:][^\s]*:\d+(?::\d+)?$")  # src/app.py:12 (or :12:4)


# --- the plan as read ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewRecord:
    """What a `create` (or a `retire_into` into a new record) makes."""

    text: str
    kind: Kind
    scope: Scope
    evidence: str = ""
    tags: tuple[str, ...] = ()
    sources: tuple[Link, ...] = ()


@dataclass(frozen=True, slots=True)
class Operation:
    """One checked operation, as written (ids not yet resolved)."""

    index: int
    op: str
    raw: Mapping[str, Any]
    refs: tuple[str, ...] = ()  # the ids it names: revise/retire one, retire_into many
    expected: tuple[str, ...] = ()  # the expected revision of each ref, in order
    into_ref: str | None = None  # retire_into an existing item
    into_expected: str | None = None
    new: NewRecord | None = None  # create, or retire_into a new record
    text: str | None = None  # revise
    kind: Kind | None = None
    scope: Scope | None = None
    tags: tuple[str, ...] | None = None
    sources: tuple[Link, ...] = ()
    reason: str = ""  # retire

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, **self.raw}

    @property
    def all_refs(self) -> tuple[str, ...]:
        """Every existing item it names, `into` included."""
        return (*self.refs, self.into_ref) if self.into_ref else self.refs


@dataclass(frozen=True, slots=True)
class Plan:
    id: str
    owner: str
    operations: tuple[Operation, ...]
    digest: str

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON, as it would be written to a file."""
        return {
            "schema": SCHEMA,
            "id": self.id,
            "owner": self.owner,
            "operations": [dict(op.raw) for op in self.operations],
        }


def digest_of(plan_id: str, owner: str, operations: Sequence[Mapping[str, Any]]) -> str:
    """`sha256:` and the hex digest of the plan's canonical JSON."""
    canonical = json.dumps(
        {"schema": SCHEMA, "id": plan_id, "owner": owner, "operations": list(operations)},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def read_plan(data: bytes, name: str = "the plan") -> Plan:
    """Check a plan file's bytes: size, JSON, then `parse_plan`."""
    if len(data) > MAX_PLAN_BYTES:
        raise InvalidInput(
            f"{name} is {len(data):,} bytes, over the 1 MiB limit: split it into several plans"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{name} is not UTF-8 text") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{name} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    return parse_plan(obj, name)


def parse_plan(obj: Any, name: str = "the plan") -> Plan:
    """Check a plan's shape and limits (no store needed); the first problem is raised as
    one line naming the operation."""
    if not isinstance(obj, dict):
        raise InvalidInput(f'{name} must be a JSON object: {{"schema": 1, "id": ..., ...}}')
    size = len(json.dumps(obj, ensure_ascii=False).encode())
    if size > MAX_PLAN_BYTES:
        raise InvalidInput(f"{name} is {size:,} bytes, over the 1 MiB limit: split it")
    unknown = [k for k in obj if k not in TOP_FIELDS]
    if unknown:
        raise InvalidInput(
            f"{name}: unknown field '{unknown[0]}'; a plan has {', '.join(TOP_FIELDS)}"
        )
    if obj.get("schema") != SCHEMA or isinstance(obj.get("schema"), bool):
        raise InvalidInput(f"{name}: 'schema' must be {SCHEMA}, not {obj.get('schema')!r}")
    # Kept in receipts and shown in previews: redacted like any text that is stored.
    plan_id = _name(_redact_name(obj.get("id")), "id", name)
    owner = _name(_redact_name(obj.get("owner")), "owner", name)
    raw_ops = obj.get("operations")
    if not isinstance(raw_ops, list) or not 1 <= len(raw_ops) <= MAX_OPERATIONS:
        given = f"{len(raw_ops)}" if isinstance(raw_ops, list) else f"{raw_ops!r}"[:40]
        raise InvalidInput(
            f"{name}: 'operations' must be a list of 1 to {MAX_OPERATIONS} operations, not {given}"
        )
    operations = tuple(_operation(n, raw, name) for n, raw in enumerate(raw_ops))
    seen: dict[str, int] = {}
    for op in operations:
        for ref in (*op.refs, *([op.into_ref] if op.into_ref else [])):
            key = ids.normalize_ref(ref)
            if key in seen and seen[key] != op.index:
                raise InvalidInput(
                    f"{name}: operations[{op.index}] ({op.op}) names item {ref}, which "
                    f"operations[{seen[key]}] names too: an id may be in one operation only"
                )
            seen[key] = op.index
    return Plan(plan_id, owner, operations, digest_of(plan_id, owner, raw_ops))


_REDACTED_KEYS = ("text", "evidence", "reason", "tags", "sources")


def _redact_name(value: Any) -> Any:
    if not isinstance(value, str) or len(value) > MAX_NAME:
        return value  # `_name` refuses it
    from kenning.redact import redact

    return redact(value).text


def redacted(obj: Any) -> Any:
    """A plan as given (before `parse_plan`), its texts, evidence, reasons, tags and
    sources (and those of an `into` record) with secrets redacted as in any memory; ids,
    revisions and the rest as they were. Anything not shaped like a plan is returned as
    it is, for `parse_plan` to refuse."""
    from kenning.redact import redact

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value).text
        if isinstance(value, list):
            return [redact(v).text if isinstance(v, str) else v for v in value]
        return value

    def operation(raw: Any) -> Any:
        if not isinstance(raw, Mapping):
            return raw
        out = {k: clean(v) if k in _REDACTED_KEYS else v for k, v in raw.items()}
        return {**out, "into": operation(out["into"])} if "into" in out else out

    if not (isinstance(obj, Mapping) and isinstance(obj.get("operations"), list)):
        return obj
    names = {k: _redact_name(obj[k]) for k in ("id", "owner") if k in obj}
    return {**obj, **names, "operations": [operation(op) for op in obj["operations"]]}


def scopes_written(plan: Plan) -> list[Scope]:
    """The scopes a plan writes to: of what it creates, and of what it moves items to."""
    out: list[Scope] = []
    for op in plan.operations:
        if op.new is not None:
            out.append(op.new.scope)
        if op.scope is not None:
            out.append(op.scope)
    return out


def check_scopes(store: Store, plan: Plan, actor: policy.Actor) -> None:
    """Refuse a plan that writes where `actor` may not write, as a memory saved there
    would be refused (`items.add`): a project no one registered (a plan runs anywhere, so
    only the project `actor` works in, when known, counts besides registered ones), and,
    for an agent drafting it, another agent's scope. The error names every operation
    refused."""
    # The project a person is in counts only where they are: none, when not known.
    writer = replace(actor, here=actor.here or ())
    refused: list[str] = []  # every operation refused is named, not only the first
    for op in plan.operations:
        for scope in (op.new.scope if op.new else None, op.scope):
            if scope is None:
                continue
            try:
                policy.check_agent_scope(actor, scope)
                projects.check_registered(store, scope, writer)
            except InvalidInput as exc:
                refused.append(f"operations[{op.index}]: {exc}")
                break
    if refused:
        raise InvalidInput("; ".join(refused))


def _name(value: Any, key: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{name}: '{key}' must be a non-empty string")
    if len(value) > MAX_NAME or _CONTROL.search(value):
        raise InvalidInput(f"{name}: '{key}' must be one line of at most {MAX_NAME} characters")
    return value


class _Refused(Exception):
    """A problem in one operation; `_operation` adds where it is."""


def _operation(index: int, raw: Any, name: str) -> Operation:
    where = f"{name}: operations[{index}]"
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where} must be an object with an 'op'")
    op = raw.get("op")
    if op not in OPS:
        raise InvalidInput(f"{where}: 'op' must be one of {', '.join(OPS)}, not {op!r}")
    try:
        unknown = [k for k in raw if k not in FIELDS[op]]
        if unknown:
            raise _Refused(
                f"unknown field '{unknown[0]}'; a {op} takes {', '.join(FIELDS[op][1:])}"
            )
        match op:
            case "revise":
                return _revise(index, raw)
            case "create":
                return Operation(index, op, raw, new=_new_record(raw, "a create"))
            case "retire":
                return _retire(index, raw)
            case _:
                return _retire_into(index, raw)
    except (_Refused, InvalidInput) as exc:
        raise InvalidInput(f"{where} ({op}): {exc}") from None


def _ref(value: Any, key: str) -> str:
    if not isinstance(value, str) or not ids.is_valid_ref(value):
        raise _Refused(f"'{key}' must be an item id (its full 26 characters, or 4 or more)")
    return value.strip()


def _revision(value: Any, key: str) -> str:
    if not isinstance(value, str) or len(value.strip()) != 26 or not ids.is_valid_ref(value):
        raise _Refused(
            f"'{key}' must be the 26-character revision the plan was written against "
            "(`ken show ID --json` gives it as revision)"
        )
    return ids.normalize_ref(value)


def _text(value: Any, key: str = "text") -> str:
    if not isinstance(value, str):
        raise _Refused(f"'{key}' must be text")
    title, body = items.split_text(value)
    items.check_size(title, body)
    return value


def _kind(value: Any) -> Kind:
    if not isinstance(value, str):
        raise _Refused("'kind' must be text")
    kind = items.parse_kind(value)
    assert kind is not None
    return kind


def _scope(value: Any) -> Scope:
    if not isinstance(value, str):
        raise _Refused("'scope' must be text")
    if ":" not in value and value.strip() != "global":
        raise _Refused(
            f"'scope' must be written out (global, repo:github.com/org/app, ...), not "
            f"{value!r}: a plan runs anywhere"
        )
    return items.parse_scope(value)


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise _Refused("'tags' must be a list of text")
    return items.clean_tags(value)


def _sources(value: Any) -> tuple[Link, ...]:
    if not isinstance(value, list):
        raise _Refused("'sources' must be a list of locators")
    if len(value) > MAX_SOURCES:
        raise _Refused(f"'sources' holds {len(value)} locators, over {MAX_SOURCES}")
    return tuple(_source(n, s) for n, s in enumerate(value))


def _source(n: int, text: Any) -> Link:
    if not isinstance(text, str) or not text.strip():
        raise _Refused(f"sources[{n}] must be a non-empty locator")
    if len(text) > MAX_SOURCE_CHARS:
        raise _Refused(f"sources[{n}] is {len(text):,} characters, over {MAX_SOURCE_CHARS:,}")
    if _CONTROL.search(text):
        raise _Refused(f"sources[{n}] holds a control character")
    value = text.strip()
    if value.startswith(("http://", "https://")):
        return Link("url", value)
    kind, sep, target = value.partition(":")
    if sep and kind in ("file", "url", "item", "session", "commit") and target:
        if kind in ("item", "session") and not ids.is_valid_ref(target):
            raise _Refused(f"sources[{n}]: {kind}:{target} does not name a kenning id")
        return Link(kind, target)
    if _FILE_LINE.match(value):
        return Link("file", value)
    raise _Refused(
        f"sources[{n}] {value[:60]!r} is no locator: write file:PATH, PATH:LINE, a URL, "
        "item:ID, session:ID or commit:SHA"
    )


def _evidence(value: Any) -> str:
    if not isinstance(value, str):
        raise _Refused("'evidence' must be text")
    size = len(value.encode())
    if size > MAX_EVIDENCE_BYTES:
        raise _Refused(f"the evidence is {size:,} bytes, over the 8 KB limit")
    return value


def _new_record(raw: Mapping[str, Any], what: str) -> NewRecord:
    missing = [k for k in ("text", "kind", "scope") if k not in raw]
    if missing:
        raise _Refused(f"{what} needs {', '.join(missing)}")
    return NewRecord(
        text=_text(raw["text"]),
        kind=_kind(raw["kind"]),
        scope=_scope(raw["scope"]),
        evidence=_evidence(raw.get("evidence", "")),
        tags=_tags(raw.get("tags", [])),
        sources=_sources(raw.get("sources", [])),
    )


def _revise(index: int, raw: Mapping[str, Any]) -> Operation:
    ref = _ref(raw.get("id"), "id")
    expected = _revision(raw.get("expected_revision"), "expected_revision")
    if not any(k in raw for k in ("text", "kind", "scope", "tags", "sources")):
        raise _Refused("a revise changes at least one of text, kind, scope, tags, sources")
    return Operation(
        index,
        "revise",
        raw,
        refs=(ref,),
        expected=(expected,),
        text=_text(raw["text"]) if "text" in raw else None,
        kind=_kind(raw["kind"]) if "kind" in raw else None,
        scope=_scope(raw["scope"]) if "scope" in raw else None,
        tags=_tags(raw["tags"]) if "tags" in raw else None,
        sources=_sources(raw.get("sources", [])),
    )


def _retire(index: int, raw: Mapping[str, Any]) -> Operation:
    ref = _ref(raw.get("id"), "id")
    expected = _revision(raw.get("expected_revision"), "expected_revision")
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise _Refused("a retire needs a 'reason' (a line saying why)")
    clean = items.archive_reason_of(reason)
    assert clean is not None
    return Operation(index, "retire", raw, refs=(ref,), expected=(expected,), reason=clean)


def _retire_into(index: int, raw: Mapping[str, Any]) -> Operation:
    refs = raw.get("ids")
    if not isinstance(refs, list) or not refs:
        raise _Refused("'ids' must be a list of the item ids to retire")
    clean = tuple(_ref(r, "ids") for r in refs)
    keys = [ids.normalize_ref(r) for r in clean]
    if len(set(keys)) != len(keys):
        raise _Refused("'ids' names an item twice")
    expected = raw.get("expected_revisions")
    if not isinstance(expected, dict):
        raise _Refused("'expected_revisions' must be an object from each id to its revision")
    by_key = {ids.normalize_ref(str(k)): v for k, v in expected.items()}
    into = raw.get("into")
    into_ref = into_expected = None
    new = None
    if isinstance(into, str):
        into_ref = _ref(into, "into")
        if ids.normalize_ref(into_ref) in keys:
            raise _Refused("'into' is one of the ids it retires")
        if ids.normalize_ref(into_ref) not in by_key:
            raise _Refused(
                f"'expected_revisions' needs the revision of 'into' ({into_ref}) too: "
                "it gains links to what it replaces"
            )
        into_expected = _revision(by_key[ids.normalize_ref(into_ref)], "expected_revisions")
    elif isinstance(into, dict):
        unknown = [k for k in into if k not in NEW_RECORD]
        if unknown:
            raise _Refused(
                f"'into' has an unknown field '{unknown[0]}'; a new record takes "
                f"{', '.join(NEW_RECORD)}"
            )
        new = _new_record(into, "a new 'into' record")
    else:
        raise _Refused("'into' must be an existing item's id or a new record (an object)")
    allowed = set(keys) | ({ids.normalize_ref(into_ref)} if into_ref else set())
    extra = [str(k) for k, v in expected.items() if ids.normalize_ref(str(k)) not in allowed]
    if extra:
        raise _Refused(f"'expected_revisions' names {extra[0]}, which is not in 'ids' or 'into'")
    missing = [r for r, k in zip(clean, keys, strict=True) if k not in by_key]
    if missing:
        raise _Refused(f"'expected_revisions' has no revision for {missing[0]}")
    revisions = tuple(_revision(by_key[k], "expected_revisions") for k in keys)
    return Operation(
        index,
        "retire_into",
        raw,
        refs=clean,
        expected=revisions,
        into_ref=into_ref,
        into_expected=into_expected,
        new=new,
    )


# --- the plan against the store -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One operation against the store: what is there, what will be, what blocks it."""

    index: int
    op: str
    before: tuple[dict[str, Any], ...]
    after: tuple[dict[str, Any], ...]
    conflicts: tuple[Conflict, ...] = ()
    changes: tuple[PlannedChange, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "op": self.op,
            "before": list(self.before),
            "after": list(self.after),
            "conflicts": [c.to_dict() for c in self.conflicts],
        }


PLAN_WIDE = -1  # the index of a conflict of the plan as a whole, not one operation
ID_APPLIED = "id_applied"


def id_applied_detail(plan: Plan, other: str) -> str:
    return (
        f"plan '{plan.id}' was applied already with other contents ({other[:19]}...): "
        "give a changed plan a new id"
    )


@dataclass(frozen=True, slots=True)
class Preview:
    plan: Plan
    steps: tuple[Step, ...]
    receipt: PlanReceipt | None = None  # when this plan was applied already
    # The digest of other contents applied under this plan's id: apply refuses it.
    id_applied: str | None = None

    @property
    def conflicts(self) -> list[Conflict]:
        found = [c for s in self.steps for c in s.conflicts]
        if self.id_applied:
            found.insert(
                0,
                Conflict(PLAN_WIDE, "", ID_APPLIED, id_applied_detail(self.plan, self.id_applied)),
            )
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.plan.id,
            "owner": self.plan.owner,
            "digest": self.plan.digest,
            "operations": [s.to_dict() for s in self.steps],
            "conflicts": [c.to_dict() for c in self.conflicts],
            "applied": self.receipt is not None,
            "receipt": self.receipt.to_dict() if self.receipt else None,
        }


@dataclass(frozen=True, slots=True)
class Applied:
    receipt: PlanReceipt
    replayed: bool  # applied before: nothing was written now
    archived: tuple[Item, ...] = field(default_factory=tuple)  # by the cap, afterwards


def _view(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "short_id": short_id(item.id),
        "text": item.text,
        "kind": item.kind.value,
        "scope": str(item.scope),
        "status": item.status.value,
        "tags": list(item.tags),
        "links": [str(x) for x in item.links],
        "revision": item.revision,
    }


# A record the plan creates gets its id when applied: its preview names none.
NEW_ID = "new"


def _view_new(item: Item) -> dict[str, Any]:
    """A record the plan would create, as preview shows it: no id yet."""
    return {**_view(item), "id": None, "short_id": NEW_ID, "revision": None}


def _fields(before: Item, after: Item) -> tuple[tuple[str, Any], ...]:
    """What a change sets: the fields that differ, and always the new revision."""
    names = (
        "title",
        "body",
        "kind",
        "scope",
        "status",
        "tags",
        "links",
        "evidence",
        "updated_at",
        "expires_at",
        "archive_reason",
        "dismiss_reason",
    )
    return (
        *((n, getattr(after, n)) for n in names if getattr(after, n) != getattr(before, n)),
        ("revision", after.revision),
    )


def _links_plus(item: Item, more: Iterable[Link]) -> tuple[Link, ...]:
    links = list(item.links)
    links += [x for x in more if x not in links]
    return tuple(links)


class _Resolver:
    """Ids resolved against the store once, among the memories `known` keeps (all when
    None; an agent's: `items.known_to`); a missing target is a conflict, an ambiguous
    one an error."""

    def __init__(
        self, store: Store, name: str, known: Callable[[Item], bool] | None = None
    ) -> None:
        self.store = store
        self.name = name
        self.known = known
        self.owner: dict[str, int] = {}

    def get(self, op: Operation, ref: str) -> Item | None:
        try:
            item_id = items.resolve(self.store, ref, self.known)
        except NotFound:
            return None
        except AmbiguousId as exc:
            raise _Refused(str(exc)) from None
        first = self.owner.setdefault(item_id, op.index)
        if first != op.index:
            raise _Refused(
                f"it names item {short_id(item_id)}, which operations[{first}] names too: "
                "an id may be in one operation only"
            )
        item = self.store.get_item(item_id)
        # A team memory's copy changes on the server, never here: InvalidInput says so.
        policy.check_local_change(item, op.op)
        return item


def _conflict_of(op: Operation, ref: str, item: Item | None, expected: str) -> Conflict | None:
    if item is None:
        return Conflict(op.index, ref, "target_missing", f"no item matches {ref}")
    if item.revision != expected:
        return Conflict(
            op.index,
            item.id,
            "revision_changed",
            f"item {short_id(item.id)} is at revision {item.revision}, the plan expects {expected}",
        )
    return None


def _retired_conflict(op: Operation, item: Item) -> Conflict | None:
    if item.status.value in RETIRABLE:
        return None
    return Conflict(
        op.index,
        item.id,
        "already_retired",
        f"item {short_id(item.id)} is {item.status.value} already",
    )


def _created(record: NewRecord, links: Iterable[Link] = ()) -> Item:
    item = items.new_item(
        record.text,
        scope=record.scope,
        kind=record.kind,
        tags=record.tags,
        links=[str(x) for x in (*record.sources, *links)],
        evidence=record.evidence,
        provenance=Provenance(who="user", how="plan"),
    )
    return replace(item, reviewed_at=item.created_at)


def _step(op: Operation, resolver: _Resolver) -> Step:
    now = now_iso()
    match op.op:
        case "create":
            assert op.new is not None
            new = _created(op.new)
            return Step(
                op.index,
                op.op,
                (),
                (_view_new(new),),
                changes=(PlannedChange(op.index, new.id, "plan:create", new=new),),
            )
        case "revise":
            item = resolver.get(op, op.refs[0])
            conflict = _conflict_of(op, op.refs[0], item, op.expected[0])
            if item is None or conflict:
                return Step(op.index, op.op, (), (), (conflict,) if conflict else ())
            after = items.revised(
                item,
                text=op.text,
                kind=op.kind,
                scope=op.scope,
                add_tags=op.tags or (),
                remove_tags=[t for t in item.tags if op.tags is not None and t not in op.tags],
                add_links=[str(x) for x in op.sources],
            )
            if after is item:  # nothing to change: still a version, so the receipt shows it
                after = replace(item, updated_at=now, revision=ids.new_ulid())
            return Step(
                op.index,
                op.op,
                (_view(item),),
                (_view(after),),
                changes=(
                    PlannedChange(
                        op.index,
                        item.id,
                        "plan:revise",
                        expected_revision=op.expected[0],
                        fields=_fields(item, after),
                    ),
                ),
            )
        case "retire":
            item = resolver.get(op, op.refs[0])
            conflict = _conflict_of(op, op.refs[0], item, op.expected[0])
            if item is not None and conflict is None:
                conflict = _retired_conflict(op, item)
            if item is None or conflict:
                return Step(
                    op.index,
                    op.op,
                    (_view(item),) if item else (),
                    (),
                    (conflict,) if conflict else (),
                )
            after = replace(
                item,
                status=Status.ARCHIVED,
                archive_reason=op.reason,
                updated_at=now,
                revision=ids.new_ulid(),
            )
            return Step(
                op.index,
                op.op,
                (_view(item),),
                ({**_view(after), "archive_reason": op.reason},),
                changes=(
                    PlannedChange(
                        op.index,
                        item.id,
                        "plan:retire",
                        expected_revision=op.expected[0],
                        statuses=RETIRABLE,
                        fields=_fields(item, after),
                    ),
                ),
            )
        case _:
            return _retire_into_step(op, resolver, now)


def _retire_into_step(op: Operation, resolver: _Resolver, now: str) -> Step:
    conflicts: list[Conflict] = []
    olds: list[Item] = []
    for ref, expected in zip(op.refs, op.expected, strict=True):
        item = resolver.get(op, ref)
        found = _conflict_of(op, ref, item, expected)
        if item is not None and found is None:
            found = _retired_conflict(op, item)
        if found:
            conflicts.append(found)
        if item is not None:
            olds.append(item)
    into: Item | None = None
    if op.into_ref:
        assert op.into_expected is not None
        into = resolver.get(op, op.into_ref)
        found = _conflict_of(op, op.into_ref, into, op.into_expected)
        if into is not None and found is None:
            found = _retired_conflict(op, into)
        if found:
            conflicts.append(found)
    before = tuple(_view(i) for i in (*olds, *([into] if into else [])))
    if conflicts:
        return Step(op.index, op.op, before, (), tuple(conflicts))
    cites = [Link("item", i.id) for i in olds]
    changes: list[PlannedChange] = []
    if into is None:
        assert op.new is not None
        target = _created(op.new, cites)
        changes.append(PlannedChange(op.index, target.id, "plan:create", new=target))
    else:
        target = replace(
            into, links=_links_plus(into, cites), updated_at=now, revision=ids.new_ulid()
        )
        changes.append(
            PlannedChange(
                op.index,
                into.id,
                "plan:fold",
                expected_revision=op.into_expected,
                statuses=RETIRABLE,
                fields=_fields(into, target),
            )
        )
    after = [_view(target) if into else _view_new(target)]
    for old, expected in zip(olds, op.expected, strict=True):
        gone = replace(
            old,
            status=Status.SUPERSEDED,
            links=_links_plus(old, [Link("item", target.id)]),
            updated_at=now,
            revision=ids.new_ulid(),
        )
        shown = _view(gone)
        if into is None:  # it will cite a record whose id is given when applied
            shown["links"] = [
                f"item:{NEW_ID}" if x == f"item:{target.id}" else x for x in shown["links"]
            ]
        after.append(shown)
        changes.append(
            PlannedChange(
                op.index,
                old.id,
                "plan:supersede",
                expected_revision=expected,
                statuses=RETIRABLE,
                fields=_fields(old, gone),
            )
        )
    return Step(op.index, op.op, before, tuple(after), changes=tuple(changes))


def visible_targets(
    store: Store,
    plan: Plan,
    blocked: set[str] | frozenset[str],
    known: Callable[[Item], bool] | None = None,
) -> list[Item]:
    """The memories `plan` names, for an agent kept from the memories of `blocked` repos
    (`deliver = false`), its ids resolved among those `known` keeps, as its preview
    resolves them. A full id of a withheld memory refuses the plan, naming only its
    operation (its preview would show the memory's text); a short one finds nothing, as
    it would in `ken show`. A name that finds nothing is left to the preview, which calls
    it a missing target."""
    found: list[Item] = []
    for op in plan.operations:
        for ref in op.all_refs:
            try:
                item: Item | None = items.get(store, ref, known)
            except NotFound:
                full = ids.normalize_ref(ref)
                named = store.find_ids(full) if len(full) == 26 else []
                item = store.get_item(named[0]) if named else None
            except (InvalidInput, AmbiguousId):
                continue
            if item is None:
                continue
            if origins.withheld(item, blocked):
                raise InvalidInput(
                    f"operations[{op.index}] names a memory of a repo whose memory is not "
                    "delivered to agents (deliver = false in config.toml); nothing was done"
                )
            if known is None or known(item):
                found.append(item)
    return found


def preview(
    store: Store,
    plan: Plan,
    name: str = "the plan",
    known: Callable[[Item], bool] | None = None,
) -> Preview:
    """Each operation against the store as it is now: before, after, conflicts. A plan
    already applied shows its receipt. Its ids resolve among the memories `known` keeps
    (an agent's: `items.known_to`): what else they may name is a missing target, and an
    ambiguous id lists none of it."""
    done = store.plan_receipt(plan.digest)
    resolver = _Resolver(store, name, known)
    steps: list[Step] = []
    refused: list[str] = []  # every operation refused is named, not only the first
    for op in plan.operations:
        try:
            steps.append(_step(op, resolver))
        except (_Refused, InvalidInput) as exc:  # a secret, a size, a shared id, a team copy
            refused.append(f"operations[{op.index}] ({op.op}): {exc}")
    if refused:
        raise InvalidInput(f"{name}: {'; '.join(refused)}")
    others = [] if done else [r.digest for r in store.plan_receipts(plan.id)]
    taken = next((d for d in others if d != plan.digest), None)
    return Preview(plan, tuple(steps), done, taken)


def matches_digest(plan: Plan, prefix: str) -> bool:
    """Whether `prefix` (with or without `sha256:`) is the start of the plan's digest and
    long enough to mean it: the 12 characters a confirmation shows, at least."""
    given = prefix.strip().lower().removeprefix("sha256:")
    full = plan.digest.removeprefix("sha256:")
    return len(given) >= MIN_DIGEST_PREFIX and full.startswith(given)


def apply(
    store: Store,
    plan: Plan,
    *,
    digest: str,
    actor: policy.Actor | None = None,
    name: str = "the plan",
) -> Applied:
    """Apply `plan` once a person confirmed `digest` (the prefix they saw): every write
    and the receipt in one transaction, or nothing. Applied before: its receipt, and
    nothing written."""
    given = digest.strip().lower().removeprefix("sha256:")
    if len(given) < MIN_DIGEST_PREFIX and plan.digest.removeprefix("sha256:").startswith(given):
        raise InvalidInput(
            f"--digest {digest} is too short to confirm {name}: give at least "
            f"{MIN_DIGEST_PREFIX} characters of the digest `ken plan preview` shows"
        )
    if not matches_digest(plan, digest):
        raise InvalidInput(
            f"--digest {digest} does not match {name}'s digest {plan.digest[:19]}...: "
            f"preview the plan again and give at least {MIN_DIGEST_PREFIX} characters of "
            "the digest it shows"
        )
    who = policy.require_person(
        policy.resolve(actor),
        f"apply plan '{plan.id}' ({len(plan.operations)} operations)",
    )
    done = store.plan_receipt(plan.digest)
    if done is not None:
        return Applied(done, True)
    check_scopes(store, plan, who)
    seen = preview(store, plan, name)
    if seen.id_applied:  # as the store would refuse it, before anything is asked of it
        raise InvalidInput(id_applied_detail(plan, seen.id_applied))
    conflicts = seen.conflicts
    if conflicts:
        first = conflicts[0]
        raise PlanConflict(
            list(conflicts), f"operations[{first.index}] {first.code}: {first.detail}"
        )
    changes = [c for s in seen.steps for c in s.changes]
    steps = [
        ReceiptStep(
            s.index,
            s.op,
            tuple(ReceiptWrite(c.item_id, c.change, _revision_of(c)) for c in s.changes),
        )
        for s in seen.steps
    ]
    receipt, replayed = store.apply_plan(plan.digest, plan.id, plan.owner, changes, steps)
    archived: list[Item] = []
    if not replayed:
        made = [c.new for c in changes if c.new is not None]
        written = {c.item_id for c in changes}
        for scope in {str(i.scope): i.scope for i in made}.values():
            archived += items.enforce_cap(store, scope, keep=tuple(written))
    return Applied(receipt, replayed, tuple(archived))


def _revision_of(change: PlannedChange) -> str:
    if change.new is not None:
        return change.new.revision
    return str(dict(change.fields)["revision"])


def receipt(store: Store, plan: Plan) -> tuple[PlanReceipt | None, list[PlanReceipt]]:
    """The receipt of this plan when it was applied; and receipts of other contents
    applied under the same plan id."""
    done = store.plan_receipt(plan.digest)
    others = [r for r in store.plan_receipts(plan.id) if r.digest != plan.digest]
    return done, others


def save_draft(plan: Plan) -> Path:
    """Write a drafted plan (an agent's, over MCP) where a person can review and apply
    it: `plans/<digest start>.json` in kenning's state folder, readable only by the user
    (`ken forget` removes it with a memory it names or quotes)."""
    text = json.dumps(plan.to_dict(), indent=2, ensure_ascii=False) + "\n"
    return drafts.save_plan(plan.digest.removeprefix("sha256:")[:16], text)
