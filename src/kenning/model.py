"""kenning's values: items, scopes, kinds, statuses, links, provenance and sessions.

Plain frozen dataclasses and enums with no I/O, so every layer can share them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kenning.ids import short_id

MAX_ITEM_BYTES = 4096
MAX_EVIDENCE_BYTES = 8192
MAX_TAGS = 32  # tags on one memory
MAX_LINKS = 64  # links on one memory
MAX_LINK_CHARS = 4096  # one link: a path or URL
TASK_TTL_DAYS = 14


class Kind(StrEnum):
    FACT = "fact"
    DECISION = "decision"
    PREFERENCE = "preference"
    CORRECTION = "correction"
    TASK = "task"
    HANDOFF = "handoff"
    SUMMARY = "summary"
    LESSON = "lesson"
    NOTE = "note"


@dataclass(frozen=True, slots=True)
class KindSpec:
    """How a kind of memory behaves, wherever memory is given, ranked or changed."""

    section: str  # the pack section it goes in: rules, knowledge, tasks or handoffs
    rule: bool  # a rule that steers agents: recall weighs it by `recall.rule_weight`
    working: bool  # an agent's working note: active at once in the agent's own scopes
    rank_group: int  # review and promotion order (lower first: a person's rules first)
    expires: bool  # expires `tasks.ttl_days` after its last change
    foldable: bool  # curation may fold copies of it into one
    promotable: bool  # `ken promote` writes it into a steering repo
    help: str


KINDS: dict[Kind, KindSpec] = {
    Kind.PREFERENCE: KindSpec(
        "rules", True, False, 0, False, True, True, "how the person wants things done"
    ),
    Kind.CORRECTION: KindSpec(
        "rules", True, False, 0, False, True, True, "the person corrected or refused something"
    ),
    Kind.DECISION: KindSpec(
        "knowledge", False, False, 1, False, True, True, "a decision made, and why"
    ),
    Kind.FACT: KindSpec(
        "knowledge", False, False, 1, False, True, True, "what holds about the repo or the work"
    ),
    Kind.LESSON: KindSpec(
        "knowledge", False, False, 1, False, True, True, "what a run taught, from its reflection"
    ),
    Kind.NOTE: KindSpec("knowledge", False, True, 2, False, True, True, "anything else (default)"),
    Kind.SUMMARY: KindSpec(
        "knowledge", False, True, 2, False, False, False, "what a session did (summarizer)"
    ),
    Kind.TASK: KindSpec(
        "tasks", False, True, 3, True, True, False, "where work stands (expires 14 days on)"
    ),
    Kind.HANDOFF: KindSpec(
        "handoffs", False, True, 3, False, False, False, "done / state / next / open questions"
    ),
}


def kinds_where(test: Callable[[KindSpec], bool]) -> tuple[Kind, ...]:
    """The kinds whose behaviour passes `test`, in the table's order."""
    return tuple(kind for kind, spec in KINDS.items() if test(spec))


class Status(StrEnum):
    ACTIVE = "active"
    PROPOSED = "proposed"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"
    REJECTED = "rejected"
    DISMISSED = "dismissed"


class DismissReason(StrEnum):
    COVERED = "covered"
    WRONG = "wrong"
    ONE_OFF = "one_off"
    OTHER = "other"


class TeamRole(StrEnum):
    """What a team token may do on `ken serve`: a member pushes and pulls, an admin also
    decides."""

    MEMBER = "member"
    ADMIN = "admin"


class ScopeType(StrEnum):
    SESSION = "session"
    WORKSTREAM = "workstream"
    PROJECT = "project"
    WORKSPACE = "workspace"
    REPO = "repo"
    AGENT = "agent"
    GLOBAL = "global"


# Most specific first: the order packs and `ken where` use.
SCOPE_ORDER = tuple(ScopeType)
LINK_TYPES = ("file", "url", "item", "commit", "session")

