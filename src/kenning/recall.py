"""Per-prompt recall: the few active memories in scope that fit what was just asked.

How an item is judged (every number is a setting, see `ken config list`):

1. Words. The prompt and each item are cut into words and stemmed by the search
   index's own tokenizer (porter), so both sides stem alike; stop words and
   conversational filler are dropped. What is left are *content words*.
2. Candidates. The prompt's rarest content words (at most 12, leaving out words found
   in more than 1 item in 20 when rarer ones exist) are ORed into one full-text query
   over the active items of the scopes that apply; the best 20 by bm25 are judged,
   minus anything this session was already told.
3. Gates. An item must share at least `recall.min_shared` (2) content words with the
   prompt, and reach a normalized relevance of `recall.min_score` (0.5). Relevance is
   the idf-weighted cosine between the prompt's and the item's content words; it is
   normalized by the best candidate's relevance, but never by less than a floor, so a
   prompt with nothing relevant gets nothing instead of its least bad match.
4. Rank. score = normalized relevance x 1.25 for preferences and corrections x
   0.5 ** (days since the item was last reviewed or changed / 30).
5. Budget. At most `recall.limit` (5) items and `recall.max_tokens` (800) tokens; an
   item over `recall.max_item_chars` (2,000) characters is cut with a visible marker.

Words from the last few user turns of the conversation, when the hook knows them, join
the query at half weight: they help rank, and count toward the shared words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kenning.model import Item, Kind
from kenning.pack import render_item
from kenning.store import ItemQuery, SQLiteStore
from kenning.tokens import estimate_tokens

RELEVANCE_FLOOR = 0.3
MAX_QUERY_WORDS = 12
CANDIDATES = 20
MAX_PROMPT_CHARS = 8000
CONTEXT_WEIGHT = 0.5

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "either",
        "else",
        "ever",
        "every",
        "few",
        "for",
        "from",
        "further",
        "get",
        "gets",
        "got",
        "had",
        "hasn",
        "has",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "lets",
        "like",
        "ll",
        "me",
        "might",
        "more",
        "most",
        "much",
        "must",
        "mustn",
        "my",
        "myself",
        "need",
        "needs",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "one",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "please",
        "re",
        "really",
        "same",
        "shall",
        "shan",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "still",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "though",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "ve",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "yes",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "m",
        "o",
        "y",
        "hey",
        "hi",
        "hello",
        "thanks",
        "thank",
        "ok",
        "okay",
        "sure",
        "maybe",
        "something",
        "anything",
        "thing",
        "things",
        "stuff",
        "way",
        "want",
        "wanted",
        "wants",
        "know",
        "think",
        "see",
        "look",
        "looks",
        "looking",
        "go",
        "going",
        "make",
        "made",
        "use",
        "using",
        "used",
        "try",
        "trying",
        "tried",
        "work",
        "works",
        "working",
        "help",
        "able",
        "again",
        "actually",
        "already",
        "around",
        "back",
        "bit",
        "code",
        "file",
        "files",
        "new",
        "now",
        "right",
        "still",
        "take",
        "tell",
        "time",
        "well",
        "good",
        "better",
        "best",
        "fine",
        "great",
        "lot",
        "lots",
        "many",
        "much",
        "via",
        "etc",
        "e",
        "g",
        "ie",
        "eg",
        "one",
        "two",
        "first",
        "last",
        "next",
    ]
)
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class RecallSettings:
    limit: int = 5
    max_tokens: int = 800
    min_score: float = 0.5
    min_shared: int = 2
    half_life_days: float = 30.0
    rule_weight: float = 1.25
    max_item_chars: int = 2000

    @classmethod
    def from_config(cls, config: Any, **overrides: Any) -> RecallSettings:
        values = {
            "limit": config.get("recall.limit"),
            "max_tokens": config.get("recall.max_tokens"),
            "min_score": config.get("recall.min_score"),
            "min_shared": config.get("recall.min_shared"),
            "half_life_days": config.get("recall.half_life_days"),
            "rule_weight": config.get("recall.rule_weight"),
            "max_item_chars": config.get("recall.max_item_chars"),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Candidate:
    item: Item
    shared: tuple[str, ...]
    relevance: float
    normalized: float
    weight: float
    decay: float
    score: float
    kept: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "short_id": self.item.id[-6:].lower(),
            "title": self.item.title,
            "kind": self.item.kind.value,
            "scope": str(self.item.scope),
            "shared": list(self.shared),
            "relevance": round(self.relevance, 4),
            "normalized": round(self.normalized, 4),
            "weight": self.weight,
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "terms": list(self.query_terms),
            "items": [{**c.to_dict(), **{"body": c.item.body}} for c in self.kept],
            "tokens": self.tokens,
            "text": self.text,
        }


_stop_stems: frozenset[str] | None = None


def _stop(store: SQLiteStore) -> frozenset[str]:
    global _stop_stems
    if _stop_stems is None:
        stems = store.stems(sorted(STOP_WORDS))
        _stop_stems = frozenset(s for group in stems for s in group) | STOP_WORDS
    return _stop_stems


def content_words(store: SQLiteStore, text: str) -> dict[str, str]:
    """Content words of `text`: stem -> the first word that stemmed to it."""
    words: list[str] = []
    seen: set[str] = set()
    for match in _WORD.finditer(text[:MAX_PROMPT_CHARS].lower()):
        word = match.group()
        if word not in seen:
            seen.add(word)
            words.append(word)
    if not words:
        return {}
    stop = _stop(store)
    out: dict[str, str] = {}
    for word, stems in zip(words, store.stems(words), strict=True):
        for stem in stems:
            if len(stem) > 1 and stem not in stop and word not in stop and not stem.isdigit():
                out.setdefault(stem, word)
    return out


def _item_terms(store: SQLiteStore, items: Sequence[Item]) -> list[set[str]]:
    stop = _stop(store)
    texts = [f"{i.title}\n{i.body}\n{' '.join(i.tags)}" for i in items]
    return [
        {s for s in stems if len(s) > 1 and s not in stop and not s.isdigit()}
        for stems in store.stems(texts)
    ]


def _age_days(item: Item, now: datetime) -> float:
    stamp = item.reviewed_at or item.updated_at or item.created_at
    try:
        when = datetime.fromisoformat(stamp)  # 3.11 reads the trailing Z as UTC
    except ValueError:
        return 0.0
    return max(0.0, (now - when).total_seconds() / 86400)


def recall(
    store: SQLiteStore,
    prompt: str,
    scopes: Iterable[str],
    *,
    settings: RecallSettings | None = None,
    context: Sequence[str] = (),
    exclude: set[str] | frozenset[str] = frozenset(),
    now: datetime | None = None,
) -> Recall:
    """The memories that fit `prompt` among active items of `scopes`, best first."""
    settings = settings or RecallSettings()
    now = now or datetime.now(UTC)
    prompt_words = content_words(store, prompt)
    context_words = {
        s: w for s, w in content_words(store, "\n".join(context)).items() if s not in prompt_words
    }
    if not prompt_words:
        return Recall((), (), "", 0)
    total, freqs = store.doc_freqs([*prompt_words, *context_words])
    total = max(total, 1)

    def idf(term: str) -> float:
        return math.log((total + 1) / (freqs.get(term, 0) + 0.5))

    present = [s for s in prompt_words if freqs.get(s, 0) > 0]
    if not present:
        return Recall(tuple(prompt_words), (), "", 0)
    # Rare words find the candidates; a word in most items would make the index rank
    # half the store. Common words still count when candidates are scored.
    common = max(50, total // 20)
    rare = [s for s in present if freqs[s] <= common] or present
    query_stems = sorted(rare, key=idf, reverse=True)[:MAX_QUERY_WORDS]
    match = " OR ".join('"' + prompt_words[s].replace('"', '""') + '"' for s in query_stems)
    # Leave out what the session was told in the query itself, so told memories never
    # take the places of untold ones among the candidates.
    query = ItemQuery(
        scopes=tuple(scopes),
        statuses=("active",),
        exclude_ids=tuple(sorted(exclude)),
        limit=CANDIDATES,
    )
    items = [item for item, _ in store.search(match, query)]
    if not items:
        return Recall(tuple(query_stems), (), "", 0)
    weights = dict.fromkeys(prompt_words, 1.0) | dict.fromkeys(context_words, CONTEXT_WEIGHT)
    extra = [t for group in _item_terms(store, items) for t in group if t not in freqs]
    if extra:
        _, more = store.doc_freqs(extra)
        freqs.update(more)
    query_norm = math.sqrt(sum((weights[t] * idf(t)) ** 2 for t in weights))
    scored: list[tuple[Item, tuple[str, ...], float]] = []
    for item, terms in zip(items, _item_terms(store, items), strict=True):
        shared = tuple(sorted(t for t in terms if t in weights))
        item_norm = math.sqrt(sum(idf(t) ** 2 for t in terms)) or 1.0
        dot = sum(weights[t] * idf(t) ** 2 for t in shared)
        scored.append((item, shared, dot / (query_norm * item_norm) if query_norm else 0.0))
    best = max((r for _, _, r in scored), default=0.0)
    scale = max(best, RELEVANCE_FLOOR)
    candidates: list[Candidate] = []
    for item, shared, relevance in scored:
        normalized = relevance / scale
        weight = settings.rule_weight if item.kind in (Kind.PREFERENCE, Kind.CORRECTION) else 1.0
        decay = 0.5 ** (_age_days(item, now) / settings.half_life_days)
        if len(shared) < settings.min_shared:
            reason = f"shares {len(shared)} content word(s), needs {settings.min_shared}"
        elif normalized < settings.min_score:
            reason = f"relevance {normalized:.2f} below {settings.min_score}"
        else:
            reason = ""
        candidates.append(
            Candidate(
                item,
                shared,
                relevance,
                normalized,
                weight,
                decay,
                normalized * weight * decay,
                not reason,
                reason,
            )
        )
    candidates.sort(key=lambda c: (c.kept, c.score), reverse=True)
    kept: list[Candidate] = []
    text = HEADER
    used = estimate_tokens(HEADER)
    final: list[Candidate] = []
    for cand in candidates:
        if not cand.kept:
            final.append(cand)
            continue
        if len(kept) >= settings.limit:
            final.append(_drop(cand, f"over the limit of {settings.limit} items"))
            continue
        # The estimate of the text with this line, not a sum of lines: it is not additive.
        longer = text + "\n" + render_item(cand.item, max_chars=settings.max_item_chars)
        cost = estimate_tokens(longer)
        if cost > settings.max_tokens:
            final.append(_drop(cand, f"over the {settings.max_tokens}-token budget"))
            continue
        text, used = longer, cost
        kept.append(cand)
        final.append(cand)
    if not kept:
        text, used = "", 0
    return Recall(tuple(query_stems), tuple(final), text, used, tuple(kept))


HEADER = "Memories from kenning that may fit this prompt (ken show ID for more):"


def _drop(cand: Candidate, reason: str) -> Candidate:
    return Candidate(
        cand.item,
        cand.shared,
        cand.relevance,
        cand.normalized,
        cand.weight,
        cand.decay,
        cand.score,
        False,
        reason,
    )
