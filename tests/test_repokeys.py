"""A repo whose origin is added or changed gets another key: what was stored under the one
before is named by `ken where` and `ken doctor`, and `ken repo move` brings it over."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ken
from helpers import add, one_line_error, opened
from kenning.config import Config
from kenning.model import Scope, ScopeType, Session, Status
from kenning.store import ItemQuery

NEW = "github.com/me/app"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture
def app(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repo without an origin, on branch `feat`, holding a preference, a task on its
    branch and a project added from it; the shell is in it."""
    git(git_repo, "remote", "remove", "origin")
    git(git_repo, "checkout", "-q", "-b", "feat")
    monkeypatch.chdir(git_repo)
    assert ken("add", "--kind", "preference", "App: use uv, never pip").exit_code == 0
    assert ken("add", "--kind", "task", "--scope", "workstream", "Cart halfway").exit_code == 0
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "decisions.md").write_text("# Decisions\n\n## App stores money as cents\nx\n")
    assert ken("project", "add", "app", str(notes)).exit_code == 0
    return git_repo


def session_ran_here(checkout: Path, repo: str) -> None:
    """A Claude session recorded in `checkout` on 2026-11-02, when its key was `repo`."""
    with opened() as store:
        store.upsert_session(
            Session(
                id="01SESSIONINTHESHOPCHECKOUT",
                agent="claude",
                agent_session_id="3c65df25-9f7d-4669-b22c-a2621c627068",
                repo=repo,
                cwd=str(checkout),
                started_at="2026-11-02T09:00:00.000Z",
            )
        )


def here_json() -> dict[str, object]:
    return json.loads(ken("where", "--json").stdout)


def listed_here() -> list[str]:
    return sorted(i["title"] for i in json.loads(ken("list", "--here", "--json").stdout))


def test_adding_an_origin_is_named_by_where_and_doctor_and_one_move_brings_it_all_back(app):
    before = listed_here()
    assert before == ["App stores money as cents", "App: use uv, never pip", "Cart halfway"]
    with opened() as store:
        task = next(i for i in store.list_items(ItemQuery()) if i.title == "Cart halfway")
    git(app, "remote", "add", "origin", "git@github.com:me/app.git")  # the first push

    assert listed_here() == []
    where = ken("where")
    assert one_line_error(where.stderr.replace("note: ", "ken: ")) == (
        f"ken: 2 memories (in repo:{app} and workstream:{app}#feat) and project app are "
        f"stored under {app}, this repo's key before it had an origin: they do not apply "
        f"here; `ken repo move {app}` moves them to repo:{NEW}"
    )
    [earlier] = here_json()["earlier_keys"]  # type: ignore[misc]
    assert earlier["scopes"] == {f"repo:{app}": 1, f"workstream:{app}#feat": 1}
    assert earlier["projects"] == ["app"] and earlier["move"] == f"ken repo move {app}"
    doctor = {c["name"]: c for c in json.loads(ken("doctor", "--json").stdout)["here"]}
    assert doctor[f"repo:{app}"]["ok"] and doctor[f"repo:{app}"]["fix"] == f"ken repo move {app}"

    moved = ken("repo", "move", str(app))
    assert moved.exit_code == 0, moved.stderr
    assert moved.stderr.splitlines() == [
        f"moved 2 memories and project app from repo:{app} to repo:{NEW}",
        f"  workstream:{app}#feat -> workstream:{NEW}#feat",
    ]
    assert listed_here() == before
    assert here_json()["project"] == "app" and here_json()["earlier_keys"] == []
    assert ken("where").stderr == ""
    assert json.loads(ken("doctor", "--json").stdout)["here"] == []
    with opened() as store:
        now = store.get_item(task.id)
        versions = store.revisions(task.id)
    assert str(now.scope) == f"workstream:{NEW}#feat"
    assert now.expires_at == task.expires_at  # a move is no new work on the task
    assert [(v.change, v.scope) for v in versions] == [
        ("add", f"workstream:{app}#feat"),
        ("move", f"workstream:{NEW}#feat"),
    ]


