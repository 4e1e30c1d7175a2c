"""The harness end to end: real agent CLIs, offline, against the stub model servers.

Each CLI gets a probe hook on every event of one turn (OpenCode, which has no command
hooks, a probe plugin).  The probe logs its stdin payload and prints a marker; the test
checks that the markers reach the model request the stub recorded, that the events ran in
the documented order and that the payloads carry the documented fields.  With
``KEN_RECORD_FIXTURES=1`` the payloads are written to ``tests/fixtures/hooks``; otherwise
their field names are compared with the recorded ones. OpenCode's and Copilot's probed
turn also calls a tool that does not exist, and the round trip of its failed result is
checked in the same run (their CLIs are the slow ones to start); the others' round trips
have runs of their own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from . import harness
from .harness import HookProbe, Sandbox
from .stubs import (
    AnthropicStub,
    GeminiStub,
    OpenAIChatStub,
    OpenAIResponsesStub,
    Text,
    ToolCall,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks"
RECORD = os.environ.get("KEN_RECORD_FIXTURES") == "1"
PROMPT = "Say hello to the kenning harness."
FINAL = "Harness turn complete."

agents = pytest.mark.agents


def check_fixtures(agent: str, probe: HookProbe, box: Sandbox) -> None:
    """Record the payloads (KEN_RECORD_FIXTURES=1) or compare their fields with the record."""
    folder = FIXTURES / agent
    seen: set[str] = set()
    for event, payload in probe.calls():
        if event in seen:
            continue
        seen.add(event)
        clean = harness.sanitize(payload, box, {probe.token: "TOKEN"})
        path = folder / f"{event}.json"
        if RECORD:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(clean, indent=2, ensure_ascii=False) + "\n")
            continue
        assert path.exists(), f"no fixture {path}; run with KEN_RECORD_FIXTURES=1"
        recorded = json.loads(path.read_text())
        assert sorted(clean) == sorted(recorded), f"{agent} {event} payload fields changed"


def check_common(payload: dict[str, Any], event: str, box: Sandbox) -> None:
    assert payload["hook_event_name"] == event
    assert payload["session_id"]
    assert Path(payload["cwd"]).resolve() == box.repo.resolve()
    assert Path(payload["transcript_path"]).is_relative_to(box.home)


def same_session(probe: HookProbe) -> None:
    sessions = {payload["session_id"] for _, payload in probe.calls()}
    assert len(sessions) == 1, sessions


# ----------------------------------------------------------------------------- claude


@agents
def test_claude_hooks_reach_the_model(
    claude_box: Sandbox, anthropic_stub: AnthropicStub, probe: HookProbe
) -> None:
    modes = {"SessionStart": "text", "UserPromptSubmit": "context"}
    order = ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]
    for event in order:
        harness.add_claude_hook(claude_box, event, probe.command(event, modes.get(event, "silent")))
    anthropic_stub.queue(Text(FINAL))

    done = harness.run_claude(claude_box, PROMPT, timeout=90)

    assert done.returncode == 0, done.stderr
    assert FINAL in done.stdout
    [request] = anthropic_stub.model_requests()
    assert request.body["stream"] is True
    text = anthropic_stub.all_request_text()
    assert probe.marker("SessionStart") in text
    assert probe.marker("UserPromptSubmit") in text
    assert probe.events() == order
    same_session(probe)
    for event in order:
        check_common(probe.payload(event), event, claude_box)
    assert probe.payload("SessionStart")["source"] == "startup"
    assert probe.payload("UserPromptSubmit")["prompt"] == PROMPT
    assert probe.payload("Stop")["last_assistant_message"] == FINAL
    assert probe.payload("Stop")["stop_hook_active"] is False
    assert probe.payload("SessionEnd")["reason"]
    check_fixtures("claude", probe, claude_box)


@agents
def test_claude_tool_call_round_trip(claude_box: Sandbox, anthropic_stub: AnthropicStub) -> None:
    # No MCP server: the CLI answers the unknown tool with an error tool_result, which is
    # enough to prove the stub's tool_use stream is understood.
    anthropic_stub.queue(ToolCall("mcp__absent__probe", {"q": 1}, call_id="toolu_k1"), Text(FINAL))

    done = harness.run_claude(claude_box, PROMPT, timeout=90)

    assert done.returncode == 0, done.stderr
    assert FINAL in done.stdout
    first, second = anthropic_stub.model_requests()
    results = [
        block
        for message in second.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert [block["tool_use_id"] for block in results] == ["toolu_k1"]
    assert "mcp__absent__probe" in json.dumps(results)


# ----------------------------------------------------------------------------- codex


@agents
def test_codex_hooks_reach_the_model(
    codex_box: Sandbox, openai_stub: OpenAIResponsesStub, probe: HookProbe
) -> None:
    modes = {"SessionStart": "text", "UserPromptSubmit": "context"}
    order = ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]
    for event in order:
        harness.add_codex_hook(codex_box, event, probe.command(event, modes.get(event, "silent")))
    openai_stub.queue(Text(FINAL))

    done = harness.run_codex(codex_box, PROMPT, timeout=90)

    assert done.returncode == 0, done.stderr
    assert harness.codex_messages(done.stdout) == [FINAL]
    [request] = openai_stub.model_requests()
    developer = [
        part.get("text", "")
        for item in request.body["input"]
        if item.get("role") == "developer"
        for part in item.get("content", [])
    ]
    # Each hook's context arrives as its own developer message.
    assert probe.marker("SessionStart") in developer
    assert probe.marker("UserPromptSubmit") in developer
    assert probe.events() == order
    same_session(probe)
    for event in order:
        payload = probe.payload(event)
        check_common(payload, event, codex_box)
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert probe.payload(event)["model"] == harness.CODEX_MODEL
    assert probe.payload("SessionStart")["source"] == "startup"
    assert probe.payload("SessionStart")["permission_mode"]
    turn = probe.payload("UserPromptSubmit")["turn_id"]
    assert turn
    assert probe.payload("Stop")["turn_id"] == turn
    assert probe.payload("UserPromptSubmit")["prompt"] == PROMPT
    assert probe.payload("Stop")["last_assistant_message"] == FINAL
    assert probe.payload("SessionEnd")["reason"]
    check_fixtures("codex", probe, codex_box)


@agents
def test_codex_skips_untrusted_hooks(
    codex_box: Sandbox, openai_stub: OpenAIResponsesStub, probe: HookProbe
) -> None:
    harness.add_codex_hook(
        codex_box, "SessionStart", probe.command("SessionStart", "text"), trust=False
    )

    done = harness.run_codex(codex_box, PROMPT, timeout=90)

    assert done.returncode == 0, done.stderr
    assert probe.events() == []
    assert probe.marker("SessionStart") not in openai_stub.all_request_text()
    # ...and trusting it afterwards (what a test of `ken integrate` output would do) works.
    assert len(harness.trust_codex_hooks(codex_box)) == 1
    done = harness.run_codex(codex_box, PROMPT, timeout=90)
    assert done.returncode == 0, done.stderr
    assert probe.events() == ["SessionStart"]
    assert probe.marker("SessionStart") in openai_stub.all_request_text()


@agents
def test_codex_tool_call_round_trip(codex_box: Sandbox, openai_stub: OpenAIResponsesStub) -> None:
    openai_stub.queue(ToolCall("mcp__absent__probe", {"q": 1}, call_id="call_k1"), Text(FINAL))

    done = harness.run_codex(codex_box, PROMPT, timeout=90)

    assert done.returncode == 0, done.stderr
    assert harness.codex_messages(done.stdout) == [FINAL]
    first, second = openai_stub.model_requests()
    outputs = [i for i in second.body["input"] if i.get("type") == "function_call_output"]
    assert [item["call_id"] for item in outputs] == ["call_k1"]
    calls = [i for i in second.body["input"] if i.get("type") == "function_call"]
    assert [(c["namespace"], c["name"]) for c in calls] == [("mcp__absent", "probe")]


# ----------------------------------------------------------------------------- gemini

GEMINI_ORDER = [
    "SessionStart",
    "BeforeAgent",
    "PreCompress",
    "BeforeModel",
    "BeforeToolSelection",
    "AfterModel",
    "AfterAgent",
    "SessionEnd",
]


@agents
def test_gemini_hooks_reach_the_model(
    gemini_box: Sandbox, gemini_stub: GeminiStub, probe: HookProbe
) -> None:
    for event in GEMINI_ORDER:
        mode = "context" if event in ("SessionStart", "BeforeAgent") else "empty"
        harness.add_gemini_hook(gemini_box, event, probe.command(event, mode))
    gemini_stub.queue(Text(FINAL))

    done = harness.run_gemini(gemini_box, PROMPT, timeout=90)

    assert done.returncode == 0, done.stderr
    assert FINAL in done.stdout
    [request] = gemini_stub.model_requests()
    assert request.route.endswith(f"/models/{harness.GEMINI_MODEL}:streamGenerateContent")
    text = gemini_stub.all_request_text()
    assert f"<hook_context>{probe.marker('SessionStart')}</hook_context>" in text
    assert probe.marker("BeforeAgent") in text
    assert probe.events() == GEMINI_ORDER
    same_session(probe)
    for event in GEMINI_ORDER:
        check_common(probe.payload(event), event, gemini_box)
        assert probe.payload(event)["timestamp"]
    assert probe.payload("SessionStart")["source"] == "startup"
    assert probe.payload("BeforeAgent")["prompt"].endswith(PROMPT)
    assert probe.payload("BeforeModel")["llm_request"]["model"] == harness.GEMINI_MODEL
    assert probe.payload("AfterAgent")["prompt_response"] == FINAL
    assert probe.payload("SessionEnd")["reason"]
    check_fixtures("gemini", probe, gemini_box)


@agents
def test_gemini_tool_call_round_trip(gemini_box: Sandbox, gemini_stub: GeminiStub) -> None:
    gemini_stub.queue(ToolCall("mcp_absent_probe", {"q": 1}), Text(FINAL))

    done = harness.run_gemini(gemini_box, PROMPT, timeout=90)

    assert done.returncode == 0, done.stderr
    assert FINAL in done.stdout
    first, second = gemini_stub.model_requests()
    responses = [
        part["functionResponse"]
        for content in second.body["contents"]
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
    assert [r["name"] for r in responses] == ["mcp_absent_probe"]


# ----------------------------------------------------------------------------- opencode


def chat_text(message: dict[str, Any]) -> str:
    """A Chat Completions message's text, whether its content is a string or parts."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content)
    return str(content or "")


