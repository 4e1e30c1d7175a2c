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
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import harness
from .harness import Sandbox
from .stubs import AnthropicStub, GeminiStub, OpenAIResponsesStub, RecordedRequest, Text

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


def handoff_config(box: Sandbox, agent: str, command: str, extra: str = "") -> None:
    """`[agents.AGENT] command`: a form that runs without a terminal."""
    config = Path(box.env["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[agents.{agent}]\ncommand = {json.dumps(command)}\n{extra}")


def handoff_items(box: Sandbox) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(ken(box, "list", "--kind", "handoff", "--json").stdout)
    return found


def both_agents(
    tmp_path: Path, openai_stub: OpenAIResponsesStub, anthropic_stub: AnthropicStub, codex: Path
) -> Sandbox:
    """One sandbox (home, store, repo) that runs Codex and Claude Code, both integrated."""
    box = harness.prepare_codex(tmp_path / "sandbox", openai_stub.url, codex)
    claude_env = harness.prepare_claude(tmp_path / "claude-env", anthropic_stub.url).env
    box.env.update({k: v for k, v in claude_env.items() if k not in box.env})
    ken(box, "integrate", "codex", "--trust")
    ken(box, "integrate", "claude")
    return box


OURS = "You are continuing work another agent started here"  # kenning's own first message


@pytest.mark.agents
def test_ken_handoff_back_to_claude_resumes_it_with_the_update_in_the_message(
    tmp_path: Path,
    openai_stub: OpenAIResponsesStub,
    anthropic_stub: AnthropicStub,
    codex_bin: Path,
    claude_bin: Path,
) -> None:
    """Claude Code, `ken handoff --to codex` (kenning's own first message), then back to
    Claude: `claude --resume` keeps its first session's appended system prompt and drops
    a new one, so the "Since your last turn" update must come in the message. Kenning's
    first message to Codex is not Codex's first prompt."""
    box = both_agents(tmp_path, openai_stub, anthropic_stub, codex_bin)
    anthropic_stub.queue(Text(CODEX_ANSWER))
    done = harness.run_process([str(claude_bin), "-p", CODEX_PROMPT], box, 120)
    assert done.returncode == 0, done.stderr[-4000:]
    [claude] = sessions(box)

    handoff_config(box, "codex", f"{codex_bin} exec --skip-git-repo-check")
    openai_stub.queue(Text("Refunds are half done."))
    done = harness.run_process([str(KEN), "handoff", "--to", "codex"], box, 120)
    assert done.returncode == 0, done.stderr[-4000:]
    [to_codex] = openai_stub.model_requests()
    assert "# Continuing from another agent" in to_codex.raw and OURS in to_codex.raw
    codex = next(s for s in sessions(box) if s["agent"] == "codex")
    assert codex["continued_from"] == claude["id"] and codex["prompt_count"] == 1
    assert codex["first_prompt"] is None and codex["last_prompt"] is None
    [codex_handoff] = [i for i in handoff_items(box) if i["title"].startswith("codex session")]
    assert codex_handoff["title"].endswith(": no prompt")
    assert OURS not in json.dumps(codex_handoff)

    handoff_config(box, "claude", f"{claude_bin} -p")
    anthropic_stub.queue(Text(CLAUDE_ANSWER))
    done = harness.run_process(
        [str(KEN), "handoff", "--to", "claude", "--prompt", CLAUDE_PROMPT], box, 120
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert f"resuming claude (continuing codex session {codex['id'][-6:].lower()})" in (done.stderr)
    assert CLAUDE_ANSWER in done.stdout
    resumed = anthropic_stub.model_requests()[-1]
    assert CODEX_ANSWER in resumed.raw, "Claude's own conversation goes on"
    assert "# Since your last turn" in resumed.raw
    assert "## Then: codex (gpt-5.1-codex)" in resumed.raw
    assert f"- Handoff: {codex_handoff['title']}" in resumed.raw
    assert CLAUDE_PROMPT in resumed.raw
    assert OURS not in resumed.raw  # not Codex's prompt: kenning's
    back = next(s for s in sessions(box) if s["id"] == claude["id"])
    assert (back["first_prompt"], back["last_prompt"]) == (CODEX_PROMPT, CLAUDE_PROMPT)
    assert back["prompt_count"] == 2


@pytest.mark.agents
def test_ken_handoff_back_to_codex_resumes_it_with_the_update_in_the_message(
    tmp_path: Path,
    openai_stub: OpenAIResponsesStub,
    anthropic_stub: AnthropicStub,
    codex_bin: Path,
    claude_bin: Path,
) -> None:
    """Codex, Claude Code, then back to Codex: `codex exec resume ID -c
    developer_instructions=...` never reaches the model, so the update comes in the
    message; the person's own developer_instructions stay, and the update is not
    recorded as their prompt."""
    box = both_agents(tmp_path, openai_stub, anthropic_stub, codex_bin)
    config = box.codex_config.read_text(encoding="utf-8")
    box.codex_config.write_text(
        f"developer_instructions = {json.dumps(OWN_INSTRUCTIONS)}\n{config}", encoding="utf-8"
    )
    openai_stub.queue(Text(CODEX_ANSWER))
    done = harness.run_codex(box, CODEX_PROMPT)
    assert done.returncode == 0, done.stderr[-4000:]
    [codex] = sessions(box)
    anthropic_stub.queue(Text(CLAUDE_ANSWER))
    done = harness.run_process([str(claude_bin), "-p", CLAUDE_PROMPT], box, 120)
    assert done.returncode == 0, done.stderr[-4000:]

    handoff_config(box, "codex", f"{codex_bin} exec --skip-git-repo-check")
    openai_stub.queue(Text("Back on it."))
    done = harness.run_process([str(KEN), "handoff", "--to", "codex"], box, 120)

    assert done.returncode == 0, done.stderr[-4000:]
    assert "resuming codex (continuing claude session" in done.stderr
    resumed = openai_stub.model_requests()[-1]
    assert CODEX_ANSWER in resumed.raw, "Codex's own conversation goes on"
    assert "# Since your last turn" in resumed.raw
    assert "## Then: claude" in resumed.raw
    assert f"- First prompt: {CLAUDE_PROMPT}" in resumed.raw
    assert "Others worked here since your last turn" in resumed.raw
    assert OWN_INSTRUCTIONS in resumed.raw
    back = next(s for s in sessions(box) if s["id"] == codex["id"])
    assert (back["first_prompt"], back["last_prompt"]) == (CODEX_PROMPT, CODEX_PROMPT)
    assert back["prompt_count"] == 2


@pytest.mark.agents
def test_ken_handoff_to_gemini_records_the_persons_words_not_the_pack(
    tmp_path: Path,
    gemini_stub: GeminiStub,
    anthropic_stub: AnthropicStub,
    gemini_bin: Path,
    claude_bin: Path,
) -> None:
    """Gemini gets the pack in its first message: its session's first prompt, its
    handoff's title and the next handoff's pack hold the person's words after it, not
    the pack."""
    box = harness.prepare_gemini(tmp_path / "sandbox", gemini_stub.url, gemini_bin)
    claude_env = harness.prepare_claude(tmp_path / "claude-env", anthropic_stub.url).env
    box.env.update({k: v for k, v in claude_env.items() if k not in box.env})
    ken(box, "integrate", "claude")
    ken(box, "integrate", "gemini")
    anthropic_stub.queue(Text(CODEX_ANSWER))
    done = harness.run_process([str(claude_bin), "-p", CODEX_PROMPT], box, 120)
    assert done.returncode == 0, done.stderr[-4000:]
    [claude] = sessions(box)

    node = shutil.which("node", path=box.env["PATH"]) or "node"
    command = f"{node} {gemini_bin} -m {harness.GEMINI_MODEL}"
    # -p, not the default -i: it runs without a terminal.
    handoff_config(box, "gemini", command, 'prompt_flag = "-p"\n')
    gemini_stub.queue(Text(CLAUDE_ANSWER))
    done = harness.run_process(
        [str(KEN), "handoff", "--to", "gemini", "--prompt", CLAUDE_PROMPT], box, 120
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert CLAUDE_ANSWER in done.stdout
    [first, *_] = gemini_stub.model_requests()
    assert "# Continuing from another agent" in first.raw
    assert f"- First prompt: {CODEX_PROMPT}" in first.raw
    assert CLAUDE_PROMPT in first.raw
    gemini = next(s for s in sessions(box) if s["agent"] == "gemini")
    assert gemini["continued_from"] == claude["id"]
    assert (gemini["first_prompt"], gemini["last_prompt"]) == (CLAUDE_PROMPT, CLAUDE_PROMPT)
    [left] = [i for i in handoff_items(box) if i["title"].startswith("gemini session")]
    assert left["title"].endswith(f": {CLAUDE_PROMPT}")
    assert "Continuing from" not in json.dumps(left)

    # The next handoff tells of Gemini's session by the person's words: no pack in a pack.
    pack = json.loads(ken(box, "handoff", "--to", "codex", "--json").stdout)["pack"]
    assert f"- First prompt: {CLAUDE_PROMPT}" in pack
    assert pack.count("Continuing from another agent") == 1