MAX_SCOPE_VALUE = 4096  # a repo without an origin is keyed by its path, which may be long
MAX_NAME = 200  # workspace and project names
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A project's name, as `ken project add` takes it and `project:NAME` names it.
PROJECT_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
# AWS CodeCommit through git-remote-codecommit: `codecommit::REGION://[PROFILE@]NAME`, or
# `codecommit://[PROFILE@]NAME` in the profile's region.
_CODECOMMIT = re.compile(r"^codecommit:(?::([A-Za-z0-9-]+):)?//(?:([^@/]*)@)?([^/@]+?)/?$", re.I)
# The hosts a forge serves SSH on port 443 from, for networks that close port 22; an ssh
# config names them (`Host github.com` / `HostName ssh.github.com`) for the forge itself.
_SSH_443 = {
    "ssh.github.com": "github.com",
    "altssh.gitlab.com": "gitlab.com",
    "altssh.bitbucket.org": "bitbucket.org",
}
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def normalize_origin(
    url: str,
    *,
    ssh_host: Callable[[str], str] | None = None,
    aws_region: Callable[[str | None], str | None] | None = None,
) -> str:
    """A git origin as a repo key: `git@github.com:Org/App.git` and
    `https://u@github.com/org/app` give `github.com/org/app` (lowercase, no scheme, user,
    port or `.git`, percent-escapes decoded: `My%20Project` is `my project`). An origin
    that is a local path (`/srv/git/App.git`, `file:///srv/git/App.git`) is that path, case
    and `.git` kept: a bare repository there is keyed by the same path.

    `ssh_host` gives the host an ssh alias stands for (an ssh config's `HostName`), for
    origins reached over ssh; `aws_region` the region of an AWS profile (None: the
    default one), for a CodeCommit origin that names none. Both read files: kenning.git
    passes them, so that this stays a rule on text."""
    text = url.strip()
    if match := _CODECOMMIT.match(text):
        region, profile, name = match.group(1), match.group(2), match.group(3).lower()
        region = region or (aws_region(profile or None) if aws_region else None)
        if not region:  # git-remote-codecommit cannot reach it either
            return f"codecommit/{name}"
        return f"git-codecommit.{region.lower()}.amazonaws.com/v1/repos/{name}"
    if text[:7].lower() == "file://":
        return _path_key(_decoded(text[7:]))
    if "://" in text:
        scheme, _, rest = text.partition("://")
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1]
        host = host[: host.index("]") + 1] if host.startswith("[") and "]" in host else host
        host = host if host.startswith("[") else host.split(":", 1)[0]
        if ssh_host and scheme.lower() in ("ssh", "git+ssh", "ssh+git"):
            host = ssh_host(host)
        path = _decoded(path)
    elif text.startswith(("/", ".", "~")):
        return _path_key(text)
    elif match := _SCP.match(text):
        host, path = match.group(1), _decoded(match.group(2))
        if ssh_host:
            host = ssh_host(host)
    else:  # already a key, `host/path`: taken as written (a key is never decoded twice)
        host, _, path = text.strip("/").partition("/")
    return _key(host, path)


def _key(host: str, path: str) -> str:
    path = _strip_git(path.strip("/")).rstrip("/").lower()
    host = host.lower()
    host = _SSH_443.get(host, host)
    host, path = _azure(host, path)
    return f"{host}/{path}" if path else host


def _azure(host: str, path: str) -> tuple[str, str]:
    """An Azure DevOps repo as its https form names it (`dev.azure.com/org/project/_git/repo`),
    from its SSH forms and the older `org.visualstudio.com` host (with or without
    `DefaultCollection`). A repo named after its project may leave the project out."""
    if host in ("ssh.dev.azure.com", "vs-ssh.visualstudio.com") and path.startswith("v3/"):
        org, _, rest = path[3:].partition("/")
        project, _, repo = rest.partition("/")
        return "dev.azure.com", f"{org}/{project}/_git/{repo}"
    if host.endswith(".visualstudio.com"):
        rest = path.removeprefix("defaultcollection/")
        parts = rest.split("/")
        if "_git" not in parts and "_ssh" not in parts:
            return host, path
        host, path = "dev.azure.com", f"{host.removesuffix('.visualstudio.com')}/{rest}"
    if host == "dev.azure.com":
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "_git":  # org/_git/repo: the project is the repo
            parts = [parts[0], parts[2], "_git", parts[2]]
        if len(parts) == 4 and parts[2] == "_ssh":  # the old SSH form
            parts[2] = "_git"
        path = "/".join(parts)
    return host, path


