"""`ken collect`: what Claude Code, Gemini CLI and Codex saved in their own memory
places becomes proposals, once; a changed source updates or revises, a removed one
archives; SessionStart reads only what changed."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import add, opened
from kenning import collect, items
from kenning.agents import claude
from kenning.model import Session, Status
from kenning.store import ItemQuery

FIXTURES = Path(__file__).parent / "fixtures" / "collect"
REPO = "repo:github.com/acme/shop"


def _places(git_repo: Path) -> dict[str, Path]:
    """The fixtures copied where each agent keeps them, under the test's HOME."""
    home = Path(os.environ["HOME"])
    projects = home / ".claude" / "projects"
    mine = projects / claude.checkout_name(str(git_repo)) / "memory"
    shutil.copytree(FIXTURES / "claude" / "memory", mine)
    elsewhere = projects / "-srv-unknown-checkout" / "memory"
    elsewhere.mkdir(parents=True)
    (elsewhere / "feedback_tabs.md").write_text("# Indent with tabs in the Makefile\n")
    gemini = home / ".gemini"
    shutil.copytree(FIXTURES / "gemini", gemini)
    registry = gemini / "projects.json"
    registry.write_text(registry.read_text().replace("@CHECKOUT@", str(git_repo)))
    shutil.copytree(FIXTURES / "codex", home / ".codex")
    return {"claude": mine, "elsewhere": elsewhere, "gemini": gemini}


def _all(store) -> list:
    return store.list_items(ItemQuery(statuses=(), include_expired=True, limit=1000))


def _by_title(store, start: str):
    return next(i for i in _all(store) if i.title.startswith(start))


def test_every_agents_saved_memories_are_proposed_where_they_belong(git_repo, monkeypatch):
    _places(git_repo)
    monkeypatch.chdir(git_repo)

    result = ken("collect")

    assert result.exit_code == 0, result.output
    with opened() as store:
        found = {(i.provenance.who, str(i.scope), i.kind.value, i.title) for i in _all(store)}
        every = _all(store)
    assert found == {
        ("claude", REPO, "correction", "Use pnpm, never npm, in this repo"),
        ("claude", REPO, "preference", "The person is a backend developer, new to React"),
        (
            "claude",
            REPO,
            "fact",
            "Deploys go to staging first, and to production only on Thursdays",
        ),
        ("claude", "agent:claude", "fact", "Indent with tabs in the Makefile"),
        (
            "gemini",
            "global",
            "preference",
            "I prefer pytest over unittest in every Python project.",
        ),
        ("gemini", "global", "preference", "Answer in British English."),
        (
            "gemini",
            "global",
            "preference",
            "The person's laptop is an M3 MacBook Pro with 36 GB of memory.",
        ),
        ("gemini", REPO, "fact", "My local Postgres listens on port 5433, not 5432."),
        ("gemini", REPO, "fact", "Running the e2e tests locally"),
        (
            "codex",
            "global",
            "preference",
            "Never force-push to a shared branch; open a new branch and a pull request instead.",
        ),
    }
    assert {i.status for i in every} == {Status.PROPOSED}
    assert {i.provenance.how for i in every} == {"collect"}
    pnpm = next(i for i in every if i.title.startswith("Use pnpm"))
    assert pnpm.body.startswith("The person said: no, don't use npm here, use pnpm.")
    assert pnpm.source is not None and pnpm.source.endswith("/memory/feedback_pnpm.md")
    assert [x.type for x in pnpm.links] == ["file"]
    assert "brought in 10 memories to review and archived 0" in result.output


def test_a_second_collection_reads_nothing_when_nothing_changed(git_repo):
    _places(git_repo)
    with opened() as store:
        first = collect.collect(store, cwd=str(git_repo))
        again = collect.collect(store, cwd=str(git_repo), changed_only=True)
        full = collect.collect(store, cwd=str(git_repo))
        count = len(_all(store))
    assert first.places_read == 5 and len(first.added) == 10
    assert again.places_read == 0 and again.places_skipped == 5
    assert (full.added, full.updated, full.revised, full.archived) == ([], [], [], [])
    assert full.unchanged == 10 and count == 10


def _touch(path: Path, text: str) -> None:
    path.write_text(text)
    later = time.time() + 5  # a new mtime even within the filesystem's tick
    os.utime(path, (later, later))


def test_a_changed_source_updates_its_waiting_proposal_in_place(git_repo):
    places = _places(git_repo)
    with opened() as store:
        collect.collect(store, cwd=str(git_repo))
        before = _by_title(store, "Deploys go to staging")
        _touch(places["claude"] / "project_deploys.md", "# Deploys go to staging on Tuesdays now\n")
        done = collect.collect(store, cwd=str(git_repo), changed_only=True)
        after = store.get_item(before.id)
    assert [i.id for i in done.updated] == [before.id]
    assert after.title == "Deploys go to staging on Tuesdays now"
    assert after.status is Status.PROPOSED and done.places_read == 1


