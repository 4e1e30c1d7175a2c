"""The store's own word counts (`terms`) agree with the FTS index through every change."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kenning import items
from kenning.store import open_store
from kenning.store.sqlite import SQLiteStore


def vocab(store: SQLiteStore) -> dict[str, int]:
    store.conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.check_vocab USING fts5vocab(main, items_fts, row)"
    )
    rows = store.conn.execute("SELECT term, doc FROM temp.check_vocab").fetchall()
    return {r[0]: r[1] for r in rows}


def counted(store: SQLiteStore) -> dict[str, int]:
    return {r[0]: r[1] for r in store.conn.execute("SELECT term, docs FROM terms")}


def test_word_counts_follow_adds_edits_imports_and_forgets(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    try:
        scope = items.parse_scope("global")
        a = items.add(
            store, "Run migrations before deploys\nAlembic runs them", scope=scope, tags=["db"]
        )
        b = items.add(store, "Deploys go through make release", scope=scope)
        items.add(store, "Release notes live in CHANGELOG.md", scope=scope, tags=["docs"])
        items.change(
            store, a.id, text="Run migrations after backups\nthen deploy", add_tags=["ops"]
        )
        items.change(store, b.id, text="Deploys go thru make release", in_place=True)  # a typo fix
        store.insert_many(
            [items.new_item(f"Imported note {n} about caching", scope=scope) for n in range(30)]
        )
        assert counted(store) == vocab(store)
        items.forget(store, [store.get_item(a.id)])
        assert counted(store) == vocab(store)
        assert "backup" not in counted(store)
    finally:
        store.close()


def test_an_older_store_gets_its_word_counts_from_the_index(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    try:
        items.add(
            store, "Prefer uv over poetry for new projects", scope=items.parse_scope("global")
        )
        store.conn.execute("DELETE FROM terms")
        store.conn.execute("DELETE FROM _migrations WHERE name = 'm0004_term_counts'")
        store.conn.execute("DROP TABLE terms")
    finally:
        store.close()
    reopened = open_store(tmp_path / "m.db")
    try:
        assert counted(reopened) == vocab(reopened) and counted(reopened)
    finally:
        reopened.close()


def fts_split_counts(store: SQLiteStore, texts: list[str]) -> tuple[Counter[str], Counter[str]]:
    """What the index's own tokenizer says: how many texts hold each stem and word."""
    stems: Counter[str] = Counter()
    words: Counter[str] = Counter()
    for stemmed in store.stems(texts):
        stems.update(set(stemmed))
    for typed in store.words_in(texts):
        words.update(set(typed))
    return stems, words


ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=120)
any_text = st.text(max_size=60)


@pytest.fixture(scope="module")
def counting_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    """One store for every example: counting writes nothing to it (its in-memory
    tables are rolled back), so a fresh one per example only cost its migrations."""
    store = open_store(tmp_path_factory.mktemp("t") / "m.db")
    yield store
    store.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.one_of(ascii_text, any_text), max_size=12))
def test_the_counts_of_a_batch_are_what_the_index_tokenizer_gives(
    counting_store: SQLiteStore, texts: list[str]
) -> None:
    store = counting_store
    assert store._docs_holding(texts) == fts_split_counts(store, texts)
    again = [f"{t} Running runs RUN ran runner" for t in texts]  # one stem, many words
    assert store._docs_holding(again) == fts_split_counts(store, again)


def test_a_word_longer_than_the_index_keeps_is_counted_as_the_index_cuts_it(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path / "m.db")
    try:
        texts = ["x" * 40_000 + " tail", "short words here"]
        assert store._docs_holding(texts) == fts_split_counts(store, texts)
    finally:
        store.close()


def test_a_large_batch_lands_whole_in_the_index_and_the_counts(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    try:
        scope = items.parse_scope("global")
        notes = [
            items.new_item(f"Note {n} runs the runner\nRunning café tests {n % 7}", scope=scope)
            for n in range(1_234)
        ]
        assert store.insert_many(notes, batch=1_234) == (1_234, 0)
        found = store.conn.execute(
            "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'runner'"
        ).fetchone()[0]
        assert found == 1_234
        assert counted(store) == vocab(store)
        assert store.conn.execute("SELECT count(*) FROM revisions").fetchone()[0] == 1_234
    finally:
        store.close()
