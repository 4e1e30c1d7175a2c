"""Regular expressions compiled when first used, not when imported.

Redaction holds over a hundred expressions, and compiling them all is most of what
importing it costs: a hook that runs in its own process paid for every one on every
prompt, though an ordinary prompt reaches only a few (the token formats, the largest,
run only on long runs of token characters). `lazy` returns an object that behaves as the
compiled pattern: the first use compiles it and binds the pattern's methods onto the
object, so later uses are plain attribute reads, as cheap as on the pattern itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, AnyStr, cast

_BOUND = (
    "search",
    "match",
    "fullmatch",
    "finditer",
    "findall",
    "sub",
    "subn",
    "split",
    "scanner",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)


class _Lazy:
    def __init__(self, pattern: str | bytes | Callable[[], str | bytes], flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        pattern, flags = self._source
        compiled: Any = re.compile(pattern() if callable(pattern) else pattern, flags)
        for attr in _BOUND:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self._source[0]!r}, {self._source[1]})"


def lazy(pattern: AnyStr | Callable[[], AnyStr], flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, done at the first use; a `pattern` that takes
    building (a trie of many words) may be given as the function that builds it."""
    return cast("re.Pattern[AnyStr]", _Lazy(pattern, flags))
