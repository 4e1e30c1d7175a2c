"""A git repository as its files say: where it is, its origin, its branch, its repo key.

Read straight from the files rather than by running git: hooks call this on every
prompt, and spawning git costs more than the rest of the hook. The one exception is a
repository that keeps its refs in a reftable (git 2.45's opt-in, Git 3's default): its
`HEAD` file holds `ref: refs/heads/.invalid` whatever is checked out, so there git is
asked for the branch.

Found as git finds it: up from the folder to the first `.git` that is a git dir (a
folder holding a valid `HEAD`, `objects` and `refs`; an empty `.git` folder is passed
over), or a `.git` file (`gitdir: PATH`) naming one, such as a worktree's in its main
repository's `worktrees/` (a file naming none ends the search: git says "not a git
repository"), or a bare repository (a folder holding `HEAD`, `objects` and `refs`);
`GIT_DIR` (and `GIT_WORK_TREE`) in the environment decide instead when they are set.
Every clone and worktree of a repo maps to one key: its origin normalized
(`model.normalize_origin`), else its main checkout's path (for a bare repository or a
git dir kept apart, that folder itself).

The origin is what `git remote get-url origin` prints: the first `remote.origin.url`
from every config file git reads (`/etc/gitconfig`, `$XDG_CONFIG_HOME/git/config`,
`~/.gitconfig`, the repo's, a worktree's, and what they pull in with `[include]` and
`[includeIf]` on `gitdir:`, `onbranch:` and `hasconfig:remote.*.url:`), then from what
the environment gives (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`),
with the longest matching `url.<base>.insteadOf` applied. (`git remote get-url` knows
only a remote the repo's own config names; one named only elsewhere is what `git fetch`
uses, and kenning too.) A repo with
no remote named `origin` (the name is case-sensitive, as git reads it) but exactly one
other remote uses that one. An ssh alias in it (`git@github-work:acme/app.git`) is
replaced by the host it stands for (kenning.ssh). A local-path origin is resolved
against the main checkout (so every worktree agrees) and keyed as the repo at that path
is keyed: a clone of a local clone shares the first clone's key.

Each config file is parsed once per change (path, size, time and inode): the hook
server pays a `stat` per file for each prompt. Git is run only where the files cannot
say: the branch of a reftable repository, and so an `onbranch:` include there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from kenning import model, paths, ssh

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["GitInfo", "find_git", "repo_key"]

MAX_INCLUDE_DEPTH = 10  # git's own limit
# What one read of a repository's config follows, all told: git sets no limit beyond
# the depth, but a file that includes itself a thousand times, ten deep, would read for
# ever. A real setup follows a handful of includes of a few KiB each.
MAX_INCLUDES = 100
MAX_CONFIG_READ = 2 * 1024 * 1024  # bytes of config files read, each time one is read
MAX_SMALL_BYTES = 64 * 1024  # HEAD, a ref, a `.git` file, `commondir`: a line each
# packed-refs holds a line (about 60-100 bytes) per ref, and git maps it whole, at any
# size; this holds some 700,000 refs. Beyond it, the commit HEAD names is not known.
MAX_PACKED_REFS = 64 * 1024 * 1024
MAX_HOPS = 8  # local origins followed from repo to repo, at most
INVALID_HEAD = "ref: refs/heads/.invalid"  # what a reftable repository keeps in HEAD
_HAS_URL = "hasconfig:remote.*.url:"  # an include on the remotes' URLs

# One config entry: (section, subsection, key, value). Section and key are lowercase; the
# subsection is as written (`[remote "Origin"]` is not origin), None when there is none;
# the value is None for a key written alone (a boolean true).
Entry = tuple[str, str | None, str, str | None]

_SECTION = re.compile(r'\[([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)[ \t]*")
_HEX_HEAD = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}

_parsed: dict[str, tuple[tuple[int, int, int], list[Entry]]] = {}


@dataclass(frozen=True, slots=True)
class GitInfo:
    root: Path  # the working tree holding cwd (a bare repository: the repository)
    common_dir: Path  # the main repository's git folder
    origin: str | None  # the origin's URL as git reads it (insteadOf applied)
    branch: str | None  # None when HEAD is detached
    head: str | None  # the commit HEAD points at, when it can be read
    key: str  # the repo's scope key
    remote: str | None = None  # the remote `origin` came from: "origin", or the only one

    @property
    def path_key(self) -> str:
        """The repo's key were it without an origin (what it was before its first push)."""
        return _path_of(self.common_dir)


