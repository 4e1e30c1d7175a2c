"""Item commands: `ken add`, `show`, `list`, `edit` and `update`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace

import click

from kenning import deliver, editing, ids, items, policy, templates
from kenning.cli import complete, options, output
from kenning.cli.output import Result, say
from kenning.cli.state import (
    State,
    example,
    guard_change,
    pass_state,
    provenance_here,
    read_stdin_text,
    renders,
    save_edit,
    scope_filter,
)
from kenning.ids import short_id
from kenning.model import KINDS, Item, Status
from kenning.store import ItemQuery

# --- add ---------------------------------------------------------------------------


@click.command(epilog=example('ken add "Deploys go through make release" --kind decision'))
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
    "--link",
    "-l",
    "links",
    multiple=True,
    help="file:PATH, url:URL, item:ID, commit:SHA, session:ID.",
)
@click.option("--pin", is_flag=True, help="Always put it in context packs.")
@click.option("--propose", is_flag=True, help="Store it as proposed, waiting for approval.")
@click.option("--evidence", "-e", help="What prompted it: the excerpt, in the person's words.")
@click.option(
    "--template",
    type=click.Choice(list(templates.TEMPLATES)),
    help="Lay the text out as a postmortem, a decision or a compact note.",
)
@renders
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
) -> Result:
    """Add a memory. The first line is its title, the rest its body.

    With no TEXT, or TEXT `-`, reads the memory from stdin.
    """
    body = " ".join(text) if text and text != ("-",) else None
    if body is None:
        if sys.stdin.isatty():
            raise click.UsageError("give the memory as TEXT or on stdin")
        body = read_stdin_text()
    here = state.where()
    target = state.scope(scope) if scope is not None else items.default_scope(here.repo)
    # In an agent's shell the switches hold as for its MCP writes; a person's own add is
    # theirs (memory.enabled = false stops what kenning and agents keep, not the person).
    deliver.check_agent_write(
        state.config, here.agent, here, [target], projects=state.store.projects()
    )
    # Read before the write: a setting that does not parse must stop the command
    # before it has changed anything, not after.
    enabled = state.config.memory_enabled
    fresh = ids.new_ulid()
    capped: list[Item] = []
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
        ttl_days=state.config.tasks_ttl_days,
        actor=state.actor(),
        item_id=fresh,
        archived=capped,
    )
    if item.id != fresh:  # the same statement waits for review there already
        return Result(
            data={**item.to_dict(), "redacted": {}, "filed": False, "archived": []},
            text=lambda: say(
                f"not filed again: {short_id(item.id)} in {item.scope} waits for review with "
                "the same statement (`ken approve` or `ken reject` it)"
            ),
        )
    redacted = items.redactions(item, [body, evidence or "", *tags, *links])
    # A copy for another repo is no copy here: forgetting this one would leave none.
    applies = {str(s) for s in here.scopes} | {str(item.scope), "global"}
    copies = (
        []
        if item.status is Status.DISMISSED
        else [
            c
            for c in items.same_text(state.store, item, who=state.actor())
            if str(c.scope) in applies
        ]
    )
    after = _twin_notes(item, copies, person=state.actor().is_person) + items.cap_said(capped)
    if not enabled:
        after.append(
            "note: memory is turned off (memory.enabled = false, or KEN_ENABLED=0): no agent "
            "is told this until it is on again"
        )
    return Result(
        data={
            **item.to_dict(),
            "redacted": redacted,
            "filed": True,
            "archived": [i.id for i in capped],
        },
        text=lambda: _added(item, redacted),
        after=after,
    )


SHOWN_TWINS = 3
_BEFORE = {
    Status.DISMISSED: "you dismissed the same statement before",
    Status.REJECTED: "you rejected the same statement before",
    Status.ARCHIVED: "the same statement was archived before",
}


def _twin_notes(item: Item, twins: Sequence[Item], *, person: bool = True) -> list[str]:
    """What `ken add` says of memories with the same statement: one active or waiting is
    a copy this one may drop; one a person dismissed, rejected or archived is only
    mentioned (this new memory is the person's, and stays). A superseded version is
    the past of one of these. Only a person is shown `ken forget`: an agent's shell
    is refused it."""
    new = short_id(item.id)
    live = [t for t in twins if t.status in (Status.ACTIVE, Status.PROPOSED)]
    drop = f"; `ken forget {new}` drops this copy" if person else ""
    notes = [
        f"note: {short_id(t.id)} ({t.status.value}, {t.scope}) already says the same{drop}"
        for t in live[:SHOWN_TWINS]
    ]
    if len(live) > SHOWN_TWINS:
        notes.append(f"note: and {len(live) - SHOWN_TWINS} more say the same")
    for status, said in _BEFORE.items():
        gone = [short_id(t.id) for t in twins if t.status is status]
        if gone:
            more = len(gone) - SHOWN_TWINS
            notes.append(
                f"note: {said}: {', '.join(gone[:SHOWN_TWINS])}"
                + (f" and {more} more" if more > 0 else "")
            )
    return notes


def _added(item: Item, redacted: dict[str, int]) -> None:
    short = short_id(item.id)
    if item.status is Status.DISMISSED:
        say(
            f"set aside {item.kind.value} {short} in {item.scope}: a person dismissed the same "
            f"statement before ({item.dismiss_reason}); it is proposed again when "
            f"{items.SESSIONS_TO_PROPOSE_AGAIN} sessions have repeated it"
        )
    else:
        click.echo(short)
        note = (
            " (proposed: a person approves it with `ken approve`)"
            if item.status.value == "proposed"
            else ""
        )
        say(f"added {item.kind.value} {short} to {item.scope}{note}")
    if redacted:
        say(items.describe_redactions(redacted))


@click.command("list", epilog=example("ken list --here --kind preference"))
@options.scopes_here
@options.item_filters
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(0, 2**63 - 1),  # what SQLite's LIMIT takes
    default=50,
    show_default=True,
    help="At most this many (0: no limit).",
)
@renders
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
) -> Result:
    """List memories, newest first, pinned on top: 50 unless --limit says otherwise.

    On a terminal, a list taller than the screen goes through your pager ($PAGER).
    """
    blocked = state.withheld()
    who = state.actor()
    query = ItemQuery(
        scopes=tuple(scope_filter(state, scope, here)),
        kinds=tuple(k.value for k in map(items.parse_kind, kind) if k),
        statuses=options.statuses(status, show_all),
        tags=items.clean_tags(tag),
        include_expired=show_all,
        limit=limit or None,
        exclude_repos=tuple(sorted(blocked)),  # they take no place of the limit, nor count
    )
    untold = {s.value for s in items.UNTOLD}
    if who.is_person or not (set(query.statuses) & untold if query.statuses else untold):
        found = [i for i in state.store.list_items(query) if not deliver.withheld(i, blocked)]
        total = len(found)
        if limit and len(found) == limit:
            total = state.store.count_items(replace(query, limit=None))
    else:  # an agent's shell lists, and counts, only the proposals that are its own
        every = state.store.list_items(replace(query, limit=None))
        known = [i for i in every if items.may_know(who, i, blocked)]
        found, total = known[: limit or None], len(known)
    after = []
    if limit and len(found) == limit and total > limit:
        after.append(f"(showing {limit} of {total}; `--limit 0` shows them all)")
    filtered = bool(scope or here or kind or status or tag or show_all)
    return Result(
        data=[i.to_dict() for i in found],
        text=lambda: _listed(state, found, query, filtered, who),
        after=after,
    )


def _listed(
    state: State, found: Sequence[Item], query: ItemQuery, filtered: bool, who: policy.Actor
) -> None:
    before = []
    # An agent's shell is not told whether anything waits (as `ken review` is refused).
    waiting = 0
    if who.is_person:
        waiting = state.store.count_items(ItemQuery(statuses=("proposed",), include_expired=True))
    if waiting and query.statuses != ("proposed",):
        before.append(
            f"{waiting} {'memory waits' if waiting == 1 else 'memories wait'} for review: "
            "`ken list --status proposed`, then `ken approve` or `ken reject`"
        )
    if found:
        output.page(output.render_items(found), before)
        return
    # With proposals waiting, the store is not empty: say so, not "add one".
    for line in before:
        say(line)
    if filtered:
        say("no memories match")
    elif before:
        say("none is active yet: `ken review` goes through them")
    else:
        say("no memories here yet: `ken add TEXT` adds one")


@click.command(epilog=example("ken show 3kq9zd"))
@click.argument("ref", shell_complete=complete.item_ids())
@renders
@pass_state
def show(state: State, ref: str) -> Result:
    """Show one memory: text, provenance, tags, links, uses, expiry and versions."""
    # In an agent's shell, among what it may know of: an ambiguous id lists no other.
    item = state.memory(ref)
    history = state.store.revisions(item.id)
    replaces = items.replaced_by(state.store, item)
    return Result(
        data={
            **item.to_dict(),
            "replaces": replaces.id if replaces else None,
            "history": [r.to_dict() for r in history],
        },
        text=lambda: output.show_item(item, history, replaces),
    )


# --- changing ------------------------------------------------------------------------


@click.command(epilog=example("KEN_EDITOR=nano ken edit 3kq9zd"))
@click.argument("ref", shell_complete=complete.item_ids())
@click.option("--in-place", is_flag=True, help="Fix the text without making a new version.")
@pass_state
def edit(state: State, ref: str, in_place: bool) -> None:
    """Edit a memory in your editor ($KEN_EDITOR, else $VISUAL, else $EDITOR).

    A small header above '---' holds kind, scope, tags and links. Saving makes a new
    version; --in-place fixes a typo without one. When the memory was changed elsewhere
    while the editor was open, nothing is saved: ken says what changed and where your
    edited file is kept; so is an edit ken refuses (its header, or a text that is mostly a
    secret). A secret is never kept there: it is redacted, and ken names its line. A team
    memory (read-only here) is not changed: the edit goes to the team server as a
    proposed revision.
    """
    item = state.memory(ref)
    team = policy.team_origin(item) is not None
    if team:
        policy.require_person(
            state.actor(), f"proposing a revision of team memory {short_id(item.id)}"
        )
    else:
        items.check_not_synced(item)
        guard_change(state, item, "edit")  # before the editor opens: nothing to type for
    before = editing.editor_text(item)
    after = editing.run_editor(before, editing.command(state.config))
    if after == before:
        say("nothing changed")
        return
    if team:  # the server is where team memory changes: the edit goes there as a proposal
        with editing.kept_if_refused(item, after):
            edit = editing.parse(after)
            scope = state.scope(edit.scope) if edit.scope else None
            say(editing.propose(state.store, item, edit, scope=scope))
        return
    with editing.kept_if_refused(item, after):
        updated = save_edit(state, item, editing.parse(after), in_place=in_place)
    say(f"saved {short_id(updated.id)}" + (" in place" if in_place else " as a new version"))


@click.command(epilog=example('ken update 3kq9zd --text "Use pnpm 9" --add-tag js'))
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
@renders
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
) -> Result:
    """Change a memory through flags (edit, for scripts). Each change is a new version."""
    item = state.memory(ref)
    new_scope = state.scope(scope) if scope is not None else None
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
    if updated.to_dict() == item.to_dict():
        # No flag, or only ones that change nothing (a tag it does not have): say so.
        # Not by revision: an --in-place change keeps it.
        return Result(
            data=updated.to_dict(),
            text=lambda: say(f"nothing to change in {short_id(updated.id)}: it is as asked"),
        )
    return Result(
        data=updated.to_dict(),
        text=lambda: say(
            f"updated {short_id(updated.id)} in place (revision {updated.revision} kept)"
            if in_place
            else f"updated {short_id(updated.id)} (revision {updated.revision})"
        ),
    )
