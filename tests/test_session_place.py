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


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def all_sessions() -> list[Session]:
    with opened() as store:
        return store.list_sessions(SessionQuery(limit=None))


def prompt_in(cwd: Path, text: str, agent: str = "claude") -> None:
    hook(agent, PROMPT[agent], payload(agent, PROMPT[agent], cwd, prompt=text))


def test_a_repo_given_an_origin_during_a_session_is_the_same_place(
    git_repo: Path, tmp_path: Path
) -> None:
    """Its key changes (its path, then its origin), the checkout does not: one session,
    under the key the repo has now, so its handoff lands where its next session looks."""
    git(git_repo, "remote", "remove", "origin")
    prompt_in(git_repo, "before the origin")
    git(git_repo, "remote", "add", "origin", "https://github.com/acme/shop.git")
    prompt_in(git_repo, "after the origin")
    hook("claude", "SessionEnd", payload("claude", "SessionEnd", git_repo))

    [session] = all_sessions()
    assert (session.prompt_count, session.end_reason) == (2, "other")
    assert (session.repo, session.workstream) == (
        "github.com/acme/shop",
        "github.com/acme/shop#main",
    )
    assert "before the origin" in handoffs()["workstream:github.com/acme/shop#main"]


def test_a_folder_made_a_repo_during_a_session_is_the_same_place(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    prompt_in(folder, "before git init")
    git(folder, "init", "-q", "-b", "main")
    prompt_in(folder, "after git init")

    [session] = all_sessions()
    assert session.prompt_count == 2
    assert session.repo is not None and session.repo.endswith("plain")


def test_a_session_begun_in_a_plain_folder_goes_on_in_the_repos_inside_it(
    git_repo: Path, tmp_path: Path
) -> None:
    """A workspace folder holding repos: the agent's `cd` into one and back is one
    session, as it was before sessions belonged to a place."""
    for folder in (tmp_path, git_repo, tmp_path, git_repo / "sub"):
        folder.mkdir(exist_ok=True)
        prompt_in(folder, f"work in {folder.name}")

    [session] = all_sessions()
    assert (session.prompt_count, session.repo, session.cwd) == (4, None, str(tmp_path))
    assert session.ended_at is None


def test_a_withheld_repo_inside_a_plain_folder_is_a_place_of_its_own(
    git_repo: Path, private: Path, tmp_path: Path
) -> None:
    """What is typed in a `deliver = false` repo is that repo's session's only, even when
    the session began in the plain folder around it; the other repo inside stays the
    folder's."""
    config = tmp_path / "home" / ".config" / "kenning" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[memory.repos."{PRIVATE}"]\ndeliver = false\n', encoding="utf-8")
    prompt_in(tmp_path, "plan the week")
    prompt_in(private, SECRET)
    prompt_in(tmp_path, "back in the folder")
    prompt_in(git_repo, "work in the shop")

    found = all_sessions()
    [there] = [s for s in found if s.repo == PRIVATE]
    assert (there.first_prompt, there.prompt_count, there.end_reason) == (SECRET, 1, "moved")
    for session in found:
        if session is not there:
            assert session.repo is None
            assert SECRET not in (session.first_prompt or "") + (session.last_prompt or "")
    assert sum(s.prompt_count for s in found if s is not there) == 3


def test_an_agents_session_id_names_every_place_its_session_went_on_in(
    git_repo: Path, private: Path
) -> None:
    """After a move one agent session id names two kenning sessions: `told` shows both in
    order, `lessons` both, `forget --session` forgets both; none asks for more characters
    of an id given whole."""
    one_turn_here_then_there("codex", git_repo, private)
    first, then = sorted(all_sessions(), key=lambda s: s.started_at)
    agent_id = first.agent_session_id
    assert agent_id and then.agent_session_id == agent_id

    told = ken_proc("told", agent_id, "--json", cwd=git_repo)
    assert told.returncode == 0, told.stderr
    shown = json.loads(told.stdout)
    assert shown["session"]["id"] == then.id
    assert [s["id"] for s in shown["continued_from"]] == [first.id]
    assert first.id in {d["session"] for d in shown["deliveries"]}  # the first place's pack
    text = ken_proc("told", agent_id, cwd=git_repo).stdout
    assert text.index(first.id[-6:].lower()) < text.index(then.id[-6:].lower())
    assert ken_proc("lessons", "--session", agent_id, cwd=git_repo).returncode == 0
    with opened() as store:
        assert sessions_mod.resolve(store, agent_id).id == then.id

    forgot = ken_proc("forget", "--session", agent_id, "--yes", cwd=git_repo)
    assert forgot.returncode == 0, forgot.stderr
    assert all_sessions() == []


def test_an_agent_session_id_two_agents_share_asks_for_a_kenning_id(git_repo: Path) -> None:
    prompt_in(git_repo, "one", agent="claude")
    data = payload("codex", PROMPT["codex"], git_repo, prompt="two")
    data["session_id"] = payload("claude", PROMPT["claude"], git_repo)["session_id"]
    hook("codex", PROMPT["codex"], data)

    told = ken_proc("told", data["session_id"], cwd=git_repo)
    assert told.returncode == 1 and "matches 2 sessions" in told.stderr
    assert "more characters" not in told.stderr and "kenning id" in told.stderr
