"""A maintenance plan's writes and its receipt in one PostgreSQL transaction.

As SQLite's (kenning.store.plans): a receipt under the plan's digest means it was
applied, and it is returned with nothing written; a plan id applied with other contents
is refused; every expected revision and status is checked against the rows as they are
now, read `FOR UPDATE` so no other writer moves them before this commits; then every
write, and the receipt. An advisory lock on the plan id makes two servers applying the
same plan take turns, so the second finds the first's receipt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from psycopg.types.json import Jsonb

from kenning.errors import InvalidInput, PlanConflict
from kenning.ids import short_id
from kenning.store.base import Conflict, PlannedChange, PlanReceipt, ReceiptStep, now_iso
from kenning.store.postgres.connection import Conn
from kenning.store.postgres.items import COLUMNS, insert_all, overwrite, row_to_item


def _conflicts(conn: Conn, changes: Sequence[PlannedChange]) -> list[Conflict]:
    targets = sorted({c.item_id for c in changes if c.new is None})
    rows = conn.execute(
        "SELECT id, revision, status FROM items WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
        (targets,),
    ).fetchall()
    stored = {r["id"]: (r["revision"], r["status"]) for r in rows}
    found = []
    for change in changes:
        if change.new is not None:
            continue
        short = short_id(change.item_id)
        if change.item_id not in stored:
            found.append(
                Conflict(change.index, change.item_id, "target_missing", f"item {short} is gone")
            )
            continue
        revision, status = stored[change.item_id]
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
    conn: Conn,
    lock: Any,
    digest: str,
    plan_id: str,
    owner: str,
    changes: Sequence[PlannedChange],
    steps: Sequence[ReceiptStep],
) -> tuple[PlanReceipt, bool]:
    """Apply `changes` and store the receipt (`steps` and when): (receipt, False); or,
    when this digest was applied before, (its receipt, True) with nothing written.
    `conn` is in the call's transaction; `lock(conn, key)` takes an advisory lock."""
    lock(conn, f"plan:{plan_id}")
    done = conn.execute("SELECT receipt FROM plan_receipts WHERE digest = %s", (digest,)).fetchone()
    if done is not None:
        return PlanReceipt.from_dict(done["receipt"]), True
    other = conn.execute(
        "SELECT digest FROM plan_receipts WHERE plan_id = %s", (plan_id,)
    ).fetchone()
    if other is not None:
        raise InvalidInput(
            f"plan '{plan_id}' was applied already with other contents ({other['digest'][:19]}); "
            "give a changed plan a new id"
        )
    conflicts = _conflicts(conn, changes)
    if conflicts:
        first = conflicts[0]
        raise PlanConflict(
            list(conflicts), f"operations[{first.index}] {first.code}: {first.detail}"
        )
    for change in changes:
        if change.new is not None:
            insert_all(conn, [change.new], change.change)
            continue
        row = conn.execute(
            f"SELECT {COLUMNS} FROM items WHERE id = %s", (change.item_id,)
        ).fetchone()
        assert row is not None  # locked above
        overwrite(conn, replace(row_to_item(row), **dict(change.fields)), change.change)
    stored = PlanReceipt(digest, plan_id, owner, now_iso(), tuple(steps))
    conn.execute(
        "INSERT INTO plan_receipts (digest, plan_id, owner, applied_at, receipt) "
        "VALUES (%s, %s, %s, %s, %s)",
        (digest, plan_id, owner, stored.applied_at, Jsonb(stored.to_dict())),
    )
    return stored, False
