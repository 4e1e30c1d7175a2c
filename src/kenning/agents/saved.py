"""Reading the memories agents save in their own files, for `ken collect`.

Claude Code keeps one Markdown file per memory, with a small YAML frontmatter, in a
folder per project; Gemini CLI appends bullets under a heading of its `GEMINI.md`.
These helpers read such files without a YAML library (the hook path has none): only the
flat `key: value` lines and one level of nesting that agents write.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Collection
from pathlib import Path

from kenning.agents.agent import SavedMemory

MAX_FILE_BYTES = 256 * 1024  # a memory file larger than this is not an agent's memory

_KEY = re.compile(r"^(\s*)([A-Za-z_][\w-]*):\s*(.*?)\s*$")


def read_text(path: Path) -> str | None:
    """A regular file's text, at most MAX_FILE_BYTES; None for anything else (a FIFO, a
    device, a file too large or gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        data = os.read(fd, MAX_FILE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


def frontmatter(text: str) -> tuple[dict[str, str], str]:
    """A Markdown file's frontmatter as flat keys (a nested `metadata: type:` reads as
    `metadata.type`) and the text after it."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        return {}, text
    fields: dict[str, str] = {}
    parent = ""
    for line in lines[1:end]:
        found = _KEY.match(line)
        if not found:
            continue
        indent, key, value = found.groups()
        if not indent:
            parent = key if not value else ""
            if value:
                fields[key] = value.strip("'\"")
        elif parent:
            fields[f"{parent}.{key}"] = value.strip("'\"")
    return fields, "\n".join(lines[end + 1 :]).strip()


def section_bullets(text: str, heading: str) -> list[str]:
    """The list items under the `## heading` of a Markdown file (up to the next
    heading), each with the indented lines that continue it."""
    out: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            inside = line.lstrip("#").strip().lower() == heading.lower()
            continue
        if not inside or not line:
            continue
        if line.startswith(("- ", "* ", "+ ")):
            out.append(line[2:].strip())
        elif out and raw[:1].isspace():
            out[-1] = f"{out[-1]} {line}"
    return [item for item in out if item]


def bullets(text: str) -> list[str]:
    """Every list item of a Markdown file outside code blocks, each with the indented
    lines that continue it."""
    out: list[str] = []
    fenced = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line:
            continue
        if line.startswith(("- ", "* ", "+ ")):
            out.append(line[2:].strip())
        elif out and raw[:1].isspace() and not line.startswith("#"):
            out[-1] = f"{out[-1]} {line}"
    return [item for item in out if item]


def note_text(text: str) -> str:
    """A Markdown note as a memory's text: its frontmatter's description (or its first
    line, a heading's marks taken off) as the title, the rest as the body."""
    fields, body = frontmatter(text)
    title = fields.get("description") or fields.get("name", "").replace("-", " ")
    if not title:
        title, _, body = body.strip().partition("\n")
    title = title.strip().lstrip("#").strip()
    return "\n".join(x for x in (title, body.strip()) if x)


def note_files(
    folder: Path, kind_of: Callable[[dict[str, str]], str], skip: Collection[str] = ()
) -> list[SavedMemory]:
    """One memory per Markdown file of `folder` (but those named in `skip`), its kind
    from its frontmatter."""
    out = []
    for path in sorted(folder.glob("*.md")):
        if path.name in skip or not (text := read_text(path)):
            continue
        if note := note_text(text):
            out.append(SavedMemory(str(path), "", note, kind_of(frontmatter(text)[0])))
    return out
