"""Shell completion (bash, zsh, fish) for ids, kinds, scopes and agents.

click drives the protocol: the shell runs `ken` with `_KEN_COMPLETE=<shell>_complete`
and the words typed so far, and these callbacks say what fits the word being typed.
They read the store only when it exists (completion never creates one), and a problem
(a locked or damaged store, a folder git cannot read) completes nothing rather than
printing an error into the person's prompt.

bash needs more than click's own script gives it (`Bash`): readline breaks the word
being completed at each character of COMP_WORDBREAKS, `:` among them, so a scope
(`repo:github.com/acme/shop`) reaches `ken` as three words and what it offers would
replace only the part after the last colon. The script sends the line up to the
cursor instead, `ken` splits it as the shell would, and each value comes back as the
text to put in place of readline's word: without what is typed up to that colon, and
with spaces and the shell's other special characters escaped.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import click
from click.shell_completion import (
    BashComplete,
    CompletionItem,
    add_completion_class,
    split_arg_string,
)

from kenning import config
from kenning.errors import KenningError
from kenning.ids import short_id
from kenning.model import KINDS, Status
from kenning.store import Store
from kenning.where import Where

Completer = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]
MAX_IDS = 50


def kinds(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    start = incomplete.lower()
    return [
        CompletionItem(k.value, help=spec.help)
        for k, spec in KINDS.items()
        if k.value.startswith(start)
    ]


def agents(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The agents kenning knows (`ken pack --for` takes any other name too)."""
    from kenning.agents import AGENTS

    start = incomplete.lower()
    return [CompletionItem(name) for name in (*AGENTS, "markdown") if name.startswith(start)]


def statuses(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    start = incomplete.lower()
    return [CompletionItem(s.value) for s in Status if s.value.startswith(start)]


def scopes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The scopes that apply here (most specific first), their bare types (`repo` is the
    repo here), then the scopes that hold memories. Where you are needs no store: a
    broken store or config.toml leaves out only what they would add."""
    found: dict[str, str] = {}
    store = None
    # A damaged store, or a folder where it should be: the scopes here remain.
    with contextlib.suppress(KenningError, OSError):
        store = _store()
    try:
        here = _here(store)
        if here is not None:
            for scope in here.scopes:
                found.setdefault(str(scope), here.reasons.get(str(scope), "applies here"))
            for scope in here.scopes:  # a bare type names the one that applies here
                if scope.type.value != "global":
                    found.setdefault(scope.type.value, f"here: {scope}")
        if store is not None:
            for scope_text in store.scopes_in_use():
                found.setdefault(scope_text, "holds memories")
    except (KenningError, OSError):
        pass
    finally:
        if store is not None:
            store.close()
    found.setdefault("global", "everywhere")
    return [CompletionItem(s, help=why) for s, why in found.items() if s.startswith(incomplete)]


def _here(store: Store | None) -> Where | None:
    """Where we are, with what of the store and config.toml can be read: a config.toml
    that does not parse costs only its `[workspaces]` and `workspace`, a store that
    cannot be read only its projects."""
    from kenning import agentenv, locate

    try:
        settings = config.Config()
    except KenningError:
        settings = config.Config(file={})
    for store_used, settings_used in (
        (store, settings),
        (None, settings),
        (None, config.Config(file={})),
    ):
        try:
            return locate.here(store_used, settings_used, agent=agentenv.detect_agent())
        except (KenningError, OSError):
            continue
    return None


def item_ids(action: str | None = None) -> Completer:
    """Short ids of items (those `action` applies to, when given), newest first, titled."""
    from kenning.items import allowed_from

    statuses = tuple(s.value for s in allowed_from(action)) if action else ()

    def complete(
        ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        try:
            store = _store()
            if store is None:
                return []
            try:
                rows = store.short_ids(incomplete.upper(), statuses, MAX_IDS)
            finally:
                store.close()
        except (KenningError, OSError):
            return []
        return [
            CompletionItem(short_id(item_id), help=_help(title, status, statuses))
            for item_id, title, status in rows
        ]

    return complete


def _help(title: str, status: str, statuses: Sequence[str]) -> str:
    return title[:60] if status == "active" or statuses else f"[{status}] {title[:60]}"


def _store() -> Store | None:
    from kenning.store import open_store

    path = config.db_path()
    return open_store(path, create=False) if path.exists() else None


# --- bash -------------------------------------------------------------------------------

BASH_SOURCE = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response completion type value

    response=$(env COMP_LINE="${COMP_LINE:0:COMP_POINT}" COMP_WORDBREAKS="$COMP_WORDBREAKS" \\
        COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD %(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read -r type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=("$value")
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""
# What bash takes as it is in a word; anything else is escaped with a backslash.
_PLAIN = frozenset("_-.,/+@%:=#")


class Bash(BashComplete):
    """click's bash completion, given the line rather than readline's words (see the
    module's docstring). Without COMP_LINE (by hand, or an older script) it reads
    COMP_WORDS and COMP_CWORD as click does, and offers whole words."""

    source_template: ClassVar[str] = BASH_SOURCE
    _replace: str = ""  # what is typed of the word up to readline's last break in it
    _quoted: bool = False  # the word opens a quote: readline breaks nothing in it

    def get_completion_args(self) -> tuple[list[str], str]:
        line = os.environ.get("COMP_LINE")
        if line is None:
            return super().get_completion_args()
        words = _split(line)
        if len(_split(line + "_")) > len(words):  # the cursor starts a new word
            args, incomplete = words[1:], ""
        else:
            args, incomplete = words[1:-1], words[-1] if len(words) > 1 else ""
        try:
            shlex.split(line)
        except ValueError:  # an open quote
            self._quoted = True
        breaks = set(os.environ.get("COMP_WORDBREAKS", "")) - set(" \t\n\"'")
        value = incomplete
        if value.startswith("-") and "=" in value:  # --scope=VALUE completes VALUE
            value = value.partition("=")[2]
        cut = max((i for i, ch in enumerate(value) if ch in breaks), default=-1)
        self._replace = value[: cut + 1]
        return args, incomplete

    def format_completion(self, item: CompletionItem[Any]) -> str:
        value = str(item.value)
        if item.type != "plain" or self._quoted:
            return f"{item.type},{value}"
        if self._replace and value.startswith(self._replace):
            value = value[len(self._replace) :]
        return f"{item.type},{_escape(value)}"


def _split(line: str) -> list[str]:
    return split_arg_string(line)  # as click splits COMP_WORDS: an open quote is a word


def _escape(value: str) -> str:
    """`value` as typed in bash: a backslash before each character the shell would read
    otherwise (a space, a quote, `$`, ...; a `#` or `~` starting it)."""
    out = []
    for i, ch in enumerate(value):
        plain = ch.isalnum() or (ch in _PLAIN and not (i == 0 and ch == "#"))
        out.append(ch if plain else "\\" + ch)
    return "".join(out)


add_completion_class(Bash)
