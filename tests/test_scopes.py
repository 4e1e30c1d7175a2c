"""Scopes as people and agents name them: bare names for the one here, one normalized key
per repo and workspace, and every stored scope reading back as itself."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import ken, ken_proc
from helpers import add, one_line_error, opened
from kenning import items, where
from kenning.curate import covers
from kenning.errors import InvalidInput
from kenning.model import Scope, ScopeType
from kenning.store import ItemQuery

REPO = "github.com/acme/shop"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def scopes_of(found: list[dict[str, object]]) -> list[object]:
    return [item["scope"] for item in found]


# --- bare names ---------------------------------------------------------------------------


def test_a_bare_scope_name_is_the_scope_of_that_type_that_applies_here(git_repo):
    env = {"KEN_WORKSPACE": "acme", "KEN_PROJECT": "billing"}
    here = where.detect(git_repo, env=env, agent="claude", session="claude:s1")
    assert str(here.scope("repo")) == f"repo:{REPO}"
    assert str(here.scope("workstream")) == f"workstream:{REPO}#main"
    assert str(here.scope("project")) == "project:billing"
    assert str(here.scope(" Workspace ")) == "workspace:acme"
    assert str(here.scope("session")) == "session:claude:s1"
    assert str(here.scope("agent")) == "agent:claude"
    assert str(here.scope("global")) == "global"
    assert str(here.scope("repo:GitHub.com/Other/App")) == "repo:github.com/other/app"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("repo", "no repo here: this folder is not in a git repository"),
        ("workstream", "no workstream here"),
        ("project", "no project here"),
        ("workspace", "no workspace here"),
        ("session", "no session here"),
        ("agent", "no agent here"),
    ],
)
def test_a_bare_scope_name_with_none_here_is_one_clear_error(tmp_path, name, message):
    here = where.detect(tmp_path, env={})
    with pytest.raises(InvalidInput, match=message):
        here.scope(name)


def test_ken_takes_bare_scope_names_in_every_scope_option(git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    added = json.loads(ken("add", "Run make check first", "--scope", "repo", "--json").stdout)
    assert added["scope"] == f"repo:{REPO}"
    branch = ken("add", "Halfway through the cart refactor", "--scope", "workstream").stdout
    listed = json.loads(ken("list", "--scope", "repo", "--json").stdout)
    assert [i["id"] for i in listed] == [added["id"]]
    found = json.loads(ken("search", "cart", "--scope", "workstream", "--json").stdout)
    assert [i["short_id"] for i in found] == [branch.strip()]
    moved = json.loads(ken("update", branch.strip(), "--scope", "repo", "--json").stdout)
    assert moved["scope"] == f"repo:{REPO}"
    assert "forgot 2 memories" in ken("forget", "--scope", "repo", "--yes").stderr


def test_ken_outside_a_repo_says_there_is_no_repo_here_and_changes_nothing(tmp_path):
    add("Something global")
    for args in (
        ("add", "x", "--scope", "repo"),
        ("list", "--scope", "repo"),
        ("search", "something", "--scope", "repo"),
        ("forget", "--scope", "repo", "--yes"),
    ):
        result = ken_proc(*args, cwd=tmp_path)
        assert result.returncode == 1, (args, result.stderr)
        assert one_line_error(result.stderr) == (
            "ken: no repo here: this folder is not in a git repository"
        ), args
    with opened() as store:
        assert store.count_items() == 1


# --- normalized keys ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "typed",
    [
        "repo:GitHub.com/Acme/Shop",
        "repo:https://github.com/acme/shop.git",
        "repo:git@github.com:acme/shop.git",
        "repo:ssh://git@github.com:22/Acme/Shop",
        " repo:github.com/acme/shop/ ",
    ],
)
def test_every_way_of_typing_a_repo_is_stored_as_its_normalized_key(typed, git_repo, monkeypatch):
    added = json.loads(ken("add", "Use pnpm", "--scope", typed, "--json").stdout)
    assert added["scope"] == f"repo:{REPO}"
    monkeypatch.chdir(git_repo)
    here = json.loads(ken("list", "--here", "--json").stdout)
    assert [i["id"] for i in here] == [added["id"]]


def test_a_repo_typed_as_a_path_keeps_its_case_and_spaces():
    assert Scope.parse("repo:/home/Me/My Shop/").value == "/home/Me/My Shop"
    assert where.normalize_origin("/srv/git/Shop.git") == "/srv/git/Shop.git"
    with pytest.raises(ValueError, match="a repo is its origin"):
        Scope.parse("repo:not a repo")


def test_a_workspace_name_follows_one_rule_in_config_env_and_scope(tmp_path, isolated_home):
    folder = tmp_path / "team"
    folder.mkdir()
    config = isolated_home / ".config" / "kenning" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[workspaces]\n"Acme  Platform" = ["{folder}"]\n')
    typed = ken_proc("add", "Staging is shared", "--scope", "workspace:acme platform", "--json")
    assert typed.returncode == 0, typed.stderr
    assert json.loads(typed.stdout)["scope"] == "workspace:acme platform"
    by_config = ken_proc("list", "--here", "--json", cwd=folder)
    by_env = ken_proc("list", "--here", "--json", env={"KEN_WORKSPACE": " ACME platform"})
    bare = ken_proc("add", "On call rota", "--scope", "workspace", "--json", cwd=folder)
    assert bare.returncode == 0, bare.stderr
    for result in (by_config, by_env):
        assert result.returncode == 0, result.stderr
        assert "workspace:acme platform" in scopes_of(json.loads(result.stdout))
    assert json.loads(bare.stdout)["scope"] == "workspace:acme platform"
    bad = ken_proc("where", env={"KEN_WORKSPACE": "a\x01b"})
    assert bad.returncode == 1
    assert one_line_error(bad.stderr).startswith("ken: KEN_WORKSPACE: bad workspace name")


def test_in_a_repo_without_origin_whose_path_has_a_space_every_command_works(tmp_path):
    repo = tmp_path / "My Projects" / "Shop"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    add("A global memory")
    added = ken_proc("add", "Tests run with make check", "--json", cwd=repo)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["scope"] == f"repo:{repo}"
    for args in (
        ("list", "--json"),
        ("search", "make", "--json"),
        ("list", "--scope", "repo", "--json"),
        ("list", "--scope", f"repo:{repo}", "--json"),
        ("list", "--here", "--json"),
    ):
        result = ken_proc(*args, cwd=repo)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (args, result.stderr)
        assert f"repo:{repo}" in scopes_of(json.loads(result.stdout)), args
    pack = ken_proc("pack", cwd=repo)
    assert pack.returncode == 0, pack.stderr
    assert "Tests run with make check" in pack.stdout


# --- every stored scope reads back ---------------------------------------------------------

NAMED = [t for t in ScopeType if t is not ScopeType.GLOBAL]


@given(st.sampled_from(NAMED), st.text(min_size=1, max_size=300))
def test_every_scope_written_reads_back_as_itself(scope_type, value):
    scope = Scope(scope_type, value)
    assert Scope.from_stored(str(scope)) == scope


@given(st.sampled_from(NAMED), st.text(min_size=1, max_size=80))
def test_a_typed_scope_normalizes_once_and_its_key_reads_back(scope_type, value):
    try:
        scope = Scope.of(scope_type, value)
    except ValueError:
        return
    assert Scope.parse(str(scope)) == scope
    assert Scope.from_stored(str(scope)) == scope


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("planet:mars", "there is no scope type 'planet'"),
        ("repo:", "a repo scope needs a name"),
        ("global:x", "global takes no name"),
    ],
)
def test_a_stored_scope_that_no_longer_reads_keeps_its_text_and_covers_nothing(text, why):
    stored = Scope.from_stored(text)
    assert (str(stored), stored.unreadable) == (text, why)
    assert Scope.from_stored(str(stored)) == stored
    assert not covers(stored, Scope(ScopeType.REPO, REPO))
    assert not covers(Scope(ScopeType.REPO, REPO), stored)
    assert covers(Scope(ScopeType.GLOBAL), Scope(ScopeType.REPO, REPO))


def test_scopes_typed_before_the_rule_are_moved_to_their_key_when_the_store_opens(db_path):
    old = {
        "repo:GitHub.com/Acme/Shop": f"repo:{REPO}",
        "repo:git@github.com:acme/shop.git": f"repo:{REPO}",
        "workspace:Acme": "workspace:acme",
        "repo:/home/Me/Shop": "repo:/home/Me/Shop",
        "session:claude:AbC": "session:claude:AbC",
        "workstream:feature X": "workstream:feature X",
        "planet:mars": "planet:mars",  # no longer reads as a scope: left for a person
        "repo:": "repo:",
    }
    with opened() as store:
        made = {scope: add(f"Stored in {scope}", store).id for scope in old}
        for scope, item_id in made.items():
            store.conn.execute("UPDATE items SET scope = ? WHERE id = ?", (scope, item_id))
        store.conn.execute("DELETE FROM _migrations WHERE name = 'm0006_normalize_scopes'")
    with opened() as store:
        now = {i.id: str(i.scope) for i in store.list_items(ItemQuery())}
    assert {scope: now[item_id] for scope, item_id in made.items()} == old


def test_a_store_holding_any_scope_value_still_lists_and_searches(db_path):
    add("Readable everywhere")
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE items SET scope = 'repo:/tmp/odd \tpath\nhere'")
    assert ken("list").exit_code == 0
    assert ken("search", "readable").exit_code == 0


# --- scopes that never apply ---------------------------------------------------------------

# Each names no place detection ever gives: a workstream is `<repo>#<branch>` (or a name
# KEN_WORKSTREAM gives, never a repo's), a session `<agent>:<the agent's session id>`.
NEVER_APPLIES = [
    "workstream:github.com/acme/shop",
    "workstream:git@github.com:acme/shop.git",
    "workstream:/home/me/shop",
    "workstream:#main",
    "workstream:github.com/acme/shop#",
    "session:claude",
    "session:claude:",
    "session::3c65df25",
]


@pytest.mark.parametrize("typed", NEVER_APPLIES)
def test_a_scope_that_never_applies_is_refused_in_one_line_by_add_and_update(
    typed, git_repo, monkeypatch
):
    monkeypatch.chdir(git_repo)
    kept = add("Told in this repo", scope=f"repo:{REPO}")
    for args in (("add", "--scope", typed, "Never told"), ("update", kept.id, "--scope", typed)):
        result = ken(*args)
        assert result.exit_code == 1, args
        line = one_line_error(result.stderr)
        assert f"bad scope '{typed}'" in line and "so it would never apply: write " in line
    with opened() as store:
        assert [str(i.scope) for i in store.list_items(ItemQuery(statuses=()))] == [f"repo:{REPO}"]


def test_a_refusal_says_what_to_write_instead():
    def refusal(typed: str) -> str:
        with pytest.raises(InvalidInput) as caught:
            items.parse_scope(typed)
        return str(caught.value)

    assert refusal("workstream:git@github.com:Acme/Shop.git").endswith(
        f"write workstream:{REPO}#BRANCH"
    )
    assert refusal("workstream:#main").endswith("write workstream:REPO#main")
    assert refusal("session:claude").endswith("write session:AGENT:ID (`ken sessions` shows them)")


def test_every_agent_s_real_session_ids_make_session_scopes_and_workstreams_may_be_names():
    found: set[tuple[str, str]] = set()

    def walk(agent: str, value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ("session_id", "sessionId", "sessionID") and isinstance(inner, str):
                    found.add((agent, inner))
                walk(agent, inner)
        elif isinstance(value, list):
            for inner in value:
                walk(agent, inner)

    for path in (Path(__file__).parent / "fixtures" / "hooks").glob("*/*.json"):
        walk(path.parent.name, json.loads(path.read_text(encoding="utf-8")))
    assert {agent for agent, _ in found} == {"claude", "codex", "gemini", "copilot", "opencode"}
    for agent, session_id in found:
        typed = f"session:{agent}:{session_id}"
        assert items.parse_scope(typed) == Scope(ScopeType.SESSION, f"{agent}:{session_id}")
    # What KEN_WORKSTREAM may name: any name but a repo's.
    for name in ("feature/login", "release-1.2/fix", "billing-v2", "feature X"):
        assert str(items.parse_scope(f"workstream:{name}")) == f"workstream:{name}"


def test_memories_an_older_kenning_stored_where_nothing_applies_are_still_found_and_forgotten(
    db_path,
):
    stored = {}
    with opened() as store:
        for scope in ("workstream:github.com/acme/shop", "workstream:#main", "session:claude"):
            item = add(f"Kept in {scope}", store)
            store.conn.execute("UPDATE items SET scope = ? WHERE id = ?", (scope, item.id))
            stored[scope] = item.id
    for scope, item_id in stored.items():
        listed = json.loads(ken("list", "--scope", scope, "--json").stdout)
        assert [i["id"] for i in listed] == [item_id], scope
    deep = ken("doctor", "--deep", "--json")
    problems = [c["detail"] for c in json.loads(deep.stdout)["deep"] if not c["ok"]]
    assert all(any(repr(scope) in p for p in problems) for scope in stored), problems
    for scope in stored:
        assert ken("forget", "--scope", scope, "--yes").exit_code == 0, scope
    with opened() as store:
        assert store.list_items(ItemQuery(statuses=())) == []
