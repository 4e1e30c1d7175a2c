"""The words recall works with: the word lists stemmed the way the index stems, the
stems of words met before, a prompt's content words, and the phrases, spellings,
camelCase parts and one-edit neighbours that also count as a match for a word.

Stemming the word lists and linking their forms, synonyms and kinds takes longer than the
rest of a recall, and a hook in its own process did it for every prompt. So the lexicon
is kept in kenning's state folder once built (`lexicon-*.marshal`, see `kenning.kept`),
named by the stamps of the modules it comes from and SQLite's version (its stemmer), and
read back from there.

The near words of `neighbours.tsv` (built offline by bench/neighbours_build.py) are too
many to load for each hook: they are looked up a stem at a time, by a binary search over
the file mapped into memory.
"""

from __future__ import annotations

import functools
import mmap
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kenning.recall.thesaurus import KINDS, PHRASES, SYNONYMS
from kenning.recall.words import EXACT, FORMS, STOP_WORDS, TOPICAL_STOP
from kenning.store import Store

MAX_PROMPT_CHARS = 8000
SYNONYM_WEIGHT = 0.8
KIND_WEIGHT = 0.5
NEIGHBOURS_FILE = Path(__file__).with_name("neighbours.tsv")

WORD = re.compile(r"[^\W_]+")
HUMP = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


@dataclass(frozen=True, slots=True)
class Lexicon:
    stop: frozenset[str]
    related: dict[str, dict[str, float]]  # stem -> stems used for it, with a weight
    spelled: dict[str, str]  # stem -> a word of the lists that stems to it
    phrases: dict[tuple[str, ...], tuple[str, ...]]  # stems typed -> stems meant


_lexicon: Lexicon | None = None


def _link(table: dict[str, dict[str, float]], a: str, b: str, weight: float) -> None:
    if a != b:
        mine = table.setdefault(a, {})
        mine[b] = max(mine.get(b, 0.0), weight)


def lexicon_of(store: Store) -> Lexicon:
    """The word lists, stemmed the way the index stems (once per process, and kept on
    disk for the next process)."""
    global _lexicon
    if _lexicon is None:
        path = _kept_path(store)
        _lexicon = _read_kept(path) if path else None
        if _lexicon is None:
            _lexicon = _build(store)
            if path:
                _keep(path, _lexicon)
    return _lexicon


def _kept_path(store: Store) -> str | None:
    """Where the lexicon built from this code with this SQLite is kept; None when the
    modules cannot be stamped."""
    from kenning import paths

    stamps = []
    for name in (
        __name__,
        "kenning.recall.words",
        "kenning.recall.thesaurus",
        type(store).__module__,
    ):
        try:
            found = os.stat(getattr(sys.modules[name], "__file__", None) or "")
        except (KeyError, OSError):
            return None
        stamps.append(f"{found.st_mtime_ns:x}.{found.st_size:x}")
    version = getattr(sys.modules.get("sqlite3"), "sqlite_version", "")
    return os.path.join(paths.state_dir(), f"lexicon-{'-'.join(stamps)}-{version}.marshal")


def _read_kept(path: str) -> Lexicon | None:
    from kenning import kept

    data = kept.read(path)
    if not (isinstance(data, tuple) and len(data) == 4):
        return None
    stop, related, spelled, phrases = data
    kinds = (frozenset, dict, dict, dict)
    if not all(isinstance(part, kind) for part, kind in zip(data, kinds, strict=True)):
        return None
    return Lexicon(stop, related, spelled, phrases)


def _keep(path: str, lexicon: Lexicon) -> None:
    """Write the lexicon and drop the ones older code kept."""
    import contextlib

    from kenning import kept

    data = (lexicon.stop, lexicon.related, lexicon.spelled, lexicon.phrases)
    if not kept.write(path, data):
        return
    folder = os.path.dirname(path)
    for name in os.listdir(folder):
        if name.startswith("lexicon-") and name != os.path.basename(path):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


