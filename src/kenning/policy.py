"""Who may change what: agents propose, people decide (DESIGN principle 2).

The rule lives here, once, and the library asks it where state changes: `items.add`
(what status a new memory gets, and whether it may be written at all),
`items.change`, `items.set_pinned`, `items.set_status`, `items.forget` and
`plans.apply`. The CLI,
the MCP server, the hooks and any later face call those, so each gets the same answer
without repeating the rule.

- **Who acts** is an `Actor`: a person (or kenning itself, recording on a person's
  behalf), or an agent, with the scopes where it works when they are known. When a
  caller does not say, the environment decides: inside an agent's shell (see
  `kenning.agentenv`) the actor is that agent.
- **An agent's working notes** (note, task, handoff, summary) in its own scopes (the
  session, workstream and project it works in) are active at once. A workstream or
  project that KEN_WORKSTREAM or KEN_PROJECT names is its own only when it belongs
  where it runs (a branch of this repo, a project of this folder or repo): another
  repo's branch is a shared scope like any other place's. **Its rules**
  (preference, correction, decision, fact, lesson: anything that steers other agents)
  and whatever it writes to a shared scope (repo, workspace, agent, global, another
  place's working scope) wait as proposals. A write to a shared scope needs evidence.
- **Changing** an item is free for an agent only on its own active working note: one
  that agent wrote (its provenance names it), in one of its own scopes, that no person
  has vouched for. A person's note, or another agent's, in the same workstream is not
  its own; nor is its own once a person approved (or restored) it or it is pinned:
  packs tell that one with the person's stamp (no unreviewed label, or atop every
  pack), which a rewrite must not keep. Changing anything else needs a person (through
  MCP an update of it is a proposed replacement the person reviews). Its own proposal,
  while it waits, it may revise (a new version, still proposed, in the same scope and
  of the same kind): the person reviews its latest words, once. An agent kenning
  cannot name (`UNKNOWN_AGENT`) owns no note: two such are not known to be the same
  agent. **Deciding** (approve, reject, archive, dismiss,
  restore, forget, applying a maintenance plan) always needs a person; an agent may
  draft and preview a plan (`kenning.plans`), never apply it.
- **A person** is there only when the actor is one. Inside an agent's shell there is
  no question to answer: whatever a person would type (on a terminal, or the agent's
  own pty made with `script` or `pty.fork`) the agent can type too. So a person-only
  action there is refused (`NeedsPerson`, one line: run it in your own terminal), and
  the person runs it themselves. Person-only: deciding (above), registering or
  removing projects, installing or removing kenning's integrations or trusting its
  hooks, changing settings, importing with statuses, joining or leaving a team and
  sharing with it, and pinning or unpinning (a pin is a person's stamp).
- **Team memory** (copies `ken team sync` pulled from a team server, `source`
  `team:<workspace>#<server id>`) is read-only here for everyone: the server is where it
  changes (an admin decides there; `ken edit` files a proposed revision to it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kenning.agentenv import UNNAMED, detect_agent
from kenning.errors import InvalidInput, NeedsPerson
from kenning.ids import short_id
from kenning.model import Item, Kind, Scope, ScopeType, Status, kinds_where

if TYPE_CHECKING:
    from kenning.where import Where

# Kinds an agent writes as its own working state, told at once in its own scopes.
WORKING_KINDS = frozenset(kinds_where(lambda spec: spec.working))
# Kinds that steer other agents: an agent's always wait for a person.
RULE_KINDS = frozenset(Kind) - WORKING_KINDS
OWN_SCOPES = frozenset({ScopeType.SESSION, ScopeType.WORKSTREAM, ScopeType.PROJECT})
# Writers whose memories are a person's own (or kenning's record of a person's files).
PEOPLE = frozenset({"user", "ken"})


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is changing memory: a person (agent None) or an agent."""

    agent: str | None = None
    # The scopes where the agent works; None when not known (then any session,
    # workstream or project counts as its own).
    here: tuple[Scope, ...] | None = None

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, here: Sequence[Scope] | None = None
    ) -> Actor:
        """The agent whose shell this is, else a person."""
        return cls(detect_agent(env), None if here is None else tuple(here))

    @classmethod
    def working_in(cls, agent: str | None, where: Where) -> Actor:
        """`agent` working at `where`: its own scopes are those of this place, not a
        workstream or project a setting borrows from another repo or folder
        (`Where.elsewhere`): writing there is writing to a shared scope."""
        return cls(agent, tuple(s for s in where.scopes if s not in where.elsewhere))

    @property
    def is_person(self) -> bool:
        return self.agent is None

    def owns(self, scope: Scope) -> bool:
        """Whether `scope` is one of this agent's own working scopes."""
        if scope.type not in OWN_SCOPES:
            return False
        return self.here is None or scope in self.here


