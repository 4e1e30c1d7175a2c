"""What a person types into `ken search` becomes a safe FTS5 query (kenning.store.fts)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import ken
from helpers import add, opened
from kenning import items
from kenning.errors import InvalidInput
from kenning.model import Scope, ScopeType
from kenning.store.fts import fts_query

TOKENIZER = "porter unicode61 remove_diacritics 2"  # as in the store's migration
FAST = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@contextmanager
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(t, tokenize='{TOKENIZER}')")
        yield conn
    finally:
        conn.close()


def matches(conn: sqlite3.Connection, expression: str) -> set[int]:
    return {row[0] for row in conn.execute("SELECT rowid FROM f WHERE f MATCH ?", (expression,))}


def phrase(text: str) -> str:
    """FTS5's own phrase query for `text`: its words, in order, next to each other."""
    return '"' + text.replace("\x00", " ").replace('"', '""') + '"'


def test_each_chunk_is_a_quoted_phrase_and_the_last_is_a_prefix():
    assert fts_query("migrate staging") == '"migrate" "staging" *'
    assert fts_query('say "hi"') == '"say" """hi""" *'
    assert fts_query("foo-bar AND( x*") == '"foo-bar" "AND(" "x*" *'


def test_chunks_without_words_are_dropped_and_no_words_gives_none():
    assert fts_query("deploy * - ( )") == '"deploy" *'
    for empty in ("", "   ", "*", '" "', "- + ( ) * : ^", "\x00", "___"):
        assert fts_query(empty) is None, repr(empty)


def test_a_nul_in_the_query_separates_words_instead_of_breaking_the_query():
    assert fts_query("a\x00b") == '"a" "b" *'
    with fts() as conn:
        conn.execute("INSERT INTO f(rowid, t) VALUES (1, ?)", ("alpha\x00beta",))
        assert matches(conn, fts_query("alpha\x00beta")) == {1}


def test_characters_sqlite_counts_as_word_characters_are_searchable():
    # Private use, and an emoji newer than SQLite's Unicode 6.1 tables.
    with fts() as conn:
        for rowid, text in enumerate(["\ue000", "\U0001f951", "café"], 1):
            conn.execute("INSERT INTO f(rowid, t) VALUES (?, ?)", (rowid, text))
        for rowid, text in enumerate(["\ue000", "\U0001f951", "cafe"], 1):
            query = fts_query(text)
            assert query is not None
            assert rowid in matches(conn, query)


@FAST
@given(st.text(max_size=60))
def test_any_text_gives_none_or_a_query_fts5_accepts(text):
    query = fts_query(text)
    if query is None:
        return
    with fts() as conn:
        conn.execute("INSERT INTO f(rowid, t) VALUES (1, 'some words here')")
        matches(conn, query)  # no sqlite3.OperationalError


SYNTAXY = st.sampled_from(
    [
        '"',
        "*",
        "-",
        "+",
        "(",
        ")",
        ":",
        "^",
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "NEAR(",
        "{",
        "}",
        "'",
        ",",
        ".",
        "\x00",
    ]
)


@FAST
@given(st.lists(st.one_of(SYNTAXY, st.text(min_size=1, max_size=8)), max_size=12).map(" ".join))
def test_query_syntax_words_are_never_fts5_syntax(text):
    query = fts_query(text)
    if query is not None:
        with fts() as conn:
            conn.execute("INSERT INTO f(rowid, t) VALUES (1, ?)", (text,))
            matches(conn, query)


@FAST
@given(
    before=st.text(max_size=20),
    text=st.text(min_size=1, max_size=40),
    after=st.text(max_size=20),
)
def test_the_query_never_matches_less_than_the_phrase_it_was_typed_as(before, text, after):
    """A document holding the typed text, as FTS5 sees phrases, is always found."""
    document = f"{before} {text} {after}"
    with fts() as conn:
        conn.execute("INSERT INTO f(rowid, t) VALUES (1, ?)", (document,))
        assume(matches(conn, phrase(text)) == {1})
        query = fts_query(text)
        assert query is not None, f"{text!r} holds words FTS5 finds, but gave no query"
        assert matches(conn, query) == {1}


GROUPS = {
    "we migrate nightly": ["migrate", "migrations", "migrated", "migrating"],
    "we deployed on friday": ["deploy", "deploys", "deploying"],
    "caches are warm": ["cache", "caching", "cached"],
}
FORM_OF = {form: doc for doc, forms in GROUPS.items() for form in forms}


@FAST
@given(st.lists(st.sampled_from(sorted(FORM_OF)), min_size=1, max_size=3))
def test_words_match_their_stems_in_any_form(words):
    with fts() as conn:
        for rowid, text in enumerate(GROUPS, 1):
            conn.execute("INSERT INTO f(rowid, t) VALUES (?, ?)", (rowid, text))
        docs = {FORM_OF[w] for w in words}
        expected = {list(GROUPS).index(docs.pop()) + 1} if len(docs) == 1 else set()
        assert matches(conn, fts_query(" ".join(words))) == expected


