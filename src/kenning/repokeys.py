"""A repo's earlier keys, and moving what is stored under one to the key it has now.

A repo is keyed by its normalized origin, or without one by its main checkout's path
(`kenning.where`). So adding an origin (the first push) or changing it gives the repo
another key, and what was stored under the one before no longer applies there: its
memories in `repo:<old>` and `workstream:<old>#<branch>`, the projects added from it,
its switches in config.toml. Nothing is lost, but nothing says so either, so
`ken where` and `ken doctor` look for it (`earlier_keys`), and `ken repo move` moves it
in one transaction (`move`), when a person decides to: only a person moves memories,
since an agent moving them would change what every other agent there is told.

The earlier keys of the repo here are its path (when it has an origin now), the
repos recorded for sessions that ran in this checkout (an origin changed since), and
the stored keys that today's rule (`git.repo_key`: insteadOf, ssh aliases, CodeCommit,
Azure, local paths) reads as the repo here: keys an older kenning read otherwise from
the same origin. An origin changed with no session recorded here is not found; `ken
repo move OLD` moves it all the same.

Each memory moved is a new version in its new scope, nothing else changed (a task keeps
its expiry). A team memory's local copy stays: the team server is where it changes.
The switches in config.toml are the person's file: a move says which table to rename.
Sessions keep the repo they ran in: they are a record of what happened.
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass, field
from typing import Any

from kenning import items, paths, policy
from kenning.config import Config
from kenning.errors import InvalidInput, NotFound
from kenning.git import repo_key
from kenning.model import Scope, ScopeType
from kenning.store import ItemQuery, SessionQuery, Store
from kenning.where import Where

SESSIONS_READ = 50  # recent sessions of a checkout read for the repo keys they had
MAX_WORKSTREAMS = 10_000  # branches of one repo key whose workstreams are moved
KEYS_REREAD = 1_000  # stored repo keys (and workstreams) re-read by today's rule
# Of those, path keys re-read: each reads the git files of the folder it names, so only
# a few, and only ones a person's memory names (`reread_as`).
PATHS_REREAD = 20
KEPT_STATUSES = ("active", "superseded", "archived")  # a memory, not a proposal
SCOPES_NAMED = 3  # scopes a note names before it counts the rest


@dataclass(frozen=True, slots=True)
class Stored:
    """What is stored under one repo key."""

    key: str
    scopes: dict[str, int]  # each scope that holds memories (repo:K, workstream:K#…): how many
    projects: tuple[str, ...]  # added from the repo: they apply where it is
    switches: dict[str, bool]  # its `capture` and `deliver` in config.toml

    @property
    def memories(self) -> int:
        return sum(self.scopes.values())

    def what(self) -> str:
        """`3 memories (in repo:K and workstream:K#main) and project app`: what moving it
        moves, the memories' scopes named as they are."""
        parts = []
        if self.memories:
            names = list(self.scopes)
            more = len(names) - SCOPES_NAMED
            if more > 0:
                names = [*names[:SCOPES_NAMED], f"{more} more scope{'s' if more > 1 else ''}"]
            where = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
            parts.append(
                f"{self.memories} memor{'y' if self.memories == 1 else 'ies'} (in {where})"
            )
        if self.projects:
            parts.append(
                f"project{'s' if len(self.projects) > 1 else ''} {', '.join(self.projects)}"
            )
        return " and ".join(parts)


def stored_under(store: Store, key: str, config: Config) -> Stored:
    """The memories, projects and switches kept under repo key `key`."""
    scopes = [
        f"repo:{key}",
        *store.scopes_in_use(limit=MAX_WORKSTREAMS, prefix=f"workstream:{key}#"),
    ]
    counts = {
        scope: store.count_items(ItemQuery(scopes=(scope,), statuses=(), include_expired=True))
        for scope in scopes
    }
    return Stored(
        key,
        {scope: n for scope, n in counts.items() if n},
        tuple(p.slug for p in store.projects() if p.repo == key),
        config.repo_switches().get(key, {}),
    )


