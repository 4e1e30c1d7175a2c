"""Per-prompt recall: the few active memories in scope that fit what was just asked, or
nothing when none does.

How a prompt is judged (docs/explanation/recall.md has the reasons and the figures):

1. Words. The prompt is cut into words and stemmed by the search index's own tokenizer
   (porter), so prompt and memories stem alike. Stop words go; words of a request
   rather than its topic ("explain", "function", "add"), and the name of the repo the
   prompt is typed in, count at GENERIC_WEIGHT. Each word left is a *concept*, matched
   by its stem and by related stems: irregular forms (`words.py`), the other spelling
   (colour, color), synonyms, broad words and kinds (database, Postgres) and what a
   phrase stands for ("kick off": start) from `thesaurus.py`, near words a sentence
   model found offline (garbage, trash: `neighbours.tsv`, at NEAR_WEIGHT), a stem one
   edit away when the word is in no memory (a typo), a longer or shorter stem sharing
   its first MIN_AFFIX+ letters ("integ", "config"), the parts of a camelCase word, and
   two neighbouring words joined ("account id", accountId).
2. Candidates. Every topic concept's forms (its NEAR_QUERY nearest words only), then
   request words few memories hold, are ORed into one full-text query over the active
   memories of the scopes that apply, minus what this session was already told and
   what the switches keep from agents (`deliver = false` repos); the
   best CANDIDATES by the index's bm25 are scored here, with the notes captured next
   after each candidate note in its scope, each within SITTING of the one before, up
   to FOLLOW_STEPS turns on (a conversation's reply, or the reply after a question
   back).
3. Score. A BM25F sum over concepts: each concept counts once, by its best-matching
   form (a related form counts less), and a word of the memory counts for one concept
   only, with the title worth TITLE_BOOST times the body and tags TAG_BOOST. Then x a
   prior for the memory's scope (a workstream's memory a little above the repo's, a
   global preference a little below) and its kind (`recall.rule_weight`), x recency,
   which never takes off more than a fifth. A note that follows a candidate note adds
   FOLLOW_WEIGHT of that one's score to its own (squared two turns on), never ranking
   above it on that account.
4. Relevance. How much of the prompt the memory matched: the idf of what it matched
   (body-only matches at BODY_MASS) over the prompt's own idf, where the prompt's is
   counted as at least PROMPT_MIN and at most PROMPT_MAX times the idf of a word no
   memory holds. So one common word never fits, and a long pasted log needs no more than
   a few rare matches.
5. Gates. normalized = min(score / best score, relevance / RELEVANCE_FULL); a memory is
   kept when normalized >= `recall.min_score` and it matches at least
   `recall.min_shared` concepts, on its own words (what it follows only ranks it). Both
   0: every candidate is ranked, none judged.
6. Budget. At most `recall.limit` memories and `recall.max_tokens` tokens; a memory over
   `recall.max_item_chars` characters is cut with a visible marker.

Words of the person's last few prompts (when the hook knows them) join as concepts at
CONTEXT_WEIGHT: they help rank and fit, but find no candidates on their own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kenning.ids import short_id
from kenning.model import Item, Kind, ScopeType, kinds_where
from kenning.pack import render_item
from kenning.recall.lexicon import (
    SYNONYM_WEIGHT,
    WORD,
    add_phrases,
    content_words,
    edits,
    humps,
    lexicon_of,
    near_words,
    spellings,
    stem_words,
    words_of,
)
from kenning.recall.words import GENERIC_WORDS, TOPICAL_STOP
from kenning.store import ItemQuery, Store, Term, Words
from kenning.tokens import estimate_tokens

if TYPE_CHECKING:
    from kenning.config import Config

MAX_QUERY_WORDS = 16  # rarest concepts that join the candidate query
COMMON = 20
COMMON_ROWS = 1000  # ... and more memories than this: only then does a word cost the query
MIN_ITEMS = 100
CANDIDATES = 40
CONTEXT_WEIGHT = 0.5
GENERIC_WEIGHT = 0.4
TYPO_WEIGHT = 0.7
# A near word (neighbours.tsv): "spreadsheet" for excel. The lowest weight a form gets, so a
# form at it or under is a near word (the scorer and the candidate query tell them so).
NEAR_WEIGHT = 0.35
NEAR_MASS = 0.75  # the share of a near word's mass that counts toward relevance
NEAR_QUERY = 2  # a concept's nearest words that also look for candidates
AFFIX_WEIGHT = 0.6
MIN_AFFIX = 4
AFFIX_SHARE = 0.5
MIN_TYPO = 5
# Nor longer than this: a word's edits grow with its length squared (52 strings of its
# length per letter), and a pasted run of letters is no typo.
MAX_TYPO = 24
MAX_TYPOS = 2
TITLE_BOOST = 2.0
TAG_BOOST = 1.5
K1 = 0.8
B = 0.3
PROMPT_MIN = 1.75
PROMPT_MAX = 2.25
RELEVANCE_FULL = 0.76
BODY_MASS = 0.8
RECENCY_FLOOR = 0.8
# A note captured right after a fitting note, in its scope and within SITTING seconds of
# it, ranks by this share of that one's score on top of its own (a conversation's reply),
# never above it on that account.
FOLLOW_WEIGHT = 0.5
# ... and the note after that one at FOLLOW_WEIGHT squared, and no further.
FOLLOW_STEPS = 2
SITTING = 30 * 60
SCOPE_PRIOR = {
    ScopeType.SESSION: 1.1,
    ScopeType.WORKSTREAM: 1.1,
    ScopeType.PROJECT: 1.05,
    ScopeType.WORKSPACE: 1.0,
    ScopeType.REPO: 1.0,
    ScopeType.AGENT: 1.0,
    ScopeType.GLOBAL: 0.9,
}
RULE_KINDS = kinds_where(lambda spec: spec.rule)


@dataclass(frozen=True, slots=True)
class RecallSettings:
    limit: int = 5
    max_tokens: int = 800
    min_score: float = 0.6
    min_shared: int = 1
    half_life_days: float = 30.0
    rule_weight: float = 1.0
    max_item_chars: int = 2000

    @classmethod
    def from_config(cls, config: Config, **overrides: Any) -> RecallSettings:
        values: dict[str, Any] = {
            "limit": config.recall_limit,
            "max_tokens": config.recall_max_tokens,
            "min_score": config.recall_min_score,
            "min_shared": config.recall_min_shared,
            "half_life_days": config.recall_half_life_days,
            "rule_weight": config.recall_rule_weight,
            "max_item_chars": config.recall_max_item_chars,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Concept:
    """One content word of the prompt, and the stems that count as a match for it."""

    word: str
    stem: str
    weight: float  # 1, GENERIC_WEIGHT, or CONTEXT_WEIGHT for the conversation's words
    forms: dict[str, float]  # stem -> how fully it matches (the word's own stem: 1)
    affix: bool  # also matches a stem that starts with this one, or that it starts with
    idf: float = 0.0
    context: bool = False  # a word of the conversation, not of the prompt


@dataclass(frozen=True, slots=True)
class Candidate:
    item: Item
    shared: tuple[str, ...]  # the prompt's words this memory matched
    relevance: float
    normalized: float
    weight: float  # the scope and kind prior
    decay: float  # recency, 1 down to RECENCY_FLOOR
    score: float
    kept: bool
    reason: str
    # For each shared word, the memory's word it matched through when the memory does
    # not hold the word itself (a synonym, a kind, a near word: "garbage" through
    # "trash"), else "".
    via: tuple[str, ...] = ()

    def matched(self) -> list[str]:
        """The shared words, each with the memory's word it matched when that is another
        word ("garbage->trash", "creds->credentials"), not a form of its own."""
        vias = self.via or ("",) * len(self.shared)
        return [f"{w}->{via}" if via else w for w, via in zip(self.shared, vias, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "short_id": short_id(self.item.id),
            "title": self.item.title,
            "kind": self.item.kind.value,
            "scope": str(self.item.scope),
            "shared": list(self.shared),
            "matched": self.matched(),
            "relevance": round(self.relevance, 4),
            "normalized": round(self.normalized, 4),
            "weight": round(self.weight, 4),
            "decay": round(self.decay, 4),
            "score": round(self.score, 4),
            "kept": self.kept,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Recall:
    query_terms: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    text: str
    tokens: int
    kept: tuple[Candidate, ...] = field(default=())
    over_budget: int = 0  # memories that fit the prompt but not within the token budget
    over_limit: int = 0  # and those past the limit of items

    def to_dict(self) -> dict[str, Any]:
        return {
            "terms": list(self.query_terms),
            "items": [{**c.to_dict(), **{"body": c.item.body}} for c in self.kept],
            "tokens": self.tokens,
            "text": self.text,
        }


# ----------------------------------------------------------------------------- words


def _weight(word: str) -> float:
    return GENERIC_WEIGHT if word in GENERIC_WORDS or word in TOPICAL_STOP else 1.0


def _concepts(
    store: Store, prompt: str, context: Sequence[str]
) -> tuple[list[Concept], int, dict[str, int]]:
    """The prompt's concepts (then the conversation's), the item count, and how many
    items hold each stem asked about."""
    lexicon = lexicon_of(store)
    words = content_words(store, prompt)
    if not words:
        return [], 0, {}
    weights = {s: _weight(w) for s, w in words.items()}
    # One identifier typed may be words in a memory (toMatchSnapshot), two words typed
    # apart may be one identifier there ("account id", accountId), and a word with "re"
    # or "un" in front may be stored without it.
    camel = humps(prompt)
    parts = sorted({p for ps in camel.values() for p in ps} - set(words.values()))
    raw = words_of(prompt)
    joined = [a + b for a, b in zip(raw, raw[1:], strict=False) if len(a + b) > MIN_AFFIX + 1]
    bare = {w: w[2:] for w in words.values() if w[:2] in ("re", "un") and len(w) >= 7}
    variants = {w: spellings(w) for w in words.values()}
    extra = [*parts, *joined, *bare.values(), *(v for vs in variants.values() for v in vs)]
    stem_of = {w: (s[0] if s else "") for w, s in zip(extra, stem_words(store, extra), strict=True)}
    for part in parts:
        stem = stem_of[part]
        if len(stem) > 2 and stem not in words and stem not in lexicon.stop:
            words[stem] = part
            weights[stem] = _weight(part)
    related = {s: dict(lexicon.related.get(s, {})) for s in words}
    for stem, word in words.items():
        if stem_of.get(bare.get(word, ""), ""):
            related[stem].setdefault(stem_of[bare[word]], SYNONYM_WEIGHT)
        for variant in variants.get(word, ()):
            if stem_of[variant] and stem_of[variant] != stem:
                related[stem][stem_of[variant]] = 1.0
                related[stem].update(lexicon.related.get(stem_of[variant], {}))
    add_phrases(store, prompt, lexicon, words, weights, related)
    for stem, nearby in near_words(list(words)).items():
        mine = related.setdefault(stem, {})
        for other, _, _ in nearby:
            if other != stem and other not in mine:
                mine[other] = NEAR_WEIGHT
    compounds = {stem_of[j]: j for j in joined if stem_of[j] and stem_of[j] not in words}
    said: set[str] = set()  # the conversation's own words
    if context:
        for stem, word in content_words(store, "\n".join(context)).items():
            if stem not in words:
                said.add(stem)
                words[stem] = word
                weights[stem] = CONTEXT_WEIGHT * _weight(word)
                related[stem] = dict(lexicon.related.get(stem, {}))
    asked = set(words) | set(compounds) | {r for rel in related.values() for r in rel}
    total, freqs = store.doc_freqs(sorted(asked))
    for stem, word in compounds.items():
        if freqs.get(stem, 0) > 0:
            words[stem], weights[stem], related[stem] = word, 1.0, {}
            said.discard(stem)
    concepts: list[Concept] = []
    # A word no memory holds may be a typo: look up what is one edit away, for the few
    # longest such words (each costs a lookup of a few hundred strings).
    unknown = [
        s
        for s, w in words.items()
        if MIN_TYPO <= len(w) <= MAX_TYPO
        and w.isalpha()
        and weights[s] >= 1.0
        and not freqs.get(s, 0)
    ]
    typos = set(sorted(unknown, key=lambda s: -len(words[s]))[:MAX_TYPOS])
    for stem, word in words.items():
        forms = {s: w for s, w in {stem: 1.0, **related[stem]}.items() if freqs.get(s, 0) > 0}
        if not forms and stem in typos:
            # One edit from the stem ("roatte", rotat) or from the word as typed, when the
            # typo breaks the ending the stemmer would cut ("stagng", staging).
            typed = sorted(store.word_freqs(sorted(edits(word))))
            stems = {s[0] for s in stem_words(store, typed) if s}
            _, near = store.doc_freqs(sorted(edits(stem) | stems))
            close = sorted((df, n) for n, df in near.items() if df and n not in words)
            for _, term in close[-2:]:  # the two commonest
                forms[term] = TYPO_WEIGHT
                freqs[term] = near[term]
        # A camelCase word's parts stand for it: it would match them again as affixes.
        affix = len(stem) >= MIN_AFFIX and word not in camel and " " not in word
        concepts.append(Concept(word, stem, weights[stem], forms, affix, context=stem in said))
    # A new store holds few memories, and every word in it looks common: count at least
    # MIN_ITEMS, as if the rest held none of the prompt's words.
    return concepts, max(total, MIN_ITEMS), freqs


# ----------------------------------------------------------------------------- scoring


def _idf(total: int, docs: int) -> float:
    return math.log(1 + (total - docs + 0.5) / (docs + 0.5))


def _concept_idf(c: Concept, total: int, freqs: dict[str, int]) -> float:
    """How rare what the concept means is: the idf of its commonest form that stands for
    it (its own stem, a synonym, a typo's correction), not of a broader or narrower word;
    a word no memory holds gets the highest idf there is."""
    same = [freqs.get(s, 0) for s, w in c.forms.items() if w >= TYPO_WEIGHT]
    return _idf(total, max(same)) if same else _idf(total, 0)


@dataclass(frozen=True, slots=True)
class _Fields:
    """A memory's stems by field: how often each occurs, and each field's length."""

    title: dict[str, int]
    body: dict[str, int]
    tags: dict[str, int]
    lengths: tuple[int, int, int]
    terms: frozenset[str]


# The fields of memories met before, by their text: a warm hook server splits and stems
# only the candidates it never met. A pure function of the text (and of the stemmer,
# the same for the process, as for `stem_words`), so nothing to invalidate. Shared:
# never changed in place (recall's `replace` makes a new one).
_kept_fields: dict[tuple[str, str, tuple[str, ...]], _Fields] = {}
MAX_KEPT_FIELDS = 4096


def _fields(store: Store, found: Sequence[Item]) -> list[_Fields]:
    kept = [_kept_fields.get((item.title, item.body, item.tags)) for item in found]
    new = [item for item, f in zip(found, kept, strict=True) if f is None]
    if new:
        made = iter(_split_fields(store, new))
        if len(_kept_fields) + len(new) > MAX_KEPT_FIELDS:
            _kept_fields.clear()
        for n, item in enumerate(found):
            if kept[n] is None:
                kept[n] = _kept_fields[(item.title, item.body, item.tags)] = next(made)
    return [f for f in kept if f is not None]


def _split_fields(store: Store, found: Sequence[Item]) -> list[_Fields]:
    texts = [
        [m.group() for m in WORD.finditer(text.lower())]
        for item in found
        for text in (item.title, item.body, " ".join(item.tags))
    ]
    stem_of = dict(zip(*_unzip(store, texts), strict=True))
    out = []
    for n in range(len(found)):
        counts: list[dict[str, int]] = []
        lengths: list[int] = []
        for words in texts[3 * n : 3 * n + 3]:
            count: dict[str, int] = {}
            for word in words:
                for stem in stem_of[word]:
                    count[stem] = count.get(stem, 0) + 1
            counts.append(count)
            lengths.append(sum(count.values()))
        title, body, tags = counts
        terms = frozenset(title) | set(body) | set(tags)
        out.append(_Fields(title, body, tags, (lengths[0], lengths[1], lengths[2]), terms))
    return out


def _unzip(store: Store, texts: list[list[str]]) -> tuple[list[str], list[tuple[str, ...]]]:
    words = list(dict.fromkeys(w for words in texts for w in words))
    return words, stem_words(store, words)


def _words_for(store: Store, item: Item, stems: list[str]) -> list[str]:
    """For each stem (or ""), the first word of `item` whose stem it is, as written there
    (lowercase): "trash", not "trashy". A stem no word has (a repo's name, matched through
    the memory's scope) stays as it is."""
    words = list(
        dict.fromkeys(
            w
            for text in (item.title, item.body, " ".join(item.tags))
            for w in WORD.findall(text.lower())
        )
    )
    first: dict[str, str] = {}
    for word, its in zip(words, stem_words(store, words), strict=True):
        for stem in its:
            first.setdefault(stem, word)
    return [first.get(stem, stem) if stem else "" for stem in stems]


def _affix(stem: str, term: str) -> bool:
    """Whether one stem starts with the other, the shorter being most of the longer:
    "integ" and integr, config and "configur", but not invoic and "invoiceseri"."""
    short, long = sorted((stem, term), key=len)
    return short != long and long.startswith(short) and len(short) >= AFFIX_SHARE * len(long)


def _affixes(concepts: Sequence[Concept], terms: Iterable[str]) -> dict[str, list[str]]:
    """For each concept that matches by affix, the memory stems it matches that way."""
    by_start: dict[str, list[Concept]] = {}
    for c in concepts:
        if c.affix:
            by_start.setdefault(c.stem[:MIN_AFFIX], []).append(c)
    out: dict[str, list[str]] = {}
    if not by_start:
        return out
    for term in terms:
        for c in by_start.get(term[:MIN_AFFIX], ()):
            if term not in c.forms and _affix(c.stem, term):
                out.setdefault(c.stem, []).append(term)
    return out


class _Scorer:
    """BM25F over the candidates, a concept counting once, by its best-matching form."""

    def __init__(self, total: int, freqs: dict[str, int], fields: Sequence[_Fields]) -> None:
        self.total = total
        self.freqs = freqs
        n = len(fields) or 1
        self.average = [max(1.0, sum(f.lengths[i] for f in fields) / n) for i in range(3)]

    def matches(
        self, concept: Concept, f: _Fields, affixes: Sequence[str]
    ) -> list[tuple[float, float, str]]:
        """Each way the concept matches in this memory, best first: its part of the
        score, its part of the memory's mass (how fully it matched times the idf of what
        matched, at most the concept's own), and the memory's stem it matched."""
        out = []
        forms = [(s, w) for s, w in concept.forms.items() if s in f.terms]
        for term, how in [*forms, *((t, AFFIX_WEIGHT) for t in affixes)]:
            tf = 0.0
            for boost, counts, length, average in (
                (TITLE_BOOST, f.title, f.lengths[0], self.average[0]),
                (1.0, f.body, f.lengths[1], self.average[1]),
                (TAG_BOOST, f.tags, f.lengths[2], self.average[2]),
            ):
                if term in counts:
                    tf += boost * counts[term] / (1 - B + B * length / average)
            idf = _idf(self.total, self.freqs.get(term, 0))
            mass = how * min(idf, concept.idf)
            if how <= NEAR_WEIGHT:
                mass *= NEAR_MASS
            if term not in f.title and term not in f.tags:
                mass *= BODY_MASS
            out.append((how * idf * tf * (K1 + 1) / (tf + K1), mass, term))
        return sorted(out, reverse=True)


def _assign(
    concepts: Sequence[Concept], ways: Sequence[list[tuple[float, float, str]]]
) -> list[tuple[float, float, str]]:
    """Each concept's part of the score and of the mass, a memory's word counting for
    one concept only: "checkout" in a memory is not both the prompt's checkout and its
    payment. The concepts with the best matches choose first."""
    # A concept that matches nothing takes no word: only the others are ordered.
    order = sorted(
        (i for i in range(len(concepts)) if ways[i]),
        key=lambda i: -(concepts[i].weight * ways[i][0][0]),
    )
    used: set[str] = set()
    out = [(0.0, 0.0, "")] * len(concepts)
    for i in order:
        for part, mass, term in ways[i]:
            if term not in used:
                used.add(term)
                out[i] = (part, mass, term)
                break
    return out


# ----------------------------------------------------------------------------- recall


def _followers(
    store: Store,
    found: list[Item],
    query: ItemQuery,
    skip: Callable[[Item], bool] | None = None,
) -> dict[str, tuple[str, Item, int]]:
    """The notes that follow the candidate notes, up to FOLLOW_STEPS turns on: for each,
    the candidate it follows, itself, and how many turns after it. A note captured next
    in the same scope within SITTING of a note may continue it: a conversation's reply
    says "he hated the smell but loved the stove" and nothing of the boat or of Jonah the
    question asks about, which the turn before it named; and a reply may come after a
    short question back ("Which brewery?" then "Hopscotch, near the station"). Only
    notes: a rule or a fact stands alone, and a store loaded in one go holds them side
    by side by chance. What `skip` says is left out, and no further note is followed
    through it."""
    out: dict[str, tuple[str, Item, int]] = {}
    leads = [(item, item.id) for item in found if item.kind is Kind.NOTE]
    for step in range(1, FOLLOW_STEPS + 1):
        if not leads:
            break
        after = store.next_captured([item.id for item, _ in leads], query)
        nexts = []
        for item, first in leads:
            nxt = after.get(item.id)
            if nxt is None or nxt.kind is not Kind.NOTE or not _sitting(item, nxt):
                continue
            if (skip and skip(nxt)) or nxt.id in out:
                continue
            out[nxt.id] = (first, nxt, step)
            nexts.append((nxt, first))
        leads = nexts
    return out


def _sitting(first: Item, then: Item) -> bool:
    """Whether `then` was captured within SITTING seconds after `first`."""
    try:
        gap = datetime.fromisoformat(then.created_at) - datetime.fromisoformat(first.created_at)
    except ValueError:
        return False
    return 0 <= gap.total_seconds() <= SITTING


def _age_days(item: Item, now: datetime) -> float:
    stamp = item.reviewed_at or item.updated_at or item.created_at
    try:
        when = datetime.fromisoformat(stamp)  # 3.11 reads the trailing Z as UTC
    except ValueError:
        return 0.0
    return max(0.0, (now - when).total_seconds() / 86400)


def _prior(item: Item, settings: RecallSettings) -> float:
    weight = SCOPE_PRIOR.get(item.scope.type, 1.0)
    return weight * settings.rule_weight if item.kind in RULE_KINDS else weight


def _scope_names(store: Store, scopes: Sequence[str]) -> dict[str, set[str]]:
    """The words that name a repo or workspace of `scopes` ("relay" for
    repo:github.com/acme/relay), stemmed: stem -> the scopes it names. A prompt that
    names where it is typed says where, not what about."""
    names: dict[str, set[str]] = {}
    for scope in scopes:
        kind, _, value = scope.partition(":")
        if kind in (ScopeType.REPO, ScopeType.WORKSPACE) and value:
            for word in WORD.findall(value.rstrip("/").rsplit("/", 1)[-1].lower()):
                if len(word) >= MIN_AFFIX and not word.isdigit():
                    names.setdefault(word, set()).add(scope)
    stems = stem_words(store, list(names))
    out: dict[str, set[str]] = {}
    for named, stem in zip(names.values(), stems, strict=True):
        if stem:
            out.setdefault(stem[0], set()).update(named)
    return out


def _match_query(
    concepts: Sequence[Concept], spelled: dict[str, str], near: dict[str, str]
) -> Words:
    """What finds the candidates: each concept's word and its related words (of its near
    words only the NEAR_QUERY nearest, spelled as in `near`: each more makes the index
    count another list of items, for little gain); a stem no word spells (a typo's
    correction) as a prefix, since the index stems a query word again and a stem is not
    always its own stem; and a word no memory holds as a prefix too ("integ"), to find
    the longer words it may stand for."""
    terms: list[Term] = []
    for c in concepts:
        terms.append(Term(c.word, prefix=bool(c.affix and c.stem not in c.forms)))
        for stem, how in c.forms.items():
            if stem == c.stem or (how <= NEAR_WEIGHT and stem not in near):
                continue
            word = near.get(stem) or spelled.get(stem)
            terms.append(Term(word) if word else Term(stem, prefix=True))
    return Words(any_of=tuple(dict.fromkeys(terms)))


def recall(
    store: Store,
    prompt: str,
    scopes: Iterable[str],
    *,
    settings: RecallSettings | None = None,
    context: Sequence[str] = (),
    exclude: set[str] | frozenset[str] = frozenset(),
    now: datetime | None = None,
    kinds: Sequence[str] = (),
    tags: Sequence[str] = (),
    statuses: Sequence[str] = ("active",),
    include_expired: bool = False,
    skip: Callable[[Item], bool] | None = None,
    exclude_repos: Iterable[str] = (),
) -> Recall:
    """The memories that fit `prompt` among the items of `scopes` in `statuses` (any
    when empty; active, unexpired ones unless told), of `kinds` and holding `tags` when
    given, best first. What belongs to `exclude_repos` (`ItemQuery.exclude_repos`: the
    repos the switches keep from agents) is left out of the candidate query itself, as
    `exclude` is, so it never takes the places of what may be given; what `skip` says is
    left out after (a memory the agent has already)."""
    settings = settings or RecallSettings()
    now = now or datetime.now(UTC)
    concepts, total, freqs = _concepts(store, prompt, context)
    if not concepts:
        return Recall((), (), "", 0)
    absent = _idf(total, 0)
    concepts = [
        Concept(
            c.word,
            c.stem,
            c.weight,
            c.forms,
            c.affix,
            _concept_idf(c, total, freqs),
            c.context,
        )
        for c in concepts
    ]
    # A repo's name typed in the prompt is matched by every memory of that repo, and
    # weighs as little as a request word and as a word one memory in COMMON holds.
    named = _scope_names(store, list(scopes))
    for stem in named:
        freqs[stem] = max(freqs.get(stem, 0), total // COMMON)
    concepts = [
        replace(
            c,
            weight=min(c.weight, GENERIC_WEIGHT),
            forms={**c.forms, c.stem: 1.0},
            idf=_idf(total, freqs[c.stem]),
        )
        if c.stem in named
        else c
        for c in concepts
    ]
    # Only the prompt's own topic words look for candidates, those some memory holds
    # first, rarest first. A word held by more than one memory in COMMON, and by more
    # than COMMON_ROWS memories, makes the index rank thousands of rows: it joins the
    # query only when there is nothing rarer (it still counts in the scores). The cut
    # is for speed alone, which depends on the rows a word matches, not its share: in a
    # store of a few thousand memories every topic word looks for candidates, as the
    # memory that fits may share only a common one with the prompt ("k8s").
    topical = [
        c for c in concepts if c.weight > GENERIC_WEIGHT and (c.forms or c.affix) and not c.context
    ]
    busy = max(total // COMMON, COMMON_ROWS)
    rare = [c for c in topical if c.idf >= _idf(total, busy)] or topical
    seeking = sorted(rare, key=lambda c: (not c.forms, -c.idf))[:MAX_QUERY_WORDS]
    # A request word ("class", "list") that some memory holds, and few enough, looks for
    # candidates too, after the topic words: in a store of conversations "how many pupils
    # are in Hana's class" is about a class. It still weighs GENERIC_WEIGHT in the scores.
    asking = [
        c
        for c in concepts
        if c.weight == GENERIC_WEIGHT
        and c.forms
        and not c.context
        and c.stem not in named
        and c.idf >= _idf(total, busy)
    ]
    if seeking:  # request words alone ("rename this class") find nothing
        seeking += sorted(asking, key=lambda c: -c.idf)[: MAX_QUERY_WORDS - len(seeking)]
    query_terms = tuple(c.stem for c in seeking)
    if not seeking:
        return Recall(tuple(c.stem for c in concepts), (), "", 0)
    query = ItemQuery(
        scopes=tuple(scopes),
        kinds=tuple(kinds),
        tags=tuple(tags),
        statuses=tuple(statuses),
        include_expired=include_expired,
        exclude_ids=tuple(sorted(exclude)),  # left out before choosing, not after
        exclude_repos=tuple(sorted(exclude_repos)),
        limit=CANDIDATES,
    )
    near = {
        other: word
        for nearby in near_words(c.stem for c in seeking).values()
        for other, word, _ in nearby[:NEAR_QUERY]
    }
    match = _match_query(seeking, lexicon_of(store).spelled, near)
    # An automatic handoff echoes its session's prompts: a prompt that repeats one would
    # find it before what was taught. The pack gives it at the start instead; it is
    # recalled only when handoffs are asked for by kind.
    echoes = "handoff" not in kinds
    found = [
        item
        for item, _ in store.search(match, query)
        if not (echoes and item.automatic_handoff) and not (skip and skip(item))
    ]
    if not found:
        return Recall(query_terms, (), "", 0)
    follows = _followers(store, found, query, skip)
    have = {item.id for item in found}
    found += [item for _, item, _ in follows.values() if item.id not in have]
    fields = _fields(store, found)
    # Each stem of the candidates is looked at once for the concepts it matches as an
    # affix (`_affixes` of them all), then shared out to the candidates that hold it.
    every = _affixes(concepts, frozenset().union(*(f.terms for f in fields)))
    affixes = [
        {
            stem: mine
            for stem, terms in every.items()
            if (mine := [t for t in terms if t in f.terms])
        }
        for f in fields
    ]
    unknown = sorted({t for a in affixes for ts in a.values() for t in ts} - set(freqs))
    if unknown:
        freqs.update(store.doc_freqs(unknown)[1])
    scorer = _Scorer(total, freqs, fields)
    prompt_mass = sum(c.weight * c.idf for c in concepts)
    prompt_mass = min(max(prompt_mass, PROMPT_MIN * absent), PROMPT_MAX * absent)

    fields = [
        replace(f, tags={**f.tags, **dict.fromkeys(here, 1)}, terms=f.terms | set(here))
        if (here := [stem for stem, where in named.items() if str(item.scope) in where])
        else f
        for item, f in zip(found, fields, strict=True)
    ]
    scored: list[tuple[Item, tuple[str, ...], tuple[str, ...], float, float, float, float]] = []
    for item, f, affix in zip(found, fields, affixes, strict=True):
        # A concept with no form and no affix in the memory matches nothing in it.
        ways = [
            scorer.matches(c, f, affix.get(c.stem, ()))
            if c.stem in affix or not f.terms.isdisjoint(c.forms)
            else []
            for c in concepts
        ]
        bm25 = mass = 0.0
        matched: list[str] = []
        through: list[str] = []
        assigned = _assign(concepts, ways)
        taken = {term for _, _, term in assigned}
        for c, (part, share, term) in zip(concepts, assigned, strict=True):
            if part:
                bm25 += c.weight * part
                mass += c.weight * share
                matched.append(c.word)
                # Scored through another word, the memory may still hold the word itself
                # (the rarer synonym weighs more): then that is what it matched.
                itself = term == c.stem or (c.stem in f.terms and c.stem not in taken)
                through.append("" if itself else term)
        if any(through):
            through = _words_for(store, item, through)
        prior = _prior(item, settings)
        age = _age_days(item, now) / max(settings.half_life_days, 1e-9)
        decay = RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5**age
        scored.append(
            (
                item,
                tuple(matched),
                tuple(through),
                mass / prompt_mass,
                prior,
                decay,
                bm25 * prior * decay,
            )
        )

    best = max((s[-1] for s in scored), default=0.0)
    own = {s[0].id: s[-1] for s in scored}
    judged: list[Candidate] = []
    for item, shared, via, relevance, prior, decay, score in scored:
        # The gates judge a memory on its own words; what it follows only ranks it.
        normalized = min(score / best if best else 0.0, relevance / RELEVANCE_FULL)
        if len(shared) < settings.min_shared:
            reason = f"shares {len(shared)} content word(s), needs {settings.min_shared}"
        elif normalized < settings.min_score:
            reason = (
                f"relevance {relevance:.2f}, under {settings.min_score * RELEVANCE_FULL:.2f}"
                if relevance / RELEVANCE_FULL < settings.min_score
                else f"score {score / best:.2f} of the best, under {settings.min_score}"
            )
        else:
            reason = ""
        if item.id in follows:
            first, _, step = follows[item.id]
            led = own[first]
            score = max(score, min(score + FOLLOW_WEIGHT**step * led, led))
            if reason:  # what --explain shows: why it is a candidate at all
                reason += f"; follows {short_id(follows[item.id][0])}"
        judged.append(
            Candidate(
                item, shared, relevance, normalized, prior, decay, score, not reason, reason, via
            )
        )
    judged.sort(key=lambda c: (c.kept, c.score), reverse=True)
    return _budget(judged, settings, query_terms)


HEADER = "Memories from kenning that may fit this prompt (ken show ID for more):"


def _budget(
    candidates: list[Candidate], settings: RecallSettings, query_terms: tuple[str, ...]
) -> Recall:
    kept: list[Candidate] = []
    text = HEADER
    used = estimate_tokens(HEADER)
    final: list[Candidate] = []
    over = past = 0
    for cand in candidates:
        if not cand.kept:
            final.append(cand)
            continue
        if len(kept) >= settings.limit:
            final.append(_drop(cand, f"over the limit of {settings.limit} items"))
            past += 1
            continue
        # The estimate of the text with this line, not a sum of lines: it is not additive.
        longer = text + "\n" + render_item(cand.item, max_chars=settings.max_item_chars)
        cost = estimate_tokens(longer)
        if cost > settings.max_tokens:
            final.append(_drop(cand, f"over the {settings.max_tokens}-token budget"))
            over += 1
            continue
        text, used = longer, cost
        kept.append(cand)
        final.append(cand)
    if not kept:
        text, used = "", 0
    return Recall(query_terms, tuple(final), text, used, tuple(kept), over, past)


def _drop(cand: Candidate, reason: str) -> Candidate:
    return replace(cand, kept=False, reason=reason)
