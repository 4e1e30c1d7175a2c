"""A repo's key as git (and ssh) would name it (kenning.git), checked against real git.

Each test builds its repos with the `git` command, and where git can say what it reads
(`git remote get-url`), kenning's key is held to git's answer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import ken_proc
from kenning import config, items, where

REPO = "github.com/acme/shop"


def run_git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def init(folder: Path, *args: str, origin: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    run_git(folder, "init", "-q", "-b", "main", *args)
    if origin is not None:
        run_git(folder, "remote", "add", "origin", origin)
    return folder


def commit(repo: Path) -> None:
    run_git(
        repo,
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "i",
    )


def key(folder: Path, env: dict[str, str] | None = None) -> str | None:
    return where.detect(folder, env=env or {}).repo


def as_git_reads_it(repo: Path, remote: str = "origin") -> str:
    """The key of the URL git itself gives for the remote (insteadOf applied)."""
    return where.normalize_origin(run_git(repo, "remote", "get-url", remote))


def typed(value: str) -> str:
    return items.parse_scope(f"repo:{value}").value


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- url.<base>.insteadOf and the config files git reads ---------------------------------


def test_an_insteadof_shorthand_is_keyed_by_the_url_it_stands_for(tmp_path, isolated_home):
    run_git(tmp_path, "config", "--global", "url.git@github.com:.insteadOf", "gh:")
    # The longest prefix wins, whichever is written first.
    run_git(tmp_path, "config", "--global", "url.https://gitlab.example.com/.insteadOf", "gh:lab/")
    # Among prefixes as long, the first written wins.
    run_git(tmp_path, "config", "--global", "url.git@bitbucket.org:.insteadOf", "gh:")
    short = init(tmp_path / "short", origin="gh:Acme/Shop")
    lab = init(tmp_path / "lab", origin="gh:lab/group/proj.git")
    assert key(short) == as_git_reads_it(short) == REPO
    assert key(lab) == as_git_reads_it(lab) == "gitlab.example.com/group/proj"
    assert where.detect(short, env={}).git.origin == run_git(short, "remote", "get-url", "origin")
    # Typed as the shorthand, in --scope and in config, it is the same repo.
    assert typed("gh:acme/shop") == REPO
    switches = config.Config({"memory": {"repos": {"gh:acme/shop": {"capture": False}}}})
    assert switches.repo_capture(REPO) is False


def test_an_origin_and_rewrites_from_included_config_files_are_read(tmp_path, isolated_home):
    """`[include]` (with `~`, and relative to the including file) and `[includeIf
    "gitdir:..."]` (a trailing `/`, `**`, `gitdir/i`) pull in what git reads."""
    write(
        isolated_home / ".config" / "git" / "extra", '[url "git@github.com:"]\n\tinsteadOf = gh:\n'
    )
    write(
        isolated_home / "work.inc", '[url "git@gitlab.example.com:acme/"]\n\tinsteadOf = gh:acme/\n'
    )
    write(isolated_home / "loud.inc", '[url "git@bitbucket.org:acme/"]\n\tinsteadOf = gh:acme/\n')
    write(
        isolated_home / ".gitconfig",
        "[include]\n\tpath = ~/.config/git/extra\n"
        f'[includeIf "gitdir:{tmp_path}/work/"]\n\tpath = work.inc\n'
        '[includeIf "gitdir/i:**/LOUD/"]\n\tpath = loud.inc\n'
        '[includeIf "onbranch:main"]\n\tpath = nowhere.inc\n',
    )
    write(tmp_path / "remote.inc", '[remote "origin"]\n\turl = "gh:acme/shop.git" ; a comment\n')
    work = init(tmp_path / "work" / "a", origin="gh:acme/shop")
    play = init(tmp_path / "play" / "b", origin="gh:acme/shop")
    loud = init(tmp_path / "loud" / "c", origin="gh:acme/shop")
    included = init(tmp_path / "play" / "d")
    run_git(included, "config", "include.path", "../../../remote.inc")  # from .git/config
    expected = {
        work: "gitlab.example.com/acme/shop",
        play: REPO,
        loud: "bitbucket.org/acme/shop",
        included: REPO,
    }
    for repo, wanted in expected.items():
        assert (key(repo), as_git_reads_it(repo)) == (wanted, wanted), repo
    # A worktree of the repo under work/ is under work/ too, as git reads it.
    commit(work)
    worktree = tmp_path / "elsewhere" / "wt"
    run_git(work, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert key(worktree) == as_git_reads_it(worktree) == "gitlab.example.com/acme/shop"


def as_git_config_gets_it(repo: Path) -> str:
    """`git config --get remote.origin.url`: the last value written, not rewritten."""
    return run_git(repo, "config", "--get", "remote.origin.url")


def test_an_include_on_the_branch_checked_out_is_read_as_git_reads_it(tmp_path, isolated_home):
    """`[includeIf "onbranch:..."]`: the branch of this worktree's HEAD, matched as a
    path (`*` stops at `/`, a trailing `/` is everything under it); never on a detached
    HEAD. What it pulls in may rewrite the origin or name it."""
    write(isolated_home / "feat.inc", '[url "git@gitlab.example.com:"]\n\tinsteadOf = gh:\n')
    write(isolated_home / "rel.inc", '[remote "origin"]\n\turl = gh:acme/release\n')
    write(
        isolated_home / ".gitconfig",
        '[includeIf "onbranch:feature/"]\n\tpath = feat.inc\n'
        '[includeIf "onbranch:rel*"]\n\tpath = rel.inc\n'
        '[url "git@github.com:"]\n\tinsteadOf = gh:\n',
    )
    repo = init(tmp_path / "shop", origin="gh:acme/shop")
    commit(repo)
    wanted = {
        "main": REPO,
        "feature/pay": "gitlab.example.com/acme/shop",
        "feature": REPO,  # `feature/` is what is under it
        "release": "github.com/acme/release",  # the global file's URL comes first
        "rel/1.2": REPO,  # `*` stops at `/`
    }
    for branch, repo_key in wanted.items():
        if branch != "main":
            run_git(repo, "checkout", "-q", "-b", branch)
        assert (key(repo), as_git_reads_it(repo)) == (repo_key, repo_key), branch
        if branch == "release":
            # The repo's own URL, written last, is what `git config --get` gives.
            assert as_git_config_gets_it(repo) == "gh:acme/shop"
        run_git(repo, "checkout", "-q", "--detach")
        assert key(repo) == as_git_reads_it(repo) == REPO  # on no branch
        run_git(repo, "checkout", "-q", "main")
        if branch != "main":
            run_git(repo, "branch", "-q", "-D", branch)
    # A worktree on a feature branch reads its own HEAD, not the main checkout's.
    worktree = tmp_path / "wt"
    run_git(repo, "worktree", "add", "-q", "-b", "feature/tax", str(worktree))
    assert key(worktree) == as_git_reads_it(worktree) == "gitlab.example.com/acme/shop"
    assert key(repo) == REPO


def test_an_include_on_a_remote_url_is_read_as_git_reads_it(tmp_path, isolated_home):
    """`[includeIf "hasconfig:remote.*.url:..."]`: any remote's URL as written (not
    rewritten) matched as a path; what it pulls in may rewrite the origin (a URL in it
    is refused by git: it names no origin for kenning either)."""
    write(isolated_home / "acme.inc", '[url "https://mirror.example.com/"]\n\tinsteadOf = gh:\n')
    write(
        isolated_home / "deep.inc",
        '[url "https://acme.example.com/"]\n\tinsteadOf = https://github.com/\n',
    )
    write(
        isolated_home / ".gitconfig",
        '[includeIf "hasconfig:remote.*.url:gh:acme/*"]\n\tpath = acme.inc\n'
        '[includeIf "hasconfig:remote.*.url:https://github.com/acme/**"]\n\tpath = deep.inc\n',
    )
    wanted = {
        "gh:acme/shop": "mirror.example.com/acme/shop",
        "gh:acme/shop/sub": "gh:acme/shop/sub",  # `*` stops at `/`: nothing pulled in
        "https://github.com/acme/shop": "acme.example.com/acme/shop",
        "https://github.com/other/shop": "github.com/other/shop",
    }
    for n, (origin, repo_key) in enumerate(wanted.items()):
        repo = init(tmp_path / f"r{n}", origin=origin)
        assert run_git(repo, "remote", "get-url", "origin") == where.detect(repo, env={}).git.origin
        assert key(repo) == as_git_reads_it(repo) == where.normalize_origin(repo_key), origin
    # Another remote's URL pulls it in for origin too.
    repo = init(tmp_path / "two", origin="gh:other/shop")
    run_git(repo, "remote", "add", "acme", "gh:acme/shop")
    assert key(repo) == as_git_reads_it(repo) == "mirror.example.com/other/shop"


def test_config_given_in_the_environment_is_read_as_git_reads_it(
    tmp_path, isolated_home, monkeypatch
):
    """GIT_CONFIG_COUNT with GIT_CONFIG_KEY_<n> and GIT_CONFIG_VALUE_<n>: read after
    every file (its rewrites and includes too); a remote's first URL is still the one
    git uses, and a remote named only there is used as `git fetch` would."""
    mirror = write(
        isolated_home / "mirror.inc",
        '[url "https://mirror.example.com/"]\n\tinsteadOf = git@github.com:\n',
    )
    repo = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    bare = init(tmp_path / "bare")
    given = {
        "url.https://gitlab.example.com/.insteadOf": "git@github.com:",
        "Remote.origin.URL": "git@github.com:acme/from-env.git",  # section: any case
    }
    monkeypatch.setenv("GIT_CONFIG_COUNT", str(len(given)))
    for n, (name, value) in enumerate(given.items()):
        monkeypatch.setenv(f"GIT_CONFIG_KEY_{n}", name)
        monkeypatch.setenv(f"GIT_CONFIG_VALUE_{n}", value)
    assert key(repo) == as_git_reads_it(repo) == "gitlab.example.com/acme/shop"
    assert as_git_config_gets_it(repo) == "git@github.com:acme/from-env.git"
    # Named nowhere else: `git remote get-url` wants it in the repo's own config, `git
    # config --get` and `git fetch` take it from anywhere, as kenning does.
    assert key(bare) == where.normalize_origin("https://gitlab.example.com/acme/from-env.git")
    assert as_git_config_gets_it(bare) == "git@github.com:acme/from-env.git"
    # An include given there is followed (a full path, or one from `~`).
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "include.path")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "~/mirror.inc")
    assert mirror.exists()
    assert key(repo) == as_git_reads_it(repo) == "mirror.example.com/acme/shop"
    # A count git refuses ("bogus count") adds nothing.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "two")
    assert key(repo) == REPO


def test_an_empty_insteadof_rewrites_every_url_as_git_does(tmp_path, isolated_home):
    run_git(tmp_path, "config", "--global", "url.https://all.example.com/.insteadOf", "")
    repo = init(tmp_path / "shop", origin="acme/shop")
    assert run_git(repo, "remote", "get-url", "origin") == "https://all.example.com/acme/shop"
    assert key(repo) == as_git_reads_it(repo) == "all.example.com/acme/shop"


@pytest.mark.parametrize(
    ("text", "url"),
    [
        (
            '[remote "origin"]\n\turl = git@github.com:acme/shop.git\n',
            "git@github.com:acme/shop.git",
        ),
        (
            '[remote "origin"] url = "git@github.com:acme/shop.git"\n',
            "git@github.com:acme/shop.git",
        ),
        (
            "[remote.origin]\n\turl = git@github.com:acme/shop.git # old form\n",
            "git@github.com:acme/shop.git",
        ),
        (
            '[remote "origin"]\n\turl = git@github.com:\\\n acme/shop.git\n',
            "git@github.com: acme/shop.git",
        ),
        (
            '[Remote "origin"]\n\tURL = "git@github.com:acme/shop.git"\n',
            "git@github.com:acme/shop.git",
        ),
        ('[remote "or\\"igin"]\n\turl = x\n[remote "origin"]\n\turl = a:b/c\n', "a:b/c"),
    ],
)
def test_config_files_are_parsed_as_git_parses_them(tmp_path, text, url):
    repo = init(tmp_path / "r")
    config_file = repo / ".git" / "config"
    config_file.write_text(config_file.read_text() + text)
    assert run_git(repo, "remote", "get-url", "origin") == url
    assert where.detect(repo, env={}).git.origin == url


# --- ssh host aliases --------------------------------------------------------------------

SSH_CONFIG = """\
# ssh takes the first value it finds for each option
Include conf.d/*.conf
Host github-work
    HostName github.com
Host github-*
    HostName wrong.example.com
Host *.corp !skip.corp
    HostName %h.example.com
Host skip.corp
    HostName=other.example.com
Host lab
    HostName 10.1.2.3
Host github.com
    HostName ssh.github.com
    Port 443
Match exec "false"
    HostName never.example.com
"""


@pytest.mark.parametrize(
    ("origin", "wanted"),
    [
        ("git@github-work:acme/shop.git", REPO),
        ("ssh://git@github-work:22/Acme/Shop", REPO),
        ("git@git.corp:team/app.git", "git.corp.example.com/team/app"),  # %h
        ("git@skip.corp:team/app.git", "other.example.com/team/app"),  # ! rules a block out
        ("git@lab:team/app.git", "lab/team/app"),  # an address: the alias is kept
        ("git@github.com:acme/shop.git", REPO),  # ssh over port 443 is still github.com
        ("git@gl-work:group/proj.git", "gitlab.com/group/proj"),  # from an Include
        ("git@elsewhere:acme/shop.git", "elsewhere/acme/shop"),
        ("https://github-work/acme/shop", "github-work/acme/shop"),  # not reached by ssh
    ],
)
def test_an_ssh_host_alias_is_keyed_by_the_host_it_stands_for(
    tmp_path, isolated_home, origin, wanted
):
    write(isolated_home / ".ssh" / "config", SSH_CONFIG)
    write(isolated_home / ".ssh" / "conf.d" / "work.conf", "Host gl-work\n  HostName GitLab.com\n")
    repo = init(tmp_path / "r", origin=origin)
    assert key(repo) == wanted
    assert typed(origin) == wanted
    switches = config.Config({"memory": {"repos": {origin: {"deliver": False}}}})
    assert switches.repo_deliver(wanted) is False


# --- local paths ---------------------------------------------------------------------------


def test_a_local_path_origin_is_one_key_detected_typed_and_in_config(tmp_path):
    """`.git` is kept everywhere: the bare repository's own key is its path, with it."""
    served = init(tmp_path / "srv" / "Shop.git", "--bare")
    clone = tmp_path / "shop"
    run_git(tmp_path, "clone", "-q", str(served), str(clone))
    url = run_git(clone, "remote", "get-url", "origin")
    detected = key(clone)
    assert detected == str(served.resolve())
    assert key(served) == detected  # the bare repository itself
    assert typed(url) == detected
    # Named without its `.git`, git finds it all the same; typed, that path is not there.
    run_git(clone, "remote", "set-url", "origin", str(served)[: -len(".git")])
    assert key(clone) == detected
    assert typed(str(served)[: -len(".git")]) == str(served)[: -len(".git")]
    run_git(clone, "remote", "set-url", "origin", url)
    assert (
        config.Config({"memory": {"repos": {url: {"deliver": False}}}}).repo_deliver(detected)
        is False
    )
    # file:// as git writes it, spaces and all, and escaped.
    spaced = init(tmp_path / "my srv" / "Shop.git", "--bare")
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "-q", f"file://{spaced}", str(other))
    assert run_git(other, "remote", "get-url", "origin") == f"file://{spaced}"
    assert key(other) == str(spaced.resolve())
    escaped = "file://" + str(spaced).replace(" ", "%20")
    assert typed(f"file://{spaced}") == typed(escaped) == key(other)
    # Through the CLI: typed as git prints the origin, it is told in the clone.
    added = ken_proc("add", "Typed as git prints it", "--scope", f"repo:{url}", "--json")
    assert added.returncode == 0, added.stderr
    here = ken_proc("list", "--here", "--json", cwd=clone)
    assert [i["id"] for i in json.loads(here.stdout)] == [json.loads(added.stdout)["id"]]


def test_a_clone_of_a_local_clone_shares_its_key(tmp_path):
    first = tmp_path / "first"
    served = init(tmp_path / "srv.git", "--bare", origin="git@github.com:acme/shop.git")
    run_git(tmp_path, "clone", "-q", str(served), str(first))
    second = tmp_path / "second"
    run_git(tmp_path, "clone", "-q", str(first), str(second))
    # first's origin is the bare repository, whose own origin is github.com/acme/shop.
    assert key(served) == key(first) == key(second) == REPO
    # Round and round: a repo whose origin is itself, two that name each other.
    a, b = init(tmp_path / "a"), init(tmp_path / "b")
    run_git(a, "remote", "add", "origin", str(b))
    run_git(b, "remote", "add", "origin", str(a))
    assert key(a) in (str(a.resolve()), str(b.resolve()))


def test_relative_origins_are_read_against_the_main_checkout(tmp_path):
    dot = [init(tmp_path / name, origin=".") for name in ("one", "two")]
    assert [key(r) for r in dot] == [str(r.resolve()) for r in dot]
    up = [init(tmp_path / name / "repo", origin="..") for name in ("p", "q")]
    assert [key(r) for r in up] == [str((tmp_path / n).resolve()) for n in ("p", "q")]
    upstream = init(tmp_path / "upstream.git", "--bare")
    main = init(tmp_path / "main", origin="../upstream.git")
    commit(main)
    worktree = tmp_path / "deep" / "er" / "wt"
    run_git(main, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert key(main) == key(worktree) == str(upstream.resolve())


# --- which remote --------------------------------------------------------------------------


def test_remote_names_are_case_sensitive_and_an_only_remote_stands_in_for_origin(tmp_path):
    both = init(tmp_path / "both")
    run_git(both, "remote", "add", "Origin", "git@github.com:acme/other.git")
    run_git(both, "remote", "add", "origin", "git@github.com:acme/shop.git")
    assert key(both) == as_git_reads_it(both) == REPO
    upstream = tmp_path / "upstream"
    seed = init(tmp_path / "seed", origin="git@github.com:acme/shop.git")
    commit(seed)
    run_git(tmp_path, "clone", "-q", "-o", "upstream", str(seed), str(upstream))
    run_git(upstream, "remote", "set-url", "upstream", "git@github.com:Acme/Shop.git")
    here = where.detect(upstream, env={})
    assert here.repo == as_git_reads_it(upstream, "upstream") == REPO
    assert "remote upstream" in here.reasons[f"repo:{REPO}"]
    two = init(tmp_path / "two")
    run_git(two, "remote", "add", "Origin", "git@github.com:acme/shop.git")
    run_git(two, "remote", "add", "fork", "git@github.com:me/shop.git")
    assert key(two) == str(two.resolve())  # which one? neither: its path


def test_git_dir_and_git_work_tree_in_the_environment_decide_the_repo(tmp_path):
    repo = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert key(elsewhere) is None
    assert key(elsewhere, {"GIT_DIR": str(repo / ".git")}) == REPO
    assert key(tmp_path, {"GIT_DIR": "shop/.git"}) == REPO  # relative to the folder
    found = where.detect(elsewhere, env={"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)})
    assert found.git.root == repo.resolve()
    assert key(repo, {"GIT_DIR": str(elsewhere)}) is None  # as git: not a git repository


# --- layouts -------------------------------------------------------------------------------


def test_a_bare_repository_is_a_repo_inside_it(tmp_path):
    bare = init(tmp_path / "shop.git", "--bare", origin="git@github.com:acme/shop.git")
    plain = init(tmp_path / "plain.git", "--bare")
    for folder in (bare, bare / "refs" / "heads", bare / "objects"):
        assert key(folder) == REPO, folder
    assert key(plain) == str(plain.resolve())
    assert key(init(tmp_path / "work") / ".git" / "refs") == str((tmp_path / "work").resolve())
    added = ken_proc("add", "The bare repo's own note", "--json", cwd=bare)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["scope"] == f"repo:{REPO}"


def test_a_worktree_whose_main_checkout_moved_is_keyed_by_where_it_was(tmp_path):
    main = init(tmp_path / "main")
    commit(main)
    worktree = tmp_path / "wt"
    run_git(main, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert key(worktree) == str(main.resolve())
    main.rename(tmp_path / "moved")
    found = where.detect(worktree, env={})
    assert found.repo == str(main.resolve())
    assert found.workstream is None


def test_a_reftable_repository_asks_git_for_its_branch(tmp_path, monkeypatch):
    """Its HEAD file holds `ref: refs/heads/.invalid` whatever is checked out (git 2.45's
    opt-in, Git 3's default); this git is older, so a stub answers as a newer one would."""
    repo = init(tmp_path / "rt", origin="git@github.com:acme/shop.git")
    commit(repo)
    sha = run_git(repo, "rev-parse", "HEAD")
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/.invalid\n")
    run_git(repo, "config", "core.repositoryformatversion", "1")
    run_git(repo, "config", "extensions.refStorage", "reftable")
    # Whatever this machine's git makes of it, `.invalid` is no branch.
    assert not (where.detect(repo, env={}).workstream or "").endswith("#.invalid")
    calls = tmp_path / "calls"
    stub = write(
        tmp_path / "bin" / "git",
        "#!/bin/sh\n"
        f'echo "$@" >> "{calls}"\n'
        'case "$*" in\n'
        "  *symbolic-ref*) echo refs/heads/feature/pay ;;\n"
        f"  *rev-parse*) echo {sha} ;;\n"
        "  *) exit 1 ;;\n"
        "esac\n",
    )
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    found = where.detect(repo, env={})
    assert found.workstream == f"{REPO}#feature/pay"
    assert found.git.head == sha
    assert f"--git-dir={(repo / '.git').resolve()}" in calls.read_text()


def test_codecommit_origins_keep_their_region_and_read_a_profiles(
    tmp_path, isolated_home, monkeypatch
):
    for var in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)
    write(
        isolated_home / ".aws" / "config",
        "[default]\nregion = us-east-1\n\n[profile eu]\nregion = eu-west-1\n",
    )
    us = "git-codecommit.us-east-1.amazonaws.com/v1/repos/billing"
    eu = "git-codecommit.eu-west-1.amazonaws.com/v1/repos/billing"
    origins = {
        "codecommit::us-east-1://billing": us,
        "https://git-codecommit.us-east-1.amazonaws.com/v1/repos/billing": us,
        "codecommit://billing": us,  # the default profile's region
        "codecommit::eu-west-1://ops@billing": eu,
        "codecommit://eu@billing": eu,
    }
    for n, (origin, wanted) in enumerate(origins.items()):
        assert key(init(tmp_path / f"r{n}", origin=origin)) == wanted, origin
        assert typed(origin) == wanted, origin


def test_an_azure_project_name_with_a_space_is_one_key_escaped_or_not(tmp_path):
    repo = init(tmp_path / "az", origin="https://dev.azure.com/Org/My%20Project/_git/Repo")
    wanted = "dev.azure.com/org/my project/_git/repo"
    assert key(repo) == wanted
    assert typed("https://dev.azure.com/org/My Project/_git/repo") == wanted
    assert typed("https://Org@dev.azure.com/Org/My%20Project/_git/Repo") == wanted
    assert typed(wanted) == wanted
    with pytest.raises(Exception, match="a repo is its origin"):
        typed("use pnpm/npm")


# --- typed paths ---------------------------------------------------------------------------


def test_a_repo_typed_as_a_path_is_keyed_as_detection_keys_that_folder(tmp_path, isolated_home):
    real = init(tmp_path / "real")
    (real / "src" / "deep").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    wanted = str(real.resolve())
    for path in (str(link), f"{real}/../real", f"{real}/src/deep", f"{link}/src/"):
        assert typed(path) == wanted == key(Path(path)), path
    with_origin = init(isolated_home / "src" / "shop", origin="git@github.com:Acme/Shop.git")
    (with_origin / "src").mkdir()
    assert typed(str(with_origin / "src")) == typed("~/src/shop") == REPO
    # A checkout that is gone is named as typed: its memories can still be found.
    assert typed(f"{tmp_path}/gone/Old Shop/") == f"{tmp_path}/gone/Old Shop"
    gone = config.Config({"memory": {"repos": {f"{tmp_path}/gone/Old Shop": {"deliver": False}}}})
    assert gone.repo_deliver(f"{tmp_path}/gone/Old Shop") is False
    # The one line `ken add` prints names the key the memory went to.
    added = ken_proc("add", "Typed through a symlink", "--scope", f"repo:{link}")
    assert added.returncode == 0, added.stderr
    assert f"to repo:{wanted}" in added.stderr
    here = ken_proc("list", "--here", "--json", cwd=link)
    assert [i["title"] for i in json.loads(here.stdout)] == ["Typed through a symlink"]
    ws = items.parse_scope(f"workstream:{link}/src#Feature")
    assert ws.value == f"{wanted}#Feature"


def git_top(folder: Path) -> subprocess.CompletedProcess[str]:
    """What git itself says of `folder`: its work tree's top, or why it has none."""
    return subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )


def test_an_empty_git_folder_is_passed_over_for_the_repo_around_it_as_git_does(tmp_path):
    """An empty `.git` folder inside a repo made kenning key that folder as a repo of its
    own (`repo:/.../sub/emptygit`); git passes over it and uses the repo around it."""
    shop = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    inner = shop / "sub" / "emptygit"
    (inner / ".git").mkdir(parents=True)
    assert git_top(inner).stdout.strip() == str(shop.resolve())
    found = where.detect(inner, env={})
    assert found.repo == REPO == as_git_reads_it(inner)
    assert found.git is not None and found.git.root == shop.resolve()
    # Outside any repo, an empty `.git` folder makes none.
    lone = tmp_path / "lone" / "emptygit"
    (lone / ".git").mkdir(parents=True)
    assert git_top(lone).returncode != 0
    assert key(lone) is None


def test_a_git_file_naming_no_repository_is_no_repo_as_git_says(tmp_path):
    """A `.git` file saying `gitdir: /nonexistent/x`: git says "not a git repository";
    kenning stored memories under `repo:/nonexistent/x`."""
    shop = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    for name, text in [
        ("gone", f"gitdir: {tmp_path / 'nonexistent' / 'x'}\n"),
        ("empty", f"gitdir: {tmp_path}\n"),  # a folder, but no git dir
        ("noformat", f"gitdir:{shop / '.git'}\n"),  # git wants the space after the colon
    ]:
        folder = shop / name
        folder.mkdir()
        (folder / ".git").write_text(text)
        said = git_top(folder)
        assert said.returncode != 0, (name, said.stdout)
        assert key(folder) is None, name
    # A `.git` file naming a git dir is the repo it names, as git reads it.
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {shop / '.git'}\n")
    assert git_top(linked).stdout.strip() == str(linked.resolve())
    assert key(linked) == REPO


# --- files a repo may make anything: a FIFO, a huge one, an include of itself ---------------


def where_json(folder: Path) -> tuple[dict[str, object], str]:
    """`ken where --json` in `folder`, in its own process: a read that blocks is a
    timeout, not a hung test."""
    done = ken_proc("where", "--json", cwd=folder, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_an_include_that_is_a_fifo_is_not_read_and_where_answers_saying_so(tmp_path):
    """`git config include.path /some/fifo`: reading it waited for a writer for ever, so
    `ken where` and every hook hung."""
    shop = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with (shop / ".git" / "config").open("a") as file:  # git itself would block on it
        file.write(f"[include]\n\tpath = {fifo}\n")

    data, said = where_json(shop)

    assert data["repo"] == REPO  # the rest of the config is read as before
    assert f"note: {fifo} was not read: it is not a regular file" in said


def test_a_git_config_that_is_a_fifo_keys_the_repo_by_its_path(tmp_path):
    shop = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    (shop / ".git" / "config").unlink()
    os.mkfifo(shop / ".git" / "config")

    data, said = where_json(shop)

    assert data["repo"] == str(shop.resolve())  # no origin read: the repo's path
    assert "config was not read: it is not a regular file" in said


def huge(path: Path, size: int) -> Path:
    """A sparse file of `size` bytes: nothing on disk, all of it there to read."""
    with path.open("wb") as file:
        file.truncate(size)
    return path


def read_peak(folder: Path) -> tuple[where.Where, int]:
    """What detection gives in `folder`, and the most memory it held at once."""
    import tracemalloc

    tracemalloc.start()
    try:
        found = where.detect(folder, env={})
        return found, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_include_or_packed_refs_is_not_read_into_memory(tmp_path):
    """A 1 GB include or packed-refs cost 6-14 s and 2 GB of memory per prompt."""
    shop = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    commit(shop)
    run_git(shop, "pack-refs", "--all")  # the branch's commit only in packed-refs
    head = run_git(shop, "rev-parse", "HEAD")
    assert where.detect(shop, env={}).git.head == head  # type: ignore[union-attr]
    big = huge(tmp_path / "big.cfg", 100 * 1024 * 1024)
    with (shop / ".git" / "config").open("a") as file:
        file.write(f"[include]\n\tpath = {big}\n")
    packed = shop / ".git" / "packed-refs"
    packed.write_bytes(packed.read_bytes() + b"0" * 1024)
    with packed.open("ab") as file:
        file.truncate(100 * 1024 * 1024)

    found, peak = read_peak(shop)

    assert peak < 4 * 1024 * 1024
    assert found.repo == REPO
    assert found.git is not None and found.git.head is None  # not known, not guessed


def test_a_config_that_includes_itself_over_and_over_is_read_a_bounded_number_of_times(
    tmp_path, monkeypatch
):
    """Fifty includes of itself, ten deep, is 50**10 reads: git's depth limit alone let
    kenning read for ever."""
    from kenning import git

    shop = init(tmp_path / "shop", origin="git@github.com:acme/shop.git")
    loop = tmp_path / "loop.cfg"
    loop.write_text("[include]\n" + f"\tpath = {loop}\n" * 50)
    with (shop / ".git" / "config").open("a") as file:
        file.write(f"[include]\n\tpath = {loop}\n")
    reads = []
    real = git._entries

    def counted(path: str) -> list[git.Entry]:
        reads.append(path)
        assert len(reads) < 10_000, "the includes were followed without end"
        return real(path)

    monkeypatch.setattr(git, "_entries", counted)

    assert key(shop) == REPO
    assert len(reads) <= git.MAX_INCLUDES + 10
