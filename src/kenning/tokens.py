"""A quick token estimate (placeholder until the calibrated estimator lands)."""

from __future__ import annotations

import re

_PIECES = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]")


def estimate_tokens(text: str) -> int:
    count = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        count += 1 + (len(piece) - 1) // 6 if piece.isalpha() else 1
    return count
