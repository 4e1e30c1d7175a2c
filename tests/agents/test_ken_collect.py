"""Collection with the real Claude Code: what the agent saves in its auto-memory folder
reaches kenning as a proposal at the next session's start, and is told to the other
agents once a person approves it, never back to Claude."""

from __future__ import annotations

import pytest

from kenning.agents import claude

from . import harness
from .harness import Sandbox
from .stubs import AnthropicStub, Text, ToolCall

MEMORY = (
    "---\nname: use-pnpm\ndescription: Use pnpm, never npm, in this repo\n"
    "metadata:\n  type: feedback\n---\n"
    "The person said: no, don't use npm here, use pnpm.\n"
    "**Why:** the lockfile is pnpm-lock.yaml.\n"
)


@pytest.mark.agents
def test_claude_collect_brings_in_what_claude_saved_to_its_auto_memory(
    claude_box: Sandbox, anthropic_stub: AnthropicStub
) -> None:
    box = claude_box
    harness.run_ken(box, "integrate", "claude")
    folder = box.home / ".claude" / "projects" / claude.checkout_name(str(box.repo)) / "memory"
    anthropic_stub.queue(
        ToolCall("Write", {"file_path": str(folder / "feedback_pnpm.md"), "content": MEMORY}),
        Text("Saved to memory."),
    )
    first = harness.run_claude(
        box,
        "No, don't use npm here, use pnpm. Remember that.",
        ["--permission-mode", "acceptEdits"],
    )
    assert first.returncode == 0, first.stderr
    saved = (folder / "feedback_pnpm.md").read_text()
    assert "modified:" in saved  # Claude Code's own frontmatter, as it writes it

    anthropic_stub.queue(Text("ok"))
    second = harness.run_claude(box, "What is next?")
    assert second.returncode == 0, second.stderr

    listed = harness.run_ken(box, "list", "--status", "proposed").stdout
    assert "Use pnpm, never npm, in this repo" in listed
    harness.run_ken(box, "approve", "--all", "--yes")
    assert "Use pnpm, never npm" in harness.run_ken(box, "pack", "--for", "codex").stdout
    assert "Use pnpm, never npm" not in harness.run_ken(box, "pack", "--for", "claude").stdout
