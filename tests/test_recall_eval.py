"""Recall quality on six evaluation sets (see recall_eval.py), beside plain bm25.

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
    search_ranker,
    stock,
)

# Coding memories at default settings: what `ken recall` gives an agent.
# measured 0.718 (227/316) with near words, 0.715 before; 0.718 at 91c500d, 0.674 at f385ac5
CODING_RECALL_FLOOR = 0.70
CODING_PRECISION_FLOOR = 0.67  # measured 0.691; 0.686 at 91c500d, 0.674 at f385ac5
CODING_QUIET_FLOOR = 0.82  # measured 0.843 (59/70); 0.857 at f385ac5
# The first set, at default settings (its precision counts only forbidden memories). It
# was written so that every expected memory shares two stems with its prompt, which the
# gate of two shared words needed (measured 0.938 then, 0.860 under the idf-mass gate).
FIRST_RECALL_FLOOR = 0.89  # measured 0.915 (118/129), 0.907 before near words; 0.899 at 91c500d
FIRST_NOT_FORBIDDEN_FLOOR = 0.93  # measured 0.943; 0.935 at 91c500d
FIRST_QUIET_FLOOR = 0.85  # measured 0.882 (30/34)
# The check set, written before the 2026-12-01 changes and never tuned on: 0.551, 0.782
# and 0.960 at f385ac5.
CHECK_RECALL_FLOOR = 0.50  # measured 0.526 (41/78)
CHECK_PRECISION_FLOOR = 0.77  # measured 0.788 (41/52), 0.804 before near words; 0.788 at 91c500d
CHECK_QUIET_FLOOR = 0.92  # measured 0.960 (24/25)
# The fresh set, written and committed before the changes of 2026-12-01's second
# session and only reported: 0.649, 0.726 and 0.972 at 91c500d.
FRESH_RECALL_FLOOR = 0.64  # measured 0.664 (87/131)
FRESH_PRECISION_FLOOR = 0.70  # measured 0.731
FRESH_QUIET_FLOOR = 0.94  # measured 0.972 (35/36)
# The held set, written and committed (47a5402) before the ranking and gate changes of
# 2026-12-02, by someone who had not read kenning/recall/, and only reported. Its prompts
# share few words with their memories (83 of 198 pairs share none), hence the low figures.
HELD_RECALL_FLOOR = 0.16  # measured 0.187 (37/198); 0.182 at 47a5402
HELD_PRECISION_FLOOR = 0.33  # measured 0.352 (37/105); 0.364 before near words
HELD_QUIET_FLOOR = 0.75  # measured 0.796 (39/49)


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


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stocked]:
    yield from stocked("fresh", tmp_path_factory)


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stocked]:
    yield from stocked("held", tmp_path_factory)


@pytest.fixture(scope="module")
def check(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stocked]:
    yield from stocked("check", tmp_path_factory)


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


@pytest.mark.parametrize(
    ("name", "memories", "relevant", "quiet", "apart_from"),
    [
        ("check", 60, 60, 20, ("coding",)),
        ("fresh", 120, 100, 35, ("coding", "check")),
        ("held", 160, 160, 45, ("coding", "first", "check", "fresh")),
    ],
)
def test_a_held_out_set_is_as_large_as_promised_and_another_companys(
    name: str, memories: int, relevant: int, quiet: int, apart_from: tuple[str, ...]
) -> None:
    """Each small held-out set: its size, one split of its own, no scope of the sets
    written before it (global preferences and agent scopes aside), and every expected
    memory in the prompt's scopes."""
    evalset = read_set(name)
    by_key = {row["key"]: row for row in evalset.items}
    assert len(by_key) == len(evalset.items) >= memories
    asking = [p for p in evalset.prompts if p["expect"]]
    assert len(asking) >= relevant and len(evalset.prompts) - len(asking) >= quiet
    assert len({p["id"] for p in evalset.prompts}) == len(evalset.prompts)
    assert {p["split"] for p in evalset.prompts} == {name}
    others = {row["scope"] for other in apart_from for row in read_set(other).items}
    shared = {s for s in others if s != "global" and not s.startswith("agent:")}
    assert not {row["scope"] for row in evalset.items} & shared  # another company's
    for prompt in asking:
        assert 1 <= len(prompt["expect"]) <= 3, prompt["id"]
        for key in prompt["expect"]:
            assert by_key[key]["scope"] in prompt["scopes"], (prompt["id"], key)


def test_the_held_set_asks_for_every_memory_one_or_two_at_a_time() -> None:
    evalset = read_set("held")
    asking = [p for p in evalset.prompts if p["expect"]]
    assert sum(len(p["expect"]) == 2 for p in asking) >= 10
    assert all(len(p["expect"]) <= 2 for p in asking)
    assert {k for p in asking for k in p["expect"]} == {row["key"] for row in evalset.items}