def find_git(start: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> GitInfo | None:
    """The git repository holding `start`, read from its files; None outside one. `env`
    may hold `GIT_DIR` and `GIT_WORK_TREE`, read as git reads them."""
    return _find(Path(paths.os_path(os.fspath(start))), env or {}, frozenset())


def repo_key(text: str) -> str:
    """The repo key for a repo as a person names it (after `repo:`, a config table's
    name), by the rule detection keys it: an origin in any form, rewritten by the global
    `url.<base>.insteadOf` and ssh's `HostName`, normalized; a path that exists is the key
    of the repo there (a subfolder, a symlink or `..` give the repo's key: its origin,
    when it has one); a path that does not is kept as written, so a removed checkout's
    memories can still be named. Raises ValueError for what names no repo."""
    key = model.repo_key(text)  # the checks, and the rule for text alone
    if key.startswith("/"):
        return _key_at(key, frozenset())
    value = text.strip()
    url = _rewrite(value, _global().rules)
    if url != value and _is_local(url):  # a shorthand for a local path
        path = _local_path(url)
        return _key_at(path, frozenset()) if os.path.isabs(path) else key
    return model.repo_key(_origin_key(url))


# --- finding the repository -----------------------------------------------------------


def _find(start: Path, env: Mapping[str, str], seen: frozenset[Path]) -> GitInfo | None:
    here = start.resolve()
    found = _from_env(here, env) if env.get("GIT_DIR") else _discover(here)
    if found is None:
        return None
    root, git_dir = found
    work_tree = env.get("GIT_WORK_TREE")
    if work_tree:
        root = (here / work_tree).resolve()
    return _read_repo(root, git_dir, seen)


def _discover(here: Path) -> tuple[Path, Path] | None:
    """(work tree, git dir) as git finds them walking up from `here`: a `.git` folder
    that is no git dir (an empty one) is passed over, as git passes it; a `.git` file that
    names no git dir ends the search, where git says "not a git repository"."""
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir() and _is_git_dir(dot_git):
            return folder, dot_git
        if dot_git.is_file():
            git_dir = _gitfile(dot_git)
            return None if git_dir is None else (folder, git_dir)
        if _is_git_dir(folder):  # a bare repository, or inside a .git folder
            return (folder.parent if folder.name == ".git" else folder), folder
    return None


def _gitfile(path: Path) -> Path | None:
    """The git dir a `.git` file names (`gitdir: PATH`, relative to the file's folder), as
    git reads it; None where git refuses it: another format, or a path that holds no git
    dir. A worktree's own git dir (`<main>/.git/worktrees/<name>`) that is gone because
    its main checkout moved or was removed is still given: it names where the repository
    was, which keys the worktree's memories (`_read_repo`)."""
    text = _read(path) or ""
    if not text.startswith("gitdir: "):
        return None
    git_dir = (path.parent / text[len("gitdir: ") :].rstrip("\r\n")).resolve()
    if _is_git_dir(git_dir):
        return git_dir
    gone = not git_dir.exists() and git_dir.parent.name == "worktrees"
    return git_dir if gone else None


def _from_env(here: Path, env: Mapping[str, str]) -> tuple[Path, Path] | None:
    """(work tree, git dir) from `GIT_DIR`, relative to the folder asked about; git
    takes that folder as the top of the work tree unless `GIT_WORK_TREE` says."""
    git_dir = (here / env["GIT_DIR"]).resolve()
    if git_dir.is_file():
        named = _gitfile(git_dir)
        if named is None:
            return None
        git_dir = named
    return (here, git_dir) if _is_git_dir(git_dir) else None


def _is_git_dir(folder: Path) -> bool:
    """Whether `folder` is a git dir, as git tells: a valid HEAD, and objects and refs in
    it or in the main repository its `commondir` names."""
    head = folder / "HEAD"
    if not head.is_file():
        return False
    common_text = _read(folder / "commondir")
    common = (folder / common_text.strip()) if common_text else folder
    if not ((common / "objects").is_dir() and (common / "refs").is_dir()):
        return False
    text = (_read(head) or "").strip()
    return text.startswith("ref: refs/") or _HEX_HEAD.match(text) is not None


def _read_repo(root: Path, git_dir: Path, seen: frozenset[Path]) -> GitInfo:
    if not git_dir.is_dir():
        # A worktree whose main checkout moved or was removed: its git dir named where the
        # repository was (`<main>/.git/worktrees/<name>`), which is what keys it.
        common_dir = git_dir.parent.parent if git_dir.parent.name == "worktrees" else git_dir
        return GitInfo(root, common_dir, None, None, None, _path_of(common_dir))
    common_text = _read(git_dir / "commondir")
    common_dir = (git_dir / common_text.strip()).resolve() if common_text else git_dir
    settings = _repo_settings(git_dir, common_dir)
    remote, origin = settings.origin()
    head_text = (_read(git_dir / "HEAD") or "").strip()
    branch = head = None
    if head_text == INVALID_HEAD or settings.ref_storage == "reftable":
        branch, head = _ask_git(git_dir)
        branch = branch or _rebasing(git_dir)
    elif head_text.startswith("ref:"):
        ref = head_text[4:].strip()
        branch = ref.removeprefix("refs/heads/")
        head = _resolve_ref(git_dir, ref) or _resolve_ref(common_dir, ref)
    elif head_text:
        head = head_text
        branch = _rebasing(git_dir)
    if origin is None:
        key = _path_of(common_dir)
    else:
        if _is_local(origin):
            origin = _local_path(origin, _main_top(root, git_dir, common_dir))
        key = _remote_key(origin, common_dir, seen)
    return GitInfo(root, common_dir, origin, branch, head, key, remote)


def _path_of(common_dir: Path) -> str:
    """A repository's key without an origin: the main checkout's path (the folder holding
    `.git`), or for a bare repository or a git dir kept apart (`--separate-git-dir`),
    that folder itself: its parent may hold others."""
    return paths.as_text(str(common_dir.parent if common_dir.name == ".git" else common_dir))


def _main_top(root: Path, git_dir: Path, common_dir: Path) -> Path:
    """The folder a relative origin (`../upstream`) is read against: the main checkout's
    top, so that every worktree of the repo reads it alike."""
    if common_dir.name == ".git":
        return common_dir.parent
    return root if git_dir == common_dir else common_dir


def _remote_key(origin: str, common_dir: Path, seen: frozenset[Path]) -> str:
    if not _is_local(origin):
        return _origin_key(origin)
    if common_dir in seen or len(seen) >= MAX_HOPS:  # `origin = .`, or a round of clones
        return model.normalize_origin(origin)
    if not os.path.isdir(origin) and os.path.isdir(origin + ".git"):
        origin += ".git"  # as git finds a local repository named without its `.git`
    return _key_at(origin, seen | {common_dir})


def _key_at(path: str, seen: frozenset[Path]) -> str:
    """What detection gives at `path`: the key of the repo holding it, the folder itself
    outside one, or, where nothing is there any more, the path as written."""
    if not os.path.isdir(path):
        return model.normalize_origin(path)
    found = _find(Path(path), {}, seen)
    return found.key if found is not None else str(Path(path).resolve())


def _origin_key(url: str) -> str:
    return model.normalize_origin(url, ssh_host=_ssh_host, aws_region=_aws_region)


def _is_local(url: str) -> bool:
    """Whether git reads `url` as a local path (a `file://` URL, or no `host:` before the
    first `/`), not a remote."""
    if url[:7].lower() == "file://":
        return True
    if "://" in url or url.startswith("codecommit:"):
        return False
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or 0 <= slash < colon


def _local_path(url: str, base: Path | None = None) -> str:
    """A local origin as a full path: `file://` taken off (escapes decoded), `~` made
    whole, a relative one read against `base`."""
    if url[:7].lower() == "file://":
        return model.normalize_origin(url)
    path = os.path.expanduser(url) if url.startswith("~") else url
    if base is not None and not os.path.isabs(path):
        path = os.path.normpath(os.path.join(base, path))
    return path


def _ssh_host(host: str) -> str:
    """The host an ssh alias stands for; the alias itself when ssh's config names no
    host for it, or names an address (the alias is the name people know the server by)."""
    name = ssh.host_name(host)
    if not name or _IPV4.match(name) or ":" in name:
        return host
    return name


def _aws_region(profile: str | None) -> str | None:
    """The region git-remote-codecommit uses for `profile`: AWS_DEFAULT_REGION or
    AWS_REGION, else the profile's `region` in ~/.aws/config (AWS_CONFIG_FILE)."""
    env = paths.environ()
    region = env.get("AWS_DEFAULT_REGION") or env.get("AWS_REGION")
    if region:
        return region
    name = profile or env.get("AWS_PROFILE") or "default"
    path = env.get("AWS_CONFIG_FILE") or os.path.join(paths.home(), ".aws", "config")
    wanted = "default" if name == "default" else f"profile {name}"
    section = None
    for raw in (_read(Path(path), paths.MAX_CONFIG_BYTES) or "").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = " ".join(line.strip("[]").split())
        elif section == wanted and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "region" and value.strip():
                return value.strip()
    return None


# --- refs -----------------------------------------------------------------------------


def _resolve_ref(common_dir: Path, ref: str) -> str | None:
    loose = _read(common_dir / ref)
    if loose:
        return loose.strip()
    packed = paths.read_file(str(common_dir / "packed-refs"), MAX_PACKED_REFS)
    if not packed:
        return None
    # `<commit> <ref>` a line: looked for in the bytes, no text made of the whole file.
    needle = b" " + ref.encode("utf-8", "surrogateescape")
    at = packed.find(needle)
    while at >= 0:
        end = at + len(needle)
        if end == len(packed) or packed[end] in b"\r\n":
            sha = packed[packed.rfind(b"\n", 0, at) + 1 : at].decode("ascii", "replace")
            if _HEX_HEAD.match(sha):
                return sha
        at = packed.find(needle, end)
    return None


def _rebasing(git_dir: Path) -> str | None:
    """The branch a rebase in progress is on (HEAD is detached meanwhile), else None."""
    for folder in ("rebase-merge", "rebase-apply"):
        name = (_read(git_dir / folder / "head-name") or "").strip()
        if name.startswith("refs/heads/"):
            return name.removeprefix("refs/heads/")
    return None


def _ask_git(git_dir: Path) -> tuple[str | None, str | None]:
    """(branch, commit) of a reftable repository, from git itself: its refs are not in
    files kenning reads. (None, None) when git cannot say (too old to read it)."""

    def ask(*args: str) -> str | None:
        return (run(f"--git-dir={git_dir}", *args) or "").strip() or None

    ref = ask("symbolic-ref", "-q", "HEAD")
    head = ask("rev-parse", "-q", "--verify", "HEAD")
    return (ref.removeprefix("refs/heads/") if ref else None), head


# --- config files ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Settings:
    """What kenning reads from a repository's config files, in git's order."""

    remotes: dict[str, str]  # name -> its first url
    rules: list[tuple[str, str]]  # (insteadOf prefix, base), in the order written
    ref_storage: str | None
    worktree_config: bool

    def origin(self) -> tuple[str | None, str | None]:
        """(remote name, URL as git reads it): `origin`, else the only remote there is."""
        if "origin" in self.remotes:
            name = "origin"
        elif len(self.remotes) == 1:
            name = next(iter(self.remotes))
        else:
            return None, None
        return name, _rewrite(self.remotes[name], self.rules)


def _settings(entries: list[Entry]) -> _Settings:
    remotes: dict[str, str] = {}
    rules: list[tuple[str, str]] = []
    ref_storage = None
    worktree_config = False
    for section, sub, key, value in entries:
        if section == "remote" and sub is not None and key == "url" and value:
            remotes.setdefault(sub, value)
        elif section == "url" and sub is not None and key == "insteadof" and value is not None:
            rules.append((value, sub))  # an empty one is a prefix of every URL
        elif section == "extensions" and sub is None and key == "refstorage":
            ref_storage = (value or "").lower()
        elif section == "extensions" and sub is None and key == "worktreeconfig":
            worktree_config = _true(value)
    return _Settings(remotes, rules, ref_storage, worktree_config)


def _rewrite(url: str, rules: list[tuple[str, str]]) -> str:
    """`url` with the longest `insteadOf` prefix that starts it replaced by its base (the
    first written, among equals), as git rewrites a remote's URL."""
    best: tuple[str, str] | None = None
    for prefix, base in rules:
        if url.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, base)
    return url if best is None else best[1] + url[len(best[0]) :]


