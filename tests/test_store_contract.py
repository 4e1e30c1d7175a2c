"""The store contract: what every backend behind `kenning.store.Store` must do.

Each test takes a `store` made by one of BACKENDS and uses only the `Store` protocol
(no SQL, no backend's own methods): SQLite's file, and PostgreSQL in a schema of a fresh
database of its own (the `pg_dsn` fixture; marked `postgres`, skipped saying why where
PostgreSQL is not installed, never in CI). A third backend runs the suite unchanged by
adding its maker here, and its marks to MARKS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kenning import ids, items
from kenning.errors import InvalidInput, NotFound, PlanConflict, RevisionConflict
from kenning.model import Item, Kind, Link, Provenance, Scope, ScopeType, Session, Status
from kenning.pack import build_pack
from kenning.recall import recall
from kenning.store import ItemQuery, SessionQuery, SessionUpdate, Store, Term, Words, open_store
from kenning.store.base import LessonState, PlannedChange, ReceiptStep, ReceiptWrite

Opener = Callable[[], Store]


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return lambda: open_store(tmp_path / "contract.db")


def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    dsn = request.getfixturevalue("pg_dsn")
    return lambda: open_store(dsn, schema="ws_contract")


# Each maker gives an opener of one store: every call opens the same store again (a
# second process, or a second server, on the same memory).
BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], Opener]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
}
MARKS: dict[str, tuple[pytest.MarkDecorator, ...]] = {"postgres": (pytest.mark.postgres,)}
REPO = Scope(ScopeType.REPO, "github.com/acme/shop")
GLOBAL = Scope(ScopeType.GLOBAL)


@pytest.fixture(params=[pytest.param(name, marks=MARKS.get(name, ())) for name in sorted(BACKENDS)])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    opened: list[Store] = []
    opener = BACKENDS[request.param](request, tmp_path)

    def again() -> Store:
        opened.append(opener())
        return opened[-1]

    try:
        yield again
    finally:
        for made in opened:
            made.close()


@pytest.fixture
def store(reopen: Opener) -> Store:
    return reopen()


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
    store.note_prompt(session.id, None)  # a turn of none of the person's words: counted
    store.note_prompt(session.id, "first prompt")
    store.note_prompt(session.id, "second prompt")
    store.note_prompt(session.id, None)
    again = store.get_session(session.id)
    assert (again.first_prompt, again.last_prompt, again.prompt_count) == (
        "first prompt",
        "second prompt",
        4,
    )
    store.update_session(
        session.id, SessionUpdate(ended_at="2026-12-01T10:00:00.000Z", end_reason="exit")
    )
    assert store.get_session(session.id).end_reason == "exit"
    assert [s.id for s in store.list_sessions(SessionQuery(agent="claude"))] == [session.id]
    assert store.count_sessions() == 1
    assert store.open_sessions() == []


def test_session_ids_resolve_by_their_start_their_end_and_their_short_ids_start(
    store: Store,
) -> None:
    session = store.upsert_session(Session(id="01KB8N3JQ7ZT5RPXW2M4QDRYA9", agent="codex"))
    other = store.upsert_session(
        Session(id="01KB8P00000000000000QDZZ00", agent="claude", agent_session_id="x_y")
    )
    for ref in ("QDRY", "QDRYA", "QDRYA9", "M4QDRYA9", "01KB8N3J", session.id):
        assert store.find_session_ids(ref) == [session.id], ref
    assert store.find_session_ids("QD") == [session.id, other.id]
    assert store.find_session_ids("DRYA") == []  # inside the short id: neither start nor end
    assert store.find_session_ids("x_y") == [other.id]
    assert store.find_session_ids("xzy") == []  # `_` is no wildcard


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


def test_the_digests_forget_leaves_are_kept_once_each(store: Store) -> None:
    assert not store.is_forgotten("a" * 64)
    store.add_forgotten(["a" * 64, "b" * 64])
    store.add_forgotten(["a" * 64])  # a second forget of the same entry
    assert store.is_forgotten("a" * 64) and store.is_forgotten("b" * 64)
    assert not store.is_forgotten("c" * 64)


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


def test_search_ranks_a_word_in_the_title_above_the_same_word_in_the_body(store: Store) -> None:
    in_title = store.insert_item(_item("Quokka service restarts nightly\nnotes on caching"))
    store.insert_item(_item("Notes on caching\nthe quokka service restarts nightly"))
    found = store.search(Words(typed="quokka"), ItemQuery())
    assert [i.id for i, _ in found][0] == in_title.id and len(found) == 2
    assert found[0][1] > found[1][1]  # higher is better


def test_search_takes_the_last_word_as_a_prefix_of_words_as_typed(store: Store) -> None:
    stored = store.insert_item(_item("Tagged releases ship on Fridays"))
    for typed in ("tagg", "releas", "ship fri", "Fridays tag", "TAGGED"):
        assert [i.id for i, _ in store.search(Words(typed=typed), ItemQuery())] == [stored.id]
    assert store.search(Words(typed="zebra"), ItemQuery()) == []
    found = store.search(Words(any_of=(Term("rel", prefix=True),)), ItemQuery())
    assert [i.id for i, _ in found] == [stored.id]


def test_search_finds_words_joined_by_a_hyphen_or_next_to_small_words(store: Store) -> None:
    stored = store.insert_item(_item("Restart the payments service on deploy"))
    for typed in ("payments-service", "restart the", "the payments"):
        assert [i.id for i, _ in store.search(Words(typed=typed), ItemQuery())] == [stored.id]


def test_search_list_and_count_keep_to_the_statuses_asked_for(store: Store) -> None:
    active = store.insert_item(_item("Rotate the deploy keys"))
    waiting = store.insert_item(_item("Rotate the deploy keys weekly", status=Status.PROPOSED))
    store.insert_item(_item("Rotate the deploy keys daily", status=Status.ARCHIVED))

    def found(*statuses: str) -> set[str]:
        return {i.id for i, _ in store.search(Words(typed="rotate"), ItemQuery(statuses=statuses))}

    assert found("active") == {active.id}
    assert found("active", "proposed") == {active.id, waiting.id}
    assert len(found()) == 3  # no statuses: any
    assert [i.id for i in store.list_items(ItemQuery(statuses=("proposed",)))] == [waiting.id]
    assert store.count_items(ItemQuery(statuses=("archived",))) == 1


def test_every_change_is_a_version_and_an_edit_in_place_rewrites_the_current_one(
    store: Store,
) -> None:
    first = store.insert_item(_item("Cache for five minutes"))
    archived = store.replace_item(
        replace(first, status=Status.ARCHIVED, revision=ids.new_ulid()), "archive"
    )
    in_place = store.replace_item(
        replace(archived, title="Cache for 5 minutes", revision=ids.new_ulid()),
        "edit",
        new_version=False,
    )
    assert in_place.revision == archived.revision == store.get_item(first.id).revision
    versions = store.revisions(first.id)
    assert [(r.change, r.status, r.title) for r in versions] == [
        ("add", "active", "Cache for five minutes"),
        ("edit", "archived", "Cache for 5 minutes"),
    ]
    assert versions[-1].id == archived.revision


def test_forgetting_an_item_removes_every_version_of_its_text(store: Store) -> None:
    first = store.insert_item(_item("The vault rotation is Quokkaflint"))
    store.replace_item(
        replace(first, title="The vault rotation was changed", revision=ids.new_ulid()), "edit"
    )
    assert [i.id for i in store.items_quoting(["QUOKKAFLINT"])] == [first.id]  # an old version
    assert store.items_quoting(["quokkaflint"], exclude_ids=[first.id]) == []
    assert store.delete_items([first.id]) == 1
    assert store.items_quoting(["quokkaflint"]) == [] and store.revisions(first.id) == []
    assert store.search(Words(typed="vault"), ItemQuery()) == []
    assert store.integrity_check() == "ok"


def test_writes_together_land_all_at_once_or_not_at_all(store: Store, reopen: Opener) -> None:
    other = reopen()
    with pytest.raises(RuntimeError), store.together():
        store.insert_item(_item("One"))
        store.insert_item(_item("Two"))
        raise RuntimeError("stop")
    assert store.count_items() == 0
    with store.together():
        store.insert_item(_item("One"))
        store.insert_item(_item("Two"))
        assert other.count_items() == 0  # another connection sees none before all
    assert other.count_items() == 2


def test_insert_many_skips_the_ids_it_holds_already(store: Store) -> None:
    held = store.insert_item(_item("Held"))
    fresh = _item("Fresh")
    assert store.insert_many([held, fresh, fresh], batch=2) == (1, 2)
    assert store.count_items() == 2
    assert [r.change for r in store.revisions(fresh.id)] == ["import"]


def test_revision_owners_names_the_item_of_each_revision_it_holds(store: Store) -> None:
    held = store.insert_item(_item("Held"))
    edited = items.change(store, held.id, text="Held still")
    missing = ids.new_ulid()
    wanted = [held.revision, edited.revision, missing]
    assert store.revision_owners(wanted) == {held.revision: held.id, edited.revision: held.id}
    assert store.revision_owners([]) == {}


def test_insert_many_brings_an_items_earlier_versions_before_its_own(store: Store) -> None:
    from dataclasses import replace

    from kenning.ids import new_ulid
    from kenning.store import Version

    item = _item("Use pnpm 9")
    first = replace(item, title="Use pnpm", revision=new_ulid(), updated_at=item.created_at)
    edited = replace(item, revision=new_ulid(), status=Status.ARCHIVED)
    now = replace(item, revision=new_ulid())
    history = {now.id: [Version(first, "add"), Version(edited, "archive")]}
    assert store.insert_many([now], history=history) == (1, 0)
    versions = store.revisions(now.id)
    assert [(r.change, r.title, r.status) for r in versions] == [
        ("add", "Use pnpm", "active"),
        ("archive", "Use pnpm 9", "archived"),
        ("import", "Use pnpm 9", "active"),
    ]
    assert versions[-1].id == store.get_item(now.id).revision
    # An item already held brings nothing, its history neither.
    assert store.insert_many([now], history=history) == (0, 1)
    assert len(store.revisions(now.id)) == 3


def test_list_filters_by_tag_pin_expiry_session_and_ids_and_pages_newest_first(
    store: Store,
) -> None:
    tagged = store.insert_item(_item("Tagged js", tags=("js", "ci")))
    pinned = store.insert_item(_item("Pinned rule", pinned=True))
    gone = store.insert_item(_item("Expired note", expires_at="2020-01-01T00:00:00.000Z"))
    by_session = store.insert_item(
        _item("From a session", provenance=Provenance(who="codex", how="mcp", session="S1"))
    )

    def ids_of(**fields: object) -> list[str]:
        return [i.id for i in store.list_items(ItemQuery(**fields))]  # type: ignore[arg-type]

    assert ids_of(tags=("js",)) == [tagged.id] and ids_of(tags=("js", "py")) == []
    assert ids_of(pinned=True) == [pinned.id]
    assert gone.id not in ids_of() and gone.id in ids_of(include_expired=True)
    assert ids_of(session_id="S1") == [by_session.id]
    assert ids_of()[0] == pinned.id  # pins first
    newest = [by_session.id, pinned.id, tagged.id]  # the expired one is left out
    assert ids_of(captured_first=True) == newest
    assert ids_of(captured_first=True, limit=1, offset=1) == [pinned.id]
    assert ids_of(captured_first=True, exclude_ids=(pinned.id,)) == [by_session.id, tagged.id]


def test_a_query_leaves_out_what_belongs_to_the_repos_it_excludes(store: Store) -> None:
    payroll = "github.com/acme/payroll"
    written = Provenance(who="user", how="cli", repo=payroll)
    kept = [
        store.insert_item(_item("Shop rule bonus", Scope(ScopeType.REPO, "github.com/acme/shop"))),
        store.insert_item(_item("Global rule bonus", Scope(ScopeType.GLOBAL))),
        # a repo whose name starts as payroll's does is another repo
        store.insert_item(
            _item("Payroll2 branch bonus", Scope(ScopeType.WORKSTREAM, f"{payroll}2#main"))
        ),
    ]
    for made in (
        _item("Payroll rule bonus", Scope(ScopeType.REPO, payroll)),
        _item("Payroll branch bonus", Scope(ScopeType.WORKSTREAM, f"{payroll}#fix#2")),
        _item("Written in payroll bonus", Scope(ScopeType.GLOBAL), provenance=written),
    ):
        store.insert_item(made)
    query = ItemQuery(exclude_repos=(payroll,))
    assert {i.id for i in store.list_items(query)} == {i.id for i in kept}
    assert store.count_items(query) == 3
    found = store.search(Words(any_of=(Term("bonus"),)), query)
    assert {i.id for i, _ in found} == {i.id for i in kept}


def test_a_use_counts_once_per_session(store: Store) -> None:
    item = store.insert_item(_item("Use pnpm"))
    assert store.record_uses([item.id], "s1", "pack") == 1
    assert store.record_uses([item.id], "s1", "recall") == 0
    assert store.record_uses([item.id], "s2", "pack") == 1
    assert store.record_uses([item.id], None, "cli") == 1
    again = store.get_item(item.id)
    assert again.use_count == 3 and again.last_used_at is not None


def test_a_second_session_of_one_agent_run_is_the_first(store: Store) -> None:
    first = store.upsert_session(Session(id=ids.new_ulid(), agent="copilot", agent_session_id="r1"))
    second = store.upsert_session(
        Session(id=ids.new_ulid(), agent="copilot", agent_session_id="r1")
    )
    assert second.id == first.id and store.count_sessions() == 1
    assert store.find_session_ids(first.id[-6:]) == [first.id]
    assert store.find_session_ids("r1") == [first.id]
    store.upsert_session(first, scopes=[str(REPO)])
    assert store.session_scopes(first.id) == [str(REPO)]
    store.set_summary_progress(first.id, 2, 14)
    assert store.summary_progress(first.id) == (2, 14)
    store.update_session(first.id, SessionUpdate(commits=("abc123",), pid=42))
    assert store.get_session(first.id).commits == ("abc123",)
    assert [s.id for s, _ in store.open_sessions("copilot")] == [first.id]


def test_run_lessons_keep_signals_prompts_repeats_and_marks(store: Store) -> None:
    session = store.upsert_session(Session(id=ids.new_ulid(), agent="claude"))
    store.add_signal(session.id, "failed", "pytest exited 1")
    store.add_signal(session.id, "correction", "no, use pnpm")
    assert [(s.kind, s.detail) for s in store.signals(session.id)] == [
        ("failed", "pytest exited 1"),
        ("correction", "no, use pnpm"),
    ]
    store.add_prompt(session.id, "run the tests")
    assert store.session_prompts(session.id) == ["run the tests"]
    assert [store.note_call(session.id, k) for k in ("ls", "ls", "ls", "pwd")] == [1, 2, 3, 1]
    assert store.lesson_state(session.id) == LessonState(None, None)
    assert store.mark_lesson(session.id, "asked") and not store.mark_lesson(session.id, "asked")
    assert store.lesson_state(session.id).asked_at is not None


def test_a_plan_applies_whole_once_and_its_receipt_replays(store: Store) -> None:
    target = store.insert_item(_item("Use npm"))
    new = _item("Use pnpm")
    changes = [
        PlannedChange(
            0,
            target.id,
            "plan:retire",
            expected_revision=target.revision,
            statuses=("active",),
            fields=(("status", Status.ARCHIVED), ("revision", ids.new_ulid())),
        ),
        PlannedChange(1, new.id, "plan:create", new=new),
    ]
    steps = [
        ReceiptStep(0, "retire", (ReceiptWrite(target.id, "plan:retire", "r1"),)),
        ReceiptStep(1, "create", (ReceiptWrite(new.id, "plan:create", new.revision),)),
    ]
    receipt, replayed = store.apply_plan("d1", "p1", "me", changes, steps)
    assert not replayed and receipt.operations == tuple(steps) and receipt.digest == "d1"
    assert store.get_item(target.id).status == Status.ARCHIVED
    assert [r.change for r in store.revisions(target.id)] == ["add", "plan:retire"]
    assert store.apply_plan("d1", "p1", "me", changes, steps) == (receipt, True)
    assert store.plan_receipt("d1") == receipt and store.plan_receipts("p1") == [receipt]
    assert len(store.revisions(target.id)) == 2 and store.count_items() == 2
    with pytest.raises(InvalidInput):
        store.apply_plan("d2", "p1", "me", changes, steps)
    stale = [
        PlannedChange(0, target.id, "plan:revise", expected_revision=target.revision),
        PlannedChange(1, "x", "plan:create", new=_item("Never stored")),
    ]
    with pytest.raises(PlanConflict) as caught:
        store.apply_plan("d3", "p3", "me", stale, [])
    assert [c.code for c in caught.value.conflicts] == ["revision_changed"]  # type: ignore[attr-defined]
    assert store.count_items() == 2 and store.plan_receipt("d3") is None


def test_completion_offers_short_ids_and_scopes(store: Store) -> None:
    repo = store.insert_item(_item("Repo fact"))
    store.insert_item(_item("Global fact", GLOBAL, status=Status.ARCHIVED))
    start = ids.short_id(repo.id)[:2].upper()
    offered = store.short_ids(start, statuses=("active",))
    assert (repo.id, "Repo fact", "active") in offered
    assert all(i[20:].startswith(start) for i, _, _ in offered)
    assert store.scopes_in_use() == ["global", str(REPO)]


def test_the_scopes_in_use_that_start_with_a_prefix(store: Store) -> None:
    for scope in (
        "workstream:github.com/a/b#main",
        "workstream:github.com/a/b#feat/x",
        "workstream:github.com/a/bc#main",
        "repo:github.com/a/b",
    ):
        store.insert_item(_item(f"In {scope}", Scope.from_stored(scope)))
    assert store.scopes_in_use(prefix="workstream:github.com/a/b#") == [
        "workstream:github.com/a/b#main",
        "workstream:github.com/a/b#feat/x",
    ]
    assert store.scopes_in_use(prefix="workstream:github.com/a/b#f") == [
        "workstream:github.com/a/b#feat/x"
    ]
    assert store.scopes_in_use(prefix="project:") == []


def test_word_statistics_as_typed_stemmed_and_by_prefix(store: Store) -> None:
    store.insert_item(_item("Deploying payments on Tuesday"))
    store.insert_item(_item("Payments retry twice"))
    assert store.words_in(["Deploying Payments"]) == [["deploying", "payments"]]
    [[deploy, payment]] = store.stems(["deploying payments"])
    assert store.stems(["deployed payment"]) == [[deploy, payment]]  # one stem for both
    assert store.word_freqs(["payments", "deploying", "zzz"]) == {"payments": 2, "deploying": 1}
    assert store.prefix_words("pay")[0] == "payments"
    [[retry]] = store.stems(["retry"])
    total, counts = store.doc_freqs([payment, retry, "zzzabsent"])
    assert total == 2 and counts == {payment: 2, retry: 1, "zzzabsent": 0}


def test_word_statistics_read_again_follow_every_change_to_the_store(
    store: Store, reopen: Opener
) -> None:
    # A store may keep what it read for the next prompt: each change must show at once,
    # whoever makes it.
    [[quokka]] = store.stems(["quokka"])
    first = store.insert_item(_item("A quokka in the garden"))
    assert store.doc_freqs([quokka]) == (1, {quokka: 1})
    assert store.word_freqs(["quokka", "wombat"]) == {"quokka": 1}
    store.insert_item(_item("Quokka again"))  # this store's own write
    assert store.doc_freqs([quokka]) == (2, {quokka: 2})
    assert store.word_freqs(["quokka"]) == {"quokka": 2}
    store.replace_item(replace(first, title="A wombat", revision=ids.new_ulid()), "edit")
    assert store.doc_freqs([quokka])[1] == {quokka: 1}
    assert store.word_freqs(["quokka", "wombat"]) == {"quokka": 1, "wombat": 1}
    other = reopen()  # another process's
    other.insert_item(_item("Wombat and quokka"))
    assert store.doc_freqs([quokka]) == (3, {quokka: 2})
    assert store.word_freqs(["wombat"]) == {"wombat": 2}
    other.delete_items([first.id])
    assert store.word_freqs(["wombat"]) == {"wombat": 1}
    assert store.doc_freqs([quokka])[1] == {quokka: 2}


def test_the_data_version_moves_when_another_connection_writes(
    store: Store, reopen: Opener
) -> None:
    before = store.data_version()
    reopen().insert_item(_item("Written elsewhere"))
    assert store.data_version() != before


def test_a_second_writer_expecting_a_stale_revision_is_refused(
    store: Store, reopen: Opener
) -> None:
    first = store.insert_item(_item("Cache for five minutes"))
    other = reopen()
    store.replace_item(replace(first, title="Ten", revision=ids.new_ulid()), "edit", first.revision)
    with pytest.raises(RevisionConflict):
        other.replace_item(
            replace(first, title="Six", revision=ids.new_ulid()), "edit", first.revision
        )
    assert other.get_item(first.id).title == "Ten"


def test_recall_and_packs_read_memories_through_the_backend(store: Store) -> None:
    rule = store.insert_item(
        _item("Use pnpm for JavaScript packages\nnever npm or yarn", kind=Kind.PREFERENCE)
    )
    store.insert_item(_item("Giraffes eat acacia leaves"))
    found = recall(store, "which package manager for javascript packages?", [str(REPO)])
    assert [c.item.id for c in found.kept][:1] == [rule.id]
    pack = build_pack(store, [str(REPO)])
    assert rule.id in {i.id for i in pack.items} and "pnpm" in pack.text


def test_the_item_captured_next_in_a_scope_is_found_through_the_filters(store: Store) -> None:
    first = store.insert_item(_item("Maya: how was the move?", kind=Kind.NOTE))
    elsewhere = store.insert_item(_item("A global note between them", scope=GLOBAL))
    reply = store.insert_item(_item("Leo: exhausting, four flights of stairs", kind=Kind.NOTE))
    last = store.insert_item(_item("Maya: no lift at all?", kind=Kind.NOTE))
    query = ItemQuery(scopes=(str(REPO), str(GLOBAL)))
    after = store.next_captured([first.id, reply.id, last.id, elsewhere.id], query)
    # Within each item's own scope; the newest has none.
    assert {k: v.id for k, v in after.items()} == {first.id: reply.id, reply.id: last.id}
    # What the filters leave out is not given, and no other item takes its place.
    told = replace(query, exclude_ids=(reply.id,))
    assert store.next_captured([first.id], told) == {}
    assert store.next_captured([first.id], replace(query, scopes=(str(GLOBAL),))) == {}
    store.replace_item(replace(reply, status=Status.ARCHIVED), "archive", new_version=False)
    assert store.next_captured([first.id], query) == {}
    assert store.next_captured([], query) == {}


def test_the_same_proposal_filed_at_once_on_several_connections_is_filed_once(
    reopen: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several MCP servers of one agent proposing the same statement at the same moment:
    each looks for a waiting twin, finds none, and would file its own. The look and the
    write are one transaction, so the others see the first one's proposal."""
    import contextlib
    import threading

    from kenning import policy

    reopen().close()  # the store made (migrated) once, before the writers start
    writers = 4
    # Every writer is held between its look for a twin and its write until all of them
    # have looked: without one transaction, all of them find nothing and file. With it,
    # the first holds the others back; it waits out the barrier (bounded) and files alone.
    barrier = threading.Barrier(writers, timeout=1.5)
    dismissed_twins = items._dismissed_twins

    def held_back(*args: object, **kwargs: object) -> list[Item]:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait()
        return dismissed_twins(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(items, "_dismissed_twins", held_back)
    codex = policy.Actor("codex")
    filed: list[str] = []
    failed: list[BaseException] = []

    def propose() -> None:
        try:
            store = reopen()
            item = _item(
                "Release trains leave on Tuesdays",
                status=Status.PROPOSED,
                kind=Kind.DECISION,
                provenance=Provenance(who="codex"),
            )
            filed.append(items.file_proposal(store, item, who=codex).id)
        except BaseException as exc:  # reported below, in the test's own thread
            failed.append(exc)

    threads = [threading.Thread(target=propose) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failed
    store = reopen()
    waiting = store.list_items(ItemQuery(statuses=("proposed",)))
    assert len(waiting) == 1
    assert set(filed) == {waiting[0].id}
