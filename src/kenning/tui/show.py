"""What the panel draws for a row and for the pane on the right, as rich `Text`.

Plain functions of the values `kenning.browse` returns, so each can be read and tested
without running the app. Every piece of text that came from a memory, a session or a
prompt goes through `printable.clean` (an ANSI escape or a bidi override in a memory
must not act on the terminal) and into `Text` as plain text, never as markup (a memory
that says `[bold]` says it in brackets). Nothing depends on colour alone: a status is a
word or a mark, so `NO_COLOR` loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len, set_cell_size
from rich.text import Text

from kenning.browse import Delivery, Detail
from kenning.ids import short_id
from kenning.model import Item, Revision, Session, Status
from kenning.printable import clean

# The mark before a row: what waits, what is told, what is kept but not told.
MARKS = {
    Status.PROPOSED: "◇",
    Status.ACTIVE: " ",
}
INACTIVE_MARK = "·"
KIND_WIDTH = 10


def when(stamp: str | None) -> str:
    """A stored time as `YYYY-MM-DD HH:MM` (UTC)."""
    return (stamp or "")[:16].replace("T", " ")


def flat(text: str | None, limit: int | None = None) -> str:
    """Text on one line, control characters escaped, cut to `limit` cells on screen (a
    CJK letter or an emoji takes two)."""
    one = clean(" ".join((text or "").split()), one_line=True)
    if limit is not None and cell_len(one) > limit:
        return set_cell_size(one, max(0, limit - 1)).rstrip() + "…"
    return one


def item_row(item: Item) -> str:
    """One memory as a list line: its mark, pin, kind and title."""
    mark = MARKS.get(item.status, INACTIVE_MARK)
    pin = "^" if item.pinned else " "
    return f"{mark}{pin}{item.kind.value:<{KIND_WIDTH}} {flat(item.title)}"


def is_dim(item: Item) -> bool:
    """Kept but not told (archived, rejected, dismissed, superseded)."""
    return item.status not in (Status.ACTIVE, Status.PROPOSED)


def session_row(session: Session) -> str:
    prompt = flat(session.first_prompt) or "(no prompt)"
    return f"{when(session.started_at)} {flat(session.agent)}: {prompt}"


def _line(out: Text, label: str, value: str) -> None:
    out.append(f"{label}: ", style="bold")
    out.append(value + "\n")


def status_words(item: Item) -> str:
    words = [item.status.value]
    if item.status is Status.PROPOSED:
        words = ["waits for a person (proposed)"]
    if item.pinned:
        words.append("pinned")
    if item.dismiss_reason:
        words.append(f"dismissed as {item.dismiss_reason}")
    if item.archive_reason:
        words.append(f"archived: {flat(item.archive_reason)}")
    return ", ".join(words)


def memory(detail: Detail) -> Text:
    """A memory with its full text, provenance, review context and version history."""
    item = detail.item
    out = Text()
    out.append(clean(item.title) + "\n", style="bold")
    if item.body:
        out.append(clean(item.body).rstrip("\n") + "\n")
    out.append("\n")
    _line(out, "memory", f"{short_id(item.id)}  {item.kind.value} in {clean(str(item.scope))}")
    _line(out, "status", status_words(item))
    if item.tags:
        _line(out, "tags", clean(", ".join(item.tags)))
    if item.links:
        _line(out, "links", flat(", ".join(str(x) for x in item.links)))
    if item.source:
        _line(out, "kept in sync from", clean(item.source))
    prov = item.provenance
    who = flat(prov.who) + (f" ({flat(prov.model)})" if prov.model else "")
    verb = "proposed" if item.status is Status.PROPOSED else "written"
    _line(out, verb, f"by {who} via {flat(prov.how)}, {when(item.created_at)} UTC")
    place = [
        flat(v) for v in (prov.cwd, prov.repo, prov.workstream, prov.project, prov.workspace) if v
    ]
    if prov.commit:
        place.append(f"commit {flat(prov.commit)[:12]}")
    if place:
        _line(out, "where", ", ".join(dict.fromkeys(place)))
    if item.evidence:
        _line(out, "why", flat(item.evidence, 600))
    if detail.session is not None:
        s = detail.session
        prompt = flat(s.first_prompt, 200)
        _line(
            out,
            "session",
            f"{short_id(s.id)}, {flat(s.agent)}, started {when(s.started_at)}"
            + (f', first prompt "{prompt}"' if prompt else ""),
        )
    elif prov.session:
        _line(out, "session", f"{flat(prov.session)} (no longer recorded)")
    if item.reviewed_at:
        _line(out, "reviewed", when(item.reviewed_at))
    if item.expires_at:
        _line(out, "expires", when(item.expires_at))
    used = f"{item.use_count} times" + (
        f", last {when(item.last_used_at)}" if item.last_used_at else ""
    )
    _line(out, "told", used)
    if detail.supersedes is not None:
        old = detail.supersedes
        out.append("\napproving it supersedes:\n", style="bold")
        out.append(f"  {short_id(old.id)} ({clean(str(old.scope))}): {flat(old.title)}\n")
    if detail.neighbours:
        out.append("\nalready in memory:\n", style="bold")
        for n in detail.neighbours:
            what = "says the same" if n.relation == "copy" else "this reverses it"
            out.append(
                f"  {short_id(n.item.id)} ({clean(str(n.item.scope))}): {flat(n.item.title)}"
                f"  [{what}: {flat(n.why)}]\n"
            )
    out.append("\n")
    out.append(history(detail.history))
    return out


def history(revisions: Sequence[Revision]) -> Text:
    """Every version, oldest first: when, what made it, the status it left, and the
    title when it changed."""
    out = Text()
    out.append(f"versions ({len(revisions)}, oldest first):\n", style="bold")
    title = None
    for rev in revisions:
        out.append(f"  {when(rev.created_at)}  {rev.change:<8} {rev.status}")
        if rev.title != title:
            out.append(f'  "{flat(rev.title, 60)}"')
            title = rev.title
        out.append("\n")
    return out


def session(s: Session) -> Text:
    """A session: agent, model, when, prompts, commits, transcript."""
    out = Text()
    out.append(f"{flat(s.agent)} session {short_id(s.id)}\n", style="bold")
    _line(out, "model", flat(s.model) or "(not recorded)")
    _line(
        out,
        "when",
        f"{when(s.started_at)} to {when(s.ended_at)}"
        if s.ended_at
        else f"{when(s.started_at)}, not ended",
    )
    if s.agent_session_id:
        _line(out, "agent's id", flat(s.agent_session_id))
    if s.repo or s.cwd:
        _line(out, "where", ", ".join(flat(v) for v in (s.repo, s.cwd) if v))
    if s.workstream:
        _line(out, "workstream", flat(s.workstream))
    _line(out, "prompts", str(s.prompt_count))
    _line(out, "first prompt", flat(s.first_prompt) or "-")
    _line(out, "last prompt", flat(s.last_prompt) or "-")
    if s.start_commit:
        _line(out, "started on", flat(s.start_commit)[:12])
    _line(out, "commits", ", ".join(flat(c)[:12] for c in s.commits) or "none")
    if s.diff_stat:
        _line(out, "uncommitted", flat(s.diff_stat))
    if s.continued_from:
        _line(out, "continued from", short_id(s.continued_from))
    _line(out, "transcript", flat(s.transcript_path) or "(not recorded)")
    out.append("\nEnter: what this session was told\n", style="italic")
    return out


def told(s: Session, deliveries: Sequence[Delivery]) -> Text:
    """Every pack and recall a session was told, in order, each item with its text."""
    out = Text()
    out.append(f"What {flat(s.agent)} session {short_id(s.id)} was told\n", style="bold")
    if not deliveries:
        out.append("\nnothing: no pack or recall was delivered to it\n")
    for d in deliveries:
        out.append("\n")
        if d.is_compaction:
            out.append(f"{when(d.at)}  compaction: what came before may be told again\n")
            continue
        count = f"{len(d.items)} memor{'y' if len(d.items) == 1 else 'ies'}"
        head = f"{when(d.at)}  {flat(d.what)}, {count}"
        if d.query:
            head += f', for the prompt "{flat(d.query, 200)}"'
        out.append(head + "\n", style="bold")
        for item_id, item in d.items:
            if item is None:
                out.append(f"  {short_id(item_id)}  (forgotten since)\n")
                continue
            out.append(f"  {short_id(item_id)}  {flat(item.title)}\n")
            for line in clean(item.body).splitlines():
                out.append(f"      {line}\n")
    return out