def _decoded(text: str) -> str:
    """`text` with its percent-escapes decoded (`My%20Project`), as a forge names the repo."""
    if "%" not in text or not _ESCAPE.search(text):
        return text
    from urllib.parse import unquote  # rarely needed: not on every hook's way in

    return unquote(text)


def _strip_git(path: str) -> str:
    """A path without its `.git` ending, in any case (`Shop.GIT`)."""
    return path[:-4] if path.lower().endswith(".git") else path


def _path_key(path: str) -> str:
    """A repo's path as a key: without a trailing `/`, `~` made whole, otherwise as written
    (case, spaces and a `.git` ending kept)."""
    if path.startswith("~"):
        import os.path

        path = os.path.expanduser(path)
    return path.rstrip("/") or "/"


def repo_key(text: str) -> str:
    """The repo key for what a person typed after `repo:`, read as text alone: a path
    (starting with `/`, `~` or `file://`) is kept as it is, since a repo without an origin
    is keyed by its main checkout's path; anything else is read as an origin and
    normalized. `kenning.git.repo_key` adds what the files say (a path's repo, an ssh
    alias, `url.<base>.insteadOf`)."""
    value = text.strip()
    if not value:
        raise ValueError(f"bad scope 'repo:{text}': the name after 'repo:' is empty")
    if value.startswith(("/", "~")) or value[:7].lower() == "file://":
        return normalize_origin(value)
    if value.startswith("."):  # relative to where? A key names one repo from anywhere.
        raise ValueError(
            f"bad scope 'repo:{text}': a path must be the checkout's full path "
            "(or use a bare `repo` for the repo here)"
        )
    key = normalize_origin(value)
    # A host holds no space: `repo:use pnpm/npm` is words, not a repo. A path may (an Azure
    # DevOps project named `My Project`).
    if any(c.isspace() for c in key.partition("/")[0]):
        raise _not_a_repo(text)
    return key


def _not_a_repo(text: str) -> ValueError:
    return ValueError(
        f"bad scope 'repo:{text}': a repo is its origin (github.com/org/name) "
        "or, without one, its checkout's full path"
    )


def normalize_name(text: str) -> str:
    """A workspace or project name: trimmed, runs of whitespace as one space, lowercase.

    One rule for config, environment variables and `--scope`, so `Acme  Platform` and
    `acme platform` name the same workspace."""
    return " ".join(text.split()).lower()


def _normalize_value(scope_type: ScopeType, value: str) -> str:
    match scope_type:
        case ScopeType.REPO:
            key = repo_key(value)
            # An origin is a host and a path: one bare word ("repo:shop") names no repo.
            if key and "/" not in key:
                raise _not_a_repo(value)
            return key
        case ScopeType.WORKSPACE | ScopeType.PROJECT:
            return normalize_name(value)
        case ScopeType.AGENT:
            return value.strip().lower()
        case ScopeType.WORKSTREAM:
            # `<repo>#<branch>`: the repo part is a repo key; the branch keeps its case.
            repo, sep, branch = value.strip().partition("#")
            return f"{repo_key(repo)}#{branch}" if sep and repo.strip() else value.strip()
        case _:
            return value.strip()


class NeverApplies(ValueError):
    """A scope that reads as one, but that no place ever has: `workstream:REPO` with no
    branch, `workstream:#main` with no repo, `session:claude` with no session id. A
    memory written there would be told to no one, so writing one is refused; looking
    for one (`ken list --scope`, `ken forget --scope`) still finds what an older kenning
    stored there: `scope` is the scope as it was stored."""

    def __init__(self, message: str, scope: Scope) -> None:
        super().__init__(message)
        self.scope = scope


