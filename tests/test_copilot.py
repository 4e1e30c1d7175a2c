"""GitHub Copilot CLI (kenning.agents.copilot) without the CLI: the hook file and MCP
entry `ken integrate copilot` writes and takes out, Copilot's recorded payloads through
`ken hook`, bad payloads, and reading its events.jsonl. tests/agents/test_copilot.py
runs all of it in the real Copilot CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken
from helpers import add
from kenning import agentenv, agents, handoff, integrate, sessions
from kenning.agents import copilot
from kenning.agents.agent import BadPayload, Event
from kenning.recall import HEADER as RECALL_HEADER
from kenning.transcripts import conversation, last_model, user_turns

FIXTURES = Path(__file__).parent / "fixtures"
PAYLOADS = FIXTURES / "hooks" / "copilot"
TRANSCRIPT = FIXTURES / "transcripts" / "copilot" / "tool-call-and-continue.jsonl"
PLACEHOLDER = "/tmp/SANDBOX"
EVENTS = ("sessionStart", "userPromptSubmitted", "preCompact", "sessionEnd")
SESSION = "fb6476b7-2ebd-4a91-bc02-07b9bcca7f97"  # the recorded payloads' session
REPO = "repo:github.com/acme/shop"


def copilot_home() -> Path:
    return Path(os.environ["HOME"]) / ".copilot"


def hook_file() -> Path:
    return copilot_home() / "hooks" / "kenning.json"


def mcp_config() -> Path:
    return copilot_home() / "mcp-config.json"


def integrate_json(*args: str) -> list[dict[str, Any]]:
    result = ken("integrate", "copilot", *args, "--json")
    assert result.exit_code == 0, result.output
    changes: list[dict[str, Any]] = json.loads(result.output)
    return changes


def recorded(event: str, repo: Path, **changes: Any) -> dict[str, Any]:
    """A payload Copilot sent, its sandbox moved to `repo` and its HOME."""
    text = (PAYLOADS / f"{event}.json").read_text(encoding="utf-8")
    text = text.replace(f"{PLACEHOLDER}/project", str(repo))
    text = text.replace(f"{PLACEHOLDER}/home", os.environ["HOME"])
    data: dict[str, Any] = json.loads(text)
    return {**data, **changes}


def hook(event: str, payload: Any) -> subprocess.CompletedProcess[str]:
    """`ken hook EVENT --agent copilot`, as Copilot's hook file runs it."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [str(KEN_BIN), "hook", event, "--agent", "copilot"],
        input=data,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        start_new_session=True,
    )


def context(done: subprocess.CompletedProcess[str]) -> str:
    """The additionalContext of a hook's answer: the one form Copilot reads."""
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert set(answer) == {"additionalContext"}, answer
    return str(answer["additionalContext"])


def log_lines() -> list[str]:
    path = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# ----------------------------------------------------------------------------- hooks file


def test_integrate_writes_kennings_own_hook_file_for_four_events() -> None:
    [change] = integrate_json()
    assert change["action"] == "installed" and change["path"] == str(hook_file())
    assert change["commands"] == {e: integrate.hook_command("copilot", e) for e in EVENTS}
    assert json.loads(hook_file().read_text()) == {
        "version": 1,
        "hooks": {
            "sessionStart": [
                {"type": "command", "bash": change["commands"]["sessionStart"], "timeoutSec": 15}
            ],
            "userPromptSubmitted": [
                {
                    "type": "command",
                    "bash": change["commands"]["userPromptSubmitted"],
                    "timeoutSec": 10,
                }
            ],
            "preCompact": [
                {"type": "command", "bash": change["commands"]["preCompact"], "timeoutSec": 10}
            ],
            "sessionEnd": [
                {"type": "command", "bash": change["commands"]["sessionEnd"], "timeoutSec": 3}
            ],
        },
    }
    assert integrate.installed_commands("copilot") == change["commands"]


def test_integrate_twice_changes_nothing_and_keeps_no_backup() -> None:
    integrate_json()
    first = hook_file().read_bytes()
    [change] = integrate_json()
    assert change["action"] == "unchanged"
    assert hook_file().read_bytes() == first
    assert sorted(p.name for p in hook_file().parent.iterdir()) == ["kenning.json"]


