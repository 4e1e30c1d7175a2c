"""A fast token estimate for budgets, close to what a modern BPE tokenizer counts.

Packs and recall promise agents a size in tokens, and they are built on the hook path,
so the estimate uses the standard library only, loads nothing and costs microseconds.

Method. A BPE tokenizer of the GPT-4 family (cl100k_base, o200k_base) first cuts text
into pieces with a regular expression, then merges bytes within each piece; a piece of
English or code is nearly always one token. So the estimate counts those pieces, the
way o200k_base cuts them, and adds a little for the pieces that usually split:

    tokens ~ words + camelCase humps + runs of 2+ blanks inside a line
           + 1.15 * (punctuation pieces + numbers)
           + 1.75 * line breaks
           + 0.5  * (digits past the third of a number + blanks before a number)
           + 0.3  * (UTF-8 bytes past the first of each non-ASCII character)

- A word is a run of letters; a lower-to-upper change ("useCallback") starts another.
- A punctuation piece is a run of symbols. One symbol that joins a word after a letter,
  digit or line break (".get", "(self", "_body", "'t") is part of that word, as in BPE.
- A line break is a run of line-break characters, unless it follows punctuation (a
  tokenizer folds "):\\n" into one piece). Its weight of 1.75 is fitted, not derived:
  text around line breaks splits more than the piece count alone says.
- A run of blanks costs a token when it is two or more long (indentation, alignment),
  but not when it ends a line. A single space joins the next word for free.

Every count comes from one pass: the UTF-8 bytes are mapped to class bits with
`bytes.translate`, read into one big integer, and shifted by a byte to compare each
position with its neighbours; `int.bit_count` then counts the positions. That is about
50 big-integer operations whatever the text: 10 KB takes 0.2-0.3 ms on a slow box, a
one-line memory a few microseconds.

Measured error (estimate against the real count, summed over each corpus). The
corpora are tests/fixtures/tokens/ (19 prose samples and 21 code samples: Python,
TypeScript, shell, JSON, SQL, Markdown, Go, Rust, YAML, a diff and stack traces) and,
held out, 355 prose and 173 code excerpts of documentation and source on a Debian box.

    corpus               o200k_base   cl100k_base   worst sample
    fixtures, prose      +1.0%        +0.7%         +5.5%
    fixtures, code       -0.3%        +0.6%         +9.6% (TSX, cl100k)
    held out, prose      +0.9%        +1.1%         +5.0%
    held out, code       -1.6%        -0.9%         -21% (a file of UPPER_CASE settings)

Samples of 200+ tokens within 10%: all of the fixtures, all of the held-out prose and
94% of the held-out code. Claude's older published tokenizer counts more, and the
estimate is about 3% under it on prose and 9% under it on code.

Rough outside English and code: up to ~30% under on base64 and on rare path segments,
15-40% under on German, Japanese and Chinese; on Cyrillic it lies between o200k_base
(which it exceeds by up to 65%) and cl100k_base.

Not additive over separators: a line break costs tokens, so summing the estimates of
lines gives less than the estimate of the lines joined by newlines. Estimate each part
with its separator, or the finished text.
"""

from __future__ import annotations

# Class bits of one byte. Bytes of non-ASCII characters count as lower-case letters.
_LOWER, _UPPER, _DIGIT, _PUNCT, _BLANK, _BREAK = 1, 2, 4, 8, 16, 32


def _class_table() -> bytes:
    table = bytearray(256)
    for byte in range(256):
        char = chr(byte)
        if "a" <= char <= "z" or byte >= 0x80:
            table[byte] = _LOWER
        elif "A" <= char <= "Z":
            table[byte] = _UPPER
        elif "0" <= char <= "9":
            table[byte] = _DIGIT
        elif char in "\n\r":
            table[byte] = _BREAK
        elif char in " \t\v\f":
            table[byte] = _BLANK
        else:
            table[byte] = _PUNCT
    return bytes(table)


_CLASSES = _class_table()

# 0x01 in every byte. ANDing with a shorter number costs only that number's length, so
# one long constant serves every text up to its size.
_ONES_LEN = 1 << 16
_ONES = int.from_bytes(b"\x01" * _ONES_LEN, "big")

# Weights, fitted against o200k_base and cl100k_base on the corpora above.
PUNCT_WEIGHT = 1.15
BREAK_WEIGHT = 1.75
HALF_WEIGHT = 0.5
WIDE_CHAR_WEIGHT = 0.3


def estimate_tokens(text: str) -> int:
    """About how many tokens a modern BPE tokenizer makes of `text`: 0 for "", else >= 1.

    Within a few percent on English prose and source code (see the module docstring).
    """
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    size = len(raw)
    ones = _ONES if size <= _ONES_LEN else int.from_bytes(b"\x01" * size, "big")
    # Byte i of the text is byte i of `x` from the top, so `v >> 8` puts each byte's
    # previous neighbour in its place and `v << 8` its next one.
    x = int.from_bytes(raw.translate(_CLASSES), "big")
    lower = x & ones
    upper = (x >> 1) & ones
    digit = (x >> 2) & ones
    punct = (x >> 3) & ones
    blank = (x >> 4) & ones
    brk = (x >> 5) & ones
    letter = lower | upper

    # `a ^ (a & b)` is "a and not b" without a negative number.
    words = letter ^ (letter & (letter >> 8))
    humps = upper & (lower >> 8)
    punct_ends = punct ^ (punct & (punct << 8))
    joined = punct & (letter << 8)  # one symbol before a word, after a letter,
    joined ^= joined & ((punct | blank) >> 8)  # digit or break: part of the word
    numbers = digit ^ (digit & (digit >> 8))
    digit2 = digit & (digit >> 8)
    long_digits = digit2 & (digit2 >> 16)
    blank_runs = blank & (blank >> 8)
    blank_runs ^= blank_runs & ((blank | brk) << 8)
    before_number = blank & (digit << 8)
    breaks = brk ^ (brk & ((brk | punct) >> 8))

    # Features of one weight share a number at different bit offsets: one count each.
    whole = (words | (humps << 1) | (blank_runs << 2)).bit_count()
    pieces = ((punct_ends ^ joined) | (numbers << 1)).bit_count()
    halves = (long_digits | (before_number << 1)).bit_count()
    total = (
        whole
        + PUNCT_WEIGHT * pieces
        + BREAK_WEIGHT * breaks.bit_count()
        + HALF_WEIGHT * halves
        + WIDE_CHAR_WEIGHT * (size - len(text))
    )
    return max(1, int(total + 0.5))