def _build(store: Store) -> Lexicon:
    """The lexicon, built from the word lists with the store's stemmer."""
    words = set(STOP_WORDS)
    words.update(w for g in (*FORMS, *EXACT, *SYNONYMS) for w in g)
    words.update(w for heads, kinds in KINDS for w in heads | kinds)
    words.update(w for typed, meant in PHRASES for w in (*typed, *meant))
    ordered = sorted(words)
    stem_of = {w: (s[0] if s else w) for w, s in zip(ordered, store.stems(ordered), strict=True)}
    kept = STOP_WORDS - TOPICAL_STOP
    stop = frozenset(stem_of[w] for w in kept) | kept
    same: dict[str, dict[str, float]] = {}  # forms and synonyms
    for groups, weight in ((FORMS, 1.0), (EXACT, SYNONYM_WEIGHT), (SYNONYMS, SYNONYM_WEIGHT)):
        for group in groups:
            stems = {stem_of[w] for w in group}
            for a in stems:
                for b in stems:
                    _link(same, a, b, weight)
    kinds: dict[str, dict[str, float]] = {}
    for heads, members in KINDS:
        top = {stem_of[w] for w in heads}
        for a in top:
            for b in top | {stem_of[w] for w in members}:
                _link(kinds, a, b, KIND_WEIGHT)
                _link(kinds, b, a, KIND_WEIGHT)
    # A word matches its synonyms, its broader or narrower words, and those of its
    # synonyms ("db" is database, which postgres is a kind of); never two steps of
    # kinds (postgres is not mysql).
    related: dict[str, dict[str, float]] = {}
    for stem in set(same) | set(kinds):
        for other, weight in same.get(stem, {}).items():
            _link(related, stem, other, weight)
            for far in kinds.get(other, {}):
                _link(related, stem, far, KIND_WEIGHT)
        for other in kinds.get(stem, {}):
            _link(related, stem, other, KIND_WEIGHT)
            for far in same.get(other, {}):
                _link(related, stem, far, KIND_WEIGHT)
    phrases = {
        tuple(stem_of[w] for w in typed): tuple(stem_of[w] for w in sorted(meant))
        for typed, meant in PHRASES
    }
    spelled = {stem: word for word, stem in stem_of.items()}
    return Lexicon(stop, related, spelled, phrases)


# British and American spellings: a word typed one way also matches the other.
SPELLINGS = (
    (re.compile(r"(?<=[a-z]{3})is(e|es|ed|ing|er|ers|ation|ations)$"), r"iz\1"),
    (re.compile(r"(?<=[a-z]{3})iz(e|es|ed|ing|er|ers|ation|ations)$"), r"is\1"),
    (re.compile(r"(?<=[a-z]{2}[^aeiou])our(s|ed|ing|ite|ites|able)?$"), r"or\1"),
    (re.compile(r"(?<=[a-z]{3})tre(s)?$"), r"ter\1"),
    (re.compile(r"(?<=[a-z]{3})ter(s)?$"), r"tre\1"),
    (re.compile(r"(?<=[a-z]{3})ence$"), "ense"),
    (re.compile(r"(?<=[a-z]{3})ense$"), "ence"),
    (re.compile(r"(?<=[a-z]{2})yse(s|d)?$"), r"yze\1"),
    (re.compile(r"(?<=[a-z]{2})yze(s|d)?$"), r"yse\1"),
    (re.compile(r"(?<=[a-z]{3})ogue(s)?$"), r"og\1"),
    (re.compile(r"(?<=[a-z]{3}[aeiou])ll(ed|ing|er|ers)$"), r"l\1"),
    (re.compile(r"(?<=[a-z]{3}[aeiou])l(ed|ing|er|ers)$"), r"ll\1"),
)


def spellings(word: str) -> list[str]:
    return list(_spellings(word))


@functools.lru_cache(maxsize=8192)  # a dozen patterns for each word of every prompt
def _spellings(word: str) -> tuple[str, ...]:
    return tuple(v for pattern, repl in SPELLINGS if (v := pattern.sub(repl, word)) != word)


_stems: dict[str, tuple[str, ...]] = {}
MAX_CACHED_WORDS = 100_000


def stem_words(store: Store, words: Sequence[str]) -> list[tuple[str, ...]]:
    """Each word's stems as the index makes them. The stems of words seen before are
    kept for the process: a warm hook server then stems only words it never met."""
    new = [w for w in dict.fromkeys(words) if w not in _stems]
    if new:
        if len(_stems) + len(new) > MAX_CACHED_WORDS:
            _stems.clear()
        _stems.update(zip(new, (tuple(s) for s in store.stems(new)), strict=True))
    return [_stems[w] for w in words]


def words_of(text: str) -> list[str]:
    return list(dict.fromkeys(m.group() for m in WORD.finditer(text[:MAX_PROMPT_CHARS].lower())))


def content_words(store: Store, text: str) -> dict[str, str]:
    """Content words of `text`: stem -> the first word that stemmed to it."""
    words = words_of(text)
    if not words:
        return {}
    stop = lexicon_of(store).stop
    out: dict[str, str] = {}
    for word, stems in zip(words, stem_words(store, words), strict=True):
        for stem in stems:
            # A stop word's stem drops the word, unless the stemmer cut much more than
            # an ending ("evening" is not "even").
            stopped = word in stop or (stem in stop and len(word) < len(stem) + 3)
            if len(stem) > 1 and not stopped and not stem.isdigit():
                out.setdefault(stem, word)
    return out


