"""What the memory panel shows: each tab's list, a page at a time, and what one row holds.

`ken panel` is a face; everything it shows is read here, so the same answers hold for
any other face and for tests:

- **Views.** Each tab of memories is a `View`: which scopes and statuses, in which
  order. Waiting is best first (`kenning.rank`, the order `ken review` walks); the
  scope tabs and All are newest captured first, an order that approving, pinning or
  editing never reshuffles, so a person working down a list stays where they were. A
  view is read as a count and pages (`page`), never whole: a scope's own index gives a
  page at any depth without sorting the scope.
- **Here** is exactly what an agent starting here is told: the pack that `ken pack`
  builds (`deliver.pack_for`), in its order, with its token count.
- **Search** (`/` in a tab) is the full-text search of `ken search`, inside the view.
- **Details**: a memory with its versions and, for one that waits, what `ken review`
  shows; a session with every pack and recall it was told, the items and their text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kenning import items, rank, review
from kenning.config import Config
from kenning.deliver import COMPACTION, REPACK, RESTART, pack_for
from kenning.errors import InvalidInput, NotFound
from kenning.model import Item, Revision, Scope, ScopeType, Session, Status
from kenning.pack import Pack
from kenning.store import ItemQuery, SessionQuery, Store
from kenning.where import Where

SEARCH_LIMIT = 500  # hits a search in a tab shows, best first


@dataclass(frozen=True, slots=True)
class View:
    """The memories one tab lists: in `scopes` (any when empty), with `statuses` (any
    when empty), best first when `ranked`, else newest captured first."""

    scopes: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    ranked: bool = False

    def query(self, offset: int = 0, limit: int | None = None) -> ItemQuery:
        base = ItemQuery(
            scopes=self.scopes,
            statuses=self.statuses,
            include_expired=True,
            offset=offset,
            limit=limit,
            captured_first=not self.ranked,
        )
        return rank.query(base) if self.ranked else base


WAITING = View(statuses=(Status.PROPOSED.value,), ranked=True)
ALL = View()


def scope_view(where: Where, scope_type: ScopeType) -> View | None:
    """The tab for the scope of `scope_type` that applies here (None: none here)."""
    if scope_type is ScopeType.GLOBAL:
        return View(scopes=(str(Scope(ScopeType.GLOBAL)),))
    found = next((s for s in where.scopes if s.type is scope_type), None)
    return View(scopes=(str(found),)) if found else None


def count(store: Store, view: View) -> int:
    return store.count_items(view.query())


def page(store: Store, view: View, offset: int, limit: int) -> list[Item]:
    """`limit` memories of `view` from position `offset` on."""
    return store.list_items(view.query(offset, limit))


def find(store: Store, view: View, text: str, limit: int = SEARCH_LIMIT) -> list[Item]:
    """The memories of `view` that match `text`, best first (as `ken search` matches);
    nothing for text with no word in it."""
    try:
        found = items.search(
            store,
            text,
            scopes=view.scopes,
            statuses=view.statuses,
            include_expired=True,
            limit=limit,
        )
    except InvalidInput:
        return []
    return [f.item for f in found]


def find_told(store: Store, pack: Pack, text: str) -> list[Item]:
    """The memories of `pack` that match `text`, best first (as `ken search` matches)."""
    told = {i.id for i in pack.items}
    if not told:
        return []
    view = View(scopes=tuple({str(i.scope) for i in pack.items}), statuses=(Status.ACTIVE.value,))
    return [i for i in find(store, view, text) if i.id in told]


def waiting_count(store: Store) -> int:
    return count(store, WAITING)


def here(store: Store, config: Config, where: Where) -> Pack:
    """What an agent starting here is told: the pack `ken pack` prints (nothing is
    recorded as told)."""
    return pack_for(store, config, where, record=False)


@dataclass(frozen=True, slots=True)
class Detail:
    """One memory as the panel shows it: the memory, its versions oldest first, and
    for one that waits, its review context."""

    item: Item
    history: tuple[Revision, ...]
    session: Session | None
    neighbours: tuple[review.Neighbour, ...] = ()
    supersedes: Item | None = None  # what approving it retires


def detail(store: Store, item_id: str) -> Detail:
    item = store.get_item(item_id)
    history = tuple(store.revisions(item.id))
    if item.status is Status.PROPOSED:
        ctx = review.context(store, item)
        return Detail(item, history, ctx.session, ctx.neighbours, ctx.supersedes)
    return Detail(item, history, review.session_of(store, item))


# --- sessions ---------------------------------------------------------------------------


def session_count(store: Store) -> int:
    return store.count_sessions()


def sessions_page(store: Store, offset: int, limit: int) -> list[Session]:
    """Sessions of every agent and repo, newest first."""
    return store.list_sessions(SessionQuery(offset=offset, limit=limit))


def find_sessions(store: Store, text: str, limit: int = SEARCH_LIMIT) -> list[Session]:
    """Sessions whose prompts, agent, model or repo hold `text`, newest first."""
    if not text.strip():
        return []
    return store.list_sessions(SessionQuery(text=text.strip(), limit=limit))


@dataclass(frozen=True, slots=True)
class Delivery:
    """One thing a session was told: a pack or a recall (the prompt it answered), when,
    and its items with their text now (None: forgotten since). A compaction is a
    delivery with no items: what came before it may be told again; so is a repack, after
    which what packs told before may be, and a restart, after which all of it may."""

    at: str
    what: str
    query: str | None
    items: tuple[tuple[str, Item | None], ...]

    @property
    def is_compaction(self) -> bool:
        return self.what == COMPACTION

    @property
    def is_repack(self) -> bool:
        return self.what == REPACK

    @property
    def is_restart(self) -> bool:
        return self.what == RESTART

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "what": self.what,
            "query": self.query,
            "item_ids": [i for i, _ in self.items],
            "items": [
                {"id": i, "title": item.title if item else "(forgotten)"} for i, item in self.items
            ],
        }


def told(store: Store, session_id: str) -> list[Delivery]:
    """Every pack and recall a session was told, in order, with the items' text."""
    cache: dict[str, Item | None] = {}

    def item(item_id: str) -> Item | None:
        if item_id not in cache:
            try:
                cache[item_id] = store.get_item(item_id)
            except NotFound:
                cache[item_id] = None
        return cache[item_id]

    return [
        Delivery(entry.at, entry.what, entry.query, tuple((i, item(i)) for i in entry.item_ids))
        for entry in store.deliveries(session_id)
    ]


def titles(deliveries: Sequence[Delivery]) -> dict[str, str]:
    """Each told item's title (or "(forgotten)"), by id."""
    return {i: it.title if it else "(forgotten)" for d in deliveries for i, it in d.items}
