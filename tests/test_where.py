"""Which scopes apply where you are (kenning.where and `ken where`)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import one_line_error, run_python
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
        # A path keeps its case and `.git`: a bare repository there has that key.
        ("file:///srv/git/Shop.git", "/srv/git/Shop.git"),
        ("/srv/git/shop.git", "/srv/git/shop.git"),
        ("file:///srv/my%20git/Shop.git", "/srv/my git/Shop.git"),
        ("file:///srv/my git/Shop.git", "/srv/my git/Shop.git"),
        ("https://gitlab.example.com/group/sub/proj.git", "gitlab.example.com/group/sub/proj"),
        ("https://github.com/acme/shop.GIT", REPO),
        ("https://dev.azure.com/Org/Proj/_git/Repo", "dev.azure.com/org/proj/_git/repo"),
        ("git@ssh.dev.azure.com:v3/Org/Proj/Repo", "dev.azure.com/org/proj/_git/repo"),
        ("https://org.visualstudio.com/Proj/_git/Repo", "dev.azure.com/org/proj/_git/repo"),
        ("ssh://git@[::1]:2222/acme/shop.git", "[::1]/acme/shop"),
        # SSH over port 443 names the forge (`Host github.com` / `HostName ssh.github.com`).
        ("ssh://git@ssh.github.com:443/Acme/Shop.git", REPO),
        ("git@altssh.gitlab.com:group/proj.git", "gitlab.com/group/proj"),
        # Azure DevOps: the old host with its DefaultCollection, the old SSH form, a repo
        # named after its project, and a project name with a space in it.
        (
            "https://org.visualstudio.com/DefaultCollection/Proj/_git/Repo",
            "dev.azure.com/org/proj/_git/repo",
        ),
        (
            "ssh://org@org.visualstudio.com:22/DefaultCollection/Proj/_ssh/Repo",
            "dev.azure.com/org/proj/_git/repo",
        ),
        ("https://dev.azure.com/Org/_git/Repo", "dev.azure.com/org/repo/_git/repo"),
        ("https://org.visualstudio.com/_git/Repo", "dev.azure.com/org/repo/_git/repo"),
        (
            "https://dev.azure.com/org/My%20Project/_git/Repo",
            "dev.azure.com/org/my project/_git/repo",
        ),
        (
            "https://dev.azure.com/org/My Project/_git/Repo",
            "dev.azure.com/org/my project/_git/repo",
        ),
        (
            "git@ssh.dev.azure.com:v3/org/My%20Project/Repo",
            "dev.azure.com/org/my project/_git/repo",
        ),
        # AWS CodeCommit: the region kept, the profile dropped, its https form the same.
        (
            "codecommit::us-east-1://billing",
            "git-codecommit.us-east-1.amazonaws.com/v1/repos/billing",
        ),
        (
            "codecommit::eu-west-1://prod@Billing",
            "git-codecommit.eu-west-1.amazonaws.com/v1/repos/billing",
        ),
        (
            "https://git-codecommit.us-east-1.amazonaws.com/v1/repos/billing",
            "git-codecommit.us-east-1.amazonaws.com/v1/repos/billing",
        ),
        # Without a region, and none to read it from: a key of its own, never a path.
        ("codecommit://prod@billing", "codecommit/billing"),
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


def test_a_worktree_made_outside_a_workspace_folder_keeps_its_repos_workspace(git_repo, tmp_path):
    """Projects followed a repo into a worktree made elsewhere; workspaces did not."""
    worktree = tmp_path / "elsewhere" / "shop-side"
    git(git_repo, "worktree", "add", "-q", "-b", "side", str(worktree))
    spaces = {"acme": [str(git_repo)]}
    assert where.detect(git_repo, env={}, workspaces=spaces).workspace == "acme"
    here = where.detect(worktree, env={}, workspaces=spaces)
    assert here.workspace == "acme"
    assert "a worktree of" in here.reasons["workspace:acme"]
    assert where.detect(tmp_path / "elsewhere", env={}, workspaces=spaces).workspace is None


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


def _latin1_folder(tmp_path: Path) -> tuple[str, str]:
    """A git repo in a folder named in Latin-1 (`lat\\xe9in`): its name as Python holds
    it (a lone surrogate for the byte that is not UTF-8), and as kenning shows it."""
    folder = os.fsdecode(os.fsencode(tmp_path) + b"/lat\xe9in")
    os.mkdir(folder)
    git(folder, "init", "-q", "-b", "trunk")
    return folder, f"{tmp_path}/lat\\xe9in"


def test_a_folder_whose_name_is_not_utf8_is_keyed_and_shown_with_its_bytes_escaped(tmp_path):
    """It was a traceback in `ken where`, add, pack and recall (a lone surrogate SQLite
    refuses), and a hook that gave the agent nothing."""
    folder, shown = _latin1_folder(tmp_path)
    here = where.detect(folder, env={})
    assert (here.cwd, here.repo, here.workstream) == (shown, shown, f"{shown}#trunk")
    assert where.find_git(here.cwd) is not None  # the text finds the folder again
    for args in (("add", "a note in latin"), ("pack",), ("recall", "latin"), ("search", "latin")):
        result = ken_proc(*args, cwd=folder)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    result = ken_proc("where", "--json", cwd=folder)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert (seen["cwd"], seen["repo"], seen["repo_root"]) == (shown, shown, shown)
    listed = ken_proc("list", "--scope", f"repo:{shown}", "--json", cwd=tmp_path)
    assert [i["title"] for i in json.loads(listed.stdout)] == ["a note in latin"], listed.stderr
    payload = {"session_id": "s1", "cwd": folder, "hook_event_name": "SessionStart"}
    hook = ken_proc("hook", "SessionStart", "--agent", "claude", input=json.dumps(payload))
    assert "a note in latin" in hook.stdout, hook.stderr
    git(folder, "remote", "add", "origin", "https://github.com/acme/shop")
    moved = ken_proc("where", cwd=folder)
    assert moved.returncode == 0, moved.stderr
    assert f"ken repo move '{shown}'" in moved.stderr  # its memories under the path key


def test_under_a_c_locale_with_utf8_mode_off_arguments_and_folders_are_read_as_utf8(tmp_path):
    """Python then reads them as ASCII: `ken add "Ünïcode"` was refused as not UTF-8
    text, and in a folder named so every command was a traceback."""
    folder = tmp_path / "Ünïcode"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "trunk")
    c_locale = {"LC_ALL": "C", "PYTHONUTF8": "0"}
    added = ken_proc("add", "Ünïcode café", env=c_locale, cwd=folder)
    assert added.returncode == 0, added.stderr
    result = ken_proc("where", "--json", env=c_locale, cwd=folder)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["repo"] == str(folder)
    found = ken_proc("search", "café", "--json", env=c_locale, cwd=folder)
    assert [i["title"] for i in json.loads(found.stdout)] == ["Ünïcode café"], found.stderr


def _committed(repo):
    who = ("-c", "user.email=t@t", "-c", "user.name=t")
    git(repo, *who, "commit", "-q", "--allow-empty", "-m", "i")


def test_repos_without_origin_kept_apart_from_their_checkout_have_keys_of_their_own(tmp_path):
    """Worktrees of two bare repos in one folder, and two --separate-git-dir repos whose
    git dirs share a folder, were keyed by that folder: one client's memory reached the
    other's repo."""
    keys = []
    for name in ("a", "b"):
        bare = tmp_path / f"{name}.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
        seed = tmp_path / f"{name}-seed"
        git(tmp_path, "clone", "-q", str(bare), str(seed))
        _committed(seed)
        git(seed, "push", "-q", "origin", "HEAD:main")
        git(bare, "worktree", "add", "-q", str(tmp_path / f"{name}-wt"), "main")
        keys.append(where.detect(tmp_path / f"{name}-wt", env={}).repo)
        work = tmp_path / f"{name}-work"
        (tmp_path / "gitdirs").mkdir(exist_ok=True)
        git(tmp_path, "init", "-q", f"--separate-git-dir={tmp_path / 'gitdirs' / name}", str(work))
        keys.append(where.detect(work, env={}).repo)
    assert len(set(keys)) == 4, keys
    assert keys[0] == str((tmp_path / "a.git").resolve())


