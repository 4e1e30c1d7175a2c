"""The library API every face calls: kenning.items."""

from __future__ import annotations

import string
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from helpers import add, opened
from kenning import ids, items, policy, templates
from kenning.errors import AmbiguousId, InvalidInput, NotFound, RevisionConflict
from kenning.items import parse_scope
from kenning.model import Kind, Provenance, Scope, ScopeType, Status
from kenning.redact import redact


@pytest.fixture
def store(db_path):
    with opened(db_path) as s:
        yield s


def test_the_first_line_is_the_title_and_the_rest_the_body():
    assert items.split_text("\n\n# Use pnpm  \n\nnot npm\never\n\n") == (
        "Use pnpm",
        "not npm\never",
    )
    assert items.split_text("just a title") == ("just a title", "")
    assert items.split_text("title\r\nbody") == ("title", "body")


def test_an_empty_memory_is_refused():
    for text in ("", "   ", "\n\n", "#"):
        with pytest.raises(InvalidInput, match="empty"):
            items.split_text(text)


def test_an_added_item_comes_back_whole(store):
    item = add(
        "Deploys go through make release\nNever push to prod by hand.",
        store,
        kind="decision",
        scope="repo:github.com/acme/shop",
        tags=["Deploy", "#ops, release", "deploy"],
        links=["file:Makefile", "https://wiki.example.com/deploy", "commit:abc123"],
        pinned=True,
        evidence="the person said: always make release",
        provenance=Provenance(who="claude", how="mcp", session="s1"),
    )
    back = items.get(store, item.id)
    assert back == item
    assert back.title == "Deploys go through make release"
    assert back.body == "Never push to prod by hand."
    assert back.kind is Kind.DECISION
    assert back.scope == Scope(ScopeType.REPO, "github.com/acme/shop")
    assert back.tags == ("deploy", "ops", "release")
    assert [str(link) for link in back.links] == [
        "file:Makefile",
        "https://wiki.example.com/deploy",
        "commit:abc123",
    ]
    assert back.pinned is True
    assert back.status is Status.ACTIVE
    assert back.provenance.who == "claude"
    assert back.expires_at is None
    assert [r.change for r in store.revisions(item.id)] == ["add"]


def test_a_task_expires_after_the_ttl_and_other_kinds_do_not(store):
    task = add("Finish the billing migration", store, kind="task")
    fact = add("Billing lives in services/billing", store, kind="fact")
    assert fact.expires_at is None
    assert task.expires_at is not None
    assert task.expires_at[:10] > task.created_at[:10]
    short = add("A short task", store, kind="task", ttl_days=1)
    assert short.expires_at < task.expires_at


def days_to_expiry(item) -> float:
    from datetime import datetime

    left = datetime.fromisoformat(item.expires_at) - datetime.fromisoformat(item.updated_at)
    return left.total_seconds() / 86400


def test_every_write_that_sets_a_tasks_expiry_reads_tasks_ttl_days(store):
    # Only `ken add` passed the setting: an update, a change of kind and a restore
    # gave a task the default 14 days.
    from conftest import ken

    assert ken("config", "set", "tasks.ttl_days", "2").exit_code == 0
    task = items.add(
        store, "Finish the billing migration", scope=Scope(ScopeType.GLOBAL), kind=Kind.TASK
    )
    note = items.add(store, "Halfway through the export", scope=Scope(ScopeType.GLOBAL))
    assert days_to_expiry(task) == 2
    assert days_to_expiry(items.change(store, task.id, text="Finish billing, then docs")) == 2
    assert days_to_expiry(items.change(store, note.id, kind=Kind.TASK)) == 2
    items.set_status(store, task.id, "archive", actor=policy.PERSON)
    assert days_to_expiry(items.set_status(store, task.id, "restore", actor=policy.PERSON)) == 2
    assert days_to_expiry(add("A one-day task", store, kind="task", ttl_days=1)) == 1


def test_bad_tags_kinds_scopes_and_links_are_refused_with_the_choices():
    with pytest.raises(InvalidInput, match="bad tag"):
        items.clean_tags(["has space"])
    with pytest.raises(InvalidInput, match="use fact, decision"):
        items.parse_kind("opinion")
    with pytest.raises(InvalidInput, match="bad scope 'planet:earth'"):
        items.parse_scope("planet:earth")
    with pytest.raises(InvalidInput, match="is empty"):
        items.parse_scope("repo:")
    with pytest.raises(InvalidInput, match="bad link"):
        items.parse_links(["ftp:nowhere"])
    with pytest.raises(InvalidInput, match="unknown status"):
        items.parse_status("deleted")