@agents
def test_opencode_plugin_hooks_reach_the_model_and_a_tool_call_round_trips(
    opencode_box: Sandbox, chat_stub: OpenAIChatStub, probe: HookProbe
) -> None:
    harness.opencode_probe_plugin(opencode_box, probe)
    chat_stub.queue(ToolCall("absent_probe", {"q": 1}, call_id="call_k1"), Text(FINAL))

    done = harness.run_opencode(opencode_box, PROMPT, timeout=120)

    assert done.returncode == 0, done.stderr[-4000:]
    assert FINAL in done.stdout
    # The title request (no tools) comes first and does not use up the script.
    titles = [r for r in chat_stub.requests if r.reply is None]
    assert len(titles) == 1 and not titles[0].body.get("tools")
    request, second = chat_stub.model_requests()
    assert request.body["stream"] is True
    messages = request.body["messages"]
    system = [chat_text(m) for m in messages if m["role"] == "system"]
    # The system transform's text becomes a system message of its own.
    assert probe.marker("system.transform") in system
    [user] = [m for m in messages if m["role"] == "user"]
    # The part pushed in chat.message follows the prompt in the same user message.
    texts = [part["text"] for part in user["content"]]
    assert texts == [PROMPT, probe.marker("chat.message")]
    events = probe.events()
    assert events.index("session.created") < events.index("chat.message")
    assert events.index("chat.message") < events.index("system.transform")
    assert events[-1] == "session.idle"
    created = probe.payload("session.created")["input"]
    session = created["info"]["id"]
    assert session.startswith("ses_")
    assert Path(created["info"]["directory"]).resolve() == opencode_box.repo.resolve()
    chat = probe.payload("chat.message")
    assert chat["input"]["sessionID"] == session
    assert chat["message"]["sessionID"] == session
    assert probe.payload("system.transform")["input"]["sessionID"] == session
    assert probe.payload("session.idle")["input"]["sessionID"] == session
    check_fixtures("opencode", probe, opencode_box)
    # The tool call went back to the model with its (failed) result.
    calls = [m for m in second.body["messages"] if m.get("tool_calls")]
    assert [c["tool_calls"][0]["id"] for c in calls] == ["call_k1"]
    results = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["call_k1"]
    after = probe.payload("tool.execute.after")
    assert (after["input"]["callID"], after["input"]["sessionID"]) == ("call_k1", session)


