"""The token estimate: close to a real BPE tokenizer on prose and code, cheap, and sane.

The accuracy tests count the fixtures with `toktok` (the `toktok-rs` package), whose
wheels carry the o200k_base and cl100k_base vocabularies compiled in, so nothing is
downloaded. They skip, saying why, when it is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning.tokens import estimate_tokens

CORPUS = Path(__file__).parent / "fixtures" / "tokens"
KINDS = ("prose", "code")
ENCODINGS = ("o200k_base", "cl100k_base")
AGGREGATE_LIMIT = 0.10  # the brief: within 10% over each corpus
SAMPLE_LIMIT = 0.10  # most samples of 200+ tokens within this...
SAMPLE_SHARE = 0.90  # ...this share of them...
SAMPLE_CEILING = 0.20  # ...and none beyond this


def corpus(kind: str) -> dict[str, str]:
    files = sorted((CORPUS / kind).glob("*.txt"))
    return {f.name: f.read_text(encoding="utf-8") for f in files}


Counter = Callable[[list[str], str], list[int]]


@pytest.fixture(scope="module")
def real_count() -> Counter:
    toktok = pytest.importorskip(
        "toktok",
        reason="the real tokenizer is missing: pip install 'toktok-rs>=0.3,<0.4'",
    )

    def count(texts: list[str], encoding: str) -> list[int]:
        return list(toktok.batch_count(texts, encoding, threads=1))

    return count


def error_table(names: list[str], real: list[int], est: list[int]) -> str:
    rows = [f"{'sample':34} {'real':>6} {'est':>6} {'error':>7}"]
    for name, r, e in zip(names, real, est, strict=True):
        rows.append(f"{name:34} {r:6d} {e:6d} {(e - r) / r:+7.1%}")
    total_r, total_e = sum(real), sum(est)
    rows.append(f"{'(all)':34} {total_r:6d} {total_e:6d} {(total_e - total_r) / total_r:+7.1%}")
    return "\n".join(rows)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("kind", KINDS)
def test_estimate_is_close_to_a_real_tokenizer(
    kind: str, encoding: str, real_count: Counter
) -> None:
    texts = corpus(kind)
    names = list(texts)
    real = real_count(list(texts.values()), encoding)
    est = [estimate_tokens(t) for t in texts.values()]
    table = error_table(names, real, est)

    aggregate = (sum(est) - sum(real)) / sum(real)
    assert abs(aggregate) <= AGGREGATE_LIMIT, f"{kind} vs {encoding}: {aggregate:+.1%}\n{table}"

    errors = [(e - r) / r for r, e in zip(real, est, strict=True) if r >= 200]
    close = sum(abs(err) <= SAMPLE_LIMIT for err in errors) / len(errors)
    assert close >= SAMPLE_SHARE, f"{kind} vs {encoding}: {close:.0%} within 10%\n{table}"
    worst = max(errors, key=abs)
    assert abs(worst) <= SAMPLE_CEILING, f"{kind} vs {encoding}: worst {worst:+.1%}\n{table}"


@pytest.mark.parametrize("kind", KINDS)
def test_corpus_has_the_promised_shape(kind: str) -> None:
    texts = corpus(kind)
    assert len(texts) >= 15
    for name, text in texts.items():
        assert 100 <= len(text.split()) <= 1000, name


def test_code_costs_more_per_character_than_prose() -> None:
    prose = "".join(corpus("prose").values())
    code = "".join(corpus("code").values())
    assert len(prose) / estimate_tokens(prose) > 1.2 * len(code) / estimate_tokens(code)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        (" ", 1),
        ("hello", 1),
        ("Hello, world!", 4),
        ("os.path.join", 3),
        ("useCallback", 2),
    ],
)
def test_small_texts(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_odd_input_does_not_break_it() -> None:
    for text in ("\ud800 lone surrogate", "\x00\x1b[0m", "日本語のテキスト", "🙂" * 50, "\r\n" * 9):
        assert estimate_tokens(text) >= 1


def test_long_text_scales_linearly() -> None:
    text = "".join(corpus("code").values())
    one = estimate_tokens(text)
    assert len(text.encode()) > 50_000
    assert abs(estimate_tokens(text * 3) - 3 * one) <= 3  # also past the 64 KiB fast path


texts = st.text(
    st.one_of(
        st.sampled_from("aZq09 \t\n\r.,;:(){}[]_-'\"/#=é—日🙂"),
        st.characters(codec="utf-8"),
    ),
    max_size=60,
)


@given(texts)
def test_never_negative_and_zero_only_when_empty(text: str) -> None:
    n = estimate_tokens(text)
    assert n >= 0
    assert (n == 0) == (text == "")


@given(texts, texts)
@settings(max_examples=300)
def test_concatenation_adds_up(a: str, b: str) -> None:
    whole, left, right = estimate_tokens(a + b), estimate_tokens(a), estimate_tokens(b)
    # Only the pieces at the seam can change, and each count is rounded once.
    assert abs(whole - left - right) <= 4
    # Appending never makes a text noticeably cheaper.
    assert whole >= max(left, right) - 1
