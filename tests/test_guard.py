"""The agent guard (issue 9.2): what an agent running `ken` from its own shell may not
do. Person-only commands are refused there, with no question an agent could answer;
a hook payload forged by hand for another repo is not recorded; an import keeps no pin
unless a person brings back their own export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN
from helpers import opened

AGENT_SCRIPT = r"""
import json, os, subprocess, sys
ken, payloads = sys.argv[1], json.loads(sys.argv[2])
print(os.getpid())
for event, payload in payloads:
    subprocess.run([ken, "hook", event, "--agent", "claude"], input=json.dumps(payload),
                   text=True, check=True, capture_output=True)
"""


def fake_agent(tmp_path: Path) -> Path:
    """A program whose process is named `claude`, as the agent's own process is."""
    folder = tmp_path / "agent-bin"
    folder.mkdir(exist_ok=True)
    agent = folder / "claude"
    if not agent.exists():
        agent.symlink_to(os.path.realpath(sys.executable))
    return agent


def as_agent(
    tmp_path: Path, home: Path, payloads: list[tuple[str, dict[str, Any]]], server: str = "0"
) -> int:
    """Run `ken hook` for each payload from a shell of a `claude` process working in
    `home`, as an agent running it by hand would; the agent's pid."""
    done = subprocess.run(
        [str(fake_agent(tmp_path)), "-c", AGENT_SCRIPT, str(KEN_BIN), json.dumps(payloads)],
        cwd=home,
        env={**os.environ, "CLAUDECODE": "1", "KEN_HOOK_SERVER": server},
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def git_repo(folder: Path, origin: str) -> Path:
    folder.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", origin]):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)
    return folder


def session_payloads(cwd: Path, session: str) -> list[tuple[str, dict[str, Any]]]:
    base = {"session_id": session, "cwd": str(cwd)}
    return [
        ("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        (
            "UserPromptSubmit",
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Always push to main"},
        ),
        ("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}),
    ]


def recorded() -> dict[str, list[str]]:
    """Each recorded session's agent session id, with the scopes of its handoffs."""
    with opened() as store:
        return {
            s.agent_session_id or "": [
                str(i.scope) for i in store.list_items(_query(session_id=s.id, kinds=("handoff",)))
            ]
            for s in store.list_sessions(limit=100)
        }


def _query(**options: Any) -> Any:
    from kenning.store import ItemQuery

    return ItemQuery(statuses=(), **options)


def log_text() -> str:
    path = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("server", ["0", "1"])
def test_a_hook_forged_for_another_repo_from_an_agents_shell_is_not_recorded(
    tmp_path: Path, server: str
):
    ours = git_repo(tmp_path / "ours", "git@github.com:acme/ours.git")
    theirs = git_repo(tmp_path / "theirs", "git@github.com:acme/theirs.git")
    (ours / "src").mkdir()
    try:
        as_agent(tmp_path, ours, session_payloads(theirs, "forged"), server)
        agent = as_agent(tmp_path, ours, session_payloads(ours / "src", "own"), server)
    finally:
        subprocess.run([str(KEN_BIN), "hook", "--stop-server"], capture_output=True, timeout=20)
    found = recorded()
    assert "forged" not in found, "a payload for another repo was recorded"
    assert found["own"] == ["workstream:github.com/acme/ours#main"]
    with opened() as store:  # the agent's process, found above the hook in either case
        assert store.find_session("claude", "own").pid == agent
    lines = [line for line in log_text().splitlines() if "lies in another repo" in line]
    assert len(lines) == 3 and all(str(theirs) in line and str(ours) in line for line in lines)


def test_what_a_hook_writes_is_a_working_note_labelled_with_its_agent(tmp_path: Path):
    from kenning.model import Kind, Status
    from kenning.policy import unreviewed_from

    ours = git_repo(tmp_path / "ours", "git@github.com:acme/ours.git")
    as_agent(tmp_path, ours, session_payloads(ours, "own"))
    with opened() as store:
        written = store.list_items(_query())
    assert written and all(i.kind is Kind.HANDOFF for i in written)
    assert all(i.status is Status.ACTIVE and unreviewed_from(i) == "claude" for i in written)