def test_an_item_over_4_kb_is_refused_and_the_message_suggests_linking_a_file(store):
    with pytest.raises(InvalidInput, match=r"over the 4 KB limit.*--link file:PATH"):
        add("Long one\n" + "word " * 1000, store)
    with pytest.raises(InvalidInput, match="8 KB"):
        add("Short", store, evidence="e" * 9000)
    assert store.count_items() == 0


def test_a_memory_of_exactly_4_kb_is_kept_and_one_byte_more_is_refused_as_that_many(store):
    # A one-line memory of 4,096 bytes was refused as "4,097 bytes": the newline between
    # title and body was counted when there was no body.
    assert add("T" * 4096, store).title == "T" * 4096
    assert add("T" * 2047 + "\n" + "B" * 2048, store).body == "B" * 2048
    with pytest.raises(InvalidInput, match="the memory is 4,097 bytes"):
        add("T" * 4097, store)
    with pytest.raises(InvalidInput, match="the memory is 4,097 bytes"):
        add("T" * 2048 + "\n" + "B" * 2048, store)


def test_a_memory_that_is_only_a_secret_is_refused_and_a_secret_inside_one_is_redacted(store):
    with pytest.raises(InvalidInput, match="does not store secrets"):
        add("AKIAIOSFODNN7EXAMPLE", store)
    item = add(
        "The deploy key\nuse AKIAIOSFODNN7EXAMPLE for the staging bucket uploads",
        store,
        evidence="he pasted ghp_abcdefghijklmnopqrstuvwxyz0123456789 in chat",
    )
    assert "AKIAIOSFODNN7EXAMPLE" not in item.body
    assert "[redacted:" in item.body
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in item.evidence
    assert store.count_items() == 1


def test_agents_write_shared_scopes_as_proposals_and_their_own_scopes_directly():
    parse = items.parse_scope
    claude, codex = policy.Actor("claude"), policy.Actor("codex")
    for shared in ("global", "repo:github.com/a/b", "workspace:acme", "agent:claude"):
        assert policy.status_for_new(claude, parse(shared)) is Status.PROPOSED
        assert policy.status_for_new(policy.PERSON, parse(shared)) is Status.ACTIVE
    for own in ("session:codex:abc", "workstream:github.com/a/b#main", "project:billing"):
        assert policy.status_for_new(codex, parse(own)) is Status.ACTIVE
    assert policy.status_for_new(policy.PERSON, parse("session:codex:abc"), propose=True) is (
        Status.PROPOSED
    )


def test_an_agent_changing_anything_but_its_own_active_working_note_needs_a_person(store):
    own = add("Working note", store, scope="session:claude:s1", provenance=Provenance(who="claude"))
    persons = add("A person's working note", store, scope="session:claude:s1")
    shared = add("Shared memory", store)
    proposed = add("Proposal", store, scope="project:p", status=Status.PROPOSED)
    claude, codex = policy.Actor("claude"), policy.Actor("codex")
    assert policy.is_free_for(claude, own)
    assert not policy.is_free_for(codex, own)  # another agent's note
    assert not policy.is_free_for(claude, persons)
    assert not policy.is_free_for(claude, own, parse_scope("global"))
    assert not policy.is_free_for(claude, shared)
    assert not policy.is_free_for(codex, proposed)
    assert policy.is_free_for(policy.PERSON, shared)


def test_a_person_adds_to_this_repo_by_default_and_to_global_outside_one():
    assert str(items.default_scope("github.com/acme/shop")) == "repo:github.com/acme/shop"
    assert str(items.default_scope(None)) == "global"


def test_a_postmortem_template_lays_out_its_sections_and_a_decision_implies_its_kind(store):
    pm = add(
        "Checkout 500s\nthe cart total overflowed\nFix: use Decimal\nPrevention: a test",
        store,
        template="postmortem",
    )
    assert pm.body.startswith("## Symptom\nthe cart total overflowed")
    assert "## Root cause" in pm.body
    assert "## Fix\nuse Decimal" in pm.body
    assert "## Prevention\na test" in pm.body
    assert pm.kind is Kind.NOTE
    dec = add("Use SQLite\nContext: one user\nDecision: one file", store, template="decision")
    assert dec.kind is Kind.DECISION
    assert "## Context\none user" in dec.body and "## Consequences" in dec.body
    note = add("A   spaced    title\n\n  line one  \n\n\nline two", store, template="note")
    assert note.title == "A spaced title"
    assert note.body == "line one\nline two"


