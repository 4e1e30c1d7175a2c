"""Where kenning keeps its files, as plain strings (no pathlib: the hook client reads
these on every prompt, before anything heavier is imported). `config` wraps them."""

from __future__ import annotations

import os


def home() -> str:
    return os.environ.get("HOME") or os.path.expanduser("~")


def xdg(var: str, fallback: str) -> str:
    value = os.environ.get(var)
    return value if value and os.path.isabs(value) else os.path.join(home(), fallback)


def data_dir() -> str:
    return os.path.join(xdg("XDG_DATA_HOME", ".local/share"), "kenning")


def config_dir() -> str:
    return os.path.join(xdg("XDG_CONFIG_HOME", ".config"), "kenning")


def state_dir() -> str:
    return os.path.join(xdg("XDG_STATE_HOME", ".local/state"), "kenning")


def db_path() -> str:
    """The store file: $KEN_DB, else $XDG_DATA_HOME/kenning/memory.db."""
    override = os.environ.get("KEN_DB")
    return os.path.expanduser(override) if override else os.path.join(data_dir(), "memory.db")
