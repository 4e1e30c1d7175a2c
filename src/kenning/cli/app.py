"""The `ken` commands for people: add, find, review and clean up memories."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from kenning import agentenv, config, editing, items, locate, policy, printable, review, transfer
from kenning import lint as lint_mod
from kenning import where as where_mod
from kenning.cli import complete, output
from kenning.cli.output import emit_json, say
from kenning.errors import KenningError, NotFound
from kenning.ids import short_id
from kenning.model import KINDS, Item, Kind, Provenance, Scope, Status
from kenning.store import ItemQuery, Store, open_store

F = TypeVar("F", bound=Callable[..., Any])


class KenGroup(click.Group):
    """Turns library errors into one line on stderr and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KenningError as exc:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            say(f"ken: {exc}")
            ctx.exit(exc.exit_code)


class State:
    """What commands share: the config, the store (opened on first use), where we are."""

    def __init__(self, debug: bool) -> None:
        self.debug = debug
        self._store: Store | None = None
        self._config: config.Config | None = None
        self._where: where_mod.Where | None = None

    def get(self, key: str) -> Any:
        return self.debug if key == "debug" else None

    @property
    def config(self) -> config.Config:
        if self._config is None:
            self._config = config.Config()
        return self._config

    @property
    def store(self) -> Store:
        if self._store is None:
            from kenning import spool

            self._store = open_store()
            spool.replay(self._store, wait=1.0)  # what hooks could not write, first
        return self._store

    def where(self) -> where_mod.Where:
        if self._where is None:
            store = self.store if config.db_path().exists() else None
            self._where = locate.here(store, self.config, agent=agentenv.detect_agent())
        return self._where

    def actor(self) -> policy.Actor:
        """Who runs this command: a person, or the agent whose shell this is."""
        return policy.Actor.from_env(here=self.where().scopes)

    def scope(self, text: str) -> Scope:
        """A scope as typed on the command line; a bare `repo` etc. is the one here."""
        if ":" in text or text.strip() == "global":
            return items.parse_scope(text)
        return self.where().scope(text)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def pass_state(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(click.get_current_context().obj, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(fn)


def example(text: str) -> str:
    return f"\n\n\b\nExample:\n  {text}"


@click.group(cls=KenGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="kenning", prog_name="ken")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """kenning: one memory that every coding agent on this machine shares.

    People add, review and clean up memories here; agents read them through hooks
    and MCP and propose new ones.

    \b
    Example:
      ken add "Use pnpm, not npm, in this repo" --kind preference
    """
    state = State(debug)
    ctx.obj = state
    ctx.call_on_close(state.close)


def provenance_here(state: State, how: str = "cli") -> Provenance:
    here = state.where()
    return replace(here.provenance(here.agent or "user", how), host=os.uname().nodename)


def guard_change(
    state: State,
    item: Item,
    action: str,
    new_scope: Scope | None = None,
    new_kind: Kind | None = None,
    actor: policy.Actor | None = None,
) -> policy.Actor:
    """Refuse the change when the policy wants a person (from an agent's shell, for
    anything but its own working note); the actor to change it as."""
    return policy.check_change(actor or state.actor(), item, action, new_scope, new_kind)


def read_stdin_text() -> str:
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise KenningError("stdin is not UTF-8 text; nothing was stored") from None
    return data


def scope_filter(state: State, scope: Sequence[str], here: bool) -> list[str]:
    """The scopes a command's --scope (a bare `repo` means this repo) and --here name."""
    scopes = [str(state.scope(s)) for s in scope]
    if here:
        scopes += [str(s) for s in state.where().scopes]
    return scopes


# --- add ---------------------------------------------------------------------------


@cli.command(epilog=example('ken add "Deploys go through make release" --kind decision'))
@click.argument("text", nargs=-1)
@click.option(
    "--kind",
    "-k",
    shell_complete=complete.kinds,
    help="; ".join(f"{kind.value}: {spec.help}" for kind, spec in KINDS.items()) + ".",
)
@click.option(
    "--scope",
    "-s",
    shell_complete=complete.scopes,
    help="Where it applies: repo, workspace, ... (the one here), repo:NAME, global "
    "(default: this repo, else global).",
)
@click.option("--tag", "-t", "tags", multiple=True, help="A tag (repeat or comma-separate).")
@click.option(
    "--link", "-l", "links", multiple=True, help="file:PATH, url:URL, item:ID, commit:SHA."
)
@click.option("--pin", is_flag=True, help="Always put it in context packs.")
@click.option("--propose", is_flag=True, help="Store it as proposed, waiting for approval.")
@click.option("--evidence", "-e", help="What prompted it: the excerpt, in the person's words.")
@click.option(
    "--template",
    type=click.Choice(["postmortem", "decision", "note"]),
    help="Lay the text out as a postmortem, a decision or a compact note.",
)
@json_option
@pass_state
def add(
    state: State,
    text: tuple[str, ...],
    kind: str | None,
    scope: str | None,
    tags: tuple[str, ...],
    links: tuple[str, ...],
    pin: bool,
    propose: bool,
    evidence: str | None,
    template: str | None,
    as_json: bool,
) -> None:
    """Add a memory. The first line is its title, the rest its body.

    With no TEXT, reads the memory from stdin.
    """
    body = " ".join(text) if text else None
    if body is None:
        if sys.stdin.isatty():
            raise click.UsageError("give the memory as TEXT or on stdin")
        body = read_stdin_text()
    here = state.where()
    target = state.scope(scope) if scope else items.default_scope(here.repo)
    item = items.add(
        state.store,
        body,
        scope=target,
        kind=items.parse_kind(kind),
        tags=tags,
        links=links,
        pinned=pin,
        propose=propose,
        evidence=evidence or "",
        template=template,
        provenance=provenance_here(state),
        ttl_days=state.config.get("tasks.ttl_days"),
        actor=state.actor(),
    )
    short = short_id(item.id)
    redacted = items.redactions(item, [body, evidence or "", *tags, *links])
    if as_json:
        emit_json({**item.to_dict(), "redacted": redacted})
    elif item.status is Status.DISMISSED:
        say(
            f"set aside {item.kind.value} {short} in {item.scope}: a person dismissed the same "
            f"statement before ({item.dismiss_reason}); it is proposed again when "
            f"{items.SESSIONS_TO_PROPOSE_AGAIN} sessions have repeated it"
        )
        if redacted:
            say(items.describe_redactions(redacted))
        return
    else:
        click.echo(short)
        note = (
            " (proposed: a person approves it with `ken approve`)"
            if item.status.value == "proposed"
            else ""
        )
        say(f"added {item.kind.value} {short} to {item.scope}{note}")
    if redacted and not as_json:
        say(items.describe_redactions(redacted))
    for other in items.same_text(state.store, item)[:3]:
        say(
            f"note: {short_id(other.id)} ({other.status.value}, {other.scope}) already says "
            f"the same; `ken forget {short}` drops this copy"
        )


# --- reading -------------------------------------------------------------------------


@cli.command(epilog=example("ken search migrate staging --kind decision"))
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--scope",
    "-s",
    multiple=True,
    shell_complete=complete.scopes,
    help="Only these scopes (repeatable).",
)
@click.option("--here", is_flag=True, help="Only the scopes that apply in this folder.")
@click.option(
    "--kind", "-k", multiple=True, shell_complete=complete.kinds, help="Only these kinds."
)
@click.option(
    "--status", multiple=True, default=["active"], show_default=True, help="Only these statuses."
)
@click.option("--tag", "-t", multiple=True, help="Only items with this tag.")
@click.option("--all", "show_all", is_flag=True, help="Any status, expired tasks too.")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 1000))
@json_option
@pass_state
def search(
    state: State,
    query: tuple[str, ...],
    scope: tuple[str, ...],
    here: bool,
    kind: tuple[str, ...],
    status: tuple[str, ...],
    tag: tuple[str, ...],
    show_all: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Search memories by their words, best first.

    Every word must match; words match their stems; the last word matches as a
    prefix of the words as written and of their stems (deploy finds "Deployment").
    Punctuation is just text.
    """
    found = items.search(
        state.store,
        " ".join(query),
        scopes=scope_filter(state, scope, here),
        kinds=[k.value for k in map(items.parse_kind, kind) if k],
        statuses=() if show_all else [items.parse_status(s).value for s in status],
        tags=items.clean_tags(tag),
        include_expired=show_all,
        limit=limit,
    )
    if as_json:
        emit_json([{**f.item.to_dict(), "score": round(f.score, 4)} for f in found])
        return
    if not found:
        say("no memories match")
        return
    output.items_table([f.item for f in found], [f.score for f in found])


@cli.command("list", epilog=example("ken list --here --kind preference"))
@click.option(
    "--scope",
    "-s",
    multiple=True,
    shell_complete=complete.scopes,
    help="Only these scopes (repeatable).",
)
@click.option("--here", is_flag=True, help="Only the scopes that apply in this folder.")
@click.option(
    "--kind", "-k", multiple=True, shell_complete=complete.kinds, help="Only these kinds."
)
@click.option("--status", multiple=True, help="Only these statuses (default: active).")
@click.option("--tag", "-t", multiple=True, help="Only items with this tag.")
@click.option("--all", "show_all", is_flag=True, help="Any status, expired tasks too.")
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(0),
    default=50,
    show_default=True,
    help="At most this many (0: no limit).",
)
@json_option
@pass_state
def list_cmd(
    state: State,
    scope: tuple[str, ...],
    here: bool,
    kind: tuple[str, ...],
    status: tuple[str, ...],
    tag: tuple[str, ...],
    show_all: bool,
    limit: int,
    as_json: bool,
) -> None:
    """List memories, newest first, pinned on top: 50 unless --limit says otherwise.

    On a terminal, a list taller than the screen goes through your pager ($PAGER).
    """
    statuses: Sequence[str] = [items.parse_status(s).value for s in status] or ["active"]
    query = ItemQuery(
        scopes=tuple(scope_filter(state, scope, here)),
        kinds=tuple(k.value for k in map(items.parse_kind, kind) if k),
        statuses=() if show_all and not status else tuple(statuses),
        tags=items.clean_tags(tag),
        include_expired=show_all,
        limit=limit or None,
    )
    found = state.store.list_items(query)
    after = []
    if limit and len(found) == limit:
        total = state.store.count_items(replace(query, limit=None))
        if total > limit:
            after.append(f"(showing {limit} of {total}; `--limit 0` shows them all)")
    if as_json:
        emit_json([i.to_dict() for i in found])
        for note in after:
            say(note)
        return
    if not found:
        filtered = scope or here or kind or status or tag or show_all
        say("no memories match" if filtered else "no memories here yet: `ken add TEXT` adds one")
        return
    before = []
    waiting = state.store.count_items(ItemQuery(statuses=("proposed",), include_expired=True))
    if waiting and query.statuses != ("proposed",):
        before.append(
            f"{waiting} {'memory waits' if waiting == 1 else 'memories wait'} for review: "
            "`ken list --status proposed`, then `ken approve` or `ken reject`"
        )
    output.page(output.render_items(found), before, after)


@cli.command(epilog=example("ken show 3kq9zd"))
@click.argument("ref", shell_complete=complete.item_ids())
@json_option
@pass_state
def show(state: State, ref: str, as_json: bool) -> None:
    """Show one memory: text, provenance, tags, links, uses, expiry and versions."""
    item = items.get(state.store, ref)
    history = state.store.revisions(item.id)
    if as_json:
        emit_json({**item.to_dict(), "history": [r.to_dict() for r in history]})
        return
    output.show_item(item, history)


# --- changing ------------------------------------------------------------------------


@cli.command(epilog=example("KEN_EDITOR=nano ken edit 3kq9zd"))
@click.argument("ref", shell_complete=complete.item_ids())
@click.option("--in-place", is_flag=True, help="Fix the text without making a new version.")
@pass_state
def edit(state: State, ref: str, in_place: bool) -> None:
    """Edit a memory in your editor ($KEN_EDITOR, else $VISUAL, else $EDITOR).

    A small header above '---' holds kind, scope, tags and links. Saving makes a new
    version; --in-place fixes a typo without one. A team memory (read-only here) is not
    changed: the edit goes to the team server as a proposed revision.
    """
    item = items.get(state.store, ref)
    team = policy.team_origin(item) is not None
    if team:
        policy.require_person(
            state.actor(), f"proposing a revision of team memory {short_id(item.id)}"
        )
    else:
        editing.check_editable(item)
    before = editing.editor_text(item)
    after = editing.run_editor(before, editing.command(state.config))
    if after == before:
        say("nothing changed")
        return
    if team:  # the server is where team memory changes: the edit goes there as a proposal
        from kenning.cli.team import propose_revision

        say(propose_revision(state, item, editing.parse(after)))
        return
    updated = save_edit(state, item, editing.parse(after), in_place=in_place)
    say(f"saved {short_id(updated.id)}" + (" in place" if in_place else " as a new version"))


def save_edit(
    state: State,
    item: Item,
    edit: editing.Edit,
    *,
    in_place: bool = False,
    actor: policy.Actor | None = None,
) -> Item:
    """Save what the person wrote in the editor over `item` (a new version), asking a
    person first when the policy wants one."""
    new_scope = state.scope(edit.scope) if edit.scope else None
    new_kind = items.parse_kind(edit.kind) if edit.kind else None
    actor = guard_change(state, item, "edit", new_scope, new_kind, actor=actor)
    return editing.save(state.store, item, edit, scope=new_scope, in_place=in_place, actor=actor)


@cli.command(epilog=example('ken update 3kq9zd --text "Use pnpm 9" --add-tag js'))
@click.argument("ref", shell_complete=complete.item_ids())
@click.option("--text", help="New text: title on the first line, then the body.")
@click.option("--kind", "-k", shell_complete=complete.kinds, help="New kind.")
@click.option("--scope", "-s", shell_complete=complete.scopes, help="New scope.")
@click.option("--add-tag", multiple=True, help="Add a tag.")
@click.option("--remove-tag", multiple=True, help="Remove a tag.")
@click.option("--add-link", multiple=True, help="Add a link.")
@click.option("--remove-link", multiple=True, help="Remove a link.")
@click.option("--evidence", "-e", help="Replace the evidence.")
@click.option("--in-place", is_flag=True, help="No new version (for typo fixes).")
@click.option("--expect", help="Fail unless the item is at this revision.")
@json_option
@pass_state
def update(
    state: State,
    ref: str,
    text: str | None,
    kind: str | None,
    scope: str | None,
    add_tag: tuple[str, ...],
    remove_tag: tuple[str, ...],
    add_link: tuple[str, ...],
    remove_link: tuple[str, ...],
    evidence: str | None,
    in_place: bool,
    expect: str | None,
    as_json: bool,
) -> None:
    """Change a memory through flags (edit, for scripts). Each change is a new version."""
    item = items.get(state.store, ref)
    new_scope = state.scope(scope) if scope else None
    new_kind = items.parse_kind(kind)
    actor = guard_change(state, item, "update", new_scope, new_kind)
    updated = items.change(
        state.store,
        item.id,
        actor=actor,
        text=text,
        kind=new_kind,
        scope=new_scope,
        add_tags=add_tag,
        remove_tags=remove_tag,
        add_links=add_link,
        remove_links=remove_link,
        evidence=evidence,
        in_place=in_place,
        expected_revision=expect,
    )
    if as_json:
        emit_json(updated.to_dict())
    else:
        say(f"updated {short_id(updated.id)} (revision {updated.revision})")


def _all_or_nothing(state: State, refs: Sequence[str], action: str) -> list[Item]:
    """Resolve every id and check every change before making any."""
    chosen = [items.get(state.store, ref) for ref in refs]
    for item in chosen:
        items.check_status_change(item, action)
    return chosen


def _status_command(action: str, past: str, doc: str, *, batch: bool = False) -> None:
    def command(
        state: State,
        refs: tuple[str, ...],
        as_json: bool,
        all_waiting: bool = False,
        scope: tuple[str, ...] = (),
        kind: tuple[str, ...] = (),
        yes: bool = False,
    ) -> None:
        if all_waiting:
            if refs:
                raise click.UsageError("give ids or --all, not both")
            chosen = _waiting_batch(state, action, scope, kind, yes)
            if not chosen:
                return
            actor = policy.require_person(state.actor(), f"{action} {len(chosen)} memories")
        else:
            if not refs:
                raise click.UsageError(
                    "give the ids of the memories" + (" (or --all)" if batch else "")
                )
            if scope or kind:
                raise click.UsageError("--scope and --kind choose what --all decides")
            chosen = _all_or_nothing(state, refs, action)
            actor = policy.require_person(state.actor(), f"{action} {' '.join(refs)}")
        done = [items.set_status(state.store, i.id, action, actor=actor) for i in chosen]
        if as_json:
            emit_json([i.to_dict() for i in done])
            return
        for item in done:
            status = f" as {item.status.value}" if action == "restore" else ""
            say(f"{past} {short_id(item.id)}{status}: {item.title}")

    if batch:
        command = click.option("--yes", "-y", is_flag=True, help="Do not ask first.")(command)
        command = click.option(
            "--kind",
            "-k",
            multiple=True,
            shell_complete=complete.kinds,
            help="With --all: only these kinds.",
        )(command)
        command = click.option(
            "--scope",
            "-s",
            multiple=True,
            shell_complete=complete.scopes,
            help="With --all: only these scopes (repeatable; a bare `repo` is this repo's).",
        )(command)
        command = click.option(
            "--all",
            "all_waiting",
            is_flag=True,
            help="Every waiting memory (that --scope and --kind name), after a count to confirm.",
        )(command)
    example_text = f"ken {action} --all --scope repo" if batch else f"ken {action} 3kq9zd"
    cli.command(action, help=doc, epilog=example(example_text))(
        click.argument(
            "refs", nargs=-1, required=not batch, shell_complete=complete.item_ids(action)
        )(json_option(pass_state(command)))
    )


def _waiting_batch(
    state: State, action: str, scope: Sequence[str], kind: Sequence[str], yes: bool
) -> list[Item]:
    """What `--all` decides: every waiting memory the filters name, counted and confirmed
    first (an empty list when nothing waits or the person says no)."""
    scopes = scope_filter(state, scope, False)
    kinds = [k.value for k in map(items.parse_kind, kind) if k]
    chosen = review.select(state.store, scopes, kinds)
    filters = (f" in {', '.join(scopes)}" if scopes else "") + (
        f" of kind {', '.join(kinds)}" if kinds else ""
    )
    if not chosen:
        say(f"nothing waits for review{filters}")
        return []
    if not yes:
        for item in chosen[:10]:
            say(f"  {short_id(item.id)}  {item.kind.value:<10}  {item.title}")
        if len(chosen) > 10:
            say(f"  ... and {len(chosen) - 10} more")
        what = f"{len(chosen)} waiting {'memory' if len(chosen) == 1 else 'memories'}{filters}"
        if not click.confirm(f"{action.capitalize()} {what}?", err=True):
            say("nothing changed")
            raise SystemExit(1)
    return chosen


_status_command(
    "approve",
    "approved",
    "Approve proposed memories: agents are told them. --all approves every waiting memory "
    "(that --scope and --kind name) after a count to confirm.",
    batch=True,
)
_status_command(
    "reject",
    "rejected",
    "Reject proposed memories (kept, never told). --all rejects every waiting memory "
    "(that --scope and --kind name) after a count to confirm.",
    batch=True,
)
_status_command(
    "restore",
    "restored",
    "Restore archived, rejected or dismissed memories (a proposal is proposed again).",
)


@cli.command(epilog=example('ken archive 3kq9zd --reason "the service is gone"'))
@click.argument("refs", nargs=-1, required=True, shell_complete=complete.item_ids("archive"))
@click.option("--reason", help="Why, in a line (shown by `ken show`).")
@json_option
@pass_state
def archive(state: State, refs: tuple[str, ...], reason: str | None, as_json: bool) -> None:
    """Archive memories: kept, no longer told; `restore` brings them back."""
    items.archive_reason_of(reason)  # a bad reason is refused before anything changes
    chosen = _all_or_nothing(state, refs, "archive")
    actor = policy.require_person(state.actor(), f"archive {' '.join(refs)}")
    done = [
        items.set_status(state.store, i.id, "archive", reason=reason, actor=actor) for i in chosen
    ]
    if as_json:
        emit_json([i.to_dict() for i in done])
        return
    for item in done:
        why = f" ({item.archive_reason})" if item.archive_reason else ""
        say(f"archived {short_id(item.id)}{why}: {item.title}")


@cli.command(epilog=example("ken dismiss 3kq9zd --reason one_off"))
@click.argument("refs", nargs=-1, required=True, shell_complete=complete.item_ids("dismiss"))
@click.option(
    "--reason",
    default="other",
    show_default=True,
    type=click.Choice(["covered", "wrong", "one_off", "other"]),
    help="covered (another memory says it), wrong, one_off (true once) or other.",
)
@json_option
@pass_state
def dismiss(state: State, refs: tuple[str, ...], reason: str, as_json: bool) -> None:
    """Dismiss memories, with a reason (kept, never told; `restore` undoes it)."""
    chosen = _all_or_nothing(state, refs, "dismiss")
    actor = policy.require_person(state.actor(), f"dismiss {' '.join(refs)}")
    done = [
        items.set_status(state.store, i.id, "dismiss", reason=reason, actor=actor) for i in chosen
    ]
    if as_json:
        emit_json([i.to_dict() for i in done])
        return
    for item in done:
        say(f"dismissed {short_id(item.id)} ({reason}): {item.title}")


def _pin_command(name: str, value: bool) -> None:
    @cli.command(
        name,
        help=f"{'Pin' if value else 'Unpin'} memories "
        f"({'always' if value else 'no longer always'} in context packs).",
        epilog=example(f"ken {name} 3kq9zd"),
    )
    @click.argument("refs", nargs=-1, required=True, shell_complete=complete.item_ids())
    @pass_state
    def command(state: State, refs: tuple[str, ...]) -> None:
        chosen = [items.get(state.store, ref) for ref in refs]
        actor = state.actor()
        for item in chosen:
            actor = guard_change(state, item, name, actor=actor)
        for item in chosen:
            items.set_pinned(state.store, item.id, value, actor=actor)
            say(f"{name}ned {short_id(item.id)}: {item.title}")


_pin_command("pin", True)
_pin_command("unpin", False)


@cli.command(epilog=example("ken forget --scope repo:github.com/acme/app --since 2026-01-01"))
@click.argument("refs", nargs=-1, shell_complete=complete.item_ids())
@click.option(
    "--scope", "-s", shell_complete=complete.scopes, help="Forget every memory in this scope."
)
@click.option("--since", help="Forget memories created on or after YYYY-MM-DD.")
@click.option("--session", help="Forget memories written in this session.")
@click.option(
    "--everywhere",
    is_flag=True,
    help="Also forget the memories (summaries, handoffs, any other) that quote them, and "
    "blank the session prompts and recall queries that do.",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask first.")
@pass_state
def forget(
    state: State,
    refs: tuple[str, ...],
    scope: str | None,
    since: str | None,
    session: str | None,
    everywhere: bool,
    yes: bool,
) -> None:
    """Delete memories for good, with every version: the only command that deletes.

    Afterwards their text is gone from the database file, its WAL, the search index and
    the hook log, and so are the proposed copies that would have replaced them. With
    --everywhere, so is every other memory that quotes a line of theirs (12 characters
    or more), and the session prompts and recall queries that quote one are blanked.
    With --session, the session's own record (its prompts, what it was told) goes too.
    """
    from kenning import sessions

    session_id = None
    if session:
        try:
            session_id = sessions.resolve(state.store, session).id
        except NotFound:
            session_id = None  # no record, but memories may still name it
    chosen = items.select_for_forget(
        state.store,
        refs=refs,
        scope=state.scope(scope) if scope else None,
        since=since,
        session=session_id or session,
    )
    if not chosen and not session_id:
        say("nothing matches; nothing forgotten")
        return
    plan = items.plan_forget(state.store, chosen, everywhere=everywhere)
    actor = policy.require_person(
        state.actor(),
        f"forget {len(plan.items)} memories" + (" and a session's prompts" if session_id else ""),
    )
    if not yes:
        for item in plan.items[:10]:
            why = (
                ""
                if item in plan.chosen
                else (
                    "  (a copy waiting to replace it)" if item in plan.copies else "  (quotes it)"
                )
            )
            say(f"  {short_id(item.id)}  {item.title}{why}")
        if len(plan.items) > 10:
            say(f"  ... and {len(plan.items) - 10} more")
        what = f"{len(plan.items)} memories" + (" and the session's record" if session_id else "")
        if not click.confirm(f"Forget {what} for good?", err=True):
            say("nothing forgotten")
            raise SystemExit(1)
    done = items.forget(state.store, plan, session_id=session_id, actor=actor)
    extra = [
        f"{n} {what}"
        for n, what in (
            (len(plan.copies), "copies waiting to replace them"),
            (len(plan.quoting), "memories that quoted them"),
            (done.quotes, "session prompts and recall queries blanked"),
            (done.log_lines, "hook log lines dropped"),
        )
        if n
    ]
    say(
        f"forgot {done.memories} memories"
        + (" and the session's record" if session_id else "")
        + (f" ({'; '.join(extra)})" if extra else "")
    )
    if state.store.wipe_pending():
        readers = ", ".join(state.store.readers()) or "another process"
        say(
            f"ken: the forgotten text is out of the store, but older copies of its pages stay "
            f"in {state.store.path} and its -wal file while {readers} keeps reading the store; "
            "the first ken command after that process stops reading wipes them"
        )


# --- moving data ---------------------------------------------------------------------


@cli.command("export", epilog=example("ken export > memories.jsonl"))
@click.option(
    "--scope", "-s", multiple=True, shell_complete=complete.scopes, help="Only these scopes."
)
@click.option(
    "--output",
    "-o",
    "target",
    type=click.Path(dir_okay=False),
    help="Write to this file instead of stdout.",
)
@pass_state
def export_cmd(state: State, scope: tuple[str, ...], target: str | None) -> None:
    """Export every memory, any status, as JSON lines with provenance and history."""
    query = ItemQuery(
        scopes=tuple(scope_filter(state, scope, False)), statuses=(), include_expired=True
    )
    lines = transfer.export_lines(state.store, query)
    if target:
        tmp = Path(f"{target}.tmp")
        count = 0
        try:
            with tmp.open("w", encoding="utf-8") as fh:
                for line in lines:
                    fh.write(line + "\n")
                    count += 1
            tmp.replace(target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise KenningError(f"cannot write {target}: {exc.strerror or exc}") from None
        say(f"exported {count} memories to {target}")
    else:
        for line in lines:
            click.echo(line)


@cli.command("import", epilog=example("ken import --from CLAUDE.md --dry-run"))
@click.argument("file", type=click.File("rb"), required=False)
@click.option(
    "--keep-status",
    is_flag=True,
    help="Your own export: keep each memory's status, pin and history fields as they were.",
)
@click.option(
    "--from",
    "instructions",
    type=click.Path(exists=True, dir_okay=False),
    help="An instruction file (CLAUDE.md, AGENTS.md, GEMINI.md): each bullet or ## section "
    "becomes a proposed memory for the repo.",
)
@click.option(
    "--scope", "-s", shell_complete=complete.scopes, help="With --from: where (default: repo)."
)
@click.option("--dry-run", is_flag=True, help="With --from: say what would be proposed.")
@json_option
@pass_state
def import_cmd(
    state: State,
    file: Any,
    keep_status: bool,
    instructions: str | None,
    scope: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Import JSON lines (as `ken export` writes) as proposed memories, unpinned.

    Nothing an import brings is told to agents until a person approves it; importing
    the same file twice adds nothing. One bad line imports nothing. --keep-status
    brings your own export back as it was (active memories are told at once), so a
    person must run it.

    With --from FILE, the rules already written in an agent's instruction file become
    proposals in the repo, each linked to the file and its line. Once approved they
    reach every agent except the ones that load that file themselves (Claude Code reads
    CLAUDE.md, Codex and OpenCode AGENTS.md, Gemini CLI GEMINI.md).
    """
    if instructions:
        if file is not None or keep_status:
            raise click.UsageError(
                "--from reads an instruction file: give no FILE or --keep-status"
            )
        _onboard(state, Path(instructions), scope, dry_run, as_json)
        return
    if dry_run or scope:
        raise click.UsageError("--dry-run and --scope go with --from")
    checked = transfer.read_items(file or sys.stdin.buffer, keep_status=keep_status)

    def progress(done: int, total: int) -> None:
        say(f"imported {done}/{total}")

    added, skipped = transfer.import_items(
        state.store, checked, progress=progress, actor=state.actor()
    )
    if as_json:
        emit_json({"added": added, "skipped": skipped})
        return
    if keep_status:
        say(f"added {added} memories as they were, skipped {skipped} already here")
        return
    say(
        f"added {added} proposed memories, skipped {skipped} already here"
        + ("; review them with `ken list --status proposed`" if added else "")
    )


def _onboard(state: State, path: Path, scope: str | None, dry_run: bool, as_json: bool) -> None:
    from kenning import onboard

    done = onboard.read_file(
        state.store, path, state.scope(scope or "repo"), dry_run=dry_run, actor=state.actor()
    )
    if as_json:
        emit_json(
            {
                "file": done.path,
                "dry_run": dry_run,
                "proposed": [i.to_dict() for i in done.proposed],
                "already": [{"line": e.line, "text": e.text} for e in done.already],
                "too_long": [{"line": e.line, "text": e.text} for e in done.too_long],
            }
        )
        return
    for item in done.proposed:
        line = item.evidence.split(":", 2)[1]
        short = "" if dry_run else f"{short_id(item.id)}  "
        click.echo(
            f"{short}{item.kind.value:<10}  {path.name}:{line}  {printable.clean(item.title)}"
        )
    for entry in done.too_long:
        say(f"{path.name}:{entry.line}: over 4 KB, not proposed: split that section")
    verb = "would propose" if dry_run else "proposed"
    say(
        f"{verb} {len(done.proposed)} memories in {state.scope(scope or 'repo')}"
        + (f", {len(done.already)} already in memory" if done.already else "")
        + ("; review them with `ken review`" if done.proposed and not dry_run else "")
    )


@cli.command("lint", epilog=example("ken lint --against CLAUDE.md AGENTS.md GEMINI.md"))
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--days",
    default=None,
    type=click.IntRange(1),
    help="Report items unused this many days (default 90, config lint.unused_days).",
)
@click.option("--here", is_flag=True, help="Only the scopes that apply in this folder.")
@click.option(
    "--against",
    is_flag=True,
    help="Also report memories that repeat or contradict a line of the instruction FILES "
    "agents load (default: this repo's CLAUDE.md, AGENTS.md and GEMINI.md).",
)
@json_option
@pass_state
def lint_cmd(
    state: State,
    files: tuple[str, ...],
    days: int | None,
    here: bool,
    against: bool,
    as_json: bool,
) -> None:
    """Report links to missing files, expired tasks, unused items, duplicates, what the
    cap of active memories per scope archived, and (--against) memories that repeat or
    contradict the instruction files, with the file and line."""
    findings = lint_mod.lint(
        state.store,
        unused_days=days or state.config.get("lint.unused_days"),
        scopes=tuple(scope_filter(state, (), here)),
        cap=state.config.get("memory.max_active_per_scope"),
    )
    if against or files:
        findings += lint_mod.against(
            state.store,
            [Path(f) for f in files] or _instruction_files(state),
            scopes=tuple(scope_filter(state, (), True)),
        )
    if as_json:
        emit_json([f.to_dict() for f in findings])
        return
    if not findings:
        say("nothing to report")
        return
    output.table(
        ["id", "rule", "title", "detail"],
        [[short_id(f.item_id), f.rule, f.title[:50], f.detail] for f in findings],
    )