def humps(text: str) -> dict[str, list[str]]:
    """Words typed in camelCase or PascalCase, and the words they are made of."""
    out: dict[str, list[str]] = {}
    for match in WORD.finditer(text[:MAX_PROMPT_CHARS]):
        word = match.group()
        if word.lower() != word and word.upper() != word:
            parts = [p.lower() for p in HUMP.findall(word)]
            if len(parts) > 1:
                out[word.lower()] = parts
    return out


@functools.lru_cache(maxsize=1024)  # a typo is often typed again
def edits(stem: str) -> frozenset[str]:
    """Every string one edit from `stem`: a letter dropped, swapped, changed or added."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    cuts = [(stem[:i], stem[i:]) for i in range(len(stem) + 1)]
    out = {a + b[1:] for a, b in cuts if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1}
    out |= {a + c + b[1:] for a, b in cuts if b for c in letters}
    out |= {a + c + b for a, b in cuts for c in letters}
    out.discard(stem)
    return frozenset(out)


OBJECTS = frozenset({"it", "that", "this", "them", "these", "those", "him", "her", "me", "us"})


def add_phrases(
    store: Store,
    prompt: str,
    lexicon: Lexicon,
    words: dict[str, str],
    weights: dict[str, float],
    related: dict[str, dict[str, float]],
) -> None:
    """Phrases of the thesaurus in the prompt ("kick off", "roll back"): the phrase's
    first content word also matches what the phrase means; a phrase of stop words alone
    ("back up") becomes a concept of its own."""
    seq = [m.group() for m in WORD.finditer(prompt[:MAX_PROMPT_CHARS].lower())]
    stems = [s[0] if s else "" for s in stem_words(store, seq)]
    found: list[tuple[int, ...]] = []
    for n in (3, 2):
        found += [tuple(range(i, i + n)) for i in range(len(stems) - n + 1)]
    # A verb and its particle around a short word: "write that down", "roll it back".
    found += [(i, i + 2) for i in range(len(stems) - 2) if seq[i + 1] in OBJECTS]
    for at in found:
        meant = lexicon.phrases.get(tuple(stems[i] for i in at))
        if not meant:
            continue
        own = [stems[i] for i in at if stems[i] in words]
        if own:
            mine = related.setdefault(own[0], {})
        else:
            phrase = " ".join(seq[i] for i in at)
            key = "_".join(stems[i] for i in at)
            words[key], weights[key] = phrase, 1.0
            mine = related.setdefault(key, {})
        for stem in meant:
            if stem not in own:
                mine[stem] = max(mine.get(stem, 0.0), SYNONYM_WEIGHT)


_near_map: mmap.mmap | bytes | None = None


def _near_data() -> mmap.mmap | bytes:
    """neighbours.tsv, mapped once per process (empty when it cannot be read: recall
    then works without near words)."""
    global _near_map
    if _near_map is None:
        try:
            with open(NEIGHBOURS_FILE, "rb") as handle:
                _near_map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            _near_map = b""
    return _near_map


def _near_line(data: mmap.mmap | bytes, key: bytes) -> bytes:
    """The rest of the line of the sorted file that starts with `key` and a tab."""
    lo, hi = 0, len(data)
    while lo < hi:
        mid = (lo + hi) // 2
        start = data.rfind(b"\n", 0, mid) + 1
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        tab = data.find(b"\t", start, end)
        found = data[start : tab if tab >= 0 else end]
        if found < key:
            lo = end + 1
        elif found > key:
            hi = start
        else:
            return data[tab + 1 : end] if tab >= 0 else b""
    return b""


@functools.lru_cache(maxsize=8192)
def _near(stem: str) -> tuple[tuple[str, str, float], ...]:
    out = []
    for entry in _near_line(_near_data(), stem.encode()).decode().split():
        other, word, sim = entry.split(":")
        out.append((other, word, float(sim)))
    return tuple(out)


def near_words(stems: Iterable[str]) -> dict[str, tuple[tuple[str, str, float], ...]]:
    """For each stem, the stems of words that mean nearly the same (a word that spells
    each, and how near it is, 0.6 to 1), from neighbours.tsv; stems with none left out."""
    out = {}
    for stem in stems:
        try:
            found = _near(stem)
        except (ValueError, UnicodeDecodeError):  # a damaged line: no near words
            found = ()
        if found:
            out[stem] = found
    return out