def test_remove_deletes_kennings_file_and_nothing_of_the_persons() -> None:
    theirs = hook_file().with_name("lint.json")
    theirs.parent.mkdir(parents=True)
    mine = {"version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "make lint"}]}}
    theirs.write_text(json.dumps(mine))
    settings = copilot_home() / "settings.json"
    settings.write_text('{"model": "gpt-5.6-sol"}\n')
    integrate_json()
    assert json.loads(theirs.read_text()) == mine
    [change] = integrate_json("--remove")
    assert change["action"] == "removed"
    assert not hook_file().exists()
    assert json.loads(theirs.read_text()) == mine
    assert settings.read_text() == '{"model": "gpt-5.6-sol"}\n'
    [again] = integrate_json("--remove")
    assert again["action"] == "absent"


def test_a_hook_file_of_that_name_that_is_not_kennings_is_not_removed() -> None:
    hook_file().parent.mkdir(parents=True)
    for text in ('{"version": 1, "hooks": {"sessionEnd": [{"bash": "notify-send bye"}]}}', "{oops"):
        hook_file().write_text(text)
        [change] = integrate_json("--remove")
        assert change["action"] == "absent"
        assert hook_file().read_text() == text


def test_copilot_home_moves_the_hook_file_and_the_mcp_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))
    hooks, server = integrate_json("--mcp")
    assert hooks["path"] == str(tmp_path / "copilot-home" / "hooks" / "kenning.json")
    assert server["path"] == str(tmp_path / "copilot-home" / "mcp-config.json")
    assert not copilot_home().exists()


def test_a_moved_ken_is_written_anew_and_doctor_sees_a_gone_one(tmp_path: Path) -> None:
    gone = str(tmp_path / "old-venv" / "bin" / "ken")
    integrate.install("copilot", ken=gone)
    checks = {c["name"]: c for c in json.loads(ken("doctor", "--json").output)["agents"]["copilot"]}
    assert checks["copilot hooks"]["detail"] == f"4 of 4 events in {hook_file()}"
    assert checks["copilot userPromptSubmitted"]["ok"] is False
    assert "ken integrate copilot" in checks["copilot userPromptSubmitted"]["fix"]
    [change] = integrate_json()
    assert change["action"] == "installed" and gone not in hook_file().read_text()
    checks = {c["name"]: c for c in json.loads(ken("doctor", "--json").output)["agents"]["copilot"]}
    assert all(c["ok"] for c in checks.values()), checks


def test_doctor_names_kenning_hooks_written_by_hand_beside_kenning_json() -> None:
    """Copilot's docs lead people to write a hook in settings.json; with `ken integrate
    copilot` beside it both ran, every prompt was recorded twice, and doctor said 4 of 4."""
    integrate.install("copilot")
    settings = copilot_home() / "settings.json"
    mine = {"hooks": {"userPromptSubmitted": [{"bash": "ken hook userPromptSubmitted"}]}}
    settings.write_text(json.dumps(mine))
    (copilot_home() / "hooks" / "other.json").write_text(
        json.dumps({"version": 1, "hooks": {"sessionStart": [{"bash": "echo hi"}]}})
    )
    report = json.loads(ken("doctor", "--json").output)["agents"]["copilot"]
    checks = {c["name"]: c for c in report}
    stray = checks["copilot hooks written by hand"]
    assert stray["ok"] is False and f"{settings} (userPromptSubmitted)" in stray["detail"]
    assert "other.json" not in stray["detail"] and str(hook_file()) in stray["fix"]
    settings.write_text(json.dumps({"hooks": {}}))
    report = json.loads(ken("doctor", "--json").output)["agents"]["copilot"]
    assert "copilot hooks written by hand" not in {c["name"] for c in report}


# ----------------------------------------------------------------------------- MCP


def test_mcp_goes_into_mcp_config_json_and_keeps_the_persons_servers() -> None:
    mine = {
        "mcpServers": {
            "github": {"type": "http", "url": "https://example.invalid/mcp", "tools": ["*"]}
        }
    }
    mcp_config().parent.mkdir(parents=True)
    mcp_config().write_text(json.dumps(mine, indent=2))
    _, server = integrate_json("--mcp")
    assert server["action"] == "installed" and server["path"] == str(mcp_config())
    assert any("--allow-tool=ken" in note for note in server["notes"])
    data = json.loads(mcp_config().read_text())
    assert data["mcpServers"]["github"] == mine["mcpServers"]["github"]
    assert data["mcpServers"]["ken"] == {
        "type": "local",
        "command": integrate.ken_command(),
        "args": ["mcp"],
        "env": {k: os.environ[k] for k in integrate.PASS_ENV},
        "tools": ["*"],
    }
    _, again = integrate_json("--mcp")
    assert again["action"] == "unchanged"
    doctor = json.loads(ken("doctor", "--json").output)["agents"]["copilot"]
    [check] = [c for c in doctor if c["name"] == "copilot mcp"]
    assert check["ok"] and check["detail"].endswith(f"{integrate.ken_command()} mcp")

    _, removed = integrate_json("--mcp", "--remove")
    assert removed["action"] == "removed"
    assert json.loads(mcp_config().read_text()) == mine


