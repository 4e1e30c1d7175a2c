"""Settings: the one place that reads environment variables, XDG paths and config.toml.

Every setting is declared once in SETTINGS with its type, default and help; `ken config
list` and the docs' settings table are made from that table, and `Config` reads it
through one typed accessor per setting (`config.recall_limit -> int`, named after the
key with its dots as underscores), so library code never asks for a setting by a string.
Precedence: a flag the caller passes > environment variable > `config.toml` > default. A
number has a range (`low`..`high`, both included), checked wherever a value comes from:
a zero half-life would divide by zero, a ttl of a billion days overflow the calendar, a
negative idle time close every live session.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

from kenning import paths
from kenning.agents.agent import LAUNCH_KEYS, LaunchSettings, launch_example, launch_problem
from kenning.errors import InvalidInput, KenningError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


class Command(list[str]):
    """A command line: a TOML array of words (`["claude", "-p"]`), or a string that is
    split as a shell would split it."""


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    type: type
    default: Any
    help: str
    env: str | None = None
    low: float | None = None  # the range of a number, both ends included
    high: float | None = None
    choices: tuple[str, ...] = ()  # the words a text setting may be
    names: str = ""  # the scope type whose name it holds: that name's rule applies
    starts: tuple[str, ...] = ()  # what a text setting's value starts with (a URL's scheme)

    @property
    def type_name(self) -> str:
        return self.type.__name__.lower()

    @property
    def takes(self) -> str:
        """What the setting takes, as a message says it: "takes a whole number"."""
        return _TYPE_NAMES.get(self.type, f"a {self.type_name}")


# In `memory.deliver_to`: every agent, whatever it is called. The default, so that an
# agent kenning does not know (`KEN_AGENT=aider`) is told as the ones it knows are.
EVERY_AGENT = "*"

_TYPE_NAMES = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}

SETTINGS: tuple[Setting, ...] = (
    Setting("memory.enabled", bool, True, "Deliver and capture memory at all.", "KEN_ENABLED"),
    Setting("memory.budget", int, 1500, "Token budget of a context pack.", low=100, high=100_000),
    Setting(
        "memory.collect",
        bool,
        True,
        "Each SessionStart brings in what changed in the agents' own memory (ken collect).",
    ),
    Setting(
        "memory.deliver_to",
        list,
        [EVERY_AGENT],
        "Agents that get context packs and recall, by name; `*`: every agent, one named "
        "only by KEN_AGENT too.",
    ),
    Setting(
        "memory.max_active_per_scope",
        int,
        0,
        "Most active memories a scope keeps: past it the lowest-ranked unpinned ones are "
        "archived (reason `cap`), never deleted; 0: no cap.",
        low=0,
        high=1_000_000,
    ),
    Setting(
        "memory.lessons",
        str,
        "ask",
        "Run lessons: `ask` has Stop ask a session with a signal (a correction, a failed, "
        "denied or thrice repeated tool call, a stated preference) once to record what the "
        "person taught; `off` notes no signals and asks nothing.",
        choices=("ask", "off"),
    ),
    Setting(
        "lessons.corrections",
        list,
        [
            "no",
            "nope",
            "actually",
            "don't",
            "do not",
            "stop",
            "wrong",
            "that's not it",
            "not what I asked",
            "undo",
            "revert",
            "I said",
            "why did you",
        ],
        "A prompt that opens with one of these (or is mostly made of them) corrects the agent.",
    ),
    Setting(
        "lessons.statements",
        list,
        ["always", "never", "we use", "from now on", "we decided"],
        "A sentence opening with one of these states a preference, convention or decision "
        "that Stop asks the agent to propose, while memory does not hold it.",
    ),
    Setting(
        "lessons.one_off",
        list,
        ["just for this answer", "this time", "just this once", "for now"],
        "A sentence holding one of these is a one-off instruction: never asked about.",
    ),
    Setting("recall.limit", int, 5, "Most items one prompt's recall gives.", low=0, high=50),
    Setting(
        "recall.max_tokens", int, 800, "Token cap of one prompt's recall.", low=0, high=100_000
    ),
    Setting(
        "recall.min_score",
        float,
        0.6,
        "Lowest normalized score recall keeps (of the best, and of full relevance); 0: off.",
        low=0,
        high=1,
    ),
    Setting(
        "recall.min_shared",
        int,
        1,
        "Prompt words (or their synonyms) an item must match; 0: off.",
        low=0,
        high=20,
    ),
    Setting(
        "recall.half_life_days",
        float,
        30.0,
        "Days after which an item's recency bonus halves.",
        low=0.1,
        high=36_500,
    ),
    Setting(
        "recall.rule_weight", float, 1.0, "Weight of preferences and corrections.", low=0, high=10
    ),
    Setting(
        "recall.max_item_chars", int, 2000, "Longer items are cut in recall.", low=100, high=100_000
    ),
    Setting(
        "lint.unused_days",
        int,
        90,
        "Days without use after which lint reports an item.",
        low=1,
        high=36_500,
    ),
    Setting(
        "tasks.ttl_days",
        int,
        14,
        "Days after its last update that a task expires.",
        low=1,
        high=36_500,
    ),
    Setting(
        "hooks.idle_close_hours",
        float,
        12.0,
        "Close a session idle this long.",
        low=0.1,
        high=87_600,
    ),
    Setting("memory.summarize.enabled", bool, False, "Summarize finished sessions (opt-in)."),
    Setting(
        "memory.summarize.command",
        Command,
        [],
        'Command that reads a prompt on stdin and prints JSON (e.g. `["claude", "-p"]`).',
    ),
    Setting(
        "memory.summarize.repos",
        list,
        [],
        "Only summarize sessions in these repos; globs such as `github.com/acme/*`.",
    ),
    Setting(
        "memory.summarize.max_input_tokens",
        int,
        30_000,
        "Most transcript sent, from the end.",
        low=100,
        high=2_000_000,
    ),
    Setting(
        "memory.summarize.timeout_secs",
        int,
        180,
        "Give up on the command after this.",
        low=1,
        high=86_400,
    ),
    Setting(
        "team.sync_at_start",
        bool,
        True,
        "Each SessionStart syncs with the team server first (once `ken team join` ran).",
    ),
    Setting(
        "team.start_timeout_secs",
        float,
        1.5,
        "Seconds SessionStart gives the team sync in all; past it the pack goes without.",
        "KEN_TEAM_START_TIMEOUT",
        low=0.1,
        high=10,
    ),
    Setting("editor", str, "", "Editor for `ken edit` (else $VISUAL, else $EDITOR).", "KEN_EDITOR"),
    Setting(
        "workspace", str, "", "Workspace name for every folder.", "KEN_WORKSPACE", names="workspace"
    ),
    Setting(
        "serve.db",
        str,
        "",
        "The team server's PostgreSQL URL (`ken serve`), postgresql://…",
        "KEN_SERVE_DB",
        starts=("postgresql://", "postgres://"),
    ),
)
BY_KEY = {s.key: s for s in SETTINGS}


def data_dir() -> Path:
    return Path(paths.data_dir())


def config_dir() -> Path:
    return Path(paths.config_dir())


def state_dir() -> Path:
    return Path(paths.state_dir())


def made_state_dir() -> Path:
    """The state folder, made if it is not there (the user's alone); KenningError, saying
    what to do, when it cannot be: a file where a folder of its path should be, a folder
    the user cannot write. (`ken doctor` reports it as its `state folder` check.)"""
    folder = state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise KenningError(
            f"cannot make the state folder {folder} ({exc.strerror}): set XDG_STATE_HOME "
            "to a folder of your own"
        ) from None
    return folder


def db_path() -> Path:
    """The store file: $KEN_DB, else $XDG_DATA_HOME/kenning/memory.db."""
    return Path(paths.db_path())


def config_path() -> Path:
    return config_dir() / "config.toml"


def log_path() -> Path:
    return state_dir() / "log"


def team_path() -> Path:
    """This host's team membership (`ken team join`); absent on a host that joined none."""
    return config_dir() / "team.json"


def _number(value: float) -> str:
    return f"{int(value):,}" if math.isfinite(value) and float(value).is_integer() else f"{value:g}"


def check_range(setting: Setting, value: Any, origin: str = "") -> Any:
    """`value` when it lies in the setting's range; else one line saying the range."""
    low = -math.inf if setting.low is None else setting.low
    high = math.inf if setting.high is None else setting.high
    if not low <= value <= high:  # NaN fails too
        where = f" ({origin})" if origin else ""
        raise InvalidInput(
            f"{setting.key} must be from {_number(low)} to {_number(high)}, not {value!r}{where}"
        )
    return value


def parse_value(setting: Setting, raw: str, origin: str = "") -> Any:
    """Turn the text a person typed (or an env var) into the setting's type, in range."""
    text = raw.strip()
    try:
        if setting.type is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if setting.type is int:
            return check_range(setting, int(text), origin)
        if setting.type is float:
            return check_range(setting, float(text), origin)
        if setting.type in (Command, list) and text.startswith("["):
            return _array(text)  # as config.toml writes it: ["claude", "-p"]
        if setting.type is Command:
            return shlex.split(text)
        if setting.type is list:
            return [part.strip() for part in text.split(",") if part.strip()]
    except ValueError:
        raise InvalidInput(f"{setting.key} takes {setting.takes}, not '{raw}'") from None
    if setting.names and text and not origin:  # (from the environment, `where` says it)
        from kenning.model import Scope, ScopeType

        try:  # the one rule of such names, refused here rather than by every command
            Scope.of(ScopeType(setting.names), text)
        except ValueError as exc:
            raise InvalidInput(f"{setting.key}: {exc}") from None
    if setting.starts and text and not text.startswith(setting.starts):
        # the scheme alone: the rest of a URL may hold a password
        raise InvalidInput(
            f"{setting.key} takes a {setting.starts[0]} URL, not {text.split(':', 1)[0]}:…"
        )
    return check_choice(setting, text, origin)


def _array(text: str) -> list[str]:
    """A TOML array of strings, as typed; ValueError when it is not one."""
    import tomllib

    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        raise ValueError(text) from None
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ValueError(text)
    return value


def check_choice(setting: Setting, value: str, origin: str = "") -> str:
    """`value` when the setting takes any text or has it among its choices."""
    if setting.choices and value not in setting.choices:
        where = f" ({origin})" if origin else ""
        raise InvalidInput(
            f"{setting.key} is one of {', '.join(setting.choices)}, not {value!r}{where}"
        )
    return value


def _check_type(setting: Setting, value: Any) -> Any:
    origin = f"in {config_path()}"
    if setting.type is float and isinstance(value, int) and not isinstance(value, bool):
        return check_range(setting, float(value), origin)
    if setting.type is Command and isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError:
            raise InvalidInput(
                f"{setting.key} {origin} is not a command line (unbalanced quotes)"
            ) from None
    if setting.type in (list, Command) and isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, setting.type) and not (setting.type is int and isinstance(value, bool)):
        if isinstance(value, str):
            return check_choice(setting, value, origin)
        return check_range(setting, value, origin) if setting.type in (int, float) else value
    raise InvalidInput(f"{setting.key} {origin} must be {setting.takes}")


