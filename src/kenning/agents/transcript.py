"""Reading agents' own transcript files: the pieces every agent's reader shares.

Transcripts grow to megabytes and their formats are internal to each agent and change,
so a reader may read only the tail, parses every line defensively and ignores anything
unexpected. What the person typed is told apart from what the agent injected (hook
context, instructions, command output), which starts with a tag or a known heading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_LINE_CHARS = 4 * 1024 * 1024  # a longer line is skipped, not parsed


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # user or assistant
    text: str
    at: str | None = None


def read_lines(path: str, tail: int | None = None) -> list[str]:
    """The file's lines; with `tail`, only those in its last `tail` bytes (whole ones)."""
    try:
        with open(path, "rb") as fh:
            if tail is None:
                data = fh.read()
                size = len(data)
            else:
                fh.seek(0, 2)
                size = fh.tell()
                fh.seek(max(0, size - tail))
                data = fh.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[1:] if tail is not None and size > tail else lines


def json_line(line: str) -> dict[str, Any] | None:
    if len(line) > MAX_LINE_CHARS:
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # a line nested thousands deep ends the parser
        return None
    return record if isinstance(record, dict) else None


def text_of(content: Any) -> str:
    """The text of message content: a string, or a list of text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") in ("text", "input_text")
        )
    return ""


# A block an agent or IDE puts into the person's turn: <system-reminder>...</...>,
# <ide_opened_file>, <command-name>, <environment_context> (names with - or _, which
# HTML a person pastes rarely has).
_INJECTED = r"<([A-Za-z]+[_-][\w-]*)(?:\s[^>]*)?>.*?</\1>"  # compiled by `re` when first used


def person_words(text: str) -> str:
    """The person's words in a user turn: the blocks injected before or after them taken
    out; "" when nothing of theirs is left (the whole turn was injected)."""
    words = re.sub(_INJECTED, "", text, flags=re.S).strip() if "<" in text else text.strip()
    if not words or words.startswith(("<", "# AGENTS.md", "Caveat:")):
        return ""
    return words


def timestamp(record: dict[str, Any], key: str = "timestamp") -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


def jsonl_reader(
    turns: Callable[[list[str]], list[Turn]],
) -> Callable[[str, str | None, int | None], list[Turn]]:
    """A transcript reader for a JSON-lines file, from a function of its lines."""

    def read(path: str, session_id: str | None, tail: int | None) -> list[Turn]:
        return turns(read_lines(path, tail))

    return read