def _repo_settings(git_dir: Path, common_dir: Path) -> _Settings:
    return _settings(_config(_Reader(git_dir), (*_user_files(), str(common_dir / "config"))))


def _global() -> _Settings:
    """The system and global config (no repository's): what a typed origin is read by."""
    return _settings(_config(_Reader(None), _user_files()))


class _Reader:
    """What an `[includeIf]` asks of the repository whose config is read: its git dir,
    the branch checked out there (read when a condition asks), and its remotes' URLs
    (once all of the config is read without the includes that ask for them)."""

    def __init__(self, git_dir: Path | None) -> None:
        self.git_dir = git_dir
        self.urls: list[str] | None = None  # None: not known yet
        self.asks_urls = False  # whether a `hasconfig:remote.*.url:` condition was seen
        self._branch: str | None = None
        self._branch_read = False
        self.includes = 0  # includes followed in this read (MAX_INCLUDES)
        self.read = 0  # bytes of config files read in this read (MAX_CONFIG_READ)

    def branch(self) -> str | None:
        """The branch HEAD names, as git's `onbranch:` reads it (None when detached)."""
        if not self._branch_read and self.git_dir is not None:
            self._branch_read = True
            head = (_read(self.git_dir / "HEAD") or "").strip()
            if head == INVALID_HEAD:  # a reftable repository: only git can say
                head = "ref: refs/heads/" + (_ask_git(self.git_dir)[0] or "")
            if head.startswith("ref:"):
                ref = head[4:].strip()
                if ref.startswith("refs/heads/") and len(ref) > len("refs/heads/"):
                    self._branch = ref.removeprefix("refs/heads/")
        return self._branch


