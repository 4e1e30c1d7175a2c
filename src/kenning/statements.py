"""Same statement, same topic: how curation and lint compare two memories.

Two memories are compared by what they say, with no model call: their words are cut
and stemmed as the search index stems them, and read for a few structures that a
person's rules share. Each signal is lexical or structural, so it can be measured on a
labelled set and explained (docs/explanation/curation.md has the figures).

1. **Concepts.** Each word becomes a concept: its stem, or the first word of its group
   when it has a common synonym (`db` and `database`, `pr` and `pull request`),
   digits for number words. Filler and the verbs of an instruction ("use", "prefer",
   "always", "should") carry no concept: "Use pnpm" and "Prefer pnpm" say the same.
2. **Polarity.** A text is cut into clauses at punctuation. Inside a clause, a negation
   ("never", "don't", "no", "avoid", "stop", "drop") makes the rest of the clause
   negative; "not X", "X over Y", "X rather than Y", "X instead of Y" and "replace Y
   with X" make only Y negative; "Y is retired" or "deprecated" makes its clause
   negative. "Use pnpm, never npm" holds pnpm positively and npm negatively.
3. **Alignment.** The two word sequences are aligned (longest matching blocks). Where
   one concept stands in the other's place, the swap is a *value* (a number, a day),
   a *choice* (right after use, prefer, with, via, as, to, is), or *context* (anything
   else: the subject, the object a rule is about).

Then, for an older memory A and a newer B on a **shared topic** (they share at least
half the concepts of the shorter one):

- B **reverses or replaces** A when a shared concept flips polarity (positive in A,
  only negative in B, or the other way), when B swaps a concept for its antonym
  (before/after, long/short, sync/async), or when every swap is a value or a choice
  (Node 18 to Node 20, CircleCI to Buildkite for CI), or B says it is an update
  ("now", "no longer") and changes one thing.
- B is **the same statement** as A when nothing reverses, no swap changes a value,
  a choice or the context, and they share most concepts both ways.
- Otherwise they are different statements that look alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal, Protocol

from kenning.recall.words import FORMS, STOP_WORDS, SYNONYMS


class Stemmer(Protocol):
    """What the comparison needs of the store: the index's own word splitting."""

    def stems(self, texts: Sequence[str]) -> list[list[str]]: ...
    def words_in(self, texts: Sequence[str]) -> list[list[str]]: ...


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that carry a rule's force, or light verbs: not its topic.
DIRECTIVES = _words(
    "always prefer prefers preferred favour favor please should must required require "
    "requires keep ensure remember recommended ok okay fine default generally rather "
    "live lives put puts just"
)
# Stop words that matter here: the order of steps, counts, and the tool called make.
KEPT = _words("after before make one two first last under above more")
STOP = (STOP_WORDS - KEPT) | DIRECTIVES | _words("onto longer anymore")
# Verb negations: the clause says not to do something.
NEGATIONS = _words(
    "never no don dont doesn doesnt isn aren shouldn shouldnt mustn won cannot cant "
    "avoid stop stopped drop dropped nor without disallow forbid forbidden ban banned "
    "skip omit"
)
MODALS = _words("do does did should must can could will would is are be may")
# Contrasts: only what follows them is rejected ("pnpm, not npm", "spaces over tabs").
CONTRASTS = _words("not over than")
PREFERS = _words("prefer prefers favour favor choose pick use")
# These reject their whole clause: "Jenkins is retired".
RETIRED = _words("retired deprecated obsolete gone abandoned")
# Where a rejected phrase ends.
ENDS = _words(
    "for in on at when if unless because during while with that which who where to from onto into"
)
DETERMINERS = _words("the a an any every each your our this these those")
# A swap right after one of these is a choice between tools, values or ways.
CHOICE_WORDS = _words("use using uses prefer with via as to is are be through by")
UPDATE_CUES = _words("now anymore longer instead switch switched move moved replace")
NUMBER_WORDS = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "twelve": "12",
    "fifteen": "15",
    "twenty": "20",
    "thirty": "30",
    "sixty": "60",
    "hundred": "100",
}
# Times: a swap of one for another is a change of value ("every night" to "every hour").
DAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays "
    "wednesdays thursdays fridays saturdays sundays weekly daily nightly hourly monthly "
    "night nights hour hours minute minutes second seconds day days week weeks month "
    "months year years morning evening"
)
# Words used for each other in rules about code, beyond recall's list.
MORE_SYNONYMS = tuple(
    _words(group)
    for group in (
        "answer answers reply replies respond",
        "postgres postgresql pg",
        "directly straight",
        "under below",
        "short brief",
        "night nights nightly",
        "day days daily",
        "hour hours hourly",
        "week weeks weekly",
        "month months monthly",
    )
)
PHRASES: dict[tuple[str, str], str] = {
    ("pull", "request"): "pr",
    ("pull", "requests"): "pr",
    ("merge", "request"): "pr",
    ("semantic", "versioning"): "semver",
}
ANTONYMS = (
    ("after", "before"),
    ("long", "short"),
    ("sync", "async"),
    ("synchronous", "asynchronous"),
    ("enable", "disable"),
    ("allow", "forbid"),
    ("public", "private"),
    ("more", "less"),
    ("large", "small"),
    ("on", "off"),
    ("include", "exclude"),
    ("local", "utc"),
)
_GO = re.compile(r"(?<=\S)\s+Go\b")
_CLAUSE = re.compile(r"[;,.!?:()\[\]\n]+|\s+(?:but|then)\s+|\s+-+\s+")
MIN_TOPIC = 0.5  # shared concepts over the shorter text's, for a shared topic
MIN_COPY = 0.75  # the same, for the same statement
MIN_COPY_BOTH = 0.5  # shared concepts over the longer text's, for the same statement