def _instruction_files(state: State) -> list[Path]:
    """This repo's own instruction files, at its root."""
    git = state.where().git
    if git is None:
        raise KenningError(
            "lint --against needs the instruction files: name them, or run it in a repo "
            "that has CLAUDE.md, AGENTS.md or GEMINI.md at its root"
        )
    found = [git.root / name for name in lint_mod.INSTRUCTION_FILES if (git.root / name).is_file()]
    if not found:
        raise KenningError(
            f"no {', '.join(lint_mod.INSTRUCTION_FILES)} at {git.root}: name the files to "
            "check against"
        )
    return found


# --- where and settings --------------------------------------------------------------


@cli.command(epilog=example("ken path"))
@json_option
def path(as_json: bool) -> None:
    """Print the path of the store file."""
    target = str(config.db_path())
    if as_json:
        emit_json({"path": target, "config": str(config.config_path())})
    else:
        output.echo(str(target))


@cli.command(epilog=example("cd ~/src/app && ken where"))
@json_option
@pass_state
def where(state: State, as_json: bool) -> None:
    """Show the scopes that apply in this folder, most specific first, and why."""
    here = state.where()
    if as_json:
        emit_json(here.to_dict())
        return
    output.echo(f"folder: {here.cwd}")
    if here.agent:
        output.echo(f"agent:  {here.agent} (ken is running inside its shell)")
    output.table(["scope", "why"], [[str(s), here.reasons.get(str(s), "")] for s in here.scopes])