def _config(reader: _Reader, files: Sequence[str]) -> list[Entry]:
    """Every entry git reads for a repository (or none, `reader.git_dir` None) in its
    order: the files, a worktree's own (`extensions.worktreeConfig`), then what the
    environment gives (GIT_CONFIG_COUNT). A `hasconfig:remote.*.url:` include is
    decided by the URLs of all of that read without such includes (git refuses a URL in
    a file they pull in), so the config is read again when one is there."""
    entries = _config_once(reader, files)
    if reader.asks_urls:
        reader.urls = [
            value
            for section, sub, key, value in entries
            if section == "remote" and sub is not None and key == "url" and value is not None
        ]
        entries = _config_once(reader, files)
    return entries


def _config_once(reader: _Reader, files: Sequence[str]) -> list[Entry]:
    entries: list[Entry] = []
    reader.includes = reader.read = 0
    for path in files:
        _load(path, reader, entries, 0)
    if reader.git_dir is not None and _settings(entries).worktree_config:
        _load(str(reader.git_dir / "config.worktree"), reader, entries, 0)
    _follow(_env_entries(paths.environ()), None, reader, entries, 0, False)
    return entries


def _env_entries(env: Mapping[str, str]) -> list[Entry]:
    """The entries `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>` and `GIT_CONFIG_VALUE_<n>`
    give (git reads them after every file). git refuses to run with a count or a key it
    cannot read: then they give nothing here."""
    text = env.get("GIT_CONFIG_COUNT", "").strip()
    if not text:
        return []
    try:
        count = int(text)
    except ValueError:
        return []
    out: list[Entry] = []
    for n in range(max(count, 0)):
        name, value = env.get(f"GIT_CONFIG_KEY_{n}"), env.get(f"GIT_CONFIG_VALUE_{n}")
        if not name or value is None or "." not in name:
            return []
        section, _, rest = name.partition(".")
        sub, dot, key = rest.rpartition(".")
        out.append((section.lower(), sub if dot else None, key.lower(), value))
    return out


