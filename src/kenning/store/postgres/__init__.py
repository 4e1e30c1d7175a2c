"""The PostgreSQL store: kenning's memory in one schema of a PostgreSQL database.

The same `Store` protocol as SQLite's file (kenning.store.base), for the team server,
which keeps one workspace per schema. `kenning.store.open_store` opens it for a
`postgresql://` URL; nothing imports this package (nor psycopg) before that, so the hook
path never does. The parts: `connection` (the pool, the schema, one transaction per
call, `together()`), `migrations`, `items`, `terms` (words, counts and tsquery input),
`sessions` and `plans`. docs/reference/schema-postgres.md describes the schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from kenning.store.base import PlannedChange, PlanReceipt, ReceiptStep
from kenning.store.postgres import plans
from kenning.store.postgres.connection import DEFAULT_SCHEMA, Connection
from kenning.store.postgres.items import Items
from kenning.store.postgres.sessions import Sessions
from kenning.store.postgres.terms import Vocabulary

__all__ = ["DEFAULT_SCHEMA", "PostgresStore"]


class PostgresStore(Connection, Vocabulary, Items, Sessions):
    """kenning's store in one schema of a PostgreSQL database (created, and migrated,
    when it is opened)."""

    def apply_plan(
        self,
        digest: str,
        plan_id: str,
        owner: str,
        changes: Sequence[PlannedChange],
        steps: Sequence[ReceiptStep],
    ) -> tuple[PlanReceipt, bool]:
        """A plan's writes and its receipt in one transaction (see postgres/plans.py):
        (the receipt, whether it was there already and nothing was written)."""
        with self._write() as conn:
            return plans.apply(conn, self._lock, digest, plan_id, owner, changes, steps)

    def plan_receipt(self, digest: str) -> PlanReceipt | None:
        rows = self._read("SELECT receipt FROM plan_receipts WHERE digest = %s", (digest,))
        return PlanReceipt.from_dict(rows[0]["receipt"]) if rows else None

    def plan_receipts(self, plan_id: str) -> list[PlanReceipt]:
        rows = self._read(
            "SELECT receipt FROM plan_receipts WHERE plan_id = %s ORDER BY applied_at",
            (plan_id,),
        )
        return [PlanReceipt.from_dict(r["receipt"]) for r in rows]
