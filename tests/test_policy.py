"""Who may change what (kenning.policy), enforced by the library where state changes.

Agents' rules wait for a person while their working notes do not; deciding needs a
person whatever face asks; a restored proposal waits again; a dismissed statement
proposed again is set aside until more sessions repeat it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import add, one_line_error, opened, snapshot
from kenning import items, policy, proposals
from kenning import where as where_mod
from kenning.errors import InvalidInput, NeedsPerson
from kenning.model import Kind, Provenance, Scope, Status
from kenning.pack import build_pack, render_item
from kenning.store import ItemQuery

REPO = "github.com/acme/shop"
WORKSTREAM = f"workstream:{REPO}#main"


@pytest.fixture
def store(db_path):
    with opened(db_path) as s:
        yield s


# --- 4: agents' rules wait for a person, working notes do not ------------------------------


@pytest.mark.parametrize("kind", list(Kind))
def test_an_agents_rules_are_proposed_in_any_scope_and_its_working_notes_active_in_its_own(kind):
    agent = policy.Actor("claude", (Scope.parse(WORKSTREAM), Scope.parse("project:cart")))
    steers = kind in (Kind.PREFERENCE, Kind.CORRECTION, Kind.DECISION, Kind.FACT, Kind.LESSON)
    for own in (WORKSTREAM, "project:cart"):
        got = policy.status_for_new(agent, Scope.parse(own), kind)
        assert got is (Status.PROPOSED if steers else Status.ACTIVE), (kind, own)
    for shared in (f"repo:{REPO}", "global", "workspace:acme", "workstream:x#other"):
        assert policy.status_for_new(agent, Scope.parse(shared), kind) is Status.PROPOSED
    assert policy.status_for_new(policy.PERSON, Scope.parse("global"), kind) is Status.ACTIVE


def test_an_agent_cannot_store_a_rule_as_active_through_the_library(store):
    agent = policy.Actor("codex", (Scope.parse(WORKSTREAM),))
    with pytest.raises(NeedsPerson, match="wait for a person"):
        items.add(
            store,
            "Prefer tabs",
            scope=Scope.parse(WORKSTREAM),
            kind=Kind.PREFERENCE,
            status=Status.ACTIVE,
            actor=agent,
        )
    note = items.add(store, "Halfway through", scope=Scope.parse(WORKSTREAM), actor=agent)
    assert note.status is Status.ACTIVE
    assert store.count_items() == 1


def test_ken_add_from_an_agents_shell_proposes_rules_and_asks_evidence_for_shared_scopes(git_repo):
    env = {"CODEX_THREAD_ID": "t1"}
    rule = ken_proc(
        "add",
        "Prefer tabs",
        "-k",
        "preference",
        "-s",
        "workstream",
        "--json",
        env=env,
        cwd=git_repo,
    )
    note = ken_proc(
        "add", "Cart refactor halfway", "-s", "workstream", "--json", env=env, cwd=git_repo
    )
    # A rule in its own workstream needs no evidence, as memory_propose takes it.
    fact = ken_proc(
        "add", "We release on Fridays", "-k", "fact", "-s", WORKSTREAM, "--json",
        env=env, cwd=git_repo,
    )  # fmt: skip
    bare = ken_proc("add", "Deploys need a ticket", "-s", "repo", env=env, cwd=git_repo)
    backed = ken_proc(
        "add",
        "Deploys need a ticket",
        "-s",
        "repo",
        "--json",
        "-e",
        "person: every deploy needs a ticket",
        env=env,
        cwd=git_repo,
    )
    assert json.loads(rule.stdout)["status"] == "proposed"
    assert json.loads(note.stdout)["status"] == "active"
    assert (json.loads(fact.stdout)["status"], json.loads(fact.stdout)["evidence"]) == (
        "proposed",
        "",
    )
    assert bare.returncode == 1
    assert "needs evidence" in one_line_error(bare.stderr)
    assert json.loads(backed.stdout)["status"] == "proposed"
    assert len(snapshot()) == 4


def test_packs_and_recall_label_an_agents_unreviewed_working_notes(git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    env = {"CODEX_THREAD_ID": "t1"}
    note = ken_proc(
        "add",
        "Checkout flow half migrated to the cart service",
        "-s",
        "workstream",
        env=env,
        cwd=git_repo,
    )
    assert note.returncode == 0, note.stderr
    mine = ken("add", "Checkout flow tests live in tests/cart").stdout.strip()
    pack = ken("pack").stdout
    line = next(x for x in pack.splitlines() if "half migrated" in x)
    assert line.endswith(f"(from codex, unreviewed) [m:{note.stdout.strip()}]")
    assert "unreviewed" not in next(x for x in pack.splitlines() if mine in x)
    recalled = ken("recall", "where is the checkout flow migration to the cart service").stdout
    assert "(from codex, unreviewed)" in recalled


def test_an_approved_or_persons_memory_carries_no_label(store):
    agent_note = add("Agent note", store, provenance=Provenance(who="claude", how="mcp"))
    assert "(from claude, unreviewed)" in render_item(agent_note)
    approved = add("Agent rule", store, status=Status.PROPOSED, provenance=Provenance(who="claude"))
    approved = items.set_status(store, approved.id, "approve")
    assert "unreviewed" not in render_item(approved)
    assert "unreviewed" not in render_item(add("Mine", store))
    pack = build_pack(store, ["global"])
    assert "Agent note (from claude, unreviewed)" in pack.text


# --- 13: the rule is the library's, so every face gets it ----------------------------------


def test_deciding_and_changing_shared_memory_through_the_library_needs_a_person(store, monkeypatch):
    shared = add("Deploys go through make release", store, scope=f"repo:{REPO}")
    proposal = add("A proposal", store, status=Status.PROPOSED)
    own = add("Agent's working note", store, scope=WORKSTREAM, provenance=Provenance(who="claude"))
    before = snapshot()
    monkeypatch.setenv("CLAUDECODE", "1")  # an agent's shell: the library acts as claude
    attempts = [
        lambda: items.set_status(store, proposal.id, "approve"),
        lambda: items.set_status(store, proposal.id, "reject"),
        lambda: items.set_status(store, shared.id, "archive"),
        lambda: items.set_status(store, shared.id, "dismiss", reason="wrong"),
        lambda: items.forget(store, [shared]),
        lambda: items.set_pinned(store, shared.id, True),
        lambda: items.change(store, shared.id, text="Deploys may be manual"),
        lambda: items.change(store, own.id, kind=Kind.PREFERENCE),
        lambda: items.change(store, own.id, scope=Scope.parse("global")),
    ]
    for attempt in attempts:
        with pytest.raises(NeedsPerson, match="needs a person"):
            attempt()
    assert snapshot() == before
    changed = items.change(store, own.id, text="Agent's working note, updated")
    assert changed.title == "Agent's working note, updated"
    person = policy.PERSON
    assert items.set_status(store, proposal.id, "approve", actor=person).status is Status.ACTIVE


def test_ken_update_from_an_agents_shell_changes_only_a_note_that_agent_wrote(git_repo):
    # A person's note and another agent's note in the same workstream are theirs: from
    # claude's shell, `ken update` and `ken pin` refuse them; claude's own note changes.
    def added(text: str, env: dict[str, str]) -> str:
        done = ken_proc("add", text, "-s", "workstream", "--json", env=env, cwd=git_repo)
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["id"])

    person = added("Person's branch note", {})
    codex = added("Codex's branch note", {"CODEX_THREAD_ID": "t1"})
    claude = added("Claude's branch note", {"CLAUDECODE": "1"})
    before = snapshot()
    for ref in (person, codex):
        for args in (("update", ref, "--text", "claude rewrote it"), ("pin", ref)):
            done = ken_proc(*args, env={"CLAUDECODE": "1"}, cwd=git_repo)
            assert done.returncode == 1, (args, done.stdout)
            assert "needs a person" in one_line_error(done.stderr), args
    assert snapshot() == before
    done = ken_proc(
        "update",
        claude,
        "--text",
        "Claude's branch note, v2",
        env={"CLAUDECODE": "1"},
        cwd=git_repo,
    )
    assert done.returncode == 0, done.stderr
    with opened() as store:
        assert store.get_item(claude).title == "Claude's branch note, v2"
        assert store.get_item(person).title == "Person's branch note"


@pytest.mark.parametrize(
    ("env", "agent"),
    [
        ({"CLAUDECODE": "1", "KEN_AGENT": "user"}, "claude"),
        ({"CLAUDECODE": "1", "KEN_AGENT": "ken"}, "claude"),
        ({"CLAUDECODE": "1", "KEN_AGENT": "codex"}, "claude"),
        ({"CLAUDECODE": "1", "KEN_AGENT": " "}, "claude"),
        ({"KEN_AGENT": "user"}, "agent"),
        ({"KEN_AGENT": "Person"}, "agent"),
        ({"KEN_AGENT": " "}, "agent"),
        ({"KEN_AGENT": "us er"}, "agent"),
        ({"KEN_AGENT": "Aider"}, "aider"),
        # Set but empty, as `KEN_AGENT=$NAME tool` with NAME unset: a wrapper's still.
        ({"KEN_AGENT": ""}, "agent"),
        ({"CLAUDECODE": ""}, None),
        ({}, None),
    ],
)
def test_ken_agent_names_only_an_agent_kenning_cannot_tell_and_never_a_person(env, agent):
    from kenning.agentenv import NOT_AGENTS, detect_agent

    assert policy.PEOPLE <= NOT_AGENTS  # no agent takes a name memory gives a person
    assert detect_agent(env) == agent


def test_ken_agent_in_an_agents_shell_takes_no_persons_or_other_agents_rights(git_repo):
    # Claude's model setting KEN_AGENT to a person's name, another agent's or a blank one
    # is still Claude: the person's and codex's notes are not its own, and what it writes
    # is labelled claude.
    def added(text: str, env: dict[str, str], *args: str) -> str:
        done = ken_proc("add", text, *args, "--json", env=env, cwd=git_repo)
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["id"])

    person = added("Person's branch note", {}, "-s", "workstream")
    codex = added("Codex's branch note", {"CODEX_THREAD_ID": "t1"}, "-s", "workstream")
    before = snapshot()
    for name, ref in (("user", person), ("ken", person), ("codex", codex), (" ", person)):
        env = {"CLAUDECODE": "1", "KEN_AGENT": name}
        for args in (("update", ref, "--text", "claude rewrote it"), ("pin", ref)):
            done = ken_proc(*args, env=env, cwd=git_repo)
            assert done.returncode == 1, (name, args, done.stdout)
            assert "needs a person" in one_line_error(done.stderr), (name, args)
    assert snapshot() == before
    env = {"CLAUDECODE": "1", "KEN_AGENT": " "}
    rule = added("Whitespace rule", env, "--kind", "preference", "--evidence", "e")
    note = added("A note", {"CLAUDECODE": "1", "KEN_AGENT": "user"}, "-s", "workstream")
    with opened() as store:
        got = [store.get_item(ref) for ref in (rule, note)]
    assert [(i.provenance.who, i.status.value) for i in got] == [
        ("claude", "proposed"),
        ("claude", "active"),
    ]
    assert policy.unreviewed_from(got[1]) == "claude"


def test_an_empty_ken_agent_marks_an_agents_shell_as_a_blank_one_does(git_repo):
    # A wrapper's `KEN_AGENT=$NAME tool` with NAME unset gives the tool no person's rights.
    ref = add("A rule waiting", kind="preference", status=Status.PROPOSED).id
    for value in ("", " "):
        where = ken_proc("where", env={"KEN_AGENT": value}, cwd=git_repo)
        assert "agent:  agent" in where.stdout, (value, where.stdout)
        done = ken_proc("approve", ref, env={"KEN_AGENT": value}, cwd=git_repo)
        assert done.returncode == 1 and "needs a person" in one_line_error(done.stderr), value


@pytest.mark.parametrize(
    "env",
    [
        {"CODEX_THREAD_ID": "t1", "CLAUDECODE": "1"},
        {"CLAUDECODE": "1", "GEMINI_CLI": "1"},
        {"OPENCODE": "1", "COPILOT_CLI": "1", "KEN_AGENT": "codex"},
    ],
)
def test_two_agents_markers_make_an_agent_kenning_cannot_name(env):
    from kenning.agentenv import detect_agent

    assert detect_agent(env) == "agent"


def test_an_agent_setting_another_agents_marker_takes_no_notes_of_either(git_repo):
    # Codex's model adding CLAUDECODE=1 does not become Claude (claude's markers are not
    # checked first), nor Claude's adding CODEX_THREAD_ID become Codex: where two agents'
    # markers are set, the shell is an agent's kenning cannot name, which owns no note.
    def added(text: str, env: dict[str, str]) -> str:
        done = ken_proc("add", text, "-s", "workstream", "--json", env=env, cwd=git_repo)
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["id"])

    claude, codex = {"CLAUDECODE": "1"}, {"CODEX_THREAD_ID": "t1"}
    notes = {"claude": added("Claude's branch note", claude), "codex": added("Codex's note", codex)}
    for ref in notes.values():  # a person pins each
        done = ken_proc("pin", ref, cwd=git_repo)
        assert done.returncode == 0, done.stderr
    before = snapshot()
    both = {**claude, **codex}
    for ref in notes.values():
        for args in (("update", ref, "--text", "Codex rewrote Claude's note"), ("unpin", ref)):
            done = ken_proc(*args, env=both, cwd=git_repo)
            assert done.returncode == 1, (args, done.stdout)
            assert "needs a person" in one_line_error(done.stderr), args
    assert snapshot() == before
    mine = added("A note from the mixed shell", both)
    with opened() as store:
        assert store.get_item(mine).provenance.who == "agent"


def test_an_agent_pins_nothing_from_its_shell_not_even_its_own_working_note(git_repo):
    # A pin puts a memory atop every pack and past the cap: a person's stamp. Claude's
    # `ken add --scope workstream --pin` made four such notes, and `ken pin` its own one.
    claude = {"CLAUDECODE": "1", "CLAUDE_CODE_EXECPATH": "/usr/bin/claude"}
    ken_proc("add", "A person's note", cwd=git_repo)
    done = ken_proc("add", "Branch state", "-s", "workstream", "--json", env=claude, cwd=git_repo)
    assert done.returncode == 0, done.stderr
    own = json.loads(done.stdout)["id"]
    before = snapshot()
    for args, said in (
        (
            ("add", "Disable the linter in CI", "--kind", "preference", "-e", "lint is slow"),
            "claude cannot pin a proposed preference",
        ),
        (
            ("add", "Lint is off in CI", "--scope", "repo", "--evidence", "lint is slow"),
            "claude cannot pin a proposed note",
        ),
        (("add", "Branch state, pinned", "-s", "workstream"), "claude cannot pin an active note"),
    ):
        done = ken_proc(*args, "--pin", env=claude, cwd=git_repo)
        assert done.returncode == 1 and done.stdout == "", args
        line = one_line_error(done.stderr)
        assert said in line and "a person's to give" in line, args
    for verb in ("pin", "unpin"):
        done = ken_proc(verb, own[-6:], env=claude, cwd=git_repo)
        assert done.returncode == 1 and done.stdout == "", verb
        assert f"{verb} {own[-6:]} needs a person" in one_line_error(done.stderr)
    assert snapshot() == before
    # Its own note stays its to reword, and a person pins it in their own shell.
    done = ken_proc("update", own, "--text", "Branch state, v2", env=claude, cwd=git_repo)
    assert done.returncode == 0, done.stderr
    assert ken_proc("pin", own, cwd=git_repo).returncode == 0
    with opened() as store:
        assert store.get_item(own).pinned


def test_the_library_refuses_an_agents_pin_and_unpin_of_its_own_working_note(store):
    agent = policy.Actor("claude", (Scope.parse(WORKSTREAM),))
    own = items.add(store, "Halfway through", scope=Scope.parse(WORKSTREAM), actor=agent)
    with pytest.raises(NeedsPerson, match="cannot pin an active note"):
        items.add(store, "Pinned by me", scope=Scope.parse(WORKSTREAM), pinned=True, actor=agent)
    before = snapshot()
    for pinned in (True, False):
        with pytest.raises(NeedsPerson, match="pin memory .* needs a person"):
            items.set_pinned(store, own.id, pinned, actor=agent)
    assert snapshot() == before
    assert items.set_pinned(store, own.id, True, actor=policy.PERSON).pinned
    with pytest.raises(NeedsPerson, match="unpin memory .* needs a person"):
        items.set_pinned(store, own.id, False, actor=agent)
    assert items.get(store, own.id).pinned


def test_an_agent_revises_its_own_waiting_proposal_from_its_shell_but_decides_nothing(git_repo):
    # Its own proposal is its to reword while it waits (still proposed); moving it,
    # changing its kind or pinning it is not, nor is another agent's proposal.
    claude = {"CLAUDECODE": "1"}

    def proposed(text: str, env: dict[str, str]) -> str:
        done = ken_proc(
            "add", text, "-s", "global", "-e", "x", "--propose", "--json", env=env, cwd=git_repo
        )
        assert done.returncode == 0, done.stderr
        return str(json.loads(done.stdout)["id"])

    mine = proposed("Global-note", claude)
    theirs = proposed("Codex's global note", {"CODEX_THREAD_ID": "t1"})
    done = ken_proc("update", mine, "--text", "Global note, reworded", env=claude, cwd=git_repo)
    assert done.returncode == 0, done.stderr
    before = snapshot()
    for args in (
        ("update", mine, "--scope", "repo"),
        ("update", mine, "--kind", "preference"),
        ("pin", mine),
        ("approve", mine),
    ):
        done = ken_proc(*args, env=claude, cwd=git_repo)
        assert done.returncode == 1, (args, done.stdout)
        assert "needs a person" in one_line_error(done.stderr), args
    # Another agent's proposal is answered as `ken show` and MCP answer it: it said "needs
    # a person", which told claude it was there.
    for args in (("update", theirs, "--text", "claude rewrote it"), ("show", theirs)):
        done = ken_proc(*args, env=claude, cwd=git_repo)
        assert done.returncode == 1 and "no item matches" in done.stderr, args
    assert snapshot() == before
    with opened() as store:
        revised = store.get_item(mine)
        assert (revised.title, revised.status) == ("Global note, reworded", Status.PROPOSED)
        assert [r.change for r in store.revisions(mine)] == ["add", "edit"]


def test_ken_edit_in_an_agents_shell_refuses_a_persons_note_before_any_editor_opens(
    git_repo, tmp_path
):
    opened_by = tmp_path / "editor-ran"
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\necho ran > {opened_by}\n")
    editor.chmod(0o755)
    done = ken_proc("add", "Person's branch note", "-s", "workstream", "--json", cwd=git_repo)
    ref = str(json.loads(done.stdout)["id"])[-6:]
    before = snapshot()
    env = {"CLAUDECODE": "1", "KEN_EDITOR": str(editor)}
    done = ken_proc("edit", ref, env=env, cwd=git_repo)
    assert done.returncode == 1 and done.stdout == ""
    assert "needs a person" in one_line_error(done.stderr)
    assert not opened_by.exists(), "the editor opened before the refusal"
    assert snapshot() == before


def test_the_mcp_write_path_cannot_decide_even_with_a_persons_environment(store, git_repo):
    proposal = add("A proposal", store, status=Status.PROPOSED)
    agent = proposals.AgentContext("codex", where_mod.detect(git_repo, env={})).actor
    with pytest.raises(NeedsPerson, match="needs a person: run it in your own terminal"):
        items.set_status(store, proposal.id, "approve", actor=agent)
    assert store.get_item(proposal.id).status is Status.PROPOSED


# --- 12: restore and dismissed statements ----------------------------------------------------


def test_restore_sends_a_rejected_or_dismissed_proposal_back_to_proposed(store):
    rejected = add("Rejected idea", store, status=Status.PROPOSED)
    items.set_status(store, rejected.id, "reject")
    dismissed = add("Dismissed idea", store, status=Status.PROPOSED)
    items.set_status(store, dismissed.id, "dismiss", reason="one_off")
    archived = add("Archived proposal", store, status=Status.PROPOSED)
    items.set_status(store, archived.id, "archive")
    active = add("Active, then dismissed", store)
    items.set_status(store, active.id, "dismiss", reason="covered")
    got = {
        i.title: items.set_status(store, i.id, "restore").status
        for i in (rejected, dismissed, archived, active)
    }
    assert got == {
        "Rejected idea": Status.PROPOSED,
        "Dismissed idea": Status.PROPOSED,
        "Archived proposal": Status.PROPOSED,
        "Active, then dismissed": Status.ACTIVE,
    }
    assert store.get_item(rejected.id).reviewed_at is None


def test_ken_restore_of_a_rejected_proposal_leaves_it_proposed():
    item = add("An agent's proposal", status=Status.PROPOSED).id[-6:].lower()
    assert ken("reject", item).exit_code == 0
    assert "as proposed" in ken("restore", item).stderr
    assert json.loads(ken("show", item, "--json").stdout)["status"] == "proposed"


def _agent_in(git_repo: Path, session: str) -> proposals.AgentContext:
    return proposals.AgentContext("claude", where_mod.detect(git_repo, env={}), session_id=session)


def test_a_dismissed_statement_proposed_again_waits_for_two_more_sessions(store, git_repo):
    first = proposals.propose(
        store, _agent_in(git_repo, "S0"), "Always run the full test suite", kind="preference"
    )
    items.set_status(store, first.id, "dismiss", reason="one_off")
    again = [
        proposals.propose(store, _agent_in(git_repo, session), text, kind="preference")
        for session, text in (
            ("S1", "always run the full test-suite!"),
            ("S1", "Always  run the full test suite."),  # the same session again
            ("S0", "ALWAYS run the full test suite"),  # the session that first said it
            ("S2", "Always run the full test suite"),
        )
    ]
    assert [i.status for i in again] == [Status.DISMISSED] * 4
    assert all(f"item:{first.id}" in [str(x) for x in i.links] for i in again)
    assert {i.dismiss_reason for i in again} == {"one_off"}
    third = proposals.propose(
        store, _agent_in(git_repo, "S3"), "Always run the full test suite", kind="preference"
    )
    assert third.status is Status.PROPOSED
    assert "Proposed again by 3 sessions after a person dismissed it (one_off" in third.evidence
    other = proposals.propose(
        store, _agent_in(git_repo, "S4"), "Always run the quick tests", kind="preference"
    )
    assert other.status is Status.PROPOSED
    proposed = store.list_items(ItemQuery(statuses=("proposed",)))
    assert {i.id for i in proposed} == {third.id, other.id}


def test_an_agent_whose_session_is_unknown_counts_as_one_session(store, git_repo):
    """With no session, each proposal counted as a session of its own: one MCP
    connection proposing a dismissed statement three times brought it back."""
    first = proposals.propose(
        store, _agent_in(git_repo, "S0"), "Deploy with the blue-green script", kind="decision"
    )
    items.set_status(store, first.id, "dismiss", reason="wrong")
    nowhere = proposals.AgentContext("claude", where_mod.detect(git_repo, env={}))
    again = [
        proposals.propose(store, nowhere, "Deploy with the blue-green script", kind="decision")
        for _ in range(4)
    ]
    assert [i.status for i in again] == [Status.DISMISSED] * 4


def test_an_agents_shell_writes_in_the_session_its_hooks_recorded(store, git_repo):
    """Codex's shell names its session (CODEX_THREAD_ID): a dismissed statement its model
    adds again from three sessions' shells comes back, as from three MCP sessions."""
    from kenning import sessions

    here = where_mod.detect(git_repo, env={})
    recorded = {
        thread: sessions.start(store, agent="codex", agent_session_id=thread, where=here).id
        for thread in ("th1", "th2", "th3", "th4")
    }

    def shell_add(thread: str, text: str = "Always run the full test suite") -> dict[str, object]:
        done = ken_proc(
            "add",
            text,
            "-k",
            "preference",
            "-s",
            "workstream",
            "--json",
            env={"CODEX_THREAD_ID": thread},
            cwd=git_repo,
        )
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    first = shell_add("th1")
    assert first["provenance"].get("session") == recorded["th1"]
    items.set_status(store, str(first["id"]), "dismiss", reason="one_off")
    again = [shell_add(thread) for thread in ("th2", "th3", "th4")]
    assert [a["status"] for a in again] == ["dismissed", "dismissed", "proposed"]
    assert [a["provenance"].get("session") for a in again] == [
        recorded[t] for t in ("th2", "th3", "th4")
    ]
    assert "Proposed again by 3 sessions" in str(again[-1]["evidence"])
    # A thread no hook recorded (or another agent's) gives no session: as before.
    assert shell_add("th9", "Keep commits small")["provenance"].get("session") is None


