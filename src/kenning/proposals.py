"""What agents may write, and how: the agent side of the write policy in `kenning.policy`.

- An agent's working notes (note, task, handoff, summary) in its own working scopes
  (its session, and the workstream and project it works in) are active memories.
  Another branch's workstream, another project or another session is not its own.
- Its rules (preference, correction, decision, fact, lesson) wait as *proposed*
  wherever they go, and so does anything in a shared scope (repo, workspace, agent,
  global), which also needs evidence: the excerpt that prompted it.
- An update names the revision it expects. One to the agent's own working note (one it
  wrote, that no person approved or pinned) replaces it, and so does one to its own
  proposal while it waits (a new version, still proposed); one to anything else, a
  person's note or another agent's in the same workstream included, files a proposed
  replacement linked to the original, which approving it supersedes
  (`items.replaced_by`).
- Agents never delete, approve or reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from kenning import ids, items, policy, projects
from kenning.errors import InvalidInput
from kenning.lessons import REFLECTION_TAG
from kenning.model import Item, Kind, Provenance, Scope, ScopeType, Status
from kenning.redact import redact
from kenning.store import ItemQuery, Store
from kenning.where import Where

MAX_LESSONS = 3
REFLECTION_KINDS = ("lesson", "correction", "preference", "decision")


@dataclass(frozen=True, slots=True)
class AgentContext:
    """Who is writing and from where."""

    agent: str
    where: Where
    model: str | None = None
    session_id: str | None = None  # kenning's session id
    agent_session_id: str | None = None

    def provenance(self, how: str = "mcp") -> Provenance:
        return self.where.provenance(self.agent, how, model=self.model, session=self.session_id)

    @property
    def actor(self) -> policy.Actor:
        """The agent, working where it runs (no person can be asked from here)."""
        return policy.Actor.working_in(self.agent, self.where)

    def owns(self, scope: Scope) -> bool:
        """Whether `scope` is one of this agent's own working scopes where it runs."""
        return self.actor.owns(scope)

    def own_scope(self, ask: str = "pass a scope") -> Scope:
        """The working scope an agent's notes default to; `ask` says what the caller can
        do when there is none."""
        if self.where.workstream:
            return Scope(ScopeType.WORKSTREAM, self.where.workstream)
        if self.where.project:
            return Scope(ScopeType.PROJECT, self.where.project)
        if self.agent_session_id:
            return Scope(ScopeType.SESSION, f"{self.agent}:{self.agent_session_id}")
        why = self.where.no_workstream or "not a git branch"
        raise InvalidInput(f"there is no workstream here ({why}), no project and no session: {ask}")


def propose(
    store: Store,
    ctx: AgentContext,
    text: str,
    *,
    kind: str | None = None,
    scope: str | None = None,
    tags: Sequence[str] = (),
    links: Sequence[str] = (),
    evidence: str = "",
) -> Item:
    """Save an agent's memory: a working note in its own scopes is active; its rules, and
    anything in a shared scope (which needs evidence), are proposed."""
    return propose_once(
        store, ctx, text, kind=kind, scope=scope, tags=tags, links=links, evidence=evidence
    )[0]


def propose_once(
    store: Store,
    ctx: AgentContext,
    text: str,
    *,
    kind: str | None = None,
    scope: str | None = None,
    tags: Sequence[str] = (),
    links: Sequence[str] = (),
    evidence: str = "",
    archived: list[Item] | None = None,
) -> tuple[Item, bool]:
    """As `propose`, and whether it was filed now: False when the same statement waited
    for review in that scope already, and that proposal is what is returned. What the
    scope's cap archived to make room goes into `archived`."""
    target = ctx.where.scope(scope) if scope is not None else ctx.own_scope()
    fresh = ids.new_ulid()
    item = items.add(
        store,
        text,
        scope=target,
        kind=items.parse_kind(kind),
        tags=tags,
        links=links,
        evidence=evidence,
        provenance=ctx.provenance(),
        actor=ctx.actor,
        item_id=fresh,
        archived=archived,
    )
    return item, item.id == fresh