def test_a_title_added_is_found_by_searching_its_own_words(tmp_path):
    with opened(tmp_path / "s.db") as store:

        @FAST
        @given(st.text(min_size=1, max_size=80))
        def check(text):
            try:
                item = items.add(store, text, scope=Scope(ScopeType.GLOBAL))
            except InvalidInput:
                return  # empty, or only a secret
            with fts() as conn:
                conn.execute("INSERT INTO f(rowid, t) VALUES (1, ?)", (item.title,))
                if not matches(conn, phrase(item.title)):
                    return  # the title holds no word FTS5 can find: nothing to search by
            found = {f.item.id for f in items.search(store, item.title, limit=1000)}
            assert item.id in found
            body_words = item.body.split()
            with fts() as conn:
                conn.execute("INSERT INTO f(rowid, t) VALUES (1, ?)", (item.body,))
                searchable = bool(matches(conn, phrase(" ".join(body_words[-3:]))))
            if searchable:
                found = {
                    f.item.id for f in items.search(store, " ".join(body_words[-3:]), limit=1000)
                }
                assert item.id in found

        check()


def test_search_through_the_store_never_raises_for_syntax(tmp_path):
    with opened(tmp_path / "s.db") as store:
        items.add(
            store,
            'Config lives in foo-bar.toml "x" AND( NEAR things *',
            scope=Scope(ScopeType.GLOBAL),
        )

        @FAST
        @given(
            st.lists(
                st.one_of(SYNTAXY, st.text(min_size=1, max_size=6)), min_size=1, max_size=8
            ).map(" ".join)
        )
        def check(text):
            try:
                items.search(store, text)
            except InvalidInput as exc:
                assert "no words" in str(exc)

        check()


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("migrations", True),
        ("migrating", True),
        ("MIGRATE", True),
        ("migr", True),
        ("alembic migr", True),
        ("migr alembic", False),
        ("alembic redis", False),
        ("café", True),
        ("cafe", True),
        ("CAFÉ", True),
        ('"alembic"', True),
        ("alembic's", False),
    ],
)
def test_search_examples(tmp_path, query, found):
    with opened(tmp_path / "s.db") as store:
        item = items.add(
            store, "We migrate with alembic\nin the café on fridays", scope=Scope(ScopeType.GLOBAL)
        )
        hits = [f.item.id for f in items.search(store, query) if f.every_word]
        assert (hits == [item.id]) is found, hits


# --- the prefix as typed, before the stemmer shortens it -------------------------------------


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("deploy", "Deployment notes"),
        ("pay", "Billing runs nightly"),  # tagged payments
        ("tagg", "Tagged releases go out on Mondays"),
        ("release tagg", "Tagged releases go out on Mondays"),
        ("Deploym", "Deployment notes"),
        ("nightly bill", "Billing runs nightly"),
    ],
)
def test_the_last_word_matches_as_a_prefix_of_the_words_as_typed(tmp_path, query, title):
    with opened(tmp_path / "s.db") as store:
        for text, tags in (
            ("Deployment notes", ()),
            ("Billing runs nightly", ("payments",)),
            ("Tagged releases go out on Mondays", ()),
            ("Unrelated memory about lunch", ()),
        ):
            items.add(store, text, scope=Scope(ScopeType.GLOBAL), tags=tags)
        assert [f.item.title for f in items.search(store, query) if f.every_word] == [title]


def test_ken_search_and_memory_search_share_the_prefix_rule(tmp_path):

    add("Deployment notes", tags=["payments"])
    assert "Deployment notes" in ken("search", "deploy").stdout
    assert "Deployment notes" in ken("search", "pay").stdout


WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=14)


def test_any_start_of_a_word_finds_the_item_that_holds_it(tmp_path):
    with opened(tmp_path / "s.db") as store:

        @FAST
        @given(WORD, st.data())
        def check(word, data):
            cut = data.draw(st.integers(min_value=1, max_value=len(word)))
            item = items.add(store, f"Memory about {word}ing", scope=Scope(ScopeType.GLOBAL))
            found = {f.item.id for f in items.search(store, word[:cut], limit=1000)}
            assert item.id in found

        check()


def test_the_word_counts_follow_adds_edits_and_forgets_and_an_old_store_gets_them(tmp_path):
    path = tmp_path / "s.db"
    with opened(path) as store:
        item = items.add(store, "Tagged releases", scope=Scope(ScopeType.GLOBAL))
        assert store.prefix_words("tagg") == ["tagged"]
        items.change(store, item.id, text="Labelled releases")
        assert store.prefix_words("tagg") == []
        assert store.prefix_words("label") == ["labelled"]
        items.forget(store, [store.get_item(item.id)])
        assert store.prefix_words("label") == []
        items.add(store, "Tagged releases", scope=Scope(ScopeType.GLOBAL))
        store.conn.execute("DROP TABLE words")
        store.conn.execute("DELETE FROM _migrations WHERE name = 'm0007_word_counts'")
    with opened(path) as store:  # the migration counts what the store already holds
        assert store.prefix_words("tagg") == ["tagged"]
        assert [f.item.title for f in items.search(store, "tagg")] == ["Tagged releases"]
