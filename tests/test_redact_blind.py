"""The redactor on the blind secrets corpus (tests/fixtures/secrets_blind), written before
the redactor was read, and only reported: floors a little under the figures reached, so
that a regression fails. `python tests/fixtures/secrets_blind/score.py [SEED ...] --misses`
prints the figures and the misses by label.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import load_module
from kenning.redact import redact

_HERE = Path(__file__).parent / "fixtures" / "secrets_blind"
scorer = load_module(_HERE / "score.py", "secrets_blind_score")

# 2026-12-02, default seed: removed 96.2%, exact 91.7%, unchanged 93.9% before that day's
# fixes (seeds 1-3: 95.7-96.2%, 91.4-91.9%, 93.5-94.0%); 100%, 96.4%, 100% after them
# (seed 1: 100%, 96.5%, 100%; fresh seeds 12-15 the same). See docs/explanation/design.md.
REMOVED = 0.99
EXACT = 0.95
UNCHANGED = 0.99
SEED = scorer.SEED

CORPUS = scorer.build()


def _redact(text: str) -> str:
    return redact(text).text


def test_the_blind_corpus_has_400_secrets_over_100_formats_and_200_look_alikes() -> None:
    formats = {case.label.rsplit("/", 1)[0] for case in CORPUS.cases}
    assert len(CORPUS.cases) >= 400
    assert len(formats) >= 100
    assert len(CORPUS.lookalikes) >= 200
    assert all(case.secrets for case in CORPUS.cases)
    assert not any(case.secrets for case in CORPUS.lookalikes)


def test_a_seed_builds_the_same_corpus_and_another_seed_a_fresh_one() -> None:
    again, other = scorer.build(), scorer.build(SEED + 1)
    assert [c.text for c in again.cases] == [c.text for c in CORPUS.cases]
    assert not {c.text for c in other.cases} & {c.text for c in CORPUS.cases}


@pytest.mark.parametrize("seed", [SEED, 1])
def test_blind_secrets_are_removed_and_look_alikes_kept(seed: int) -> None:
    s = scorer.score(_redact, CORPUS if seed == SEED else scorer.build(seed))
    assert s.removed >= REMOVED, [m.label for m in s.missed]
    assert s.exact >= EXACT, [m.label for m in s.inexact]
    assert s.unchanged >= UNCHANGED, [m.label for m in s.changed]


def test_the_score_fails_a_redactor_that_keeps_or_takes_too_much() -> None:
    kept = scorer.score(lambda text: text, CORPUS)
    assert kept.removed == 0 and kept.exact == 0 and kept.unchanged == 1
    wiped = scorer.score(lambda text: "[redacted:all]", CORPUS)
    assert wiped.removed == 1 and wiped.exact < 0.01 and wiped.unchanged == 0
    # a PEM body with its first line taken still leaks; so does a token's last 16
    pem = next(c for c in CORPUS.cases if c.label.startswith("key/rsa/"))
    body = pem.secrets[0]
    assert scorer.leaked(body, pem.text.replace(body.splitlines()[0], "[redacted:x]"))
    token = next(c for c in CORPUS.cases if c.label.startswith("vendor/anthropic/"))
    value = token.secrets[0]
    assert scorer.leaked(value, token.text.replace(value[:-16], "[redacted:x]"))
    # a marker for each secret, and one that also takes a lead (Bearer, a PEM header)
    perfect = scorer.expected_pattern(pem)
    assert perfect.fullmatch(pem.text.replace(body, "[redacted:private_key]"))
    header = next(t for r, t in pem.parts if r == "lead")
    assert perfect.fullmatch(pem.text.replace(header + body, "[redacted:private_key]"))
    assert not perfect.fullmatch(pem.text.replace(body, "[redacted:a] [redacted:b]"))