Updated = Literal["updated", "filed", "waiting", "told"]


def update(
    store: Store,
    ctx: AgentContext,
    ref: str,
    text: str,
    *,
    expected_revision: str,
    evidence: str = "",
) -> tuple[Item, bool]:
    """Replace the agent's own working note, or propose a replacement for anything else.

    Returns (item, replaced_in_place).
    """
    item, outcome = update_once(
        store, ctx, ref, text, expected_revision=expected_revision, evidence=evidence
    )
    return item, outcome == "updated"


def update_once(
    store: Store,
    ctx: AgentContext,
    ref: str,
    text: str,
    *,
    expected_revision: str,
    evidence: str = "",
) -> tuple[Item, Updated]:
    """As `update`, and what came of it: `updated` (the agent's own note or waiting
    proposal, a new version), `filed` (a proposed replacement, or one set aside as a
    statement a person dismissed: `items.file_proposal`), or nothing filed, as for a
    proposal: `waiting` (the same statement waits for review in that scope already) or
    `told` (it is active there already, so there is nothing to replace it with); the
    memory returned is then that one."""
    if not expected_revision:
        raise InvalidInput("name the revision you expect (from memory_get)")
    current = items.get(store, ref)
    if current.revision != expected_revision:
        from kenning.errors import RevisionConflict

        raise RevisionConflict(current.id, expected_revision, current.revision)
    # A replacement approved here would be brought back by the file's next sync too,
    # and then both would be told.
    items.check_not_synced(current)
    # Its own waiting proposal is revised as its working note is: a new version of it,
    # still proposed, not a second proposal for the person to decide on beside it.
    if policy.is_free_for(ctx.actor, current) or policy.is_own_proposal(ctx.actor, current):
        updated = items.change(
            store,
            current.id,
            text=text,
            expected_revision=expected_revision,
            provenance=ctx.provenance(),
            evidence=evidence or None,
            actor=ctx.actor,
        )
        return updated, "updated"
    if not evidence.strip() and not ctx.owns(current.scope):
        # As for a new memory: only what goes to a shared scope needs evidence.
        raise InvalidInput(
            f"{current.scope} is shared: a replacement needs evidence of why it is better"
        )
    replacement = items.new_item(
        text,
        scope=current.scope,
        kind=current.kind,
        tags=current.tags,
        links=items.replacement_links(current.links, current.id),
        status=Status.PROPOSED,
        evidence=evidence,
        provenance=ctx.provenance(),
    )
    # The duplicate rule of a proposal: the same replacement sent twice is filed once,
    # and one that says what is told there already (the original itself, or the
    # replacement a person approved) is not filed at all.
    held = items.held_twins(store, replacement, ctx.actor)
    told = next((t for t in held if t.status is Status.ACTIVE), None)
    if told is not None:
        return told, "told"
    filed = items.file_proposal(store, replacement, change=items.REPLACES, who=ctx.actor)
    return filed, "filed" if filed.id == replacement.id else "waiting"


def handoff(
    store: Store,
    ctx: AgentContext,
    *,
    done: str,
    state: str,
    next_steps: str,
    questions: str = "",
) -> Item:
    """A handoff (done / state / next / open questions) in the workstream or project.

    Inside a registered project the handoff is appended to its log.md (the file is the
    truth) and indexed from there.
    """
    if not any(part.strip() for part in (done, state, next_steps)):
        raise InvalidInput(
            "a handoff needs what was done, where things stand or what comes next: all three "
            "are blank; nothing was saved"
        )
    # Redacted before it is cut: a token cut short is no longer known as one.
    first = " ".join(redact(done).text.split())[:90] or "work in progress"
    body = f"## Done\n{done.strip()}\n\n## State\n{state.strip()}\n\n## Next\n{next_steps.strip()}"
    if questions.strip():
        body += f"\n\n## Open questions\n{questions.strip()}"
    slug = ctx.where.project
    if slug and any(p.slug == slug for p in store.projects()):
        heading = projects.log_heading(ctx.agent, projects.literal(first))
        # `##` would start a new log entry, so the parts are bold labels there, and the
        # agent's own text cannot start one (nor a fence or comment that hides others).
        log_body = "\n\n".join(
            f"**{label}:** {projects.literal(text.strip())}"
            for label, text in (
                ("Done", done),
                ("State", state),
                ("Next", next_steps),
                ("Open questions", questions),
            )
            if text.strip()
        )
        # Indexed from the file (how: sync), as written by this agent, in its session,
        # where it runs: a repo's switches hold for it as for any memory written there.
        mine = items.redact_provenance(ctx.provenance("sync"))
        found = projects.append_log(store, slug, heading, log_body, mine)
        if found is not None:
            return found
    scope = ctx.own_scope(
        "a handoff belongs to a git branch, a project (KEN_PROJECT) or an agent's session"
    )
    title = f"Handoff from {ctx.agent}: {first}"
    return items.add(
        store,
        f"{title}\n{body}",
        scope=scope,
        kind=Kind.HANDOFF,
        provenance=ctx.provenance(),
        actor=ctx.actor,
    )


