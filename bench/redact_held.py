"""The redactor on the held-out secrets corpus: the figures, then every miss.

    python bench/redact_held.py               # default seed, figures and misses
    python bench/redact_held.py --seeds 5     # figures over five seeds
    python bench/redact_held.py --quiet       # figures only

Scored by tests/redact_held_eval.py (its docstring says what each figure counts). The
corpus (tests/fixtures/secrets_held) is only reported: fix a format in general, never a
rule for one of its strings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import redact_held_eval as held_eval  # noqa: E402

held = held_eval.held


def show(title: str, misses: tuple[held_eval.Miss, ...]) -> None:
    print(f"\n## {title} ({len(misses)})")
    for miss in misses:
        print(f"\n- {miss.label}\n  in:  {miss.text[:300]!r}")
        if miss.out != miss.text:
            print(f"  out: {miss.out[:300]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1, help="score this many seeds")
    parser.add_argument("--quiet", action="store_true", help="figures only")
    args = parser.parse_args()
    print("| seed | secret cases | removed | exact | look-alikes | unchanged |")
    print("|---|---|---|---|---|---|")
    first = None
    for seed in range(held.SEED, held.SEED + args.seeds):
        s = held_eval.score(held.build(seed))
        first = first or s
        print(
            f"| {seed} | {s.cases} | {s.removed} ({s.removed_share:.1%}) | {s.exact} "
            f"({s.exact_share:.1%}) | {s.lookalikes} | {s.unchanged} ({s.unchanged_share:.1%}) |"
        )
    if first and not args.quiet:
        show("secrets left in the text", first.leaked)
        show("removed, but the text around them changed", first.mangled)
        show("look-alikes changed", first.changed)


if __name__ == "__main__":
    main()
