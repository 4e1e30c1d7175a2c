"""Turning what a person types into an FTS5 query.

Typed text is never FTS5 syntax: each whitespace-separated chunk becomes a quoted
phrase, so `-`, `:`, `"`, `*`, `AND` or `NEAR(` are just text. Every chunk must match
(FTS5 joins phrases with AND), the porter tokenizer matches words by their stems, and
the last chunk matches as a prefix so results keep coming while you type.
"""

from __future__ import annotations

import re

# A chunk is worth searching when it has a letter or digit, or any character beyond ASCII:
# SQLite's tokenizer follows Unicode 6.1 and counts private-use, combining and
# since-assigned characters (newer emoji, scripts) as word characters where Python may
# not. A chunk FTS5 finds no word in is harmless: it matches nothing alone and is ignored
# next to others. Only chunks of ASCII punctuation are dropped.
_HAS_TOKEN = re.compile(r"[^\W_]|[^\x00-\x7f]")


def fts_query(text: str) -> str | None:
    """The MATCH expression for `text`, or None when it holds no searchable word."""
    # FTS5 reads the expression only up to a NUL, which would cut a phrase open.
    chunks = [c for c in text.replace("\x00", " ").split() if _HAS_TOKEN.search(c)]
    if not chunks:
        return None
    phrases = ['"' + chunk.replace('"', '""') + '"' for chunk in chunks]
    phrases[-1] += " *"
    return " ".join(phrases)
