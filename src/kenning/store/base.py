"""The store's interface: what domain code may ask of any backend.

SQLite implements it now; a Postgres backend for the team server can implement it later
without touching domain code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Final, Protocol

from kenning.model import Item, Revision, Session


def now_iso() -> str:
    """UTC now as `YYYY-MM-DDTHH:MM:SS.mmmZ`, which sorts as text: the store's one time
    format."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True, slots=True)
class ItemQuery:
    """Which items to read. Empty tuples mean 'any'."""

    scopes: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ("active",)
    tags: tuple[str, ...] = ()
    include_expired: bool = False
    since: str | None = None  # created at or after (ISO time)
    session_id: str | None = None
    source_prefix: str | None = None
    limit: int | None = None
    now: str | None = None  # for expiry; the store's clock when None
    pinned: bool | None = None  # only pinned (True) or only unpinned (False) items
    recent_first: bool = False  # newest first, ignoring pins (uses the scope index)
    exclude_ids: tuple[str, ...] = ()  # leave these items out (e.g. already told)
    # Leave out what belongs to these repos (`deliver.withheld`: deliver = false): their
    # repo scope, their workstreams (`<repo>#...`), what was written in them (provenance).
    exclude_repos: tuple[str, ...] = ()
    offset: int = 0  # skip this many first: a page further down a long list
    # Newest captured first (ignoring pins): an order a change does not reshuffle, so a
    # list paged through stays where it was; a scope's own index serves it.
    captured_first: bool = False
    # Best first as `kenning.rank` orders: each kind's group (lower first), then uses,
    # last use, capture and id, newest first; `rank.query` fills it in.
    kind_groups: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """Which sessions to list, newest first. None means 'any'."""

    agent: str | None = None
    repo: str | None = None
    cwd: str | None = None
    workstream: str | None = None
    project: str | None = None
    # The sessions whose prompts, agent, model or repo hold this text, case folded (a
    # person looking for one in `ken panel`); empty: any.
    text: str = ""
    limit: int = 50  # 0 means the default, 50
    offset: int = 0  # skip this many first: a page further down


class Unset(Enum):
    """A field of a `SessionUpdate` not given: its column keeps its value."""

    UNSET = "unset"


UNSET: Final = Unset.UNSET


@dataclass(frozen=True, slots=True)
class SessionUpdate:
    """Which of a session's columns to set. A field left UNSET keeps its value; None
    clears it. `last_seen_at` is the store's clock unless given."""

    model: str | None | Unset = UNSET
    ended_at: str | None | Unset = UNSET
    end_reason: str | None | Unset = UNSET
    commits: tuple[str, ...] | Unset = UNSET
    diff_stat: str | None | Unset = UNSET
    pid: int | None | Unset = UNSET
    last_seen_at: str | Unset = UNSET

    def changes(self) -> dict[str, Any]:
        """The fields given, by name (the session's column names)."""
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: value for name, value in given.items() if value is not UNSET}


@dataclass(frozen=True, slots=True)
class SessionDelivery:
    """One thing a session was told: a pack, a recall, a compaction's new start."""

    at: str
    what: str
    item_ids: tuple[str, ...]
    query: str | None = None  # what recall was asked


@dataclass(frozen=True, slots=True)
class Project:
    """A registered project: a folder whose notes are indexed (kenning.projects)."""

    slug: str
    folder: str
    repo: str | None
    added_at: str

    def to_dict(self) -> dict[str, Any]:
        return {"slug": self.slug, "dir": self.folder, "repo": self.repo, "added_at": self.added_at}


@dataclass(frozen=True, slots=True)
class Signal:
    """One thing the hooks noted in a session for its run lessons (store/signals.py)."""

    at: str
    kind: str  # failure, denial, repeat, correction, statement
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class LessonState:
    """When Stop asked a session for a reflection, and when one was recorded."""

    asked_at: str | None = None
    reflected_at: str | None = None


@dataclass(frozen=True, slots=True)
class ReceiptWrite:
    """One item a plan's operation wrote, at the version it wrote."""

    id: str
    change: str
    revision: str


@dataclass(frozen=True, slots=True)
class ReceiptStep:
    """One operation of an applied plan and the items it wrote."""

    index: int
    op: str
    items: tuple[ReceiptWrite, ...] = ()


