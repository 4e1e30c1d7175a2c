"""Recall in process, this checkout against another, one call each in turn.

Each kenning runs in a worker process of its own (its `src` on PYTHONPATH, its own copy
of the store with the hook bench's fitting memories and repo, as `hook_bench.py` sets
them up), warmed by a few calls; then the two are asked the same prompt one after the
other, prompt after prompt, so a load that comes and goes on a shared machine weighs on
both alike. Each call is `deliver.recall_for` as the hook makes it (the repo's scopes,
the conversation of a 60 KB transcript, nothing recorded); its wall time is measured in
the worker. Prints p50 / p95 of each and their ratios.

Run: `python bench/recall_ab.py --against ../base/src [--items 100000] [--rounds 120]`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import hook_bench  # noqa: E402
from common import percentile, progress  # noqa: E402

WORKER = """
import sys, time
from kenning import transcripts
from kenning.config import Config
from kenning.deliver import recall_for
from kenning.locate import here
from kenning.store import open_store
db, repo, transcript, *prompts = sys.argv[1:]
store = open_store(db)
config = Config(file={})
where = here(store, config, repo, agent="claude")
context = transcripts.user_turns("claude", transcript, session_id="s")
for line in sys.stdin:
    prompt = prompts[int(line)]
    turns = [t for t in context if t.strip() != prompt.strip()]
    started = time.perf_counter()
    recall_for(store, config, where, prompt, context=turns, record=False)
    print((time.perf_counter() - started) * 1000, flush=True)
"""


class Worker:
    def __init__(self, name: str, src: str | None, folder: Path, items: int) -> None:
        setup = hook_bench.Setup(name, src, folder, items)
        transcript = folder / "t.jsonl"
        hook_bench.transcript(transcript, "s", str(setup.repo))
        env = {**setup.env}
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(setup.db),
                str(setup.repo),
                str(transcript),
                *hook_bench.PROMPTS,
            ],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.times: list[float] = []

    def ask(self, n: int, keep: bool = True) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{n % len(hook_bench.PROMPTS)}\n")
        self.proc.stdin.flush()
        took = float(self.proc.stdout.readline())
        if keep:
            self.times.append(took)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", required=True, help="another checkout's src folder")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=120)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ken-recall-ab-", dir="/dev/shm") as tmp:
        workers = {
            "this": Worker("this", None, Path(tmp) / "this", args.items),
            "against": Worker("against", args.against, Path(tmp) / "against", args.items),
        }
        for n in range(2 * len(hook_bench.PROMPTS)):  # warm: lexicon, stems, page cache
            for w in workers.values():
                w.ask(n, keep=False)
        progress(f"{args.rounds} recalls each, in turn")
        for n in range(args.rounds):
            order = list(workers.values())
            for w in order if n % 2 else reversed(order):
                w.ask(n)
        for w in workers.values():
            w.close()
    after = os.getloadavg()[0]
    print(f"recall in process at {args.items:,} memories (load {load:.2f} -> {after:.2f})")
    figures = {}
    for name, w in workers.items():
        figures[name] = (percentile(w.times, 50), percentile(w.times, 95))
        print(f"  {name:8s} p50 {figures[name][0]:.2f} ms, p95 {figures[name][1]:.2f} ms")
    this, other = figures["this"], figures["against"]
    print(f"  this / against: p50 {this[0] / other[0]:.2f}x, p95 {this[1] / other[1]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
