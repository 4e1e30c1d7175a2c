"""`ken handoff --to claude`, end to end: a real Codex session, continued in the real
Claude Code, both offline against stub model servers in one sandbox.

Both agents get kenning's hooks as a person installs them (`ken integrate`). Codex runs
one prompt; then `ken handoff --to claude --prompt ...` (configured to start Claude Code
with `-p`, so it runs without a terminal) execs Claude Code with the "Continuing from"
pack as an appended system prompt. The test checks that the pack reached the model, and
that Claude's session is recorded as continuing Codex's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import harness
from .harness import Sandbox
from .stubs import AnthropicStub, OpenAIResponsesStub, RecordedRequest, Text

KEN = Path(sys.executable).with_name("ken")
CODEX_PROMPT = "Start the CSV export of the orders"
CODEX_ANSWER = "Started the CSV export; the refunds are left."
CLAUDE_PROMPT = "Finish the CSV export with the refunds"
CLAUDE_ANSWER = "Finished: refunds are in the export too."


def ken(box: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    return harness.run_ken(box, *args)


def sessions(box: Sandbox) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(ken(box, "sessions", "--all", "--json").stdout)
    return found


def system_text(request: RecordedRequest) -> str:
    system = (request.body or {}).get("system", "")
    if isinstance(system, list):
        return "\n".join(str(block.get("text", "")) for block in system if isinstance(block, dict))
    return str(system)


@pytest.mark.agents
def test_ken_handoff_continues_a_codex_session_in_claude_code(
    tmp_path: Path,
    openai_stub: OpenAIResponsesStub,
    anthropic_stub: AnthropicStub,
    codex_bin: Path,
    claude_bin: Path,
) -> None:
    box = harness.prepare_codex(tmp_path / "sandbox", openai_stub.url, codex_bin)
    # The same sandbox (home, store, repo) runs Claude Code too: take the settings
    # prepare_claude gives its own sandbox (stub URL and key, no telemetry) that a Codex
    # sandbox lacks.
    claude_env = harness.prepare_claude(tmp_path / "claude-env", anthropic_stub.url).env
    box.env.update({k: v for k, v in claude_env.items() if k not in box.env})
    ken(box, "integrate", "codex", "--trust")
    ken(box, "integrate", "claude")

    openai_stub.queue(Text(CODEX_ANSWER))
    done = harness.run_codex(box, CODEX_PROMPT)
    assert done.returncode == 0, done.stderr[-4000:]
    [codex] = sessions(box)
    assert codex["agent"] == "codex" and codex["first_prompt"] == CODEX_PROMPT
    assert codex["ended_at"], "Codex's SessionEnd did not close its session"

    config = Path(box.env["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[agents.claude]\ncommand = {json.dumps(f'{claude_bin} -p')}\n")
    anthropic_stub.queue(Text(CLAUDE_ANSWER))

    # `ken handoff` execs Claude Code in its own process: run it as the person would.
    done = harness.run_process(
        [str(KEN), "handoff", "--to", "claude", "--prompt", CLAUDE_PROMPT], box, 120
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert f"starting claude (continuing codex session {codex['id'][-6:].lower()})" in done.stderr
    assert CLAUDE_ANSWER in done.stdout
    [first, *_] = anthropic_stub.model_requests()
    system = system_text(first)
    assert "# Continuing from another agent" in system
    assert "## Previous session: codex (gpt-5.1-codex)" in system
    assert f"- First prompt: {CODEX_PROMPT}" in system
    assert f"- Transcript: {codex['transcript_path']}" in system
    assert "- Handoff: codex session " in system
    assert CLAUDE_PROMPT in first.raw
    assert "This is kenning" in first.raw  # Claude's own SessionStart pack came too

    claude = next(s for s in sessions(box) if s["agent"] == "claude")
    assert claude["continued_from"] == codex["id"]
    assert claude["first_prompt"] == CLAUDE_PROMPT
    assert claude["ended_at"]


OWN_INSTRUCTIONS = "Answer in British English. Never push to main."


@pytest.mark.agents
def test_ken_handoff_to_codex_keeps_the_persons_developer_instructions(
    tmp_path: Path,
    openai_stub: OpenAIResponsesStub,
    anthropic_stub: AnthropicStub,
    codex_bin: Path,
    claude_bin: Path,
) -> None:
    """Claude Code, then `ken handoff --to codex`: Codex gets the person's own
    developer_instructions from its config.toml and the pack after them."""
    box = harness.prepare_codex(tmp_path / "sandbox", openai_stub.url, codex_bin)
    claude_env = harness.prepare_claude(tmp_path / "claude-env", anthropic_stub.url).env
    box.env.update({k: v for k, v in claude_env.items() if k not in box.env})
    ken(box, "integrate", "claude")
    ken(box, "integrate", "codex", "--trust")
    # A top-level key: before the tables the sandbox's config already has.
    config = box.codex_config.read_text(encoding="utf-8")
    box.codex_config.write_text(
        f"developer_instructions = {json.dumps(OWN_INSTRUCTIONS)}\n{config}", encoding="utf-8"
    )

    anthropic_stub.queue(Text(CLAUDE_ANSWER))
    done = harness.run_process([str(claude_bin), "-p", CLAUDE_PROMPT], box, 120)
    assert done.returncode == 0, done.stderr[-4000:]
    [claude] = sessions(box)
    assert claude["model"], "the model is read from Claude's transcript"

    config_path = Path(box.env["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    command = f"{codex_bin} exec --skip-git-repo-check"
    config_path.write_text(f"[agents.codex]\ncommand = {json.dumps(command)}\n")
    openai_stub.queue(Text(CODEX_ANSWER))

    done = harness.run_process(
        [str(KEN), "handoff", "--to", "codex", "--prompt", CODEX_PROMPT], box, 120
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert CODEX_ANSWER in done.stdout
    [first, *_] = openai_stub.model_requests()
    own = first.raw.find(OWN_INSTRUCTIONS)
    pack = first.raw.find("# Continuing from another agent")
    assert 0 <= own < pack, "the person's instructions first, then the pack"
    assert f"## Previous session: claude ({claude['model']})" in first.raw
    assert CODEX_PROMPT in first.raw
