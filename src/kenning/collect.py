"""Collection: what the agents saved in their own memory places, brought into kenning.

Claude Code, Gemini CLI and Codex each keep memories of their own (each agent module
says where: `Agent.memory_places`), which no other agent ever sees. `collect` reads
them, one file or one entry one memory, and files each as a **proposal** (what an agent
wrote steers others only once a person approves it), with provenance `how=collect`,
the agent as `who`, a `file:` link and the place as its `source`: the agent's file stays
the truth, so `ken edit` points there.

- Idempotent: a memory is known by its source (the file, and the entry's key within
  it); the same text again changes nothing.
- A memory a person forgot (`ken forget`) is not brought back while its file holds the
  same text (`kenning.tombstones`); edited, it is new text and is proposed again.
- A changed source updates its waiting proposal in place (the first one, or a revision
  filed earlier), and files a proposed revision of one already approved (a copy linked
  to it, which supersedes it when approved): one proposal waits per source.
- A file there but not read now (over 256 KB, empty while an agent rewrites it, not
  text in its encoding, a link out of the agent's folder: `saved.read_file`) changes
  nothing of what came from it, and a note says why.
- A removed source (a file gone, or an entry gone from a file read whole) archives its
  memory (`archive_reason` "source removed"), unless it was edited: where an entry is
  known by its text (a GEMINI.md bullet), an entry gone and one new that share at least
  half their words are one edited, filed as a revision of the approved memory, which
  stays until the revision is approved; edited again before that, the waiting revision
  is updated (its source moves to the new bullet).
- Where it goes: a place that belongs to a checkout goes to that repo (Claude names the
  checkout's folder its own way; the checkouts kenning has seen, from sessions and
  projects, are tried); one of a checkout kenning does not know goes to the agent's own
  scope (`agent:claude`); the person's own memories (Gemini's GEMINI.md, Codex's notes)
  go to `global`. An agent is never told back what it collected from itself.

A place's files' names, sizes and times make its stamp (table `collected_places`):
SessionStart runs `collect(..., changed_only=True)`, which reads nothing where
nothing changed, so collection needs no daemon.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from kenning import agents, ids, paths, tombstones
from kenning.agents.agent import Agent, MemoryPlace, SavedMemory
from kenning.deliver import COLLECT  # the hooks have it loaded already
from kenning.errors import InvalidInput
from kenning.model import MAX_ITEM_BYTES, Item, Provenance, Scope, ScopeType, Status
from kenning.store import ItemQuery, SessionQuery, Store, now_iso

# SessionStart looks at every place on every start, and almost always finds nothing
# changed: what reading and storing memories needs (items, redaction, git) is imported
# only once a place has changed, so an unchanged look costs a cold hook no imports.

HOW = COLLECT
REMOVED = "source removed"
TURNED_DOWN = (Status.REJECTED, Status.DISMISSED)  # a person's no to a statement
SESSION_CWDS = 500  # recent sessions whose folders are tried as checkouts


@dataclass
class Collected:
    """What one collection did (a dry run: would do)."""

    added: list[Item] = field(default_factory=list)
    updated: list[Item] = field(default_factory=list)  # waiting proposals changed in place
    revised: list[Item] = field(default_factory=list)  # proposed revisions of approved ones
    archived: list[Item] = field(default_factory=list)  # their source is gone
    # Statements a person rejected or dismissed before, met in another file: stored
    # dismissed, linked to that decision (`items.file_proposal`), not proposed again.
    set_aside: list[Item] = field(default_factory=list)
    # A file there but not read now (too large, empty, not text, a link out of its
    # folder), one line each: what was collected from it stays as it is.
    notes: list[str] = field(default_factory=list)
    unchanged: int = 0
    places_read: int = 0
    places_skipped: int = 0  # unchanged since the last collection: not read

    def to_dict(self) -> dict[str, object]:
        return {
            "added": [i.to_dict() for i in self.added],
            "updated": [i.to_dict() for i in self.updated],
            "revised": [i.to_dict() for i in self.revised],
            "archived": [i.to_dict() for i in self.archived],
            "set_aside": [i.to_dict() for i in self.set_aside],
            "notes": self.notes,
            "unchanged": self.unchanged,
            "places_read": self.places_read,
            "places_skipped": self.places_skipped,
        }


def collect(
    store: Store,
    *,
    env: Mapping[str, str] | None = None,
    dry_run: bool = False,
    changed_only: bool = False,
    cwd: str | None = None,
) -> Collected:
    """Bring in every agent's saved memories; with `changed_only`, only from places
    whose stamp moved since the last collection."""
    env = paths.environ() if env is None else env
    done = Collected()
    checkouts = _Checkouts(store, cwd)
    for agent in agents.AGENTS.values():
        if agent.memory_places is None:
            continue
        for place in agent.memory_places(env):
            stamp = _stamp(place.path)
            if changed_only and store.place_stamp(agent.name, str(place.path)) == stamp:
                done.places_skipped += 1
                continue
            done.places_read += 1
            scope = checkouts.scope(agent, place.checkout)
            _take(store, agent, place, scope, place.read(place.path), done, dry_run)
            if not dry_run:
                store.set_place_stamp(agent.name, str(place.path), stamp)
    return done


def source_of(agent: Agent, memory: SavedMemory) -> str:
    return f"{HOW}:{agent.name}:{memory.path}" + (f"#{memory.key}" if memory.key else "")


def _from(source: str, agent: Agent, path: str) -> bool:
    """Whether `source` is the file `path`, or one entry of it."""
    whole = f"{HOW}:{agent.name}:{path}"
    return source == whole or source.startswith(f"{whole}#")


def _take(
    store: Store,
    agent: Agent,
    place: MemoryPlace,
    scope: Scope,
    saved: list[SavedMemory],
    done: Collected,
    dry_run: bool,
) -> None:
    from kenning import items, policy
    from kenning.redact import mostly_secret

    # Collection is the person's: what it finds held or turned down counts whoever's it
    # is (nothing of it is told to an agent), in `ken collect` and at SessionStart alike.
    collector = policy.Actor()
    prefix = f"{HOW}:{agent.name}:{place.path}"
    # A file there but not read now is no file removed: its memories are left out of
    # what this reading may change (only a file gone, or an entry gone from a file read
    # whole, removes a memory).
    unread = {m.path: m.unread for m in saved if m.unread}
    done.notes += [
        f"not read: {path}: {why}; what came from it stays" for path, why in unread.items()
    ]
    saved = [m for m in saved if not m.unread]
    known: dict[str, list[Item]] = {}
    for item in store.list_items(
        ItemQuery(statuses=(), include_expired=True, source_prefix=prefix)
    ):
        source = item.source or ""
        rest = source[len(prefix) :]
        if rest[:1] not in ("", "/", "#"):
            continue  # a sibling folder sharing the name's start
        if not any(_from(source, agent, path) for path in unread):
            known.setdefault(source, []).append(item)
    sources = {source_of(agent, memory) for memory in saved}
    edited = _edited(saved, agent, known, sources)
    seen: set[str] = set()
    moved: set[str] = set()  # the waiting proposals updated: each has its source now
    for memory in saved:
        source = source_of(agent, memory)
        if source in seen:
            continue
        seen.add(source)
        if mostly_secret(memory.text):
            continue  # as anywhere else, a secret is no memory: where to find it is
        try:
            title, body = _fit(memory.text)
        except InvalidInput:
            continue  # nothing left to title it: no memory
        mine = known.get(source, []) or known.get(edited.get(source, ""), [])
        current = next((i for i in mine if i.status is Status.ACTIVE), None)
        # One proposal waits per source: the first collection's, or a revision of the
        # approved one (wherever its source was: a bullet edited twice is a new key each
        # time). A later change updates it rather than filing another beside it.
        waiting = next((i for i in mine if i.status is Status.PROPOSED), None)
        if waiting is None and current is not None:
            waiting = _revision_of(current, known, sources)
        if any((i.title, i.body) == (title, body) for i in mine if i.status is not Status.ARCHIVED):
            done.unchanged += 1
            continue
        if waiting is not None:
            changed = replace(waiting, title=title, body=body, source=source, updated_at=now_iso())
            if not dry_run:
                changed = store.replace_item(replace(changed, revision=ids.new_ulid()), HOW)
            done.updated.append(changed)
            moved.add(changed.id)
            continue
        if (
            current is None
            and waiting is None
            and store.is_forgotten(tombstones.digest(source, title, body))
        ):
            done.unchanged += 1  # a person forgot this very memory: it stays out
            continue
        new = _new(agent, memory, scope, title, body, source, replaces=current)
        if current is None and items.held_there(store, new, collector) is not None:
            done.unchanged += 1  # memory holds it there already (the person added it)
            continue
        if current is not None:
            if not dry_run:
                new = store.insert_item(new, change=items.REPLACES)
            done.revised.append(new)
            continue
        if not dry_run:
            # As any agent's proposal: a statement a person turned down is set aside.
            new = items.file_proposal(store, new, HOW, collector, turned_down=TURNED_DOWN)
        (done.set_aside if new.status is Status.DISMISSED else done.added).append(new)
    # An approved memory whose edit waits as a revision stays until that is approved;
    # and when the person turned the revision down, it stays as they chose.
    kept = (Status.PROPOSED, Status.REJECTED, Status.DISMISSED)
    revised = {
        x.target
        for item in [
            *(i for mine in known.values() for i in mine if i.id not in moved),
            *done.revised,
            *done.updated,
        ]
        if item.status in kept and item.source in sources
        for x in item.links
        if x.type == "item"
    }
    for source, mine in known.items():
        if source in seen or source in edited.values():
            continue
        for item in mine:
            if item.id in moved or item.id in revised:
                continue
            if item.status in (Status.ACTIVE, Status.PROPOSED):
                gone = replace(
                    item, status=Status.ARCHIVED, archive_reason=REMOVED, updated_at=now_iso()
                )
                if not dry_run:
                    gone = store.replace_item(replace(gone, revision=ids.new_ulid()), "archive")
                done.archived.append(gone)


def _revision_of(current: Item, known: dict[str, list[Item]], sources: set[str]) -> Item | None:
    """The proposed revision of approved memory `current` that waits under a source the
    place no longer has (a GEMINI.md bullet edited before: its text was its key)."""
    return next(
        (
            i
            for source, mine in known.items()
            if source not in sources
            for i in mine
            if i.status is Status.PROPOSED
            and any(x.type == "item" and x.target == current.id for x in i.links)
        ),
        None,
    )


def _edited(
    saved: list[SavedMemory], agent: Agent, known: dict[str, list[Item]], sources: set[str]
) -> dict[str, str]:
    """New sources that are old ones edited, each with the old source it replaces: where
    an entry is keyed by its text (a GEMINI.md bullet), an edit is a new key. Paired one
    to one, most words in common first, when at least half their words are shared."""
    gone = {
        source: next(i for i in mine if i.status in (Status.ACTIVE, Status.PROPOSED))
        for source, mine in known.items()
        if source not in sources and any(i.status in (Status.ACTIVE, Status.PROPOSED) for i in mine)
    }
    new = [m for m in saved if source_of(agent, m) not in known]
    if not gone or not new:
        return {}
    pairs = sorted(
        (
            (_overlap(m.text, item.text), source_of(agent, m), old)
            for m in new
            for old, item in gone.items()
        ),
        reverse=True,
    )
    out: dict[str, str] = {}
    for share, source, old in pairs:
        if share >= 0.5 and source not in out and old not in out.values():
            out[source] = old
    return out


_WORDS = r"\w+"  # compiled by `re` when first used: most starts collect nothing


def _overlap(a: str, b: str) -> float:
    """The share of words two texts have in common (of the larger set)."""
    first, second = set(re.findall(_WORDS, a.lower())), set(re.findall(_WORDS, b.lower()))
    return len(first & second) / max(len(first), len(second), 1)


def _new(
    agent: Agent,
    memory: SavedMemory,
    scope: Scope,
    title: str,
    body: str,
    source: str,
    replaces: Item | None,
) -> Item:
    from kenning import items

    now = now_iso()
    links = [f"file:{memory.path}"]
    if replaces is not None:
        links = items.replacement_links(links, replaces.id)
    return replace(
        items.new_item(
            "x",
            scope=scope,
            kind=items.parse_kind(memory.kind),
            links=links,
            status=Status.PROPOSED,
            evidence=f"saved by {agent.title} in {memory.path}",
            provenance=Provenance(who=agent.name, how=HOW),
        ),
        title=title,
        body=body,
        source=source,
        created_at=now,
        updated_at=now,
    )


def _fit(text: str) -> tuple[str, str]:
    """The text as stored: redacted, cut to the item limit with a visible marker, and
    split into a title and a body as `ken add` splits its text (NULs dropped, the
    title one line); InvalidInput when nothing is left."""
    from kenning.items import split_text
    from kenning.redact import redact

    clean = redact(text).text.strip()
    data = clean.encode("utf-8")
    if len(data) > MAX_ITEM_BYTES:
        marker = f"\n[cut: the rest is in the agent's file, {len(data):,} bytes]"
        room = MAX_ITEM_BYTES - len(marker.encode())
        clean = data[:room].decode("utf-8", errors="ignore").rstrip() + marker
    return split_text(clean)


def _stamp(path: Path) -> tuple[int, int]:
    """A place's files' names, sizes and modification times, folded to two numbers;
    (0, 0) when it is gone."""
    try:
        entries = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
        parts = [f"{p.name}\0{(s := p.stat()).st_size}\0{s.st_mtime_ns}" for p in entries]
    except OSError:
        return (0, 0)
    digest = hashlib.sha256("\n".join(parts).encode()).digest()
    return (len(parts), int.from_bytes(digest[:7], "big"))


class _Checkouts:
    """Which repo a place's checkout is: a folder that exists is looked at directly;
    a name is matched against the folders kenning has seen, and their parents."""

    def __init__(self, store: Store, cwd: str | None) -> None:
        self.store = store
        self.cwd = cwd
        self._named: dict[tuple[str, str], str | None] | None = None
        self._repos: dict[str, str | None] = {}

    def scope(self, agent: Agent, checkout: str | None) -> Scope:
        if checkout is None:
            return Scope(ScopeType.GLOBAL)
        repo = None
        if os.path.isabs(checkout) and os.path.isdir(checkout):
            repo = self._repo(checkout)
        elif agent.checkout_name is not None:
            repo = self._by_name(agent, checkout)
        if repo:
            return Scope(ScopeType.REPO, repo)
        return Scope(ScopeType.AGENT, agent.name)

    def _repo(self, folder: str) -> str | None:
        if folder not in self._repos:
            from kenning.where import detect

            self._repos[folder] = detect(folder, env={}).repo
        return self._repos[folder]

    def _by_name(self, agent: Agent, name: str) -> str | None:
        assert agent.checkout_name is not None
        for folder in self._folders():
            if agent.checkout_name(folder) == name:
                return self._repo(folder)
        return None

    def _folders(self) -> list[str]:
        seen: dict[str, None] = {}
        cwds = [self.cwd] if self.cwd else []
        cwds += [s.cwd for s in self.store.list_sessions(SessionQuery(limit=SESSION_CWDS)) if s.cwd]
        cwds += [p.folder for p in self.store.projects()]
        for cwd in cwds:
            path = Path(paths.os_path(cwd))
            for folder in (path, *path.parents):
                if str(folder) != "/" and folder.is_dir():
                    seen.setdefault(str(folder), None)
        return list(seen)