def test_a_template_is_detected_when_the_text_already_uses_its_sections(store):
    item = add("Pick Postgres\nContext: many writers\nDecision: Postgres 16", store)
    assert item.kind is Kind.DECISION
    assert "## Consequences" in item.body
    plain = add("A note\nContext: just one label here", store)
    assert plain.kind is Kind.NOTE
    assert plain.body == "Context: just one label here"
    explicit = add("Pick Postgres\nContext: x\nDecision: y", store, kind="fact")
    assert explicit.kind is Kind.FACT


def test_change_makes_a_new_version_and_in_place_does_not(store):
    item = add("Use pnpm 8", store, tags=["js"])
    v2 = items.change(store, item.id, text="Use pnpm 9\nsince March", add_tags=["node"])
    assert (v2.title, v2.body, v2.tags) == ("Use pnpm 9", "since March", ("js", "node"))
    assert v2.revision != item.revision
    assert len(store.revisions(item.id)) == 2
    v3 = items.change(store, item.id, text="Use pnpm 9.1\nsince March", in_place=True)
    assert v3.revision == v2.revision
    history = store.revisions(item.id)
    assert len(history) == 2
    assert history[-1].title == "Use pnpm 9.1"
    assert history[0].title == "Use pnpm 8"


def test_a_change_that_changes_nothing_makes_no_version(store):
    item = add("Stable text", store, tags=["a"])
    same = items.change(store, item.id, add_tags=["a"])
    assert same == item
    assert len(store.revisions(item.id)) == 1


def test_a_change_against_a_stale_revision_is_refused(store):
    item = add("Counter starts at one", store)
    items.change(store, item.id, text="Counter starts at two")
    with pytest.raises(RevisionConflict, match="read it again"):
        items.change(
            store, item.id, text="Counter starts at three", expected_revision=item.revision
        )
    assert items.get(store, item.id).title == "Counter starts at two"


def test_status_moves_only_along_allowed_paths(store):
    proposed = add("An agent's idea", store, status=Status.PROPOSED)
    with pytest.raises(InvalidInput, match="cannot restore"):
        items.set_status(store, proposed.id, "restore")
    approved = items.set_status(store, proposed.id, "approve")
    assert approved.status is Status.ACTIVE and approved.reviewed_at
    with pytest.raises(InvalidInput, match="only proposed items"):
        items.set_status(store, proposed.id, "approve")
    archived = items.set_status(store, proposed.id, "archive")
    assert archived.status is Status.ARCHIVED
    with pytest.raises(InvalidInput, match="unknown dismiss reason .because."):
        items.set_status(store, proposed.id, "dismiss", reason="because")
    dismissed = items.set_status(store, proposed.id, "dismiss", reason="one_off")
    assert (dismissed.status, dismissed.dismiss_reason) == (Status.DISMISSED, "one_off")
    restored = items.set_status(store, proposed.id, "restore")
    assert restored.status is Status.ACTIVE and restored.dismiss_reason is None
    changes = [r.change for r in store.revisions(proposed.id)]
    assert changes == ["add", "approve", "archive", "dismiss", "restore"]


def test_pinning_twice_makes_one_version(store):
    item = add("Pin me", store)
    items.set_pinned(store, item.id, True)
    items.set_pinned(store, item.id, True)
    assert items.get(store, item.id).pinned
    assert [r.change for r in store.revisions(item.id)] == ["add", "pin"]
    items.set_pinned(store, item.id, False)
    assert not items.get(store, item.id).pinned


def _insert_with_id(store, item_id: str, title: str):
    item = items.new_item(title, scope=Scope(ScopeType.GLOBAL), item_id=item_id)
    return store.insert_item(item)


def test_a_short_id_resolves_by_any_unique_start_or_end_of_four_characters(store):
    item = add("Findable", store)
    assert items.resolve(store, item.id[-6:].lower()) == item.id
    assert items.resolve(store, item.id[-4:]) == item.id
    assert items.resolve(store, item.id[:12].lower()) == item.id
    assert items.resolve(store, item.id) == item.id
    # Crockford look-alikes: i, l and o read as 1, 1 and 0.
    lookalike = item.id[-6:].lower().replace("1", "l").replace("0", "o")
    assert items.resolve(store, lookalike) == item.id


