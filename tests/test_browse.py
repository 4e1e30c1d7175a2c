"""What the memory panel reads (kenning.browse) and the store paging under it."""

from __future__ import annotations

from helpers import add, opened
from kenning import browse, deliver, items, locate, policy
from kenning.config import Config
from kenning.model import Provenance, ScopeType, Session, Status
from kenning.store import ItemQuery, open_store


def test_a_view_is_read_in_pages_newest_captured_first_and_a_change_keeps_its_place():
    with opened() as store:
        made = [add(f"Global memory {n}", store) for n in range(7)]
        add("Elsewhere", store, scope="project:shop")
        view = browse.View(scopes=("global",))
        assert browse.count(store, view) == 7
        first = browse.page(store, view, 0, 3)
        rest = browse.page(store, view, 3, 10)
        newest_first = [i.id for i in reversed(made)]
        assert [i.id for i in first + rest] == newest_first
        # Pinning or editing an old memory does not move it to the top.
        items.set_pinned(store, made[0].id, True)
        items.change(store, made[1].id, text="Global memory one, edited")
        assert [i.id for i in browse.page(store, view, 0, 10)] == newest_first
        assert browse.count(store, browse.ALL) == 8


def test_the_waiting_view_holds_proposals_best_first_and_search_stays_inside_a_view():
    with opened() as store:
        note = add("Deploy notes live in the wiki", store, kind="note", status=Status.PROPOSED)
        pref = add("Deploy with make release", store, kind="preference", status=Status.PROPOSED)
        add("Deploy on Fridays", store, kind="decision")
        assert [i.id for i in browse.page(store, browse.WAITING, 0, 10)] == [pref.id, note.id]
        assert browse.waiting_count(store) == 2
        found = browse.find(store, browse.WAITING, "deploy")
        assert {i.id for i in found} == {pref.id, note.id}
        assert len(browse.find(store, browse.ALL, "deploy")) == 3
        assert browse.find(store, browse.ALL, "!!") == []


def test_scope_views_are_the_scopes_that_apply_here(git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    with opened() as store:
        where = locate.here(store, Config())
        repo = browse.scope_view(where, ScopeType.REPO)
        assert repo is not None and repo.scopes == ("repo:github.com/acme/shop",)
        assert browse.scope_view(where, ScopeType.PROJECT) is None
        assert browse.scope_view(where, ScopeType.GLOBAL) == browse.View(scopes=("global",))


def test_here_is_the_pack_ken_pack_prints(git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    with opened() as store:
        add("Use pnpm, never npm", store, kind="preference", scope="repo:github.com/acme/shop")
        where = locate.here(store, Config())
        shown = browse.here(store, Config(), where)
        packed = deliver.pack_for(store, Config(), where, record=False)
        assert shown.text == packed.text and shown.tokens == packed.tokens
        assert [i.title for i in shown.items] == ["Use pnpm, never npm"]


def test_told_lists_every_pack_and_recall_a_session_was_given_with_the_text():
    with opened() as store:
        session = store.upsert_session(
            Session(id="01JSESSION0000000000000002", agent="codex", started_at="2026-12-01")
        )
        kept = add("Use pnpm, never npm", store)
        gone = add("An old note", store)
        store.record_delivery(session.id, "pack", [kept.id, gone.id])
        store.record_delivery(session.id, "recall", [kept.id], query="which package manager?")
        items.forget(store, [gone], actor=policy.PERSON)
        told = browse.told(store, session.id)
        assert [(d.what, d.query) for d in told] == [
            ("pack", None),
            ("recall", "which package manager?"),
        ]
        assert told[0].items[0][1] is not None and told[0].items[0][1].body == kept.body
        assert told[0].items[1] == (gone.id, None)
        assert browse.titles(told)[gone.id] == "(forgotten)"


def test_detail_of_a_proposal_carries_its_session_and_neighbours():
    with opened() as store:
        session = store.upsert_session(
            Session(id="01JSESSION0000000000000003", agent="claude", started_at="2026-12-01")
        )
        same = add("Use pnpm, not npm", store, kind="preference")
        item = add(
            "Always use pnpm rather than npm",
            store,
            kind="preference",
            status=Status.PROPOSED,
            provenance=Provenance(who="claude", session=session.id),
        )
        shown = browse.detail(store, item.id)
        assert shown.session is not None and shown.session.id == session.id
        assert [n.item.id for n in shown.neighbours] == [same.id]
        assert [r.change for r in shown.history] == ["add"]


def test_sessions_are_paged_newest_first_and_found_by_their_prompts():
    with opened() as store:
        for n in range(5):
            store.upsert_session(
                Session(
                    id=f"01JSESSION00000000000000{n:02d}",
                    agent="claude",
                    started_at=f"2026-12-0{n + 1}T00:00:00.000Z",
                    first_prompt=f"prompt number {n}" + (" about the CSV export" if n == 2 else ""),
                )
            )
        assert browse.session_count(store) == 5
        page = browse.sessions_page(store, 1, 2)
        assert [s.first_prompt for s in page] == [
            "prompt number 3",
            "prompt number 2 about the CSV export",
        ]
        assert [s.id for s in browse.find_sessions(store, "csv EXPORT")] == [page[1].id]
        assert browse.find_sessions(store, "  ") == []


def test_data_version_moves_when_another_connection_writes_and_not_for_its_own(db_path):
    with opened() as store:
        before = store.data_version()
        add("Mine", store)
        assert store.data_version() == before
        with open_store(db_path) as other:
            add("Theirs", other)
        assert store.data_version() != before


def test_list_items_pages_with_offset_in_every_order():
    with opened() as store:
        made = [add(f"Memory {n}", store) for n in range(5)]
        newest = [i.id for i in reversed(made)]
        for query in (ItemQuery(captured_first=True), ItemQuery(), ItemQuery(recent_first=True)):
            whole = [i.id for i in store.list_items(query)]
            assert whole == newest
            from dataclasses import replace

            assert [i.id for i in store.list_items(replace(query, offset=2, limit=2))] == whole[2:4]
            assert [i.id for i in store.list_items(replace(query, offset=3))] == whole[3:]