@pytest.mark.parametrize("name", ["coding", "dialogue", "check", "fresh", "held"])
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
    # recall@5 measured: dev 0.955 against 0.864, test 0.901 against 0.821
    assert ours.recall > baseline.recall + 0.06, f"kenning {ours.line()}\nbm25 {baseline.line()}"


@pytest.mark.parametrize("half", ["dev", "test"])
def test_conversation_turns_with_thresholds_off_rank_above_bm25(
    dialogue: Stocked, half: str
) -> None:
    prompts = dialogue.set.split(half)
    ours = score(dialogue.store, dialogue.keys, prompts, kenning_ranker(OPEN))
    baseline = score(dialogue.store, dialogue.keys, prompts, bm25_ranker())
    # evidence in the top 5 measured: dev 0.712 against 0.542, test 0.671 against 0.526
    # (0.706 and 0.645 before the reply after a question back; 0.641 and 0.612 before a
    # note that follows a note was ranked with it; 0.621 and 0.599 before near words)
    assert ours.hit_rate > baseline.hit_rate + 0.12, (
        f"kenning {ours.line()}\nbm25 {baseline.line()}"
    )


def test_the_first_set_at_default_settings(first: Stocked) -> None:
    figures = first.defaults()
    assert figures.recall >= FIRST_RECALL_FLOOR, detail(figures)
    assert figures.not_forbidden >= FIRST_NOT_FORBIDDEN_FLOOR, detail(figures)
    assert figures.quiet >= FIRST_QUIET_FLOOR, detail(figures)


def test_the_check_set_at_default_settings(check: Stocked) -> None:
    figures = check.defaults()
    assert figures.recall >= CHECK_RECALL_FLOOR, detail(figures)
    assert figures.precision >= CHECK_PRECISION_FLOOR, detail(figures)
    assert figures.quiet >= CHECK_QUIET_FLOOR, detail(figures)


def test_the_check_set_with_thresholds_off_ranks_above_bm25(check: Stocked) -> None:
    ours = score(check.store, check.keys, check.set.prompts, kenning_ranker(OPEN))
    baseline = score(check.store, check.keys, check.set.prompts, bm25_ranker())
    # recall@5 measured 0.923 against 0.833 (0.897 before near words, 0.859 at 91c500d,
    # 0.808 at f385ac5)
    assert ours.recall > baseline.recall + 0.07, f"kenning {ours.line()}\nbm25 {baseline.line()}"


def test_the_fresh_set_at_default_settings(fresh: Stocked) -> None:
    figures = fresh.defaults()
    assert figures.recall >= FRESH_RECALL_FLOOR, detail(figures)
    assert figures.precision >= FRESH_PRECISION_FLOOR, detail(figures)
    assert figures.quiet >= FRESH_QUIET_FLOOR, detail(figures)


def test_the_held_set_at_default_settings(held: Stocked) -> None:
    figures = held.defaults()
    # Only the figures on failure, not detail()'s misses and leaks: the set stays unread.
    assert figures.recall >= HELD_RECALL_FLOOR, figures.line()
    assert figures.precision >= HELD_PRECISION_FLOOR, figures.line()
    assert figures.quiet >= HELD_QUIET_FLOOR, figures.line()


def test_the_held_set_with_thresholds_off_ranks_above_bm25(held: Stocked) -> None:
    ours = score(held.store, held.keys, held.set.prompts, kenning_ranker(OPEN))
    baseline = score(held.store, held.keys, held.set.prompts, bm25_ranker())
    # recall@5 measured 0.535 against 0.399 (0.525 at 47a5402)
    assert ours.recall > baseline.recall + 0.12, f"kenning {ours.line()}\nbm25 {baseline.line()}"


# A search with a prompt as its query. Before 2026-12-02 a search needed every word in one
# memory, and found nothing for 99% of these prompts (recall@5 0.000 on five sets, 0.010
# on the held set); now what holds every word comes first, then recall's ranking.
SEARCH_FLOORS = {"coding": 0.90, "check": 0.87, "held": 0.50}  # measured 0.927, 0.897, 0.525


@pytest.mark.parametrize("name", list(SEARCH_FLOORS))
def test_a_search_in_a_person_s_words_finds_what_recall_ranks(
    name: str, request: pytest.FixtureRequest
) -> None:
    stocked: Stocked = request.getfixturevalue(name)
    relevant = [p for p in stocked.set.prompts if p["expect"]]
    filled = score(stocked.store, stocked.keys, relevant, search_ranker())
    assert filled.recall >= SEARCH_FLOORS[name], detail(filled)
    every_word = score(stocked.store, stocked.keys, relevant, search_ranker(fill=False))
    assert every_word.recall < 0.05, detail(every_word)  # what the fill adds
