"""Words in the PostgreSQL store: its own parser and stemmer, counts, and tsquery input.

Stored and asked words go through the same two text search configurations, always in
the server: 'english' (Snowball stems, stop words dropped) for `stems` and the items'
`tsv`, and 'simple' (lower-cased words as typed) for `words_in` and the `words` counts.
The `terms` and `words` tables (kept by the triggers in migrations.py) answer recall's
statistics and prefix search without reading the items.

A search never sends SQL made of the words it was given. Text becomes lexemes in the
server (`to_tsvector` of a parameter), and those lexemes, each quoted as tsquery input
wants, are put together here into a `tsquery` that goes back as a parameter too: every
lexeme of every typed chunk must match (`&`; a chunk of stop words only is left out, as
the index leaves them out), and the last one matches as a prefix (`:*`). The stemmer would
shorten the prefix itself (`tagg` stays `tagg`, while `Tagged` is stored as `tag`), so
the last chunk, when it is one word, also matches the stems of the whole words stored
that start with it as typed, and that word itself as a prefix of a stem.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kenning.store.base import Term, Words

# A chunk is worth searching when it has a letter or digit (or anything beyond ASCII);
# chunks of ASCII punctuation only are dropped before they reach the server.
_HAS_TOKEN = re.compile(r"[^\W_]|[^\x00-\x7f]")
_WORDS_SQL = (
    "SELECT t.n, u.lexeme, p.pos FROM unnest(%s::text[]) WITH ORDINALITY AS t(x, n) "
    "CROSS JOIN LATERAL unnest(to_tsvector(%s::regconfig, t.x)) AS u(lexeme, positions, weights) "
    "CROSS JOIN LATERAL unnest(u.positions) AS p(pos) ORDER BY t.n, p.pos, u.lexeme"
)
_TOP = "\U0010ffff"  # after every character, in the "C" collation the word columns use


def _clean(texts: Sequence[str]) -> list[str]:
    # PostgreSQL text holds no NUL; as a separator it splits words as a space does.
    return [t.replace("\x00", " ") for t in texts]


def quote(lexeme: str) -> str:
    """One lexeme as tsquery input: quoted, with its quotes and backslashes escaped."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def match_all(lexemes: Sequence[tuple[str, int]], prefix: bool = False) -> str:
    """A tsquery that needs every lexeme of one typed chunk (in order of position), the
    last as a prefix when `prefix`; empty for none.

    The parser gives a hyphenated word both whole and in parts (`payments-service`,
    then `payments`, `service`); only the parts are kept, so the chunk finds the words
    whether the item joined them with a hyphen or not."""
    words = [
        lexeme
        for n, (lexeme, pos) in enumerate(lexemes)
        if not ("-" in lexeme and any(later > pos for _, later in lexemes[n + 1 :]))
    ]
    quoted = [quote(w) for w in dict.fromkeys(words)]
    if not quoted:
        return ""
    if prefix:
        quoted[-1] += ":*"
    return quoted[0] if len(quoted) == 1 else "(" + " & ".join(quoted) + ")"


