"""The compiled methods of kenning's dataclasses, and its compiled regular expressions,
kept between hooks that run alone.

`dataclasses` writes the `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`
and `__delattr__` of each class as source and compiles it, each time a module that
defines one is imported. Python keeps a module's own code in `__pycache__`, but not
that code: the modules a hook imports define about 40 dataclasses, and compiling their
240 methods again in every hook that runs without the server took a quarter of its
imports (about 15 of 60 ms, 2026-12-02). Nor does it keep a compiled pattern: a hook
compiles about 40 (its modules' and the redactor's) each time, about 10 ms.

`keep()` makes `dataclasses` compile through this module, which looks each source up in
a marshal file in kenning's state folder first (`classcode-<python>.marshal`), and does
the same for `re`: a pattern's program (what `re` hands the regular expression engine)
is looked up by the pattern and its flags. The source or the pattern is the key, so
code that changed is compiled afresh, never given stale code. At exit the file is
written again when something was missing, with what this process compiled added (or
alone, once the file holds a few versions of kenning's code). Code is run from the file,
so it is read only when it is this user's own (`kenning.kept`), else everything is
compiled, as without this module. Patterns are kept only on the Pythons whose `re`
works as this module knows (3.11 to 3.13); elsewhere they are compiled as usual.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType

_known: dict[str, CodeType] = {}  # source -> code, as read from the file
_used: dict[str, CodeType] = {}  # what this process compiled or looked up
# (pattern, flags) -> what `_sre.compile` takes after the pattern: the flags, the program,
# the number of groups and the group names both ways
Program = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
_known_programs: dict[tuple[str | bytes, int], Program] = {}
_used_programs: dict[tuple[str | bytes, int], Program] = {}
_path = ""
MAX_KEPT = 2000  # sources in the file: about eight times what the hook's modules hold
PATTERN_PYTHONS = ((3, 11), (3, 12), (3, 13))


def path() -> str:
    from kenning import paths

    return os.path.join(paths.state_dir(), f"classcode-{sys.implementation.cache_tag}.marshal")


def _compiled(source: str, globals_: dict[str, object], names: dict[str, object]) -> None:
    """What `dataclasses` calls instead of `exec(source, globals_, names)`."""
    code = _known.get(source)
    if code is None:
        code = compile(source, "<string>", "exec")
    _used[source] = code
    exec(code, globals_, names)  # noqa: S102 - the code dataclasses wrote, as it runs it


def _load(file: str) -> None:
    """Read the file into `_known` and `_known_programs`; what does not fit is left out."""
    from types import CodeType

    from kenning import kept

    data = kept.read(file)
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        if isinstance(key, str) and isinstance(value, CodeType):
            _known[key] = value
        elif isinstance(key, tuple) and _program_like(key, value):
            _known_programs[key] = value


def _program_like(key: tuple[object, ...], value: object) -> bool:
    return (
        len(key) == 2
        and isinstance(key[0], str | bytes)
        and isinstance(key[1], int)
        and isinstance(value, tuple)
        and len(value) == 5
        and isinstance(value[1], list)
    )


def _pattern_compiler() -> object | None:
    """What `re` calls to compile a pattern, made to look its program up first; None on
    a Python whose `re` this module does not know."""
    import re

    inner = getattr(re, "_compiler", None)
    if sys.version_info[:2] not in PATTERN_PYTHONS or inner is None:
        return None
    import _sre  # type: ignore[import-not-found]

    parse, code_of, compile_ = inner._parser.parse, inner._code, inner.compile

    def program_of(p: str | bytes, flags: int) -> Program:
        parsed = parse(p, flags)
        names = parsed.state.groupdict
        by_number: list[str | None] = [None] * parsed.state.groups
        for name, number in names.items():
            by_number[number] = name
        return (
            int(flags | parsed.state.flags),
            [int(op) for op in code_of(parsed, flags)],  # its opcodes are named ints
            parsed.state.groups - 1,
            dict(names),
            tuple(by_number),
        )

    def compiled(p: object, flags: int = 0) -> object:
        if not isinstance(p, str | bytes) or flags & inner.SRE_FLAG_DEBUG:
            return compile_(p, flags)
        key = (p, int(flags))  # a plain int, as marshal keeps it
        program = _known_programs.get(key)
        if program is not None:
            try:
                pattern = _sre.compile(p, *program)
            except Exception:  # noqa: BLE001 - a program the engine refuses: compile it
                pass
            else:
                _used_programs[key] = program
                return pattern
        program = program_of(p, flags)
        _used_programs[key] = program
        return _sre.compile(p, *program)

    return compiled


def keep() -> None:
    """From now on, dataclasses compile their methods through the kept file."""
    global _path
    import dataclasses

    if getattr(dataclasses, "exec", None) is _compiled or not hasattr(dataclasses, "_create_fn"):
        return  # already on; or a Python whose dataclasses work otherwise
    _path = path()
    _load(_path)
    dataclasses.exec = _compiled  # type: ignore[attr-defined]
    compiler = _pattern_compiler()
    if compiler is not None:
        import re

        re._compiler.compile = compiler  # type: ignore[attr-defined]

    import atexit

    atexit.register(_save)


def _save() -> None:
    """Write the file again when this process compiled a source it did not hold."""
    from kenning import kept

    if not _path or (
        all(source in _known for source in _used)
        and all(key in _known_programs for key in _used_programs)
    ):
        return
    # What other hooks compiled stays (each event imports its own modules), unless the
    # file has grown past a few versions of kenning's code: then this process's alone.
    data: dict[object, object] = {}
    if len(_known) + len(_known_programs) < MAX_KEPT:
        data.update(_known)
        data.update(_known_programs)
    data.update(_used)
    data.update(_used_programs)
    kept.write(_path, data)
