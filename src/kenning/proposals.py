"""What agents may write, and how (the write policy of DESIGN principle 2).

- An agent's own working scopes (its session, and the workstream and project it works
  in) take its writes as active memories. Another branch's workstream, another
  project or another session is not its own: writes there are treated as shared.
- Shared scopes (repo, workspace, global) take them as *proposed*, told to no other
  session until a person approves, and need evidence: the excerpt that prompted it.
- An update to the agent's own working note names the revision it expects; an
  update to anything else files a proposed replacement linked to the original.
- Agents never delete, approve or reject.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kenning import items, projects
from kenning.errors import InvalidInput
from kenning.model import Item, Kind, Provenance, Scope, ScopeType, Status
from kenning.store import Store
from kenning.where import Where

OWN_SCOPES = items.OWN_SCOPES
MAX_LESSONS = 3


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

    def owns(self, scope: Scope) -> bool:
        """Whether `scope` is one of this agent's own working scopes where it runs."""
        return items.is_own(scope, self.where.scopes)

    def own_scope(self) -> Scope:
        """The working scope an agent's notes default to."""
        if self.where.workstream:
            return Scope(ScopeType.WORKSTREAM, self.where.workstream)
        if self.where.project:
            return Scope(ScopeType.PROJECT, self.where.project)
        if self.agent_session_id:
            return Scope(ScopeType.SESSION, f"{self.agent}:{self.agent_session_id}")
        raise InvalidInput(
            "there is no workstream here (not a git branch) and no session: pass a scope"
        )


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
    """Save an agent's memory: active in its own scopes, proposed in shared ones."""
    target = ctx.where.scope(scope) if scope else ctx.own_scope()
    if target.type is ScopeType.AGENT and target.value != ctx.agent:
        raise InvalidInput(f"{ctx.agent} may write to agent:{ctx.agent}, not {target}")
    own = ctx.owns(target)
    if not own and not evidence.strip():
        raise InvalidInput(
            f"saving to {target} needs evidence: quote what the person said or what "
            "happened that prompted this memory"
        )
    return items.add(
        store,
        text,
        scope=target,
        kind=items.parse_kind(kind),
        tags=tags,
        links=links,
        status=Status.ACTIVE if own else Status.PROPOSED,
        evidence=evidence,
        provenance=ctx.provenance(),
    )


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
    if not expected_revision:
        raise InvalidInput("name the revision you expect (from memory_get)")
    current = items.get(store, ref)
    if current.revision != expected_revision:
        from kenning.errors import RevisionConflict

        raise RevisionConflict(current.id, expected_revision, current.revision)
    if ctx.owns(current.scope) and current.status is Status.ACTIVE:
        updated = items.change(
            store,
            current.id,
            text=text,
            expected_revision=expected_revision,
            provenance=ctx.provenance(),
            evidence=evidence or None,
        )
        return updated, True
    if not evidence.strip():
        raise InvalidInput(
            f"{current.scope} is shared: a replacement needs evidence of why it is better"
        )
    replacement = items.new_item(
        text,
        scope=current.scope,
        kind=current.kind,
        tags=current.tags,
        links=[*(str(x) for x in current.links), f"item:{current.id}"],
        status=Status.PROPOSED,
        evidence=evidence,
        provenance=ctx.provenance(),
    )
    return store.insert_item(replacement, change=items.REPLACES), False


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
    first = " ".join(done.split())[:90] or "work in progress"
    body = f"## Done\n{done.strip()}\n\n## State\n{state.strip()}\n\n## Next\n{next_steps.strip()}"
    if questions.strip():
        body += f"\n\n## Open questions\n{questions.strip()}"
    slug = ctx.where.project
    if slug and any(p["slug"] == slug for p in store.projects()):
        heading = projects.log_heading(ctx.agent, first)
        # `##` would start a new log entry, so the parts are bold labels there.
        log_body = "\n\n".join(
            f"**{label}:** {text.strip()}"
            for label, text in (
                ("Done", done),
                ("State", state),
                ("Next", next_steps),
                ("Open questions", questions),
            )
            if text.strip()
        )
        projects.append_log(store, slug, heading, log_body)
        found = projects.find_synced(store, slug, "log.md", projects.entry_key(heading))
        if found is not None:
            return found
    if ctx.where.workstream:
        scope = Scope(ScopeType.WORKSTREAM, ctx.where.workstream)
    elif ctx.where.project:
        scope = Scope(ScopeType.PROJECT, ctx.where.project)
    else:
        scope = ctx.own_scope()
    title = f"Handoff from {ctx.agent}: {first}"
    return items.add(
        store,
        f"{title}\n{body}",
        scope=scope,
        kind=Kind.HANDOFF,
        status=Status.ACTIVE,
        provenance=ctx.provenance(),
    )


def reflect(
    store: Store,
    ctx: AgentContext,
    lessons: Sequence[tuple[str, str]],
) -> list[Item]:
    """Up to three lessons (text, the prompt or event that taught it), saved as proposed."""
    if not lessons:
        raise InvalidInput("give at least one lesson")
    if len(lessons) > MAX_LESSONS:
        raise InvalidInput(
            f"at most {MAX_LESSONS} lessons per run: keep the ones the person taught"
        )
    scope = Scope(ScopeType.REPO, ctx.where.repo) if ctx.where.repo else Scope(ScopeType.GLOBAL)
    if any(not quote.strip() for _, quote in lessons):
        raise InvalidInput(
            "each lesson needs the evidence that taught it: quote the person's prompt; "
            "nothing was saved"
        )
    # Build (check and redact) every lesson before storing any, so none half-saves.
    built = [
        items.new_item(
            text,
            scope=scope,
            kind=Kind.LESSON,
            status=Status.PROPOSED,
            evidence=quote,
            provenance=ctx.provenance(),
        )
        for text, quote in lessons
    ]
    return [store.insert_item(item) for item in built]