PERSON = Actor()
# kenning recording on a person's behalf: project files, automatic handoffs, summaries the
# person turned on. Its writes choose their own status; it decides nothing.
KENNING = PERSON


def resolve(actor: Actor | None) -> Actor:
    """The actor a library call acts as: the one given, else from the environment."""
    return actor if actor is not None else Actor.from_env()


def status_for_new(
    actor: Actor, scope: Scope, kind: Kind = Kind.NOTE, propose: bool = False
) -> Status:
    """Active for a person, and for an agent's working note in its own scope; proposed
    otherwise, or when the writer asks to propose."""
    if propose:
        return Status.PROPOSED
    if actor.agent is None:
        return Status.ACTIVE
    if kind in RULE_KINDS or not actor.owns(scope):
        return Status.PROPOSED
    return Status.ACTIVE


UNKNOWN_AGENT = UNNAMED  # the name of an agent that neither the markers nor the MCP server can tell


def check_new(
    actor: Actor, scope: Scope, kind: Kind, status: Status, evidence: str, pinned: bool = False
) -> None:
    """Refuse what an agent may not write as asked (nothing is stored then). A pin is
    never an agent's to give (see `check_change`), on a proposal or on its own note."""
    if actor.agent is None:
        return
    if pinned:
        article = "an" if status.value[0] in "aeiou" else "a"
        raise NeedsPerson(
            f"{actor.agent} cannot pin {article} {status.value} {kind.value}: a pin puts it "
            "atop every pack, and is a person's to give (store it without --pin)"
        )
    check_agent_scope(actor, scope)
    allowed = status_for_new(actor, scope, kind)
    if status is Status.ACTIVE and allowed is not Status.ACTIVE:
        raise NeedsPerson(
            f"{actor.agent} cannot make a {kind.value} in {scope} active: an agent's rules "
            "and shared memories wait for a person (store it as proposed)"
        )
    if not actor.owns(scope) and not evidence.strip():
        raise InvalidInput(
            f"saving to {scope} needs evidence: quote what the person said or what "
            "happened that prompted this memory"
        )


def check_agent_scope(actor: Actor, scope: Scope) -> None:
    """Refuse an agent writing to another agent's scope (`agent:NAME` follows that agent
    everywhere), or to any agent scope when kenning cannot name it."""
    if actor.agent is None or scope.type is not ScopeType.AGENT:
        return
    if actor.agent == UNKNOWN_AGENT:
        raise InvalidInput(
            f"kenning cannot tell which agent this is, so it has no agent scope ({scope} "
            "would be told to no one): choose another scope"
        )
    if scope.value != actor.agent:
        raise InvalidInput(f"{actor.agent} may write to agent:{actor.agent}, not {scope}")


TEAM_SOURCE = "team:"  # the source of a team memory's local copy: team:<workspace>#<id>


def team_origin(item: Item) -> tuple[str, str] | None:
    """(workspace, server id) of a team memory's local copy; None for any other memory."""
    if not (item.source or "").startswith(TEAM_SOURCE):
        return None
    workspace, _, server_id = (item.source or "")[len(TEAM_SOURCE) :].rpartition("#")
    return workspace, server_id


