"""Both backends on the same memories: import, search, recall and a pack.

Makes ITEMS items of generated text (a few common words, many rare ones) and puts them
in a fresh SQLite file and in a fresh schema of a PostgreSQL database, then times each
backend on the same reads: a search for a word every item holds, for a rare word, for
two words, and for a prefix; recall for a prompt; a pack of the scope. Each read runs
ROUNDS times; the median is reported.

Run: `python bench/store_bench.py postgresql://USER@HOST/DB` (a database the role may
create a schema in; `python tests/pgcluster.py start DIR` prints a throwaway one).
Prints one JSON object and writes it to `bench/store_results.json`; the schema it
made is dropped after. No target is
asserted: the contract tests say what each backend must do, this how fast it does it.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from common import progress  # noqa: E402
from kenning import items  # noqa: E402
from kenning.model import Item, Scope, ScopeType  # noqa: E402
from kenning.pack import build_pack  # noqa: E402
from kenning.recall import recall  # noqa: E402
from kenning.store import ItemQuery, Store, Words, open_store  # noqa: E402

ITEMS = 20_000
ROUNDS = 7
REPO = Scope(ScopeType.REPO, "github.com/acme/shop")
SEARCHES = {
    "every item": "deploy",
    "rare word": "word1234",
    "two words": "deploy word12",
    "prefix": "wor",
}


def corpus(n: int) -> Iterator[Item]:
    rng = random.Random(7)
    vocab = [f"word{i}" for i in range(3000)]
    for i in range(n):
        title = f"Deploy note {i} " + " ".join(rng.choices(vocab, k=8))
        yield items.new_item(f"{title}\n" + " ".join(rng.choices(vocab, k=30)), scope=REPO)


def median_ms(run: Callable[[], Any]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 1)


def measure(store: Store, made: list[Item]) -> dict[str, Any]:
    start = time.perf_counter()
    store.insert_many(made)
    out: dict[str, Any] = {"import_s": round(time.perf_counter() - start, 1)}
    for name, typed in SEARCHES.items():
        out[f"search {name} ms"] = median_ms(
            lambda typed=typed: store.search(Words(typed=typed), ItemQuery(limit=20))
        )
    out["recall ms"] = median_ms(
        lambda: recall(store, "how do we deploy word12 notes?", [str(REPO)])
    )
    out["pack ms"] = median_ms(lambda: build_pack(store, [str(REPO)]))
    return out


def main(url: str) -> dict[str, Any]:
    made = list(corpus(ITEMS))
    results: dict[str, Any] = {"items": ITEMS, "rounds": ROUNDS}
    with tempfile.TemporaryDirectory() as folder:
        progress("sqlite", "store")
        sqlite = open_store(Path(folder) / "bench.db")
        try:
            results["sqlite"] = measure(sqlite, made)
        finally:
            sqlite.close()
    progress("postgres", "store")
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    postgres = open_store(url, schema=schema)
    try:
        results["postgres"] = measure(postgres, made)
    finally:
        postgres.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    return results


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python bench/store_bench.py postgresql://USER@HOST/DB")
    found = main(sys.argv[1])
    text = json.dumps(found, indent=2)
    print(text)
    (Path(__file__).parent / "store_results.json").write_text(text + "\n")
