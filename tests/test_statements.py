"""How two memories compare (kenning.statements): the signals, one by one."""

from __future__ import annotations

import pytest

from helpers import opened
from kenning import statements


def relate(older: str, newer: str) -> statements.Verdict:
    with opened() as store:
        a, b = statements.read(store, [older, newer])
        return statements.relate(statements.lexicon(store), a, b)


def read(text: str) -> statements.Statement:
    with opened() as store:
        return statements.read(store, [text])[0]


@pytest.mark.parametrize(
    ("text", "rejects", "asserts"),
    [
        ("Use pnpm, never npm", {"npm"}, {"pnpm"}),
        ("Prefer spaces over tabs", {"tab"}, {"space"}),
        ("Services talk over gRPC", set(), {"service", "talk", "grpc"}),  # not a preference
        ("Use httpx instead of requests", {"req"}, {"httpx"}),
        ("Don't mock the database", {"fake"}, set()),  # the verb, not its object
        ("Do not mock the database in unit tests", {"fake"}, set()),  # a negated clause
        ("Jenkins is retired", {"jenkin"}, set()),
        ("Replace LaunchDarkly with our own flag service", {"launchdarkli"}, {"flag", "service"}),
    ],
)
def test_a_clause_rejects_what_its_negation_or_contrast_names(text, rejects, asserts):
    statement = read(text)
    assert statement.rejects == rejects
    assert asserts <= statement.asserts


@pytest.mark.parametrize(
    ("older", "newer", "relation"),
    [
        (
            "Use pnpm, not npm, in this repo",
            "In this repository install packages with pnpm rather than npm",
            "copy",
        ),
        ("Prefer small pull requests", "Keep PRs small", "copy"),
        ("Never log personal data", "Personal data must never be written to logs", "copy"),
        ("Use npm for installs", "Use pnpm, never npm", "reversal"),
        ("Use Node 18 for the frontend", "Use Node 20 for the frontend", "reversal"),
        ("Run migrations after deploying", "Run migrations before deploying", "reversal"),
        ("Use CircleCI for CI", "Use Buildkite for CI", "reversal"),
        (
            "The billing service owns the invoices table",
            "The ledger service owns the invoices table now",
            "reversal",
        ),
        ("Use pnpm for the frontend", "Use poetry for the backend", None),
        ("The API server listens on port 8080", "The metrics server listens on port 9100", None),
        ("Never push directly to main", "Never push secrets to the repo", None),
        ("Old and never used", "Old but pinned", None),  # one shared word is not a statement
    ],
)
def test_two_memories_are_copies_reversals_or_neither(older, newer, relation):
    assert relate(older, newer).relation == relation


@pytest.mark.parametrize(
    ("older", "newer", "why"),
    [
        (
            "Use Buildkite for CI pipelines",
            "Use CircleCI for CI pipelines",
            "Buildkite becomes CircleCI",
        ),
        ("Use GitHub Actions for CI", "Use CircleCI for CI", "GitHub Actions becomes CircleCI"),
        ("Requests is our HTTP client", "Use httpx, not requests", "requests is rejected now"),
        (
            "Run migrations after deploying",
            "Run migrations before deploying",
            "after becomes its opposite, before",
        ),
        (
            "The billing service owns the invoices table",
            "The ledger service owns the invoices table now",
            "an update (now): billing becomes ledger",
        ),
        # What the newer one rejects is no part of what it asks for.
        ("Use bun for installs", "Use pnpm, not npm, for installs.", "bun becomes pnpm"),
    ],
)
def test_a_reversal_says_why_in_the_words_the_memories_use_not_their_stems(older, newer, why):
    assert relate(older, newer).why == why


def test_go_the_language_is_a_topic_and_go_the_verb_is_not():
    assert "go" in read("The auth service is written in Go").content
    assert "go" not in read("Deploys go through make release").content
    assert relate("Deploys go through make release", "Deploy by running make release").relation == (
        "copy"
    )