def test_an_mcp_config_kenning_cannot_read_is_left_alone() -> None:
    mcp_config().parent.mkdir(parents=True)
    mcp_config().write_text('{"mcpServers": ')
    result = ken("integrate", "copilot", "--mcp")
    assert result.exit_code == 1
    assert "is not valid JSON" in result.output and "fix it by hand" in result.output
    assert mcp_config().read_text() == '{"mcpServers": '


# ----------------------------------------------------------------------------- payloads


def test_recorded_payloads_read_in_the_common_spelling(git_repo: Path) -> None:
    agent = agents.get("copilot")
    events = {name: agent.parse(recorded(name, git_repo), name) for name in (*EVENTS, "agentStop")}
    assert {name: e.event for name, e in events.items()} == {
        "sessionStart": Event.SESSION_START,
        "userPromptSubmitted": Event.PROMPT,
        "preCompact": Event.PRE_COMPACT,
        "sessionEnd": Event.SESSION_END,
        "agentStop": Event.STOP,
    }
    start = events["sessionStart"]
    assert (start.session_id, start.cwd, start.source) == (SESSION, str(git_repo), "startup")
    # No transcript path in sessionStart: it is the session's events.jsonl.
    transcript = str(copilot_home() / "session-state" / SESSION / "events.jsonl")
    assert start.transcript_path == transcript
    assert events["agentStop"].transcript_path == transcript
    assert events["userPromptSubmitted"].prompt == "Say hello to the kenning harness."
    assert events["sessionEnd"].reason == "complete"
    assert all(e.name in (*EVENTS, "agentStop") and e.model is None for e in events.values())
    # A resume gets the pack again: Copilot keeps no earlier session-start context.
    resumed = agent.parse(recorded("sessionStart", git_repo, source="resume"), "sessionStart")
    assert resumed.source == "startup"


def test_claude_style_hook_names_and_payloads_read_too(git_repo: Path) -> None:
    agent = agents.get("copilot")
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": SESSION,
        "timestamp": "2026-12-01T18:51:39.535Z",
        "cwd": str(git_repo),
        "prompt": "why are the tests flaky?",
    }
    event = agent.parse(payload)
    assert (event.event, event.session_id, event.prompt) == (
        Event.PROMPT,
        SESSION,
        "why are the tests flaky?",
    )
    assert agent.event("Stop") is Event.STOP and agent.event("SessionStart") is Event.SESSION_START


def test_a_session_id_that_is_not_a_folder_name_gives_no_transcript(git_repo: Path) -> None:
    agent = agents.get("copilot")
    for bad in ("../../etc", "a/b", ""):
        payload = recorded("sessionStart", git_repo, sessionId=bad)
        assert agent.parse(payload, "sessionStart").transcript_path is None


def test_copilots_payloads_are_recognized_without_agent() -> None:
    assert agents.from_payload({"sessionId": SESSION, "cwd": "/x"}) is agents.get("copilot")
    assert copilot.recognizes(
        {"session_id": "s", "transcriptPath": "/h/.copilot/session-state/s/e"}
    )
    assert not copilot.recognizes({"session_id": "s", "cwd": "/x"})


