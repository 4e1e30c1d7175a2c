"""Redaction stays linear in the text on shapes that once made it quadratic: a rule that
searched the start of a line again for each match on it, or skipped lazily over a long
run to what follows (a 60 KB prompt of a YAML FAQ took 18 s, past an agent's hook
timeout). Four times the text may cost at most eight times as much (linear work takes 4x,
quadratic 16x); best of three fresh texts, and a ratio only counts past a tenth of a
second, so that a noisy machine's millisecond does not fail it."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kenning.redact import redact

SHAPES: dict[str, Callable[[int, int], str]] = {
    "yaml flow FAQ": lambda n, s: (
        f"faq{s}: [" + ", ".join(f"{{question: q{i}, answer: a{i}}}" for i in range(n)) + "]"
    )[:n],
    "prose Q&A on one line": lambda n, s: " ".join(
        f"Question {i + s}: what does flag -{i} do? Answer: it enables mode {i}."
        for i in range(n // 40)
    )[:n],
    "question, then answer: x, ...": lambda n, s: (f"question {s} " + "answer: x, " * n)[:n],
    "iwconfig= repeated": lambda n, s: (f"{s} " + "iwconfig=" * n)[:n],
    "BUNDLE_A repeated": lambda n, s: (f"{s} " + "BUNDLE_A" * n)[:n],
}


def _best(size: int, make: Callable[[int, int], str]) -> float:
    best = float("inf")
    for seed in range(3):
        text = make(size, seed + size)
        start = time.process_time()
        redact(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.timing
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.timeout(120)
def test_four_times_the_text_costs_at_most_eight_times_as_much(shape: str) -> None:
    make = SHAPES[shape]
    small, large = _best(16_000, make), _best(64_000, make)
    assert large < 0.1 or large <= 8 * small, f"16 KB {small:.3f}s, 64 KB {large:.3f}s"


# What the rewritten rules find is what they found before.


def test_a_security_answer_counts_only_after_the_question_on_its_line() -> None:
    text = "answer: Rex99 then Security question: first pet? answer: Fluffy77, answer: Tom55"
    out = redact(text).text
    assert "Rex99" in out
    assert "Fluffy77" not in out and "Tom55" not in out
    assert redact("question of taste; the answer is blue").text.endswith("the answer is blue")


def test_each_iwconfig_on_a_line_gives_its_key() -> None:
    text = "iwconfig wlan0 key s:Hunter2Wifi iwconfig wlan1 enc 1234-5678-9ABC"
    out = redact(text).text
    assert "Hunter2Wifi" not in out and "1234-5678-9ABC" not in out
    assert "iwconfig wlan0 key" in out and "iwconfig wlan1 enc" in out
    # a key after the command ended (| ; & or a new line) is not iwconfig's
    for text in ("iwconfig wlan0 | grep key s:Hunter2Wifi", "iwconfig wlan0\n key s:Hunter2Wifi"):
        assert "Hunter2Wifi" in redact(text).text


def test_a_bundler_credential_is_found_in_a_longer_name_and_only_with_a_host() -> None:
    for text in (
        "BUNDLE_ENTERPRISE__CONTRIBSYS__COM=cafebabe:deadbeef7",
        "export MY_BUNDLE_GEMS__EXAMPLE__COM='user1:S3cretPassw0rd'",
        "BUNDLE_BUNDLE_GEMS__EXAMPLE__COM: user1:S3cretPassw0rd",
    ):
        assert "[redacted:" in redact(text).text, text
    for text in ("BUNDLE_GEMFILE=Gemfile.lock", "BUNDLE__EXAMPLE=user1:S3cretPassw0rd"):
        assert redact(text).text == text


# bench/redact_redos.py: the fuzzer that looks for more, kept honest cheaply here.


def test_the_fuzzer_flags_a_lazy_skip_and_passes_the_rules_that_replaced_it() -> None:
    import random
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    import redact_redos

    old = re.compile(r"BUNDLE_[A-Z0-9_]*?[A-Z0-9]__[A-Z0-9_]+[\"']?[ \t]*[:=][ \t]*(?P<v>\S{3})")
    units = redact_redos._Walker(old, random.Random(1)).units()
    assert "BUNDLE_A" in units

    def on_old(text: str, repeat: int) -> float:
        return redact_redos._pattern_time(old, text, repeat)

    assert redact_redos._grows(on_old, "BUNDLE_A", 8_000, 6.0, 0.005) is not None
    found = redact_redos.patterns()
    assert len(found) > 400 and "phrases._IWCONFIG_KEY" in found
    for name in ("named._BUNDLER", "phrases._IWCONFIG"):
        assert (
            redact_redos.scan(8_000, floor=0.005, whole=False, only=name, out=lambda line: None)
            == []
        )
