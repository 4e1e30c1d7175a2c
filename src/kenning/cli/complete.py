"""Shell completion (bash, zsh, fish) for ids, kinds, scopes and agents.

click drives the protocol: the shell runs `ken` with `_KEN_COMPLETE=<shell>_complete`
and the words typed so far, and these callbacks say what fits the word being typed.
They read the store only when it exists (completion never creates one), and a problem
(a locked or damaged store, a folder git cannot read) completes nothing rather than
printing an error into the person's prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click
from click.shell_completion import CompletionItem

from kenning import config
from kenning.errors import KenningError
from kenning.ids import short_id
from kenning.model import KINDS, Status
from kenning.store import Store

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
    repo here), then the scopes that hold memories."""
    found: dict[str, str] = {}
    try:
        from kenning import agentenv, locate

        store = _store()
        try:
            here = locate.here(store, config.Config(), agent=agentenv.detect_agent())
            for scope in here.scopes:
                found.setdefault(str(scope), here.reasons.get(str(scope), "applies here"))
            for scope in here.scopes:  # a bare type names the one that applies here
                if scope.type.value != "global":
                    found.setdefault(scope.type.value, f"here: {scope}")
            if store is not None:
                for scope_text in store.scopes_in_use():
                    found.setdefault(scope_text, "holds memories")
        finally:
            if store is not None:
                store.close()
    except (KenningError, OSError):
        pass
    found.setdefault("global", "everywhere")
    return [CompletionItem(s, help=why) for s, why in found.items() if s.startswith(incomplete)]


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
