"""The SQLite store's words: how it splits text, and how many items hold each word.

Splitting is the index's own: in-memory FTS5 tables with the index's tokenizer (porter
stemming) and the same without stemming, so `stems` and `words_in` cut text exactly as
the search index does. Two tables count items per word, `terms` (stemmed) and `words`
(as typed), kept in step with the index by every write of an item (`_count_terms`), so
recall's statistics (`doc_freqs`, `word_freqs`) and search's prefixes (`prefix_words`)
are one indexed read each, never a walk of the index.

Counting is on every write, so it is kept cheap: the index's tokenizer (unicode61) cuts
ASCII text at every character but a letter or a digit and folds its case, which a
regular expression does exactly, and the stemmer works on one word at a time, so each
word's stem is asked of the tokenizer once and remembered (`_stems_for`). Text beyond ASCII,
or long enough to hold a word the index would cut short, goes to the tokenizer itself.
A batch's counts are one statement per table.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain

from kenning.errors import StoreError
from kenning.model import Item
from kenning.store.sqlite_core import Core

# unicode61's split of ASCII text once folded to lower case: its only word characters
# there are letters and digits (tests/test_terms.py holds it to the tokenizer).
_ASCII_WORD = re.compile(r"[a-z0-9]+")
# FTS5 cuts a word at 32,768 bytes: text that long goes to the tokenizer itself.
_LONGEST_FAST = 32_767
_STEMS_KEPT = 200_000  # words whose stem is remembered, at most


class Terms(Core):
    """Words and their counts (mixed into `SQLiteStore`)."""

    _stem_conn: sqlite3.Connection | None = None
    _stem_of: dict[str, str] | None = None  # each word's stem, as the stemmer gave it

    def _index_text(self, item: Item) -> str:
        """The text the FTS index holds for an item (title, body, tags as stored)."""
        return f"{item.title}\n{item.body}\n{json.dumps(list(item.tags))}"

    def _count_terms(
        self, conn: sqlite3.Connection, added: Sequence[Item], removed: Sequence[Item] = ()
    ) -> None:
        """Keep `terms` (items per stemmed word) and `words` (items per word as typed) in
        step with what the index holds."""
        self._count_texts(
            conn, [self._index_text(i) for i in added], [self._index_text(i) for i in removed]
        )

    def _count_texts(
        self, conn: sqlite3.Connection, added: Sequence[str], removed: Sequence[str] = ()
    ) -> None:
        """`_count_terms` for the index texts (`_index_text`) of the items added and
        removed: one statement per table for the lot."""
        if not added and not removed:
            return
        stems, words = self._docs_holding(added)
        if removed:
            fewer_stems, fewer_words = self._docs_holding(removed)
            stems.subtract(fewer_stems)
            words.subtract(fewer_words)
        for table, column, delta in (("terms", "term", stems), ("words", "word", words)):
            changes = {token: d for token, d in sorted(delta.items()) if d}
            if not changes:
                continue
            conn.execute(
                f"INSERT INTO {table} ({column}, docs) SELECT key, value FROM json_each(?) "
                f"WHERE true ON CONFLICT({column}) DO UPDATE SET docs = docs + excluded.docs",
                (json.dumps(changes),),
            )
            gone = [token for token, d in changes.items() if d < 0]
            if gone:
                conn.execute(
                    f"DELETE FROM {table} WHERE docs <= 0 AND {column} IN "
                    "(SELECT value FROM json_each(?))",
                    (json.dumps(gone),),
                )

    def _docs_holding(self, texts: Sequence[str]) -> tuple[Counter[str], Counter[str]]:
        """How many of `texts` hold each word as the index stems it, and each word as
        typed (folded)."""
        fast: list[set[str]] = []
        slow: list[str] = []  # texts the tokenizer itself splits
        for text in texts:
            if text.isascii() and len(text) <= _LONGEST_FAST:
                fast.append(set(_ASCII_WORD.findall(text.lower())))
            else:
                slow.append(text)
        words = Counter(chain.from_iterable(fast))
        stem_of = self._stems_for(words)
        # A stem is held by as many texts as hold its words, less the texts that hold
        # two of its words or more (`runs` and `running`): only those are looked at.
        stems: Counter[str] = Counter()
        spelled: dict[str, list[str]] = {}
        for word, docs in words.items():
            stem = stem_of[word]
            stems[stem] += docs
            spelled.setdefault(stem, []).append(word)
        shared = {w for group in spelled.values() if len(group) > 1 for w in group}
        if shared:
            for found in fast:
                both = found & shared
                if len(both) > 1:
                    for stem, times in Counter(map(stem_of.__getitem__, both)).items():
                        stems[stem] -= times - 1
        if slow:
            for stemmed, typed in zip(self._split("t", slow), self._split("w", slow), strict=True):
                stems.update(set(stemmed))
                words.update(set(typed))
        return stems, words

    def _stems_for(self, words: Iterable[str]) -> dict[str, str]:
        """The remembered stems, with those of `words` (letters and digits, folded) among
        them: the stemmer turns one word into one stem, whatever is around it."""
        stem_of = self._stem_of
        if stem_of is None:
            stem_of = self._stem_of = {}
        new = sorted(w for w in words if w not in stem_of)
        if new:
            if len(stem_of) + len(new) > _STEMS_KEPT:
                stem_of.clear()
            for word, stemmed in zip(new, self._split("t", new), strict=True):
                if len(stemmed) != 1:
                    raise StoreError(f"the stemmer split {word!r} into {stemmed!r}")
                stem_of[word] = stemmed[0]
        return stem_of

    def _tokenizer(self) -> sqlite3.Connection:
        """In-memory FTS5 tables with the index's own tokenizer (t), and the same without
        stemming (w), to split any text as the index does."""
        conn = getattr(self, "_stem_conn", None)
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(
                "CREATE VIRTUAL TABLE t USING fts5(x, "
                "tokenize='porter unicode61 remove_diacritics 2')"
            )
            conn.execute("CREATE VIRTUAL TABLE tv USING fts5vocab(t, 'instance')")
            conn.execute(
                "CREATE VIRTUAL TABLE w USING fts5(x, tokenize='unicode61 remove_diacritics 2')"
            )
            conn.execute("CREATE VIRTUAL TABLE wv USING fts5vocab(w, 'instance')")
            self._stem_conn = conn
        return conn

    def _split(self, table: str, texts: Sequence[str]) -> list[list[str]]:
        conn = self._tokenizer()
        conn.execute("BEGIN")
        try:
            conn.executemany(
                f"INSERT INTO {table}(rowid, x) VALUES (?, ?)", list(enumerate(texts, 1))
            )
            out: list[list[str]] = [[] for _ in texts]
            for term, doc in conn.execute(f"SELECT term, doc FROM {table}v ORDER BY doc, offset"):
                out[doc - 1].append(term)
        finally:
            conn.execute("ROLLBACK")
        return out

    def stems(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words as the search index stems them, in order."""
        return self._split("t", texts)

    def _tokenize(self, texts: Sequence[str]) -> tuple[list[list[str]], list[list[str]]]:
        """Each text's words stemmed, and as typed (case and accents folded)."""
        return self._split("t", texts), self._split("w", texts)

    def words_in(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's words as typed, case and accents folded as the index folds them."""
        return self._split("w", texts)

    def prefix_words(self, word: str, limit: int = 16) -> list[str]:
        """The words items hold that start with `word` (folded), the commonest first."""
        rows = self._read(
            "SELECT word FROM words WHERE word >= ? AND word < ? ORDER BY docs DESC LIMIT ?",
            (word, word + "\U0010ffff", limit),
        )
        return [r[0] for r in rows]

    def doc_freqs(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """How many items hold each stemmed term, and how many items there are."""
        unique = sorted(set(terms))
        freqs = dict.fromkeys(unique, 0)
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            rows = self._read(
                f"SELECT term, docs FROM terms WHERE term IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            freqs.update({r[0]: int(r[1]) for r in rows})
        total = int(self._read("SELECT max(rowid) FROM items")[0][0] or 0)
        return total, freqs

    def word_freqs(self, words: Sequence[str]) -> dict[str, int]:
        """How many items hold each word as typed (folded); words none holds are left out."""
        unique = sorted(set(words))
        freqs: dict[str, int] = {}
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            rows = self._read(
                f"SELECT word, docs FROM words WHERE word IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            freqs.update({r[0]: int(r[1]) for r in rows if int(r[1])})
        return freqs

    def terms_with_prefix(self, prefix: str, limit: int = 50) -> list[tuple[str, int]]:
        """Stemmed terms that start with `prefix` (not the prefix itself), with how many
        items hold each: the first `limit` of them in alphabetical order."""
        rows = self._read(
            "SELECT term, docs FROM terms WHERE term > ? AND term < ? ORDER BY term LIMIT ?",
            (prefix, prefix + "\U0010ffff", int(limit)),
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    def close(self) -> None:
        if self._stem_conn is not None:
            self._stem_conn.close()
        super().close()
