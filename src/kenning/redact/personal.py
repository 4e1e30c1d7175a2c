"""A person's own secrets, which have no vendor's format: a card given with its expiry or
security code, a PIN or PUK after its word, answers to security questions, a wallet's seed
phrase (a line, a list or a numbered grid of BIP-39 words), a recovery code or key after its
name (BitLocker's 48 digits anywhere), a TOTP setup key after its name (on its line or
the next), and a password's hash (crypt's ``$6$...``, ``$apr1$``, bcrypt's ``$2b$``, with
the doubled ``$$`` of a Compose file).

Each starts from a literal found in the lower-cased bytes (``cv``, ``exp``, ``pin``,
``question``, a BIP-39 word's run, ``$``...), and each needs both its name and a value
of its shape: a card number must pass Luhn's check and have an expiry or a CVC on its
line; a PIN is four to eight digits right after its name or its "is", not a year after
"changed in"; an answer follows a security question named before it on its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kenning.redact.bip39 import WORDS as BIP39
from kenning.redact.lazy import lazy
from kenning.redact.named import _skip_value

Add = Callable[[tuple[int, int, str]], None]
_F = re.ASCII


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# --- cards ---------------------------------------------------------------------------

# 13 to 19 digits, in groups of four (or Amex's 4-6-5) or none; the networks' first digits
_CARD = lazy(
    r"(?<![0-9.,/-])(?:3[47][0-9]{2}[ -]?[0-9]{6}[ -]?[0-9]{5}"
    r"|(?:4[0-9]{3}|5[1-5][0-9]{2}|2[2-7][0-9]{2}|6(?:011|5[0-9]{2}|4[4-9][0-9])|35[0-9]{2}"
    r"|3[068][0-9]{2})(?:[ -]?[0-9]{4}){2}[ -]?[0-9]{1,7})(?![0-9])",
    _F,
)
# what makes a card number one that pays: its expiry or its security code nearby
_CARD_CUE = lazy(
    r"\b(?:exp(?:iry|ires|iration|_month|_year|Month|Year)?|valid[ \t]thru|cvc2?|cvv2?|csc"
    r"|security[ \t]code)\b"
    r"|(?<![0-9/])(?:0[1-9]|1[0-2])[ \t]?/[ \t]?(?:[0-9]{2}|20[0-9]{2})(?![0-9/])",
    re.IGNORECASE,
)
_CARD_WORDS = (b"cv", b"exp", b"csc", b"valid thru", b"security code", b"/")


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def cards(text: str, low: bytes, add: Add) -> None:
    """A card number (Luhn-valid, of a network's first digits) with its expiry or its
    security code within 80 characters on its line: enough to pay."""
    if not any(word in low for word in _CARD_WORDS):
        return
    for m in _CARD.finditer(text):
        digits = m.group().replace(" ", "").replace("-", "")
        if not 13 <= len(digits) <= 19 or not _luhn(digits):
            continue
        lo = max(text.rfind("\n", max(0, m.start() - 80), m.start()) + 1, m.start() - 80)
        hi = text.find("\n", m.end())
        hi = min(len(text) if hi < 0 else hi, m.end() + 80)
        around = text[lo : m.start()] + " " + text[m.end() : hi]
        if _CARD_CUE.search(around):
            add((m.start(), m.end(), "card_number"))


# --- PINs ------------------------------------------------------------------------------

# PIN and PUK in capitals (pin is also a word: GPIO pin 13), or a word that is only ever
# a PIN's: pincode, PIN-Code, Geheimzahl, passcode, unlock code, code secret (French),
# пин-код, ПИН, 暗証番号; then a few words and "is" in some language, or the digits at once.
_PIN = lazy(
    r"(?:(?<![A-Za-z])(?:PIN2?|PUK2?|ПИН)(?![A-Za-z])"
    r"|(?i:(?<![a-z])(?:pin[ -]?(?:code|kode|koodi|nummer|number|numero|número)|pincode"
    r"|geheimzahl|passcode|unlock[ \t]code|code[ \t]secret|code[ \t]pin|c[oó]digo[ \t]pin"
    r"|пин-код|пин|暗証番号)))"
    r"(?P<gap>(?:[ \t]+[^\s:=0-9]{1,20}){0,6}?)"
    r"[ \t]*(?P<conn>:|=|\b(?:is|was|ist|lautet|est|es|è|é|er|to|är|on|je|jest|это)\b|は)?"
    r"[ \t]*(?P<v>[0-9]{4,8})(?![0-9]|[.,:/-][0-9])",
)
_PIN_WORDS = (b"pin", b"puk", b"??", b"geheimzahl", b"passcode", b"unlock", b"code")
# where a PIN's name may start: its ASCII words in the bytes, the others in the text
_PIN_STARTS = (b"pin", b"puk", b"geheimzahl", b"passcode", b"unlock", b"code")
_PIN_OTHER = ("ПИН", "пин", "Пин", "暗証番号", "código", "Código")
# Words after a PIN's name that say when or where, not what: "PIN changed in 2024".
_PIN_GAP_STOP = _wordset(
    """
    in on at since from until by before after changed reset expires expired updated set
    length digits attempts tries
    """
)
_YEAR = lazy(r"(?:19|20)[0-9]{2}", _F)


def pins(text: str, low: bytes, add: Add) -> None:
    if not any(word in low for word in _PIN_WORDS):
        return
    starts = set(_word_hits(low, _PIN_STARTS))
    for word in _PIN_OTHER:
        at = text.find(word)
        while at >= 0:
            starts.add(at)
            at = text.find(word, at + 1)
    for at in sorted(starts):
        if (m := _PIN.match(text, at)) is None:
            continue
        gap = [w.lower() for w in m.group("gap").split()]
        if any(w in _PIN_GAP_STOP for w in gap):
            continue
        if not m.group("conn") and (len(gap) > 2 or _YEAR.fullmatch(m.group("v"))):
            continue  # "PIN entry for 2024", a year
        add((m.start("v"), m.end("v"), "password"))


# --- security questions -----------------------------------------------------------------

# A security question named by what it asks: a maiden name, a first pet, a favourite...
_NAMED_QUESTION = (
    r"(?i:(?:mother'?s[ \t]+)?maiden[ \t]+name|first[ \t]+(?:pet|school|car|teacher|job)"
    r"(?:'s[ \t]+name)?|childhood[ \t]+(?:friend|nickname|street|hero)"
    r"|city[ \t]+(?:you[ \t]+were|i[ \t]+was)[ \t]+born(?:[ \t]+in)?"
    r"|favou?rite[ \t]+(?:teacher|book|movie|food|colou?r|team|place|band)"
    r"|street[ \t]+you[ \t]+grew[ \t]+up[ \t]+on)"
)
_QUESTION = lazy(
    r"(?:" + _NAMED_QUESTION + r"[?]?(?:[ \t]+(?i:is|was|answer))?[ \t]*[:=]?[ \t]*"
    # "answer" alone only as a label ("answer: X", "the answer is X"): a line about a
    # question says "answer" in passing too ("no question to answer here").
    r"|(?P<answer>(?i:answer))(?:[ \t]*[:=][ \t]*|[ \t]+(?i:is|was)[ \t]+))"
    r"(?P<v>[^\s,;?][^,;?\r\n]{0,59})"
)
# What makes "answer" a security answer's label: a security question named before it on
# its line ("Security question: first pet? answer: X"). A line about other questions
# (what a form asks, what the client was asked last round) says "an answer is ..." too,
# and code names the answer before the question it asks (answer = ask("...?")).
_SECURITY_QUESTION = lazy(r"(?i:security|secret)[ \t_-]*(?i:question)|" + _NAMED_QUESTION)


def security_answers(text: str, low: bytes, add: Add) -> None:
    """Answers to security questions, on a line that says it gives them."""
    at = low.find(b"question")
    while at >= 0:
        # the question's line, or its last 400 characters (never the text before it)
        start = low.rfind(b"\n", max(0, at - 400), at) + 1 or max(0, at - 400)
        end = low.find(b"\n", at)
        end = len(text) if end < 0 else end
        # where the line's first security question ends: an "answer" label counts only
        # after it. Found once per line, not once per answer (a long line of "answer:
        # x, ..." searched its start again for each, which took seconds on 64 KB).
        named = _SECURITY_QUESTION.search(text, start, end)
        after = len(text) + 1 if named is None else named.end()
        for m in _QUESTION.finditer(text, start, end):
            if m.group("answer") and m.start() < after:
                continue
            value = m.group("v").rstrip(" \t.!)")
            if value and not value.endswith("?") and not _skip_value(value):
                add((m.start("v"), m.start("v") + len(value), "password"))
        at = low.find(b"question", end)


# --- seed phrases -------------------------------------------------------------------------

_LOWER_WORD = lazy(r"(?<![A-Za-z])[a-z]{3,8}(?![A-Za-z])", _F)
# Words near which a seed phrase is written (a pasted phrase with none is not looked for:
# reading every word of every text would cost a fifth of all redaction).
_SEED_CUES = (
    b"seed",
    b"phrase",
    b"mnemonic",
    b"wallet",
    b"metamask",
    b"ledger",
    b"trezor",
    b"bip39",
    b"bip-39",
)
_GRID_CELL = lazy(r"(?<![0-9])(?P<n>[0-9]{1,2})[.):][ \t]*(?P<w>[a-z]{3,8})(?![a-z])", _F)


def seed_phrases(text: str, low: bytes, add: Add) -> None:
    """12 to 24 words of BIP-39's list in a row (one line, quoted in code or not), or
    numbered 1 to 12 (or 24) in a grid, near a word that names one (read only there);
    and a phrase of 12, 15, 18, 21 or 24 such words with no other word of the list
    next to it, wherever it is, in a row or listed (parted by commas, one a line, in
    numbered columns)."""
    _bare_seed_phrases(text, add)
    windows: list[list[int]] = []
    for cue in _SEED_CUES:
        for at in _hits(low, cue):
            lo, hi = max(0, at - _SEED_REACH), min(len(text), at + _SEED_REACH)
            windows.append([lo, hi])
    windows.sort()
    merged: list[list[int]] = []
    for lo, hi in windows:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    for lo, hi in merged:
        _seed_words(text, lo, hi, add)
        if ". " in text[lo:hi] or ") " in text[lo:hi]:
            _seed_grid(text, lo, hi, add)
    _listed_phrases(text, merged, add)


_SEED_REACH = 600  # characters either side of a cue where a phrase is looked for


# A wallet's phrase has 12, 15, 18, 21 or 24 words. Bare, with no word near it that names
# it, it is read only at its exact length: ordinary English has no run of that many of
# the list's words (none of "the", "a", "of", "is", "to" is one), and a run of another
# length is a list of words, not a phrase.
_PHRASE_LENGTHS = frozenset((12, 15, 18, 21, 24))
# Where one can be: a run of 47 or more lower-case letters and spaces (12 words of three
# letters), found on a byte map of the text before any word is read.
_PHRASE_MAP = bytes(ord("a") if 97 <= b <= 122 or b == 32 else ord(".") for b in range(256))
_PHRASE_NEEDLE = b"a" * 47


def _bare_seed_phrases(text: str, add: Add) -> None:
    mapped = text.encode("ascii", "replace").translate(_PHRASE_MAP)
    at = mapped.find(_PHRASE_NEEDLE)
    while at >= 0:
        end = mapped.find(b".", at)
        end = len(text) if end < 0 else end
        # counted on the run's words split in C; read by position only at a phrase's length
        count = longest = 0
        for word in text[at:end].split(" "):
            if word in BIP39:
                count += 1
                longest = max(longest, count)
            elif word:
                count = 0
        if longest >= 12:
            _phrase_runs(text, at, end, add)
        at = mapped.find(_PHRASE_NEEDLE, end)


def _phrase_runs(text: str, lo: int, hi: int, add: Add) -> None:
    run: list[tuple[int, int]] = []
    for m in _LOWER_WORD.finditer(text, lo, hi):
        if m.group() in BIP39 and (not run or _joined(text, run[-1][1], m.start())):
            run.append(m.span())
            continue
        if len(run) in _PHRASE_LENGTHS:
            add((run[0][0], run[-1][1], "secret_assignment"))
        run = [m.span()] if m.group() in BIP39 else []
    if len(run) in _PHRASE_LENGTHS:
        add((run[0][0], run[-1][1], "secret_assignment"))


def _seed_words(text: str, lo: int, hi: int, add: Add) -> None:
    # A run of listed words; one word off the list inside it (a typo, a word misheard)
    # does not end it, if listed words follow.
    run: list[tuple[int, int]] = []
    odd = -1  # where in the run the word off the list is
    for m in _LOWER_WORD.finditer(text, lo, hi):
        listed = m.group() in BIP39
        joined = bool(run) and _joined(text, run[-1][1], m.start())
        if joined and (listed or (odd < 0 and len(run) >= 6)):
            if not listed:
                odd = len(run)
            run.append(m.span())
            continue
        _seed_run(run[:odd] if odd == len(run) - 1 else run, add)
        run, odd = ([m.span()] if listed else []), -1
    _seed_run(run[:odd] if odd == len(run) - 1 else run, add)


def _joined(text: str, end: int, start: int) -> bool:
    """Are two words of a phrase next to each other: a space or two between them."""
    return 0 < start - end <= 2 and text[end:start].strip(" ") == ""


def _seed_run(run: list[tuple[int, int]], add: Add) -> None:
    if len(run) >= 12:
        add((run[0][0], run[-1][1], "secret_assignment"))


def _seed_grid(text: str, lo: int, hi: int, add: Add) -> None:
    cells = [m for m in _GRID_CELL.finditer(text, lo, hi) if m.group("w") in BIP39]
    i = 0
    while i < len(cells):
        if cells[i].group("n") != "1":
            i += 1
            continue
        j = i
        while j + 1 < len(cells) and int(cells[j + 1].group("n")) == int(cells[j].group("n")) + 1:
            if cells[j + 1].start() - cells[j].end() > 40:
                break
            j += 1
        if j - i + 1 >= 12:
            for cell in cells[i : j + 1]:
                add((cell.start("w"), cell.end("w"), "secret_assignment"))
        i = j + 1


# A phrase written as a list: its words parted by commas, hyphens, line breaks or the
# gaps of columns, each perhaps after its number ("2.", "2)", "(2)", "2"); a gap of one space with
# no number is the bare phrase's (read above). Twelve or more words of the list's shape.
_NUMBER = r"\(?[0-9]{1,2}[.):]?[ \t]++"
_LIST_GAP = (
    r"[ \t]*+(?:[,;-][ \t]*+(?:\r?\n[ \t]*+)?N?|\r?\n[ \t]*+N?|(?:(?<=\t)|(?<=  ))N?|(?<=[ \t])N)"
).replace("N", "(?:" + _NUMBER + ")")
# (a word held whole, and the gap after the first looked at before any is read: a scan at
# two thirds of the cost of one that backtracks)
_LISTED = lazy(
    r"(?<![A-Za-z0-9_])[a-z]{3,8}+(?=[ \t]*[,;\r\n(0-9-]|\t|  )"
    r"(?:" + _LIST_GAP + r"[a-z]{3,8}+(?![A-Za-z0-9_])){11,}",
    _F,
)
_ONE_WORD = lazy(r"[a-z]+", _F)
_NUMBERED = lazy(r"(?<![0-9.])\(?(?P<n>[0-9]{1,2})[.):]?[ \t]+\Z", _F)


def _listed_phrases(text: str, cued: list[list[int]], add: Add) -> None:
    """12 to 24 words of BIP-39's list, one a line, parted by commas or in numbered
    columns: at a phrase's length (12, 15, 18, 21 or 24) anywhere, or numbered exactly 1
    to that length; any run of twelve or more near a word that names a phrase."""
    for m in _LISTED.finditer(text):
        run: list[re.Match[str]] = []
        for word in _ONE_WORD.finditer(text, m.start(), m.end()):
            if word.group() in BIP39:
                run.append(word)
                continue
            _listed_run(text, run, cued, add)
            run = []
        _listed_run(text, run, cued, add)


def _listed_run(text: str, run: list[re.Match[str]], cued: list[list[int]], add: Add) -> None:
    if len(run) < 12:
        return
    numbers = []
    for word in run:
        number = _NUMBERED.search(text, max(0, word.start() - 8), word.start())
        numbers.append(int(number.group("n")) if number is not None else 0)
    near = any(lo <= run[0].start() < hi for lo, hi in cued)
    if not any(numbers):
        if len(run) in _PHRASE_LENGTHS or near:
            add((run[0].start(), run[-1].end(), "secret_assignment"))
    elif sorted(numbers) == list(range(1, len(run) + 1)) and (len(run) in _PHRASE_LENGTHS or near):
        for word in run:
            add((word.start(), word.end(), "secret_assignment"))


# --- recovery codes and setup keys ------------------------------------------------------

# BitLocker's recovery password: eight groups of six digits.
_BITLOCKER = lazy(r"(?<![0-9-])[0-9]{6}(?:-[0-9]{6}){7}(?![0-9-])", _F)
# One recovery code or key after its name: "Microsoft account recovery code: 0QM6A-...".
_ONE_CODE = lazy(
    r"(?i:recovery|backup|emergency|rescue)[ \t_-]+(?i:code|key)(?![A-Za-z])[^\r\n:=]{0,30}?"
    r"[ \t]*(?:[:=]|\bis\b)[ \t]*(?:\r?\n[ \t]*)?"
    r"(?P<v>[A-Za-z0-9]{4,}(?:-[A-Za-z0-9]{4,}){1,9}|[A-Za-z0-9]{12,64})(?![A-Za-z0-9-])"
)
# A TOTP secret after its name, on its line or the next: "2FA setup key: JBSW...",
# "TOTP secret:\nJBSW..." (base32, 16 to 64 characters, with a digit).
_SETUP_KEY = lazy(
    r"(?i:(?:setup|2fa|two-factor|totp|otp|mfa|authenticator)[ \t_-]+(?:key|secret|seed|code))"
    r"(?![A-Za-z])[^\r\n:=]{0,40}?[ \t]*[:=][ \t]*(?:\r?\n[ \t]*)?"
    r"(?P<v>[A-Z2-7]{16,64}|[a-z2-7]{16,64})=*(?![A-Za-z0-9])"
)
_DIGITS = lazy(r"[0-9]", _F)


_DIGITS_AS_ZERO = bytes(ord("0") if 48 <= b <= 57 else b for b in range(256))
_BITLOCKER_SHAPE = b"-".join([b"000000"] * 8)
_CODE_WORDS = (b"recovery", b"backup", b"emergency", b"rescue")
_SETUP_WORDS = (b"setup", b"2fa", b"two-factor", b"totp", b"otp", b"mfa", b"authenticator")


def recovery_and_setup_keys(text: str, low: bytes, add: Add) -> None:
    # each pattern is matched only where its first word is (a scan of the whole text
    # for an alternation of words, case-insensitive, costs a tenth of all redaction)
    if b"-" in low and (shape := low.translate(_DIGITS_AS_ZERO)).find(_BITLOCKER_SHAPE) >= 0:
        for at in _hits(shape, _BITLOCKER_SHAPE):
            if (m := _BITLOCKER.match(text, at)) is not None:
                add((m.start(), m.end(), "recovery_code"))
    for at in _word_hits(low, _CODE_WORDS):
        if (m := _ONE_CODE.match(text, at)) is not None:
            value = m.group("v")
            shaped = _DIGITS.search(value) and not value.isdigit() or len(value) >= 20
            if shaped and not _skip_value(value):
                add((m.start("v"), m.end("v"), "recovery_code"))
    for at in _word_hits(low, _SETUP_WORDS):
        if (m := _SETUP_KEY.match(text, at)) is not None and _DIGITS.search(m.group("v")):
            add((m.start("v"), m.end("v"), "secret_assignment"))


def _hits(low: bytes, word: bytes) -> list[int]:
    found = []
    at = low.find(word)
    while at >= 0:
        found.append(at)
        at = low.find(word, at + len(word))
    return found


def _word_hits(low: bytes, words: tuple[bytes, ...]) -> list[int]:
    """Where one of ``words`` starts a word in ``low``."""
    return sorted(
        at
        for word in words
        for at in _hits(low, word)
        if not at or not (chr(low[at - 1]).isalnum() or low[at - 1] == 95)
    )


# --- password hashes ----------------------------------------------------------------------

# crypt(3)'s modular formats: $1$ (md5), $5$/$6$ (sha), $y$ (yescrypt), $2b$ (bcrypt),
# Apache's $apr1$, each $ doubled when a Compose file or a Traefik label escapes it.
_CRYPT = lazy(
    r"(?<![\w$])(?P<d>\$\$?)(?:1|2[abxy]?|5|6|7|y|gy|apr1|md5)(?P=d)"
    r"(?:rounds=[0-9]{1,9}(?P=d))?[./A-Za-z0-9]{1,64}(?P=d)[./A-Za-z0-9$]{16,}",
    _F,
)


def password_hashes(text: str, add: Add) -> None:
    if "$" not in text:
        return
    for m in _CRYPT.finditer(text):
        add((m.start(), m.start() + len(m.group().rstrip("$")), "password_hash"))
