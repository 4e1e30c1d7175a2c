"""Editing a memory in the person's own editor: the text they see, and what it means.

The file opens with a small header (kind, scope, tags, links) above a line `---`, then
the memory itself: its title on the first line, its body below. `ken edit`, `ken review`
(edit, then approve) and `ken panel` all go through here, so a memory reads the same in
every editor session, and an edit means the same wherever it was made.

The editor is `editor` in config.toml (`KEN_EDITOR`), else `$VISUAL`, else `$EDITOR`,
else `vi`. `save` writes the result through `items.change`, against the revision that
was opened: an edit takes minutes, and a change made meanwhile (an agent, `ken update` in
another terminal) is not overwritten unseen. Then nothing is saved, and the edited file
is kept under the state folder for the person to take their text from (`kenning.drafts`);
so is an edit refused for its header or for being mostly a secret (`kept_if_refused`).
What is kept is redacted as the store would redact it: no secret waits there at rest.
A team memory is read-only here: `propose` files the edit with the team server as a
proposed revision instead (`ken edit` and the panel's `e` both call it).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypedDict

from kenning import drafts, items, policy
from kenning.config import Config
from kenning.errors import InvalidInput, KenningError, NeedsPerson, RevisionConflict, StoreError
from kenning.ids import short_id
from kenning.model import Item, Kind, Scope
from kenning.redact import redact
from kenning.store import Store

HEADER_END = "---"
FIELDS = ("kind", "scope", "tags", "links")


def editor_text(item: Item) -> str:
    """What the editor opens for `item`."""
    return (
        f"kind: {item.kind.value}\n"
        f"scope: {item.scope}\n"
        f"tags: {', '.join(item.tags)}\n"
        f"links: {', '.join(str(x) for x in item.links)}\n"
        f"{HEADER_END}\n"
        f"{item.title}\n" + (f"\n{item.body}\n" if item.body else "")
    )


@dataclass(frozen=True, slots=True)
class Edit:
    """What the person wrote: the header fields they kept (as typed), the text, and the
    whole file as saved."""

    fields: dict[str, str]
    text: str
    written: str = ""

    @property
    def kind(self) -> str | None:
        return self.fields.get("kind") or None

    @property
    def scope(self) -> str | None:
        return self.fields.get("scope") or None

    @property
    def tags(self) -> list[str]:
        return [t for t in self.fields.get("tags", "").split(",") if t.strip()]

    @property
    def links(self) -> list[str]:
        return [x.strip() for x in self.fields.get("links", "").split(",") if x.strip()]


def parse(text: str) -> Edit:
    """The edited file read back; a broken header changes nothing."""
    head, sep, body = text.partition(f"\n{HEADER_END}\n")
    if not sep:
        raise InvalidInput(f"the header must end with a line '{HEADER_END}'; nothing changed")
    fields: dict[str, str] = {}
    for line in head.splitlines():
        if line.strip():
            key, colon, value = line.partition(":")
            if not colon or key.strip() not in FIELDS:
                raise InvalidInput(f"unknown header line '{line}'; nothing changed")
            fields[key.strip()] = value.strip()
    return Edit(fields, body, text)


def command(config: Config | None = None) -> str:
    """The editor to run, as a shell-style command line."""
    chosen = (config or Config()).editor
    return chosen or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"


def run_editor(text: str, editor: str | None = None) -> str:
    """Open `text` in the editor (on this terminal) and return the file as saved."""
    line = editor or command()
    with tempfile.TemporaryDirectory(prefix="ken-edit-") as folder:
        path = Path(folder) / "memory.md"
        path.write_text(text, encoding="utf-8")
        try:
            result = subprocess.run([*shlex.split(line), str(path)], check=False)
        except OSError as exc:
            raise KenningError(f"cannot run the editor '{line}': {exc.strerror}") from None
        if result.returncode != 0:
            raise KenningError(f"the editor exited with {result.returncode}; nothing changed")
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise KenningError("the edited file is not UTF-8 text; nothing changed") from None


def save(
    store: Store,
    item: Item,
    edit: Edit,
    *,
    scope: Scope | None = None,
    in_place: bool = False,
    actor: policy.Actor | None = None,
) -> Item:
    """Save what the person wrote over `item` as a new version (unless `in_place`).

    `item` is the memory as it was opened in the editor: when it has changed since,
    nothing is written and `RevisionConflict` says what changed and where the edited
    file is kept. `scope` is the header's scope as the caller reads it (a bare `repo`
    means the one where the caller is), None to keep it. The person check is
    `items.change`'s."""
    try:
        return items.change(
            store,
            item.id,
            actor=actor,
            scope=scope,
            in_place=in_place,
            expected_revision=item.revision,
            **changes(item, edit),
        )
    except RevisionConflict as exc:
        now = items.get(store, item.id)
        message = (
            f"{short_id(item.id)} was changed while you edited it ({_difference(item, now)}): "
            f"nothing saved, your edit {_keep(item, edit.written)}"
        )
        raise RevisionConflict(item.id, item.revision, exc.current, message) from None