@dataclass(frozen=True, slots=True)
class EarlierKey:
    """An earlier key of the repo here that still holds something for it."""

    stored: Stored
    why: str  # how it was this repo's key
    now: str  # the repo's key now
    switches_lost: bool  # its switches in config.toml, and none for the key now

    @property
    def command(self) -> str:
        return f"ken repo move {shlex.quote(self.stored.key)}"

    def notes(self) -> list[str]:
        """What to say about it, one line each: what is left there and the command that
        moves it; switches that no longer apply and the table to rename."""
        out = []
        what = self.stored.what()
        if what:
            one = self.stored.memories + len(self.stored.projects) == 1
            out.append(
                f"{what} {'is' if one else 'are'} stored under {self.stored.key}, "
                f"{self.why}: {'it does' if one else 'they do'} not apply here; "
                f"`{self.command}` moves {'it' if one else 'them'} to repo:{self.now}"
            )
        if self.switches_lost:
            out.append("; ".join(switches_left(self.stored.key, self.stored.switches, self.now)))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.stored.key,
            "why": self.why,
            "scopes": self.stored.scopes,
            "memories": self.stored.memories,
            "projects": list(self.stored.projects),
            "switches": self.stored.switches if self.switches_lost else {},
            "move": self.command,
        }


def switches_left(key: str, switches: dict[str, bool], now: str) -> tuple[str, str]:
    """What to say of `key`'s switches in config.toml, which do not apply to repo key
    `now`, and how to fix it."""
    said = ", ".join(f"{name} = {str(on).lower()}" for name, on in sorted(switches.items()))
    return (
        f'the switches of [memory.repos."{key}"] in config.toml ({said}) do not apply to '
        f"repo:{now}",
        f'rename that table to [memory.repos."{now}"]',
    )


def earlier_keys(store: Store, here: Where, config: Config) -> list[EarlierKey]:
    """The repo here's earlier keys that still hold memories, projects or switches."""
    git = here.git
    if git is None or here.repo is None:
        return []
    path_key = git.path_key
    found: dict[str, str] = {}
    if git.origin:
        found[path_key] = "this repo's key before it had an origin"
    for folder in dict.fromkeys((paths.as_text(str(git.root)), path_key)):
        for session in store.list_sessions(SessionQuery(cwd=folder, limit=SESSIONS_READ)):
            if session.repo and session.repo != here.repo:
                found.setdefault(
                    session.repo,
                    f"this repo's key when a session ran here on {session.started_at[:10]}",
                )
    for key in reread_as(store, here.repo):
        found.setdefault(key, "the key an older kenning read from this repo's origin")
    switched = config.repo_switches()
    out = []
    for key, why in found.items():
        stored = stored_under(store, key, config)
        lost = bool(stored.switches) and here.repo not in switched
        if stored.scopes or stored.projects or lost:
            out.append(EarlierKey(stored, why, here.repo, lost))
    return out


def reread_as(store: Store, key: str) -> list[str]:
    """The repo keys of stored `repo:` and `workstream:` scopes that are not `key` but
    that today's rule reads as `key`: written by an older kenning that read the same
    origin otherwise (an ssh alias, an insteadOf shorthand, …). Of the path keys, only
    the first PATHS_REREAD that hold a memory (not only proposals) are read."""
    stored = [
        scope.removeprefix("repo:")
        for scope in store.scopes_in_use(limit=KEYS_REREAD, prefix="repo:")
    ] + [
        scope.removeprefix("workstream:").partition("#")[0]
        for scope in store.scopes_in_use(limit=KEYS_REREAD, prefix="workstream:")
    ]
    out, paths_read = [], 0
    for written in dict.fromkeys(stored):
        if written == key:
            continue
        if written.startswith("/"):
            # A path is read at the folder it names, whose git config may include any
            # file: only one a person's memory names (an agent's proposal could name a
            # folder it planted), and a few per run.
            if paths_read >= PATHS_REREAD or not _kept_under(store, written):
                continue
            paths_read += 1
        if key in reread(written):
            out.append(written)
    return out


