"""The cap of active memories per scope archives the lowest-ranked ones, never deletes."""

from __future__ import annotations

import json

from conftest import ken, ken_proc
from helpers import add, opened
from kenning import items, lint
from kenning.ids import short_id
from kenning.model import Kind, Status

SCOPE = "repo:github.com/acme/shop"


def set_cap(value: int) -> None:
    assert ken("config", "set", "memory.max_active_per_scope", str(value)).exit_code == 0


def statuses(*made) -> list[str]:  # type: ignore[no-untyped-def]
    with opened() as store:
        return [store.get_item(i.id).status.value for i in made]


def test_without_a_cap_nothing_is_archived():
    made = [add(f"Memory number {n} about the shop", scope=SCOPE) for n in range(6)]
    assert statuses(*made) == ["active"] * 6


def test_over_the_cap_the_lowest_ranked_unpinned_memories_are_archived_with_reason_cap():
    set_cap(4)
    with opened() as store:
        rule = add("Use pnpm, never npm", store, scope=SCOPE, kind=Kind.PREFERENCE)
        used = add("The shop deploys with make release", store, scope=SCOPE, kind=Kind.FACT)
        store.record_uses([used.id], None, "test")
        pinned = add("Run the smoke suite first", store, scope=SCOPE, kind=Kind.TASK, pinned=True)
        stale = add("The fact nobody used", store, scope=SCOPE, kind=Kind.FACT)
        other = add("A note in another scope", store, kind=Kind.NOTE)  # global
        assert statuses(rule, used, pinned, stale, other) == ["active"] * 5
        newest = add("A status note", store, scope=SCOPE, kind=Kind.NOTE)
        # Five active in the scope, cap 4: one goes. Not the new note (a memory is never
        # set aside the moment it is made), not the pinned task; of the rest, the unused
        # fact ranks below the used fact and the preference.
        assert statuses(rule, used, pinned, stale, newest) == [
            "active",
            "active",
            "active",
            "archived",
            "active",
        ]
        gone = store.get_item(stale.id)
        assert (gone.archive_reason, store.revisions(stale.id)[-1].change) == ("cap", "cap")
        assert store.get_item(other.id).status is Status.ACTIVE
        assert store.count_items() == 6  # nothing deleted
        # Lowered to 3 (the pin counts): the next write archives down to it, lowest first
        # (the note written before this one, then the used fact); the preference stays.
        set_cap(3)
        last = add("Another status note", store, scope=SCOPE, kind=Kind.NOTE)
        assert statuses(rule, used, pinned, newest, last) == [
            "active",
            "archived",
            "active",
            "archived",
            "active",
        ]
    shown = ken("show", stale.id[-6:]).stdout
    assert "archived (cap)" in shown and "cap" in shown.split("versions")[1]
    found = json.loads(ken("lint", "--json").stdout)
    capped = {f["id"] for f in found if f["rule"] == "capped"}
    assert capped == {used.id, stale.id, newest.id}


def test_approving_a_proposal_past_the_cap_archives_the_lowest_ranked_other():
    set_cap(1)
    with opened() as store:
        kept = add("The first fact", store, scope=SCOPE, kind=Kind.FACT)
        proposal = add("Prefer small pull requests", store, scope=SCOPE, status=Status.PROPOSED)
        items.set_status(store, proposal.id, "approve")
        assert statuses(kept, proposal) == ["archived", "active"]


def test_lint_reports_a_scope_over_a_lowered_cap_and_nothing_under_it():
    made = [add(f"Shop memory {n}", scope=SCOPE) for n in range(4)]
    with opened() as store:
        assert [f for f in lint.lint(store, cap=4) if f.rule == "over_cap"] == []
        over = [f for f in lint.lint(store, cap=2) if f.rule == "over_cap"]
    assert [(f.title, f.detail.split(",")[0]) for f in over] == [(SCOPE, "4 active memories")]
    assert statuses(*made) == ["active"] * 4  # lint reports; it archives nothing


def test_a_cap_out_of_range_is_refused():
    result = ken("config", "set", "memory.max_active_per_scope", "1000001")
    assert result.exit_code == 1 and "from 0 to 1,000,000" in result.stderr


def test_an_agents_notes_over_the_cap_set_aside_only_its_own_never_a_persons(git_repo):
    # A person's two notes in the workstream, cap 2: claude's notes over it archive
    # claude's own older one (lowest ranked first), never the person's, pinned or not.
    set_cap(2)
    claude = {"CLAUDECODE": "1", "CLAUDE_CODE_EXECPATH": "/usr/bin/claude"}

    def added(text: str, env: dict[str, str]) -> str:
        done = ken_proc("add", text, "-s", "workstream", "--json", env=env, cwd=git_repo)
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["id"])

    people = [added(text, {}) for text in ("Staging is read-only", "Keep the CSV header order")]
    first = added("claude note 1", claude)
    assert ken_proc("pin", first[-6:], cwd=git_repo).returncode == 0  # the person pins it
    second = added("claude note 2", claude)
    third = added("claude note 3", claude)
    with opened() as store:
        got = {i: store.get_item(i).status.value for i in (*people, first, second, third)}
    assert [got[i] for i in people] == ["active", "active"]
    assert (got[first], got[second], got[third]) == ("active", "archived", "active")
    # A person's own write brings the scope down to the cap: anyone's unpinned note goes.
    mine = added("The person's third note", {})
    with opened() as store:
        left = [
            i for i in (*people, first, third, mine) if store.get_item(i).status.value == "active"
        ]
    assert left == [first, mine]


def test_a_write_or_restore_the_cap_answers_says_what_it_archived_and_why():
    """`ken add` said only "added note X" and `ken restore X` nothing, each having
    archived others."""
    set_cap(2)
    first = json.loads(ken("add", "The first fact", "-s", SCOPE, "--json").stdout)["id"]
    second = json.loads(ken("add", "The second fact", "-s", SCOPE, "--json").stdout)["id"]
    added = ken("add", "The third fact", "-s", SCOPE, "--json")
    assert json.loads(added.stdout)["archived"] == [first]
    assert (
        f"archived {short_id(first)} ({SCOPE}): The first fact: the lowest-ranked" in added.stderr
    )
    assert "memory.max_active_per_scope" in added.stderr
    restored = ken("restore", first[-6:])
    assert restored.exit_code == 0, restored.stderr
    assert f"archived {short_id(second)} ({SCOPE}): The second fact" in restored.stderr
    assert "memory.max_active_per_scope" in restored.stderr


def test_lint_over_the_cap_says_which_memories_the_cap_leaves_alone():
    """Lint said the next write archives the lowest-ranked when the others were team
    memories the cap never archives."""
    for n in range(4):
        add(f"Team memory {n}", scope=SCOPE, source=f"team:acme#{n}")
    with opened() as store:
        [alone] = [f.detail for f in lint.lint(store, cap=2) if f.rule == "over_cap"]
        assert alone == (
            "4 active memories, over the cap of 2, all pinned or kept in sync from a file "
            "or a team, which the cap leaves alone: it archives nothing there"
        )
        add("A note of mine", store, scope=SCOPE)
        add("Another note of mine", store, scope=SCOPE)
        [some] = [f.detail for f in lint.lint(store, cap=2) if f.rule == "over_cap"]
    assert some == (
        "6 active memories, over the cap of 2; 4 of them pinned or kept in sync from a file "
        "or a team, which the cap leaves alone: the next one written or approved there "
        "archives the lowest-ranked of the other 2"
    )
