"""Where the warm hook server's time goes on a prompt at 100,000 memories, in process.

Sets up a kenning as `hook_bench.py` does (a copy of the cached store, the six memories
that fit, a git repo), then hands the server's code path (`handle_bytes` with the
server's open stores, then the bookkeeping it runs after answering) Claude Code's
UserPromptSubmit payload, a new session and a 60 KB transcript each round, and prints
the wall time of the answer and of the bookkeeping (p50 / p95), of recall alone, and
with `--profile` cProfile's top functions for the answer.

Run: `python bench/hook_profile.py [--items 100000] [--rounds 60] [--profile]`; with
`PYTHONPATH=OTHER/src` it measures another checkout's kenning.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import hook_bench  # noqa: E402
from common import percentile  # noqa: E402

ARGV = ["UserPromptSubmit", "--agent", "claude"]
# What `--parts` times (module, function; a class's method as "Class.method").
PARTS = [
    ("kenning.hooks.run", "_bound"),
    ("kenning.config", "Config.__init__"),
    ("kenning.sessions", "process_chain"),
    ("kenning.hooks.handlers", "locate"),
    ("kenning.hooks.handlers", "_session"),
    ("kenning.sessions", "close_stale"),
    ("kenning.transcripts", "user_turns"),
    ("kenning.deliver", "in_context"),
    ("kenning.deliver", "recall"),
    ("kenning.recall", "_concepts"),
    ("kenning.recall", "_scope_names"),
    ("kenning.recall", "_fields"),
    ("kenning.recall", "_affixes"),
    ("kenning.recall", "_assign"),
    ("kenning.recall", "_Scorer.matches"),
    ("kenning.recall", "_budget"),
    ("kenning.recall.lexicon", "add_phrases"),
    ("kenning.recall.lexicon", "content_words"),
    ("kenning.store.sqlite", "SQLiteStore.search"),
    ("kenning.store.sqlite", "SQLiteStore.doc_freqs"),
    ("kenning.store.sqlite", "SQLiteStore.word_freqs"),
    ("kenning.store.sqlite", "SQLiteStore.stems"),
    ("kenning.store.sqlite", "SQLiteStore.deliveries"),
    ("kenning.store.sqlite", "SQLiteStore.list_items"),
    ("kenning.store.sqlite", "SQLiteStore.find_session"),
    ("kenning.store.sqlite", "SQLiteStore.upsert_session"),
]


def time_parts(spent: dict[str, list[float]]) -> None:
    """Wrap each of PARTS so that its wall time goes to `spent` (a part called from
    within another is counted in both)."""
    import importlib

    for module_name, name in PARTS:
        owner: Any = importlib.import_module(module_name)
        *outer, attr = name.split(".")
        for part in outer:
            owner = getattr(owner, part)
        real = getattr(owner, attr)

        def timed(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return _real(*a, **k)
            finally:
                spent[_name].append((time.perf_counter() - started) * 1000)

        setattr(owner, attr, timed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=45)
    parser.add_argument("--parts", action="store_true", help="time each of PARTS")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ken-hook-profile-", dir="/dev/shm") as tmp:
        setup = hook_bench.Setup("this", None, Path(tmp) / "this", args.items)
        from kenning import recall as recall_mod
        from kenning.hooks import server, wire
        from kenning.paths import serving

        env = wire.hook_env({**setup.env, "KEN_HOOK_SERVER": "1"})
        recall_ms: list[float] = []
        real = recall_mod.recall

        def timed(*a: object, **k: object) -> recall_mod.Recall:
            started = time.perf_counter()
            try:
                return real(*a, **k)  # type: ignore[arg-type]
            finally:
                recall_ms.append((time.perf_counter() - started) * 1000)

        import kenning.deliver

        kenning.deliver.recall = timed  # type: ignore[assignment]
        spent: dict[str, list[float]] = collections.defaultdict(list)
        if args.parts:
            time_parts(spent)
        os.chdir(setup.repo)
        profile = cProfile.Profile() if args.profile else None
        answer_ms: list[float] = []
        later_ms: list[float] = []
        told = 0
        for n in range(args.rounds + 3):
            stdin = setup.payload("UserPromptSubmit")
            later: list[Callable[[], None]] = []
            starts: list[tuple[list[str], str | None]] = []
            if profile is not None and n >= 3:
                profile.enable()
            started = time.perf_counter()
            with serving(env) as hook_env:
                out = server.handle_bytes(
                    ARGV,
                    stdin,
                    stores=server.STORES,
                    later=later,
                    caller=os.getpid(),
                    starts=starts,
                    env=hook_env,
                )
                answered = time.perf_counter()
                if profile is not None:
                    profile.disable()
                for action in later:
                    action()
            done = time.perf_counter()
            if n >= 3:  # the first answers warm the caches, as in hook_bench
                answer_ms.append((answered - started) * 1000)
                later_ms.append((done - answered) * 1000)
                told += bool(out.strip())
        server.STORES.close()
        del recall_ms[:3]
        for name, values in (
            ("answer", answer_ms),
            ("recall", recall_ms),
            ("bookkeeping", later_ms),
        ):
            print(
                f"{name}: p50 {percentile(values, 50):.2f} ms, "
                f"p95 {percentile(values, 95):.2f} ms ({len(values)} rounds)"
            )
        print(f"told something: {told}/{args.rounds}")
        rounds = args.rounds + 3
        for name, values in sorted(spent.items(), key=lambda kv: -sum(kv[1])):
            print(
                f"  {name:28s} {sum(values) / rounds:6.2f} ms a round "
                f"({len(values) / rounds:.1f} calls)"
            )
        if profile is not None:
            text = io.StringIO()
            stats = pstats.Stats(profile, stream=text)
            stats.sort_stats("tottime").print_stats(args.top)
            stats.sort_stats("cumulative").print_stats(args.top)
            print(text.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