def _kept_under(store: Store, key: str) -> bool:
    """Whether a memory (not a proposal) is kept under repo key `key`."""
    scopes = (
        f"repo:{key}",
        *store.scopes_in_use(limit=MAX_WORKSTREAMS, prefix=f"workstream:{key}#"),
    )
    query = ItemQuery(scopes=scopes, statuses=KEPT_STATUSES, include_expired=True)
    return store.count_items(query) > 0


def reread(written: str) -> set[str]:
    """What today's rule reads stored repo key `written` as: as a name (a path, a URL);
    for `host/path`, as the origin `host:path` it was read from (an ssh alias or an
    insteadOf shorthand then taken as a host, an Azure `%20`); for `name/`, as the
    CodeCommit origin `codecommit://name` an older kenning read so."""
    host, slash, rest = written.partition("/")
    names = [written]
    if slash and host and not written.startswith(("/", "~")):
        names.append(f"{host}:{rest}" if rest else f"codecommit://{host}")
    out = set()
    for name in names:
        with contextlib.suppress(ValueError):  # no longer a repo key at all
            out.add(repo_key(name))
    return out


@dataclass(frozen=True, slots=True)
class Moved:
    """What `move` moved, and what it left."""

    source: str
    target: str
    scopes: dict[str, str] = field(default_factory=dict)  # each scope moved: where to
    memories: int = 0
    projects: tuple[str, ...] = ()
    team_copies: int = 0  # team memory's local copies, left: the server holds them
    switches: dict[str, bool] = field(default_factory=dict)  # the source's, to rename

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": f"repo:{self.source}",
            "to": f"repo:{self.target}",
            "scopes": self.scopes,
            "memories": self.memories,
            "projects": list(self.projects),
            "team_copies_left": self.team_copies,
            "switches_left": self.switches,
        }


def source_key(store: Store, text: str) -> str:
    """The repo key `text` names, as the store holds it: as written (an older kenning
    may have keyed it otherwise than `--scope repo:` would now), else as `--scope repo:`
    reads it."""
    written = text.strip().removeprefix("repo:").strip()
    if not written:
        raise InvalidInput("name the repo key to move from, as `ken where` shows it")
    keys = [written]
    with contextlib.suppress(ValueError):  # a key no longer typed so: as written only
        keys.append(Scope.of(ScopeType.REPO, written, to_find=True).value)
    for key in dict.fromkeys(keys):
        held = store.count_items(
            ItemQuery(scopes=(f"repo:{key}",), statuses=(), include_expired=True)
        )
        if (
            held
            or any(p.repo == key for p in store.projects())
            or store.scopes_in_use(limit=1, prefix=f"workstream:{key}#")
        ):
            return key
    raise NotFound(f"nothing is stored under repo:{written}; `ken where` names what is")


def move(
    store: Store,
    source: str,
    target: str,
    config: Config,
    *,
    actor: policy.Actor | None = None,
) -> Moved:
    """Move every memory under repo key `source` (its `repo:` and `workstream:` scopes)
    and every project added from it to repo key `target`, in one transaction. Only a
    person does."""
    who = policy.require_person(policy.resolve(actor), f"moving the memories of repo:{source}")
    old = source_key(store, source)
    try:
        new = Scope.of(ScopeType.REPO, target).value
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    if new == old:
        raise InvalidInput(f"repo:{old} is the key to move to: nothing to move")
    stored = stored_under(store, old, config)
    scopes: dict[str, str] = {}
    moved = left = 0
    with store.together():
        for scope in stored.scopes:
            kind, _, value = scope.partition(":")
            branch = value.removeprefix(f"{old}#") if kind == "workstream" else None
            to = (
                Scope(ScopeType.REPO, new)
                if branch is None
                else Scope(ScopeType.WORKSTREAM, f"{new}#{branch}")
            )
            scopes[scope] = str(to)
            query = ItemQuery(scopes=(scope,), statuses=(), include_expired=True)
            for item in store.list_items(query):
                if policy.team_origin(item) is not None:
                    left += 1
                    continue
                items.move_to(store, item.id, to, actor=who)
                moved += 1
        for project in store.projects():
            if project.repo == old:
                store.add_project(project.slug, project.folder, new)
    return Moved(old, new, scopes, moved, stored.projects, left, stored.switches)
