"""Look for redaction rules whose time grows faster than the text.

Every compiled pattern the redactor holds (the module-level ones of kenning.redact's
modules, in lists, tuples and dicts too, and any others a first redaction compiles) is
taken apart with Python's own regex parser; its literals, one character of each of its
classes, and prefixes of a string that walks it are each repeated to a size. Each
pattern's `finditer` and then the whole of `redact()` are timed on those texts at two
sizes four times apart; a shape whose time grows more than `--limit` times (6: linear
work takes 4x, quadratic 16x) is measured again, best of three, and reported.

    PYTHONPATH=src python bench/redact_redos.py              # 16 KB and 64 KB
    PYTHONPATH=src python bench/redact_redos.py --small 4000 # quicker screen

tests/test_redact_linear.py runs it at small sizes on the patterns alone.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from re import _constants as C  # type: ignore[attr-defined]  # Python 3.11+
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

import kenning.redact as redact_pkg
from kenning.redact.lazy import _Lazy

# Patterns the redactor only calls .match or .fullmatch on (a value found by another
# rule, at a place another found): one attempt each, timed so, not by finditer.
_ANCHORED: set[str] = set()

_PROBES = "aZ0 _-.:=/\"'\t\n,;@!#$%&*+?|()[]{}<>~^`\\é"


def patterns() -> dict[str, re.Pattern[Any]]:
    """Every pattern the redactor uses, by where it was found."""
    found: dict[str, re.Pattern[Any]] = {}
    seen: set[int] = set()

    def take(name: str, value: Any, depth: int = 0) -> None:
        if isinstance(value, _Lazy):
            value = re.compile(value.pattern, value.flags)
        if isinstance(value, re.Pattern):
            if id(value) not in seen and (value.pattern, value.flags) not in {
                (p.pattern, p.flags) for p in found.values()
            }:
                seen.add(id(value))
                found[name] = value
        elif depth < 2 and isinstance(value, (list, tuple, frozenset, set)):
            for i, item in enumerate(value):
                take(f"{name}[{i}]", item, depth + 1)
        elif depth < 2 and isinstance(value, dict):
            for key, item in value.items():
                take(f"{name}[{key!r}]", item, depth + 1)

    for info in pkgutil.iter_modules(redact_pkg.__path__):
        module = importlib.import_module(f"kenning.redact.{info.name}")
        for attr, value in vars(module).items():
            take(f"{info.name}.{attr}", value)
            used = re.findall(
                rf"\b{re.escape(attr)}\b(?!\s*[:=][^=])(\.\w+\()?", inspect.getsource(module)
            )
            if (
                f"{info.name}.{attr}" in found
                and used
                and all(call in (".match(", ".fullmatch(") for call in used)
            ):
                _ANCHORED.add(f"{info.name}.{attr}")
    # the token formats: built inside functions, not held by a module
    from kenning.redact import formats

    tables = formats._tables()
    for field in ("scan", "short_scan", "long_scan"):
        take(f"formats._tables().{field}", getattr(tables, field))
    for kind, prefixes, body in formats.FORMATS:
        for prefix in prefixes.split():
            take(f"formats.FORMATS[{kind}:{prefix}]", re.compile(re.escape(prefix) + body))
    return found


def _class_char(items: list[tuple[Any, Any]], flags: int) -> str:
    """One character the class (IN's items) matches, or "" if none of the probes does."""
    if items and items[0][0] is not C.NEGATE:
        op, av = items[0]
        if op is C.LITERAL:
            return chr(av)
        if op is C.RANGE:
            return chr(av[0])
    body = "".join(_class_src(op, av) for op, av in items)
    try:
        cls = re.compile(f"[{body}]", flags & ~re.VERBOSE)
    except re.error:
        return ""
    for ch in _PROBES:
        if cls.fullmatch(ch):
            return ch
    return ""


def _class_src(op: Any, av: Any) -> str:
    if op is C.NEGATE:
        return "^"
    if op is C.LITERAL:
        return re.escape(chr(av))
    if op is C.RANGE:
        return f"{re.escape(chr(av[0]))}-{re.escape(chr(av[1]))}"
    if op is C.CATEGORY:
        return {
            C.CATEGORY_DIGIT: r"\d",
            C.CATEGORY_NOT_DIGIT: r"\D",
            C.CATEGORY_SPACE: r"\s",
            C.CATEGORY_NOT_SPACE: r"\S",
            C.CATEGORY_WORD: r"\w",
            C.CATEGORY_NOT_WORD: r"\W",
        }.get(av, "")
    return ""


class _Walker:
    """Strings built from a parsed pattern: its literals, its classes' characters, and
    walks through it (a random branch of each alternation, each repeat its least count
    but one)."""

    def __init__(self, pattern: re.Pattern[Any], rng: random.Random) -> None:
        self.flags = pattern.flags
        self.rng = rng
        self.literals: list[str] = []
        self.chars: list[str] = []
        src = pattern.pattern if isinstance(pattern.pattern, str) else pattern.pattern.decode()
        self.tree = P.parse(src, pattern.flags & ~re.DEBUG)
        self._collect(self.tree)

    def _collect(self, seq: Any) -> None:
        run = ""
        for op, av in seq:
            if op is C.LITERAL:
                run += chr(av)
                continue
            if run:
                self.literals.append(run)
                run = ""
            if op is C.IN:
                ch = _class_char(av, self.flags)
                if ch:
                    self.chars.append(ch)
            elif op is C.NOT_LITERAL:
                self.chars.append("a" if av != ord("a") else "b")
            elif op is C.ANY:
                self.chars.append("a")
            for sub in self._children(op, av):
                self._collect(sub)
        if run:
            self.literals.append(run)

    @staticmethod
    def _children(op: Any, av: Any) -> Iterator[Any]:
        if op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is getattr(C, "POSSESSIVE_REPEAT", None):
            yield av[2]
        elif op is C.SUBPATTERN:
            yield av[-1]
        elif op is C.BRANCH:
            yield from av[1]
        elif op in (C.ASSERT, C.ASSERT_NOT):
            yield av[1]
        elif op is getattr(C, "ATOMIC_GROUP", None):
            yield av
        elif op is C.GROUPREF_EXISTS:
            yield av[1]
            if av[2] is not None:
                yield av[2]

    def walk(self, seq: Any = None) -> str:
        seq = self.tree if seq is None else seq
        out: list[str] = []
        for op, av in seq:
            if op is C.LITERAL:
                out.append(chr(av))
            elif op is C.IN:
                out.append(_class_char(av, self.flags))
            elif op is C.NOT_LITERAL:
                out.append("a" if av != ord("a") else "b")
            elif op is C.ANY:
                out.append("a")
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT) or op is getattr(C, "POSSESSIVE_REPEAT", None):
                lo, hi = av[0], av[1]
                count = min(max(lo, 1) + self.rng.randint(0, 2), hi if hi != C.MAXREPEAT else 99)
                out.extend(self.walk(av[2]) for _ in range(count))
            elif op is C.SUBPATTERN:
                out.append(self.walk(av[-1]))
            elif op is getattr(C, "ATOMIC_GROUP", None):
                out.append(self.walk(av))
            elif op is C.BRANCH:
                out.append(self.walk(self.rng.choice(av[1])))
            elif op is C.GROUPREF_EXISTS or (op is C.ASSERT and av[0] == 1):  # lookahead
                out.append(self.walk(av[1]))
        return "".join(out)

    def units(self, walks: int = 4) -> list[str]:
        units: set[str] = set()
        self.chars = list(dict.fromkeys(self.chars))
        for lit in self.literals:
            if len(lit) >= 2:
                units.add(lit)
                for ch in self.chars[:6]:
                    units.add(lit + ch)
                    units.add(ch + lit)
        for ch in self.chars:
            units.add(ch)
        for _ in range(walks):
            whole = self.walk()
            for cut in (len(whole), len(whole) * 3 // 4, len(whole) // 2, len(whole) - 1):
                if cut > 0:
                    units.add(whole[:cut])
                    units.add(whole[:cut] + " ")
        return sorted(u for u in units if 0 < len(u) <= 400)


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _time(fn: Callable[[], object], repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def _pattern_time(
    pattern: re.Pattern[Any], text: str, repeat: int = 1, anchored: bool = False
) -> float:
    data: Any = text if isinstance(pattern.pattern, str) else text.encode("utf-8")
    if anchored:
        return _time(lambda: (pattern.match(data), pattern.fullmatch(data)), repeat)
    return _time(lambda: sum(1 for _ in pattern.finditer(data)), repeat)


def _grows(
    measure: Callable[[str, int], float], unit: str, small: int, limit: float, floor: float
) -> tuple[float, float] | None:
    """(time at `small`, time at 4x) when 4x the text took more than `limit` times as
    long, else None. Screened at a quarter of `small` first; a shape already slow at
    `small` is judged there, not run at 4x (a quadratic one would take minutes)."""
    quarter = measure(_fill(unit, small // 4), 1)
    if quarter * 16 < floor:
        return None  # even quadratic, 4x of `small` would stay under the floor
    t1 = measure(_fill(unit, small), 1)
    if t1 <= limit * quarter or t1 < floor / 4:
        return None
    if t1 > 0.25:
        return (quarter, t1) if t1 > limit * measure(_fill(unit, small // 4), 3) else None
    t1 = measure(_fill(unit, small), 3)
    t4 = measure(_fill(unit, small * 4), 2)
    return (t1, t4) if t4 > floor and t4 > limit * t1 else None


def scan(
    small: int = 16_000,
    limit: float = 6.0,
    floor: float = 0.02,
    whole: bool = True,
    only: str = "",
    seed: int = 7,
    out: Callable[[str], None] = print,
) -> list[tuple[str, str, str, float, float]]:
    """Shapes that grew more than `limit` times over 4x the text: (what, pattern's
    name, unit, time, time at 4x). `whole` times redact() on each shape too: a pattern's
    finditer that grows may be one the redactor only matches at bounded places."""
    from kenning.redact import redact

    rng = random.Random(seed)
    flagged: list[tuple[str, str, str, float, float]] = []
    found = patterns()
    units_all: set[str] = set()
    for name, pattern in found.items():
        if only and only not in name:
            continue
        try:
            units = _Walker(pattern, rng).units()
        except (re.error, TypeError, ValueError, OverflowError, RecursionError) as exc:
            out(f"skip {name}: {exc}")
            continue
        units_all.update(units)

        anchored = name in _ANCHORED

        def on_pattern(
            text: str, repeat: int, pattern: re.Pattern[Any] = pattern, anchored: bool = anchored
        ) -> float:
            return _pattern_time(pattern, text, repeat, anchored)

        hits = 0
        for unit in units:
            if hits >= 2:
                break  # two shapes are enough to look at the pattern
            if (grew := _grows(on_pattern, unit, small, limit, floor)) is not None:
                hits += 1
                flagged.append(("pattern", name, unit, *grew))
                out(f"PATTERN {name} unit={unit[:60]!r}: {grew[0]:.3f}s -> {grew[1]:.3f}s")
    if whole:
        seen = 0

        def on_redact(text: str, repeat: int) -> float:
            nonlocal seen
            seen += 1  # a fresh text each time: short clean texts are remembered
            return _time(lambda: redact(f"{text}\n{seen}"), repeat)

        for unit in sorted(units_all):
            if (grew := _grows(on_redact, unit, small, limit, floor)) is not None:
                flagged.append(("redact", "", unit, *grew))
                out(f"REDACT unit={unit[:60]!r}: {grew[0]:.3f}s -> {grew[1]:.3f}s")
    out(f"{len(found)} patterns, {len(units_all)} shapes, {len(flagged)} flagged")
    return flagged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=16_000)
    parser.add_argument("--limit", type=float, default=6.0)
    parser.add_argument("--floor", type=float, default=0.02)
    parser.add_argument("--only", default="")
    parser.add_argument("--patterns-only", action="store_true")
    args = parser.parse_args(argv)
    flagged = scan(
        args.small,
        args.limit,
        args.floor,
        whole=not args.patterns_only,
        only=args.only,
        out=lambda line: print(line, flush=True),
    )
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
