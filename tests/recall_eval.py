"""Recall evaluation: load a set of memories into a store, ask every prompt, score what
comes back, beside a plain FTS5 bm25 query over the same store.

Six sets live in tests/fixtures (each folder's README says how it was written):

- `recall_coding`: 301 memories a team's agents would hold (seven repos, workstreams,
  projects, a workspace, global preferences), 295 prompts expecting 1-3 of them and 70
  that should get nothing.
- `recall_dialogue`: 1,022 turns of five long conversations between two people, one
  memory per turn, and 305 questions about them, each with its evidence turn(s).
- `recall`: the first set (248 memories, 143 prompts, with forbidden neighbours).
- `recall_check`, `recall_fresh` and `recall_held`: three held-out coding sets of other
  companies, only reported (`check`, `fresh`, `held`).

The first two are split in halves, `dev` (tune on it) and `test` (only report it).

Used by test_recall_eval.py (floors) and bench/recall_bench.py (figures); runnable as
`python tests/recall_eval.py [SET] [--split dev|test] [--misses]` while tuning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kenning import items
from kenning.errors import InvalidInput
from kenning.recall import RecallSettings, recall
from kenning.store import SQLiteStore

FIXTURES = Path(__file__).parent / "fixtures"
SETS = {
    "coding": "recall_coding",
    "dialogue": "recall_dialogue",
    "first": "recall",
    "check": "recall_check",
    "fresh": "recall_fresh",
    "held": "recall_held",
}
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TOP = 5

# Ask a store for item ids, best first: one of these per way of ranking.
Ranker = Callable[[SQLiteStore, str, Sequence[str]], list[str]]


@dataclass(frozen=True)
class EvalSet:
    name: str
    items: list[dict]
    prompts: list[dict]

    def split(self, name: str | None) -> list[dict]:
        return [p for p in self.prompts if name is None or p.get("split") == name]


def read_set(name: str) -> EvalSet:
    folder = FIXTURES / SETS[name]

    def rows(file: str) -> list[dict]:
        return [json.loads(line) for line in (folder / file).read_text().splitlines() if line]

    return EvalSet(name, rows("items.jsonl"), rows("prompts.jsonl"))


def stock(store: SQLiteStore, evalset: EvalSet, now: datetime = NOW) -> dict[str, str]:
    """Add the set's memories, each last changed `age_days` before `now`; key -> id."""
    keys: dict[str, str] = {}
    batch = []
    for row in evalset.items:
        item = items.new_item(
            row["title"] + ("\n" + row["body"] if row.get("body") else ""),
            scope=items.parse_scope(row["scope"]),
            kind=items.parse_kind(row["kind"]),
            tags=row.get("tags", []),
        )
        stamp = (now - timedelta(days=row.get("age_days", 0))).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        batch.append(replace(item, created_at=stamp, updated_at=stamp, expires_at=None))
        keys[row["key"]] = item.id
    store.insert_many(batch, change="add")
    return keys


def kenning_ranker(settings: RecallSettings, now: datetime = NOW) -> Ranker:
    def rank(store: SQLiteStore, prompt: str, scopes: Sequence[str]) -> list[str]:
        result = recall(store, prompt, scopes, settings=settings, now=now)
        return [c.item.id for c in result.kept]

    return rank


DEFAULTS = RecallSettings()
# What `ken recall --limit 5 --min-score 0 --min-shared 0` does: every gate off.
OPEN = replace(DEFAULTS, limit=TOP, min_score=0.0, min_shared=0)
_WORD = re.compile(r"[^\W_]+")


def search_ranker(fill: bool = True, limit: int = TOP) -> Ranker:
    """`ken search` (and MCP's `memory_search`) with the prompt as the query: every-word
    matches first, then, with `fill`, what recall ranks best with thresholds off."""

    def rank(store: SQLiteStore, prompt: str, scopes: Sequence[str]) -> list[str]:
        try:
            found = items.search(store, prompt, scopes=scopes, limit=limit, fill=fill)
        except InvalidInput:  # a prompt with no word in it
            return []
        return [f.item.id for f in found]

    return rank


