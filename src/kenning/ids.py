"""ULIDs and short ids.

A ULID is 48 bits of milliseconds and 80 random bits, written as 26 Crockford base32
characters, so ids sort by creation time. Ids made in the same millisecond by one
process increase by one in their random part, keeping that order strict. People see
the last six characters; any unique start or end of four or more resolves an id, and so
does the start of those six (`4map` for `…4maph7`).
"""

from __future__ import annotations

import os
import time
from _thread import allocate_lock

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
SHORT_LEN = 6
MIN_REF_LEN = 4
_lock = allocate_lock()  # threading.Lock itself, without importing threading
_last = (0, 0)


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


# Every pair of characters (10 bits): an id is 13 lookups, not a step per character (an
# import makes two ids for each memory).
_PAIRS = [a + b for a in ALPHABET for b in ALPHABET]
_PAIR_SHIFTS = tuple(range(120, -1, -10))


def _ulid_text(ms: int, rand: int) -> str:
    """`_encode(ms, 10) + _encode(rand, 16)`: 130 bits in 26 characters."""
    value = ((ms & ((1 << 50) - 1)) << 80) | rand
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])


def new_ulid(now_ms: int | None = None) -> str:
    """A new ULID, strictly greater than the previous one from this process."""
    global _last
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        last_ms, last_rand = _last
        if ms <= last_ms:
            ms, rand = last_ms, (last_rand + 1) & ((1 << 80) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last = (ms, rand)
    return _ulid_text(ms, rand)


def short_id(ulid: str) -> str:
    """The last six characters, which people see."""
    return ulid[-SHORT_LEN:].lower()


def normalize_ref(ref: str) -> str:
    """Upper-case a reference and map the look-alike letters Crockford allows."""
    return ref.strip().upper().translate(str.maketrans("ILO", "110"))


def is_valid_ref(ref: str) -> bool:
    text = normalize_ref(ref)
    return MIN_REF_LEN <= len(text) <= 26 and all(c in ALPHABET for c in text)


FUTURE_SLACK_MS = 24 * 3600 * 1000  # another machine's clock, a day ahead of this one's


def is_ulid(text: str, now_ms: int | None = None) -> bool:
    """Whether `text` (read as `normalize_ref` reads it) is a ULID as kenning makes them:
    26 characters of its alphabet, the first 0-7 (128 bits), and a time not after now
    (with a day's slack). An id from a file is checked so: one made up
    (`XXXXXXXXXXXXXXXXXXXX...`) would sort as the newest memory."""
    value = normalize_ref(text)
    if not (len(value) == 26 and value[0] in "01234567" and all(c in ALPHABET for c in value)):
        return False
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return ulid_time_ms(value) <= now + FUTURE_SLACK_MS


def ulid_time_ms(ulid: str) -> int:
    value = 0
    for ch in ulid[:10]:
        value = value * 32 + ALPHABET.index(ch)
    return value
