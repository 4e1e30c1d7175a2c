"""Small helpers shared by the store and CLI tests (fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from kenning.config import db_path

PYTHON = sys.executable


def load_module(path: Path, name: str) -> ModuleType:
    """The Python file at `path` (a fixture's scorer, a bench, docs/generate.py), loaded
    as module `name` and registered under it (its dataclasses look themselves up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def opened(path: str | os.PathLike[str] | None = None) -> Iterator[Any]:
    """The store at `path` (else KEN_DB), closed afterwards."""
    from kenning.store import open_store

    store = open_store(path)
    try:
        yield store
    finally:
        store.close()


def add(text: str, store: Any = None, **options: Any) -> Any:
    """Add an item through the library (global scope unless told otherwise)."""
    from kenning import items

    options.setdefault("scope", items.parse_scope("global"))
    if isinstance(options["scope"], str):
        options["scope"] = items.parse_scope(options["scope"])
    if isinstance(options.get("kind"), str):
        options["kind"] = items.parse_kind(options["kind"])
    if store is not None:
        return items.add(store, text, **options)
    with opened() as own:
        return items.add(own, text, **options)


def snapshot(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Every item with its history, as `ken export` writes them, read without ken's CLI.

    Read with plain sqlite3 and `query_only`, so that taking the snapshot never changes
    (or migrates) the store it looks at. Not `mode=ro`: a read-only connection to a WAL
    store leaves its -wal and -shm files behind, owned by whoever took the snapshot.
    """
    import sqlite3

    target = Path(path or db_path())
    assert target.exists(), target
    conn = sqlite3.connect(target)
    try:
        conn.execute("PRAGMA query_only = 1")
        rows = conn.execute("SELECT * FROM items ORDER BY id").fetchall()
        names = [d[0] for d in conn.execute("SELECT * FROM items LIMIT 0").description]
        revs = conn.execute("SELECT * FROM revisions ORDER BY item_id, id").fetchall()
        rev_names = [d[0] for d in conn.execute("SELECT * FROM revisions LIMIT 0").description]
    finally:
        conn.close()
    history: dict[str, list[dict[str, Any]]] = {}
    for rev in revs:
        data = dict(zip(rev_names, rev, strict=True))
        history.setdefault(data["item_id"], []).append(data)
    out = []
    for row in rows:
        data = dict(zip(names, row, strict=True))
        data["history"] = history.get(data["id"], [])
        out.append(data)
    return out


def export_json(lines: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines.splitlines() if line.strip()]


def run_python(
    code: str, *, env: dict[str, str] | None = None, timeout: float = 120, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet with this venv's interpreter and this test's environment."""
    return subprocess.run(
        [PYTHON, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
        **kwargs,
    )


def one_line_error(stderr: str) -> str:
    """The single line a failing `ken` prints; fails loudly on tracebacks or chatter."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, f"expected one line on stderr, got:\n{stderr}"
    assert lines[0].startswith("ken: "), lines[0]
    return lines[0]


def middle_budget(store: Any, scopes: list[str], item_id: str) -> int:
    """A pack budget with room for this item only: the middle of the range of such
    budgets, so that no rounding decides. (The first item is always given, so the next
    one must be too long for the smallest budget.)"""
    from kenning.pack import MIN_BUDGET, build_pack

    def shown(budget: int) -> list[str]:
        return [i.id for i in build_pack(store, scopes, budget=budget).items]

    def first(count: int) -> int:  # the smallest budget showing `count` items
        low, high = MIN_BUDGET, 5000
        while low < high:
            mid = (low + high) // 2
            low, high = (low, mid) if len(shown(mid)) >= count else (mid + 1, high)
        return low

    one, two = first(1), first(2)
    assert shown(one) == [item_id] and two - one > 2
    return (one + two - 1) // 2


def gone_agent(repo: Path, tmp_path: Path, agent: str, sid: str, prompt: str) -> None:
    """`agent` starts here and is prompted, through `ken hook` run by a process named as
    the agent (a shell under its name), which then exits without SessionEnd."""
    folder = tmp_path / "agent-bin"
    folder.mkdir(exist_ok=True)
    (folder / agent).symlink_to("/bin/sh")
    common = {"session_id": sid, "cwd": str(repo), "transcript_path": str(tmp_path / "t.jsonl")}
    start = {**common, "hook_event_name": "SessionStart", "source": "startup"}
    asked = {**common, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    (tmp_path / "start.json").write_text(json.dumps(start), encoding="utf-8")
    (tmp_path / "prompt.json").write_text(json.dumps(asked), encoding="utf-8")
    ken = Path(sys.executable).with_name("ken")
    ken_hook = f'"{ken}" hook {{}} --agent {agent} < "{tmp_path}/{{}}.json"'
    script = (
        ken_hook.format("SessionStart", "start")
        + "; "
        + ken_hook.format("UserPromptSubmit", "prompt")
    )
    subprocess.run(
        [str(folder / agent), "-c", script + "; true"],
        check=True,
        timeout=60,
        cwd=repo,
        capture_output=True,
    )


def plant_kenning(folder: Path, marker: Path) -> None:
    """A `kenning` package in a folder an agent works in, as a cloned repo may hold one:
    each of its modules, when imported, writes its name to `marker`."""
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for name in ("__init__", "entry", "hooks/__init__", "hooks/server", "hooks/client"):
        path = folder / "kenning" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")


def redaction_seconds(unit: str, size: int) -> float:
    """The best of three times to redact `unit` repeated to `size` characters: what the
    blind corpora's linearity tests compare at two sizes."""
    import time

    from kenning.redact import redact

    text = unit * (size // len(unit))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        redact(text)
        best = min(best, time.perf_counter() - start)
    return best