TEAM_TIMEOUT = 15.0  # seconds an edit of a team memory gives the server


def propose(
    store: Store,
    item: Item,
    edit: Edit,
    *,
    scope: Scope | None = None,
    timeout: float = TEAM_TIMEOUT,
) -> str:
    """File the person's edit of a team memory with the team server as a proposed
    revision (the copy here stays as the team has it until an admin approves), and send
    it now; returns the line to tell the person. `scope` is the header's, as in `save`."""
    from kenning.team import client, sync  # loaded only when a team memory is edited

    if scope is not None and scope != item.scope:
        raise InvalidInput("a team memory keeps its scope: edit its text, kind, tags or links")
    member = client.membership()
    revised = items.revised(replace(item, source=None), **changes(item, edit))
    sync.file_revision(store, item, revised)
    report = sync.sync(store, member, timeout=timeout, do_pull=False)
    if report.refused:
        return f"the team server refused the revision: {report.refused[0]['reason']}"
    if report.waiting == 0 and not report.error:
        return (
            f"filed a proposed revision of {short_id(item.id)} with the team: the copy here "
            "changes once an admin approves it"
        )
    return (
        f"the proposed revision of {short_id(item.id)} waits to be sent "
        f"({report.error}): it goes at the next `ken team sync`"
    )


@contextmanager
def kept_if_refused(item: Item, text: str) -> Iterator[None]:
    """Run the reading and saving of an edit of `item` (the file as saved: `text`); when
    the edit is refused (a header ken does not take, a scope or kind it does not know, a
    change only a person may make, a store it cannot write), what the person typed is
    kept as on a conflict, and the error says where."""
    try:
        yield
    except (InvalidInput, NeedsPerson, StoreError) as exc:
        raise type(exc)(f"{exc}; your edit {_keep(item, text)}") from None


def _difference(before: Item, now: Item) -> str:
    """What changed between two revisions of a memory, in a few words."""
    changed = ["text"] if (now.title, now.body) != (before.title, before.body) else []
    changed += [
        name
        for name in ("kind", "scope", "status", "pinned", "tags", "links", "evidence")
        if getattr(now, name) != getattr(before, name)
    ]
    title = now.title if len(now.title) <= 60 else now.title[:59] + "…"
    return f'{", ".join(changed) or "a new revision"}; now "{title}"'


def _keep(item: Item, text: str) -> str:
    """Keep an edit that could not be saved, in a file of its own (private: a memory
    may be), and say where: the words that follow "your edit".

    A secret in it is kept redacted, as the store would keep it: an edit refused for
    holding one (or refused for anything else) would otherwise leave the secret at rest
    in the state folder until the memory is forgotten. The message names the lines that
    hold a marker, so the person sees what is no longer there."""
    found = redact(text)
    try:
        path = drafts.keep_edit(item.id, found.text)
    except KenningError as exc:
        return f"could not be kept: {exc}"
    if not found.kinds:
        return f"is kept in {path}"
    before = set(text.splitlines())
    lines = [
        str(number)
        for number, line in enumerate(found.text.splitlines(), 1)
        if "[redacted:" in line and line not in before
    ]
    where = f"line{'s' if len(lines) > 1 else ''} {', '.join(lines)}" if lines else "it"
    secrets = "secrets" if sum(n for _, n in found.counts) > 1 else "secret"
    return f"is kept, the {secrets} on {where} redacted, in {path}"


class Changes(TypedDict):
    text: str
    kind: Kind | None
    add_tags: list[str]
    remove_tags: list[str]
    add_links: list[str]
    remove_links: list[str]


def changes(item: Item, edit: Edit) -> Changes:
    """What an edit asks of `item`, as `items.change` and `items.revised` take it: its
    text and kind, and the tags and links it adds and drops (the header lists them all)."""
    return Changes(
        text=edit.text,
        kind=items.parse_kind(edit.kind) if edit.kind else None,
        add_tags=list(edit.tags),
        remove_tags=[t for t in item.tags if t not in items.clean_tags(edit.tags)],
        add_links=list(edit.links),
        remove_links=[str(x) for x in item.links if str(x) not in edit.links],
    )