def test_an_ambiguous_id_lists_every_candidate(store):
    a = _insert_with_id(store, "01ARZ3NDEKTSV4RRFFQ69G5FAV", "first")
    b = _insert_with_id(store, "01ARZ3NDEKTSV4RRFFQ69G5FAW", "second")
    with pytest.raises(AmbiguousId) as caught:
        items.resolve(store, "01arz3nd")
    message = str(caught.value)
    assert "matches 2 items" in message
    assert a.id in message and b.id in message
    assert "g5fav" in message and "g5faw" in message


def test_unknown_and_malformed_ids_are_refused_clearly(store):
    add("Something", store)
    with pytest.raises(NotFound, match="no item matches 'zzzz'"):
        items.get(store, "zzzz")
    for bad in ("abc", "!!!!", "u" * 5, "x" * 27):
        with pytest.raises(InvalidInput, match="is not an item id"):
            items.get(store, bad)


def test_search_finds_by_stem_ranks_title_hits_first_and_filters(store):
    add("Run the migrations before deploy", store, kind="task", scope="project:billing")
    add("Deploy notes\nwe migrate with alembic and deploy on Fridays", store, kind="fact")
    add("Unrelated memory about caching", store)
    found = items.search(store, "migrations")
    assert [f.item.title for f in found] == ["Run the migrations before deploy", "Deploy notes"]
    assert found[0].score >= found[1].score
    assert [f.item.title for f in items.search(store, "deploy", kinds=["fact"])] == ["Deploy notes"]
    assert [f.item.title for f in items.search(store, "deploy", scopes=["project:billing"])] == [
        "Run the migrations before deploy"
    ]
    assert items.search(store, "migrations caching", fill=False) == []
    some = items.search(store, "migrations caching")  # none holds both: those with one
    assert not any(f.every_word for f in some)
    assert {f.item.title for f in some} == {
        "Run the migrations before deploy",
        "Deploy notes",
        "Unrelated memory about caching",
    }
    assert len(items.search(store, "deploy", limit=1)) == 1
    with pytest.raises(InvalidInput, match="no words"):
        items.search(store, '  * - " ')


def test_list_is_newest_first_with_pinned_on_top_and_hides_expired_tasks(store):
    old = add("Oldest", store)
    mid = add("Middle", store)
    new = add("Newest", store)
    items.set_pinned(store, old.id, True)
    expired = replace(
        items.new_item("Expired task", scope=Scope(ScopeType.GLOBAL), kind=Kind.TASK),
        expires_at="2000-01-01T00:00:00.000Z",
    )
    store.insert_item(expired)
    listed = [i.title for i in items.list_items(store)]
    assert listed == ["Oldest", "Newest", "Middle"]
    everything = [i.title for i in items.list_items(store, statuses=(), include_expired=True)]
    assert "Expired task" in everything
    assert new.id and mid.id


def test_select_for_forget_needs_a_filter_and_checks_the_date(store):
    with pytest.raises(InvalidInput, match="say what to forget"):
        items.select_for_forget(store)
    with pytest.raises(InvalidInput, match="YYYY-MM-DD"):
        items.select_for_forget(store, since="yesterday")
    with pytest.raises(InvalidInput, match="bad scope"):
        items.select_for_forget(store, scope="nowhere")


def test_select_for_forget_finds_by_scope_since_and_session_any_status(store):
    a = add("In project", store, scope="project:x", status=Status.ARCHIVED)
    add("Elsewhere", store, scope="project:y")
    s = add("From session", store, provenance=Provenance(session="sess-1"))
    old = add("Old one", store, scope="project:x", created_at="2001-01-01T00:00:00.000Z")
    assert {i.id for i in items.select_for_forget(store, scope="project:x")} == {a.id, old.id}
    assert [i.id for i in items.select_for_forget(store, session="sess-1")] == [s.id]
    recent = {i.id for i in items.select_for_forget(store, scope="project:x", since="2020-01-01")}
    assert recent == {a.id}
    assert items.forget(store, [a, s]).memories == 2
    assert store.count_items() == 2
    with pytest.raises(NotFound):
        items.get(store, a.id)


def test_ulids_sort_by_creation_and_short_ids_are_the_last_six():
    made = [ids.new_ulid() for _ in range(200)]
    assert made == sorted(made)
    assert len(set(made)) == 200
    assert all(len(i) == 26 and set(i) <= set(ids.ALPHABET) for i in made)
    assert ids.short_id(made[0]) == made[0][-6:].lower()


