"""The redactor on the chat corpus (tests/fixtures/secrets_chat): secrets as a person
pastes them into a chat with an agent, and look-alikes. Floors a little under the figures
reached, so that a regression fails. `python tests/fixtures/secrets_chat/score.py
--misses` prints the figures and the misses by label.
"""

from __future__ import annotations

from pathlib import Path

from helpers import load_module

_HERE = Path(__file__).parent / "fixtures" / "secrets_chat"
scorer = load_module(_HERE / "score.py", "secrets_chat_score")

# 2026-12-07, seeds 1-3: removed 98.5%, unchanged 100% before the fixes it led to; 100%
# and 100% after. See the folder's README.
REMOVED = 0.98
UNCHANGED = 0.99
SEEDS = (1, 2, 3)


def test_the_corpus_has_200_secrets_over_130_labels_and_150_look_alikes() -> None:
    cases, looks = scorer.build(1)
    assert len(cases) >= 200
    assert len({label.split(":")[0] for label, _ in cases}) >= 100
    assert len(looks) >= 150
    assert all(any(role == "secret" for role, _ in parts) for _, parts in cases)
    assert [p for _, p in scorer.build(1)[0]] == [p for _, p in cases]


def test_the_redactor_removes_the_chat_secrets_and_keeps_the_look_alikes() -> None:
    cases = removed = looks = unchanged = 0
    for seed in SEEDS:
        built, lookalikes, misses, changed = scorer.score(seed)
        cases += len(built)
        removed += len(built) - len(misses)
        looks += len(lookalikes)
        unchanged += len(lookalikes) - len(changed)
    assert removed / cases >= REMOVED, f"removed {removed}/{cases}"
    assert unchanged / looks >= UNCHANGED, f"unchanged {unchanged}/{looks}"
