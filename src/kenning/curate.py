"""Curation: what to review first, and what to fold, supersede or retire.

`curate` applies nothing. It returns

- **waiting**: the proposals a person has not decided, best first (`kenning.rank`:
  rules a person gave first, status notes last, then uses, newest use, newest capture);
- **proposals**, each with the reason it was made:
  - *fold*: memories that say the same thing (`kenning.statements`: the same statement
    in other words, in any scope) become one record that cites them all. The record is
    the best-ranked of the copies whose scope covers all the others' (the same scope,
    `global`, or a repo over its own workstreams); when none does, a new record in
    `global` with the copies' sources, since a statement repeated in unrelated places
    holds everywhere. The others are marked superseded by it;
  - *supersede*: a newer active rule that reverses or replaces an older one on the same
    topic, in a scope that covers the older's: the older is superseded by it. Newer is
    what a person stood behind last (`older_first`), not what was stored last. A
    proposal that reverses an active rule is left to review (approving it does that);
  - *retire*: expired tasks, and active memories unused for `lint.unused_days` with no
    pin (archived, with the reason).

`plan_for` writes the proposals as a maintenance plan (`kenning.plans`), each memory in
one operation at most, so a person previews it and applies it whole.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from kenning import items, plans, policy, rank, statements
from kenning.ids import short_id
from kenning.model import Item, Kind, Scope, ScopeType, Status, kinds_where
from kenning.store import ItemQuery, Store, now_iso

Action = Literal["fold", "supersede", "retire"]
FOLDABLE = frozenset(kinds_where(lambda spec: spec.foldable))
COMMON = 50  # a concept held by more memories than this finds no candidates alone
PLAN_OWNER = "ken curate"


@dataclass(frozen=True, slots=True)
class Proposal:
    """One change curation suggests. `items` are what it retires (fold: the copies that
    go; supersede: the older rule; retire: the one item); `keep` is what stays (fold:
    the record that cites them, None for a new one in `into_scope`; supersede: the newer
    rule)."""

    action: Action
    items: tuple[Item, ...]
    keep: Item | None
    why: str
    into_scope: Scope | None = None

    def to_dict(self) -> dict[str, Any]:
        def brief(item: Item) -> dict[str, Any]:
            return {
                "id": item.id,
                "short_id": short_id(item.id),
                "title": item.title,
                "kind": item.kind.value,
                "scope": str(item.scope),
                "status": item.status.value,
                "revision": item.revision,
            }

        return {
            "action": self.action,
            "items": [brief(i) for i in self.items],
            "keep": brief(self.keep) if self.keep else None,
            "into_scope": str(self.into_scope) if self.into_scope else None,
            "why": self.why,
        }


@dataclass(frozen=True, slots=True)
class Curation:
    waiting: tuple[Item, ...]
    proposals: tuple[Proposal, ...]
    notes: tuple[str, ...] = ()  # what a person should know but no plan can do

    def to_dict(self) -> dict[str, Any]:
        return {
            "waiting": [
                {
                    "id": i.id,
                    "short_id": short_id(i.id),
                    "title": i.title,
                    "kind": i.kind.value,
                    "scope": str(i.scope),
                    "use_count": i.use_count,
                    "created_at": i.created_at,
                }
                for i in self.waiting
            ],
            "proposals": [p.to_dict() for p in self.proposals],
            "notes": list(self.notes),
        }


def covers(outer: Scope, inner: Scope) -> bool:
    """Whether a memory in `outer` applies wherever one in `inner` does (one whose scope
    no longer reads applies nowhere)."""
    if outer == inner:
        return True
    if outer.unreadable or inner.unreadable:
        return False
    if outer.type is ScopeType.GLOBAL:
        return True
    if outer.type is ScopeType.REPO and inner.type is ScopeType.WORKSTREAM:
        return inner.value.partition("#")[0] == outer.value
    return False


def _pairs(read: Sequence[statements.Statement]) -> Iterable[tuple[int, int]]:
    """Pairs of memories that share a concept not held by too many (the candidates)."""
    holders: dict[str, list[int]] = defaultdict(list)
    for n, statement in enumerate(read):
        for concept in statement.content:
            holders[concept].append(n)
    seen: set[tuple[int, int]] = set()
    for members in holders.values():
        if len(members) > COMMON:
            continue
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                if (i, j) not in seen:
                    seen.add((i, j))
                    yield i, j


def older_first(a: Item, b: Item) -> tuple[Item, Item]:
    """Two memories, the older statement first: whichever a person stood behind last is
    the newer, however they were stored. A proposal is newer than what is told (what
    approving it would change); of two others, the one written, approved or restored
    last (`reviewed_at`: approving an old proposal makes it the newest rule)."""

    def said(item: Item) -> tuple[bool, str, str]:
        stated = max(item.created_at, item.reviewed_at or "")
        return item.status is Status.PROPOSED, stated, item.id

    return (a, b) if said(a) <= said(b) else (b, a)


Pair = tuple[Item, Item, str]  # the older statement, the newer, and why they relate


def related(store: Store, found: Sequence[Item]) -> tuple[list[Pair], list[Pair]]:
    """The pairs of `found` that say the same thing (copies), and those where the newer
    reverses the older (reversals), as `kenning.statements` reads them; only memories of
    the kinds that state something (FOLDABLE) and not kept from a file."""
    live = [i for i in found if i.kind in FOLDABLE and not i.source]
    read = statements.read(store, [i.text for i in live])
    lex = statements.lexicon(store)
    copies: list[Pair] = []
    reversals: list[Pair] = []
    for i, j in _pairs(read):
        older, newer = older_first(live[i], live[j])
        a, b = (read[i], read[j]) if older is live[i] else (read[j], read[i])
        verdict = statements.relate(lex, a, b)
        if verdict.relation == "copy":
            copies.append((older, newer, verdict.why))
        elif verdict.relation == "reversal":
            reversals.append((older, newer, verdict.why))
    return copies, reversals


def curate(
    store: Store,
    *,
    scopes: Sequence[str] = (),
    unused_days: int = 90,
    now: str | None = None,
    exclude_repos: tuple[str, ...] = (),
    known: Callable[[Item], bool] | None = None,
) -> Curation:
    """What waits, best first, and what to fold, supersede and retire, among the
    memories of `scopes` (of no repo of `exclude_repos`: `ItemQuery.exclude_repos`) that
    `known` keeps (an agent's shell: what it may be told of)."""
    now = now or now_iso()
    query = ItemQuery(
        scopes=tuple(scopes),
        statuses=("active", "proposed"),
        include_expired=True,
        exclude_repos=exclude_repos,
    )
    found = [i for i in store.list_items(query) if known is None or known(i)]
    waiting = tuple(rank.ranked(i for i in found if i.status is Status.PROPOSED))
    # A proposed replacement (an agent's revision of a memory not its own) is new words
    # for that memory, to review: folding it away would drop them unseen.
    revises = {
        i.id: target.id for i in waiting if (target := items.to_supersede(store, i)) is not None
    }
    copies, reversals = related(store, found)
    copies = [c for c in copies if not revises.keys() & {c[0].id, c[1].id}]
    proposals: list[Proposal] = []
    notes: list[str] = []
    replaced: dict[str, list[tuple[Item, str]]] = defaultdict(list)
    newest: dict[str, Item] = {}
    for older, newer, why in reversals:
        if older.kind not in policy.RULE_KINDS or newer.kind not in policy.RULE_KINDS:
            continue
        if not covers(newer.scope, older.scope) or older.status is not Status.ACTIVE:
            continue
        if newer.status is Status.PROPOSED and revises.get(newer.id) == older.id:
            notes.append(
                f"proposal {short_id(newer.id)} revises active {short_id(older.id)} "
                f"({why}): approving it supersedes {short_id(older.id)}; review it"
            )
            continue
        if newer.status is Status.PROPOSED:
            notes.append(
                f"proposal {short_id(newer.id)} reverses active {short_id(older.id)} "
                f"({why}): approving it supersedes nothing by itself; review both"
            )
            continue
        replaced[newer.id].append((older, why))
        newest[newer.id] = newer
    for newer_id, olders in replaced.items():
        # An older rule reversed by several newer ones goes to the newest of them only.
        mine = [
            (o, why)
            for o, why in olders
            if max(
                (n for n, os in replaced.items() if any(x.id == o.id for x, _ in os)),
                key=lambda n: (newest[n].created_at, n),
            )
            == newer_id
        ]
        if mine:
            proposals.append(
                Proposal(
                    "supersede",
                    tuple(o for o, _ in mine),
                    newest[newer_id],
                    f"{short_id(newer_id)} reverses "
                    + "; ".join(f"{short_id(o.id)} ({why})" for o, why in mine),
                )
            )
    proposals += _folds(copies)
    taken = {i.id for p in proposals for i in (*p.items, *([p.keep] if p.keep else []))}
    proposals += _retirements([i for i in found if i.id not in taken], unused_days, now)
    return Curation(waiting, tuple(proposals), tuple(notes))


def _folds(copies: Sequence[Pair]) -> list[Proposal]:
    """Groups of copies (joined through any pair), each as one fold."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    by_id: dict[str, Item] = {}
    for older, newer, _ in copies:
        by_id[older.id], by_id[newer.id] = older, newer
        parent[root(newer.id)] = root(older.id)
    groups: dict[str, list[Item]] = defaultdict(list)
    for item_id, item in by_id.items():
        groups[root(item_id)].append(item)
    return [fold for group in groups.values() for fold in _fold(group)]


def _fold(group: Sequence[Item]) -> list[Proposal]:
    """One group of copies as a fold, within what a person decided. The record that
    stays is an active copy whose scope covers all the others' (a pinned one first, then
    the best ranked); a pinned copy is never folded away. When none covers them: a new
    record in global, only from active copies that are not pinned, since a new record
    is active at once: proposals made one would be a rule no person approved, told
    everywhere. What is left out waits for review, or stays as it is."""
    order = rank.ranked(group)
    order.sort(key=lambda i: (i.status is not Status.ACTIVE, not i.pinned))
    keep = next(
        (
            i
            for i in order
            if i.status is Status.ACTIVE and all(covers(i.scope, o.scope) for o in group)
        ),
        None,
    )
    if keep is not None:
        rest = tuple(i for i in order if i is not keep and not i.pinned)
        if not rest:
            return []
        scopes = sorted({str(i.scope) for i in (keep, *rest)})
        where = f"in {scopes[0]}" if len(scopes) == 1 else f"in {', '.join(scopes)}"
        return [
            Proposal(
                "fold",
                rest,
                keep,
                f"{len(rest) + 1} memories say the same {where}: {short_id(keep.id)} "
                "stays and cites the others",
            )
        ]
    settled = [i for i in order if i.status is Status.ACTIVE and not i.pinned]
    if len(settled) < len(order):
        return _fold(settled) if len(settled) > 1 else []
    scopes = sorted({str(i.scope) for i in order})
    return [
        Proposal(
            "fold",
            tuple(order),
            None,
            f"{len(order)} memories say the same in {', '.join(scopes)}: one record "
            "in global, since it holds in unrelated places",
            Scope(ScopeType.GLOBAL),
        )
    ]


def _retirements(found: Sequence[Item], unused_days: int, now: str) -> list[Proposal]:
    cutoff = (datetime.fromisoformat(now) - timedelta(days=unused_days)).astimezone(UTC)
    stamp = cutoff.strftime("%Y-%m-%dT%H:%M:%S")
    out = []
    for item in found:
        if item.status is not Status.ACTIVE or item.pinned or item.source:
            continue
        if item.kind is Kind.TASK and item.expires_at and item.expires_at <= now:
            out.append(
                Proposal("retire", (item,), None, f"expired task (on {item.expires_at[:10]})")
            )
        elif item.idle_since < stamp:
            last = f"last used {item.last_used_at[:10]}" if item.last_used_at else "never used"
            out.append(Proposal("retire", (item,), None, f"unused for {unused_days} days ({last})"))
    return out


def plan_for(
    curation: Curation,
    *,
    plan_id: str | None = None,
    now: str | None = None,
    left: list[tuple[Proposal, str]] | None = None,
) -> dict[str, Any]:
    """The proposals as a maintenance plan (JSON, as `ken plan` reads it): superseding
    first, then folds, then retirements; a memory already in an operation is left out of
    later ones, and at most 100 operations are written. Each proposal left out is added
    to `left`, with why."""
    used: set[str] = set()
    operations: list[dict[str, Any]] = []
    for action in ("supersede", "fold", "retire"):
        for proposal in curation.proposals:
            if proposal.action != action:
                continue
            if len(operations) >= plans.MAX_OPERATIONS:
                if left is not None:
                    left.append(
                        (proposal, f"over the {plans.MAX_OPERATIONS} operations a plan holds")
                    )
                continue
            touched = {i.id for i in proposal.items} | (
                {proposal.keep.id} if proposal.keep else set()
            )
            if touched & used:
                if left is not None:
                    left.append((proposal, "a memory of it is in an operation before it"))
                continue
            used |= touched
            operations.append(_operation(proposal))
    stamp = (now or now_iso())[:19].replace(":", "").replace("-", "")
    return {
        "schema": plans.SCHEMA,
        "id": plan_id or f"curate-{stamp}",
        "owner": PLAN_OWNER,
        "operations": operations,
    }


def _operation(proposal: Proposal) -> dict[str, Any]:
    if proposal.action == "retire":
        [item] = proposal.items
        return {
            "op": "retire",
            "id": item.id,
            "expected_revision": item.revision,
            "reason": proposal.why,
        }
    expected = {i.id: i.revision for i in proposal.items}
    if proposal.keep is not None:
        expected[proposal.keep.id] = proposal.keep.revision
        into: Any = proposal.keep.id
    else:
        first = proposal.items[0]
        assert proposal.into_scope is not None
        into = {
            "text": first.text,
            "kind": first.kind.value,
            "scope": str(proposal.into_scope),
            "tags": list(dict.fromkeys(t for i in proposal.items for t in i.tags)),
            "sources": list(  # where the copies came from; the record cites the copies too
                dict.fromkeys(str(x) for i in proposal.items for x in i.links if x.type != "item")
            ),
        }
    return {
        "op": "retire_into",
        "ids": [i.id for i in proposal.items],
        "expected_revisions": expected,
        "into": into,
    }