@given(ms=st.integers(0, (1 << 48) - 1), rand=st.integers(0, (1 << 80) - 1))
def test_a_ulid_is_its_time_and_random_part_in_crockford_base32(ms, rand):
    def base32(value: int, length: int) -> str:
        return "".join(ids.ALPHABET[(value >> (5 * n)) & 31] for n in reversed(range(length)))

    assert ids._ulid_text(ms, rand) == base32(ms, 10) + base32(rand, 16)
    assert ids.ulid_time_ms(ids._ulid_text(ms, rand)) == ms


WORDS = st.text(
    alphabet=string.ascii_letters + string.digits + "éüß-_.,:;!?'()", min_size=1, max_size=12
)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    title_words=st.lists(WORDS, min_size=1, max_size=8),
    body=st.text(max_size=300),
    tags=st.lists(st.from_regex(r"[a-z0-9][a-z0-9._:/-]{0,20}", fullmatch=True), max_size=4),
)
def test_add_then_get_gives_back_the_same_title_body_and_tags(store, title_words, body, tags):
    title = " ".join(title_words).strip().lstrip("#").strip()
    assume(title)
    assume(redact(title).text == title and redact(body).text == body)
    assume(len(f"{title}\n{body}".encode()) <= 4000)
    want_title, want_body = items.split_text(f"{title}\n{body}")
    assume(templates.detect(want_body) is None)
    item = items.add(store, f"{title}\n{body}", scope=Scope(ScopeType.GLOBAL), tags=tags)
    back = items.get(store, item.id)
    assert back == item
    assert back.title == want_title == title
    assert back.body == want_body
    assert back.tags == items.clean_tags(tags)
    assert set(back.tags) == {t.lower() for t in tags}


def test_the_start_of_the_six_characters_people_see_resolves_an_id(store):
    a = _insert_with_id(store, "01ARZ3NDEKTSV4RRFFQ6" + "4MAPH7", "first")
    b = _insert_with_id(store, "01ARZ3NDEKTSV4RRFFQ7" + "XYZQ7K", "second")
    assert items.resolve(store, "4map") == a.id
    assert items.resolve(store, "4maph") == a.id
    assert items.resolve(store, "xyzq") == b.id


def test_a_ref_matching_one_short_ids_start_and_anothers_end_is_ambiguous(store):
    a = _insert_with_id(store, "01ARZ3NDEKTSV4RRFFQ6" + "G1ABCD", "ends in abcd")
    b = _insert_with_id(store, "01ARZ3NDEKTSV4RRFFQ7" + "ABCDX9", "its six start with abcd")
    with pytest.raises(AmbiguousId) as found:
        items.resolve(store, "abcd")
    assert found.value.candidates == [f"g1abcd ({a.id})", f"abcdx9 ({b.id})"]


@pytest.mark.parametrize("since", ["2026-13-01", "2026-02-30", "2026-00-10", "2026-1-01"])
def test_forget_since_refuses_a_date_that_does_not_exist(store, since):
    add("Kept", store)
    with pytest.raises(InvalidInput, match="YYYY-MM-DD"):
        items.select_for_forget(store, since=since)
    assert len(items.select_for_forget(store, since="2000-02-29")) == 1


def test_a_search_filled_by_recall_draws_from_the_kinds_and_tags_asked_for(store):
    """The memories that hold some of the words come from the kinds and tags asked for,
    not from the best of every kind cut down afterwards: sixty notes about the outbox
    rank above the one decision, and do not crowd it out."""
    for n in range(60):
        add(f"Outbox worker note {n}: the outbox drains every minute", store)
    decision = add("The payment outbox is drained by one worker", store, kind="decision")
    tagged = add("Drain the outbox before a deploy", store, tags=["deploys"])
    question = "how often is the outbox drained by the worker?"
    found = items.search(store, question, kinds=["decision"], limit=5)
    assert [f.item.id for f in found] == [decision.id]
    found = items.search(store, question, tags=["deploys"], limit=5)
    assert [f.item.id for f in found] == [tagged.id]


def test_a_nul_in_a_memorys_text_is_dropped_before_it_is_stored() -> None:
    """A NUL written through memory_handoff reached every agent's pack raw."""
    with opened() as store:
        item = items.add(
            store, "Title with a \x00 NUL\nand a body\x00 too", scope=items.parse_scope("global")
        )
    assert "\x00" not in item.title + item.body
    assert (item.title, item.body) == ("Title with a  NUL", "and a body too")