def check_local_change(item: Item, action: str) -> None:
    """Refuse to change a team memory's local copy (for anyone): one line that says
    where it changes instead."""
    origin = team_origin(item)
    if origin is None:
        return
    where = (
        "`ken edit` files a proposed revision"
        if action in ("edit", "update")
        else ("an admin decides on the team's review page")
    )
    raise InvalidInput(
        f"cannot {action} {short_id(item.id)}: it is team memory from workspace "
        f"{origin[0]}, read-only here ({where})"
    )


def is_free_for(
    actor: Actor, item: Item, new_scope: Scope | None = None, new_kind: Kind | None = None
) -> bool:
    """Whether `actor` may change `item` without a person: always for a person; for an
    agent only its own active working note (one it wrote: a person's note, or another
    agent's, in the same workstream is theirs), kept a working note in its own scopes,
    while no person has reviewed it and it is not pinned (the person's stamp would be
    kept on text they never saw). An agent that could not be named wrote no note kenning
    can tell is its own."""
    if actor.is_person:
        return True
    scopes = [item.scope] + ([new_scope] if new_scope else [])
    kinds = [item.kind] + ([new_kind] if new_kind else [])
    return (
        item.status is Status.ACTIVE
        and item.reviewed_at is None
        and not item.pinned
        and actor.agent != UNKNOWN_AGENT
        and item.provenance.who == actor.agent
        and all(actor.owns(s) for s in scopes)
        and all(k in WORKING_KINDS for k in kinds)
    )


REVISIONS = frozenset({"edit", "update"})  # the changes of a memory's words and fields
# A pin puts a memory atop every pack and exempts it from the cap: a person's stamp, as an
# approval is, so an agent gives or takes it on no memory, its own note included.
PINS = frozenset({"pin", "unpin"})


def is_own_proposal(actor: Actor, item: Item) -> bool:
    """Whether `item` is a proposal `actor` (an agent kenning can name) wrote that still
    waits for a person: revising it is the agent's to do, since no one is told it yet and
    the person reviews its latest words; a second proposal beside it would only make the
    person decide twice."""
    return (
        not actor.is_person
        and item.status is Status.PROPOSED
        and not item.pinned
        and actor.agent != UNKNOWN_AGENT
        and item.provenance.who == actor.agent
    )


def require_person(actor: Actor, action: str) -> Actor:
    """Go on only with a person: returns the actor, or raises NeedsPerson (nothing is
    asked: an agent could answer)."""
    if actor.is_person:
        return actor
    raise NeedsPerson(
        f"{action} needs a person: run it in your own terminal (agents propose, people decide)"
    )


def check_change(
    actor: Actor,
    item: Item,
    action: str,
    new_scope: Scope | None = None,
    new_kind: Kind | None = None,
) -> Actor:
    """Changing `item` (edit, update, move): free on an agent's own working note, and a
    revision (edit, update) of its own waiting proposal that keeps its scope and kind (it
    stays proposed); else it needs a person, as a pin or unpin always does. Returns the
    actor."""
    if action in PINS:
        return require_person(actor, f"{action} memory {short_id(item.id)} ({item.scope})")
    if is_free_for(actor, item, new_scope, new_kind):
        return actor
    if (
        action in REVISIONS
        and is_own_proposal(actor, item)
        and new_scope in (None, item.scope)
        and new_kind in (None, item.kind)
    ):
        return actor
    return require_person(actor, f"{action} memory {short_id(item.id)} ({item.scope})")


def unreviewed_from(item: Item) -> str | None:
    """The agent whose working note this is, when no person has reviewed it: packs and
    recall label it so an agent reading it knows it is another agent's word."""
    who = item.provenance.who
    if item.status is Status.ACTIVE and item.reviewed_at is None and who not in PEOPLE:
        return who
    return None
