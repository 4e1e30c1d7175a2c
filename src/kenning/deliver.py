"""Giving memory to agents: packs and recall, with the privacy switches applied, and a
record of exactly what each session was told.

`memory.enabled = false` turns everything off; `memory.deliver_to` names the agent
kinds that get packs and recall; a repo with `deliver = false` in `[repos."<repo>"]`
never has its items or sessions put in a pack or a recall; a repo with
`capture = false` is not recorded at all (not even a session row).
"""

from __future__ import annotations

from collections.abc import Sequence

from kenning.config import Config
from kenning.model import Session
from kenning.pack import Pack, build_pack, deliverable_scopes
from kenning.recall import Recall, RecallSettings, recall
from kenning.sessions import clip_prompt
from kenning.store import SQLiteStore
from kenning.where import Where


def blocked_repos(config: Config, where: Where) -> set[str]:
    """Repos here whose memory must not be delivered."""
    if where.repo and not config.repo_setting(where.repo, "deliver"):
        return {where.repo}
    return set()


def may_deliver(config: Config, agent: str | None, where: Where) -> bool:
    if not config.get("memory.enabled"):
        return False
    return not (agent and agent not in config.get("memory.deliver_to"))


def may_capture(config: Config, where: Where) -> bool:
    return bool(config.get("memory.enabled")) and config.repo_setting(where.repo, "capture")


def pack_for(
    store: SQLiteStore,
    config: Config,
    where: Where,
    *,
    session: Session | None = None,
    budget: int | None = None,
    max_chars: int | None = None,
    record: bool = True,
) -> Pack:
    """The context pack here (after syncing this project's files); when given to a
    session, its items' uses are counted."""
    if where.project and any(p["slug"] == where.project for p in store.projects()):
        from kenning import projects
        from kenning.hooklog import log

        for reason in projects.sync(store, where.project).skipped:
            log("", "project-sync", f"skipped {reason}")  # the pack goes on without it
    blocked = blocked_repos(config, where)
    scopes = deliverable_scopes(where.scopes, blocked)
    pack = build_pack(
        store,
        scopes,
        budget=budget or config.get("memory.budget"),
        repo=None if where.repo in blocked else where.repo,
        exclude_session=session.id if session else None,
        max_chars=max_chars,
    )
    if record and session is not None:
        ids = [item.id for item in pack.items]
        store.record_delivery(session.id, "pack", ids)
        store.record_uses(ids, session.id, "pack")
    return pack


def recall_for(
    store: SQLiteStore,
    config: Config,
    where: Where,
    prompt: str,
    *,
    session: Session | None = None,
    context: Sequence[str] = (),
    settings: RecallSettings | None = None,
    record: bool = True,
) -> Recall:
    """Recall for a prompt here, skipping what this session was already told."""
    scopes = deliverable_scopes(where.scopes, blocked_repos(config, where))
    exclude = store.delivered_ids(session.id) if session is not None else set()
    result = recall(
        store,
        prompt,
        scopes,
        settings=settings or RecallSettings.from_config(config),
        context=context,
        exclude=exclude,
    )
    if record and session is not None:
        record_recall(store, session, prompt, result)
    return result


def record_recall(store: SQLiteStore, session: Session, prompt: str, result: Recall) -> None:
    """Record what a recall told a session (its items' uses count once per session)."""
    if not result.kept:
        return
    ids = [c.item.id for c in result.kept]
    # The prompt as sessions keep it: redacted, then clipped to 500 characters.
    store.record_delivery(session.id, "recall", ids, query=clip_prompt(prompt))
    store.record_uses(ids, session.id, "recall")