def _user_files() -> list[str]:
    """The system and global config files, in the order git reads them."""
    env = paths.environ()
    files = []
    if not _true(env.get("GIT_CONFIG_NOSYSTEM", "false")):
        files.append(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if "GIT_CONFIG_GLOBAL" in env:
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        home = paths.home()
        xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
        files += [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    return [f for f in files if f]


def _load(path: str, reader: _Reader, out: list[Entry], depth: int, by_url: bool = False) -> None:
    """The entries of the config file at `path`, each include followed where it stands;
    `by_url`: pulled in by a `hasconfig:remote.*.url:` include. Nothing once this read
    has read MAX_CONFIG_READ bytes (the rest is taken as missing, and told)."""
    if reader.read >= MAX_CONFIG_READ:
        paths.refuse(path, f"the config read before it passed {MAX_CONFIG_READ // 1024} KiB")
        return
    entries = _entries(path)
    kept = _parsed.get(path)
    reader.read += kept[0][1] if kept is not None else 0
    _follow(entries, path, reader, out, depth, by_url)


def _follow(
    entries: list[Entry],
    including: str | None,
    reader: _Reader,
    out: list[Entry],
    depth: int,
    by_url: bool,
) -> None:
    """`entries` into `out`, each include followed where it stands. `including`: the
    file they come from (None: the environment, where only a full path or one from `~`
    is an include, as git allows)."""
    for entry in entries:
        section, sub, key, value = entry
        if by_url and section == "remote" and key == "url":
            continue  # git refuses a URL there, and reads nothing of it
        out.append(entry)
        if key != "path" or not value or depth >= MAX_INCLUDE_DEPTH:
            continue
        if section == "include" and sub is None:
            asked_urls = False
        elif section == "includeif" and sub is not None:
            asked_urls = sub.startswith(_HAS_URL)
            if not _condition(sub, including, reader):
                continue
        else:
            continue
        target = _include_path(value, including)
        if target is None:
            continue
        if reader.includes >= MAX_INCLUDES:
            paths.refuse(target, f"the config had followed {MAX_INCLUDES} includes before it")
            continue
        reader.includes += 1
        _load(target, reader, out, depth + 1, by_url or asked_urls)


def _include_path(value: str, including: str | None) -> str | None:
    if value.startswith("~/") or value == "~":
        return paths.home() + value[1:]
    if including is None:
        return value if os.path.isabs(value) else None
    return os.path.join(os.path.dirname(including), value)


def _condition(condition: str, including: str | None, reader: _Reader) -> bool:
    """Whether an `[includeIf "..."]` holds, as git decides it: `gitdir:` and
    `gitdir/i:` (the repository's git dir), `onbranch:` (the branch checked out) and
    `hasconfig:remote.*.url:` (any remote's URL as written); anything else does not."""
    if condition.startswith(_HAS_URL):
        reader.asks_urls = True
        pattern = condition[len(_HAS_URL) :]
        regex = re.compile(_wildmatch(pattern))
        return any(regex.fullmatch(url) for url in reader.urls or ())
    kind, _, pattern = condition.partition(":")
    if kind == "onbranch":
        branch = reader.branch()
        if branch is None or not pattern:
            return False
        if pattern.endswith("/"):
            pattern += "**"
        return re.fullmatch(_wildmatch(pattern), branch) is not None
    if kind not in ("gitdir", "gitdir/i") or reader.git_dir is None:
        return False
    fold = kind == "gitdir/i"
    if pattern.startswith("~/"):
        pattern = paths.home() + pattern[1:]
    elif pattern.startswith("./"):
        if including is None:
            return False  # git: relative to a file, which the environment is not
        pattern = os.path.dirname(including) + pattern[1:]
    if not pattern.startswith("/"):
        pattern = "**/" + pattern
    if pattern.endswith("/"):
        pattern += "**"
    regex = re.compile(_wildmatch(pattern), re.IGNORECASE if fold else 0)
    git_dir = reader.git_dir
    return any(regex.fullmatch(text) for text in {str(git_dir), os.path.realpath(git_dir)})


def _wildmatch(pattern: str) -> str:
    """git's wildmatch with WM_PATHNAME as a regex: `*` and `?` stop at `/`, `**/` is any
    number of folders, a trailing `/**` everything inside."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _entries(path: str) -> list[Entry]:
    return paths.read_parsed(path, parse_config, _parsed, [])


def parse_config(text: str) -> list[Entry]:
    """A git config file's entries, read as git reads them: sections (`[remote "x"]`,
    the older `[remote.x]`, whose name git lowercases), `key = value` or a key alone,
    values with quotes, escapes (`\\t`, `\\n`, `\\"`, `\\\\`), `\\` continuing a line,
    and comments after `;` or `#`. Reading stops where git would report an error."""
    out: list[Entry] = []
    section: str | None = None
    subsection: str | None = None
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        rest = lines[i].lstrip()
        i += 1
        while rest and rest[0] not in "#;":
            if rest[0] == "[":
                match = _SECTION.match(rest)
                if match is None:
                    return out
                name, quoted = match.group(1).lower(), match.group(2)
                if quoted is not None:
                    section, subsection = name, re.sub(r"\\(.)", r"\1", quoted)
                elif "." in name:
                    section, subsection = name.split(".", 1)
                else:
                    section, subsection = name, None
                rest = rest[match.end() :].lstrip()
                continue
            match = _KEY.match(rest)
            if match is None or section is None:
                return out
            key = match.group(1).lower()
            rest = rest[match.end() :]
            if not rest or rest[0] in "#;\r\n":
                out.append((section, subsection, key, None))
            elif rest[0] != "=":
                return out
            else:
                value, i = _value(rest[1:], lines, i)
                if value is None:
                    return out
                out.append((section, subsection, key, value))
            break
    return out


def _value(text: str, lines: list[str], i: int) -> tuple[str | None, int]:
    """A config value from `text` on, taking in the lines a trailing `\\` continues it
    to: (value, index of the next line). The value is None when git would refuse it (an
    open quote, an unknown escape)."""
    out: list[str] = []
    quoted = False
    spaces = 0
    while True:
        j, n = 0, len(text)
        continued = False
        while j < n:
            char = text[j]
            j += 1
            if char.isspace() and not quoted:
                if out:
                    spaces += 1
                continue
            if not quoted and char in ";#":
                return "".join(out), i
            if spaces:
                out.append(" " * spaces)
                spaces = 0
            if char == "\\":
                if j == n:
                    continued = True
                    break
                escaped = _ESCAPES.get(text[j])
                if escaped is None:
                    return None, i
                out.append(escaped)
                j += 1
            elif char == '"':
                quoted = not quoted
            else:
                out.append(char)
        if not continued:
            return (None if quoted else "".join(out)), i
        if i >= len(lines):
            return "".join(out), i
        text = lines[i]
        i += 1


def _true(value: str | None) -> bool:
    return value is None or value.strip().lower() in ("true", "yes", "on", "1")


def _read(path: Path, cap: int = MAX_SMALL_BYTES) -> str | None:
    """The text of the file at `path`, read as `paths.read_file` reads it (a FIFO, a
    device or more than `cap` bytes is not read); None when it is not."""
    data = paths.read_file(str(path), cap)
    return None if data is None else data.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class Output:
    """What a git command gave: what it printed, or (text None) why it gave nothing."""

    text: str | None
    problem: str | None = None  # "git not found", "git timed out after 5s", git's own error
    ran: bool = True  # False: git could not be run at all (not found, timed out)

    def unknown(self, what: str) -> str:
        """`<problem>: <what> unknown`, for a report that must not read as "none"."""
        return f"{self.problem or 'git failed'}: {what} unknown"


def run(*args: str, cwd: str | None = None, timeout: float = 5) -> str | None:
    """What `git ARGS` prints; None when it fails or cannot run. Only where the files
    cannot say (a reftable repository, a session's commits and diff, a handoff's commit
    subjects): the hook path reads git's files itself."""
    return call(*args, cwd=cwd, timeout=timeout).text


def call(*args: str, cwd: str | None = None, timeout: float = 5) -> Output:
    """`git ARGS` run, as `run`, with why it printed nothing when it did not: a report of
    git's answer (the uncommitted change, the commits since) says "unknown" and why, not
    "none", when git is not on PATH."""
    import subprocess  # not on the hook path

    try:
        done = subprocess.run(
            ["git", *args],
            cwd=None if cwd is None else paths.os_path(cwd),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=paths.served_env(),  # a served hook's own PATH and HOME
        )
    except FileNotFoundError as exc:
        if exc.filename == "git":  # not a missing `cwd`
            return Output(None, "git not found", ran=False)
        return Output(None, f"git could not run: {exc}", ran=False)
    except subprocess.TimeoutExpired:
        return Output(None, f"git timed out after {timeout:g}s", ran=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return Output(None, f"git could not run: {exc}", ran=False)
    if done.returncode == 0:
        return Output(done.stdout)
    said = (done.stderr or "").strip().splitlines()
    return Output(None, said[-1].removeprefix("fatal: ") if said else "git failed")
