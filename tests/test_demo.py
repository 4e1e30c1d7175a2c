"""`make demo`: the tour ends in the payoff (a pack, a recall explained, a handoff), runs
in a throwaway folder whatever shell it starts in, and installs only the package."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import ken_proc

ROOT = Path(__file__).resolve().parent.parent


def test_the_demo_shows_what_agents_are_told_a_recall_and_a_handoff(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    # The person's own Codex settings: the handoff the tour prints never shows them.
    codex = Path(os.environ["HOME"]) / ".codex"
    codex.mkdir(parents=True, exist_ok=True)
    (codex / "config.toml").write_text('developer_instructions = "MY-OWN-CODEX-RULES"\n')
    env = {"TMPDIR": str(temp), "CLAUDECODE": "1", "KEN_AGENT": "codex", "KEN_ENABLED": "0"}
    done = ken_proc("demo", env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    steps = [
        "$ ken pack",
        "## Pinned",
        "Release branch freezes on Thursdays",
        "DEPLOY_TOKEN=[redacted:github_token]",
        "$ ken recall 'can I mock the database in the integration tests?' --explain",
        "query words:",
        "Integration tests hit a real Postgres database",
        "[claude starts] its SessionStart hook",
        "$ ken handoff --to codex --print",
        "$ codex -c",
        "# Continuing from another agent",
        "- First prompt: add a CSV export of the orders page",
        "- Commits: ",
        " M README.md",
    ]
    at = 0
    for step in steps:  # each in the tour, in this order
        found = out.find(step, at)
        assert found >= 0, f"not in the tour after position {at}: {step!r}"
        at = found + len(step)
    assert "ghp_4fT9" not in out.split("$ ken pack")[1]  # the secret never reached the store
    assert "MY-OWN-CODEX-RULES" not in out
    assert not Path(os.environ["KEN_DB"]).exists()  # the person's store is never touched
    assert list(temp.iterdir()) == []  # and nothing of the tour is left behind


def make_dry_run(target: str, venv: Path) -> str:
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_make_demo_installs_only_the_package_and_make_test_the_tools(tmp_path: Path) -> None:
    demo = make_dry_run("demo", tmp_path / "venv")
    installs = [line for line in demo.splitlines() if "pip install" in line]
    assert len(installs) == 1
    assert installs[0].split("pip install", 1)[1].strip() == "--quiet -e .; fi"
    assert "upgrade" not in demo
    test = make_dry_run("test", tmp_path / "venv")
    assert "pip install --quiet -e '.[test,mcp,tui,team]'" in test
