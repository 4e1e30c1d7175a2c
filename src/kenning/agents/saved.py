"""Reading the memories agents save in their own files, for `ken collect`.

Claude Code keeps one Markdown file per memory, with a small YAML frontmatter, in a
folder per project; Gemini CLI appends bullets under a heading of its `GEMINI.md`.
These helpers read such files without a YAML library (the hook path has none): only the
flat `key: value` lines and one level of nesting that agents write.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections.abc import Callable, Collection
from pathlib import Path
from typing import NamedTuple

from kenning.agents.agent import SavedMemory

MAX_FILE_BYTES = 256 * 1024  # a memory file larger than this is not an agent's memory

_KEY = re.compile(r"^(\s*)([A-Za-z_][\w-]*):\s*(.*?)\s*$")

# What a file's first bytes say it is written in (UTF-32's before UTF-16's: they start
# alike); each codec takes its mark off. Without one, a memory file is UTF-8.
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)


class FileText(NamedTuple):
    """A memory file's text, or why a file that is there was not read now."""

    text: str  # with LF line endings; "" when not read, or gone
    unread: str = ""  # "" when read, or gone


def read_file(path: Path, within: Path | None = None) -> FileText:
    """A regular file's text, decoded by its byte order mark (UTF-8 without one), line
    endings made LF. Not read, and why: a link out of the folder `within`, anything but
    a file (a FIFO, a device), a file over MAX_FILE_BYTES, one that cannot be opened,
    is not text in its encoding, holds a NUL, or is empty (an agent rewriting it). A
    file gone, or a folder, is no text and no reason."""
    if within is not None:
        real, folder = os.path.realpath(path), os.path.realpath(within)
        if os.path.commonpath((real, folder)) != folder:
            return FileText("", "a link to a file outside the memory folder, not followed")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return FileText("")
    except OSError as exc:
        return FileText("", f"cannot be opened: {exc.strerror or exc}")
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return FileText("")
        if not stat.S_ISREG(info.st_mode):
            return FileText("", "not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            return FileText("", f"larger than {MAX_FILE_BYTES // 1024} KB ({info.st_size:,} bytes)")
        data = b""
        while len(data) <= MAX_FILE_BYTES and (
            chunk := os.read(fd, MAX_FILE_BYTES + 1 - len(data))
        ):
            data += chunk
    except OSError as exc:
        return FileText("", f"cannot be read: {exc.strerror or exc}")
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:  # it grew while being read
        return FileText("", f"larger than {MAX_FILE_BYTES // 1024} KB")
    codec, name = next(
        ((c, n) for mark, c, n in _MARKS if data.startswith(mark)), ("utf-8", "UTF-8")
    )
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:
        return FileText("", f"not {name} text")
    if "\x00" in text:
        return FileText("", "holds NUL bytes: not text")
    if not text.strip():
        return FileText("", "empty")
    return FileText(text.replace("\r\n", "\n").replace("\r", "\n"))


def read_text(path: Path) -> str | None:
    """A file's text as `read_file` reads it; None when it is not read, or gone."""
    return read_file(path).text or None


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
    from its frontmatter; a notice for each file there but not read now."""
    out = []
    for path in sorted(folder.glob("*.md")):
        if path.name in skip:
            continue
        read = read_file(path, within=folder)
        if read.unread:
            out.append(unread(path, read.unread))
        elif note := note_text(read.text):
            out.append(SavedMemory(str(path), "", note, kind_of(frontmatter(read.text)[0])))
    return out


def unread(path: Path, why: str) -> SavedMemory:
    """The notice that the file `path`, there, was not read now."""
    return SavedMemory(str(path), "", "", "", why)
