"""Scoring the redactor on the held-out secrets corpus (tests/fixtures/secrets_held).

Three figures, each a share of the corpus:

- removed: secret cases none of whose secrets is left in `redact(text).text`. A secret is
  left when its whole value is there, or one of its lines (a PEM body, an escaped one in
  JSON) of 12 characters or more, or the last 16 characters of a long one-line value (the
  random end of a token whose start was kept).
- exact: secret cases that came out as the text with each secret replaced by one
  `[redacted:...]` marker, as tests/test_redact_corpus.py checks its own corpus; the
  marker may also take the end of a secret's `lead` (`Bearer `, a PEM header, `user:` in
  a URL) or the start of its `tail` (a PEM footer), nothing else.
- unchanged: look-alikes that came out as they went in.

Used by tests/test_redact_held.py (floors) and bench/redact_held.py (figures and misses).
The corpus is only reported: a miss is fixed by fixing a format in general, never by a
rule for one of its strings.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kenning.redact import redact

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "secrets_held"))
import held  # noqa: E402

MARKER = r"\[redacted:[a-z0-9_]+\]"
ESCAPED_NEWLINE = re.compile(r"\n|\\n")


@dataclass(frozen=True)
class Miss:
    label: str
    text: str
    out: str


@dataclass(frozen=True)
class Score:
    cases: int
    removed: int
    exact: int
    lookalikes: int
    unchanged: int
    leaked: tuple[Miss, ...]
    mangled: tuple[Miss, ...]
    changed: tuple[Miss, ...]

    @property
    def removed_share(self) -> float:
        return self.removed / self.cases

    @property
    def exact_share(self) -> float:
        return self.exact / self.cases

    @property
    def unchanged_share(self) -> float:
        return self.unchanged / self.lookalikes


def left(secret: str, out: str) -> bool:
    """Whether any telling piece of `secret` is still in `out`."""
    if secret in out:
        return True
    lines = [line for line in ESCAPED_NEWLINE.split(secret) if len(line) >= 12]
    if len(lines) > 1:
        return any(line in out for line in lines)
    return len(secret) >= 24 and secret[-16:] in out


def _either_end(text: str, *, end: bool) -> str:
    """A pattern for any end (or start) of `text`, the part a redaction left alone."""
    cuts = range(len(text) + 1)
    pieces = [text[:i] for i in cuts] if end else [text[i:] for i in cuts]
    return "(?:" + "|".join(re.escape(p) for p in sorted(pieces, key=len, reverse=True)) + ")"


def expected(case: held.Case) -> re.Pattern[str]:
    """The shape the redacted text of `case` must have."""
    parts = []
    for part in case.parts:
        if isinstance(part, str):
            parts.append(re.escape(part))
        else:
            lead, tail = _either_end(part.lead, end=True), _either_end(part.tail, end=False)
            parts.append(lead + MARKER + tail)
    return re.compile("".join(parts), re.DOTALL)


def score(corpus: held.Corpus, redactor: Callable[[str], str] | None = None) -> Score:
    run = redactor or (lambda text: redact(text).text)
    leaked, mangled, changed = [], [], []
    removed = exact = 0
    for case in corpus.secrets:
        out = run(case.text)
        if any(left(s.value, out) for s in case.secrets):
            leaked.append(Miss(case.label, case.text, out))
            continue
        removed += 1
        if expected(case).fullmatch(out):
            exact += 1
        else:
            mangled.append(Miss(case.label, case.text, out))
    for case in corpus.lookalikes:
        out = run(case.text)
        if out != case.text:
            changed.append(Miss(case.label, case.text, out))
    return Score(
        cases=len(corpus.secrets),
        removed=removed,
        exact=exact,
        lookalikes=len(corpus.lookalikes),
        unchanged=len(corpus.lookalikes) - len(changed),
        leaked=tuple(leaked),
        mangled=tuple(mangled),
        changed=tuple(changed),
    )
