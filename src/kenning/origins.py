"""Which repos a memory belongs to, and so whether a repo's `deliver = false` keeps it
from agents (`kenning.deliver` says what that switch binds). Its own module, below the
item layer and delivery both: a write's duplicate check (`items.may_know`) asks it as a
pack or recall does.
"""

from __future__ import annotations

from kenning.model import Item, Scope, ScopeType

NOT_DELIVERED = "a repo whose memory is not delivered to agents (deliver = false in config.toml)"


def scope_repo(scope: Scope) -> str | None:
    """The repo a scope belongs to: its own (repo:) or its branch's (workstream:)."""
    if scope.type is ScopeType.REPO:
        return scope.value
    if scope.type is ScopeType.WORKSTREAM and "#" in scope.value:
        return scope.value.rpartition("#")[0]
    return None


def in_blocked(scope: Scope, blocked: set[str] | frozenset[str]) -> bool:
    """Whether `scope` is the repo scope, or a workstream, of a repo in `blocked`."""
    if scope.type is ScopeType.WORKSTREAM:  # a branch name may hold '#': match prefixes
        return any(scope.value.startswith(f"{repo}#") for repo in blocked)
    return scope.type is ScopeType.REPO and scope.value in blocked


def origin_repos(item: Item) -> set[str]:
    """The repos `item` belongs to: the one its scope names (repo:, a workstream's
    `<repo>#<branch>`) and the one it was written in (its provenance), whatever scope it
    sits in. A memory written before provenance named a repo has its scope's alone."""
    found = {item.provenance.repo} if item.provenance.repo else set()
    repo = scope_repo(item.scope)
    if repo:
        found.add(repo)
    return found


def withheld(item: Item, blocked: set[str] | frozenset[str]) -> bool:
    """Whether `item` belongs to a repo whose memory is not delivered."""
    if item.scope.type is ScopeType.WORKSTREAM and in_blocked(item.scope, blocked):
        return True  # a branch name may hold '#': scope_repo alone would miss it
    return not origin_repos(item).isdisjoint(blocked)