Relation = Literal["copy", "reversal"]


@dataclass(frozen=True, slots=True)
class Statement:
    """A text read for comparison: per word, its concept ('' for none), whether the
    text rejects it, and whether its clause is negated; and, worked out once, its
    concepts, the ones it rejects and the ones it asserts (said plainly: not rejected,
    in a clause with no negation)."""

    text: str
    words: tuple[str, ...]
    concepts: tuple[str, ...]
    rejected: tuple[bool, ...]
    negated: tuple[bool, ...]
    content: frozenset[str] = field(init=False)
    rejects: frozenset[str] = field(init=False)
    asserts: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        rows = list(zip(self.concepts, self.rejected, self.negated, strict=True))
        object.__setattr__(self, "content", frozenset(c for c, _, _ in rows if c))
        object.__setattr__(self, "rejects", frozenset(c for c, r, _ in rows if c and r))
        object.__setattr__(
            self, "asserts", frozenset(c for c, r, n in rows if c and not r and not n)
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    relation: Relation | None
    why: str
    shared: float  # shared concepts over the shorter text's


class Lexicon:
    """The word lists, with each word's stem as the index makes it (built once)."""

    def __init__(self, stemmer: Stemmer) -> None:
        groups = [*SYNONYMS, *FORMS, *MORE_SYNONYMS]
        words = sorted({w for g in groups for w in g} | {w for p in ANTONYMS for w in p} | DAYS)
        stems = dict(
            zip(
                words,
                (s[0] if s else w for w, s in zip(words, stemmer.stems(words), strict=True)),
                strict=True,
            )
        )
        self.canon: dict[str, str] = {}
        for group in groups:
            first = min(group)
            for word in group:
                self.canon.setdefault(word, first)
                self.canon.setdefault(stems[word], first)
        self.opposites = {
            frozenset((self.concept(x, stems[x]), self.concept(y, stems[y]))) for x, y in ANTONYMS
        }
        self.days = frozenset(self.concept(d, stems[d]) for d in DAYS)

    def concept(self, word: str, stem: str) -> str:
        if word in STOP or word in NEGATIONS or word in RETIRED or word in CONTRASTS:
            return ""
        if len(word) == 1 and not word.isdigit():
            return ""
        if word in NUMBER_WORDS:
            return NUMBER_WORDS[word]
        return self.canon.get(word, self.canon.get(stem, stem))

    def is_value(self, concept: str) -> bool:
        return concept in self.days or bool(re.fullmatch(r"v?\d+[a-z]{0,3}", concept))


_LEXICON: list[Lexicon] = []


def lexicon(stemmer: Stemmer) -> Lexicon:
    if not _LEXICON:
        _LEXICON.append(Lexicon(stemmer))
    return _LEXICON[0]


def read(stemmer: Stemmer, texts: Sequence[str]) -> list[Statement]:
    """Each text as a Statement (one batch through the store's tokenizer)."""
    lex = lexicon(stemmer)
    clauses = [[c for c in _CLAUSE.split(t) if c.strip()] or [t] for t in texts]
    flat = [c for group in clauses for c in group]
    words, stems = stemmer.words_in(flat), stemmer.stems(flat)
    out: list[Statement] = []
    at = 0
    for text, group in zip(texts, clauses, strict=True):
        all_words: list[str] = []
        concepts: list[str] = []
        rejected: list[bool] = []
        negated: list[bool] = []
        # "go" is a verb ("deploys go through CI") unless it is Go, the language.
        language = bool(_GO.search(text))
        for _ in group:
            ws, ss = _join_phrases(words[at], stems[at])
            at += 1
            here = [
                "go" if w == "go" and language else lex.concept(w, s)
                for w, s in zip(ws, ss, strict=True)
            ]
            rejects, negates = _polarity(ws, here)
            all_words += ws
            concepts += here
            rejected += rejects
            negated += [negates] * len(ws)
        out.append(
            Statement(text, tuple(all_words), tuple(concepts), tuple(rejected), tuple(negated))
        )
    return out


def _join_phrases(words: list[str], stems: list[str]) -> tuple[list[str], list[str]]:
    ws: list[str] = []
    ss: list[str] = []
    n = 0
    while n < len(words):
        joined = PHRASES.get((words[n], words[n + 1])) if n + 1 < len(words) else None
        if joined:
            ws.append(joined)
            ss.append(joined)
            n += 2
            continue
        ws.append(words[n])
        ss.append(stems[n])
        n += 1
    return ws, ss


def _phrase(words: Sequence[str], start: int) -> list[int]:
    """The positions of the phrase from `start` to the next word that ends one."""
    out: list[int] = []
    for k in range(start, len(words)):
        if words[k] in ENDS and out:
            break
        out.append(k)
    return out


def _polarity(words: Sequence[str], concepts: Sequence[str]) -> tuple[list[bool], bool]:
    """Which words a clause rejects, and whether it is negated."""
    rejected = [False] * len(words)
    if any(w in RETIRED for w in words):
        return [True] * len(words), True
    negated = False
    n = 0
    while n < len(words):
        word = words[n]
        verb_not = word == "not" and n > 0 and words[n - 1] in MODALS
        if word in NEGATIONS or verb_not:
            negated = True
            head = next((k for k in range(n + 1, len(words)) if concepts[k]), None)
            if head is None:
                break
            directive = any(words[k] in ("use", "using") for k in range(n + 1, head))
            follows = words[head + 1] if head + 1 < len(words) else ""
            span = [head] if follows in DETERMINERS and not directive else _phrase(words, head)
            for k in span:
                rejected[k] = True
            n = span[-1] + 1
            continue
        # "over" contrasts only after a choice: "prefer spaces over tabs", not "over gRPC".
        over = word == "over" and any(w in PREFERS for w in words[:n])
        contrast = (word in CONTRASTS and word != "over") or over
        if contrast or (word == "instead" and words[n + 1 : n + 2] == ["of"]):
            start = n + (2 if word == "instead" else 1)
            while start < len(words) and not concepts[start]:
                start += 1
            for k in _phrase(words, start):
                rejected[k] = True
            n = start + 1
            continue
        if word == "replace":
            k = n + 1
            while k < len(words) and words[k] != "with":
                rejected[k] = True
                k += 1
            n = k
            continue
        n += 1
    return rejected, negated


def relate(lex: Lexicon, a: Statement, b: Statement) -> Verdict:
    """How newer `b` stands to older `a`: the same statement, a reversal, or neither."""
    ca, cb = a.content, b.content
    if not ca or not cb:
        return Verdict(None, "no words to compare", 0.0)
    shared = ca & cb
    share = len(shared) / min(len(ca), len(cb))
    if share < MIN_TOPIC:
        return Verdict(None, "another topic", share)
    for older, newer, turns in ((a, b, "rejected"), (b, a, "asserted")):
        flips = sorted((newer.rejects & older.asserts) - older.rejects - newer.asserts)
        if flips:
            return Verdict("reversal", f"{_said(newer, {flips[0]})} is {turns} now", share)
    only_a, only_b = ca - cb, cb - ca
    for x in only_a:
        for y in only_b:
            if frozenset((x, y)) in lex.opposites:
                why = f"{_said(a, {x})} becomes its opposite, {_said(b, {y})}"
                return Verdict("reversal", why, share)
    swaps = _swaps(lex, a, b, only_a, only_b)
    kinds = {k for k, _, _ in swaps}
    if swaps and kinds <= {"value", "choice"}:
        _, old, new = swaps[0]
        return Verdict("reversal", f"{_said(a, old)} becomes {_said(b, new)}", share)
    values_a = {c for c in only_a if lex.is_value(c) and c not in a.rejects}
    values_b = {c for c in only_b if lex.is_value(c) and c not in b.rejects}
    if values_a and values_b and not swaps:
        return Verdict("reversal", f"{_said(a, values_a)} becomes {_said(b, values_b)}", share)
    cue = [w for w in b.words if w in UPDATE_CUES and w not in a.words]
    if cue and len(swaps) == 1:
        _, old, new = swaps[0]
        why = f"an update ({_said(b, {cue[0]})}): {_said(a, old)} becomes {_said(b, new)}"
        return Verdict("reversal", why, share)
    both = len(shared) / max(len(ca), len(cb))
    # One shared word is too little to call two texts the same, unless it is all they say.
    enough = len(shared) >= 2 or len(ca) == len(cb) == 1
    if share >= MIN_COPY and both >= MIN_COPY_BOTH and enough and not swaps:
        return Verdict("copy", f"{len(shared)} of {min(len(ca), len(cb))} concepts shared", share)
    return Verdict(None, "looks alike, says something else" if swaps else "shares a topic", share)


def _said(statement: Statement, concepts: set[str]) -> str:
    """The words of `statement` that carry `concepts` (or are them), in its order and
    as it spells them: a message names what a person wrote, not a stem."""
    said = []
    for word, concept in zip(statement.words, statement.concepts, strict=True):
        if concept in concepts or word in concepts:
            spelled = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", statement.text, re.I)
            said.append(spelled.group() if spelled else word)
    return " ".join(dict.fromkeys(said)) or "/".join(sorted(concepts))


def _swaps(
    lex: Lexicon, a: Statement, b: Statement, only_a: frozenset[str], only_b: frozenset[str]
) -> list[tuple[str, set[str], set[str]]]:
    if not (only_a and only_b):  # a swap needs a concept on each side that the other lacks
        return []
    keys_a = [c or w for c, w in zip(a.concepts, a.words, strict=True)]
    keys_b = [c or w for c, w in zip(b.concepts, b.words, strict=True)]
    out = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, keys_a, keys_b, autojunk=False).get_opcodes():
        if tag != "replace":
            continue
        # What a side rejects is no part of its choice: "pnpm, not npm" chooses pnpm.
        old = {c for c in a.concepts[i1:i2] if c in only_a and c not in a.rejects}
        new = {c for c in b.concepts[j1:j2] if c in only_b and c not in b.rejects}
        if not (old and new):
            continue
        if all(lex.is_value(c) for c in old | new):
            kind = "value"
        else:
            k = i1 - 1
            while k >= 0 and a.words[k] in DETERMINERS:
                k -= 1
            kind = "choice" if k >= 0 and a.words[k] in CHOICE_WORDS else "context"
        out.append((kind, old, new))
    return out