def test_the_note_names_the_scopes_the_memories_are_in_not_a_repo_scope_that_holds_none(
    git_repo, monkeypatch
):
    """A branch's memory under the key from before the origin sat in
    workstream:KEY#main; the note said it was stored under repo:KEY."""
    git(git_repo, "remote", "remove", "origin")
    monkeypatch.chdir(git_repo)
    key = here_json()["repo"]
    assert ken("add", "--scope", "workstream", "Half done on main").exit_code == 0
    git(git_repo, "remote", "add", "origin", "git@github.com:me/app.git")
    assert ken("where").stderr == (
        f"note: 1 memory (in workstream:{key}#main) is stored under {key}, this repo's key "
        f"before it had an origin: it does not apply here; `ken repo move {key}` moves it "
        f"to repo:{NEW}\n"
    )
    git(git_repo, "remote", "remove", "origin")
    for branch in ("b1", "b2", "b3"):
        git(git_repo, "checkout", "-q", "-b", branch)
        assert ken("add", "--scope", "workstream", f"Half done on {branch}").exit_code == 0
    git(git_repo, "remote", "add", "origin", "git@github.com:me/app.git")
    assert ken("where").stderr.startswith(
        f"note: 4 memories (in workstream:{key}#b1, workstream:{key}#b2, workstream:{key}#b3 "
        f"and 1 more scope) are stored under {key}, "
    )


def test_an_agent_shell_may_not_move_a_person_s_memories(app):
    git(app, "remote", "add", "origin", "git@github.com:me/app.git")
    refused = ken("repo", "move", str(app), env={"CLAUDECODE": "1"})
    assert refused.exit_code == 1
    assert "needs a person" in one_line_error(refused.stderr)
    assert listed_here() == []
    assert len(here_json()["earlier_keys"]) == 1  # type: ignore[arg-type]


def test_a_changed_origin_is_found_from_the_sessions_that_ran_in_the_checkout(
    git_repo, monkeypatch
):
    monkeypatch.chdir(git_repo)
    old = "github.com/acme/shop"
    add("Shop deploys freeze on Fridays", scope=f"repo:{old}")
    session_ran_here(git_repo, old)
    git(git_repo, "remote", "set-url", "origin", "git@github.com:acme-corp/shop.git")
    note = ken("where").stderr
    assert note == (
        f"note: 1 memory (in repo:{old}) is stored under {old}, this repo's key when a "
        f"session ran here on 2026-11-02: it does not apply here; `ken repo move {old}` "
        "moves it to repo:github.com/acme-corp/shop\n"
    )
    assert ken("repo", "move", old).exit_code == 0
    assert [i["scope"] for i in json.loads(ken("list", "--here", "--json").stdout)] == [
        "repo:github.com/acme-corp/shop"
    ]