# An origin or a path where a workstream's name should be: a host with a dot and at
# least two path parts (`github.com/acme/shop`), a URL, `user@host:`, or a path.
_REPO_LIKE = re.compile(
    r"^(?:[/~]"  # a path
    r"|[a-z][a-z0-9+.-]*://"  # a URL
    r"|[^@/\s]+@[^:/\s]+:"  # git@host:
    r"|[^/\s]+\.[a-z]{2,}(?::\d+)?(?:/[^/]+){2,}/?$)",  # host.tld/org/name
    re.IGNORECASE,
)


def _never_applies(scope_type: ScopeType, value: str) -> str | None:
    """Why a scope with this (normalized) value can never apply anywhere, and what to
    write instead; None when it can. Detection names a branch's workstream
    `<repo>#<branch>` (KEN_WORKSTREAM any name, but not a repo's), and an agent's
    session `<agent>:<its session id>`: whatever shape the agent gives its ids."""
    never = "so it would never apply"
    match scope_type:
        case ScopeType.WORKSTREAM:
            repo, sep, branch = value.partition("#")
            if sep and not repo:
                return f"it names a branch and no repo, {never}: write workstream:REPO#{branch}"
            if sep and not branch:
                return f"it names no branch, {never}: write workstream:{repo}#BRANCH"
            if not sep and _REPO_LIKE.match(value):
                try:
                    repo = repo_key(value)
                except ValueError:
                    repo = value
                return f"it names a repo and no branch, {never}: write workstream:{repo}#BRANCH"
        case ScopeType.SESSION:
            agent, sep, session_id = value.partition(":")
            if not (sep and agent.strip() and session_id.strip()):
                return (
                    f"a session is its agent and the agent's id for it, {never}: write "
                    "session:AGENT:ID (`ken sessions` shows them)"
                )
        case _:
            pass
    return None