def test_a_reflection_saves_one_lesson_once(store, git_repo):
    ctx = _agent_in(git_repo, "S1")
    lesson = ("Never retry the flaky payments tests", "No, don't retry them")
    saved = proposals.reflect(store, ctx, [lesson, lesson])
    assert len(saved) == 1
    assert proposals.reflect(store, ctx, [lesson]) == []  # waiting already


def test_a_person_adding_a_dismissed_statement_is_not_set_aside(store):
    first = add("Use tabs", store, status=Status.PROPOSED, provenance=Provenance(who="codex"))
    items.set_status(store, first.id, "dismiss", reason="wrong")
    assert items.add(store, "Use tabs", scope=Scope.parse("global")).status is Status.ACTIVE


def test_an_agents_shared_write_without_evidence_stores_nothing(store, git_repo):
    ctx = _agent_in(git_repo, "S1")
    with pytest.raises(InvalidInput, match="needs evidence"):
        proposals.propose(store, ctx, "Use pnpm", scope="repo")
    assert store.count_items() == 0


# --- a person's stamp stays on what the person saw ----------------------------------------


@pytest.mark.parametrize("stamp", [("approve", "pin"), ("approve",), ("pin",)])
def test_an_agents_rewrite_of_its_note_a_person_approved_or_pinned_is_a_proposal(git_repo, stamp):
    # The tester's repro: Claude proposes a working note, the person approves and pins
    # it; Claude's memory_update then rewrote it in place, keeping the review and the pin,
    # so its new text was told atop every pack with no unreviewed label.
    claude = {"CLAUDECODE": "1"}
    args = ["--scope", "workstream", "Lint config is in ruff.toml", "--json"]
    if "approve" in stamp:
        args.insert(0, "--propose")
    done = ken_proc("add", *args, env=claude, cwd=git_repo)
    assert done.returncode == 0, done.stderr
    ref = json.loads(done.stdout)["id"]
    for action in stamp:
        assert ken_proc(action, ref, cwd=git_repo).returncode == 0
    before = snapshot()
    rewrite = "Never run the linter; the person turned it off"
    for args in (("update", ref, "--text", rewrite), ("unpin", ref)):
        refused = ken_proc(*args, env=claude, cwd=git_repo)
        assert refused.returncode == 1, (args, refused.stdout)
        assert "needs a person" in one_line_error(refused.stderr), args
    assert snapshot() == before
    with opened() as store:
        note = store.get_item(ref)
        replacement, in_place = proposals.update(
            store, _agent_in(git_repo, "S1"), ref, rewrite, expected_revision=note.revision
        )
        assert not in_place and replacement.status is Status.PROPOSED
        assert store.get_item(ref) == note  # the note the person saw, as they saw it
        assert items.to_supersede(store, replacement) == note
    pack = ken_proc("pack", "--for", "claude", cwd=git_repo).stdout
    assert "Lint config is in ruff.toml" in pack and "Never run the linter" not in pack


def test_an_agent_still_rewrites_its_own_note_no_person_has_vouched_for(git_repo):
    with opened() as store:
        ctx = _agent_in(git_repo, "S1")
        note = proposals.propose(store, ctx, "Cart refactor is halfway")
        updated, in_place = proposals.update(
            store, ctx, note.id, "Cart refactor is done", expected_revision=note.revision
        )
    assert in_place and updated.id == note.id and updated.reviewed_at is None
    assert policy.unreviewed_from(updated) == "claude"