# ----------------------------------------------------------------------------- copilot

COPILOT_ORDER = ["sessionStart", "userPromptSubmitted", "agentStop", "sessionEnd"]


@agents
def test_copilot_hooks_reach_the_model_and_a_tool_call_round_trips(
    copilot_box: Sandbox, chat_stub: OpenAIChatStub, probe: HookProbe
) -> None:
    for event in COPILOT_ORDER:
        mode = "additional" if event in ("sessionStart", "userPromptSubmitted") else "silent"
        harness.add_copilot_hook(copilot_box, event, probe.command(event, mode))
    chat_stub.queue(ToolCall("absent-probe", {"q": 1}, call_id="call_k1"), Text(FINAL))

    done = harness.run_copilot(copilot_box, PROMPT, timeout=120)

    assert done.returncode == 0, done.stderr[-4000:]
    assert FINAL in done.stdout
    request, second = chat_stub.model_requests()
    messages = request.body["messages"]
    assert messages[0]["role"] == "system"
    # sessionStart's context is a user message of its own, before the prompt...
    assert messages[1] == {"role": "user", "content": probe.marker("sessionStart")}
    # ...and userPromptSubmitted's is a reminder appended to the prompt.
    prompt = chat_text(messages[2])
    assert PROMPT in prompt
    reminder = f"<system_reminder>\n{probe.marker('userPromptSubmitted')}\n</system_reminder>"
    assert prompt.endswith(reminder)
    # sessionStart and userPromptSubmitted run at the same time: either may log first.
    assert sorted(probe.events()[:2]) == sorted(COPILOT_ORDER[:2])
    assert probe.events()[2:] == COPILOT_ORDER[2:]
    sessions = {payload["sessionId"] for _, payload in probe.calls()}
    assert len(sessions) == 1, sessions
    for event in COPILOT_ORDER:
        payload = probe.payload(event)
        assert Path(payload["cwd"]).resolve() == copilot_box.repo.resolve()
        assert isinstance(payload["timestamp"], int)
    assert probe.payload("sessionStart")["source"] == "new"
    assert probe.payload("sessionStart")["initialPrompt"] == PROMPT
    assert probe.payload("userPromptSubmitted")["prompt"] == PROMPT
    transcript = Path(probe.payload("agentStop")["transcriptPath"])
    assert transcript.is_relative_to(copilot_box.home / ".copilot" / "session-state")
    assert probe.payload("sessionEnd")["reason"] == "complete"
    check_fixtures("copilot", probe, copilot_box)
    # The tool call went back to the model with its (failed) result.
    results = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["call_k1"]