@dataclass(frozen=True, slots=True)
class PlanReceipt:
    """What applying a plan wrote, stored in the plan's transaction under its digest."""

    digest: str
    plan_id: str
    owner: str
    applied_at: str
    operations: tuple[ReceiptStep, ...]

    def to_dict(self) -> dict[str, Any]:
        """The receipt's JSON shape (`ken plan receipt --json`; stored with sorted keys)."""
        return {
            "plan_id": self.plan_id,
            "owner": self.owner,
            "operations": [
                {
                    "index": step.index,
                    "op": step.op,
                    "items": [
                        {"id": w.id, "change": w.change, "revision": w.revision} for w in step.items
                    ],
                }
                for step in self.operations
            ],
            "digest": self.digest,
            "applied_at": self.applied_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanReceipt:
        return cls(
            digest=data["digest"],
            plan_id=data["plan_id"],
            owner=data["owner"],
            applied_at=data["applied_at"],
            operations=tuple(
                ReceiptStep(
                    int(step["index"]),
                    step["op"],
                    tuple(ReceiptWrite(w["id"], w["change"], w["revision"]) for w in step["items"]),
                )
                for step in data["operations"]
            ),
        )


@dataclass(frozen=True, slots=True)
class Version:
    """An earlier version of an item, brought back with it (`insert_many`'s history): the
    item as it stood, with `revision` the version's id and `updated_at` its time."""

    item: Item
    change: str


@dataclass(frozen=True, slots=True)
class Term:
    """A word (or a phrase) to look for, as written; `prefix` also finds the longer
    words it starts."""

    text: str
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class Words:
    """Which items' text to find, in words: never a backend's query syntax.

    `typed` is what a person typed: every chunk of it must match, and the last one as
    a prefix too (of the words as typed, and of their stems). `any_of` finds the items
    that hold any one of its terms (recall's candidates). Only one of them is used:
    `typed` when it is given."""

    typed: str = ""
    any_of: tuple[Term, ...] = ()


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """One write of a maintenance plan, made inside the plan's one transaction.

    With `new`, a new item is inserted. Otherwise the stored item `item_id` must still be
    at `expected_revision` and in one of `statuses` (else the whole plan is refused), and
    `fields` (Item field names: title, status, links, ...) are set on it as it stands
    then, with `revision` a new version id."""

    index: int  # the operation it belongs to
    item_id: str
    change: str  # the version's change: plan:create, plan:revise, plan:retire, ...
    new: Item | None = None
    expected_revision: str | None = None
    statuses: tuple[str, ...] = ()
    fields: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why an operation cannot be applied as written."""

    index: int
    item_id: str  # the id as resolved, or as the plan wrote it when it resolves to none
    code: str  # revision_changed, target_missing, already_retired, id_applied (index -1: the plan)
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.item_id, "code": self.code, "detail": self.detail}


class Store(Protocol):
    path: str

    def close(self) -> None: ...

    # items
    def insert_item(self, item: Item, change: str = "add") -> Item: ...
    def insert_many(
        self,
        items: Iterable[Item],
        change: str = "import",
        batch: int = 500,
        history: Mapping[str, Sequence[Version]] | None = None,
    ) -> tuple[int, int]: ...
    def get_item(self, item_id: str) -> Item: ...
    def find_ids(self, ref: str) -> list[str]: ...
    def replace_item(
        self,
        item: Item,
        change: str,
        expected_revision: str | None = None,
        new_version: bool = True,
    ) -> Item: ...
    def list_items(self, query: ItemQuery) -> list[Item]: ...
    def search(self, words: Words, query: ItemQuery) -> list[tuple[Item, float]]: ...
    def next_captured(self, item_ids: Sequence[str], query: ItemQuery) -> dict[str, Item]: ...
    def words_in(self, texts: Sequence[str]) -> list[list[str]]: ...
    def stems(self, texts: Sequence[str]) -> list[list[str]]: ...
    def prefix_words(self, word: str, limit: int = 16) -> list[str]: ...
    def revisions(self, item_id: str) -> list[Revision]: ...
    def revision_owners(self, revision_ids: Sequence[str]) -> dict[str, str]: ...
    def delete_items(self, item_ids: Sequence[str], session_id: str | None = None) -> int: ...
    def items_quoting(
        self, needles: Sequence[str], exclude_ids: Sequence[str] = ()
    ) -> list[Item]: ...
    def replacement_copies(self, item_ids: Sequence[str]) -> list[Item]: ...
    def scrub_quotes(self, needles: Sequence[str]) -> int: ...
    def drop_kept_copies(
        self, item_ids: Sequence[str], session_id: str | None, needles: Sequence[str]
    ) -> list[str]: ...
    def record_uses(self, item_ids: Sequence[str], session_id: str | None, how: str) -> int: ...
    def count_items(self, query: ItemQuery | None = None) -> int: ...

    # maintenance plans
    def apply_plan(
        self,
        digest: str,
        plan_id: str,
        owner: str,
        changes: Sequence[PlannedChange],
        steps: Sequence[ReceiptStep],
    ) -> tuple[PlanReceipt, bool]: ...
    def plan_receipt(self, digest: str) -> PlanReceipt | None: ...
    def plan_receipts(self, plan_id: str) -> list[PlanReceipt]: ...
    def integrity_check(self) -> str: ...

    # projects
    def projects(self) -> list[Project]: ...
    def add_project(self, slug: str, folder: str, repo: str | None) -> None: ...
    def remove_project(self, slug: str) -> bool: ...
    def file_stamp(self, slug: str, name: str) -> tuple[int, int] | None: ...
    def set_file_stamp(self, slug: str, name: str, stamp: tuple[int, int] | None) -> None: ...
    def place_stamp(self, agent: str, path: str) -> tuple[int, int] | None: ...
    def set_place_stamp(self, agent: str, path: str, stamp: tuple[int, int]) -> None: ...
    def add_forgotten(self, digests: Sequence[str]) -> None: ...
    def is_forgotten(self, digest: str) -> bool: ...

    # sessions
    def upsert_session(self, session: Session, scopes: Sequence[str] = ()) -> Session: ...
    def get_session(self, session_id: str) -> Session: ...
    def list_sessions(self, query: SessionQuery) -> list[Session]: ...
    def find_session(self, agent: str, agent_session_id: str) -> Session | None: ...
    def find_session_ids(self, ref: str) -> list[str]: ...
    def open_sessions(self, agent: str | None = None) -> list[tuple[Session, str]]: ...
    def update_session(self, session_id: str, update: SessionUpdate) -> None: ...
    def note_prompt(self, session_id: str, prompt: str | None) -> None: ...
    def count_sessions(self) -> int: ...
    def summary_progress(self, session_id: str) -> tuple[int, int]: ...
    def set_summary_progress(self, session_id: str, parts: int, turns: int) -> None: ...

    # what sessions were told
    def record_delivery(
        self, session_id: str, what: str, item_ids: Sequence[str], query: str | None = None
    ) -> None: ...
    def deliveries(self, session_id: str) -> list[SessionDelivery]: ...

    # word statistics (the backend's own stemming and counts)
    def doc_freqs(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]: ...
    def word_freqs(self, words: Sequence[str]) -> dict[str, int]: ...

    # completion
    def scopes_in_use(self, limit: int = 200, prefix: str = "") -> list[str]: ...
    def short_ids(
        self, start: str, statuses: Sequence[str] = (), limit: int = 50
    ) -> list[tuple[str, str, str]]: ...

    # transactions and the disk
    def together(self, key: str = "") -> AbstractContextManager[None]: ...
    def unspooled(self) -> AbstractContextManager[None]: ...
    def spooling(self) -> bool: ...
    def wipe_pending(self) -> bool: ...
    def data_version(self) -> int: ...
    def readers(self) -> list[str]: ...
    def session_scopes(self, session_id: str) -> list[str]: ...

    # run lessons: what the hooks noted in a session (store/signals.py)
    def add_signal(self, session_id: str, kind: str, detail: str = "") -> None: ...
    def signals(self, session_id: str) -> list[Signal]: ...
    def add_prompt(self, session_id: str, text: str) -> None: ...
    def session_prompts(self, session_id: str) -> list[str]: ...
    def note_call(self, session_id: str, key: str) -> int: ...
    def lesson_state(self, session_id: str) -> LessonState: ...
    def mark_lesson(self, session_id: str, what: str) -> bool: ...
