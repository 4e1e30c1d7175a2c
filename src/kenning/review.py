"""Reviewing what waits: proposals best first, each with what a person needs to decide.

Agents propose; people decide, and deciding has to be quick. `ken review` walks the
proposals one at a time and `ken panel` lists them; both read them here:

- **best first**, in the one order `kenning.rank` keeps for review, promotion and the
  cap (rules a person gave first, status notes last, then uses), read from the store a
  page at a time (`rank.query`), so a long queue is never read whole to show its top;
- **with its context**: who proposed it and why (the evidence, the session that wrote it
  and the prompt that started that session), the memory approving it supersedes (for a
  replacement kenning filed: `items.to_supersede`), and the memories already told that it
  repeats or reverses, found as `ken curate` finds them (`kenning.statements`: the same
  statement in other words, or a rule turned around), so a person sees "this is already
  there" before approving a copy;
- **in batches**: `select` gives every waiting memory a filter names, for `ken approve
  --all` and `ken reject --all` to count, confirm and decide.

Deciding is `items.set_status` (the person check is `kenning.policy`'s, there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kenning import curate, items, rank, statements
from kenning.errors import NotFound
from kenning.model import Item, Session, Status
from kenning.store import ItemQuery, Store, Term, Words

CANDIDATES = 40  # memories read for comparison with one proposal (best bm25 first)
MAX_WORDS = 24  # a proposal's words looked up for candidates
SHOWN = 5  # neighbours shown with a proposal


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A memory already told that a proposal repeats (`copy`) or turns around
    (`reversal`), and why the comparison says so."""

    item: Item
    relation: statements.Relation
    why: str


@dataclass(frozen=True, slots=True)
class Context:
    """A waiting memory and what a person deciding on it should see."""

    item: Item
    session: Session | None  # the session that proposed it, when it is still recorded
    neighbours: tuple[Neighbour, ...]
    supersedes: Item | None = None  # what approving it retires, the person is shown


def waiting_query(
    scopes: Sequence[str] = (),
    kinds: Sequence[str] = (),
    *,
    offset: int = 0,
    limit: int | None = None,
    skip: Sequence[str] = (),
) -> ItemQuery:
    """The store query for what waits (in `scopes`, of `kinds`; any when empty), best
    first; expired proposals too, since a person still decides on them."""
    return rank.query(
        ItemQuery(
            scopes=tuple(scopes),
            kinds=tuple(kinds),
            statuses=(Status.PROPOSED.value,),
            include_expired=True,
            offset=offset,
            limit=limit,
            exclude_ids=tuple(skip),
        )
    )


def count_waiting(store: Store, scopes: Sequence[str] = (), kinds: Sequence[str] = ()) -> int:
    return store.count_items(waiting_query(scopes, kinds))


def waiting(
    store: Store,
    scopes: Sequence[str] = (),
    kinds: Sequence[str] = (),
    *,
    offset: int = 0,
    limit: int | None = None,
    skip: Sequence[str] = (),
) -> list[Item]:
    """What waits, best first: a page of it with `offset` and `limit`, without the
    memories in `skip` (those a person passed over)."""
    return store.list_items(waiting_query(scopes, kinds, offset=offset, limit=limit, skip=skip))


def next_waiting(
    store: Store,
    scopes: Sequence[str] = (),
    kinds: Sequence[str] = (),
    skip: Sequence[str] = (),
) -> Item | None:
    """The best waiting memory not in `skip`, or None when nothing else waits."""
    found = waiting(store, scopes, kinds, limit=1, skip=skip)
    return found[0] if found else None


def select(store: Store, scopes: Sequence[str] = (), kinds: Sequence[str] = ()) -> list[Item]:
    """Every waiting memory the filters name, best first: a batch to decide."""
    return waiting(store, scopes, kinds)


def session_of(store: Store, item: Item) -> Session | None:
    """The session that wrote `item`, when its provenance names one still recorded."""
    ref = item.provenance.session
    if not ref:
        return None
    try:
        return store.get_session(ref)
    except NotFound:
        found = store.find_session_ids(ref)  # an agent's own session id
        return store.get_session(found[0]) if len(found) == 1 else None


def neighbours(store: Store, item: Item, limit: int = SHOWN) -> list[Neighbour]:
    """Active memories, in any scope, that `item` repeats or reverses, closest first.

    Candidates are the memories that share a word with it, best bm25 first; each is
    compared with it as `ken curate` compares two memories, the older one first (a
    proposal is the newer: the card says what approving it would change)."""
    [mine] = statements.read(store, [item.text])
    words = [w for w, c in zip(mine.words, mine.concepts, strict=True) if c]
    # Only the kinds curation compares: a handoff or a summary says where a session
    # stood (an automatic handoff only quotes its prompts), so nothing repeats or
    # reverses it.
    query = ItemQuery(
        kinds=tuple(sorted(k.value for k in curate.FOLDABLE)),
        statuses=(Status.ACTIVE.value,),
        limit=CANDIDATES,
        exclude_ids=(item.id,),
    )
    seek = Words(any_of=tuple(Term(w) for w in words[:MAX_WORDS]))
    others = [found for found, _ in store.search(seek, query)]
    if not others:
        return []
    lex = statements.lexicon(store)
    out: list[tuple[float, Neighbour]] = []
    for other, theirs in zip(others, statements.read(store, [o.text for o in others]), strict=True):
        older, _ = curate.older_first(other, item)
        verdict = (
            statements.relate(lex, theirs, mine)
            if older is other
            else statements.relate(lex, mine, theirs)
        )
        if verdict.relation is not None:
            out.append((verdict.shared, Neighbour(other, verdict.relation, verdict.why)))
    out.sort(key=lambda pair: -pair[0])  # stable: bm25's order among equals
    return [n for _, n in out[:limit]]


def context(store: Store, item: Item) -> Context:
    """`item` with its session, the memory approving it supersedes and the memories it
    repeats or reverses."""
    return Context(
        item,
        session_of(store, item),
        tuple(neighbours(store, item)),
        items.to_supersede(store, item),
    )