@pytest.mark.parametrize(
    "line",
    [
        'url = "git@github.com:acme/shop.git" ; a comment',
        "url = git@github.com:acme/shop.git # a comment",
        'url = "git@github.com:Acme/Shop.git"',
    ],
)
def test_an_origin_is_read_from_config_as_git_reads_it(tmp_path, line):
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + f'[remote "origin"]\n\t{line}\n')
    assert where.detect(repo, env={}).repo == REPO


def test_a_relative_origin_is_read_against_its_checkout(tmp_path):
    keys = []
    for client in ("A", "B"):
        git(tmp_path, "init", "-q", "--bare", str(tmp_path / client / "upstream"))
        work = tmp_path / client / "work"
        git(tmp_path, "init", "-q", str(work))
        git(work, "remote", "add", "origin", "../upstream")
        keys.append(where.detect(work, env={}).repo)
    assert keys == [str((tmp_path / c / "upstream").resolve()) for c in ("A", "B")]


def test_a_rebase_in_progress_keeps_its_branchs_workstream(git_repo):
    git(git_repo, "checkout", "-q", "-b", "topic")
    (git_repo / "f").write_text("topic\n")
    git(git_repo, "add", "f")
    git(git_repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "topic")
    git(git_repo, "checkout", "-q", "-")
    (git_repo / "f").write_text("main\n")
    git(git_repo, "add", "f")
    git(git_repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "main")
    git(git_repo, "checkout", "-q", "topic")
    main = git(git_repo, "rev-parse", "HEAD~1")  # rebase onto the other branch's tip
    other = git(git_repo, "rev-parse", "--abbrev-ref", "@{-1}")
    done = subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "rebase", other],
        cwd=git_repo,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and main  # stopped on the conflict, HEAD detached
    assert where.detect(git_repo, env={}).workstream == f"{REPO}#topic"


