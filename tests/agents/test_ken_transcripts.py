"""Transcripts written by the real Claude Code and Codex CLIs, read by kenning.transcripts.

Each test drives one CLI offline (kenning's hooks installed with `ken integrate`, so hook
context lands in the transcript too) through a scripted conversation: a prompt holding a
fake token, a call to a tool that does not exist (so a tool result follows), more
prompts on the same session, and for Claude Code a `/compact`. It then checks that
`conversation()` gives exactly the person's prompts and the agent's text, and that the
stored fixture in `tests/fixtures/transcripts` has the same shape as today's transcript.

With KEN_RECORD_FIXTURES=1 the fixtures are written instead: paths made stable
(/tmp/SANDBOX, /VENV/bin), long strings and lists in lines that are not messages
shortened, and the fake token's `p` escaped as \\u0070 so the file holds no token-shaped
text.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kenning.transcripts import conversation, user_turns
from test_transcripts import (
    CLAUDE_FIXTURE,
    CLAUDE_PROMPTS,
    CLAUDE_TURNS,
    CODEX_FIXTURE,
    CODEX_PROMPTS,
    CODEX_TURNS,
    TOKEN,
    turns_of,
)

from . import harness
from .harness import Sandbox
from .stubs import AnthropicStub, OpenAIResponsesStub, Response, Text, ToolCall, _sse_response

KEN = Path(sys.executable).with_name("ken")
RECORD = os.environ.get("KEN_RECORD_FIXTURES") == "1"
LONG = 120  # longest string kept in lines that are not messages
MANY = 6  # most list or object entries kept there


@dataclass(frozen=True)
class Blocks:
    """One assistant message of several content blocks (thinking, text, tool_use)."""

    blocks: tuple[dict[str, Any], ...]


class BlocksStub(AnthropicStub):
    """The Anthropic stub, also answering with a message of several blocks, streamed."""

    def render(self, reply: Any, body: Any, route: str) -> Response:
        if not isinstance(reply, Blocks):
            return super().render(reply, body, route)
        message = {
            "id": self.new_id("msg_stub"),
            "type": "message",
            "role": "assistant",
            "model": (body or {}).get("model", "claude-stub"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": message})
        ]
        stop = "end_turn"
        for index, block in enumerate(reply.blocks):
            if block["type"] == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": block["thinking"]},
                    {"type": "signature_delta", "signature": "c3R1Yi1zaWduYXR1cmU="},
                ]
            elif block["type"] == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": block["text"]}]
            else:
                stop = "tool_use"
                start = {
                    "type": "tool_use",
                    "id": self.new_id("toolu_stub"),
                    "name": block["name"],
                    "input": {},
                }
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
            events += [
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
                for d in deltas
            ]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 1},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return _sse_response(events)


@pytest.fixture
def blocks_stub() -> Iterator[BlocksStub]:
    with BlocksStub() as stub:
        yield stub


def ken(box: Sandbox, *args: str) -> str:
    return harness.run_ken(box, *args).stdout


def run(box: Sandbox, command: list[str]) -> None:
    done = harness.run_process(command, box, 120)
    assert done.returncode == 0, done.stderr[-4000:]


# ------------------------------------------------------------------------ recording


def _shorten(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= LONG else value[:LONG] + " …(shortened by the recorder)"
    if isinstance(value, dict):
        kept_keys = {k: _shorten(v) for k, v in list(value.items())[:MANY]}
        return kept_keys | ({"…": "(shortened by the recorder)"} if len(value) > MANY else {})
    if isinstance(value, list):
        kept = [_shorten(v) for v in value[:MANY]]
        return kept + (["…(shortened by the recorder)"] if len(value) > MANY else [])
    return value


def _is_message(record: dict[str, Any]) -> bool:
    if record.get("type") in ("user", "assistant"):  # Claude Code
        return True
    payload = record.get("payload")  # Codex
    return isinstance(payload, dict) and payload.get("type") == "message"


def fixture_text(transcript: Path, box: Sandbox) -> str:
    lines = []
    for raw in transcript.read_text(encoding="utf-8").splitlines():
        record = harness.sanitize(json.loads(raw), box, {str(KEN.parent): "/VENV/bin"})
        if not _is_message(record):
            record = _shorten(record)
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    text = "\n".join(lines) + "\n"
    assert TOKEN in text
    return text.replace(TOKEN, TOKEN.replace("ghp_", "gh\\u0070_"))


def message_shape(path: Path) -> list[tuple[str, str]]:
    """(line type, role or block types) of every message line, in order."""
    shape = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        if not _is_message(record):
            continue
        message = record.get("message") or record.get("payload") or {}
        content = message.get("content")
        kinds = (
            ",".join(str(b.get("type")) for b in content if isinstance(b, dict))
            if isinstance(content, list)
            else "string"
        )
        shape.append((str(message.get("role")), kinds))
    return shape


def record_or_compare(live: Path, fixture: Path, box: Sandbox) -> None:
    if RECORD:
        fixture.parent.mkdir(parents=True, exist_ok=True)
        fixture.write_text(fixture_text(live, box), encoding="utf-8")
        return
    assert fixture.exists(), f"no fixture {fixture}; run with KEN_RECORD_FIXTURES=1"
    assert message_shape(live) == message_shape(fixture), (
        f"{fixture.name} no longer matches what the CLI writes; re-record it"
    )


# ---------------------------------------------------------------------------- tests


@pytest.mark.agents
def test_a_claude_code_transcript_reads_as_the_conversation(
    tmp_path: Path, blocks_stub: BlocksStub, claude_bin: Path
) -> None:
    box = harness.prepare_claude(tmp_path / "sandbox", blocks_stub.url, claude_bin)
    ken(box, "integrate", "claude")
    ken(box, "add", "Exports of this shop use semicolons", "--pin")
    binary = str(claude_bin)

    blocks_stub.queue(
        Blocks(
            (
                {"type": "thinking", "thinking": "Maybe the repo has an export tool."},
                {"type": "text", "text": CLAUDE_TURNS[1][1]},
                {"type": "tool_use", "name": "NoSuchTool", "input": {"path": "orders.csv"}},
            )
        ),
        Blocks(tuple({"type": "text", "text": t} for t in CLAUDE_TURNS[2][1].split("\n"))),
    )
    run(box, [binary, "-p", CLAUDE_PROMPTS[0]])
    [live] = list((box.home / ".claude" / "projects").glob("*/*.jsonl"))
    blocks_stub.queue(Text(CLAUDE_TURNS[4][1]))
    run(box, [binary, "-p", CLAUDE_PROMPTS[1], "--resume", live.stem])
    blocks_stub.queue(Text("Summary: orders and refunds are exported as CSV."))
    run(box, [binary, "-p", "/compact", "--resume", live.stem])
    blocks_stub.queue(Text(CLAUDE_TURNS[6][1]))
    run(box, [binary, "-p", CLAUDE_PROMPTS[2], "--resume", live.stem])
    assert list((box.home / ".claude" / "projects").glob("*/*.jsonl")) == [live]

    text = live.read_text(encoding="utf-8")
    assert '"tool_result"' in text and '"thinking"' in text and "isCompactSummary" in text
    assert "This is kenning" in text  # the SessionStart pack is in there too
    assert turns_of(conversation("claude", str(live))) == CLAUDE_TURNS
    assert user_turns("claude", str(live), limit=2) == CLAUDE_PROMPTS[1:]
    record_or_compare(live, CLAUDE_FIXTURE, box)


@pytest.mark.agents
def test_a_codex_rollout_reads_as_the_conversation(
    tmp_path: Path, openai_stub: OpenAIResponsesStub, codex_bin: Path
) -> None:
    box = harness.prepare_codex(tmp_path / "sandbox", openai_stub.url, codex_bin)
    ken(box, "integrate", "codex", "--trust")
    ken(box, "add", "Exports of this shop use semicolons", "--pin")
    exec_ = [str(codex_bin), "exec", "--skip-git-repo-check", "--json"]

    openai_stub.queue(ToolCall("no_such_tool", {"path": "orders.csv"}), Text(CODEX_TURNS[1][1]))
    run(box, [*exec_, CODEX_PROMPTS[0]])
    [live] = list((box.codex_home / "sessions").rglob("rollout-*.jsonl"))
    session_id = json.loads(live.read_text().splitlines()[0])["payload"]["id"]
    openai_stub.queue(Text(CODEX_TURNS[3][1]))
    run(box, [*exec_, "resume", session_id, CODEX_PROMPTS[1]])
    assert list((box.codex_home / "sessions").rglob("rollout-*.jsonl")) == [live]

    text = live.read_text(encoding="utf-8")
    assert '"function_call_output"' in text and "<environment_context>" in text
    assert "This is kenning" in text  # the pack, as a developer message
    assert turns_of(conversation("codex", str(live))) == CODEX_TURNS
    assert user_turns("codex", str(live)) == CODEX_PROMPTS
    record_or_compare(live, CODEX_FIXTURE, box)
