"""Which scopes apply where you are.

The repo, branch and origin come from kenning.git, which reads the `.git` files rather
than running git: hooks call this on every prompt. Every clone and worktree of a repo
maps to one key: its normalized origin, or the main checkout's path when there is none.

A branch whose name holds a secret (`fix-ghp_...`, a token pasted into `git checkout
-b`) gives no workstream, as a detached HEAD gives none: a scope's name is a key, stored
as written in every memory, session and count made under it, and a secret is never
stored, nor redacted in a key (two names redacted to one marker would merge their
scopes). This is decided here, where the workstream is derived, so every face follows:
writes fall back to the next scope, a bare `workstream` is refused saying why, hooks
record none, `ken where` shows the name redacted. A scope named by a setting
(KEN_WORKSTREAM, KEN_PROJECT, KEN_WORKSPACE, config) that holds a secret is refused,
as a malformed one is. The redactor judges each name; as loading it is most of what a
SessionStart hook in its own process would pay, the names it found clean are kept in
the state folder (`clean-names`, one a line), and a name judged before is not judged
again.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kenning import paths as paths_mod
from kenning.errors import InvalidInput
from kenning.git import GitInfo, find_git
from kenning.model import Provenance, Scope, ScopeType, normalize_origin

__all__ = ["GitInfo", "Where", "detect", "find_git", "normalize_origin"]

# What a bare scope name says when none of that type applies here.
NONE_HERE = {
    ScopeType.SESSION: "no session here: only an agent's hooks and MCP server know their "
    "session; name one as session:<agent>:<id>",
    ScopeType.WORKSTREAM: "no workstream here: this folder is not on a git branch and "
    "KEN_WORKSTREAM is not set",
    ScopeType.PROJECT: "no project here: register this folder with `ken project add` or set "
    "KEN_PROJECT",
    ScopeType.WORKSPACE: "no workspace here: map this folder under [workspaces] in config.toml "
    "or set KEN_WORKSPACE",
    ScopeType.REPO: "no repo here: this folder is not in a git repository",
    ScopeType.AGENT: "no agent here: ken is not running inside an agent's shell (KEN_AGENT "
    "names one)",
}

# Branch and scope names the redactor found clean, kept for the next process (see the
# docstring).
CLEAN_NAMES = "clean-names"
MAX_CLEAN_NAMES = 256  # then the file starts again
_clean_read: dict[str, tuple[tuple[int, int, int], frozenset[str]]] = {}

# What to do about a branch whose name holds a secret (`Where.no_workstream`).
SECRET_BRANCH = (
    "a scope's name is a key kenning stores as written, so the branch gives no workstream; "
    "rename it (git branch -m NEW) to have one"
)

# Why a scope a setting names is shared here: it belongs to another repo or folder.
SHARED_HERE = " (it belongs elsewhere: a shared scope here, as another place's)"


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
    # Scopes that apply here by a setting (KEN_WORKSTREAM, KEN_PROJECT) but belong to
    # another place: another repo's branch, a project of another folder. They are no
    # agent's own working scopes here (`policy.Actor.working_in`).
    elsewhere: tuple[Scope, ...] = ()
    # The repo the project here was added from (`ken project add` in a repo), if any.
    project_repo: str | None = None
    # Why the branch here gives no workstream: its name holds a secret (shown redacted,
    # with the kinds); None otherwise.
    no_workstream: str | None = None
    branch_shown: str | None = None  # the branch's name, redacted when it holds a secret
    # The kinds of secret in the origin's key when that keeps the origin from keying the
    # repo (its path keys it then); None otherwise.
    origin_secret: str | None = None

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

    def scope(self, text: str, *, to_find: bool = False) -> Scope:
        """A scope as typed: a bare `repo`, `workspace`, `workstream`, `project`, `session`
        or `agent` is the one that applies here; anything else is parsed as written
        (`to_find`: one looked for, which may be one that never applies)."""
        name = text.strip().lower()
        if name in NONE_HERE:
            found = next((s for s in self.scopes if s.type.value == name), None)
            if found is None and name == ScopeType.WORKSTREAM.value and self.no_workstream:
                raise InvalidInput(f"no workstream here: {self.no_workstream}, and {SECRET_BRANCH}")
            if found is None:
                raise InvalidInput(NONE_HERE[ScopeType(name)])
            return found
        from kenning import items  # not on the hook path's way in

        return items.parse_scope(text, to_find=to_find)

    def to_dict(self) -> dict[str, object]:
        return {
            "cwd": self.cwd,
            "repo": self.repo,
            "repo_root": paths_mod.as_text(str(self.git.root)) if self.git else None,
            "branch": self.branch_shown,
            "workstream": self.workstream,
            "no_workstream": self.no_workstream,
            "project": self.project,
            "workspace": self.workspace,
            "agent": self.agent,
            "session": self.session,
            "scopes": [{"scope": str(s), "why": self.reasons.get(str(s), "")} for s in self.scopes],
        }


def _main_checkout(git: GitInfo | None) -> str | None:
    """The main checkout of a linked worktree (the folder holding the common .git),
    when `git` is one; else None."""
    if git is None or git.common_dir.name != ".git":
        return None
    main = git.common_dir.parent
    return str(main) if main != git.root else None


FOLDER_GONE = "the current folder no longer exists: cd to one that does"


def current_folder() -> str:
    """This process's folder; InvalidInput, saying so, once it was deleted (a server
    started in it keeps running)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise InvalidInput(FOLDER_GONE) from None


