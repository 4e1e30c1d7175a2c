"""Benchmark stores of N active memories, built once and kept for the next run.

A store of 1,000,000 memories takes minutes to build, so each size is built once into
a cache folder (`BENCH_CACHE`, default `/var/tmp/kenning-bench`) and copied to a
scratch folder for each run: the copy is what a benchmark opens (and what an older
kenning's benchmark opens beside it), the cached store stays as it was built. The
memories are `corpus.memories(size)`, checked as an import checks them, made active.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import replace
from itertools import islice
from pathlib import Path

import corpus
from common import progress

CHUNK = 50_000  # memories parsed and checked at a time (1M Items at once is a lot of RAM)


def cache_dir() -> Path:
    return Path(os.environ.get("BENCH_CACHE") or "/var/tmp/kenning-bench")


def _build(path: Path, size: int) -> None:
    from kenning import transfer
    from kenning.model import Status
    from kenning.store import open_store

    tmp = path.with_name(path.name + ".building")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    store = open_store(tmp)
    try:
        lines = corpus.memories(size)
        done = 0
        while chunk := list(islice(lines, CHUNK)):
            checked = [replace(i, status=Status.ACTIVE) for i in transfer.read_items(chunk)]
            store.insert_many(checked, change="add")
            done += len(chunk)
            progress(f"  built {done:,}/{size:,}")
        store.checkpoint()
    finally:
        store.close()
    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA journal_mode=DELETE")  # one file to copy
    conn.close()
    tmp.rename(path)


def cached_store(size: int) -> Path:
    """The cached store of `size` memories, built now when missing."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"memories-{size}.db"
    if not path.exists():
        progress(f"building a store of {size:,} active memories into {folder} (once)")
        _build(path, size)
    return path


def scratch_copy(size: int, folder: Path) -> Path:
    """A fresh copy of the cached store of `size` memories in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "memory.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(cached_store(size), target)
    return target
