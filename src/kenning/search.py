"""Turning what a person types into an FTS5 query.

Typed text is never FTS5 syntax: each whitespace-separated chunk becomes a quoted
phrase, so `-`, `:`, `"`, `*`, `AND` or `NEAR(` are just text. Every chunk must match
(FTS5 joins phrases with AND), the porter tokenizer matches words by their stems, and
the last chunk matches as a prefix so results keep coming while you type.
"""

from __future__ import annotations

import re

_HAS_TOKEN = re.compile(r"[^\W_]")


def fts_query(text: str) -> str | None:
    """The MATCH expression for `text`, or None when it holds no searchable word."""
    chunks = [c for c in text.split() if _HAS_TOKEN.search(c)]
    if not chunks:
        return None
    phrases = ['"' + chunk.replace('"', '""') + '"' for chunk in chunks]
    phrases[-1] += " *"
    return " ".join(phrases)