class Vocabulary:
    """The word part of PostgresStore (mixed in; needs `_read`)."""

    if TYPE_CHECKING:

        def _read(self, query: Any, params: Any = ()) -> list[Any]: ...

    def _lexemes(self, texts: Sequence[str], config: str) -> list[list[tuple[str, int]]]:
        """Each text's (lexeme, position) pairs under `config`, in order."""
        out: list[list[tuple[str, int]]] = [[] for _ in texts]
        if not texts:
            return out
        for row in self._read(_WORDS_SQL, (_clean(texts), config)):
            lexeme = str(row["lexeme"])
            # PostgreSQL's parser keeps a file path of punctuation ("/_") as a word, which
            # SQLite's index does not, and a search is refused for: no word here either.
            if _HAS_TOKEN.search(lexeme):
                out[int(row["n"]) - 1].append((lexeme, int(row["pos"])))
        return out

    def stems(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words as the search index stems them ('english'), in order; stop
        words are left out, as the index leaves them."""
        return [[w for w, _ in found] for found in self._lexemes(texts, "english")]

    def words_in(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words as typed, lower-cased ('simple'), in order."""
        return [[w for w, _ in found] for found in self._lexemes(texts, "simple")]

    def prefix_words(self, word: str, limit: int = 16) -> list[str]:
        """The words items hold that start with `word` (as typed), the commonest first."""
        rows = self._read(
            "SELECT word FROM words WHERE word >= %s AND word < %s "
            "ORDER BY docs DESC, word LIMIT %s",
            (word, word + _TOP, limit),
        )
        return [str(r["word"]) for r in rows]

    def terms_with_prefix(self, prefix: str, limit: int = 50) -> list[tuple[str, int]]:
        """Stemmed terms that start with `prefix` (not the prefix itself), with how many
        items hold each, in alphabetical order."""
        rows = self._read(
            "SELECT term, docs FROM terms WHERE term > %s AND term < %s ORDER BY term LIMIT %s",
            (prefix, prefix + _TOP, int(limit)),
        )
        return [(str(r["term"]), int(r["docs"])) for r in rows]

    def doc_freqs(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """How many items hold each stemmed term, and how many items there are."""
        unique = sorted(set(terms))
        freqs = dict.fromkeys(unique, 0)
        if unique:
            rows = self._read("SELECT term, docs FROM terms WHERE term = ANY(%s)", (unique,))
            freqs.update({str(r["term"]): int(r["docs"]) for r in rows})
        total = self._read("SELECT count(*) AS n FROM items")[0]["n"]
        return int(total), freqs

    def word_freqs(self, words: Sequence[str]) -> dict[str, int]:
        """How many items hold each word as typed; words none holds are left out."""
        unique = sorted(set(words))
        if not unique:
            return {}
        rows = self._read(
            "SELECT word, docs FROM words WHERE word = ANY(%s) AND docs > 0", (unique,)
        )
        return {str(r["word"]): int(r["docs"]) for r in rows}

    # --- tsquery input ---------------------------------------------------------------

    def tsquery_for(self, words: Words) -> str | None:
        """The tsquery text for `words`: None when typed words hold no word at all (the
        caller's InvalidInput) or `any_of` is empty; '' when their words are all stop
        words, which match nothing."""
        if words.typed:
            return self._typed(words.typed)
        return self._any_of(words.any_of)

    def _typed(self, text: str) -> str | None:
        chunks = [c for c in text.replace("\x00", " ").split() if _HAS_TOKEN.search(c)]
        plain = self.words_in(chunks)
        kept = [(c, p) for c, p in zip(chunks, plain, strict=True) if p]
        if not kept:
            return None
        stemmed = self._lexemes([c for c, _ in kept], "english")
        parts = [match_all(found) for found in stemmed[:-1] if found]
        if not stemmed[-1] and parts:
            return " & ".join(parts)  # the last chunk is stop words only: the index has none
        alternatives = [match_all(stemmed[-1], prefix=True)] if stemmed[-1] else []
        last_plain = kept[-1][1]
        if len(last_plain) == 1:
            word = last_plain[0]
            alternatives.append(quote(word) + ":*")
            longer = [w for w in self.prefix_words(word) if w != word]
            alternatives += [match_all(found) for found in self._lexemes(longer, "english")]
        alternatives = list(dict.fromkeys(a for a in alternatives if a))
        if alternatives:
            parts.append(alternatives[0] if len(alternatives) == 1 else _any(alternatives))
        return " & ".join(parts)

    def _any_of(self, terms: Sequence[Term]) -> str | None:
        unique = [t for t in dict.fromkeys(terms) if _HAS_TOKEN.search(t.text)]
        if not unique:
            return None
        stemmed = self._lexemes([t.text for t in unique], "english")
        plain = self.words_in([t.text for t in unique]) if any(t.prefix for t in unique) else []
        alternatives: list[str] = []
        for n, (term, found) in enumerate(zip(unique, stemmed, strict=True)):
            if found:
                alternatives.append(match_all(found, prefix=term.prefix))
            if term.prefix and len(plain[n]) == 1:
                alternatives.append(quote(plain[n][0]) + ":*")
        return " | ".join(dict.fromkeys(alternatives))


def _any(alternatives: Sequence[str]) -> str:
    return "(" + " | ".join(alternatives) + ")"
