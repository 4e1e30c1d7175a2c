"""The compiled methods of kenning's dataclasses, kept between hooks that run alone.

`dataclasses` writes the `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`
and `__delattr__` of each class as source and compiles it, each time a module that
defines one is imported. Python keeps a module's own code in `__pycache__`, but not
that code: the modules a hook imports define about 40 dataclasses, and compiling their
240 methods again in every hook that runs without the server took a quarter of its
imports (about 15 of 60 ms, 2026-12-02).

`keep()` makes `dataclasses` compile through this module, which looks each source up in
a marshal file in kenning's state folder first (`classcode-<python>.marshal`). The
source is the key, so a class whose code changed is compiled afresh, never given stale
code. At exit the file is written again when a source was missing, with what this
process compiled added (or alone, once the file holds a few versions of kenning's
code). Code is run from the file, so a file this user does not own alone is left aside,
as is one that does not load: then everything is compiled, as without this module.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType

_known: dict[str, CodeType] = {}  # source -> code, as read from the file
_used: dict[str, CodeType] = {}  # what this process compiled or looked up
_path = ""
MAX_KEPT = 2000  # sources in the file: about eight times what the hook's modules hold


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


def _load(file: str) -> dict[str, CodeType]:
    from types import CodeType

    from kenning import kept

    data = kept.read(file)
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, CodeType)}


def keep() -> None:
    """From now on, dataclasses compile their methods through the kept file."""
    global _path
    import dataclasses

    if getattr(dataclasses, "exec", None) is _compiled or not hasattr(dataclasses, "_create_fn"):
        return  # already on; or a Python whose dataclasses work otherwise
    _path = path()
    _known.update(_load(_path))
    dataclasses.exec = _compiled  # type: ignore[attr-defined]

    import atexit

    atexit.register(_save)


def _save() -> None:
    """Write the file again when this process compiled a source it did not hold."""
    from kenning import kept

    if not _path or all(source in _known for source in _used):
        return
    # What other hooks compiled stays (each event imports its own modules), unless the
    # file has grown past a few versions of kenning's code: then this process's alone.
    kept.write(_path, {**_known, **_used} if len(_known) < MAX_KEPT else dict(_used))
