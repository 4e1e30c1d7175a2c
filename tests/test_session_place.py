"""A session belongs to the place it works in: an agent's session that goes on in another
repo (Copilot's `--continue` or `--resume=ID`, `codex exec resume ID`, Claude's
`--resume`) is recorded there, as a new session continued from the first, and nothing
typed there shows in the first repo's packs or handoffs."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ken_proc
from helpers import opened
from kenning import sessions as sessions_mod
from kenning.hooks import run as hook_run
from kenning.model import Session
from kenning.store import ItemQuery, SessionQuery

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
PRIVATE = "github.com/acme/private"
SECRET = "PRIVATEPLAN acquire the rival company quietly"
PROMPT = {
    "claude": "UserPromptSubmit",
    "codex": "UserPromptSubmit",
    "copilot": "userPromptSubmitted",
}
START = {"claude": "SessionStart", "codex": "SessionStart", "copilot": "sessionStart"}
END = {"claude": "SessionEnd", "codex": "SessionEnd", "copilot": "sessionEnd"}


@pytest.fixture
def private(git_repo: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "private"
    shutil.copytree(git_repo, repo, symlinks=True)
    subprocess.run(
        ["git", "remote", "set-url", "origin", "git@github.com:Acme/Private.git"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    return repo


def payload(agent: str, event: str, cwd: Path, **changes: Any) -> dict[str, Any]:
    data = json.loads((FIXTURES / agent / f"{event}.json").read_text(encoding="utf-8"))
    data["cwd"] = str(cwd)
    data.pop("transcript_path", None)
    data.pop("transcriptPath", None)
    return {**data, **changes}


def hook(agent: str, event: str, data: dict[str, Any]) -> str:
    out = io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(data).encode()), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out):
            assert hook_run.main([event, "--agent", agent]) == 0
    finally:
        sys.stdin = saved
    return out.getvalue()


def by_repo() -> dict[str | None, Session]:
    with opened() as store:
        found = store.list_sessions(SessionQuery(limit=None))
    return {s.repo: s for s in found}


def handoffs() -> dict[str, str]:
    with opened() as store:
        found = store.list_items(ItemQuery(kinds=("handoff",), include_expired=True))
    return {str(i.scope): i.text for i in found}


def one_turn(agent: str, cwd: Path, prompt: str, source: str = "startup") -> None:
    """A start (`source`), a prompt and an end of the fixture's session, naming `cwd`."""
    hook(agent, START[agent], payload(agent, START[agent], cwd, source=source))
    hook(agent, PROMPT[agent], payload(agent, PROMPT[agent], cwd, prompt=prompt))
    hook(agent, END[agent], payload(agent, END[agent], cwd))


def one_turn_here_then_there(agent: str, here: Path, there: Path) -> None:
    """A session with a prompt in `here`, then resumed in `there` with the secret."""
    one_turn(agent, here, "work in the shop")
    one_turn(agent, there, SECRET, source="resume")


@pytest.mark.parametrize("agent", ["claude", "codex", "copilot"])
def test_a_session_that_goes_on_in_another_repo_is_a_new_session_there(
    agent: str, git_repo: Path, private: Path
) -> None:
    one_turn_here_then_there(agent, git_repo, private)

    sessions = by_repo()
    shop, there = sessions["github.com/acme/shop"], sessions[PRIVATE]
    assert (shop.first_prompt, shop.last_prompt, shop.prompt_count) == (
        "work in the shop",
        "work in the shop",
        1,
    )
    assert (there.first_prompt, there.last_prompt, there.prompt_count) == (SECRET, SECRET, 1)
    assert there.agent_session_id == shop.agent_session_id
    assert there.continued_from == shop.id
    assert there.ended_at is not None
    notes = handoffs()
    assert SECRET not in notes["workstream:github.com/acme/shop#main"]
    assert SECRET in notes[f"workstream:{PRIVATE}#main"]


def test_a_session_still_open_when_it_moves_is_closed_where_it_was(
    git_repo: Path, private: Path
) -> None:
    hook("codex", "UserPromptSubmit", payload("codex", "UserPromptSubmit", git_repo))
    hook("codex", "UserPromptSubmit", payload("codex", "UserPromptSubmit", private, prompt=SECRET))

    sessions = by_repo()
    assert sessions["github.com/acme/shop"].end_reason == "moved"
    assert sessions[PRIVATE].ended_at is None
    assert SECRET not in handoffs()["workstream:github.com/acme/shop#main"]


def test_what_is_typed_in_a_repo_with_delivery_off_never_reaches_the_first_repos_pack(
    git_repo: Path, private: Path, tmp_path: Path
) -> None:
    config = tmp_path / "home" / ".config" / "kenning" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[memory.repos."{PRIVATE}"]\ndeliver = false\n', encoding="utf-8")
    one_turn_here_then_there("copilot", git_repo, private)

    pack = ken_proc("pack", "--for", "claude", cwd=git_repo)
    handed = ken_proc("handoff", "--to", "claude", "--print", cwd=git_repo)

    assert pack.returncode == handed.returncode == 0, (pack.stderr, handed.stderr)
    assert "work in the shop" in pack.stdout
    assert "PRIVATEPLAN" not in pack.stdout + handed.stdout


def test_a_payload_naming_where_the_session_began_is_recorded_where_the_agent_works(
    git_repo: Path, private: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copilot's `--resume=ID` in another repo sends the folder the session began in: the
    agent's process, working in the other repo, says where the work is."""
    one_turn("copilot", git_repo, "work in the shop")
    agent = subprocess.Popen(["sleep", "120"], cwd=private)
    monkeypatch.setattr(sessions_mod, "process_chain", lambda *a, **k: [(agent.pid, "copilot")])
    try:
        one_turn("copilot", git_repo, SECRET, source="resume")
    finally:
        agent.kill()
        agent.wait()

    sessions = by_repo()
    assert sessions[PRIVATE].last_prompt == SECRET
    assert sessions["github.com/acme/shop"].last_prompt == "work in the shop"
    assert SECRET not in handoffs()["workstream:github.com/acme/shop#main"]


def test_a_payload_in_a_repo_from_an_agent_working_in_no_repo_is_not_recorded(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No place to tell: the agent works outside any repo, and the payload names a repo
    folder outside the agent's (a hook run by hand)."""
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    agent = subprocess.Popen(["sleep", "120"], cwd=nowhere)
    monkeypatch.setattr(sessions_mod, "process_chain", lambda *a, **k: [(agent.pid, "claude")])
    try:
        hook("claude", "UserPromptSubmit", payload("claude", "UserPromptSubmit", git_repo))
    finally:
        agent.kill()
        agent.wait()

    assert by_repo() == {}
