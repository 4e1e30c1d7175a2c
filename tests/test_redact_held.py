"""The redactor on the held-out secrets corpus (tests/fixtures/secrets_held), written
blind before the redactor was read, and only reported: floors a little under the figures
reached, so that a regression fails. bench/redact_held.py prints the figures and misses.
"""

from __future__ import annotations

import re

import pytest

from redact_held_eval import held, left, score

# 2026-12-02, default seed: removed 96.6%, exact 90.9%, unchanged 95.6% before that day's
# fixes; 99.7%, 99.0%, 100% after; 100%, 99.3%, 100% after the fixes twelve fresh seeds
# showed (the next seed 99.8%, 99.1%, 100%). See docs/explanation/design.md.
REMOVED = 0.99
EXACT = 0.98
UNCHANGED = 0.99

CORPUS = held.build()


def test_the_held_corpus_has_250_secrets_over_80_formats_and_200_look_alikes() -> None:
    formats = {case.label.rsplit("/", 1)[0] for case in CORPUS.secrets}
    assert len(CORPUS.secrets) >= 250
    assert len(formats) >= 80
    assert len(CORPUS.lookalikes) >= 200
    values = [s.value for case in CORPUS.secrets for s in case.secrets]
    assert all(case.text.count(s.value) >= 1 for case in CORPUS.secrets for s in case.secrets)
    assert len(set(values)) >= len(values) - 5  # fresh secrets, not one pasted everywhere


def test_a_seed_builds_the_same_corpus_and_another_seed_a_fresh_one() -> None:
    again, other = held.build(), held.build(held.SEED + 1)
    assert [c.text for c in again.secrets] == [c.text for c in CORPUS.secrets]
    assert not {c.text for c in other.secrets} & {c.text for c in CORPUS.secrets}


@pytest.mark.parametrize("seed", [held.SEED, held.SEED + 1])
def test_held_secrets_are_removed_and_look_alikes_kept(seed: int) -> None:
    s = score(CORPUS if seed == held.SEED else held.build(seed))
    assert s.removed_share >= REMOVED, [m.label for m in s.leaked]
    assert s.exact_share >= EXACT, [m.label for m in s.mangled]
    assert s.unchanged_share >= UNCHANGED, [m.label for m in s.changed]


def test_the_score_fails_a_redactor_that_keeps_or_takes_too_much() -> None:
    kept = score(CORPUS, lambda text: text)
    assert kept.removed == 0 and kept.unchanged == kept.lookalikes
    wiped = score(CORPUS, lambda text: "[redacted:all]")
    bare = sum(all(isinstance(p, held.Secret) for p in c.parts) for c in CORPUS.secrets)
    assert wiped.removed == wiped.cases and wiped.exact == bare and wiped.unchanged == 0
    case = next(c for c in CORPUS.secrets if c.label.startswith("structural/pem-rsa/file"))
    body = case.secret
    half = body.replace(body.splitlines()[0], "[redacted:private_key]")
    assert left(body, half)  # a PEM with one line taken still leaks the rest
    token = next(c for c in CORPUS.secrets if c.label.startswith("vendor/anthropic-api/"))
    kept_end = token.text.replace(token.secret[:-16], "[redacted:anthropic]")
    assert left(token.secret, kept_end)
    whole = re.sub(re.escape(token.secret), "[redacted:anthropic]", token.text)
    assert score(held.Corpus((token,), ()), lambda _: whole).exact == 1
