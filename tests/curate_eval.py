"""The labelled pairs curation is measured on: for each split, the precision and recall
of "the same statement" (copy) and "reverses or replaces" (reversal).

`tests/fixtures/curate/pairs.jsonl` (its README says how it was written) holds 250
pairs, an older and a newer memory each, labelled copy, reversal or unrelated (memories
that look alike and say something else). Used by test_curate_eval.py (floors) and
docs/explanation/curation.md (figures); runnable as `python tests/curate_eval.py
[--misses]`.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kenning import statements
from kenning.store import open_store

PAIRS = Path(__file__).parent / "fixtures" / "curate" / "pairs.jsonl"
SPLITS = ("dev", "test", "fresh")


@dataclass(frozen=True)
class Figure:
    hits: int
    said: int  # pairs the comparison put in the class
    labelled: int  # pairs labelled with it

    @property
    def precision(self) -> float:
        return self.hits / self.said if self.said else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.labelled if self.labelled else 1.0

    def __str__(self) -> str:
        return (
            f"precision {self.precision:.3f} ({self.hits}/{self.said}), "
            f"recall {self.recall:.3f} ({self.hits}/{self.labelled})"
        )


def read_pairs() -> list[dict[str, str]]:
    return [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]


def judge(pairs: list[dict[str, str]]) -> list[statements.Verdict]:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "memory.db")
        try:
            read = statements.read(store, [t for p in pairs for t in (p["older"], p["newer"])])
            lex = statements.lexicon(store)
        finally:
            store.close()
    return [statements.relate(lex, read[2 * n], read[2 * n + 1]) for n in range(len(pairs))]


def figures(
    pairs: list[dict[str, str]], verdicts: list[statements.Verdict], split: str | None = None
) -> dict[str, Figure]:
    chosen = [(p, v) for p, v in zip(pairs, verdicts, strict=True) if split in (None, p["split"])]
    out = {}
    for label in ("copy", "reversal"):
        said = [p for p, v in chosen if v.relation == label]
        out[label] = Figure(
            sum(1 for p in said if p["label"] == label),
            len(said),
            sum(1 for p, _ in chosen if p["label"] == label),
        )
    return out


def main() -> None:
    pairs = read_pairs()
    verdicts = judge(pairs)
    for split in (*SPLITS, None):
        found = figures(pairs, verdicts, split)
        count = sum(1 for p in pairs if split in (None, p["split"]))
        print(f"{split or 'all'} ({count} pairs)")
        for label, figure in found.items():
            print(f"  {label:9} {figure}")
    if "--misses" in sys.argv:
        for pair, verdict in zip(pairs, verdicts, strict=True):
            if (verdict.relation or "unrelated") != pair["label"]:
                print(f"[{pair['split']}] {pair['label']} judged {verdict.relation}: {verdict.why}")
                print(f"    {pair['older']}\n    {pair['newer']}")


if __name__ == "__main__":
    main()