def test_a_switch_named_by_the_checkout_s_path_follows_it_when_an_origin_is_added(app):
    """A table named by a folder that exists is keyed as the repo there, as `--scope` is:
    its origin once it has one, so a private repo stays private after its first push."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[memory.repos."{app}"]\ncapture = false\n')
    git(app, "remote", "add", "origin", "git@github.com:me/app.git")
    doctor = json.loads(ken("doctor", "--json").stdout)
    assert not any(c["name"].startswith("switches of") for c in doctor["here"])
    assert Config().repo_switches()[NEW] == {"capture": False}


def test_switches_kept_under_an_earlier_origin_fail_doctor_with_the_table_to_rename(
    git_repo, monkeypatch
):
    monkeypatch.chdir(git_repo)
    old = "github.com/acme/shop"
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[memory.repos."{old}"]\ncapture = false\n')
    session_ran_here(git_repo, old)
    new = "github.com/acme-corp/shop"
    git(git_repo, "remote", "set-url", "origin", "git@github.com:acme-corp/shop.git")
    doctor = ken("doctor", "--json")
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["here"]}
    switches = checks[f"switches of {old}"]
    assert not switches["ok"]
    assert switches["detail"] == (
        f'the switches of [memory.repos."{old}"] in config.toml (capture = false) do not '
        f"apply to repo:{new}"
    )
    assert switches["fix"] == f'rename that table to [memory.repos."{new}"]'
    add("Shop deploys freeze on Fridays", scope=f"repo:{old}")
    moved = ken("repo", "move", old)  # memories move; the person's file is theirs
    assert moved.exit_code == 0
    assert f'rename that table to [memory.repos."{new}"]' in moved.stderr
    assert config.read_text() == f'[memory.repos."{old}"]\ncapture = false\n'


def test_a_move_names_its_keys_clearly(app):
    git(app, "remote", "add", "origin", "git@github.com:me/app.git")
    for args, words in (
        (("repo", "move", "/nowhere/app"), "nothing is stored under repo:/nowhere/app"),
        (("repo", "move", str(app), str(app)), "is the key to move to: nothing to move"),
        (("repo", "move", str(app), "shop"), "bad scope 'repo:shop'"),
    ):
        result = ken(*args)
        assert result.exit_code == 1, args
        assert words in one_line_error(result.stderr), args
    with opened() as store:
        statuses = {i.status for i in store.list_items(ItemQuery(statuses=()))}
    assert statuses == {Status.ACTIVE} and listed_here() == []


def test_a_key_an_older_kenning_read_from_an_ssh_alias_is_named_and_moved(git_repo, monkeypatch):
    """An older kenning keyed `git@github-work:acme/payroll.git` by its ssh alias; today's
    reads the alias's HostName. What it stored, in the repo and on a branch, is named by
    `ken where` and `ken doctor` with the move that brings it here."""
    monkeypatch.chdir(git_repo)
    ssh = Path(os.environ["HOME"]) / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    (ssh / "config").write_text("Host github-work\n  HostName github.com\n  User git\n")
    git(git_repo, "remote", "set-url", "origin", "git@github-work:acme/payroll.git")
    old, new = "github-work/acme/payroll", "github.com/acme/payroll"
    assert here_json()["repo"] == new
    add("Ledger is append only", kind="decision", scope=Scope(ScopeType.REPO, old))
    add("Payroll export half done", kind="task", scope=Scope(ScopeType.WORKSTREAM, f"{old}#main"))
    add("Billing is another repo", scope=Scope(ScopeType.REPO, "github-work/acme/billing"))
    assert listed_here() == []

    assert ken("where").stderr == (
        f"note: 2 memories (in repo:{old} and workstream:{old}#main) are stored under {old}, "
        f"the key an older kenning read from this repo's origin: they do not apply here; "
        f"`ken repo move {old}` moves them to repo:{new}\n"
    )
    [earlier] = here_json()["earlier_keys"]  # type: ignore[misc]
    assert earlier["scopes"] == {f"repo:{old}": 1, f"workstream:{old}#main": 1}
    doctor = {c["name"]: c for c in json.loads(ken("doctor", "--json").stdout)["here"]}
    assert doctor[f"repo:{old}"]["fix"] == f"ken repo move {old}"

    assert ken("repo", "move", old).exit_code == 0
    assert listed_here() == ["Ledger is append only", "Payroll export half done"]
    assert here_json()["earlier_keys"] == []


def test_a_folder_only_an_agents_proposal_names_is_never_read_by_where(
    git_repo, tmp_path, monkeypatch
):
    """An agent proposed a memory under `repo:/some/path`, then made that folder's git
    config include a FIFO: `ken where` and `ken doctor` re-read the git files of every
    stored path key, so they hung in every repo the person worked in."""
    from kenning import git as git_mod

    planted = tmp_path / "planted"
    git(tmp_path, "init", "-q", "-b", "main", str(planted))
    proposed = ken(
        "add", "--kind", "fact", "--scope", f"repo:{planted}", "--evidence", "e",
        "Benign looking note about builds", env={"CLAUDECODE": "1"},
    )  # fmt: skip
    assert proposed.exit_code == 0, proposed.output
    read: list[str] = []
    real = git_mod._find

    def spied(start: Path, *args: object) -> object:
        read.append(str(start))
        return real(start, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(git_mod, "_find", spied)
    monkeypatch.chdir(git_repo)

    assert ken("where").exit_code == 0
    assert str(planted) not in read