def detect(
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    agent: str | None = None,
    session: str | None = None,
    workspaces: Mapping[str, object] | None = None,
    projects: Mapping[str, str] | None = None,
    project_repos: Mapping[str, str] | None = None,
    workspace_setting: str = "",
    team: tuple[str, Collection[str]] | None = None,
) -> Where:
    """The scopes that apply in `cwd`, most specific first, each with why.

    `workspace_setting` is config's `workspace`, below KEN_WORKSPACE and above
    `[workspaces]`. `team` is the workspace of the team this host joined and the repos
    it covers: in one of those repos, with no workspace named otherwise, the team's
    workspace applies (its team memory reaches the agents there).

    `workspaces` maps a workspace name to a folder or list of folders (config
    `[workspaces]`); `projects` maps a project slug to its folder, `project_repos` to the
    repo it was added from (a project applies anywhere in that repo).
    """
    env = paths_mod.environ() if env is None else env
    try:
        # The folder by the name the OS knows; kept, shown and keyed as text (`cwd`).
        here = str(Path(paths_mod.os_path(os.fspath(cwd or current_folder()))).resolve())
    except FileNotFoundError:
        raise InvalidInput(FOLDER_GONE) from None
    git = find_git(here, env)
    scopes: list[Scope] = []
    reasons: dict[str, str] = {}

    def add(scope: Scope, why: str) -> None:
        scopes.append(scope)
        reasons[str(scope)] = why

    if session:
        add(Scope(ScopeType.SESSION, session), "this agent session")
    repo = git.key if git else None
    # An origin holding a secret (a token pasted into the remote's URL) keys no repo: a
    # scope's name is stored as written, so the repo is keyed by its path instead.
    secret_origin = _secret_in(repo) if git and repo and repo != git.path_key else None
    if git and secret_origin is not None:
        repo = git.path_key
    workstream = None
    branch = git.branch if git else None
    hidden = _secret_in(branch) if branch else None
    elsewhere: list[Scope] = []
    if env.get("KEN_WORKSTREAM", "").strip():
        scope = _from_setting(ScopeType.WORKSTREAM, env["KEN_WORKSTREAM"], "KEN_WORKSTREAM")
        workstream = scope.value
        # A branch of another repo (`<repo>#<branch>`); a name with no repo in it is the
        # line of work the person named for this place.
        if "#" in workstream and workstream.rpartition("#")[0] != repo:
            elsewhere.append(scope)
        add(scope, "KEN_WORKSTREAM is set" + (SHARED_HERE if elsewhere else ""))
    elif branch and hidden is None:
        workstream = f"{repo}#{branch}"
        add(Scope(ScopeType.WORKSTREAM, workstream), f"branch {branch} of this repo")
    no_workstream = None
    if hidden is not None and workstream is None:
        no_workstream = f"the branch name '{hidden[0]}' holds a secret ({hidden[1]})"
    project = None
    if env.get("KEN_PROJECT", "").strip():
        scope = _from_setting(ScopeType.PROJECT, env["KEN_PROJECT"], "KEN_PROJECT")
        project = scope.value
        folder = (projects or {}).get(project)
        from_repo = (project_repos or {}).get(project)
        # A project registered for another folder (and not added from this repo) is that
        # folder's; a name no one registered is the line of work named for this place.
        if folder and not (_inside(here, folder) or (repo and from_repo == repo)):
            elsewhere.append(scope)
        add(scope, "KEN_PROJECT is set" + (SHARED_HERE if scope in elsewhere else ""))
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
    if env.get("KEN_WORKSPACE", "").strip():
        scope = _from_setting(ScopeType.WORKSPACE, env["KEN_WORKSPACE"], "KEN_WORKSPACE")
        workspace = scope.value
        add(scope, "KEN_WORKSPACE is set")
    elif workspace_setting.strip():
        scope = _from_setting(ScopeType.WORKSPACE, workspace_setting, "workspace setting")
        workspace = scope.value
        add(scope, "the workspace setting (ken config get workspace)")
    else:
        for name, folders in sorted((workspaces or {}).items()):
            if isinstance(folders, str):
                paths = [folders]
            elif isinstance(folders, list):
                paths = [str(f) for f in folders]
            else:
                continue  # not a folder or a list of them: `ken doctor` reports it
            hit = next((f for f in paths if _inside(here, str(f))), None)
            why = f"inside {hit} (config workspaces)"
            main = _main_checkout(git)
            if not hit and main is not None:
                # A worktree made elsewhere belongs where its repo's main checkout is, as
                # a project added from the repo applies in its worktrees.
                hit = next((f for f in paths if _inside(main, str(f))), None)
                why = f"a worktree of {paths_mod.as_text(main)}, inside {hit} (config workspaces)"
            if hit:
                scope = _from_setting(ScopeType.WORKSPACE, name, f"[workspaces] {name!r}")
                workspace = scope.value
                add(scope, why)
                break
    if workspace is None and team is not None and repo and repo in team[1]:
        try:
            scope = _from_setting(ScopeType.WORKSPACE, team[0], "the team's workspace")
        except InvalidInput:
            pass  # a name no scope may have: `ken team status` shows the membership
        else:
            workspace = scope.value
            add(scope, f"this repo is one the team covers (ken team join, workspace {scope.value})")
    if git and repo:
        if secret_origin is not None:
            why = f"this repo's origin holds a secret ({secret_origin[1]}): its path"
        elif git.remote == "origin":
            why = "git origin of this repo"
        elif git.remote:
            why = f"git remote {git.remote} of this repo (its only remote; none is named origin)"
        else:
            why = "this repo has no origin: its path"
        add(Scope(ScopeType.REPO, repo), why)
    if agent:
        add(Scope(ScopeType.AGENT, agent), f"running inside {agent}")
    add(Scope(ScopeType.GLOBAL), "everywhere")
    return Where(
        paths_mod.as_text(here),
        git,
        repo,
        workstream,
        project,
        workspace,
        agent,
        session,
        tuple(scopes),
        reasons,
        tuple(elsewhere),
        (project_repos or {}).get(project) if project else None,
        no_workstream,
        hidden[0] if hidden else branch,
        origin_secret=secret_origin[1] if secret_origin else None,
    )


