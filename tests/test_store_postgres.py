"""What only the PostgreSQL store does: one store per schema, its migrations, its URL,
and many connections writing at once. What every backend does is in
test_store_contract.py, which runs on this one too."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kenning import ids, items
from kenning.errors import InvalidInput, RevisionConflict, StoreBusy, StoreError
from kenning.model import Item, Scope, ScopeType
from kenning.store import ItemQuery, Store, Words, open_store
from kenning.store.postgres import migrations

REPO = Scope(ScopeType.REPO, "github.com/acme/shop")


def _item(text: str, **fields: object) -> Item:
    return replace(items.new_item(text, scope=REPO), **fields)  # type: ignore[arg-type]


@pytest.fixture
def opened() -> Iterator[list[Store]]:
    stores: list[Store] = []
    yield stores
    for made in stores:
        made.close()


@pytest.fixture
def open_pg(pg_dsn: str, opened: list[Store]) -> Callable[..., Store]:
    def make(schema: str | None = "ws_acme", url: str | None = None) -> Store:
        opened.append(open_store(url or pg_dsn, schema=schema))
        return opened[-1]

    return make


def test_a_schema_name_that_is_not_a_plain_name_is_refused_before_connecting() -> None:
    for bad in ('ws"; DROP SCHEMA public; --', "Upper", "1starts_with_digit", "x" * 64, ""):
        with pytest.raises(InvalidInput, match="plain name"):
            open_store(f"postgresql://nobody@/none?host=/nonexistent&schema={bad or '-'}")
    with pytest.raises(InvalidInput):
        open_store("postgresql://nobody@/none?host=/nonexistent", schema="a-b")


def test_an_unreachable_server_is_a_store_error_naming_where_without_the_password() -> None:
    with pytest.raises(StoreError) as caught:
        open_store("postgresql://ken:s3cret@/none?host=/nonexistent/socket", schema="ws_x")
    assert "s3cret" not in str(caught.value) and "ws_x" in str(caught.value)


def test_opening_the_sqlite_store_never_imports_psycopg(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "import kenning.hooks.run, kenning.store\n"
        f"kenning.store.open_store({str(tmp_path / 'm.db')!r}).close()\n"
        "print(sorted(m for m in sys.modules if m.startswith('psycopg')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.postgres
def test_each_schema_holds_a_memory_of_its_own(open_pg: Callable[..., Store], pg_dsn: str) -> None:
    acme, globex = open_pg("ws_acme"), open_pg("ws_globex")
    acme.insert_item(_item("Acme deploys on Tuesday"))
    assert globex.count_items() == 0 and acme.count_items() == 1
    assert globex.search(Words(typed="deploys"), ItemQuery()) == []
    in_url = open_pg(None, url=pg_dsn + "&schema=ws_acme")
    assert in_url.count_items() == 1 and "schema=ws_acme" in in_url.path
    assert open_pg(None).count_items() == 0  # the default schema, `kenning`
    with pytest.raises(StoreError, match="no store in schema ws_nowhere"):
        open_store(pg_dsn, schema="ws_nowhere", create=False)
    opened_again = open_store(pg_dsn, schema="ws_acme", create=False)
    assert opened_again.count_items() == 1
    opened_again.close()
    assert globex.doc_freqs(acme.stems(["deploys"])[0])[1] == {"deploy": 0}


@pytest.mark.postgres
def test_a_store_opened_again_runs_no_migration_twice_and_refuses_a_newer_schema(
    open_pg: Callable[..., Store], pg_dsn: str
) -> None:
    open_pg("ws_acme").insert_item(_item("Kept"))
    assert open_pg("ws_acme").count_items() == 1
    with psycopg.connect(pg_dsn, autocommit=True, options="-c search_path=ws_acme") as conn:
        assert migrations.apply(conn, "ws_acme") == 0  # type: ignore[arg-type]
        conn.execute("INSERT INTO _migrations (name) VALUES ('m9999_from_the_future')")
    with pytest.raises(StoreError, match="newer kenning"):
        open_pg("ws_acme")


@pytest.mark.postgres
def test_servers_opening_a_new_schema_at_once_all_get_it(pg_dsn: str, opened: list[Store]) -> None:
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(open_store(pg_dsn, schema="ws_race"))
        except BaseException as exc:  # noqa: BLE001 - the test reports any failure
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and len(opened) == 4
    opened[0].insert_item(_item("Seen by all"))
    assert {s.count_items() for s in opened} == {1}


def _race(work: Callable[[int], Any], n: int) -> list[Any]:
    """Run `work(i)` for i in range(n) in threads started together; their results or
    exceptions, in order."""
    results: list[Any] = [None] * n
    start = threading.Barrier(n)

    def run(i: int) -> None:
        start.wait(timeout=30)
        try:
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - the test looks at each outcome
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


@pytest.mark.postgres
def test_of_writers_expecting_one_revision_at_once_exactly_one_wins(
    open_pg: Callable[..., Store],
) -> None:
    stores = [open_pg() for _ in range(4)]
    first = stores[0].insert_item(_item("Cache for five minutes"))
    results = _race(
        lambda i: stores[i].replace_item(
            replace(first, title=f"Cache for {i} minutes", revision=ids.new_ulid()),
            "edit",
            expected_revision=first.revision,
        ),
        4,
    )
    won = [r for r in results if isinstance(r, Item)]
    assert len(won) == 1 and all(isinstance(r, RevisionConflict) for r in results if r not in won)
    assert stores[0].get_item(first.id).title == won[0].title
    assert len(stores[0].revisions(first.id)) == 2


@pytest.mark.postgres
def test_uses_recorded_at_once_in_one_session_count_once(open_pg: Callable[..., Store]) -> None:
    stores = [open_pg() for _ in range(4)]
    item = stores[0].insert_item(_item("Use pnpm"))
    raised = _race(lambda i: stores[i].record_uses([item.id], "s1", "pack"), 4)
    assert sorted(raised) == [0, 0, 0, 1]
    assert stores[0].get_item(item.id).use_count == 1


@pytest.mark.postgres
def test_word_counts_stay_exact_under_writers_at_once(open_pg: Callable[..., Store]) -> None:
    stores = [open_pg() for _ in range(3)]

    def write(i: int) -> int:
        for n in range(15):
            stores[i].insert_item(_item(f"Deploy payments shared words writer{i} note{n}"))
        with stores[i].together():
            for n in range(5):
                stores[i].insert_item(_item(f"Shared deploy words again {i}-{n}"))
        return i

    assert _race(write, 3) == [0, 1, 2]
    [[deploy, shared]] = stores[0].stems(["deploy shared"])
    total, counts = stores[0].doc_freqs([deploy, shared])
    assert total == 60 and counts == {deploy: 60, shared: 60}
    assert stores[0].word_freqs(["payments", "again"]) == {"payments": 45, "again": 15}
    assert stores[0].integrity_check() == "ok"


@pytest.mark.postgres
def test_readers_name_other_connections_but_not_the_store_s_own(
    open_pg: Callable[..., Store], pg_dsn: str
) -> None:
    store = open_pg()
    with store.together():  # more of the store's own connections in use
        store.count_items()
    assert store.readers() == []
    with psycopg.connect(pg_dsn, application_name="psql-by-hand") as other:
        pid = other.info.backend_pid
        assert f"{pid} (psql-by-hand)" in store.readers()


@pytest.fixture
def seeded(open_pg: Callable[..., Store]) -> Store:
    store = open_pg()
    for text in ("Quote 'it' & \"AND\" | !x <-> y:*", "Deploy tagged releases", "back\\slash"):
        store.insert_item(_item(text))
    return store


@pytest.mark.postgres
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(typed=st.text(max_size=40))
@example(typed="/_")  # a path of punctuation: PostgreSQL's parser kept it as a word
def test_no_typed_text_is_ever_query_syntax(seeded: Store, typed: str) -> None:
    # One store for every example (the fixture is made once per test).
    try:
        found = seeded.search(Words(typed=typed), ItemQuery())
    except InvalidInput:
        assert seeded.words_in([typed]) == [[]]  # refused only when it holds no word
        return
    assert all(isinstance(item, Item) for item, _ in found)


@pytest.mark.postgres
def test_quotes_and_operators_in_typed_text_are_words(seeded: Store) -> None:
    for typed in ("'quote' &", "x <->", "y:*", "back\\slash", "!x"):
        found = seeded.search(Words(typed=typed), ItemQuery())
        assert found, typed


@pytest.mark.postgres
def test_two_blocks_that_deadlock_on_word_counts_end_one_as_busy_with_nothing_written(
    open_pg: Callable[..., Store],
) -> None:
    first, second = open_pg(), open_pg()
    halfway = threading.Barrier(2)

    def write(store: Store, words: tuple[str, str]) -> str:
        with store.together():
            store.insert_item(_item(words[0]))  # no word in common with the other's first
            halfway.wait(timeout=30)
            store.insert_item(_item(words[1]))  # the other's first word: each waits on the other
        return "written"

    results = _race(
        lambda i: (
            write(first, ("quokka", "wombat")) if i == 0 else write(second, ("wombat", "quokka"))
        ),
        2,
    )
    assert sorted(map(type, results), key=str) == sorted([str, StoreBusy], key=str), results
    assert first.count_items() == 2  # the block that won, whole; nothing of the other
    assert first.word_freqs(["quokka", "wombat"]) == {"quokka": 1, "wombat": 1}


@pytest.mark.postgres
def test_the_item_columns_table_names_every_column_the_postgres_tables_have(
    open_pg: Callable[..., Store], pg_dsn: str
) -> None:
    """The one column table (`store.columns`) describes PostgreSQL's `items` and
    `revisions` too: a column a migration adds without its line there is never written."""
    from kenning.store import columns

    open_pg("ws_cols")
    with psycopg.connect(pg_dsn) as conn:

        def names(table: str) -> set[str]:
            rows = conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'ws_cols' AND table_name = %s",
                (table,),
            ).fetchall()
            return {r[0] for r in rows}

        stored, versioned = names("items"), names("revisions")
    # PostgreSQL's own: the search vector, and the insertion order (SQLite's rowid).
    assert stored - {"tsv", "seq"} == set(columns.NAMES)
    assert versioned == set(columns.REVISION_NAMES)
