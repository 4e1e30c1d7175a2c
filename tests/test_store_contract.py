"""The store contract: what every backend behind `kenning.store.Store` must do.

Each test takes a `store` made by one of BACKENDS and uses only the `Store` protocol
(no SQL, no backend's own methods), so a second backend (the team server's
PostgreSQL) runs this suite unchanged by adding its maker here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kenning import ids, items
from kenning.errors import InvalidInput, NotFound, RevisionConflict
from kenning.model import Item, Kind, Link, Provenance, Scope, ScopeType, Session, Status
from kenning.store import ItemQuery, SessionQuery, SessionUpdate, Store, Term, Words, open_store


def _sqlite(tmp_path: Path) -> Store:
    return open_store(tmp_path / "contract.db")


BACKENDS: dict[str, Callable[[Path], Store]] = {"sqlite": _sqlite}
REPO = Scope(ScopeType.REPO, "github.com/acme/shop")
GLOBAL = Scope(ScopeType.GLOBAL)


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made = BACKENDS[request.param](tmp_path)
    try:
        yield made
    finally:
        made.close()


def _item(text: str, scope: Scope = REPO, **fields: object) -> Item:
    return replace(items.new_item(text, scope=scope), **fields)  # type: ignore[arg-type]


def test_an_inserted_item_reads_back_as_it_was_written(store: Store) -> None:
    made = _item(
        "Use pnpm\nnever npm", kind=Kind.PREFERENCE, tags=("js",), evidence="the person said"
    )
    stored = store.insert_item(made)
    again = store.get_item(stored.id)
    assert (again.title, again.body, again.kind, again.scope) == (
        "Use pnpm",
        "never npm",
        Kind.PREFERENCE,
        REPO,
    )
    assert again.tags == ("js",) and again.evidence == "the person said"
    assert [r.change for r in store.revisions(stored.id)] == ["add"]


def test_every_field_of_an_item_reads_back_after_an_insert_and_a_replace(store: Store) -> None:
    made = _item(
        "Use pnpm\nnever npm",
        kind=Kind.DECISION,
        status=Status.ARCHIVED,
        pinned=True,
        tags=("js", "tools"),
        links=(Link.parse("file:package.json"), Link.parse(f"item:{ids.new_ulid()}")),
        evidence="the person said",
        provenance=Provenance(who="codex", how="mcp", session="S1", repo=REPO.value),
        reviewed_at="2026-11-30T10:00:00.000Z",
        expires_at="2027-01-01T00:00:00.000Z",
        use_count=3,
        last_used_at="2026-11-30T11:00:00.000Z",
        dismiss_reason="other",
        source="project:shop:decisions.md#pnpm",
        archive_reason="cap",
    )
    stored = store.insert_item(made)
    assert store.get_item(stored.id) == made
    changed = replace(
        stored, title="Use pnpm 9", tags=("js",), pinned=False, revision=ids.new_ulid()
    )
    store.replace_item(changed, "edit", expected_revision=stored.revision)
    assert store.get_item(stored.id) == changed
    [first, second] = store.revisions(stored.id)
    assert (first.title, first.tags, first.status) == ("Use pnpm", ("js", "tools"), "archived")
    assert (second.id, second.title, second.tags) == (changed.revision, "Use pnpm 9", ("js",))


def test_an_unknown_id_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.get_item(ids.new_ulid())


def test_ids_resolve_by_their_start_and_their_end(store: Store) -> None:
    stored = store.insert_item(_item("Deploys go through staging"))
    assert store.find_ids(stored.id[-6:]) == [stored.id]
    assert store.find_ids(stored.id[:10]) == [stored.id]


def test_a_replaced_item_keeps_every_version_and_checks_the_revision_it_expects(
    store: Store,
) -> None:
    first = store.insert_item(_item("Cache for five minutes"))
    second = store.replace_item(
        replace(first, title="Cache for ten minutes", revision=ids.new_ulid()),
        "edit",
        expected_revision=first.revision,
    )
    assert store.get_item(first.id).title == "Cache for ten minutes"
    assert [r.title for r in store.revisions(first.id)] == [
        "Cache for five minutes",
        "Cache for ten minutes",
    ]
    with pytest.raises(RevisionConflict):
        store.replace_item(
            replace(second, title="stale", revision=ids.new_ulid()),
            "edit",
            expected_revision=first.revision,
        )


def test_list_and_count_filter_by_scope_kind_and_status(store: Store) -> None:
    store.insert_item(_item("Repo fact", kind=Kind.FACT))
    store.insert_item(_item("Global rule", GLOBAL, kind=Kind.PREFERENCE))
    store.insert_item(_item("Waiting", status=Status.PROPOSED))
    repo = store.list_items(ItemQuery(scopes=(str(REPO),)))
    assert [i.title for i in repo] == ["Repo fact"]
    assert store.count_items(ItemQuery(statuses=("proposed",))) == 1
    assert store.count_items(ItemQuery(kinds=("preference",))) == 1
    assert store.count_items() == 3


def test_search_in_words_finds_stems_and_the_last_word_as_a_prefix(store: Store) -> None:
    store.insert_item(_item("Deployment notes for the payments service"))
    store.insert_item(_item("Giraffes eat acacia leaves"))
    query = ItemQuery(statuses=("active",))
    assert [i.title for i, _ in store.search(Words(typed="deploy"), query)] == [
        "Deployment notes for the payments service"
    ]
    assert [i.title for i, _ in store.search(Words(typed="payment serv"), query)] == [
        "Deployment notes for the payments service"
    ]
    found = store.search(Words(any_of=(Term("acacia"), Term("zzz"))), query)
    assert [i.title for i, _ in found] == ["Giraffes eat acacia leaves"]
    with pytest.raises(InvalidInput):
        store.search(Words(typed="-- ::"), query)
    assert store.search(Words(any_of=()), query) == []


def test_search_text_is_never_query_syntax(store: Store) -> None:
    store.insert_item(_item('Quote "AND" NEAR(x) -y *z'))
    found = store.search(Words(typed='"AND" NEAR(x'), ItemQuery())
    assert [i.title for i, _ in found] == ['Quote "AND" NEAR(x) -y *z']


def test_deleted_items_are_gone_with_their_versions_and_uses(store: Store) -> None:
    doomed = store.insert_item(_item("Forget me soon"))
    kept = store.insert_item(_item("Keep me"))
    store.record_uses([doomed.id, kept.id], "s1", "pack")
    assert store.delete_items([doomed.id]) == 1
    with pytest.raises(NotFound):
        store.get_item(doomed.id)
    assert store.revisions(doomed.id) == []
    assert store.search(Words(typed="forget"), ItemQuery()) == []
    assert store.get_item(kept.id).use_count == 1


def test_sessions_are_stored_found_updated_and_listed(store: Store) -> None:
    session = store.upsert_session(
        Session(id=ids.new_ulid(), agent="claude", agent_session_id="abc", repo=str(REPO.value))
    )
    assert store.find_session("claude", "abc") == store.get_session(session.id)
    store.note_prompt(session.id, "first prompt")
    store.note_prompt(session.id, "second prompt")
    again = store.get_session(session.id)
    assert (again.first_prompt, again.last_prompt, again.prompt_count) == (
        "first prompt",
        "second prompt",
        2,
    )
    store.update_session(
        session.id, SessionUpdate(ended_at="2026-12-01T10:00:00.000Z", end_reason="exit")
    )
    assert store.get_session(session.id).end_reason == "exit"
    assert [s.id for s in store.list_sessions(SessionQuery(agent="claude"))] == [session.id]
    assert store.count_sessions() == 1
    assert store.open_sessions() == []


def test_what_a_session_was_told_is_recorded_in_order(store: Store) -> None:
    session = store.upsert_session(Session(id=ids.new_ulid(), agent="codex"))
    item = store.insert_item(_item("Use pnpm"))
    store.record_delivery(session.id, "pack", [item.id])
    store.record_delivery(session.id, "recall", [item.id], query="which package manager")
    told = store.deliveries(session.id)
    assert [(d.what, d.item_ids, d.query) for d in told] == [
        ("pack", (item.id,), None),
        ("recall", (item.id,), "which package manager"),
    ]


def test_word_statistics_count_the_items_that_hold_a_word(store: Store) -> None:
    for text in ("Deploy on Tuesday", "Deploy on Thursday", "Lint before commit"):
        store.insert_item(_item(text))
    [stems] = store.stems(["deploying"])
    total, counts = store.doc_freqs(stems)
    assert total == 3 and counts[stems[0]] == 2


def test_projects_and_file_stamps(store: Store) -> None:
    store.add_project("shop", "/src/shop", str(REPO.value))
    assert [p.slug for p in store.projects()] == ["shop"]
    store.set_file_stamp("shop", "plan.md", (10, 20))
    assert store.file_stamp("shop", "plan.md") == (10, 20)
    store.set_place_stamp("claude", "/home/x/.claude/projects/a/memory", (3, 99))
    assert store.place_stamp("claude", "/home/x/.claude/projects/a/memory") == (3, 99)
    assert store.remove_project("shop") and store.projects() == []


def test_quotes_of_forgotten_text_are_found_and_blanked(store: Store) -> None:
    marker = "The Quokkaflint rotation runs on Fridays"
    quoting = store.insert_item(_item(f"Summary\nWe agreed: {marker}.", kind=Kind.SUMMARY))
    store.insert_item(_item("Unrelated"))
    session = store.upsert_session(Session(id=ids.new_ulid(), agent="claude"))
    store.note_prompt(session.id, f"remember: {marker}")
    assert [i.id for i in store.items_quoting([marker])] == [quoting.id]
    assert store.scrub_quotes([marker]) == 2  # the first and the last prompt
    assert store.get_session(session.id).first_prompt is None


def test_a_replacement_copy_is_found_by_the_item_it_links(store: Store) -> None:
    original = store.insert_item(_item("Use npm"))
    copy = store.insert_item(
        _item(
            "Use pnpm",
            status=Status.PROPOSED,
            links=(Link.parse(f"item:{original.id}"),),
            provenance=Provenance(who="codex", how="mcp"),
        ),
        change=items.REPLACES,
    )
    assert [i.id for i in store.replacement_copies([original.id])] == [copy.id]


def test_the_store_checks_itself(store: Store) -> None:
    store.insert_item(_item("Anything"))
    assert store.integrity_check() == "ok"
