"""The arrows between kenning's layers, checked by reading the source with `ast`.

Layers: values (model, errors, config, ids, paths, agents, and git and ssh, which read
what git's and ssh's files say a repo is) <- domain (items, search,
transfer, ...) <- faces (cli/, hooks/, mcp_server.py, tui/). Only `store/` talks SQL
(an agent module may read its agent's own database: SELECT only). `entry.py` is the one
place that dispatches to a face. An agent lives in `agents/<name>.py`, which imports only
the standard library, `kenning.model`, `kenning.errors` and its own package; nothing
outside `agents/` branches on an agent's name. No modules import each other round a
circle, not even lazily.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

import kenning
from kenning.agents import NAMES as AGENT_NAMES

SRC = Path(kenning.__file__).parent
FACES = ("cli", "hooks", "mcp_server", "tui", "team")
UI_LIBS = ("click", "rich", "mcp", "textual")
# git and ssh read files as config does: config keys its per-repo switches by them.
VALUES = ("model", "errors", "config", "ids", "paths", "agents", "git", "ssh")
# The host's side of team memory lives beside the server in kenning/team/ but is domain
# code: `ken team` and the SessionStart hook call it (the standard library only), and
# `items.forget` takes a forgotten memory out of its outbox. The package itself imports
# nothing.
HOST_SIDE = (("team",), ("team", "client"), ("team", "state"), ("team", "sync"))
AGENT_MAY_IMPORT = ("kenning.model", "kenning.errors", "kenning.agents")
READ_ONLY_SQL = re.compile(r"^\s*(SELECT|PRAGMA\s+\w+\s*$)", re.IGNORECASE)
HEAVY = (
    "click",
    "rich",
    "pydantic",
    "mcp",
    "textual",
    "psycopg",
    "psycopg_pool",
    "starlette",
    "uvicorn",
    "jinja2",
)
SQL = re.compile(
    r"\b(SELECT\s.*\bFROM\b|SELECT\s+\w+\s*\(|INSERT\s+(OR\s+\w+\s+)?INTO\b|UPDATE\s+\w+\s+SET\b"
    r"|DELETE\s+FROM\b|CREATE\s+(TABLE|INDEX|VIRTUAL\s+TABLE|TRIGGER)\b|DROP\s+TABLE\b"
    r"|PRAGMA\s+\w+|BEGIN\s+IMMEDIATE\b)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Module:
    name: str  # kenning.items, kenning.cli.app, ...
    path: Path
    tree: ast.Module

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.name.split(".")[1:])  # without "kenning"

    @property
    def face(self) -> str | None:
        return face_of(self.parts)


def load(path: Path, name: str) -> Module:
    return Module(name, path, ast.parse(path.read_text(encoding="utf-8"), str(path)))


@functools.cache
def modules() -> tuple[Module, ...]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(load(path, ".".join(parts)))
    return tuple(found)


def imports(module: Module) -> set[str]:
    """Every module name imported anywhere in the file (lazy imports too), resolved."""
    names: set[str] = set()
    package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base)
                target = f"{prefix}.{node.module}" if node.module else prefix
            else:
                target = node.module or ""
            names.add(target)
            # `from kenning import items` imports kenning.items.
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


def top(name: str) -> str:
    return name.split(".")[0]


def kenning_part(name: str) -> tuple[str, ...]:
    return tuple(name.split(".")[1:]) if name.startswith("kenning.") else ()


def face_of(parts: tuple[str, ...]) -> str | None:
    """The face a module (its name's parts after `kenning`) belongs to, if any."""
    if not parts or parts[0] not in FACES or parts[:2] in HOST_SIDE:
        return None
    return parts[0]


def docstring_nodes(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_constants(module: Module) -> list[tuple[int, str]]:
    """(line, text) of each string constant that holds SQL (docstrings aside)."""
    skip = docstring_nodes(module.tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and SQL.search(node.value)
    ]


def sql_strings(module: Module) -> list[str]:
    return [f"{module.path.name}:{line}: {text[:60]!r}" for line, text in sql_constants(module)]


# --- the rules, as functions of one module ------------------------------------------


def sql_outside_store(module: Module) -> list[str]:
    if module.parts[:1] == ("store",):
        return []
    if module.parts[:1] == ("agents",):
        # An agent's own database, read only.
        return [
            f"{module.path.name}:{line}: {text[:60]!r} (agents read, never write)"
            for line, text in sql_constants(module)
            if not READ_ONLY_SQL.match(text)
        ]
    wrong = [f"imports {n}" for n in imports(module) if top(n) == "sqlite3"]
    return wrong + sql_strings(module)


def domain_imports_a_face(module: Module) -> list[str]:
    if module.face or module.parts in (("entry",), ()):
        return []
    return [
        f"imports {name}"
        for name in imports(module)
        if top(name) in UI_LIBS or face_of(kenning_part(name))
    ]


def lazy_imports(module: Module) -> set[str]:
    """The module names imported inside a function (run only when it is called)."""
    names: set[str] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = ast.Module(body=node.body, type_ignores=[])
            names |= imports(Module(module.name, module.path, inner))
    return names


# One face may start another, by a lazy import inside the command that starts it: the CLI's
# `ken panel` opens the panel (textual is loaded only then, and only there).
STARTS = {("cli", "tui"), ("cli", "team")}


def face_imports_another_face(module: Module) -> list[str]:
    if not module.face:
        return []
    lazy = lazy_imports(module)
    module_level = imports(module) - lazy
    wrong = []
    for name in imports(module):
        other = face_of(kenning_part(name))
        if other and other != module.face:
            if name in lazy and name not in module_level and (module.face, other) in STARTS:
                continue
            wrong.append(f"imports {name}")
    return wrong


def values_import_more_than_values(module: Module) -> list[str]:
    if module.parts not in tuple((v,) for v in VALUES):
        return []
    wrong = []
    for name in imports(module):
        part = kenning_part(name)
        if part and part[0] not in VALUES:
            wrong.append(f"imports {name}")
    return wrong


def agent_module_imports_more(module: Module) -> list[str]:
    """An agent module runs on the hook path: the standard library, model, errors and
    its own package only."""
    if module.parts[:1] != ("agents",):
        return []
    return [
        f"imports {name}"
        for name in imports(module)
        if top(name) not in sys.stdlib_module_names
        and not any(name == ok or name.startswith(ok + ".") for ok in AGENT_MAY_IMPORT)
        and name != "kenning"
    ]


# What every hook process imports before it knows what it will do: the client, the runner,
# the handlers and the modules they import at module level. Each costs every prompt of every
# agent its import, so these wait until a function needs them (issue 12.7: OpenSSL's
# hashlib ~2 ms, the redactor and its tables ~5 ms, the summarizer and the item layer
# behind it ~4 ms).
HOOK_START = (
    ("entry",),
    ("hooks", "client"),
    ("hooks", "wire"),
    ("hooks", "run"),
    ("hooks", "handlers"),
    ("hookstate",),
    ("hooklog",),
    ("config",),
    ("paths",),
    ("ids",),
    ("model",),
    ("where",),
    ("git",),
    ("ssh",),
    ("sessions",),
    ("deliver",),
    ("pack",),
    ("store",),
    ("store", "base"),
    ("agents",),
)
HOOK_PATH_DEFERS = (
    "hashlib",
    "socket",
    "_socket",
    "threading",
    "subprocess",
    "kenning.redact",
    "kenning.lessons",
    "kenning.summarize",
    "kenning.items",
    "kenning.handoff",
)


def module_level_imports(module: Module) -> set[str]:
    """The module names imported when the module is (not inside a function or a class,
    nor under `if TYPE_CHECKING:`)."""
    body: list[ast.stmt] = []
    todo = list(module.tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody
            todo += [stmt for handler in node.handlers for stmt in handler.body]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            body.append(node)
    return imports(Module(module.name, module.path, ast.Module(body=body, type_ignores=[])))


def hook_path_imports_what_it_defers(module: Module) -> list[str]:
    """A module every hook imports, or an agent module, importing up front what only
    some hooks need."""
    if module.parts not in HOOK_START and module.parts[:1] != ("agents",):
        return []
    return [
        f"imports {name} at module level"
        for name in sorted(module_level_imports(module))
        if any(name == d or name.startswith(d + ".") for d in HOOK_PATH_DEFERS)
    ]


def _agent_names(node: ast.AST | None) -> list[str]:
    """The agent names a literal holds: a string, or the items of a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in AGENT_NAMES else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [n for item in node.elts for n in _agent_names(item)]
    return []


def branches_on_an_agent_name(module: Module) -> list[str]:
    """Outside `agents/`, code that compares with an agent's name (`agent == "gemini"`,
    `agent in ("claude", ...)`), matches on one, or lists or keys agents by hand: what
    an agent is belongs in its module, read through the registry."""
    if module.parts[:1] == ("agents",):
        return []
    wrong = []
    for node in ast.walk(module.tree):
        found: list[str] = []
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += _agent_names(side)
        elif isinstance(node, ast.MatchValue):
            found += _agent_names(node.value)
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            names = _agent_names(node)
            found += names if len(names) > 1 else []
        elif isinstance(node, ast.Dict):
            found += [n for key in node.keys for n in _agent_names(key)]
        if found:
            wrong.append(f"line {node.lineno}: {', '.join(dict.fromkeys(found))}")
    return wrong


def choices_typed_by_hand(module: Module) -> list[str]:
    """A `click.Choice` of words typed out (`Choice(["covered", "wrong"])`): the choices
    come from the enum or registry that owns them (`Kind`, `Status`, `DismissReason`,
    `agents.AGENTS`, ...), so a new value is offered everywhere at once."""
    wrong = []
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        literal = isinstance(first, ast.List | ast.Tuple | ast.Set)
        elts = first.elts if isinstance(first, ast.List | ast.Tuple | ast.Set) else []
        typed = any(isinstance(e, ast.Constant) for e in elts)
        spread = any(isinstance(e, ast.Starred) for e in elts)
        if name == "Choice" and literal and typed and not spread:
            wrong.append(f"line {node.lineno}: Choice({ast.unparse(first)[:60]})")
    return wrong


def cli_command_registers_itself(module: Module) -> list[str]:
    """A command module that registers its commands on the root group (`@cli.command`,
    `cli.add_command`) when imported: `cli/app.py` registers every one, in one list."""
    if module.parts[:1] != ("cli",) or module.parts == ("cli", "app"):
        return []
    return [
        f"line {node.lineno}: cli.{node.attr}"
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "cli"
        and node.attr in ("command", "group", "add_command")
    ]


def kenning_imports(module: Module, names: set[str]) -> set[str]:
    """The kenning modules `module` imports (lazy imports too; `if TYPE_CHECKING:` blocks
    aside, they never run), each resolved to a module in `names`: `from kenning import
    items` is kenning.items, `from kenning.cli.state import State` kenning.cli.state."""

    def resolve(name: str) -> str:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name

    typing_only = {
        id(inner)
        for node in ast.walk(module.tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    package = module.name if module.path.name == "__init__.py" else module.name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(module.tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(resolve(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                prefix = ".".join(base[: len(base) - (node.level - 1)])
                target = f"{prefix}.{node.module}" if node.module else prefix
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in names else resolve(target))
    return {n for n in found if top(n) == "kenning" and n != module.name}


def import_circles(found: Sequence[Module]) -> list[list[str]]:
    """Each set of modules that import each other round a circle (Tarjan's strongly
    connected components), lazy imports included: a lazy import only hides a circle
    until the function runs, and `import` order then decides what is half made."""
    names = {m.name for m in found}
    graph = {m.name: sorted(kenning_imports(m, names)) for m in found}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in graph[name]:
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            part = []
            while True:
                other = stack.pop()
                part.append(other)
                if other == name:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for name in graph:
        if name not in index:
            visit(name)
    return sorted(circles)


# Circles known and accepted, each with its reason; the test below fails when one is gone,
# so the list never keeps a stale entry. (The store's split by aggregate ended the last one,
# between store/plans.py and store/sqlite.py.)
KNOWN_CIRCLES: list[list[str]] = []


RULES = (
    sql_outside_store,
    domain_imports_a_face,
    face_imports_another_face,
    values_import_more_than_values,
    agent_module_imports_more,
    branches_on_an_agent_name,
    choices_typed_by_hand,
    cli_command_registers_itself,
)


def broken(rule) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{m.name}: {why}" for m in modules() for why in rule(m)]


# --- the tests ------------------------------------------------------------------------


def test_the_source_tree_is_found_and_parsed():
    names = {m.name for m in modules()}
    assert {"kenning.items", "kenning.store.sqlite", "kenning.cli.app", "kenning.model"} <= names


def test_only_the_store_package_imports_sqlite3_or_holds_sql():
    assert broken(sql_outside_store) == []


def test_domain_modules_import_no_face_and_no_ui_library():
    assert broken(domain_imports_a_face) == []


def test_faces_do_not_import_each_other_and_only_entry_dispatches():
    assert broken(face_imports_another_face) == []


def test_model_errors_and_config_import_only_values():
    assert broken(values_import_more_than_values) == []


def test_agent_modules_import_only_the_standard_library_model_and_errors():
    assert {m.name for m in modules()} >= {f"kenning.agents.{name}" for name in AGENT_NAMES}
    assert broken(agent_module_imports_more) == []


def test_the_hook_path_imports_what_only_some_hooks_need_where_they_need_it():
    assert {m.parts for m in modules()} >= set(HOOK_START)
    assert broken(hook_path_imports_what_it_defers) == []


def test_nothing_outside_agents_branches_on_an_agent_name():
    assert broken(branches_on_an_agent_name) == []


def test_click_choices_come_from_the_enums_and_the_registry():
    assert broken(choices_typed_by_hand) == []


def test_cli_modules_are_registered_in_app_and_stay_small():
    assert broken(cli_command_registers_itself) == []
    from kenning.cli import app

    assert set(app.cli.commands.values()) == set(app.COMMANDS)
    sizes = {
        m.name: len(m.path.read_text(encoding="utf-8").splitlines())
        for m in modules()
        if m.parts[:1] == ("cli",)
    }
    assert {name: n for name, n in sizes.items() if n > 500} == {}


def test_no_modules_import_each_other_round_a_circle():
    assert [c for c in import_circles(modules()) if c not in KNOWN_CIRCLES] == []
    stale = [c for c in KNOWN_CIRCLES if c not in import_circles(modules())]
    assert stale == [], f"{stale} is no longer a circle: drop it from KNOWN_CIRCLES"


def _write_modules(tmp_path: Path, sources: dict[str, str]) -> list[Module]:
    found = []
    for name, source in sources.items():
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        found.append(load(path, name))
    return found


def test_the_circle_check_sees_a_circle_of_lazy_imports(tmp_path):
    found = _write_modules(
        tmp_path,
        {
            "kenning.cli.app": "def demo():\n    from kenning.cli.demo import run_demo\n",
            "kenning.cli.demo": "def run_demo():\n    from kenning.cli.app import cli\n",
            "kenning.cli.state": "import click\n",
        },
    )
    assert import_circles(found) == [["kenning.cli.app", "kenning.cli.demo"]]


def test_the_circle_check_allows_a_tree_and_typing_only_imports(tmp_path):
    found = _write_modules(
        tmp_path,
        {
            "kenning.cli.app": "from kenning.cli import demo, state\n",
            "kenning.cli.demo": "from kenning.cli.state import example\n",
            "kenning.cli.state": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from kenning.cli.app import cli\n"
            ),
        },
    )
    assert import_circles(found) == []


@pytest.mark.parametrize(
    ("name", "source", "rule"),
    [
        ("kenning.items", "import sqlite3\n", sql_outside_store),
        ("kenning.lint", "def f(c):\n    c.execute('SELECT id FROM items')\n", sql_outside_store),
        ("kenning.lint", "Q = f'DELETE FROM items WHERE {x}'\n", sql_outside_store),
        ("kenning.items", "from kenning.cli import output\n", domain_imports_a_face),
        ("kenning.lint", "def f():\n    import click\n", domain_imports_a_face),
        ("kenning.store.sqlite", "from rich.table import Table\n", domain_imports_a_face),
        ("kenning.cli.app", "from kenning.hooks import run\n", face_imports_another_face),
        ("kenning.hooks.run", "from kenning import cli\n", face_imports_another_face),
        ("kenning.hooks.run", "from ..mcp_server import serve\n", face_imports_another_face),
        ("kenning.cli.panel", "from kenning.tui import panel\n", face_imports_another_face),
        (
            "kenning.tui.panel",
            "def f():\n    from kenning.cli import app\n",
            face_imports_another_face,
        ),
        ("kenning.hooks.run", "def f():\n    from kenning import tui\n", face_imports_another_face),
        ("kenning.model", "from kenning.store import open_store\n", values_import_more_than_values),
        ("kenning.config", "from kenning import items\n", values_import_more_than_values),
        ("kenning.agents.claude", "import tomlkit\n", agent_module_imports_more),
        ("kenning.agents.codex", "from kenning import where\n", agent_module_imports_more),
        ("kenning.agents.gemini", "from kenning.config import Config\n", agent_module_imports_more),
        ("kenning.agents.codex", "Q = 'DELETE FROM thread'\n", sql_outside_store),
        ("kenning.agents.gemini", "import hashlib\n", hook_path_imports_what_it_defers),
        ("kenning.hooks.client", "import _socket\n", hook_path_imports_what_it_defers),
        (
            "kenning.hooklog",
            "from kenning.redact import redact\n",
            hook_path_imports_what_it_defers,
        ),
        (
            "kenning.hooks.handlers",
            "from kenning import lessons\n",
            hook_path_imports_what_it_defers,
        ),
        (
            "kenning.ids",
            "try:\n    import threading\nexcept ImportError:\n    pass\n",
            hook_path_imports_what_it_defers,
        ),
        ("kenning.handoff", "if agent == 'gemini':\n    pass\n", branches_on_an_agent_name),
        ("kenning.identity", "ok = 'gemini' != name\n", branches_on_an_agent_name),
        ("kenning.doctor", "if agent in ('claude', 'x'):\n    pass\n", branches_on_an_agent_name),
        ("kenning.cli.agents", "C = ['claude', 'codex', 'gemini']\n", branches_on_an_agent_name),
        ("kenning.sessions", "P = {'codex': ('codex',)}\n", branches_on_an_agent_name),
        (
            "kenning.hooks.run",
            "match agent:\n    case 'codex':\n        pass\n",
            branches_on_an_agent_name,
        ),
        (
            "kenning.cli.status",
            "T = click.Choice(['covered', 'wrong'])\n",
            choices_typed_by_hand,
        ),
        ("kenning.cli.memory", "T = Choice(('note', 'decision'))\n", choices_typed_by_hand),
        (
            "kenning.cli.memory",
            "@cli.command()\ndef add():\n    pass\n",
            cli_command_registers_itself,
        ),
    ],
)
def test_each_rule_catches_a_wrong_arrow(tmp_path, name, source, rule):
    path = tmp_path / (name.rpartition(".")[2] + ".py")
    path.write_text(source)
    assert rule(load(path, name)), f"{rule.__name__} missed {source!r} in {name}"


@pytest.mark.parametrize(
    ("name", "source", "rule"),
    [
        ("kenning.store.sqlite", "import sqlite3\nQ = 'SELECT id FROM items'\n", sql_outside_store),
        ("kenning.items", '"""Docs may say SELECT x FROM y."""\n', sql_outside_store),
        ("kenning.items", "MSG = 'select the items you want'\n", sql_outside_store),
        (
            "kenning.hooks.client",
            "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    import _socket\n",
            hook_path_imports_what_it_defers,
        ),
        (
            "kenning.hooklog",
            "def log():\n    from kenning.redact import redact\n",
            hook_path_imports_what_it_defers,
        ),
        ("kenning.items", "import hashlib\n", hook_path_imports_what_it_defers),
        ("kenning.cli.app", "import click\nfrom kenning import items\n", domain_imports_a_face),
        ("kenning.entry", "from kenning.hooks.run import main\n", face_imports_another_face),
        (
            "kenning.cli.panel",
            "def panel():\n    from kenning.tui import panel\n",
            face_imports_another_face,
        ),
        ("kenning.entry", "from kenning.cli import cli\n", domain_imports_a_face),
        (
            "kenning.config",
            "from kenning.errors import InvalidInput\n",
            values_import_more_than_values,
        ),
        ("kenning.config", "from kenning.agents import NAMES\n", values_import_more_than_values),
        (
            "kenning.agents.codex",
            "import json, re\nfrom kenning.agents.agent import Agent\nfrom kenning import model\n",
            agent_module_imports_more,
        ),
        (
            "kenning.agents.opencode",
            "import sqlite3\nQ = 'SELECT id FROM session'\n",
            sql_outside_store,
        ),
        ("kenning.agents.codex", "if agent == 'codex':\n    pass\n", branches_on_an_agent_name),
        ("kenning.cli.demo", "run(agent='claude', to='codex')\n", branches_on_an_agent_name),
        ("kenning.handoff", "if agent == 'aider':\n    pass\n", branches_on_an_agent_name),
        (
            "kenning.cli.status",
            "T = click.Choice([r.value for r in DismissReason])\n",
            choices_typed_by_hand,
        ),
        (
            "kenning.cli.pack",
            "T = click.Choice([*agents.AGENTS, 'markdown'])\n",
            choices_typed_by_hand,
        ),
    ],
)
def test_the_rules_allow_the_right_arrows(tmp_path, name, source, rule):
    path = tmp_path / (name.rpartition(".")[2] + ".py")
    path.write_text(source)
    assert rule(load(path, name)) == []


def _imported_modules(statement: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, f"{statement} failed:\n{result.stderr[-2000:]}"
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert names, result.stderr
    return names


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


# What `ken hook` and the library load; the lead's new modules join once they exist.
HOOK_PATH = [
    m
    for m in (
        "kenning.items",
        "kenning.store",
        "kenning.transfer",
        "kenning.lint",
        "kenning.where",
        "kenning.entry",
        "kenning.hooks.run",
        "kenning.pack",
        "kenning.recall",
        "kenning.sessions",
        "kenning.agents",
        "kenning.team.client",
        "kenning.team.sync",
    )
    if _exists(m)
]


@pytest.mark.parametrize("module", HOOK_PATH)
def test_the_hook_path_imports_no_ui_or_heavy_library(module):
    loaded = _imported_modules(f"import {module}")
    assert module in loaded
    heavy = sorted(n for n in loaded if top(n) in HEAVY)
    assert heavy == [], f"import {module} pulls in {heavy}"


def test_the_cli_loads_textual_only_when_the_panel_opens():
    loaded = _imported_modules("import kenning.cli")
    assert "kenning.cli.panel" in loaded
    assert sorted(n for n in loaded if top(n) == "textual" or n.startswith("kenning.tui")) == []


def test_the_importtime_check_would_see_a_heavy_import():
    loaded = _imported_modules("import kenning.cli")
    assert "click" in loaded


def test_the_short_id_has_one_home():
    """The six characters people see are cut in `ids.short_id` alone."""
    cut = re.compile(r"\[-(?:6|SHORT_LEN):\]\.lower\(\)")
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in SRC.rglob("*.py")
        if path.name != "ids.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if cut.search(line)
    ]
    assert found == []


def test_nothing_outside_the_store_names_the_sqlite_backend():
    """Domain code and faces know the `Store` protocol only: a second backend (the team
    server's PostgreSQL) drops in behind it."""
    named = re.compile(r"\bSQLiteStore\b|kenning\.store\.sqlite|from kenning\.store import sqlite")
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in SRC.rglob("*.py")
        if "store" not in path.relative_to(SRC).parts[:1]
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if named.search(line)
    ]
    assert found == []


def test_every_kind_has_its_place_in_the_kinds_table():
    """A kind added to `Kind` without its row would fall out of packs, recall and review."""
    from kenning.model import KINDS, Kind
    from kenning.pack import SECTION_KINDS
    from kenning.rank import KIND_GROUP

    assert set(KINDS) == set(Kind)
    in_sections = {k for kinds, _, _ in SECTION_KINDS.values() for k in kinds}
    assert in_sections == {k.value for k in Kind}
    assert set(KIND_GROUP) == set(Kind)
    assert all(spec.help for spec in KINDS.values())
