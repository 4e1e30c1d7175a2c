"""Many writers at once, and writers killed mid-write, leave a whole store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import KEN_BIN
from helpers import opened
from kenning import items as items_mod
from kenning.model import Scope

# Hooks held to the timeouts agents give them: alone on the cores (see pyproject's markers).
pytestmark = pytest.mark.timing

WORKERS = 8
PER_WORKER = 250

WRITER = """
import sys
from kenning import items
from kenning.model import Scope, ScopeType
from kenning.store import open_store

worker, count = int(sys.argv[1]), int(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()  # the barrier: every process starts on the same line
store = open_store()
try:
    for n in range(count):
        items.add(store, f"Worker {worker} wrote item {n}\\nabout deploys and caches",
                  scope=Scope(ScopeType.GLOBAL), tags=[f"w{worker}"])
finally:
    store.close()
print("done", flush=True)
"""

READER = """
import sys
from kenning import items
from kenning.store import open_store

print("ready", flush=True)
sys.stdin.readline()
store = open_store()
try:
    for _ in range(150):
        items.search(store, "deploys caches", limit=5)
        items.list_items(store, limit=5)
finally:
    store.close()
print("done", flush=True)
"""


def run_together(procs: list[subprocess.Popen[str]]) -> list[tuple[str, str]]:
    """Wait for every process to be ready, release them on the same line, and collect
    what each printed (killing any left when something fails)."""
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:  # release them together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        return [proc.communicate(timeout=240) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def start(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


@pytest.mark.slow
def test_eight_processes_adding_at_once_leave_every_item_and_never_see_a_lock(db_path):
    assert not db_path.exists()  # they race to create it, too
    procs = [start(WRITER, str(n), str(PER_WORKER)) for n in range(WORKERS)]
    procs += [start(READER) for _ in range(2)]
    results = run_together(procs)
    for proc, (out, err) in zip(procs, results, strict=True):
        assert "locked" not in err, err
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    with opened(db_path) as store:
        assert store.integrity_check() == "ok"
        assert store.count_items() == WORKERS * PER_WORKER
        for worker in range(WORKERS):
            tagged = store.conn.execute(
                "SELECT count(*) FROM items, json_each(items.tags) WHERE json_each.value = ?",
                (f"w{worker}",),
            ).fetchone()[0]
            assert tagged == PER_WORKER
        revisions = store.conn.execute("SELECT count(*) FROM revisions").fetchone()[0]
        assert revisions == WORKERS * PER_WORKER


CHANGER = """
import sys
from kenning import items
from kenning.store import open_store

ref, worker = sys.argv[1], int(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
store = open_store()
try:
    for n in range(5):
        items.change(store, ref, add_tags=[f"w{worker}n{n}"])
    if worker == 0:
        items.set_status(store, ref, "archive")
finally:
    store.close()
print("done", flush=True)
"""


def test_processes_changing_one_memory_at_once_lose_no_change(db_path):
    """Each change is made to the memory as stored when it is written: 40 tags added at
    once by 40 processes came out as 2, and an approval could be undone by an edit."""
    with opened(db_path) as store:
        item = items_mod.add(store, "Deploys go through make release", scope=Scope.parse("global"))
    procs = [start(CHANGER, item.id, str(n)) for n in range(6)]
    results = run_together(procs)
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
    with opened(db_path) as store:
        stored = store.get_item(item.id)
        versions = store.revisions(item.id)
    assert set(stored.tags) == {f"w{w}n{n}" for w in range(6) for n in range(5)}
    assert stored.status.value == "archived"
    assert len(versions) == 1 + 30 + 1 and versions[-1].id == stored.revision


def _wait_for_line(stream, prefix: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no line starting with {prefix!r}")


@pytest.mark.slow
def test_killing_an_import_midway_leaves_a_whole_store_with_every_reported_batch(tmp_path, db_path):
    dump = tmp_path / "big.jsonl"
    with dump.open("w") as fh:
        for n in range(20_000):
            fh.write(
                json.dumps(
                    {
                        "title": f"Imported memory {n}",
                        "body": "the deploy pipeline runs make release",
                        "tags": ["x"],
                    }
                )
            )
            fh.write("\n")
    with opened(db_path):
        pass  # the store exists before the writer is killed
    proc = subprocess.Popen(
        [str(KEN_BIN), "import", str(dump)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert proc.stderr is not None
        line = _wait_for_line(proc.stderr, "imported ", timeout=120)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL, "the import finished before it was killed"
    reported = int(line.split()[1].split("/")[0])
    assert reported >= 500
    with opened(db_path) as store:
        assert store.integrity_check() == "ok"
        count = store.count_items()
        assert reported <= count < 20_000
        assert count % 500 == 0, "a batch landed in part"
        revisions = store.conn.execute("SELECT count(*) FROM revisions").fetchone()[0]
        assert revisions == count
        fts = store.conn.execute(
            "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'imported'"
        ).fetchone()[0]
        assert fts == count


ONE_BY_ONE = """
from kenning import items
from kenning.model import Scope, ScopeType
from kenning.store import open_store


store = open_store()
for n in range(100_000):
    item = items.add(store, f"Crash test item {n}", scope=Scope(ScopeType.GLOBAL))
    print(item.id, flush=True)
"""


@pytest.mark.slow
def test_killing_a_writer_midway_keeps_every_add_that_returned(db_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", ONE_BY_ONE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    printed: list[str] = []
    try:
        assert proc.stdout is not None
        while len(printed) < 300:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            printed.append(line.strip())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # Ids printed after the last read are in the pipe; they were stored too.
        printed += [line.strip() for line in proc.stdout.read().splitlines() if line.strip()]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    with opened(db_path) as store:
        assert store.integrity_check() == "ok"
        stored = {row[0] for row in store.conn.execute("SELECT id FROM items")}
        assert set(printed) <= stored
        assert len(stored) - len(printed) <= 1  # at most the add it was killed inside
        assert store.count_items() == len(stored)
