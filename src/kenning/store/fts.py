"""Turning words into an FTS5 query: the SQLite backend's business alone.

Typed text is never FTS5 syntax: each whitespace-separated chunk becomes a quoted
phrase, so `-`, `:`, `"`, `*`, `AND` or `NEAR(` are just text. Every chunk must match
(FTS5 joins phrases with AND), the porter tokenizer matches words by their stems, and
the last chunk matches as a prefix so results keep coming while you type.

The stemmer would shorten the prefix itself (`pay` becomes `pai`, which `payments` does
not start with; `tagg` stays `tagg`, which `Tagged`, stored as `tag`, does not). So the
last chunk, when it is one word, also matches the whole words that start with it as
typed (from the store's `Vocabulary`), each of which the index then stems as it
stemmed the items.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from kenning.store.base import Term, Words

# A chunk is worth searching when it has a letter or digit, or any character beyond ASCII:
# SQLite's tokenizer follows Unicode 6.1 and counts private-use, combining and
# since-assigned characters (newer emoji, scripts) as word characters where Python may
# not. A chunk FTS5 finds no word in is harmless: it matches nothing alone and is ignored
# next to others. Only chunks of ASCII punctuation are dropped.
_HAS_TOKEN = re.compile(r"[^\W_]|[^\x00-\x7f]")


class Vocabulary(Protocol):
    """What the store knows of words: how it splits text, and the words it holds."""

    def words_in(self, texts: Sequence[str]) -> list[list[str]]: ...
    def prefix_words(self, word: str, limit: int = 16) -> list[str]: ...


def fts_query(text: str, vocabulary: Vocabulary | None = None) -> str | None:
    """The MATCH expression for `text`, or None when it holds no searchable word.

    With the store's `vocabulary`, chunks that hold no word are dropped and the last
    chunk, when it is one word, also matches the whole words that start with it."""
    # FTS5 reads the expression only up to a NUL, which would cut a phrase open.
    chunks = [c for c in text.replace("\x00", " ").split() if _HAS_TOKEN.search(c)]
    last: list[str] = []
    if vocabulary is not None and chunks:
        # An explicit AND (needed next to the group below) fails on a chunk with no word
        # in it, so those go; the store's tokenizer says which they are.
        split = vocabulary.words_in(chunks)
        chunks = [c for c, words in zip(chunks, split, strict=True) if words]
        last = next((words for words in reversed(split) if words), [])
    if not chunks:
        return None
    phrases = [_phrase(chunk) for chunk in chunks]
    phrases[-1] += " *"
    if vocabulary is None or len(last) != 1:
        return " ".join(phrases)
    words = [w for w in vocabulary.prefix_words(last[0]) if w != last[0]]
    if not words:
        return " ".join(phrases)
    phrases[-1] = "(" + " OR ".join([phrases[-1], *map(_phrase, words)]) + ")"
    return " AND ".join(phrases)


def _phrase(chunk: str) -> str:
    return '"' + chunk.replace('"', '""') + '"'


def any_of(terms: Sequence[Term]) -> str | None:
    """A MATCH expression for items that hold any of `terms` (each a phrase, so no text
    is ever FTS5 syntax; a prefix term also matches longer words); None for none."""
    phrases = [
        _phrase(t.text) + ("*" if t.prefix else "")
        for t in dict.fromkeys(terms)
        if _HAS_TOKEN.search(t.text)
    ]
    return " OR ".join(dict.fromkeys(phrases)) if phrases else None


def match_for(words: Words, vocabulary: Vocabulary) -> str | None:
    """The MATCH expression for `words`; None when they hold nothing to search."""
    if words.typed:
        return fts_query(words.typed, vocabulary)
    return any_of(words.any_of)