# ----------------------------------------------------------------------------- harness


def test_sandbox_env_is_minimal_and_explicit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "real-key-must-not-leak")
    monkeypatch.setenv("OPENAI_API_KEY", "real-key-must-not-leak")
    monkeypatch.setenv("GEMINI_API_KEY", "real-key-must-not-leak")
    boxes = [
        harness.prepare_claude(tmp_path / "c", "http://127.0.0.1:1"),
        harness.prepare_codex(tmp_path / "x", "http://127.0.0.1:2"),
        harness.prepare_gemini(tmp_path / "g", "http://127.0.0.1:3"),
        harness.prepare_opencode(tmp_path / "o", "http://127.0.0.1:4"),
        harness.prepare_copilot(tmp_path / "p", "http://127.0.0.1:5"),
    ]
    for box in boxes:
        assert "real-key-must-not-leak" not in box.env.values()
        for key in ("HOME", "TMPDIR", "CODEX_HOME", "KEN_DB") + tuple(
            k for k in box.env if k.startswith("XDG_")
        ):
            assert Path(box.env[key]).is_relative_to(box.root), key
        assert box.env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)
        log = subprocess.run(
            ["git", "log", "--oneline"],
            cwd=box.repo,
            env=box.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert len(log.stdout.splitlines()) == 1
    claude, codex, gemini, opencode, copilot = boxes
    assert json.loads(claude.claude_settings.read_text()) == {}
    assert claude.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:1"
    assert 'base_url = "http://127.0.0.1:2/v1"' in codex.codex_config.read_text()
    assert codex.env[harness.CODEX_KEY_VAR]
    settings = json.loads(gemini.gemini_settings.read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert gemini.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:3"
    config = json.loads(opencode.opencode_config.read_text())
    assert config["provider"]["stub"]["options"]["baseURL"] == "http://127.0.0.1:4/v1"
    # A lockfile naming the plugin package keeps OpenCode from running npm at start.
    lock = json.loads((opencode.opencode_dir / "package-lock.json").read_text())
    package = json.loads((opencode.opencode_dir / "package.json").read_text())
    assert lock["packages"][""]["dependencies"] == package["dependencies"]
    assert (opencode.opencode_dir / "node_modules").is_dir()
    assert copilot.env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:5/v1"
    assert copilot.env["COPILOT_OFFLINE"] == "true"


def test_ken_resolves_from_the_sandbox_path(tmp_path: Path) -> None:
    box = harness.prepare_claude(tmp_path, "http://127.0.0.1:1")
    venv_ken = Path(sys.executable).parent / "ken"
    if not venv_ken.exists():
        pytest.skip("ken is not installed next to this interpreter")
    assert shutil.which("ken", path=box.env["PATH"]) == str(venv_ken)


def test_codex_trust_entries(tmp_path: Path) -> None:
    box = harness.prepare_codex(tmp_path, "http://127.0.0.1:1")
    harness.add_codex_hook(box, "SessionStart", "echo one", timeout=30)
    harness.add_codex_hook(box, "SessionEnd", "echo two", timeout=None)
    config = box.codex_config.read_text()
    assert config.count(harness.TRUST_BEGIN) == 1
    assert f'[hooks.state."{box.codex_hooks}:session_start:0:0"]' in config
    assert f'[hooks.state."{box.codex_hooks}:session_end:0:0"]' in config
    expected = harness.codex_hook_hash("SessionEnd", {"command": "echo two"})
    assert f'trusted_hash = "{expected}"' in config
    # SessionEnd timeouts are clamped to 3 s, and a missing timeout means 600 (so 3 here).
    assert expected == harness.codex_hook_hash("SessionEnd", {"command": "echo two", "timeout": 3})
    assert harness.codex_hook_hash("Stop", {"command": "x"}) == harness.codex_hook_hash(
        "Stop", {"command": "x", "timeout": 600}
    )


def test_install_without_npm_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(harness.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(harness.AgentUnavailable, match="npm"):
        harness.install("codex")


def test_install_failure_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    npm = fake / "npm"
    npm.write_text("#!/bin/sh\necho 'registry says no' >&2\nexit 1\n")
    npm.chmod(0o755)
    monkeypatch.setenv(harness.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}/usr/bin{os.pathsep}/bin")
    with pytest.raises(harness.AgentInstallError, match="registry says no"):
        harness.install("codex")
    assert not (harness.install_dir("codex") / ".kenning-installed").exists()


def test_install_reuses_a_finished_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    npm = fake / "npm"
    npm.write_text("#!/bin/sh\nexit 1\n")  # would fail if it were called
    npm.chmod(0o755)
    monkeypatch.setenv(harness.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}/usr/bin{os.pathsep}/bin")
    binary = harness.install_dir("codex") / harness.AGENTS["codex"].binary
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    (harness.install_dir("codex") / ".kenning-installed").write_text("done\n")
    assert harness.install("codex") == binary


@pytest.mark.timeout(30)  # waiting for the child's `sleep 60` fails the test
def test_run_bounded_kills_the_group_on_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pid_file}; echo started; wait"
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        harness.run_bounded(["bash", "-c", script], tmp_path, {"PATH": "/usr/bin:/bin"}, 1.0)
    assert "started" in str(caught.value.output)
    assert_gone(int(pid_file.read_text()))


@pytest.mark.timeout(30)  # waiting for the leftover `sleep 60` fails the test
def test_run_bounded_does_not_wait_for_leftovers(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pid_file}; echo done"
    done = harness.run_bounded(["bash", "-c", script], tmp_path, {"PATH": "/usr/bin:/bin"}, 30)
    assert (done.returncode, done.stdout) == (0, "done\n")
    assert_gone(int(pid_file.read_text()))


def assert_gone(pid: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"):
            return  # a zombie waiting for init to reap it is gone enough
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still running")
