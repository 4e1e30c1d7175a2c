"""Reading agents' transcripts: the person's recent turns (for recall's query) and the
whole conversation (for summaries).

Only the tail of the file is read (transcripts grow to megabytes), and only what the
person typed: tool results, hook context, slash commands and injected instructions
are skipped. Formats are internal to each agent and change, so every line is parsed
defensively and anything unexpected is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kenning.redact import redact

TAIL_BYTES = 256 * 1024
MAX_LINE_CHARS = 4 * 1024 * 1024  # a longer line is skipped, not parsed


def _tail_lines(path: str, limit: int = TAIL_BYTES) -> list[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            data = fh.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[1:] if size > limit else lines


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") in ("text", "input_text")
        )
    return ""


def _is_person(text: str) -> bool:
    stripped = text.lstrip()
    return bool(stripped) and not stripped.startswith(("<", "# AGENTS.md", "Caveat:"))


def user_turns(agent: str, path: str | None, limit: int = 3) -> list[str]:
    """The person's last `limit` prompts in a Claude Code or Codex transcript."""
    if not path or not Path(path).is_file():
        return []
    reader = READERS.get(agent)
    if reader is None:
        return []
    turns = reader(_tail_lines(path))
    return [t.text for t in turns if t.role == "user"][-limit:]


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # user or assistant
    text: str
    at: str | None = None


def _claude_turns(lines: list[str]) -> list[Turn]:
    turns: list[Turn] = []
    last_id: str | None = None
    for line in lines:
        record = _json(line)
        if record is None or record.get("isSidechain") or record.get("isMeta"):
            continue
        if record.get("isCompactSummary"):
            continue
        kind = record.get("type")
        message = record.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            continue
        text = _text_of(message.get("content")).strip()
        if not text or (kind == "user" and not _is_person(text)):
            continue
        at = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
        message_id = message.get("id") if kind == "assistant" else None
        if message_id and message_id == last_id and turns and turns[-1].role == "assistant":
            # One API message is split over several lines, one block each.
            turns[-1] = Turn("assistant", f"{turns[-1].text}\n{text}", turns[-1].at)
        else:
            turns.append(Turn(kind, text, at))
        last_id = message_id
    return turns


def _codex_turns(lines: list[str]) -> list[Turn]:
    turns: list[Turn] = []
    for line in lines:
        record = _json(line)
        if record is None or record.get("type") != "response_item":
            continue
        payload = record.get("payload")
        if not isinstance(payload, dict) or payload.get("type") != "message":
            continue
        role = payload.get("role")
        if role not in ("user", "assistant"):
            continue
        content = payload.get("content")
        parts = [
            str(b.get("text", ""))
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict) and b.get("type") in ("input_text", "output_text")
        ]
        text = "\n".join(parts).strip()
        if not text or (role == "user" and not _is_person(text)):
            continue
        at = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
        turns.append(Turn(str(role), text, at))
    return turns


def last_model(agent: str, path: str | None) -> str | None:
    """The model of the latest assistant message in a Claude Code transcript: Claude's
    hooks do not send it. (Codex's hooks do, so its rollout is not read for it.)"""
    if agent != "claude" or not path or not Path(path).is_file():
        return None
    for line in reversed(_tail_lines(path)):
        record = _json(line)
        message = record.get("message") if record is not None else None
        if record is None or record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        model = message.get("model")
        # Claude Code marks messages it made up itself (an error, an interruption).
        if isinstance(model, str) and model.strip() and not model.startswith("<"):
            return model.strip()[:200]
    return None


def _json(line: str) -> dict[str, Any] | None:
    if len(line) > MAX_LINE_CHARS:
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # a line nested thousands deep ends the parser
        return None
    return record if isinstance(record, dict) else None


def conversation(agent: str, path: str | None) -> list[Turn]:
    """The conversation in a transcript: what the person and the agent wrote, redacted.

    Tool calls, tool output, thinking, hook context and injected instructions are left
    out. Claude Code and Codex transcripts are read; other agents give nothing.
    """
    if not path or not Path(path).is_file():
        return []
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    reader = READERS.get(agent)
    if reader is None:
        return []
    return [Turn(t.role, redact(t.text).text, t.at) for t in reader(lines)]


READERS: dict[str, Callable[[list[str]], list[Turn]]] = {
    "claude": _claude_turns,
    "codex": _codex_turns,
}