BOM = "\ufeff"  # a byte order mark, which some editors write first in a UTF-8 file


def read_file(path: Path | None = None) -> dict[str, Any]:
    """The parsed config.toml, or {} when there is none."""
    path = path or config_path()
    if not path.exists():
        return {}
    import tomllib  # only when there is a file: hooks run on every prompt

    try:
        with path.open("rb") as fh:
            # A BOM first, as Windows editors write one, is no statement (TOML allows none).
            return tomllib.loads(fh.read().decode("utf-8").removeprefix(BOM))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid TOML ({exc}); fix or remove it") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}; fix or remove it") from None


def find(key: str) -> Setting:
    """The setting a person named with its dotted key (`ken config get recall.limit`)."""
    setting = BY_KEY.get(key)
    if setting is None:
        raise InvalidInput(f"unknown setting '{key}'; `ken config list` shows them all")
    return setting


def _dig(data: dict[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


_MISSING = object()


T = TypeVar("T")


class Value(Generic[T]):
    """The typed accessor of one setting: `Config.recall_limit` reads `recall.limit`,
    resolved from the flags, the environment, the file or the table's default, and
    checked against the table's type and range."""

    def __init__(self, key: str) -> None:
        self.setting = BY_KEY[key]  # a key that is not in the table fails at import

    @overload
    def __get__(self, config: None, owner: type[Config]) -> Value[T]: ...
    @overload
    def __get__(self, config: Config, owner: type[Config]) -> T: ...
    def __get__(self, config: Config | None, owner: type[Config]) -> Value[T] | T:
        if config is None:
            return self
        return cast(T, config.value_of(self.setting))


class Config:
    """Settings resolved on use: flags > env > file > default. Library code reads each
    through its accessor below; `value_of` serves `ken config`, where a person names a
    setting by its dotted key."""

    memory_enabled: Value[bool] = Value("memory.enabled")
    memory_budget: Value[int] = Value("memory.budget")
    memory_collect: Value[bool] = Value("memory.collect")
    memory_deliver_to: Value[list[str]] = Value("memory.deliver_to")
    memory_max_active_per_scope: Value[int] = Value("memory.max_active_per_scope")
    memory_lessons: Value[str] = Value("memory.lessons")
    lessons_corrections: Value[list[str]] = Value("lessons.corrections")
    lessons_statements: Value[list[str]] = Value("lessons.statements")
    lessons_one_off: Value[list[str]] = Value("lessons.one_off")
    recall_limit: Value[int] = Value("recall.limit")
    recall_max_tokens: Value[int] = Value("recall.max_tokens")
    recall_min_score: Value[float] = Value("recall.min_score")
    recall_min_shared: Value[int] = Value("recall.min_shared")
    recall_half_life_days: Value[float] = Value("recall.half_life_days")
    recall_rule_weight: Value[float] = Value("recall.rule_weight")
    recall_max_item_chars: Value[int] = Value("recall.max_item_chars")
    lint_unused_days: Value[int] = Value("lint.unused_days")
    tasks_ttl_days: Value[int] = Value("tasks.ttl_days")
    hooks_idle_close_hours: Value[float] = Value("hooks.idle_close_hours")
    memory_summarize_enabled: Value[bool] = Value("memory.summarize.enabled")
    memory_summarize_command: Value[list[str]] = Value("memory.summarize.command")
    memory_summarize_repos: Value[list[str]] = Value("memory.summarize.repos")
    memory_summarize_max_input_tokens: Value[int] = Value("memory.summarize.max_input_tokens")
    memory_summarize_timeout_secs: Value[int] = Value("memory.summarize.timeout_secs")
    editor: Value[str] = Value("editor")
    workspace: Value[str] = Value("workspace")
    serve_db: Value[str] = Value("serve.db")
    team_sync_at_start: Value[bool] = Value("team.sync_at_start")
    team_start_timeout_secs: Value[float] = Value("team.start_timeout_secs")

    def __init__(
        self,
        file: dict[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        **flags: Any,
    ) -> None:
        # The environment settings are read from: the one in force (a served hook's in
        # the hook server), unless given.
        self.env = paths.environ() if env is None else env
        self.file = read_file() if file is None else file
        self.flags = {k.replace("__", "."): v for k, v in flags.items() if v is not None}

    def value_of(self, setting: Setting) -> object:
        """One setting's value, of the setting's type (for `ken config`; library code
        reads the typed accessors)."""
        key = setting.key
        if key in self.flags:
            return self.flags[key]
        if setting.env and self.env.get(setting.env) not in (None, ""):
            return parse_value(setting, self.env[setting.env], f"from ${setting.env}")
        value = _dig(self.file, key)
        if value is not _MISSING:
            return _check_type(setting, value)
        return setting.default

    def check(self) -> None:
        """Read every setting: raises InvalidInput (one line) for the first whose value
        is of the wrong type or out of its range. A hook checks before it does anything,
        so one it cannot finish for a setting changes nothing."""
        for setting in SETTINGS:
            self.value_of(setting)

    def source(self, setting: Setting) -> str:
        """Where the setting's value comes from: flag, env VAR, file or default."""
        key = setting.key
        if key in self.flags:
            return "flag"
        if setting.env and self.env.get(setting.env) not in (None, ""):
            return f"env {setting.env}"
        if _dig(self.file, key) is not _MISSING:
            return "file"
        return "default"

    def delivers_to(self, agent: str | None) -> bool:
        """Whether `memory.deliver_to` lets `agent` be told memory: every agent, unless the
        person listed the ones that are. One no name is known for is never left out."""
        listed = self.memory_deliver_to
        return agent is None or EVERY_AGENT in listed or agent in listed

    def repo_switches(self) -> dict[str, dict[str, bool]]:
        """Each repo's switches (`capture`, `deliver`), keyed as scopes key repos.

        Read from `[memory.repos."<repo>"]`, the form in the docs, and from the older
        `[repos."<repo>"]` where the new table does not say (`ken doctor` asks to move
        it). Repo names are read as `--scope repo:` is (kenning.git.repo_key), so
        `"GitHub.com/Acme/Shop"`, `"git@github.com:acme/shop.git"`, an ssh alias for
        github.com and the path of a checkout of it all name `github.com/acme/shop`. A
        switch written other than as true or false is read as the person meant it
        (`switch_value`: "false", "off", 0 are off), or as off when it says neither; `ken
        doctor` and `ken config list` report it either way.
        """
        from kenning.git import repo_key  # reads git's and ssh's files

        found: dict[str, dict[str, bool]] = {}
        memory = self.file.get("memory")
        tables = [self.file.get("repos"), memory.get("repos") if isinstance(memory, dict) else None]
        for table in tables:  # the old form first, so the new one wins
            if not isinstance(table, dict):
                continue
            for name, entry in table.items():
                if not isinstance(entry, dict):
                    continue
                try:
                    key = repo_key(str(name))
                except ValueError:
                    continue
                switches = found.setdefault(key, {})
                switches.update({k: switch_value(v) for k, v in entry.items() if k in SWITCHES})
        return found

    def switch_source(self, repo: str, switch: str) -> str:
        """Where `repo`'s `switch` is set, as the person's file writes it
        (`[repos."git@github.com:acme/shop.git"] capture = false`), for a message that
        sends them there; the documented form when the file does not set it."""
        from kenning.git import repo_key

        memory = self.file.get("memory")
        for prefix, table in (
            ("memory.repos", memory.get("repos") if isinstance(memory, dict) else None),
            ("repos", self.file.get("repos")),
        ):  # the new form first: it wins
            if not isinstance(table, dict):
                continue
            for name, entry in table.items():
                if not (isinstance(entry, dict) and switch in entry):
                    continue
                try:
                    if repo_key(str(name)) != repo:
                        continue
                except ValueError:
                    continue
                return f'[{prefix}."{name}"] {switch} = {_as_written(entry[switch])}'
        return f'[memory.repos."{repo}"] {switch} = false'

    def repo_capture(self, repo: str | None) -> bool:
        """Whether sessions in `repo` are recorded and may propose memories
        (`[memory.repos."github.com/org/app"] capture = false` turns it off)."""
        return not repo or self.repo_switches().get(repo, {}).get("capture", True)

    def repo_deliver(self, repo: str | None) -> bool:
        """Whether agents in `repo` are told memory (`deliver = false` turns it off)."""
        return not repo or self.repo_switches().get(repo, {}).get("deliver", True)

    def repos_not_delivered(self) -> set[str]:
        """The repos whose `deliver` switch is false: their memories are told nowhere."""
        return {repo for repo, sw in self.repo_switches().items() if sw.get("deliver") is False}


# --- what config.toml holds that kenning does not read ------------------------------

SWITCHES = ("capture", "deliver")
_ON = frozenset({"true", "yes", "on", "1"})
_OFF = frozenset({"false", "no", "off", "0"})


def switch_value(value: Any) -> bool:
    """A privacy switch as the person meant it: true or false, or a spelling of either
    (`"false"`, `"off"`, `"no"`, `0`; `"true"`, `"on"`, `1`). Anything else is off: a
    switch that keeps memory private errs on the private side rather than being ignored
    (which would leave it on)."""
    if isinstance(value, bool):
        return value
    return isinstance(value, str | int) and str(value).strip().lower() in _ON


def _as_written(value: Any) -> str:
    """A switch's value as TOML writes it: false, "false", 0."""
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value) if isinstance(value, str) else str(value)


def _switch_reading(value: Any) -> str:
    """How a switch that is not true or false is read, as doctor says it."""
    if isinstance(value, str | int) and str(value).strip().lower() in _ON | _OFF:
        return "on" if switch_value(value) else "off"
    return "off (neither true nor false, so the private side)"


# `[agents.NAME]`: how `ken handoff` starts an agent.
AGENT_KEYS = LAUNCH_KEYS
_TABLES = {key.rpartition(".")[0] for key in BY_KEY} - {""}
_TABLES |= {t.rpartition(".")[0] for t in _TABLES} - {""}


@dataclass(frozen=True, slots=True)
class FileProblem:
    """Something in config.toml that kenning does not read as written."""

    key: str  # where: `memory.budgett`, `[repos."github.com/a/b"]`
    detail: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "detail": self.detail, "fix": self.fix}


def _quoted(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else f'"{name}"'


def _switch_problems(table: dict[str, Any], prefix: str) -> list[FileProblem]:
    out = []
    for repo, entry in table.items():
        where = f'{prefix}."{repo}"'
        if not isinstance(entry, dict):
            out.append(
                FileProblem(where, "is not a table", f"write [{where}] with capture/deliver")
            )
            continue
        for key, value in entry.items():
            if key not in SWITCHES:
                out.append(
                    FileProblem(f"{where}.{key}", "is not a switch", "use capture or deliver")
                )
            elif not isinstance(value, bool):
                out.append(
                    FileProblem(
                        f"{where}.{key}",
                        f"is {value!r}, read as {_switch_reading(value)}",
                        "set it to true or false, without quotes",
                    )
                )
    return out


def _workspace_problems(table: dict[str, Any]) -> list[FileProblem]:
    out = []
    for name, value in table.items():
        key = f"workspaces.{_quoted(name)}"
        folders = [value] if isinstance(value, str) else value
        if not (isinstance(folders, list) and all(isinstance(f, str) for f in folders)):
            out.append(
                FileProblem(
                    key,
                    "is not a folder or a list of folders",
                    'write NAME = ["~/src/a", "~/src/b"]',
                )
            )
            continue
        # Not read against the home folder either: no one wrote `~/`.
        relative = [f for f in folders if not paths.is_full_path(f)]
        if relative:
            example = relative[0].removeprefix("./").strip("/")
            example = f"src/{name}" if example in ("", ".", "..") else example
            out.append(
                FileProblem(
                    key,
                    f"holds {', '.join(repr(f) for f in relative)}, not a full path: it "
                    "matches no folder",
                    f'write it from / or from your home: "~/{example}"',
                )
            )
    return out


def _launch_of(agent: str) -> LaunchSettings | None:
    """How kenning starts `agent` when it knows it (the registry is read only here)."""
    from kenning.agents import AGENTS

    known = AGENTS.get(agent.lower())
    return known.launch if known is not None else None


def _agent_problems(table: dict[str, Any]) -> list[FileProblem]:
    out = []
    for agent, entry in table.items():
        where = f"agents.{_quoted(agent)}"
        if not isinstance(entry, dict):
            out.append(FileProblem(where, "is not a table", f"write [{where}]"))
            continue
        for key, value in entry.items():
            if key not in AGENT_KEYS:
                out.append(
                    FileProblem(
                        f"{where}.{key}",
                        "is not an agent setting",
                        f"use {', '.join(sorted(AGENT_KEYS))}",
                    )
                )
            elif problem := launch_problem(key, value):
                # `ken handoff --to` that agent refuses it in the same words.
                fix = f"write {launch_example(key, _launch_of(str(agent)))}"
                out.append(FileProblem(f"{where}.{key}", problem, fix))
    return out


def _legacy_repo_problems(table: dict[str, Any]) -> list[FileProblem]:
    moved = [
        FileProblem(
            f'[repos."{repo}"]',
            "is the old place for a repo's switches (still read)",
            f'rename the table to [memory.repos."{repo}"]',
        )
        for repo in table
    ]
    return moved + _switch_problems(table, "repos")


def file_problems(data: dict[str, Any], *, for_agent: bool = False) -> list[FileProblem]:
    """Every table and key in a parsed config.toml that kenning would not read as
    written: unknown names, the old `[repos."<repo>"]` form, switches that are not true
    or false, an agent's launch settings that `ken handoff` would refuse. `ken doctor`
    and `ken config list` report them; `for_agent` (an agent's shell) leaves out the
    repos' privacy switches, whose names say which repos are kept from agents."""
    hidden: Callable[[dict[str, Any]], list[FileProblem]] = lambda t: []  # noqa: E731
    special = {
        "memory.repos": hidden if for_agent else lambda t: _switch_problems(t, "memory.repos"),
        "repos": hidden if for_agent else _legacy_repo_problems,
        "workspaces": _workspace_problems,
        "agents": _agent_problems,
    }
    out: list[FileProblem] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for name, value in node.items():
            key = f"{prefix}{_quoted(name)}"
            if key in BY_KEY:
                continue
            if key in special and isinstance(value, dict):
                out.extend(special[key](value))
            elif key in _TABLES and isinstance(value, dict):
                walk(value, f"{key}.")
            else:
                out.append(
                    FileProblem(
                        key,
                        f"is not a kenning {'table' if isinstance(value, dict) else 'setting'}; "
                        "it is ignored",
                        "remove it or fix its name (`ken config list` shows every setting)",
                    )
                )

    walk(data, "")
    return out


REPO_SWITCH = re.compile(r"(?:memory\.)?repos\.(?P<repo>.+)\.(?P<switch>capture|deliver)")


def repo_switch(key: str) -> tuple[str, str] | None:
    """(repo key, switch) of a per-repo switch as a person names it on the command line
    (`memory.repos."github.com/acme/payroll".deliver`, the quotes optional, any form of
    the repo that `--scope repo:` reads); None for any other key. Raises InvalidInput
    for a name that is no repo."""
    found = REPO_SWITCH.fullmatch(key.strip())
    if found is None:
        return None
    from kenning.git import repo_key

    name = found["repo"].strip()
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "\"'":
        name = name[1:-1]
    try:
        return repo_key(name), found["switch"]
    except ValueError as exc:
        raise InvalidInput(f"{key}: {exc}") from None


def set_switch(repo: str, switch: str, raw: str, path: Path | None = None) -> tuple[bool, str]:
    """Write `repo`'s privacy `switch` (true or false) to config.toml, in the table that
    already names the repo under `[memory.repos]` (in whatever form the person wrote it),
    else in a new `[memory.repos."<repo>"]`; returns the value stored and the table's
    name."""
    word = raw.strip().lower()
    if word not in _ON | _OFF:
        raise InvalidInput(f"{switch} is true or false, not {raw!r}")
    value = word in _ON
    from kenning.git import repo_key

    named = [repo]

    def where(doc: Any) -> list[str]:
        for name in doc.get("memory", {}).get("repos", {}):
            try:
                if repo_key(str(name)) == repo:
                    named[0] = str(name)
                    break
            except ValueError:
                continue
        return ["memory", "repos", named[0], switch]

    _edit(path or config_path(), where, value)
    return value, named[0]


def set_value(key: str, raw: str, path: Path | None = None) -> Any:
    """Validate and write one setting to config.toml; returns the stored value.

    The file is edited, not rewritten: the person's comments, order and layout stay as
    they were (tomlkit). Only this command imports tomlkit; reading stays on tomllib.
    """
    setting = find(key)
    value = parse_value(setting, raw)
    _edit(path or config_path(), lambda doc: key.split("."), value)
    return value


def _edit(path: Path, where: Callable[[Any], list[str]], value: Any) -> None:
    """Set the key `where(document)` names to `value` in config.toml."""
    read_file(path)  # a file that does not parse is reported as every reader reports it
    import tomlkit

    try:
        raw = path.read_bytes().decode("utf-8") if path.exists() else ""
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}; fix or remove it") from None
    # Written back as it was made: a BOM first and CRLF line endings (a Windows editor's)
    # stay, for that editor and for a diff that shows one line changed, not all.
    bom = BOM if raw.startswith(BOM) else ""
    newline = "\r\n" if "\r\n" in raw else "\n"
    doc = tomlkit.parse(raw.removeprefix(BOM).replace("\r\n", "\n"))
    node: Any = doc
    *parents, leaf = where(doc)
    made = False
    for depth, part in enumerate(parents, 1):
        if part not in node:
            # A table that only holds tables is written as `[a.b]`, not `[a]` then `[a.b]`.
            node[part] = tomlkit.table(is_super_table=depth < len(parents))
            made = True
        node = node[part]
        if not isinstance(node, dict):
            raise InvalidInput(f"'{part}' in {path} is not a table; fix or remove it")
    node[leaf] = list(value) if isinstance(value, list) else value
    if made:  # a new table ends with a blank line, as the ones around it do
        node.add(tomlkit.nl())
    out = tomlkit.dumps(doc)
    if made and not raw.endswith("\n\n"):
        out = out.rstrip("\n") + "\n"  # ...but the file does not end with one of its own
    tmp = path.with_suffix(".toml.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        text = bom + out.replace("\n", newline)
        tmp.write_bytes(text.encode("utf-8"))
        os.replace(tmp, path)
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None