def bm25_ranker(limit: int = TOP) -> Ranker:
    """A plain FTS5 query: every word of the prompt ORed, ranked by bm25(), in scope."""

    def rank(store: SQLiteStore, prompt: str, scopes: Sequence[str]) -> list[str]:
        words = dict.fromkeys(w.lower() for w in _WORD.findall(prompt))
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        marks = ", ".join("?" * len(scopes))
        rows = store.conn.execute(
            "SELECT items.id FROM items_fts JOIN items ON items.rowid = items_fts.rowid "
            f"WHERE items_fts MATCH ? AND items.status = 'active' AND items.scope IN ({marks}) "
            f"ORDER BY bm25(items_fts) LIMIT {int(limit)}",
            [match, *scopes],
        ).fetchall()
        return [r[0] for r in rows]

    return rank


@dataclass
class Figures:
    prompts: int = 0
    expected: int = 0  # expected (prompt, memory) pairs
    found: int = 0  # of those, returned
    returned: int = 0
    returned_expected: int = 0
    forbidden_returned: int = 0
    relevant: int = 0  # prompts that expect something
    hits: int = 0  # of those, with at least one expected memory returned
    none_prompts: int = 0
    none_quiet: int = 0
    misses: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        """Share of expected memories returned (recall@5 at the default limit)."""
        return self.found / self.expected if self.expected else 1.0

    @property
    def precision(self) -> float:
        """Share of returned memories that the prompt expects."""
        return self.returned_expected / self.returned if self.returned else 1.0

    @property
    def not_forbidden(self) -> float:
        """Share of returned memories that are not forbidden (the first set's measure)."""
        return 1 - self.forbidden_returned / self.returned if self.returned else 1.0

    @property
    def quiet(self) -> float:
        """Share of prompts that expect nothing and got nothing."""
        return self.none_quiet / self.none_prompts if self.none_prompts else 1.0

    @property
    def hit_rate(self) -> float:
        """Share of prompts expecting something with at least one of it returned."""
        return self.hits / self.relevant if self.relevant else 1.0

    def line(self) -> str:
        return (
            f"recall {self.recall:.3f} ({self.found}/{self.expected}), precision "
            f"{self.precision:.3f} ({self.returned_expected}/{self.returned}), quiet "
            f"{self.quiet:.3f} ({self.none_quiet}/{self.none_prompts}), hit "
            f"{self.hit_rate:.3f} ({self.hits}/{self.relevant}), not forbidden "
            f"{self.not_forbidden:.3f}"
        )


def score(
    store: SQLiteStore,
    keys: dict[str, str],
    prompts: Sequence[dict],
    ranker: Ranker,
) -> Figures:
    by_id = {v: k for k, v in keys.items()}
    fig = Figures()
    for row in prompts:
        got = [by_id[i] for i in ranker(store, row["prompt"], row["scopes"])]
        expect, forbid = set(row["expect"]), set(row.get("forbid", ()))
        returned = set(got)
        fig.prompts += 1
        fig.expected += len(expect)
        fig.found += len(returned & expect)
        fig.returned += len(returned)
        fig.returned_expected += len(returned & expect)
        fig.forbidden_returned += len(returned & forbid)
        fig.misses += [f"{row['id']}:{k}" for k in sorted(expect - returned)]
        fig.leaks += [f"{row['id']}:{k}" for k in sorted(returned - expect)]
        if expect:
            fig.relevant += 1
            fig.hits += bool(returned & expect)
        else:
            fig.none_prompts += 1
            fig.none_quiet += not returned
    return fig


def main(argv: Sequence[str] | None = None) -> None:
    import argparse
    import tempfile

    from kenning.store import open_store

    parser = argparse.ArgumentParser(description="Print recall figures for one set.")
    parser.add_argument("set", nargs="?", default="coding", choices=sorted(SETS))
    parser.add_argument("--split", choices=["dev", "test"])
    parser.add_argument("--misses", action="store_true", help="list misses and leaks")
    args = parser.parse_args(argv)
    evalset = read_set(args.set)
    prompts = evalset.split(args.split)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "eval.db")
        keys = stock(store, evalset)
        rankers = {
            "defaults": kenning_ranker(DEFAULTS),
            "open": kenning_ranker(OPEN),
            "bm25": bm25_ranker(),
        }
        for name, ranker in rankers.items():
            figures = score(store, keys, prompts, ranker)
            print(f"{name:9s} {figures.line()}")
            if args.misses and name == "defaults":
                print("  misses:", " ".join(figures.misses))
                print("  leaks:", " ".join(figures.leaks))
        store.close()


if __name__ == "__main__":
    main()
