"""The host an ssh alias stands for, as ssh reads its config files.

A git origin such as `git@github-work:acme/payroll.git` names no real host: ssh turns
`github-work` into the `HostName` of the first `Host` block that matches it in
`~/.ssh/config`, then in `/etc/ssh/ssh_config` (ssh takes the first value it finds for
each option). Repo keys follow, so that a privacy switch written for
`github.com/acme/payroll` holds in a checkout cloned through an alias.

Read as ssh reads them: keywords in any case, `Keyword value` or `Keyword=value`,
quoted arguments, `Host` patterns with `*`, `?` and `!` (a negated match rules the block
out), and `Include` followed (globs, `~`, paths relative to `~/.ssh` or `/etc/ssh`) where
it stands. A `Match` block applies when its criteria are only `all`, `host` or
`originalhost`; one that asks anything else (`exec`, `user`, ...) is passed over, as its
answer is not in the files. `HostName` takes the tokens `%h` (the alias) and `%%`; a value
with any other token is passed over, as ssh refuses it.

Files are parsed once per change (path, size, time and inode), so the hook server pays a
`stat` per file for each prompt.
"""

from __future__ import annotations

import os
import re

from kenning import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["host_name"]

MAX_DEPTH = 16  # ssh's limit on nested Includes
SYSTEM_CONFIG = "/etc/ssh/ssh_config"
# One line: a keyword, then its arguments after spaces or one `=`.
_LINE = re.compile(r"^\s*([A-Za-z]+)(?:\s*=\s*|\s+)(.*?)\s*$")
_ARGUMENT = re.compile(r'"([^"]*)"|(\S+)')

# (keyword lowercased, its arguments) per line of a file, by path.
_parsed: dict[str, tuple[tuple[int, int, int], list[tuple[str, list[str]]]]] = {}


def host_name(alias: str, env: Mapping[str, str] | None = None) -> str | None:
    """The `HostName` ssh would connect to for `alias`, or None when no config sets one."""
    home = paths.home(env)
    host = alias.lower()
    for config, base in (
        (os.path.join(home, ".ssh", "config"), os.path.join(home, ".ssh")),
        (SYSTEM_CONFIG, os.path.dirname(SYSTEM_CONFIG)),
    ):
        found = _search(config, base, host, home, depth=0)
        if found is not None:
            return _expand(found, alias)
    return None


def _search(path: str, base: str, host: str, home: str, depth: int) -> str | None:
    """The first `HostName` in `path` (and what it includes) for `host`; "" when the first
    one is unusable (then ssh has taken its value, and it is not a name)."""
    active = True  # lines before the first Host or Match apply to every host
    for keyword, args in _lines(path):
        if keyword == "host":
            active = _host_matches(host, args)
        elif keyword == "match":
            active = _match_matches(host, args)
        elif not active:
            continue
        elif keyword == "hostname" and args:
            return args[0]
        elif keyword == "include" and depth < MAX_DEPTH:
            for pattern in args:
                for included in _included(pattern, base, home):
                    found = _search(included, base, host, home, depth + 1)
                    if found is not None:
                        return found
    return None


def _expand(value: str, alias: str) -> str | None:
    """`HostName` with its tokens expanded (`%h`, `%%`); None when it holds another."""
    out, i = [], 0
    while i < len(value):
        char = value[i]
        if char != "%":
            out.append(char)
            i += 1
            continue
        token = value[i + 1 : i + 2]
        if token == "h":
            out.append(alias)
        elif token == "%":
            out.append("%")
        else:
            return None
        i += 2
    return "".join(out) or None


def _host_matches(host: str, patterns: list[str]) -> bool:
    matched = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if _glob(pattern.removeprefix("!").lower(), host):
            if negated:
                return False
            matched = True
    return matched


def _match_matches(host: str, args: list[str]) -> bool:
    """A `Match` line, when its answer is in the files: `all`, `host` and `originalhost`
    (a comma-separated list of patterns) only."""
    words = [a.lower() for a in args]
    if words == ["all"]:
        return True
    if not words or len(words) % 2:
        return False
    for criterion, value in zip(words[::2], words[1::2], strict=True):
        if criterion not in ("host", "originalhost"):
            return False
        if not _host_matches(host, value.split(",")):
            return False
    return True


def _glob(pattern: str, host: str) -> bool:
    """ssh's pattern match: `*` any run, `?` one character, nothing else special. (No
    regex: a hook would compile one per pattern.)"""
    p = h = 0
    star, mark = -1, 0
    while h < len(host):
        if p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, h, p + 1
        elif p < len(pattern) and pattern[p] in ("?", host[h]):
            p, h = p + 1, h + 1
        elif star >= 0:
            mark += 1
            p, h = star + 1, mark
        else:
            return False
    return pattern[p:].strip("*") == ""


def _included(pattern: str, base: str, home: str) -> list[str]:
    if pattern.startswith("~"):
        pattern = home + pattern[1:]
    elif not os.path.isabs(pattern):
        pattern = os.path.join(base, pattern)
    if not any(c in pattern for c in "*?["):
        return [pattern]
    folder, name = os.path.split(pattern)
    if "[" in pattern or any(c in folder for c in "*?"):
        import glob  # a pattern beyond `Include /etc/ssh/ssh_config.d/*.conf`: rare

        return sorted(glob.glob(pattern))
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    hidden = name.startswith(".")  # as glob: `*` passes over dot files
    return [
        os.path.join(folder, n)
        for n in sorted(names)
        if (hidden or not n.startswith(".")) and _glob(name, n)
    ]


def _lines(path: str) -> list[tuple[str, list[str]]]:
    return paths.read_parsed(path, _parse, _parsed, [])


def _parse(text: str) -> list[tuple[str, list[str]]]:
    lines = []
    for raw in text.splitlines():
        match = _LINE.match(raw)
        if match is None:  # a comment, a blank line or a keyword alone
            continue
        lines.append((match.group(1).lower(), _arguments(match.group(2))))
    return lines


def _arguments(text: str) -> list[str]:
    """Arguments split on spaces, a double-quoted one kept whole; a `#` starting a word
    ends the line."""
    found = []
    for match in _ARGUMENT.finditer(text):
        word = match.group(2)
        if word is not None and word.startswith("#"):
            break
        found.append(match.group(1) if word is None else word)
    return found
