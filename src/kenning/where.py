"""Which scopes apply where you are.

The repo, branch and origin are read straight from the `.git` files rather than by
running git: hooks call this on every prompt, and spawning git costs more than the
rest of the hook. Worktrees (a `.git` file pointing into the main repository) share
the main repository's config, so every clone and worktree of a repo maps to one key:
its normalized origin, or the main checkout's path when there is no origin.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kenning.model import Provenance, Scope, ScopeType


@dataclass(frozen=True, slots=True)
class GitInfo:
    root: Path  # the working tree holding cwd
    common_dir: Path  # the main repository's .git folder
    origin: str | None  # remote.origin.url as written
    branch: str | None  # None when HEAD is detached
    head: str | None  # the commit HEAD points at, when it can be read

    @property
    def key(self) -> str:
        """The repo's scope key: normalized origin, else the main checkout's path."""
        if self.origin:
            return normalize_origin(self.origin)
        return str(self.common_dir.parent)


@dataclass(frozen=True, slots=True)
class Where:
    cwd: str
    git: GitInfo | None
    repo: str | None
    workstream: str | None
    project: str | None
    workspace: str | None
    agent: str | None
    session: str | None
    scopes: tuple[Scope, ...]
    reasons: dict[str, str] = field(default_factory=dict)

    def provenance(
        self, who: str, how: str, *, model: str | None = None, session: str | None = None
    ) -> Provenance:
        """Provenance for something written from here."""
        return Provenance(
            who=who,
            how=how,
            model=model,
            session=session,
            cwd=self.cwd,
            repo=self.repo,
            workspace=self.workspace,
            workstream=self.workstream,
            project=self.project,
            commit=self.git.head if self.git else None,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "cwd": self.cwd,
            "repo": self.repo,
            "repo_root": str(self.git.root) if self.git else None,
            "branch": self.git.branch if self.git else None,
            "workstream": self.workstream,
            "project": self.project,
            "workspace": self.workspace,
            "agent": self.agent,
            "session": self.session,
            "scopes": [{"scope": str(s), "why": self.reasons.get(str(s), "")} for s in self.scopes],
        }


_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")


def normalize_origin(url: str) -> str:
    """`git@github.com:Org/App.git` and `https://u@github.com/org/app` → `github.com/org/app`."""
    text = url.strip()
    if "://" in text:
        rest = text.split("://", 1)[1]
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1]
        host = host.split(":", 1)[0] if not text.startswith("file://") else host
        if text.startswith("file://"):
            return ("/" + path).rstrip("/").removesuffix(".git").lower()
    else:
        match = _SCP.match(text)
        if not match:
            return text.rstrip("/").removesuffix(".git").lower()
        host, path = match.group(1), match.group(2)
    path = path.strip("/").removesuffix(".git").rstrip("/")
    return f"{host}/{path}".lower()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _origin_from_config(text: str) -> str | None:
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").replace(" ", "").lower()
            continue
        if section == 'remote"origin"' and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "url":
                return value.strip().strip('"')
    return None


def _resolve_ref(common_dir: Path, ref: str) -> str | None:
    loose = _read(common_dir / ref)
    if loose:
        return loose.strip()
    packed = _read(common_dir / "packed-refs") or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref:
            return sha.strip()
    return None


def find_git(start: str | os.PathLike[str]) -> GitInfo | None:
    """The git repository holding `start`, read from its files; None outside one."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            text = _read(dot_git) or ""
            if not text.startswith("gitdir:"):
                return None
            git_dir = (folder / text.split(":", 1)[1].strip()).resolve()
        else:
            continue
        common_text = _read(git_dir / "commondir")
        common_dir = (git_dir / common_text.strip()).resolve() if common_text else git_dir
        origin = _origin_from_config(_read(common_dir / "config") or "")
        head_text = (_read(git_dir / "HEAD") or "").strip()
        branch = head = None
        if head_text.startswith("ref:"):
            ref = head_text[4:].strip()
            branch = ref.removeprefix("refs/heads/")
            head = _resolve_ref(git_dir, ref) or _resolve_ref(common_dir, ref)
        elif head_text:
            head = head_text
        return GitInfo(folder, common_dir, origin, branch, head)
    return None


def detect(
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    agent: str | None = None,
    session: str | None = None,
    workspaces: Mapping[str, object] | None = None,
    projects: Mapping[str, str] | None = None,
    project_repos: Mapping[str, str] | None = None,
) -> Where:
    """The scopes that apply in `cwd`, most specific first, each with why.

    `workspaces` maps a workspace name to a folder or list of folders (config
    `[workspaces]`); `projects` maps a project slug to its folder, `project_repos` to the
    repo it was added from (a project applies anywhere in that repo).
    """
    env = os.environ if env is None else env
    here = str(Path(cwd or os.getcwd()).resolve())
    git = find_git(here)
    scopes: list[Scope] = []
    reasons: dict[str, str] = {}

    def add(scope: Scope, why: str) -> None:
        scopes.append(scope)
        reasons[str(scope)] = why

    if session:
        add(Scope(ScopeType.SESSION, session), "this agent session")
    repo = git.key if git else None
    workstream = None
    if env.get("KEN_WORKSTREAM"):
        workstream = env["KEN_WORKSTREAM"]
        add(Scope(ScopeType.WORKSTREAM, workstream), "KEN_WORKSTREAM is set")
    elif git and git.branch:
        workstream = f"{repo}#{git.branch}"
        add(Scope(ScopeType.WORKSTREAM, workstream), f"branch {git.branch} of this repo")
    project = None
    if env.get("KEN_PROJECT"):
        project = env["KEN_PROJECT"]
        add(Scope(ScopeType.PROJECT, project), "KEN_PROJECT is set")
    else:
        for slug, folder in sorted((projects or {}).items()):
            if _inside(here, folder):
                project = slug
                add(Scope(ScopeType.PROJECT, slug), f"inside the project folder {folder}")
                break
        else:
            for slug, origin in sorted((project_repos or {}).items()):
                if repo and origin == repo:
                    project = slug
                    add(Scope(ScopeType.PROJECT, slug), f"in {repo}, which it was added from")
                    break
    workspace = None
    if env.get("KEN_WORKSPACE"):
        workspace = env["KEN_WORKSPACE"]
        add(Scope(ScopeType.WORKSPACE, workspace), "KEN_WORKSPACE is set")
    else:
        for name, folders in sorted((workspaces or {}).items()):
            paths = [folders] if isinstance(folders, str) else list(folders or [])  # type: ignore[call-overload]
            hit = next((f for f in paths if _inside(here, str(f))), None)
            if hit:
                workspace = name
                add(Scope(ScopeType.WORKSPACE, name), f"inside {hit} (config workspaces)")
                break
    if git and repo:
        why = "git origin of this repo" if git.origin else "this repo has no origin: its path"
        add(Scope(ScopeType.REPO, repo), why)
    if agent:
        add(Scope(ScopeType.AGENT, agent), f"running inside {agent}")
    add(Scope(ScopeType.GLOBAL), "everywhere")
    return Where(
        here, git, repo, workstream, project, workspace, agent, session, tuple(scopes), reasons
    )


def _inside(path: str, folder: str) -> bool:
    try:
        base = str(Path(folder).expanduser().resolve())
    except OSError:
        return False
    return path == base or path.startswith(base.rstrip("/") + "/")