def _secret_in(name: str) -> tuple[str, str] | None:
    """A branch's or a scope's name redacted and the kinds of secret in it, when it
    holds one; None when it is clean (as judged before, or now by the redactor)."""
    kept = os.path.join(paths_mod.state_dir(), CLEAN_NAMES)
    if name in paths_mod.read_parsed(kept, _names, _clean_read, frozenset()):
        return None
    from kenning.redact import redact  # only for a name not judged before

    found = redact(name)
    if found.kinds:
        return found.text, ", ".join(found.kinds)
    _keep_clean(kept, name)
    return None


def _names(text: str) -> frozenset[str]:
    return frozenset(text.splitlines())


def _keep_clean(path: str, name: str) -> None:
    """Add a clean name to the file at `path`; best effort: a state folder that cannot
    be written only means the name is judged again next time."""
    if not name.isprintable():
        return  # a line of its own, always
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if len(paths_mod.read_parsed(path, _names, _clean_read, frozenset())) >= MAX_CLEAN_NAMES:
            os.unlink(path)  # start again: the names in use come back one by one
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:  # one small write in append mode: whole, whoever else appends
            os.write(fd, (name + "\n").encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
    except OSError:
        pass


def _from_setting(scope_type: ScopeType, value: str, source: str) -> Scope:
    """A scope named by an env var or config, by the same rule as `--scope`: one whose
    name holds a secret is refused (`items.parse_scope`)."""
    try:
        scope = Scope.of(scope_type, value)
    except ValueError as exc:
        raise InvalidInput(f"{source}: {exc}") from None
    if (hidden := _secret_in(scope.value)) is not None:
        raise InvalidInput(
            f"{source}: the name '{hidden[0]}' holds a secret ({hidden[1]}); a scope's name "
            "is a key kenning stores as written, so name it without"
        )
    return scope


def _inside(path: str, folder: str) -> bool:
    if not paths_mod.is_full_path(folder):
        return False  # a relative folder names no place (`ken doctor` reports it)
    try:
        base = str(Path(paths_mod.os_path(folder)).expanduser().resolve())
    except OSError:
        return False
    return path == base or path.startswith(base.rstrip("/") + "/")
