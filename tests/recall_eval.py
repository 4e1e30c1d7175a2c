"""The recall evaluation over tests/fixtures/recall: load the items into a store, run
every prompt, and score what comes back. Used by test_recall_eval.py, and runnable as
`python tests/recall_eval.py` to print the figures while tuning."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kenning import items
from kenning.recall import RecallSettings, recall
from kenning.store import SQLiteStore

HERE = Path(__file__).parent / "fixtures" / "recall"


@dataclass
class Figures:
    prompts: int
    expected: int
    found: int
    returned: int
    forbidden_returned: int
    none_prompts: int
    none_quiet: int
    misses: list[str]
    leaks: list[str]

    @property
    def recall(self) -> float:
        return self.found / self.expected

    @property
    def precision(self) -> float:
        """Share of returned items that are not forbidden for the prompt."""
        return 1 - self.forbidden_returned / self.returned if self.returned else 1.0

    @property
    def quiet_rate(self) -> float:
        return self.none_quiet / self.none_prompts

    def line(self) -> str:
        return (
            f"recall {self.recall:.3f} ({self.found}/{self.expected}), precision "
            f"{self.precision:.3f} ({self.forbidden_returned} forbidden of {self.returned} "
            f"returned), nothing-prompts quiet {self.quiet_rate:.3f} "
            f"({self.none_quiet}/{self.none_prompts})"
        )


def load(store: SQLiteStore, now: datetime) -> dict[str, str]:
    """Add the fixture items; returns key -> item id."""
    keys: dict[str, str] = {}
    for line in (HERE / "items.jsonl").read_text().splitlines():
        row = json.loads(line)
        item = items.new_item(
            row["title"] + ("\n" + row["body"] if row.get("body") else ""),
            scope=items.parse_scope(row["scope"]),
            kind=items.parse_kind(row["kind"]),
            tags=row.get("tags", []),
        )
        stamp = (now - timedelta(days=row.get("age_days", 0))).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        item = replace(item, created_at=stamp, updated_at=stamp, expires_at=None)
        store.insert_item(item)
        keys[row["key"]] = item.id
    return keys


def evaluate(
    store: SQLiteStore, keys: dict[str, str], settings: RecallSettings, now: datetime
) -> Figures:
    by_id = {v: k for k, v in keys.items()}
    fig = Figures(0, 0, 0, 0, 0, 0, 0, [], [])
    for line in (HERE / "prompts.jsonl").read_text().splitlines():
        row = json.loads(line)
        result = recall(store, row["prompt"], row["scopes"], settings=settings, now=now)
        got = {by_id[c.item.id] for c in result.kept}
        expect, forbid = set(row["expect"]), set(row["forbid"])
        fig.prompts += 1
        fig.expected += len(expect)
        fig.found += len(got & expect)
        fig.returned += len(got)
        fig.forbidden_returned += len(got & forbid)
        fig.misses += [f"{row['id']}:{k}" for k in expect - got]
        fig.leaks += [f"{row['id']}:{k}" for k in got & forbid]
        if not expect:
            fig.none_prompts += 1
            fig.none_quiet += not got
    return fig


def main() -> None:
    import tempfile

    from kenning.store import open_store

    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "eval.db")
        keys = load(store, now)
        figures = evaluate(store, keys, RecallSettings(), now)
        store.close()
    print(figures.line())
    print("misses:", " ".join(figures.misses))
    print("leaks:", " ".join(figures.leaks))


if __name__ == "__main__":
    main()