@cli.group("config", cls=KenGroup, epilog=example("ken config set memory.budget 2000"))
def config_group() -> None:
    """Read and change settings (config.toml)."""


@config_group.command("list", epilog=example("ken config list --json"))
@json_option
@pass_state
def config_list(state: State, as_json: bool) -> None:
    """List every setting with its value and where it comes from."""
    rows = [
        {
            "key": s.key,
            "value": state.config.get(s.key),
            "default": s.default,
            "source": state.config.source(s.key),
            "env": s.env,
            "help": s.help,
        }
        for s in config.SETTINGS
    ]
    for problem in config.file_problems(state.config.file):
        say(f"note: {problem.key} in {config.config_path()} {problem.detail}; {problem.fix}")
    if as_json:
        emit_json(rows)
        return
    output.table(
        ["key", "value", "source", "help"],
        [[r["key"], _fmt(r["value"], r["key"]), str(r["source"]), str(r["help"])] for r in rows],
    )


def _fmt(value: Any, key: str = "") -> str:
    setting = config.BY_KEY.get(key)
    if isinstance(value, list) and setting and setting.type is config.Command:
        return shlex.join(value)
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@config_group.command("get", epilog=example("ken config get memory.budget"))
@click.argument("key")
@json_option
@pass_state
def config_get(state: State, key: str, as_json: bool) -> None:
    """Print one setting's value."""
    value = state.config.get(key)
    if as_json:
        emit_json({"key": key, "value": value, "source": state.config.source(key)})
    else:
        output.echo(_fmt(value, key))


@config_group.command("set", epilog=example("ken config set recall.limit 3"))
@click.argument("key")
@click.argument("value")
def config_set(key: str, value: str) -> None:
    """Change a setting in config.toml (refused inside an agent's shell)."""
    if key not in config.BY_KEY:
        raise KenningError(f"unknown setting '{key}'; `ken config list` shows them all")
    policy.require_person(policy.Actor.from_env(), f"set {key} to {value}")
    stored = config.set_value(key, value)
    say(f"{key} = {_fmt(stored, key)} in {config.config_path()}")


@cli.command(epilog=example("ken demo"))
@click.option("--keep", is_flag=True, help="Keep the demo store and print where it is.")
def demo(keep: bool) -> None:
    """Tour kenning in a throwaway store and repo (never yours).

    A person adds memories and approves an agent's proposal; then what agents get: the
    pack at start (`ken pack`), a recall explained, and a Claude Code session there
    continued in Codex (`ken handoff --print`).
    """
    from kenning.cli.demo import run_demo

    run_demo(keep=keep)
