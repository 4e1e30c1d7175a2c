"""The redactor on the personal-secrets corpus (tests/fixtures/secrets_personal), written
blind and committed before it was scored: floors a little under the figures reached on
seeds 1-3, so that a regression fails. `python tests/fixtures/secrets_personal/score.py
--misses` prints the figures and the misses by label (seeds 4-6 are held out: their
figures only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import load_module

_HERE = Path(__file__).parent / "fixtures" / "secrets_personal"
scorer = load_module(_HERE / "score.py", "secrets_personal_score")

# 2026-12-07, seeds 1-3: removed 81.6%, unchanged 96.3% before that day's fixes; 98.9% and
# 99.6% after. Held-out seeds 4-6 (their misses never read): 81.8% and 96.9% before, 98.7%
# and 99.3% after. See the folder's README.
REMOVED = 0.975
UNCHANGED = 0.985
SEEDS = (1, 2, 3)


def test_the_corpus_has_460_secrets_over_200_labels_and_200_look_alikes_a_seed() -> None:
    cases, looks = scorer.build(1)
    assert len(cases) >= 460
    assert len({label.split(":")[0] for label, _ in cases}) >= 200
    assert len(looks) >= 200
    assert all(any(role == "secret" for role, _ in parts) for _, parts in cases)
    again, _ = scorer.build(1)
    assert [p for _, p in again] == [p for _, p in cases]


def _totals(seeds: tuple[int, ...]) -> tuple[float, float]:
    cases = removed = looks = unchanged = 0
    for seed in seeds:
        built, lookalikes, misses, changed, _, _ = scorer.score(seed)
        cases += len(built)
        removed += len(built) - len(misses)
        looks += len(lookalikes)
        unchanged += len(lookalikes) - len(changed)
    return removed / cases, unchanged / looks


def test_the_redactor_removes_the_secrets_and_keeps_the_look_alikes() -> None:
    removed, unchanged = _totals(SEEDS)
    assert removed >= REMOVED, f"removed {removed:.1%}"
    assert unchanged >= UNCHANGED, f"unchanged {unchanged:.1%}"


def test_the_score_fails_a_redactor_that_keeps_or_wipes_everything(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scorer, "run_redact", lambda text: (text, None))
    removed, unchanged = _totals((1,))
    assert removed == 0 and unchanged == 1
    monkeypatch.setattr(scorer, "run_redact", lambda text: ("[redacted:all]", None))
    removed, unchanged = _totals((1,))
    assert removed == 1 and unchanged == 0
