"""Text kept for a person outside the store, in kenning's state folder: an edit that
`ken edit` could not save (`edits/<short id>-*.md`: the memory changed meanwhile, or the
header was refused) and a plan an agent drafted over MCP (`plans/<digest start>.json`).

A memory's text may be private, so both folders are the user's alone (0700, files
0600). They are copies of memories outside the store, so `ken forget` removes them with
the memory (`forget`): the kept edits of a forgotten memory, and the drafted plans that
name it or quote a line of it. Nothing else removes them: they stay until the person has
taken their text.

The standard library only, beside `kenning.ids` and `kenning.errors`:
`kenning.items.forget` calls it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from kenning import ids
from kenning.config import state_dir
from kenning.errors import KenningError

EDITS = "edits"
PLANS = "plans"
# Where a plan names an existing item (kenning.plans): these keys' values, and the keys
# of `expected_revisions`; a source names one as `item:ID`.
REF_KEYS = ("id", "ids", "into")


def folder(name: str) -> Path:
    """A folder of the state folder, made (or made again) the user's alone; KenningError
    when it cannot be (a file where a folder of its path should be, no access)."""
    state = state_dir()
    path = state / name
    try:
        for each in (state, path):
            each.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(each, 0o700)  # one made before, by an older kenning, may be 0755
    except OSError as exc:
        raise KenningError(
            f"cannot make {path} ({exc.strerror}): set XDG_STATE_HOME to a folder of your own"
        ) from None
    return path


def keep_edit(item_id: str, text: str) -> Path:
    """Keep an edit of `item_id` that could not be saved, in a file of its own."""
    handle, name = tempfile.mkstemp(
        prefix=f"{ids.short_id(item_id)}-", suffix=".md", dir=folder(EDITS)
    )
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(text)
    return Path(name)


def save_plan(name: str, text: str) -> Path:
    """Write a drafted plan as `plans/<name>.json`."""
    path = folder(PLANS) / f"{name}.json"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def forget(item_ids: Collection[str], needles: Collection[str]) -> int:
    """Remove the kept edits of `item_ids` and the drafted plans that name one of them or
    hold one of `needles` (compared as `kenning.hooklog.scrub` does); returns how many
    files went."""
    wanted = {i.upper() for i in item_ids}
    shown = {ids.short_id(i) for i in wanted}
    lines = [" ".join(n.split()).lower() for n in needles if n.strip()]
    gone = [path for path in _files(EDITS, "*.md") if path.name.partition("-")[0] in shown]
    for path in _files(PLANS, "*.json"):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if _names(text, wanted) or any(n in " ".join(text.split()).lower() for n in lines):
            gone.append(path)
    for path in gone:
        erase(path)
    return len(gone)


def erase(path: Path | str) -> None:
    """Remove a file, its bytes zeroed first so its text does not linger in the blocks
    the file system frees (as the hook log is scrubbed)."""
    with contextlib.suppress(FileNotFoundError):
        with open(path, "r+b") as fh:
            zero(fh)
        os.unlink(path)


def zero(fh: BinaryIO) -> None:
    """Overwrite an open file's bytes with zeros, on disk."""
    size = fh.seek(0, os.SEEK_END)
    fh.seek(0)
    fh.write(bytes(size))
    fh.flush()
    os.fsync(fh.fileno())


def _files(name: str, pattern: str) -> list[Path]:
    path = state_dir() / name
    return sorted(path.glob(pattern)) if path.is_dir() else []


def _names(text: str, wanted: set[str]) -> bool:
    """Whether a plan's JSON names one of the `wanted` ids, in full or by a reference
    `kenning.items.resolve` would take for it (a start or end of 4+ characters)."""
    try:
        plan = json.loads(text)
    except ValueError:
        return False
    refs = [r for op in _operations(plan) for r in _refs(op)]
    for ref in refs:
        if not ids.is_valid_ref(ref):
            continue
        key = ids.normalize_ref(ref)
        if any(i.startswith(key) or i.endswith(key) for i in wanted):
            return True
    return False


def _operations(plan: Any) -> list[dict[str, Any]]:
    found = plan.get("operations") if isinstance(plan, dict) else None
    return [op for op in found or [] if isinstance(op, dict)]


def _refs(op: dict[str, Any]) -> Iterator[str]:
    for key in REF_KEYS:
        value = op.get(key)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, str))
    revisions = op.get("expected_revisions")
    if isinstance(revisions, dict):
        yield from (str(k) for k in revisions)
    for where in (op, op.get("into")):
        sources = where.get("sources") if isinstance(where, dict) else None
        for source in sources if isinstance(sources, list) else []:
            if isinstance(source, str) and source.startswith("item:"):
                yield source.removeprefix("item:")
