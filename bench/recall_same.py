"""Recall's whole answer for the hook bench's prompts at 100,000 memories, item by item, to
hold a change of how recall computes to the same results as before.

On a copy of the cached store with the hook bench's fitting memories (added with fixed
dates), asks recall, in one process, each prompt of `hook_bench.py` and `scale_bench.py`
and a few that take recall's other paths (typos, camelCase, phrases, a repo's name),
each with and without the conversation of a 60 KB transcript, with the default gates
and with every gate off (every candidate scored), and asks each twice (the second from
whatever the process keeps); then changes the store (adds memories, edits one, archives
one) and asks again, so what a process keeps is seen to follow the store; and searches
as `ken search` does (`scale_bench.py`'s queries, in all scopes, in one repo, and with
no limit), since recall's candidates are a search. Every candidate and hit is written
as one JSON line (its title, scope and every figure in full precision, not its id,
which is new each run) to `--out`.

Run it on two checkouts and compare the files:
`PYTHONPATH=OTHER/src python bench/recall_same.py --out a.jsonl`,
`python bench/recall_same.py --out b.jsonl`, `cmp a.jsonl b.jsonl`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import corpus  # noqa: E402
import hook_bench  # noqa: E402
import scale_bench  # noqa: E402
import stores  # noqa: E402

SHORT_ID = re.compile(r"\[m:[0-9a-z]+\]")
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
SCOPE = "repo:github.com/acme/shop"
OTHERS = [
    "the chekout webhok retires time out",  # typos
    "why is ToMatchSnapshot failing in the accountId test",  # camelCase, a joined pair
    "kick off the staging rollout and roll it back if the probe fails",  # phrases
    "the shop repo's postgres colour settings in the billing config",  # a repo's name
    "optimise the integ tests for the invoicing serialiser",  # spellings, affixes
    "what does it do",  # nothing topical
    "",
]


def stamped(item: Any, days: int) -> Any:
    stamp = (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return replace(item, created_at=stamp, updated_at=stamp, expires_at=None)


def rows(result: Any, label: str) -> list[dict[str, Any]]:
    # Not the tokens: they count the short ids, new each run, as the text's do.
    out = [{"ask": label, "terms": list(result.query_terms), "told": bool(result.tokens)}]
    out.extend(
        {
            "title": c.item.title,
            "scope": str(c.item.scope),
            "shared": list(c.shared),
            "relevance": repr(c.relevance),
            "normalized": repr(c.normalized),
            "weight": repr(c.weight),
            "decay": repr(c.decay),
            "score": repr(c.score),
            "kept": c.kept,
            "reason": c.reason,
        }
        for c in result.candidates
    )
    out.append({"text": SHORT_ID.sub("[m:ID]", result.text)})  # ids are new each run
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    from kenning import ids, items, transcripts
    from kenning.recall import RecallSettings, recall
    from kenning.store import open_store

    with tempfile.TemporaryDirectory(prefix="ken-recall-same-", dir="/dev/shm") as tmp:
        folder = Path(tmp)
        store = open_store(stores.scratch_copy(args.items, folder))
        scope = items.parse_scope(SCOPE)
        fitting = [
            stamped(items.new_item(text, scope=scope), n)
            for n, text in enumerate(hook_bench.FITTING)
        ]
        store.insert_many(fitting, change="add")
        path = folder / "t.jsonl"
        hook_bench.transcript(path, "s", str(folder))
        turns = transcripts.user_turns("claude", str(path), session_id="s")
        scopes = ["global", SCOPE, "repo:github.com/acme/relay"]
        prompts = list(dict.fromkeys([*hook_bench.PROMPTS, *scale_bench.PROMPTS, *OTHERS]))
        settings = {"defaults": RecallSettings(), "open": RecallSettings(min_score=0.0)}
        lines: list[dict[str, Any]] = []

        def ask(stage: str) -> None:
            for prompt in prompts:
                for label, context in (("alone", ()), ("talk", turns)):
                    for name, chosen in settings.items():
                        for time in (1, 2):
                            result = recall(
                                store, prompt, scopes, settings=chosen, context=context, now=NOW
                            )
                            lines.extend(rows(result, f"{stage} {prompt!r} {label} {name} {time}"))

        ask("before")
        # And the store's search, which recall's candidates come from: `ken search`'s
        # queries, in every scope, in one repo, and unlimited.
        for text in [*corpus.queries(200), *scale_bench.COMMON_WORDS]:
            for label, found in (
                ("all", items.search(store, text)),
                ("repo", items.search(store, text, scopes=[SCOPE, "global"])),
            ):
                lines.append({"search": f"{text!r} {label}"})
                lines.extend(
                    {"title": f.item.title, "scope": str(f.item.scope), "score": repr(f.score)}
                    for f in found
                )
        for text in corpus.queries(12, seed=5):
            found = items.search(store, text, scopes=[SCOPE], limit=0)
            lines.append({"search": f"{text!r} unlimited", "found": len(found)})
            lines.extend({"title": f.item.title, "score": repr(f.score)} for f in found)
        # The store changes under the same process: what it kept must follow.
        store.insert_many(
            [
                stamped(
                    items.new_item(
                        "Chekout webhook retries go through the retry queue, never inline",
                        scope=scope,
                    ),
                    1,
                ),
                stamped(items.new_item("Zyzzyvafoo deploys need the helm flag", scope=scope), 2),
            ],
            change="add",
        )
        ask("added")
        first = store.get_item(fitting[3].id)
        store.replace_item(
            replace(
                first,
                body="The probe waits 30 s; kubectl rollout status needs --timeout",
                revision=ids.new_ulid(),
            ),
            "edit",
        )
        second = store.get_item(fitting[1].id)
        store.replace_item(
            replace(second, status=items.parse_status("archived"), revision=ids.new_ulid()),
            "archive",
        )
        ask("changed")
        store.close()
    Path(args.out).write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{len(lines)} lines to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
