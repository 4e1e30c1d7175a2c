"""How kenning starts a Python of its own (the hook server, a summary, the demo's hooks).

`python -m kenning...` puts its working folder first on `sys.path`, and a hook's working
folder is the agent's: a repo kenning did not write, where a `kenning/` package would run
as the user. So a child Python runs with `-P` (Python 3.11 and later: no folder of the
command line put before the others on `sys.path`) and inline code that puts the folder
holding this kenning (site-packages, or a checkout's `src`) first, as the hook command
`ken integrate` writes does. Only `os` and `sys`: the hook client imports this.
"""

from __future__ import annotations

import os
import sys

CODE = (
    "import sys; sys.path.insert(0, {root!r}); from {module} import {function}; "
    "sys.exit({function}(sys.argv[1:]))"
)


def root() -> str:
    """The folder that holds this kenning's package."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def argv(module: str, function: str, args: list[str], *, site: bool = True) -> list[str]:
    """The command that runs `module.function(args)` (its exit status the process's) in
    this Python, with this kenning, and nothing of the folder it runs in. Without `site`
    (`-S`), only the standard library and kenning are there, as on the hook path."""
    code = CODE.format(root=root(), module=module, function=function)
    return [sys.executable, *([] if site else ["-S"]), "-P", "-c", code, *args]


def start_detached(args: list[str], cwd: str | None) -> None:
    """Start `ken ARGS` in its own session, with this process's environment, in `cwd`
    (the session's folder), importing nothing from there."""
    import subprocess

    subprocess.Popen(  # noqa: S603 - our own command
        argv("kenning.entry", "main", args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=cwd,
    )