def test_a_workspace_entry_of_the_wrong_type_is_passed_over(git_repo):
    here = where.detect(git_repo, env={}, workspaces={"acme": True, "shop": [str(git_repo)]})
    assert here.workspace == "shop"


def test_a_folder_that_no_longer_exists_is_one_line(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    result = ken("where")
    assert result.exit_code == 1
    assert result.stderr.strip() == "ken: the current folder no longer exists: cd to one that does"


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


def test_a_project_name_follows_one_rule_wherever_it_is_given(git_repo):
    """`ken project add` refused 'bad name!', while KEN_PROJECT and --scope took it."""
    with pytest.raises(where.InvalidInput, match="KEN_PROJECT: bad project name 'bad name!'"):
        where.detect(git_repo, env={"KEN_PROJECT": "bad name!"})
    result = ken("add", "A note for it", "--scope", "project:bad name!")
    assert result.exit_code == 1 and "bad project name 'bad name!'" in result.stderr
    assert where.detect(git_repo, env={"KEN_PROJECT": "Web.App"}).project == "web.app"


# A GitHub token pasted into `git checkout -b`: 36 characters after its prefix.
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SECRET_BRANCH = f"fix-{TOKEN}"
SESSION = "5a0e7c1d-0000-4000-8000-0000000000b7"


def store_dump(path: str) -> str:
    with sqlite3.connect(path) as db:
        return "\n".join(db.iterdump())


def hook(event: str, cwd: Path, **payload: str) -> None:
    data = {"session_id": SESSION, "hook_event_name": event, "cwd": str(cwd), **payload}
    done = ken_proc("hook", event, "--agent", "claude", input=json.dumps(data), cwd=cwd)
    assert done.returncode == 0, done.stderr


def test_a_branch_whose_name_holds_a_secret_gives_no_workstream_and_never_reaches_the_store(
    git_repo,
):
    git(git_repo, "checkout", "-q", "-b", SECRET_BRANCH)

    shown = ken_proc("where", "--json", cwd=git_repo)
    data = json.loads(shown.stdout)
    assert (data["branch"], data["workstream"]) == ("fix-[redacted:github_token]", None)
    assert [s["scope"] for s in data["scopes"]] == [f"repo:{REPO}", "global"]
    told = ken_proc("where", cwd=git_repo)
    assert "note: the branch name 'fix-[redacted:github_token]' holds a secret" in told.stderr
    # Asked for by name, the workstream is refused with why, the secret not repeated.
    refused = ken_proc("add", "Ship on Fridays", "--scope", "workstream", cwd=git_repo)
    assert refused.returncode == 1
    line = one_line_error(refused.stderr)
    assert line.startswith(
        "ken: no workstream here: the branch name 'fix-[redacted:github_token]' holds a "
        "secret (github_token)"
    )
    added = ken_proc("add", "Deploys go through staging", cwd=git_repo)
    assert added.stderr.strip().endswith(f"to repo:{REPO}")
    # An agent's session: recorded with no workstream, its handoff in the repo.
    hook("SessionStart", git_repo, source="startup")
    hook("UserPromptSubmit", git_repo, prompt="fix the checkout totals please")
    hook("SessionEnd", git_repo, reason="exit")

    dump = store_dump(os.environ["KEN_DB"])
    assert "fix the checkout totals please" in dump  # the hooks did record the session
    assert TOKEN not in dump
    with sqlite3.connect(os.environ["KEN_DB"]) as db:
        assert db.execute("SELECT workstream FROM sessions").fetchall() == [(None,)]
        scopes = {row[0] for row in db.execute("SELECT scope FROM items")}
    assert scopes == {f"repo:{REPO}"}
    exported = ken_proc("export", cwd=git_repo)
    assert exported.returncode == 0 and TOKEN not in exported.stdout
    for done in (shown, told, refused, added, exported):
        assert TOKEN not in done.stdout + done.stderr
    kept = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / where.CLEAN_NAMES
    assert TOKEN not in (kept.read_text() if kept.exists() else "")


def test_a_branch_judged_clean_once_is_not_judged_again_in_another_process(git_repo):
    """The redactor judges a branch's name (and the origin's key) the first time only:
    loading it is most of what a SessionStart hook in its own process would pay on every
    start."""
    probe = (
        "import sys\n"
        "from kenning import where\n"
        f"here = where.detect({str(git_repo)!r}, env={{}})\n"
        "print(here.workstream, 'kenning.redact' in sys.modules)\n"
    )
    first = run_python(probe)
    assert first.stdout.split() == [f"{REPO}#main", "True"]
    again = run_python(probe)
    assert again.stdout.split() == [f"{REPO}#main", "False"]
    kept = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / where.CLEAN_NAMES
    assert kept.read_text() == f"{REPO}\nmain\n"  # the origin's key is judged once too
    git(git_repo, "checkout", "-q", "-b", SECRET_BRANCH)
    assert run_python(probe).stdout.split() == ["None", "True"]
    assert run_python(probe).stdout.split() == ["None", "True"]  # judged each time
    assert kept.read_text() == f"{REPO}\nmain\n"  # a name with a secret is never kept


@pytest.mark.parametrize("var", ["KEN_WORKSTREAM", "KEN_PROJECT", "KEN_WORKSPACE"])
def test_a_setting_that_names_a_scope_with_a_secret_is_refused_as_a_malformed_one_is(git_repo, var):
    env = {var: f"checkout-{TOKEN}"}
    shown = ken_proc("where", cwd=git_repo, env=env)
    assert shown.returncode == 1
    assert one_line_error(shown.stderr) == (
        f"ken: {var}: the name 'checkout-[redacted:github_token]' holds a secret "
        "(github_token); a scope's name is a key kenning stores as written, so name it without"
    )
    assert ken_proc("add", "Ship on Fridays", cwd=git_repo, env=env).returncode == 1
    data = {"session_id": SESSION, "cwd": str(git_repo), "prompt": "ship it"}
    hook = ken_proc(
        "hook",
        "UserPromptSubmit",
        "--agent",
        "claude",
        input=json.dumps(data),
        cwd=git_repo,
        env=env,
    )
    assert (hook.returncode, hook.stdout) == (0, "")
    db = Path(os.environ["KEN_DB"])
    assert not db.exists() or TOKEN not in store_dump(str(db))


def test_an_origin_holding_a_secret_keys_the_repo_by_its_path_and_never_reaches_the_store(
    git_repo,
):
    slack = "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx"
    git(git_repo, "remote", "set-url", "origin", f"git@github.com:acme/{slack}.git")
    data = json.loads(ken_proc("where", "--json", cwd=git_repo).stdout)
    path = str(Path(git_repo).resolve())
    assert data["repo"] == path
    assert [s["scope"] for s in data["scopes"]] == [
        f"workstream:{path}#main",
        f"repo:{path}",
        "global",
    ]
    assert data["scopes"][1]["why"] == "this repo's origin holds a secret (slack_token): its path"
    added = ken_proc("add", "Deploys go through staging", cwd=git_repo)
    assert added.returncode == 0 and "xoxb-" not in added.stderr
    assert slack not in store_dump(os.environ["KEN_DB"])


def test_a_folder_name_holding_a_newline_cannot_fake_a_line_of_ken_where(tmp_path):
    folder = tmp_path / "shop\nagent:  claude (ken is running inside its shell)"
    folder.mkdir()
    result = ken_proc("where", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert not any(line.startswith("agent:") for line in result.stdout.splitlines())
    assert "shop\\x0aagent:  claude" in result.stdout