def test_a_changed_source_of_an_approved_memory_files_a_revision_to_approve(git_repo):
    places = _places(git_repo)
    with opened() as store:
        collect.collect(store, cwd=str(git_repo))
        approved = _by_title(store, "Use pnpm")
        items.set_status(store, approved.id, "approve")
        _touch(
            places["claude"] / "feedback_pnpm.md",
            "---\ndescription: Use pnpm 9, never npm, in this repo\n---\nAsked twice now.\n",
        )
        done = collect.collect(store, cwd=str(git_repo), changed_only=True)
        [revision] = done.revised
        assert store.get_item(approved.id).status is Status.ACTIVE  # untouched until decided
        assert revision.status is Status.PROPOSED
        assert f"item:{approved.id}" in [str(x) for x in revision.links]
        # Changed again before anyone decided: the waiting revision is updated, not a
        # second one filed beside it (approving both left two active copies).
        _touch(
            places["claude"] / "feedback_pnpm.md",
            "---\ndescription: Use pnpm 10, never npm, in this repo\n---\nAsked again.\n",
        )
        again = collect.collect(store, cwd=str(git_repo), changed_only=True)
        assert again.revised == [] and [i.id for i in again.updated] == [revision.id]
        assert store.get_item(revision.id).title == "Use pnpm 10, never npm, in this repo"
        items.set_status(store, revision.id, "approve")
        assert store.get_item(approved.id).status is Status.SUPERSEDED
        # The approved revision is what the file says now: nothing more to collect.
        assert collect.collect(store, cwd=str(git_repo)).revised == []


def _approve_then_edit_the_bullet(store, git_repo):
    """Collect, approve "Answer in British English.", then edit that GEMINI.md bullet."""
    index = _places(git_repo)["gemini"] / "GEMINI.md"
    collect.collect(store, cwd=str(git_repo))
    before = _by_title(store, "Answer in British English.")
    items.set_status(store, before.id, "approve")
    _touch(index, index.read_text().replace("British English.", "British English, always."))
    return before


def test_an_edited_gemini_bullet_is_a_revision_of_its_memory_not_a_removal(git_repo):
    """A GEMINI.md bullet is known by its text: an edit archived the approved memory at
    once (no agent was told it any more) and filed a new proposal beside nothing."""
    with opened() as store:
        before = _approve_then_edit_the_bullet(store, git_repo)
        done = collect.collect(store, cwd=str(git_repo), changed_only=True)
        assert done.archived == [] and done.added == []
        [revision] = done.revised
        assert revision.title == "Answer in British English, always."
        assert f"item:{before.id}" in [str(x) for x in revision.links]
        assert store.get_item(before.id).status is Status.ACTIVE
        # Read again, nothing changes: the approved one stays until its revision is.
        again = collect.collect(store, cwd=str(git_repo))
        assert again.archived == [] and again.revised == [] and again.added == []
        items.set_status(store, revision.id, "approve")
        assert store.get_item(before.id).status is Status.SUPERSEDED


# The second edit is closer to the revision's words, or to the approved memory's.
@pytest.mark.parametrize(
    "second", ["Answer in British English, always, everywhere.", "Answer in English."]
)
def test_a_bullet_edited_twice_before_its_revision_is_approved_keeps_the_approved_memory(
    git_repo, second
):
    """The second edit updated the waiting revision in place and archived the approved
    memory ("source removed"): agents lost the rule until someone approved the revision."""
    with opened() as store:
        before = _approve_then_edit_the_bullet(store, git_repo)
        [revision] = collect.collect(store, cwd=str(git_repo), changed_only=True).revised
        index = Path(os.environ["HOME"]) / ".gemini" / "GEMINI.md"
        _touch(index, index.read_text().replace("Answer in British English, always.", second))
        done = collect.collect(store, cwd=str(git_repo), changed_only=True)
        assert done.archived == [] and done.revised == [] and done.added == []
        assert [i.id for i in done.updated] == [revision.id]
        assert store.get_item(before.id).status is Status.ACTIVE
        assert store.get_item(revision.id).title == second
        # Read again, nothing changes; approving the revision supersedes the approved one.
        again = collect.collect(store, cwd=str(git_repo))
        assert (again.archived, again.revised, again.added, again.updated) == ([], [], [], [])
        items.set_status(store, revision.id, "approve")
        assert store.get_item(before.id).status is Status.SUPERSEDED


def test_a_rejected_revision_of_an_edited_bullet_leaves_the_approved_memory(git_repo):
    with opened() as store:
        before = _approve_then_edit_the_bullet(store, git_repo)
        [revision] = collect.collect(store, cwd=str(git_repo), changed_only=True).revised
        items.set_status(store, revision.id, "reject")
        again = collect.collect(store, cwd=str(git_repo))
        assert again.archived == [] and again.revised == []
        assert store.get_item(before.id).status is Status.ACTIVE