@dataclass(frozen=True, slots=True)
class Scope:
    """A place memory belongs to, written `type:value` (or just `global`).

    The value is everything after the first colon: it may hold spaces and colons (a
    path, `claude:<session id>`), so every scope written reads back as itself.

    A stored scope that no longer reads as one (written by hand, or under an older rule)
    is read as an unreadable scope: `unreadable` says why, `value` keeps the text as
    stored and `str()` gives it back. Its type is global, a scope no agent owns; it
    applies nowhere (packs and recall choose scopes by their text). Its memory can still
    be shown, listed and moved with `ken update ID --scope SCOPE`.
    """

    type: ScopeType
    value: str = ""
    unreadable: str = ""  # why the stored text does not read as a scope

    def __post_init__(self) -> None:
        if self.unreadable:
            return
        if (self.type is ScopeType.GLOBAL) == bool(self.value):
            raise ValueError(
                "global takes no name" if self.value else f"a {self.type.value} scope needs a name"
            )

    @classmethod
    def of(cls, scope_type: ScopeType, value: str, *, to_find: bool = False) -> Scope:
        """The scope for a value as given by a person, an env var or config: normalized
        (repo origins as keys, names trimmed and lowercased) and checked. One that can
        never apply raises NeverApplies, unless it is only looked for (`to_find`)."""
        if scope_type is ScopeType.GLOBAL:
            return cls(ScopeType.GLOBAL)
        name = scope_type.value
        if _CONTROL.search(value):
            raise ValueError(f"bad {name} name {value!r}: it holds a control character")
        clean = _normalize_value(scope_type, value)
        if not clean or clean == "#":
            raise ValueError(f"bad scope '{name}:{value}': the name after '{name}:' is empty")
        if scope_type is ScopeType.PROJECT and not PROJECT_NAME.match(clean):
            raise ValueError(
                f"bad project name '{value}': use letters, digits, '.', '_' and '-' "
                "(stored in lower case)"
            )
        limit = MAX_NAME if scope_type in (ScopeType.WORKSPACE, ScopeType.PROJECT) else None
        if len(clean) > (limit or MAX_SCOPE_VALUE):
            raise ValueError(
                f"bad scope '{name}:…': the name is over {limit or MAX_SCOPE_VALUE} characters"
            )
        never = None if to_find else _never_applies(scope_type, clean)
        if never:
            raise NeverApplies(
                f"bad scope '{name}:{value}': {never}",
                cls(scope_type, clean),
            )
        return cls(scope_type, clean)

    @classmethod
    def parse(cls, text: str, *, to_find: bool = False) -> Scope:
        """A scope a person typed (`repo:github.com/org/app`, `workspace:acme`, `global`);
        `to_find`: one only looked for, which may be one that never applies."""
        raw = text.strip()
        if raw == "global":
            return cls(ScopeType.GLOBAL)
        kind, sep, value = raw.partition(":")
        try:
            scope_type = ScopeType(kind)
        except ValueError:
            scope_type = None
        if not sep or scope_type is None or scope_type is ScopeType.GLOBAL:
            names = ", ".join(f"{t.value}:<name>" for t in SCOPE_ORDER[:-1])
            raise ValueError(
                f"bad scope '{text}': use global or one of {names} "
                "(a bare type, such as repo, means the one that applies here)"
            )
        return cls.of(scope_type, value, to_find=to_find)

    @classmethod
    def from_stored(cls, text: str) -> Scope:
        """A scope as the store holds it: exactly `str(scope)`, read back without change.
        Text that does not read as a scope reads as an unreadable one (never an error: the
        memory that holds it must stay readable to be moved)."""
        if text == "global":
            return cls(ScopeType.GLOBAL)
        kind, _, value = text.partition(":")
        try:
            scope_type = ScopeType(kind)
        except ValueError:
            return cls(ScopeType.GLOBAL, text, f"there is no scope type {kind!r}")
        try:
            return cls(scope_type, value)
        except ValueError as exc:
            return cls(ScopeType.GLOBAL, text, str(exc))

    def __str__(self) -> str:
        if self.unreadable:
            return self.value
        return "global" if self.type is ScopeType.GLOBAL else f"{self.type.value}:{self.value}"