def test_the_recorded_payloads_get_the_pack_and_recall_as_additional_context(
    git_repo: Path,
) -> None:
    pinned = add("Deploys go through make ship", scope=REPO, pinned=True)
    rule = add(
        "Never retry the flaky payments tests\nQuarantine the payments tests instead.",
        scope=REPO,
        kind="correction",
    )
    pack = context(hook("sessionStart", recorded("sessionStart", git_repo)))
    assert "Deploys go through make ship" in pack and f"[m:{pinned.id[-6:].lower()}]" in pack
    # The pack had room for the correction too: recall does not repeat it...
    prompt = "why are the payments tests flaky? should I retry them?"
    done = hook("userPromptSubmitted", recorded("userPromptSubmitted", git_repo, prompt=prompt))
    assert (done.returncode, done.stdout) == (0, "")
    # ...until a compaction took it out of the context.
    # (preCompact was recorded in a run of its own.)
    compact = recorded("preCompact", git_repo, sessionId=SESSION, transcriptPath=None)
    done = hook("preCompact", compact)
    assert (done.returncode, done.stdout) == (0, "")
    recall = context(
        hook("userPromptSubmitted", recorded("userPromptSubmitted", git_repo, prompt=prompt))
    )
    assert recall.startswith(f"{RECALL_HEADER}\n- (correction) Never retry the flaky payments")
    assert f"[m:{rule.id[-6:].lower()}]" in recall
    done = hook("sessionEnd", recorded("sessionEnd", git_repo))
    assert (done.returncode, done.stdout) == (0, "")
    [ended] = json.loads(ken("sessions", "--all", "--json").output)
    assert (ended["agent"], ended["agent_session_id"]) == ("copilot", SESSION)
    assert ended["first_prompt"] == prompt and ended["prompt_count"] == 2
    assert ended["transcript_path"] == str(
        copilot_home() / "session-state" / SESSION / "events.jsonl"
    )
    assert ended["ended_at"] and ended["end_reason"] == "complete"
    assert log_lines() == []


def test_a_prompt_answered_before_its_session_start_is_not_told_twice(git_repo: Path) -> None:
    """Copilot runs sessionStart and userPromptSubmitted at once: when the prompt's
    recall comes first, the pack leaves out what it told."""
    rule = add(
        "Never retry the flaky payments tests\nQuarantine the payments tests instead.",
        scope=REPO,
        kind="correction",
    )
    prompt = "why are the payments tests flaky? should I retry them?"
    recall = context(
        hook("userPromptSubmitted", recorded("userPromptSubmitted", git_repo, prompt=prompt))
    )
    mark = f"[m:{rule.id[-6:].lower()}]"
    assert mark in recall
    done = hook("sessionStart", recorded("sessionStart", git_repo))
    assert done.returncode == 0 and mark not in done.stdout
    assert log_lines() == []


def test_a_resume_that_drops_the_old_pack_lets_recall_give_its_memories_again(
    git_repo: Path,
) -> None:
    """Copilot rebuilds the session-start context on a resume and keeps no earlier one:
    a memory of the first pack that the new pack has no room for is no longer in the
    session's context, so recall gives it when asked."""
    cron = add("The billing cron runs at 04:15 UTC on host batch7", scope=REPO, kind="fact")
    for n in range(20):
        add(f"Service svc{n} listens on port {8000 + n} behind nginx", scope=REPO, kind="fact")
    cron_mark = f"[m:{cron.id[-6:].lower()}]"
    assert cron_mark in context(hook("sessionStart", recorded("sessionStart", git_repo)))
    for n in range(60):
        add(f"Queue worker qw{n} drains topic orders-{n} every {n + 1} minutes", scope=REPO)
    again = context(hook("sessionStart", recorded("sessionStart", git_repo, source="resume")))
    assert cron_mark not in again  # newer memories took its room
    ask_cron = "when does the billing cron run?"
    recall = context(
        hook("userPromptSubmitted", recorded("userPromptSubmitted", git_repo, prompt=ask_cron))
    )
    assert cron_mark in recall
    told = ken("told", SESSION).output
    assert "a new start pack: what earlier packs told may be recalled again" in told
    assert log_lines() == []


@pytest.mark.parametrize(
    ("event", "stdin"),
    [
        ("userPromptSubmitted", ""),
        ("userPromptSubmitted", '{"sessionId": "s", "cwd": '),
        ("sessionStart", "[1, 2]"),
        ("sessionStart", '{"sessionId": "s", "source": "new"}'),
        ("sessionStart", '{"sessionId": 7, "cwd": "/tmp", "source": "new"}'),
        ("userPromptSubmitted", '{"sessionId": "s", "cwd": "/tmp", "prompt": ["a"]}'),
        ("sessionEnd", '{"sessionId": "never-started", "cwd": "/tmp", "reason": "complete"}'),
    ],
    ids=["empty", "cut-off", "list", "no-cwd", "id-number", "prompt-list", "unknown-session"],
)
def test_a_bad_payload_is_silent_exits_0_and_logs_one_line(event: str, stdin: str) -> None:
    done = hook(event, stdin)
    assert (done.returncode, done.stdout) == (0, "")
    assert "Traceback" not in done.stderr
    [line] = log_lines()
    assert f" copilot {event} " in line
    assert json.loads(ken("sessions", "--all", "--json").output) == []


