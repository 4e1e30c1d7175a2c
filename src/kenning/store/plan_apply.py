"""A maintenance plan's apply flow, the same on every backend.

The flow: a receipt under the plan's digest means it was applied (it is returned and
nothing is written); a plan id applied with other contents is refused; every expected
revision and status is checked against the rows as they are now; then every write, and
the receipt. The caller runs it inside its one write transaction and passes in the few
things that differ by backend (its SQL, its JSON, its locking) as `PlanBackend`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kenning.errors import InvalidInput, PlanConflict
from kenning.ids import short_id
from kenning.store.base import Conflict, PlannedChange, PlanReceipt, ReceiptStep, now_iso


@dataclass(frozen=True)
class PlanBackend:
    """One backend's part of `apply`, bound to the transaction's connection."""

    receipt: Callable[[str], PlanReceipt | None]
    """The receipt stored under a digest, if any."""
    applied_digest: Callable[[str], str | None]
    """The digest a plan id was applied under, if any."""
    current: Callable[[list[str]], Mapping[str, tuple[str, str]]]
    """The (revision, status) of each of these item ids that exists (sorted ids in)."""
    insert: Callable[[PlannedChange], None]
    """Write a change that adds an item (`change.new`)."""
    update: Callable[[PlannedChange], None]
    """Write a change that edits an item (`change.fields` onto the stored one)."""
    store_receipt: Callable[[PlanReceipt], None]


def conflicts(
    changes: Sequence[PlannedChange], current: Mapping[str, tuple[str, str]]
) -> list[Conflict]:
    """Each change whose target is gone, at another revision, or not in an expected status."""
    found = []
    for change in changes:
        if change.new is not None:
            continue
        short = short_id(change.item_id)
        if change.item_id not in current:
            found.append(
                Conflict(change.index, change.item_id, "target_missing", f"item {short} is gone")
            )
            continue
        revision, status = current[change.item_id]
        if revision != change.expected_revision:
            found.append(
                Conflict(
                    change.index,
                    change.item_id,
                    "revision_changed",
                    f"item {short} is at revision {revision}, the plan expects "
                    f"{change.expected_revision}",
                )
            )
        elif change.statuses and status not in change.statuses:
            found.append(
                Conflict(
                    change.index,
                    change.item_id,
                    "already_retired",
                    f"item {short} is {status} already",
                )
            )
    return found


def apply(
    backend: PlanBackend,
    digest: str,
    plan_id: str,
    owner: str,
    changes: Sequence[PlannedChange],
    steps: Sequence[ReceiptStep],
) -> tuple[PlanReceipt, bool]:
    """Apply `changes` and store the receipt (`steps` and when): (receipt, False); or,
    when this digest was applied before, (its receipt, True) with nothing written."""
    done = backend.receipt(digest)
    if done is not None:
        return done, True
    other = backend.applied_digest(plan_id)
    if other is not None:
        raise InvalidInput(
            f"plan '{plan_id}' was applied already with other contents ({other[:19]}); "
            "give a changed plan a new id"
        )
    targets = sorted({c.item_id for c in changes if c.new is None})
    found = conflicts(changes, backend.current(targets))
    if found:
        first = found[0]
        raise PlanConflict(list(found), f"operations[{first.index}] {first.code}: {first.detail}")
    for change in changes:
        if change.new is not None:
            backend.insert(change)
        else:
            backend.update(change)
    stored = PlanReceipt(digest, plan_id, owner, now_iso(), tuple(steps))
    backend.store_receipt(stored)
    return stored, False