def reflect(
    store: Store,
    ctx: AgentContext,
    lessons: Sequence[tuple[str, str] | tuple[str, str, str]],
    held: list[tuple[str, Item]] | None = None,
) -> list[Item]:
    """Up to three lessons (text, the prompt or event that taught it, and optionally the
    kind: lesson, correction, preference or decision), saved as proposed in the repo and
    tagged `reflection`; three per session in all, over however many calls. A lesson
    already there, active or waiting, is not saved again: it is added to `held` (its text
    as stored, and the memory that holds it)."""
    if not lessons:
        raise InvalidInput("give at least one lesson")
    if len(lessons) > MAX_LESSONS:
        raise InvalidInput(
            f"at most {MAX_LESSONS} lessons per run: keep the ones the person taught"
        )
    scope = Scope(ScopeType.REPO, ctx.where.repo) if ctx.where.repo else Scope(ScopeType.GLOBAL)
    if any(not lesson[1].strip() for lesson in lessons):
        raise InvalidInput(
            "each lesson needs the evidence that taught it: quote the person's prompt; "
            "nothing was saved"
        )
    kinds = [lesson[2] if len(lesson) > 2 else "lesson" for lesson in lessons]
    if any(kind not in REFLECTION_KINDS for kind in kinds):
        raise InvalidInput(f"a lesson's kind is one of {', '.join(REFLECTION_KINDS)}")
    # Build (check and redact) every lesson before storing any, so none half-saves.
    built = [
        items.new_item(
            lesson[0],
            scope=scope,
            kind=Kind(kind),
            status=Status.PROPOSED,
            tags=[REFLECTION_TAG],
            evidence=lesson[1],
            provenance=ctx.provenance(),
        )
        for lesson, kind in zip(lessons, kinds, strict=True)
    ]
    # The same lesson twice (in this call, or waiting or active there already) is one.
    fresh: dict[str, Item] = {}
    for item in built:
        key = items.statement_key(item.text)
        if key in fresh:
            continue
        there = items.held_there(store, item, ctx.actor)
        if there is not None:
            if held is not None:
                held.append((item.text, there))
            continue
        fresh[key] = item
    # Three per session, not per call: Stop asks once, and three calls of three were nine.
    room = MAX_LESSONS - _reflected_in(store, ctx.session_id)
    if len(fresh) > room:
        raise InvalidInput(
            f"this session recorded {MAX_LESSONS - room} lessons already, and a session "
            f"records at most {MAX_LESSONS}: "
            + (
                f"give at most {room} more, the ones the person taught; nothing was saved"
                if room > 0
                else "nothing was saved"
            )
        )
    return [items.file_proposal(store, item, who=ctx.actor) for item in fresh.values()]


def _reflected_in(store: Store, session_id: str | None) -> int:
    """How many lessons reflections saved in this session, whatever became of them."""
    if not session_id:
        return 0
    query = ItemQuery(
        tags=(REFLECTION_TAG,), statuses=(), include_expired=True, session_id=session_id
    )
    return len(store.list_items(query))