def test_a_saved_memory_that_is_only_a_secret_is_not_collected(git_repo):
    places = _places(git_repo)
    (places["claude"] / "key.md").write_text("AKIA" + "IOSFODNN7EXAMPLE\n")
    with opened() as store:
        done = collect.collect(store, cwd=str(git_repo))
        assert not [i for i in done.added if "[redacted:" in i.title]


def test_a_saved_memory_that_memory_holds_there_already_is_not_proposed_again(git_repo):
    places = _places(git_repo)
    with opened() as store:
        held = add("Answer in British English.", store, scope="global")
        done = collect.collect(store, cwd=str(git_repo))
        assert "Answer in British English." not in [i.title for i in done.added]
        assert store.get_item(held.id).status is Status.ACTIVE
    assert (places["gemini"] / "GEMINI.md").exists()


def test_a_removed_source_archives_its_memory(git_repo):
    places = _places(git_repo)
    with opened() as store:
        collect.collect(store, cwd=str(git_repo))
        (places["claude"] / "user_role.md").unlink()
        index = places["gemini"] / "GEMINI.md"
        _touch(index, index.read_text().replace("- Answer in British English.\n", ""))
        done = collect.collect(store, cwd=str(git_repo), changed_only=True)
        titles = sorted(i.title for i in done.archived)
        gone = _by_title(store, "The person is a backend developer")
    assert titles == [
        "Answer in British English.",
        "The person is a backend developer, new to React",
    ]
    assert gone.status is Status.ARCHIVED and gone.archive_reason == "source removed"


def test_a_checkout_is_known_from_the_sessions_kenning_recorded(git_repo):
    _places(git_repo)
    (git_repo / "src").mkdir()
    with opened() as store:
        store.upsert_session(
            Session(id="01KSESSIONCOLLECT000000001", agent="claude", cwd=str(git_repo / "src"))
        )
        collect.collect(store)
        pnpm = _by_title(store, "Use pnpm")
    assert str(pnpm.scope) == REPO


def test_an_agent_is_never_told_back_what_was_collected_from_it(git_repo, monkeypatch):
    _places(git_repo)
    monkeypatch.chdir(git_repo)
    ken("collect")
    assert ken("approve", "--all", "--yes").exit_code == 0

    claude_pack = ken("pack", "--for", "claude").output
    codex_pack = ken("pack", "--for", "codex").output
    gemini_pack = ken("pack", "--for", "gemini").output

    assert "Use pnpm, never npm" in codex_pack and "Use pnpm, never npm" not in claude_pack
    assert "British English" in claude_pack and "British English" not in gemini_pack
    assert "Never force-push" in claude_pack and "Never force-push" not in codex_pack


def test_ken_edit_points_at_the_agents_file(git_repo):
    _places(git_repo)
    with opened() as store:
        collect.collect(store, cwd=str(git_repo))
        pnpm = _by_title(store, "Use pnpm")
    result = ken("update", pnpm.id[-6:], "--text", "Use yarn")
    assert result.exit_code == 1
    assert "feedback_pnpm.md: edit that file" in result.output


@pytest.mark.parametrize("enabled", [True, False])
def test_session_start_collects_what_changed_unless_turned_off(git_repo, monkeypatch, enabled):
    _places(git_repo)
    if not enabled:
        (Path(os.environ["XDG_CONFIG_HOME"]) / "kenning").mkdir(parents=True, exist_ok=True)
        (Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml").write_text(
            "[memory]\ncollect = false\n"
        )
    payload = {
        "session_id": "9b1c2d3e-0000-4000-8000-000000000001",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "cwd": str(git_repo),
        "transcript_path": str(git_repo / "t.jsonl"),
    }
    done = ken_proc("hook", "SessionStart", "--agent", "claude", input=json.dumps(payload))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    with opened() as store:
        collected = [i for i in _all(store) if i.provenance.how == "collect"]
    assert len(collected) == (10 if enabled else 0)


@pytest.mark.parametrize("decision", ["reject", "dismiss"])
def test_a_statement_the_person_turned_down_is_set_aside_when_another_file_says_it(decision):
    """As `memory_propose` sets aside a statement a person dismissed: it was proposed
    again as soon as it showed up in another of the agent's files."""
    notes = Path(os.environ["HOME"]) / ".codex" / "memories" / "extensions" / "ad_hoc" / "notes"
    notes.mkdir(parents=True)
    (notes / "sudo.md").write_text("Never use sudo in scripts\n")
    with opened() as store:
        [first] = collect.collect(store).added
        items.set_status(store, first.id, decision)
        (notes / "sudo2.md").write_text("Never use sudo in scripts.\n")
        done = collect.collect(store)
        assert done.added == [] and [i.title for i in done.set_aside] == [
            "Never use sudo in scripts."
        ]
        [aside] = done.set_aside
        assert store.get_item(aside.id).status is Status.DISMISSED
        assert f"item:{first.id}" in [str(x) for x in aside.links]
        assert store.list_items(ItemQuery(statuses=("proposed",))) == []
        again = collect.collect(store)
        assert (again.added, again.set_aside, again.unchanged) == ([], [], 2)
