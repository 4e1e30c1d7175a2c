"""Where kenning keeps its files, as plain strings (no pathlib: the hook client reads
these on every prompt, before anything heavier is imported, not even collections.abc).
`config` wraps them.

Each function reads this process's environment, or `env` when given: `ken doctor`
works out which store an agent's MCP server will open from the variables it is given.
"""

from __future__ import annotations

import os


def home(env: dict[str, str] | None = None) -> str:
    return (os.environ if env is None else env).get("HOME") or os.path.expanduser("~")


def xdg(var: str, fallback: str, env: dict[str, str] | None = None) -> str:
    value = (os.environ if env is None else env).get(var)
    return value if value and os.path.isabs(value) else os.path.join(home(env), fallback)


def data_dir(env: dict[str, str] | None = None) -> str:
    return os.path.join(xdg("XDG_DATA_HOME", ".local/share", env), "kenning")


def config_dir() -> str:
    return os.path.join(xdg("XDG_CONFIG_HOME", ".config"), "kenning")


def state_dir() -> str:
    return os.path.join(xdg("XDG_STATE_HOME", ".local/state"), "kenning")


def db_path(env: dict[str, str] | None = None) -> str:
    """The store file: $KEN_DB, else $XDG_DATA_HOME/kenning/memory.db."""
    override = (os.environ if env is None else env).get("KEN_DB")
    if override:
        if env is not None and (override == "~" or override.startswith("~/")):
            return os.path.join(home(env), override[2:])
        return os.path.expanduser(override)
    return os.path.join(data_dir(env), "memory.db")