@dataclass(frozen=True, slots=True)
class Link:
    """A typed link: file:, url:, item:, commit: or session: (a kenning session)."""

    type: str
    target: str

    @classmethod
    def parse(cls, text: str) -> Link:
        kind, sep, target = text.strip().partition(":")
        if sep and kind in LINK_TYPES and target:
            return cls(kind, target)
        if text.startswith(("http://", "https://")):
            return cls("url", text.strip())
        raise ValueError(
            f"bad link '{text}': write file:PATH, url:URL, item:ID, commit:SHA or session:ID"
        )

    def __str__(self) -> str:
        if self.type == "url":
            return self.target if "://" in self.target else f"url:{self.target}"
        return f"{self.type}:{self.target}"


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who wrote a memory, how, and where they were."""

    who: str = "user"  # user, ken, or the agent's name
    how: str = "cli"  # cli, mcp, hook, import, sync, curator, plan, summarizer
    model: str | None = None
    session: str | None = None
    cwd: str | None = None
    repo: str | None = None
    workspace: str | None = None
    workstream: str | None = None
    project: str | None = None
    commit: str | None = None
    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        known = {k: data[k] for k in cls.__slots__ if k in data and data[k] is not None}
        return cls(**{k: str(v) for k, v in known.items()})


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    title: str
    body: str = ""
    kind: Kind = Kind.NOTE
    scope: Scope = field(default_factory=lambda: Scope(ScopeType.GLOBAL))
    status: Status = Status.ACTIVE
    pinned: bool = False
    tags: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    evidence: str = ""
    provenance: Provenance = field(default_factory=Provenance)
    created_at: str = ""
    updated_at: str = ""
    reviewed_at: str | None = None
    expires_at: str | None = None
    use_count: int = 0
    last_used_at: str | None = None
    revision: str = ""
    dismiss_reason: str | None = None
    source: str | None = None  # set when a file (a project's decisions.md) is the truth
    archive_reason: str | None = None  # why it was archived: a person's words, or `cap`

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.body}" if self.body else self.title

    @property
    def idle_since(self) -> str:
        """Since when the memory has gone unused: its last use, or when a person last
        approved or restored it, or when it was written, whichever came last. A proposal
        that waited months before a person approved it has been in use since then."""
        return max(self.last_used_at or "", self.reviewed_at or "", self.created_at)

    @property
    def automatic_handoff(self) -> bool:
        """A handoff the hooks wrote when its session ended (its prompts, commits and
        diff), not one its agent wrote (memory_handoff)."""
        return self.kind is Kind.HANDOFF and self.provenance.how == "hook"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "short_id": short_id(self.id),
            "title": self.title,
            "body": self.body,
            "kind": self.kind.value,
            "scope": str(self.scope),
            "status": self.status.value,
            "pinned": self.pinned,
            "tags": list(self.tags),
            "links": [str(link) for link in self.links],
            "evidence": self.evidence,
            "provenance": self.provenance.to_dict(),
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "reviewed_at": self.reviewed_at,
            "expires_at": self.expires_at,
            "use_count": self.use_count,
            "last_used_at": self.last_used_at,
            "revision": self.revision,
            "dismiss_reason": self.dismiss_reason,
            "source": self.source,
            "archive_reason": self.archive_reason,
        }


@dataclass(frozen=True, slots=True)
class Revision:
    """One stored version of an item."""

    id: str
    item_id: str
    created_at: str
    title: str
    body: str
    kind: str
    scope: str
    status: str
    tags: tuple[str, ...]
    links: tuple[str, ...]
    evidence: str
    provenance: dict[str, Any]
    change: str  # what made this version: add, edit, approve, archive, ...

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "item_id": self.item_id,
            "created_at": self.created_at,
            "title": self.title,
            "body": self.body,
            "kind": self.kind,
            "scope": self.scope,
            "status": self.status,
            "tags": list(self.tags),
            "links": list(self.links),
            "evidence": self.evidence,
            "provenance": self.provenance,
            "change": self.change,
        }


SESSION_FIELDS = (
    "id",
    "agent",
    "model",
    "agent_session_id",
    "transcript_path",
    "repo",
    "cwd",
    "workspace",
    "workstream",
    "project",
    "started_at",
    "ended_at",
    "first_prompt",
    "last_prompt",
    "start_commit",
    "commits",
    "diff_stat",
    "continued_from",
    "pid",
    "end_reason",
    "prompt_count",
)


@dataclass(frozen=True, slots=True)
class Session:
    """One run of one agent (filled by the hooks)."""

    id: str
    agent: str
    agent_session_id: str | None = None
    model: str | None = None
    transcript_path: str | None = None
    repo: str | None = None
    cwd: str | None = None
    workspace: str | None = None
    workstream: str | None = None
    project: str | None = None
    started_at: str = ""
    ended_at: str | None = None
    first_prompt: str | None = None
    last_prompt: str | None = None
    start_commit: str | None = None
    commits: tuple[str, ...] = ()
    diff_stat: str | None = None
    continued_from: str | None = None
    pid: int | None = None
    end_reason: str | None = None
    prompt_count: int = 0

    def provenance(self, how: str) -> Provenance:
        """Provenance for something written on this session's behalf (its hooks, its
        summary, its log.md entry)."""
        return Provenance(
            who=self.agent,
            how=how,
            model=self.model,
            session=self.id,
            cwd=self.cwd,
            repo=self.repo,
            workspace=self.workspace,
            workstream=self.workstream,
            project=self.project,
        )

    @property
    def did_something(self) -> bool:
        """Its agent was prompted (kenning's own /remember and /recall are not prompts)
        or it made commits: a session worth a handoff and a line in a pack."""
        return bool(self.prompt_count or self.first_prompt or self.commits)

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in SESSION_FIELDS}
        data["commits"] = list(self.commits)
        return data
