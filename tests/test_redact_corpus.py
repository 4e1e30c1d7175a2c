"""The redaction corpus: hundreds of fake secrets of every well-known format, written
into sentences, commands and config snippets, and hundreds of look-alikes.

The corpus is built at test time (tests/fixtures/secrets/corpus.py), so that nothing in
the repository looks like a real secret to a scanner.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kenning.redact import KINDS, mostly_secret, redact, redact_lines

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "secrets"))
import corpus  # noqa: E402

CASES = corpus.secrets()
LOOKALIKES = corpus.lookalikes()
MARKER = re.compile(r"\[redacted:([a-z0-9_]+)\]")


def test_the_corpus_has_300_secrets_of_60_kinds_and_200_look_alikes() -> None:
    kinds = Counter(case.kind for case in CASES)
    assert len(CASES) >= 300
    assert len(kinds) >= 60
    assert set(kinds) <= set(KINDS)
    assert len(LOOKALIKES) >= 200
    assert len({case.secret for case in CASES}) == len(CASES)  # every secret is its own


def test_no_corpus_secret_survives_and_nothing_around_one_changes() -> None:
    leaked, mangled = [], []
    for case in CASES:
        out = redact(case.text).text
        if case.secret in out:
            leaked.append(case)
        elif MARKER.sub("\0", out) != case.text.replace(case.secret, "\0"):
            mangled.append((case, out))
    assert leaked == []
    assert mangled == []


def test_secrets_of_a_known_format_are_reported_by_their_format() -> None:
    """A format-specific secret is named by its format, not by the catch-alls."""
    vague = {"secret_assignment", "high_entropy", "password"}
    wrong = []
    for case in CASES:
        found = set(redact(case.text).kinds)
        if case.kind not in vague and case.kind not in found and found <= vague:
            wrong.append((case.kind, case.text[:80], found))
    # Named contexts (MAILGUN_API_KEY=...) may be reported as assignments; most are not.
    assert len(wrong) <= len(CASES) // 10, wrong


def test_no_look_alike_changes() -> None:
    changed = [(text, redact(text).text) for text in LOOKALIKES if redact(text).text != text]
    assert changed == []


def test_counts_say_how_many_of_each_kind_were_redacted() -> None:
    text = "\n".join(case.text for case in CASES[:40])
    result = redact(text)
    assert dict(result.counts) == Counter(MARKER.findall(result.text))
    assert tuple(kind for kind, _ in result.counts) == result.kinds


@given(
    st.lists(st.sampled_from(CASES), min_size=1, max_size=6),
    st.lists(st.sampled_from(LOOKALIKES), max_size=6),
    st.randoms(use_true_random=False),
    st.sampled_from(["\n", "\n\n", "\n- ", "\n> "]),
)
@settings(max_examples=300, deadline=None)
def test_mixed_in_any_order_no_secret_survives_and_no_look_alike_changes(
    cases: list[corpus.Case], looks: list[str], order: object, sep: str
) -> None:
    pieces = [case.text for case in cases] + looks
    order.shuffle(pieces)  # type: ignore[attr-defined]
    out = redact(sep.join(pieces)).text
    for case in cases:
        assert case.secret not in out
    for text in looks:
        assert text in out


@given(st.sampled_from(CASES), st.sampled_from(LOOKALIKES), st.booleans())
@settings(max_examples=200, deadline=None)
def test_a_title_and_body_are_redacted_as_one_text(
    case: corpus.Case, look: str, secret_first: bool
) -> None:
    first, rest = (case.text, look) if secret_first else (look, case.text)
    title, body, mostly = redact_lines(first, rest)
    assert f"{title}\n{body}" == redact(f"{first}\n{rest}").text
    assert mostly == mostly_secret(f"{first}\n{rest}")
    assert case.secret not in title + body


def test_a_secret_across_the_title_and_body_is_redacted_whole() -> None:
    pem = next(c for c in CASES if c.kind == "private_key" and c.text.startswith("-----"))
    first, _, rest = pem.secret.partition("\n")
    title, body, mostly = redact_lines(first, rest)
    assert mostly
    assert pem.secret.splitlines()[1] not in title + body
