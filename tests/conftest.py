"""Shared fixtures. Every test runs with HOME, XDG_* and KEN_DB in its own temp folder,
and with no agent markers in the environment, so no test touches the user's files and
`ken` behaves as it does in a person's shell unless a test says otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

from kenning.agents import AGENTS

# What marks an agent's shell or hook (a test run from one would see it).
AGENT_VARS = [
    var
    for agent in AGENTS.values()
    for var in (*agent.env_markers, *agent.tool_only_env, *agent.hook_only_env)
] + ["KEN_AGENT"]
KEN_VARS = [
    "KEN_WORKSPACE",
    "KEN_WORKSTREAM",
    "KEN_PROJECT",
    "KEN_EDITOR",
    "KEN_ENABLED",
    "KEN_CONTINUES",
    "KEN_HOOK_SERVER_IDLE",
    "XDG_RUNTIME_DIR",
    "VISUAL",
    "EDITOR",
]
KEN_BIN = Path(sys.executable).with_name("ken")

# Property tests draw new examples on every run at a desk (that is how they find what no
# fixed case holds: a .pgpass line written as a list item, on 2026-12-02), and the same
# examples on every CI run (`.ci/run` sets KEN_HYPOTHESIS=ci), so a landing never hangs
# on the draw; what a desk run finds becomes a fixed case in the suite.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("KEN_HYPOTHESIS") == "ci":
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("KEN_DB", str(tmp_path / "memory.db"))
    # Hooks run in their own process unless a test starts a hook server on purpose.
    monkeypatch.setenv("KEN_HOOK_SERVER", "0")
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    for var in AGENT_VARS + KEN_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    # A git file another test's repo refused is told once per process: not in this one.
    from kenning import paths

    monkeypatch.setattr(paths, "_refused", {})
    monkeypatch.setattr(paths, "_told", set())
    yield home


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def ken(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
    """Run `ken` in-process through click's runner."""
    from kenning.cli import cli

    runner = CliRunner()
    return runner.invoke(cli, list(args), input=input, env=env, catch_exceptions=False)


def ken_proc(
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Run the installed `ken` in a subprocess, with this test's environment."""
    full_env = {**os.environ, **(env or {})}
    data = input.decode("utf-8", "surrogateescape") if isinstance(input, bytes) else input
    return subprocess.run(
        [str(KEN_BIN), *args],
        input=data,
        capture_output=True,
        encoding="utf-8",
        errors="surrogateescape",  # bytes input that is not UTF-8 reaches ken as it was
        env=full_env,
        cwd=cwd,
        timeout=timeout,
        start_new_session=True,  # no controlling terminal, as under an agent
    )


@pytest.fixture(scope="session")
def git_repo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repo `git_repo` copies, made once per test process (six git commands, ~30 ms,
    for each of the ~290 tests that want one), with a HOME as empty as a test's."""
    root = tmp_path_factory.mktemp("git-template")
    (root / "home").mkdir()
    repo = root / "shop"
    repo.mkdir()
    env = {**os.environ, "HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "home/.config")}
    run = lambda *a: subprocess.run(  # noqa: E731
        ["git", *a], cwd=repo, check=True, capture_output=True, text=True, env=env
    )
    run("init", "-q", "-b", "main")
    run("config", "user.email", "dev@example.com")
    run("config", "user.name", "Dev")
    run("remote", "add", "origin", "git@github.com:Acme/Shop.git")
    (repo / "README.md").write_text("shop\n")
    run("add", "README.md")
    run("commit", "-qm", "first")
    return repo


@pytest.fixture
def git_repo(tmp_path: Path, git_repo_template: Path) -> Path:
    """A git repo with an origin and one commit: a copy of the session's own, so that a
    test may change it as it likes."""
    repo = tmp_path / "shop"
    shutil.copytree(git_repo_template, repo, symlinks=True)
    return repo


@pytest.fixture(scope="session")
def pg_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A connection string to a PostgreSQL cluster's `postgres` database, as superuser.

    `.ci/run` starts one cluster for the whole run (`KEN_TEST_PG`); elsewhere each test
    process starts its own when PostgreSQL is installed, and the tests that need it are
    skipped, saying why, when it is not. Under `KEN_REQUIRE_POSTGRES=1` (CI) a missing
    PostgreSQL fails them instead."""
    import pgcluster

    given = os.environ.get("KEN_TEST_PG")
    if given:
        yield given
        return
    if pgcluster.server_bin() is None:
        reason = "PostgreSQL is not installed here (no initdb): .ci/run installs it"
        if os.environ.get("KEN_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    folder = pgcluster.scratch_folder()
    try:
        yield pgcluster.start(folder)
    finally:
        pgcluster.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_dsn(pg_cluster: str) -> Iterator[str]:
    """A fresh, empty database of its own for one test, dropped after it."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_cluster, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield pg_cluster.replace("/postgres?", f"/{name}?", 1)
    with psycopg.connect(pg_cluster, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
