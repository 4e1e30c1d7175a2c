"""Which scopes apply where you are (kenning.where and `ken where`)."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import ken, ken_proc
from kenning import where

REPO = "github.com/acme/shop"


def git(cwd, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("git@github.com:Acme/Shop.git", REPO),
        ("https://github.com/acme/shop", REPO),
        ("https://github.com/acme/shop.git", REPO),
        ("https://user:token@github.com/Acme/Shop.git/", REPO),
        ("ssh://git@github.com:22/acme/shop.git", REPO),
        ("ssh://git@github.com/acme/shop", REPO),
        ("git://github.com/acme/shop.git", REPO),
        ("github.com:acme/shop.git", REPO),
        ("file:///srv/git/Shop.git", "/srv/git/Shop"),  # a path keeps its case
        ("/srv/git/shop.git", "/srv/git/shop"),
        ("https://gitlab.example.com/group/sub/proj.git", "gitlab.example.com/group/sub/proj"),
    ],
)
def test_origins_normalize_to_one_key(url, key):
    assert where.normalize_origin(url) == key


def test_in_a_repo_the_scopes_are_workstream_repo_and_global(git_repo):
    here = where.detect(git_repo, env={})
    assert [str(s) for s in here.scopes] == [f"workstream:{REPO}#main", f"repo:{REPO}", "global"]
    assert here.repo == REPO
    assert here.workstream == f"{REPO}#main"
    assert here.git is not None and here.git.head == git(git_repo, "rev-parse", "HEAD")
    assert here.reasons[f"repo:{REPO}"] == "git origin of this repo"


def test_a_subfolder_of_a_repo_gets_the_same_scopes(git_repo):
    sub = git_repo / "src" / "deep"
    sub.mkdir(parents=True)
    assert where.detect(sub, env={}).scopes == where.detect(git_repo, env={}).scopes


def test_a_worktree_gives_the_same_repo_scope_and_its_own_workstream(git_repo, tmp_path):
    worktree = tmp_path / "shop-feature"
    git(git_repo, "worktree", "add", "-q", "-b", "feature/pay", str(worktree))
    here = where.detect(worktree, env={})
    assert here.repo == REPO
    assert here.workstream == f"{REPO}#feature/pay"
    assert here.git is not None and here.git.root == worktree.resolve()
    assert here.git.head == git(worktree, "rev-parse", "HEAD")


def test_a_second_clone_with_an_https_origin_gives_the_same_repo_scope(git_repo, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(git_repo), str(clone))
    git(clone, "remote", "set-url", "origin", "https://github.com/acme/shop.git")
    git(clone, "checkout", "-q", "-b", "fix")
    here = where.detect(clone, env={})
    assert here.repo == REPO
    assert here.workstream == f"{REPO}#fix"


def test_packed_refs_and_a_detached_head_are_read(git_repo):
    head = git(git_repo, "rev-parse", "HEAD")
    git(git_repo, "pack-refs", "--all")
    assert where.find_git(git_repo).head == head
    git(git_repo, "checkout", "-q", "--detach")
    info = where.find_git(git_repo)
    assert (info.branch, info.head) == (None, head)
    here = where.detect(git_repo, env={})
    assert here.workstream is None
    assert [str(s) for s in here.scopes] == [f"repo:{REPO}", "global"]


def test_a_repo_without_origin_is_keyed_by_its_main_checkout_path(tmp_path):
    repo = tmp_path / "local"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    here = where.detect(repo, env={})
    assert here.repo == str(repo.resolve())
    assert here.workstream == f"{repo.resolve()}#trunk"
    assert here.reasons[f"repo:{repo.resolve()}"] == "this repo has no origin: its path"


def test_outside_a_repo_only_global_applies(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    here = where.detect(folder, env={})
    assert [str(s) for s in here.scopes] == ["global"]
    assert here.repo is None and here.git is None


def test_env_config_agent_and_session_add_their_scopes_in_order(git_repo):
    env = {"KEN_WORKSTREAM": "billing-v2", "KEN_PROJECT": "billing", "KEN_WORKSPACE": "acme"}
    here = where.detect(git_repo, env=env, agent="claude", session="S1")
    assert [str(s) for s in here.scopes] == [
        "session:S1",
        "workstream:billing-v2",
        "project:billing",
        "workspace:acme",
        f"repo:{REPO}",
        "agent:claude",
        "global",
    ]
    assert here.reasons["workspace:acme"] == "KEN_WORKSPACE is set"


def test_workspaces_and_projects_come_from_folders(git_repo, tmp_path):
    here = where.detect(
        git_repo / ".git",
        env={},
        workspaces={"other": str(tmp_path / "elsewhere"), "acme": [str(tmp_path)]},
        projects={"shop": str(git_repo)},
    )
    assert "workspace:acme" in [str(s) for s in here.scopes]
    assert "project:shop" in [str(s) for s in here.scopes]
    assert here.workspace == "acme" and here.project == "shop"


def test_ken_where_in_a_repo_prints_scopes_and_reasons(git_repo, monkeypatch):
    monkeypatch.chdir(git_repo)
    result = ken("where")
    assert result.exit_code == 0
    assert f"folder: {git_repo.resolve()}" in result.stdout
    assert f"repo:{REPO}" in result.stdout and "git origin of this repo" in result.stdout
    data = json.loads(ken("where", "--json").stdout)
    assert data["repo"] == REPO
    assert data["branch"] == "main"
    assert data["workstream"] == f"{REPO}#main"
    assert data["repo_root"] == str(git_repo.resolve())
    assert [s["scope"] for s in data["scopes"]] == [
        f"workstream:{REPO}#main",
        f"repo:{REPO}",
        "global",
    ]


def test_ken_where_in_a_worktree_and_a_clone_as_the_installed_command(git_repo, tmp_path):
    worktree = tmp_path / "wt"
    git(git_repo, "worktree", "add", "-q", "-b", "feature", str(worktree))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(git_repo), str(clone))
    git(clone, "remote", "set-url", "origin", "https://github.com/Acme/shop")
    seen = {}
    for name, folder in (("main", git_repo), ("worktree", worktree), ("clone", clone)):
        result = ken_proc("where", "--json", cwd=folder)
        assert result.returncode == 0, result.stderr
        seen[name] = json.loads(result.stdout)
    assert {d["repo"] for d in seen.values()} == {REPO}
    assert seen["worktree"]["workstream"] == f"{REPO}#feature"
    assert seen["clone"]["workstream"] == f"{REPO}#main"


def test_ken_where_names_the_agent_whose_shell_it_is(tmp_path):
    result = ken_proc("where", env={"GEMINI_CLI": "1"}, cwd=tmp_path)
    assert "agent:  gemini" in result.stdout
    assert "agent:gemini" in result.stdout


def test_config_workspaces_reach_ken_where(isolated_home, tmp_path, monkeypatch):
    cfg = isolated_home / ".config/kenning/config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'[workspaces]\nacme = ["{tmp_path}"]\n')
    data = json.loads(ken("where", "--json").stdout)
    assert data["workspace"] == "acme"
    assert "workspace:acme" in [s["scope"] for s in data["scopes"]]
