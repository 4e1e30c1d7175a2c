"""Recall quality on three evaluation sets (see recall_eval.py), beside plain bm25.

The floors sit a little under the figures measured on the whole of each set, so a change
that makes recall worse fails here. docs/explanation/recall.md records every move.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning.store import open_store
from recall_eval import (
    DEFAULTS,
    OPEN,
    EvalSet,
    Figures,
    bm25_ranker,
    kenning_ranker,
    read_set,
    score,
    stock,
)

# Coding memories at default settings: what `ken recall` gives an agent.
CODING_RECALL_FLOOR = 0.65  # measured 0.674 (213/316); 0.634 before the idf-mass gate
CODING_PRECISION_FLOOR = 0.64  # measured 0.674 (213/316); 0.615 before
CODING_QUIET_FLOOR = 0.82  # measured 0.857 (60/70); 0.771 before
# The first set, at default settings (its precision counts only forbidden memories). Its
# recall floor moved down from 0.92: it was written so that every expected memory shares
# two stems with its prompt, which the old gate needed, and some of those are two common
# words that the idf-mass gate now weighs as too little (measured 0.938 before).
FIRST_RECALL_FLOOR = 0.84  # measured 0.860 (111/129)
FIRST_NOT_FORBIDDEN_FLOOR = 0.94  # measured 0.959 (6 forbidden of 145 returned)
FIRST_QUIET_FLOOR = 0.88  # measured 0.912 (31/34)


class Stocked:
    def __init__(self, evalset: EvalSet, folder: Path) -> None:
        self.set = evalset
        self.store = open_store(folder / f"{evalset.name}.db")
        self.keys = stock(self.store, evalset)

    def defaults(self) -> Figures:
        return score(self.store, self.keys, self.set.prompts, kenning_ranker(DEFAULTS))


def stocked(name: str, factory: pytest.TempPathFactory) -> Iterator[Stocked]:
    built = Stocked(read_set(name), factory.mktemp(name))
    yield built
    built.store.close()


@pytest.fixture(scope="module")
def coding(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stocked]:
    yield from stocked("coding", tmp_path_factory)


@pytest.fixture(scope="module")
def dialogue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stocked]:
    yield from stocked("dialogue", tmp_path_factory)


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stocked]:
    yield from stocked("first", tmp_path_factory)


def detail(figures: Figures) -> str:
    return f"{figures.line()}\nmisses: {figures.misses[:40]}\nleaks: {figures.leaks[:40]}"


# ----------------------------------------------------------------------------- the sets

_RUN = re.compile(r"[^\W_]+")


def runs(text: str, n: int) -> set[tuple[str, ...]]:
    words = _RUN.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@pytest.mark.parametrize("name", ["coding", "dialogue"])
def test_the_sets_are_as_large_as_promised_and_consistent(name: str) -> None:
    evalset = read_set(name)
    by_key = {row["key"]: row for row in evalset.items}
    assert len(by_key) == len(evalset.items)
    relevant = [p for p in evalset.prompts if p["expect"]]
    quiet = [p for p in evalset.prompts if not p["expect"]]
    if name == "coding":
        assert len(evalset.items) >= 300 and len(relevant) >= 200 and len(quiet) >= 60
    else:
        assert len(evalset.items) >= 1000 and len(relevant) >= 300 and not quiet
    assert len({p["id"] for p in evalset.prompts}) == len(evalset.prompts)
    for half in ("dev", "test"):
        share = len(evalset.split(half)) / len(evalset.prompts)
        assert 0.45 <= share <= 0.55, half
    for prompt in relevant:
        assert 1 <= len(prompt["expect"]) <= 3, prompt["id"]
        for key in prompt["expect"]:
            assert by_key[key]["scope"] in prompt["scopes"], (prompt["id"], key)


@pytest.mark.parametrize("name", ["coding", "dialogue"])
def test_no_prompt_repeats_four_words_in_a_row_of_a_memory_it_expects(name: str) -> None:
    evalset = read_set(name)
    by_key = {row["key"]: row for row in evalset.items}
    for prompt in evalset.prompts:
        for key in prompt["expect"]:
            item = by_key[key]
            shared = runs(prompt["prompt"], 4) & runs(f"{item['title']} {item['body']}", 4)
            assert not shared, (prompt["id"], key, shared)


# ----------------------------------------------------------------------------- floors


def test_coding_memories_at_default_settings(coding: Stocked) -> None:
    figures = coding.defaults()
    assert figures.recall >= CODING_RECALL_FLOOR, detail(figures)
    assert figures.precision >= CODING_PRECISION_FLOOR, detail(figures)
    assert figures.quiet >= CODING_QUIET_FLOOR, detail(figures)


@pytest.mark.parametrize("half", ["dev", "test"])
def test_coding_memories_with_thresholds_off_rank_above_bm25(coding: Stocked, half: str) -> None:
    prompts = coding.set.split(half)
    ours = score(coding.store, coding.keys, prompts, kenning_ranker(OPEN))
    baseline = score(coding.store, coding.keys, prompts, bm25_ranker())
    # recall@5 measured: dev 0.929 against 0.864, test 0.883 against 0.821
    assert ours.recall > baseline.recall + 0.03, f"kenning {ours.line()}\nbm25 {baseline.line()}"


@pytest.mark.parametrize("half", ["dev", "test"])
def test_conversation_turns_with_thresholds_off_rank_above_bm25(
    dialogue: Stocked, half: str
) -> None:
    prompts = dialogue.set.split(half)
    ours = score(dialogue.store, dialogue.keys, prompts, kenning_ranker(OPEN))
    baseline = score(dialogue.store, dialogue.keys, prompts, bm25_ranker())
    # evidence in the top 5 measured: dev 0.627 against 0.542, test 0.605 against 0.526
    assert ours.hit_rate > baseline.hit_rate + 0.03, (
        f"kenning {ours.line()}\nbm25 {baseline.line()}"
    )


def test_the_first_set_at_default_settings(first: Stocked) -> None:
    figures = first.defaults()
    assert figures.recall >= FIRST_RECALL_FLOOR, detail(figures)
    assert figures.not_forbidden >= FIRST_NOT_FORBIDDEN_FLOOR, detail(figures)
    assert figures.quiet >= FIRST_QUIET_FLOOR, detail(figures)
