"""The SQLite store's words: how it splits text, and how many items hold each word.

Splitting is the index's own: in-memory FTS5 tables with the index's tokenizer (porter
stemming) and the same without stemming, so `stems` and `words_in` cut text exactly as
the search index does. Two tables count items per word, `terms` (stemmed) and `words`
(as typed), kept in step with the index by every write of an item (`_count_terms`), so
recall's statistics (`doc_freqs`, `word_freqs`) and search's prefixes (`prefix_words`)
are one indexed read each, never a walk of the index.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from kenning.model import Item
from kenning.store.sqlite_core import Core


class Terms(Core):
    """Words and their counts (mixed into `SQLiteStore`)."""

    _stem_conn: sqlite3.Connection | None = None

    def _index_text(self, item: Item) -> str:
        """The text the FTS index holds for an item (title, body, tags as stored)."""
        return f"{item.title}\n{item.body}\n{json.dumps(list(item.tags))}"

    def _count_terms(
        self, conn: sqlite3.Connection, added: Sequence[Item], removed: Sequence[Item] = ()
    ) -> None:
        """Keep `terms` (items per stemmed word) and `words` (items per word as typed) in
        step with what the index holds."""
        texts = [self._index_text(i) for i in added] + [self._index_text(i) for i in removed]
        if not texts:
            return
        stems, words = self._tokenize(texts)
        for table, column, tokens in (("terms", "term", stems), ("words", "word", words)):
            delta: dict[str, int] = {}
            for n, found in enumerate(tokens):
                step = 1 if n < len(added) else -1
                for token in set(found):
                    delta[token] = delta.get(token, 0) + step
            changes = [(token, d) for token, d in delta.items() if d]
            if not changes:
                continue
            conn.executemany(
                f"INSERT INTO {table} ({column}, docs) VALUES (?, ?) "
                f"ON CONFLICT({column}) DO UPDATE SET docs = docs + excluded.docs",
                changes,
            )
            if any(d < 0 for _, d in changes):
                conn.execute(f"DELETE FROM {table} WHERE docs <= 0")

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
