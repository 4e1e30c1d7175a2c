"""Reading agents' transcripts: the person's recent turns, for recall's query.

Only the tail of the file is read (transcripts grow to megabytes), and only what the
person typed: tool results, hook context, slash commands and injected instructions
are skipped. Formats are internal to each agent and change, so every line is parsed
defensively and anything unexpected is ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TAIL_BYTES = 256 * 1024


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
    turns: list[str] = []
    for line in _tail_lines(path):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        text = ""
        if agent == "claude" and record.get("type") == "user" and not record.get("isMeta"):
            message = record.get("message")
            if isinstance(message, dict) and message.get("role") == "user":
                text = _text_of(message.get("content"))
        elif agent == "codex" and record.get("type") == "response_item":
            payload = record.get("payload")
            if isinstance(payload, dict) and payload.get("role") == "user":
                text = _text_of(payload.get("content"))
        if text and _is_person(text):
            turns.append(text)
    return turns[-limit:]
