"""Run lessons end to end in the real Claude Code, Codex and Gemini CLIs, offline.

Each test installs what `ken integrate <agent> --mcp` writes (Codex: `--trust` too) and
runs one prompt against a stub model. A prompt that corrects the agent makes the Stop
hook (Gemini: AfterAgent) ask, once, for a reflection, quoting the prompt; the stub then
calls `record_reflection` over MCP, and the lesson is stored as proposed in the repo with
the quote as evidence, while a lesson whose quote the person never wrote is dropped and
logged. The next Stop, with the agent's "already continuing" flag set, asks nothing. That
a prompt with no signal is never asked is checked on the run of test_ken_hooks.py's
memories-waiting test (one agent run fewer per CLI).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kenning import where as where_mod
from kenning.lessons import ASK_MARK
from kenning.store import ItemQuery, SessionQuery, open_store

from . import harness
from .harness import Sandbox
from .stubs import StubServer, Text, ToolCall

KEN = Path(sys.executable).with_name("ken")
PROMPT = "No, don't use npm here — we use pnpm. Install the dependencies."
QUOTE = "No, don't use npm here — we use pnpm."
LESSON = "Use pnpm, not npm, in this repo"
INVENTED = "Deploy on Fridays"
STUBS = {"claude": "anthropic_stub", "codex": "openai_stub", "gemini": "gemini_stub"}
RUN = {"claude": harness.run_claude, "codex": harness.run_codex, "gemini": harness.run_gemini}

pytestmark = [
    pytest.mark.agents,
    pytest.mark.skipif(not KEN.exists(), reason="ken is not installed in this venv"),
]


def integrate(box: Sandbox, with_mcp: bool) -> None:
    args = ["integrate", box.agent, "--json"]
    args += ["--mcp"] if with_mcp else []
    args += ["--trust"] if box.agent == "codex" else []
    harness.run_ken(box, *args)
    if box.agent == "claude":
        # Hold the first turn until `ken mcp` has connected (see test_ken_mcp.py).
        box.env["CLAUDE_CODE_MCP_STARTUP_WAIT_MS"] = "30000"


def run(box: Sandbox, prompt: str, extra: tuple[str, ...] = ()) -> str:
    done = RUN[box.agent](box, prompt, extra, timeout=150)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if box.agent == "codex":
        return "\n".join(harness.codex_messages(done.stdout))
    return done.stdout


def asks(text: str) -> bool:
    return ASK_MARK in text


def hook_log(box: Sandbox) -> list[str]:
    path = Path(box.env["XDG_STATE_HOME"]) / "kenning" / "log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def the_session(box: Sandbox) -> Any:
    with open_store(box.db) as store:
        [session] = store.list_sessions(SessionQuery(limit=10))
        return (
            session,
            store.lesson_state(session.id),
            store.signals(session.id),
        )


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_correction_is_asked_about_once_and_its_lesson_proposed_with_the_quote(
    agent: str, request: pytest.FixtureRequest
) -> None:
    stub: StubServer = request.getfixturevalue(STUBS[agent])
    box: Sandbox = request.getfixturevalue(f"{agent}_box")
    integrate(box, with_mcp=True)
    repo = where_mod.detect(box.repo).repo
    tool = ("mcp_ken_" if agent == "gemini" else "mcp__ken__") + "record_reflection"
    stub.queue(
        Text("Installed with pnpm."),
        ToolCall(
            tool,
            {
                "lessons": [
                    {"lesson": LESSON, "evidence": QUOTE, "kind": "correction"},
                    {"lesson": INVENTED, "evidence": "always deploy on Fridays"},
                ]
            },
            call_id=None if agent == "gemini" else f"call_{agent}_reflect",
        ),
        Text("Lesson recorded."),
    )

    answer = run(box, PROMPT)

    assert "Lesson recorded." in answer
    assert stub.pending() == [], "the agent stopped before the scripted turns ran"
    requests = stub.model_requests()
    # One request for the prompt, one after Stop asked, one after the tool's result:
    # the second Stop (the agent already going on) asked nothing, so nothing follows.
    assert len(requests) == 3, [r.reply for r in requests]
    assert not asks(requests[0].raw)
    asked = json.loads(requests[1].raw)
    question = next(s for s in _strings(asked) if ASK_MARK in s)
    assert f'The person corrected you: "{PROMPT}"' in question
    assert "record_reflection" in question

    session, state, signals = the_session(box)
    assert state.asked_at and state.reflected_at
    assert [s.kind for s in signals] == ["correction", "statement"]
    with open_store(box.db) as store:
        written = store.list_items(ItemQuery(statuses=(), tags=("reflection",)))
    [lesson] = written
    assert (lesson.title, lesson.kind.value, lesson.status.value) == (
        LESSON,
        "correction",
        "proposed",
    )
    assert str(lesson.scope) == f"repo:{repo}"
    assert lesson.evidence == QUOTE
    assert (lesson.provenance.who, lesson.provenance.session) == (agent, session.id)
    dropped = [line for line in hook_log(box) if "record_reflection" in line]
    assert len(dropped) == 1 and INVENTED in dropped[0], hook_log(box)

    listed = json.loads(harness.run_ken(box, "lessons", "--json").stdout)
    assert [(e["id"], e["signal"]["kind"]) for e in listed] == [(lesson.id, "correction")]
    assert listed[0]["signal"]["detail"] == PROMPT


FAILING = {
    # -p mode runs Bash only when allowed; without it the call is refused, and Claude
    # reports that to no hook but PermissionRequest (the ask, not the answer).
    "claude": (
        ToolCall("Bash", {"command": "exit 3", "description": "fail"}),
        ("--allowedTools", "Bash"),
    ),
    "codex": (ToolCall("exec_command", {"cmd": "exit 3"}), ()),
    "gemini": (ToolCall("read_file", {"file_path": "missing.txt"}), ()),
}


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_failing_tool_call_made_three_times_is_asked_about(
    agent: str, request: pytest.FixtureRequest
) -> None:
    stub: StubServer = request.getfixturevalue(STUBS[agent])
    box: Sandbox = request.getfixturevalue(f"{agent}_box")
    integrate(box, with_mcp=False)
    call, extra = FAILING[agent]
    if agent == "gemini":
        call = ToolCall("read_file", {"file_path": str(box.repo / "missing.txt")})
    stub.queue(call, call, call, Text("It keeps failing."), Text("Nothing worth keeping."))

    answer = run(box, "Run the failing step.", extra)

    assert "Nothing worth keeping." in answer
    assert stub.pending() == []
    requests = stub.model_requests()
    assert len(requests) == 5, [r.reply for r in requests]
    question = next(s for s in _strings(json.loads(requests[4].raw)) if ASK_MARK in s)
    assert "A tool call failed" in question
    assert "The same tool call ran 3 times in a row" in question
    _, state, signals = the_session(box)
    kinds = [s.kind for s in signals]
    assert kinds.count("failure") == 3 and kinds.count("repeat") == 1, signals
    assert state.asked_at and state.reflected_at is None
    assert hook_log(box) == []


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
