"""The order memories are reviewed, promoted and kept in: one rule for every list.

Rules a person gave (preferences and corrections) come first, then what the agent
learned or was told to hold (decisions, facts, lessons), then notes and summaries, and
status notes (tasks, handoffs), which go stale fastest, last. Within a group, the memory
used most wins, then the one used last, then the one captured last. `ken curate` ranks
what waits for review with it, `ken review` and `ken panel` show what waits in it, `ken
promote` the approved batch, and the cap of active memories per scope archives from the
bottom of it.

`ranked` orders items in hand; `query` asks the store for the same order, so a long list
is read a page at a time (a test holds the two to one order).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from kenning.model import KINDS, Item, Kind
from kenning.store import ItemQuery

KIND_GROUP: dict[Kind, int] = {kind: spec.rank_group for kind, spec in KINDS.items()}


def ranked(items: Iterable[Item]) -> list[Item]:
    """`items` best first (see the module docstring); ties go to the newer id."""
    # Stable sorts from the last key to the first: the times are ISO text, so "newest
    # first" is a reversed sort on them, which a single key tuple cannot say.
    out = sorted(items, key=lambda i: i.id, reverse=True)
    out.sort(key=lambda i: i.created_at, reverse=True)
    out.sort(key=lambda i: i.last_used_at or "", reverse=True)
    out.sort(key=lambda i: i.use_count, reverse=True)
    out.sort(key=lambda i: KIND_GROUP[i.kind])
    return out


def query(base: ItemQuery) -> ItemQuery:
    """`base` read best first, in the order `ranked` gives."""
    return replace(base, kind_groups=tuple((k.value, g) for k, g in KIND_GROUP.items()))
