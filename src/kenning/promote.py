"""Promote approved memories into a steering repo, as Markdown on a branch for review.

`promote` takes the top of the ranked approved batch (`kenning.rank`: active memories a
person wrote or approved; working state such as tasks and handoffs stays out) and
writes each as `memory/<id>.md`, with frontmatter (id, kind, scope, sources, who
approved it and when), on the branch `memory/<date>`: one commit whose message lists
them, ready for a pull request.

It never touches the user's checkout: the commit is built with git's plumbing in a
temporary index (`read-tree`, `hash-object -w`, `update-index`, `write-tree`,
`commit-tree`) and the branch moved with `update-ref`, so HEAD, the index and the
working tree stay as they were. So a `memory/<date>` branch that is checked out (in
the repo or any of its worktrees) is refused rather than moved: moving it under the
checkout would leave every new record staged as a deletion there. A record whose
current text is already at its path on the checked-out commit or on any `memory/*`
branch is skipped, so promoting the same batch again adds nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from kenning import policy, rank
from kenning.errors import InvalidInput
from kenning.ids import short_id
from kenning.model import Item, Status, kinds_where
from kenning.printable import clean
from kenning.store import ItemQuery, Store

FOLDER = "memory"
WORKING_STATE = frozenset(kinds_where(lambda spec: not spec.promotable))
ZERO = "0" * 40


@dataclass(frozen=True, slots=True)
class Promoted:
    repo: str
    branch: str
    commit: str | None  # None: nothing new, no commit made
    added: tuple[Item, ...]
    skipped: int  # already promoted as they are now

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "branch": self.branch,
            "commit": self.commit,
            "added": [
                {
                    "id": i.id,
                    "short_id": short_id(i.id),
                    "path": record_path(i),
                    "title": i.title,
                }
                for i in self.added
            ],
            "skipped": self.skipped,
        }


def record_path(item: Item) -> str:
    return f"{FOLDER}/{item.id}.md"


def _yaml(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML string


def render(item: Item) -> str:
    """One memory as a Markdown record with frontmatter."""
    proposed_by = item.provenance.who
    approved_at = item.reviewed_at or item.created_at
    lines = [
        "---",
        f"id: {_yaml(item.id)}",
        f"kind: {_yaml(item.kind.value)}",
        f"scope: {_yaml(str(item.scope))}",
        "sources:" + ("" if item.links else " []"),
        *(f"  - {_yaml(str(link))}" for link in item.links),
        f"approved_by: {_yaml('user')}",
        f"approved_at: {_yaml(approved_at)}",
    ]
    if proposed_by not in policy.PEOPLE:
        lines.append(f"proposed_by: {_yaml(proposed_by)}")
    if item.tags:
        lines.append(f"tags: [{', '.join(_yaml(t) for t in item.tags)}]")
    lines += ["---", "", f"# {item.title}", ""]
    if item.body:
        lines += [item.body, ""]
    if item.evidence:
        lines += ["Evidence:", "", *(f"> {line}" for line in item.evidence.splitlines()), ""]
    # A reviewer reads it in a pull request: what a terminal would hide, a diff hides too.
    return clean("\n".join(lines))


def approved(
    store: Store, scopes: Sequence[str] = (), exclude_repos: tuple[str, ...] = ()
) -> list[Item]:
    """Active memories a person wrote or approved, best first (working state left out),
    none of `exclude_repos` (`ItemQuery.exclude_repos`)."""
    query = ItemQuery(
        scopes=tuple(scopes), statuses=(Status.ACTIVE.value,), exclude_repos=exclude_repos
    )
    found = store.list_items(query)
    return rank.ranked(
        i
        for i in found
        if i.kind not in WORKING_STATE
        and (i.provenance.who in policy.PEOPLE or i.reviewed_at is not None)
    )


class _Git:
    def __init__(self, repo: Path, index: Path | None = None) -> None:
        self.repo = repo
        self.env = {**os.environ, "GIT_INDEX_FILE": str(index)} if index else None

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(self.repo), *args],
                input=stdin,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise InvalidInput(f"cannot run git: {exc}") from None
        if check and done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["failed"])[-1]
            raise InvalidInput(f"git {args[0]} in {self.repo}: {said}")
        return done.stdout.strip() if done.returncode == 0 else ""


def promote(
    store: Store,
    repo: str | os.PathLike[str],
    *,
    batch: int = 20,
    scopes: Sequence[str] = (),
    today: date | None = None,
    exclude_repos: tuple[str, ...] = (),
) -> Promoted:
    """Commit the top `batch` approved memories not yet promoted as they are now to the
    branch `memory/<today>` of `repo`, without touching its checkout; none of
    `exclude_repos` (what an agent running it may not read)."""
    root = Path(repo).expanduser()
    git = _Git(root)
    if not root.is_dir() or git("rev-parse", "--git-dir", check=False) == "":
        raise InvalidInput(f"{root} is not a git repository: give --repo the steering repo")
    head = git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if not head:
        raise InvalidInput(f"{root} has no commit yet: commit something first")
    branch = f"{FOLDER}/{(today or date.today()).isoformat()}"
    ref = f"refs/heads/{branch}"
    tip = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    there = _promoted_blobs(git, [head, tip] + _memory_branches(git))
    chosen = approved(store, scopes, exclude_repos)[:batch]
    texts = {item.id: render(item) for item in chosen}
    new: list[Item] = []
    for item in chosen:
        blob = git("hash-object", "--stdin", stdin=texts[item.id])
        if blob not in there.get(record_path(item), set()):
            new.append(item)
    if not new:
        return Promoted(str(root), branch, None, (), len(chosen))
    where = _checked_out(git, ref)
    if where is not None:
        raise InvalidInput(
            f"{branch} is checked out in {where}, and promote never moves a checked-out "
            f"branch: switch that checkout to another branch and run ken promote again "
            f"(nothing was changed)"
        )
    parent = tip or head
    with tempfile.TemporaryDirectory(prefix="ken-promote-") as folder:
        staged = _Git(root, Path(folder) / "index")
        staged("read-tree", parent)
        for item in new:
            blob = staged("hash-object", "-w", "--stdin", stdin=texts[item.id])
            staged("update-index", "--add", "--cacheinfo", f"100644,{blob},{record_path(item)}")
        tree = staged("write-tree")
    lines = [f"- {short_id(i.id)} {i.kind.value} ({i.scope}): {i.title[:72]}" for i in new]
    message = (
        f"memory: promote {len(new)} record{'s' if len(new) > 1 else ''} from kenning\n\n"
        + "\n".join(lines)
        + "\n"
    )
    commit = git("commit-tree", tree, "-p", parent, stdin=message)
    git("update-ref", "-m", "ken promote", ref, commit, tip or ZERO)
    return Promoted(str(root), branch, commit, tuple(new), len(chosen) - len(new))


def _checked_out(git: _Git, ref: str) -> str | None:
    """The worktree that has `ref` checked out, if one does."""
    worktree = None
    for line in git("worktree", "list", "--porcelain").splitlines():
        key, _, value = line.partition(" ")
        if key == "worktree":
            worktree = value
        elif key == "branch" and value == ref:
            return worktree
    return None


def _memory_branches(git: _Git) -> list[str]:
    out = git("for-each-ref", "--format=%(objectname)", f"refs/heads/{FOLDER}/")
    return [line for line in out.splitlines() if line]


def _promoted_blobs(git: _Git, commits: Sequence[str]) -> dict[str, set[str]]:
    """Path to the blobs it holds, under memory/, across `commits`."""
    found: dict[str, set[str]] = {}
    for commit in dict.fromkeys(c for c in commits if c):
        listing = git("ls-tree", "-r", commit, "--", f"{FOLDER}/")
        for line in listing.splitlines():
            meta, _, path = line.partition("\t")
            found.setdefault(path, set()).add(meta.split()[2])
    return found