def test_copilot_is_detected_by_its_markers_and_its_process() -> None:
    assert agentenv.detect_agent({"COPILOT_CLI": "1"}) == "copilot"
    assert agentenv.detect_agent({"COPILOT_AGENT_SESSION_ID": SESSION}) == "copilot"
    assert agents.from_process("copilot") is agents.get("copilot")
    # Its native binary's process is named MainThread: found as its pid, never as the agent.
    assert agents.from_process("MainThread") is None
    chain = [(30, "bash"), (20, "MainThread"), (10, "bash")]
    assert sessions.agent_pid("copilot", chain) == 20


# ----------------------------------------------------------------------------- transcript

TURNS = [
    ("user", "Export the orders as CSV"),
    ("assistant", "There is no export tool; orders.csv is written by hand."),
    ("user", "Now the refunds too"),
    ("assistant", "refunds.csv is written too."),
]


def test_the_events_file_reads_as_the_conversation() -> None:
    turns = conversation("copilot", str(TRANSCRIPT))
    assert [(t.role, t.text) for t in turns] == TURNS
    assert turns[0].at and turns[0].at.startswith("2026-")
    assert user_turns("copilot", str(TRANSCRIPT), limit=1) == ["Now the refunds too"]
    assert last_model("copilot", str(TRANSCRIPT)) == "stub-model"


def test_an_events_file_with_broken_and_foreign_lines_gives_what_it_can(tmp_path: Path) -> None:
    lines = [
        {"type": "session.start", "data": {"selectedModel": "claude-sonnet-5"}},
        {"type": "user.message", "data": {"content": "Add the refunds export"}},
        "{not json",
        [1, 2],
        {"type": "user.message", "data": "not an object"},
        {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "x"}]}},
        {
            "type": "assistant.message",
            "data": {"content": "A sub-agent's words", "parentToolCallId": "t"},
        },
        {"type": "user.message", "data": {"content": "<skill-context>injected</skill-context>"}},
        {"type": "assistant.message", "data": {"content": "Added it.", "model": 42}},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    turns = conversation("copilot", str(path))
    assert [(t.role, t.text) for t in turns] == [
        ("user", "Add the refunds export"),
        ("assistant", "Added it."),
    ]
    assert last_model("copilot", str(path)) == "claude-sonnet-5"
    assert conversation("copilot", str(tmp_path / "missing.jsonl")) == []


def test_an_unreadable_payload_names_its_field() -> None:
    with pytest.raises(BadPayload, match="'prompt' is list"):
        agents.get("copilot").parse({"sessionId": "s", "cwd": "/tmp", "prompt": []}, "x")


# ----------------------------------------------------------------------------- handoff


def test_handoff_starts_copilot_interactive_with_the_pack_or_resumes_its_session(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(git_repo)
    for event in ("sessionStart", "userPromptSubmitted", "sessionEnd"):
        assert hook(event, recorded(event, git_repo)).returncode == 0
    # A later session of another agent, so the handoff goes back to Copilot.
    claude = {"session_id": "claude-1", "cwd": str(git_repo), "source": "startup"}
    for event, extra in (
        ("SessionStart", {}),
        ("UserPromptSubmit", {"prompt": "Export the refunds as CSV"}),
        ("SessionEnd", {"reason": "exit"}),
    ):
        done = subprocess.run(
            [str(KEN_BIN), "hook", event, "--agent", "claude"],
            input=json.dumps({**claude, "hook_event_name": event, **extra}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    fresh = json.loads(ken("handoff", "--to", "copilot", "--json").output)
    # Without its transcript there is nothing to resume: a new interactive session.
    assert fresh["mode"] == "fresh"
    assert fresh["argv"][:2] == ["copilot", "-i"] and len(fresh["argv"]) == 3
    assert fresh["argv"][2].startswith("<kenning-handoff>\n# Continuing from another agent\n")
    assert fresh["argv"][2].endswith(f"\n\n{handoff.DEFAULT_PROMPT}\n</kenning-handoff>")

    events = copilot_home() / "session-state" / SESSION / "events.jsonl"
    events.parent.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, events)
    back = json.loads(ken("handoff", "--to", "copilot", "--model", "gpt-6-sol", "--json").output)
    assert back["mode"] == "resume"
    assert back["argv"][:5] == ["copilot", "--model", "gpt-6-sol", f"--resume={SESSION}", "-i"]
    assert back["argv"][5].startswith("<kenning-handoff>\n# Since your last turn\n")
    assert back["argv"][5].endswith(f"\n\n{handoff.RESUME_PROMPT}\n</kenning-handoff>")
