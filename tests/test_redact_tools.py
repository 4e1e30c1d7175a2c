"""The redactor on the tool-output secrets corpus (tests/fixtures/secrets_tools), written
blind and committed before it was scored: floors a little under the figures reached, so
that a regression fails. `python tests/fixtures/secrets_tools/score.py --misses` prints
the figures and the misses by label.
"""

from __future__ import annotations

from pathlib import Path

from helpers import load_module

_HERE = Path(__file__).parent / "fixtures" / "secrets_tools"
scorer = load_module(_HERE / "score.py", "secrets_tools_score")

# 2026-12-07, seeds 1-3: removed 87.1%, unchanged 89.7% before that day's fixes; 93.5%
# and 98.5% after (fresh seeds 4-6: 92.2%, 98.8%). See the folder's README.
REMOVED = 0.91
UNCHANGED = 0.97
SEEDS = (1, 2, 3)


def test_the_corpus_has_500_secrets_over_150_labels_and_200_look_alikes_a_seed() -> None:
    cases, looks = scorer.build(1)
    assert len(cases) >= 500
    assert len({label.split(":")[0] for label, _ in cases}) >= 150
    assert len(looks) >= 200
    assert all(any(role == "secret" for role, _ in parts) for _, parts in cases)
    again, _ = scorer.build(1)
    assert [p for _, p in again] == [p for _, p in cases]


def test_the_redactor_removes_the_secrets_and_keeps_the_look_alikes() -> None:
    cases = removed = looks = unchanged = 0
    for seed in SEEDS:
        built, lookalikes, misses, changed, _, _ = scorer.score(seed)
        cases += len(built)
        removed += len(built) - len(misses)
        looks += len(lookalikes)
        unchanged += len(lookalikes) - len(changed)
    assert removed / cases >= REMOVED, f"removed {removed}/{cases}"
    assert unchanged / looks >= UNCHANGED, f"unchanged {unchanged}/{looks}"
