"""The SQLite store's full-text search: the newest matches, ranked by bm25, in one pass.

Ranking reads every match's positions, so a word held by 20,000 items costs 20,000
bm25 rows. A search ranks only the newest SEARCH_WINDOW matches of the index: still
best first, and a query that broad never needed its oldest matches. The window comes
from one FTS5 cursor, newest first, stopped at the window's edge; each match's item is
read as it comes and only those the filters keep are ranked (a match's bm25 does not
depend on which others are ranked, so the ranks are the same as ranking the whole
window, and a search in one repo of many ranks only that repo's): the index is walked
once.

bm25 first counts how many items hold each phrase of the query, by reading that
phrase's whole list of items, and a prefix (the last word typed) is the merge of every
word that starts with it, read whole before the first match comes out: both FTS5's, and
in proportion to how many items hold the words, not to the window. So a search with a
limit reads `items_recent`, the index of the newest items (`sqlite_recent`), and goes on
to the whole index only when that holds too few hits and older items exist: from
100,000 to 1,000,000 memories its p95 then grew 1.2x, against 2.8x over the whole index
(docs/reference/schema.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from kenning.errors import InvalidInput
from kenning.model import Item
from kenning.store import fts
from kenning.store import sqlite_columns as columns
from kenning.store.base import ItemQuery, Words
from kenning.store.sqlite_items import Items

SEARCH_WINDOW = 2_000


class Search(Items):
    """Full-text search over the items (mixed into `SQLiteStore`)."""

    def next_captured(self, item_ids: Sequence[str], query: ItemQuery) -> dict[str, Item]:
        """For each of `item_ids`, the item captured right after it in its scope, when
        `query`'s filters keep that one: what may continue it (a conversation's next
        turn). The scope's own index walks to it."""
        if not item_ids:
            return {}
        marks = ", ".join("?" * len(item_ids))
        pairs = self._read(
            "SELECT items.id, (SELECT n.rowid FROM items AS n WHERE n.scope = items.scope "
            "AND n.rowid > items.rowid ORDER BY n.rowid LIMIT 1) "
            f"FROM items WHERE items.id IN ({marks})",
            list(item_ids),
        )
        after = {row[1]: row[0] for row in pairs if row[1] is not None}
        if not after:
            return {}
        where, params = self._where(query)
        rows = self._read(
            f"SELECT {columns.SELECT_QUALIFIED}, items.rowid FROM items "
            f"WHERE items.rowid IN ({', '.join('?' * len(after))}) AND {where}",
            [*after, *params],
        )
        return {after[row[-1]]: columns.row_to_item(row) for row in rows}

    def search(self, words: Words, query: ItemQuery) -> list[tuple[Item, float]]:
        """Full-text search, best first; the score is bm25 negated (higher is better).
        Typed words with nothing searchable in them are InvalidInput.

        Ranks the newest SEARCH_WINDOW matches of the index (the index alone says which,
        before any filter). When the filters leave fewer hits than asked for there, the
        window grows until they do or it spans every match; with no limit it spans
        every match at once.
        """
        match = fts.match_for(words, self)
        if match is None:
            if words.typed:
                raise InvalidInput("the search has no words in it: give at least one word")
            return []
        where, params = self._where(query)
        # The window is the index's newest matches whatever the filters; only the ones
        # the filters keep are ranked (the CASE): bm25 is most of a search's time. LEFT
        # JOIN: the index drives, newest first, as without the filters. The best are
        # chosen by rank alone, and only their items are read whole.
        limit = f" LIMIT {int(query.limit)}" if query.limit else ""
        rows: list[sqlite3.Row] = []
        for index in self._indexes(query):
            sql = (
                f"SELECT {columns.SELECT_QUALIFIED}, best.rank AS rank FROM ("
                "SELECT rowid, rank FROM ("
                f"SELECT {index}.rowid AS rowid, CASE WHEN {where} "
                f"THEN bm25({index}, 8.0, 1.0, 4.0) END AS rank "
                f"FROM {index} LEFT JOIN items ON items.rowid = {index}.rowid "
                f"WHERE {index} MATCH ? ORDER BY {index}.rowid DESC LIMIT ?"
                f") WHERE rank IS NOT NULL ORDER BY rank, rowid DESC{limit}"
                ") AS best JOIN items ON items.rowid = best.rowid "
                "ORDER BY best.rank, best.rowid DESC"
            )
            size = SEARCH_WINDOW if query.limit else -1
            while True:
                rows = self._read(sql, [*params, match, size])
                if size < 0 or len(rows) >= (query.limit or 0):
                    return [(columns.row_to_item(r), -float(r["rank"])) for r in rows]
                if not self._more(index, match, size):
                    break
                size *= 4
        return [(columns.row_to_item(r), -float(r["rank"])) for r in rows]

    def _indexes(self, query: ItemQuery) -> tuple[str, ...]:
        """The indexes a search reads, in turn: the recent one, then (when it holds too
        few hits and older items exist) the whole one; a search with no limit wants
        every match, and reads the whole index at once."""
        if not query.limit:
            return ("items_fts",)
        since = self._read("SELECT since FROM recent_index", ())
        older = bool(since) and bool(
            self._read("SELECT 1 FROM items WHERE rowid < ? LIMIT 1", (since[0][0],))
        )
        return ("items_recent", "items_fts") if older else ("items_recent",)

    def _more(self, index: str, match: str, size: int) -> bool:
        """Whether `index` holds more than `size` matches (the window was full)."""
        return bool(
            self._read(
                f"SELECT 1 FROM {index} WHERE {index} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, size),
            )
        )
