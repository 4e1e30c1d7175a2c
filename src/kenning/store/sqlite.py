"""The SQLite store: one file the user owns, as the parts that make up `SQLiteStore`.

- `sqlite_core`: the connection, its short `BEGIN IMMEDIATE` transactions, the hook's
  deadline and spool, checkpoints and the wipe `forget` relies on.
- `sqlite_columns`: the `items` table's columns, described once.
- `sqlite_terms`: how text is split into words, and how many items hold each.
- `sqlite_items`: items, their versions and uses, forgetting.
- `sqlite_search`: full-text search over the items (the newest matches, by bm25).
- `sqlite_sessions`: sessions and what they were told.
- `sqlite_projects`: projects, and the stamps of files already read.
- `signals`: what the hooks noted for a session's run lessons.
- here: what reads or writes the whole file (the deep check, the repair, a plan).

Each part is a mixin over `Core` (items build on terms, since every write of an item
keeps the word counts; search builds on items), and `SQLiteStore` puts them together.
Nothing outside `store/` names it: domain code knows the `Store` protocol, and
`open_store` gives one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from kenning.store import health, plans
from kenning.store.base import PlannedChange, PlanReceipt, ReceiptStep
from kenning.store.signals import Signals
from kenning.store.sqlite_core import friendly
from kenning.store.sqlite_projects import Projects
from kenning.store.sqlite_search import Search
from kenning.store.sqlite_sessions import Sessions


class SQLiteStore(Search, Sessions, Projects, Signals):
    """kenning's store in one SQLite file."""

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def deep_check(self) -> health.Health:
        """Every self-check `ken doctor --deep` runs (see `kenning.store.health`)."""
        try:
            self._wait_for(write=True)  # its counts are read under the write lock
            return health.deep_check(self.conn)
        except sqlite3.Error as exc:
            raise friendly(exc, self.path) from None
        finally:
            self._wait_for(write=False)

    def apply_plan(
        self,
        digest: str,
        plan_id: str,
        owner: str,
        changes: Sequence[PlannedChange],
        steps: Sequence[ReceiptStep],
    ) -> tuple[PlanReceipt, bool]:
        """A plan's writes and its receipt in one transaction (see store/plans.py):
        (the receipt, whether it was there already and nothing was written)."""
        return plans.apply(self, digest, plan_id, owner, changes, steps)

    def plan_receipt(self, digest: str) -> PlanReceipt | None:
        try:
            return plans.receipt(self, digest)
        except sqlite3.Error as exc:
            raise friendly(exc, self.path) from None

    def plan_receipts(self, plan_id: str) -> list[PlanReceipt]:
        try:
            return plans.receipts_for(self, plan_id)
        except sqlite3.Error as exc:
            raise friendly(exc, self.path) from None

    def repair(self) -> health.Repair:
        """Rebuild the search index and word counts, drop orphaned rows: one transaction."""
        try:
            self._wait_for(write=True)
            self._recounted()
            return health.repair(self.conn)
        except sqlite3.Error as exc:
            raise friendly(exc, self.path) from None
        finally:
            self._wait_for(write=False)
