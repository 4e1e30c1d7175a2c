"""The SQLite store's words: how it splits text, and how many items hold each word.

Splitting is the index's own: in-memory FTS5 tables with the index's tokenizer (porter
stemming) and the same without stemming, so `stems` and `words_in` cut text exactly as
the search index does. Two tables count items per word, `terms` (stemmed) and `words`
(as typed), kept in step with the index by every write of an item (`_count_terms`), so
recall's statistics (`doc_freqs`, `word_freqs`) and search's prefixes (`prefix_words`)
are one indexed read each, never a walk of the index.

What recall reads of the counts on every prompt (`doc_freqs`, `word_freqs`, the item
total) is kept for the connection until the counts may have changed: until another
connection commits (`PRAGMA data_version` moves) or this one changes them
(`_count_texts`, `_recounted`, which move `_counted`). Inside a transaction nothing is
kept or served: what a write under way sees may still be rolled back.

Counting is on every write, so it is kept cheap: a batch's texts go into two in-memory
FTS5 tables that keep neither the text nor the positions (`detail=none`), whose
vocabulary then says how many of the texts hold each word, and are rolled back; the
counts of the lot are one statement per table.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence

from kenning.model import Item
from kenning.store.sqlite_core import Core

MAX_KEPT_COUNTS = 100_000  # words' counts kept at once (a few MB)
# The index's tokenizer (t: stems), and the same without stemming (w: words as typed).
TOKENIZERS = {"t": "porter unicode61 remove_diacritics 2", "w": "unicode61 remove_diacritics 2"}


class Terms(Core):
    """Words and their counts (mixed into `SQLiteStore`)."""

    _stem_conn: sqlite3.Connection | None = None
    _stem_tables: frozenset[str] = frozenset()  # the tables made in it so far
    _counted = 0  # moved by every change this connection makes to the counts
    _counts_at: tuple[int, int] | None = None  # (data_version, _counted) of what is kept
    _kept_docs: dict[str, int]  # items per stem, as read since _counts_at
    _kept_words: dict[str, int]  # items per word as typed (0: none), the same
    _kept_total: int | None = None

    def _recounted(self) -> None:
        """The counts were (or may be about to be) changed by this connection."""
        self._counted += 1

    def _kept_counts(self) -> bool:
        """Whether counts read before may be served, and kept: not inside a transaction,
        and forgotten when the counts may have changed since they were read."""
        if self.conn.in_transaction:
            return False
        now = (int(self._read("PRAGMA data_version")[0][0]), self._counted)
        if now != self._counts_at:
            self._counts_at = now
            self._kept_docs, self._kept_words, self._kept_total = {}, {}, None
        elif len(self._kept_docs) + len(self._kept_words) > MAX_KEPT_COUNTS:
            self._kept_docs, self._kept_words = {}, {}
        return True

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
        self._recounted()
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
        typed (folded): the tokenizer's own counts, from an index of just these texts
        that is never kept."""
        if not texts:
            return Counter(), Counter()
        conn = self._tokenizer("tc", "wc")
        rows = list(enumerate(texts, 1))
        counts: list[Counter[str]] = []
        conn.execute("BEGIN")
        try:
            for table in ("t", "w"):
                conn.executemany(f"INSERT INTO {table}c(rowid, x) VALUES (?, ?)", rows)
                counts.append(Counter(dict(conn.execute(f"SELECT term, doc FROM {table}cv"))))
        finally:
            conn.execute("ROLLBACK")
        return counts[0], counts[1]

    def _tokenizer(self, *tables: str) -> sqlite3.Connection:
        """In-memory FTS5 tables with the index's own tokenizer (t), and the same without
        stemming (w), to split any text as the index does; and the same two keeping no
        text and no positions (tc, wc), to count the texts that hold each word. Each
        with its vocabulary (`tv`, `tcv`, ...), made when first asked for: a hook that
        only splits its prompt makes two tables, not eight."""
        conn = self._stem_conn
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._stem_conn, self._stem_tables = conn, frozenset()
        for table in set(tables) - self._stem_tables:
            tokenize = TOKENIZERS[table[0]]
            if table.endswith("c"):
                conn.execute(
                    f"CREATE VIRTUAL TABLE {table} USING fts5(x, tokenize='{tokenize}', "
                    "content='', detail=none, columnsize=0)"
                )
                conn.execute(f"CREATE VIRTUAL TABLE {table}v USING fts5vocab({table}, 'row')")
            else:
                conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(x, tokenize='{tokenize}')")
                conn.execute(f"CREATE VIRTUAL TABLE {table}v USING fts5vocab({table}, 'instance')")
            self._stem_tables |= {table}
        return conn

    def _split(self, table: str, texts: Sequence[str]) -> list[list[str]]:
        conn = self._tokenizer(table)
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

    def _counts_of(self, table: str, column: str, tokens: list[str]) -> dict[str, int]:
        """Items per token read from `table` (0 for a token it does not hold)."""
        found = dict.fromkeys(tokens, 0)
        for start in range(0, len(tokens), 400):
            chunk = tokens[start : start + 400]
            rows = self._read(
                f"SELECT {column}, docs FROM {table} "
                f"WHERE {column} IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            found.update({r[0]: int(r[1]) for r in rows})
        return found

    def doc_freqs(self, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """How many items hold each stemmed term, and how many items there are."""
        unique = sorted(set(terms))
        keep = self._kept_counts()
        kept = self._kept_docs if keep else {}
        read = self._counts_of("terms", "term", [t for t in unique if t not in kept])
        freqs = {t: kept[t] if t in kept else read[t] for t in unique}
        total = self._kept_total if keep else None
        if total is None:
            total = int(self._read("SELECT max(rowid) FROM items")[0][0] or 0)
        if keep:
            kept.update(read)
            self._kept_total = total
        return total, freqs

    def word_freqs(self, words: Sequence[str]) -> dict[str, int]:
        """How many items hold each word as typed (folded); words none holds are left out."""
        unique = sorted(set(words))
        keep = self._kept_counts()
        kept = self._kept_words if keep else {}
        read = self._counts_of("words", "word", [w for w in unique if w not in kept])
        if keep:
            kept.update(read)
        counts = ((w, kept[w] if w in kept else read[w]) for w in unique)
        return {w: n for w, n in counts if n}

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
