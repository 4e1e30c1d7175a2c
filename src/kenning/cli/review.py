"""`ken review`: decide what waits, one memory at a time, one key each.

Like `git add -p`: each waiting memory is shown with what a person needs (the text, kind
and scope; who proposed it, from which session and prompt, and the evidence; the
memories already told that it repeats or reverses), best first, and one key decides it.
The queue and its context are `kenning.review`'s; each decision is the library's
`items.set_status` with the actor the person check (`kenning.policy`) gave at the start,
so `ken review` decides exactly what `ken approve`, `reject` and `dismiss` would.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Sequence

import click

from kenning import editing, items, policy, review
from kenning.cli import complete
from kenning.cli.output import say
from kenning.cli.state import State, example, pass_state, save_edit, scope_filter
from kenning.errors import KenningError, NotFound, RevisionConflict
from kenning.ids import short_id
from kenning.model import DismissReason, Item
from kenning.pack import one_line
from kenning.printable import clean

ACTIONS = (
    ("a", "approve: agents are told it"),
    ("r", "reject: kept, never told"),
    ("d", "dismiss with a reason (covered, wrong, one_off, other)"),
    ("e", "edit in your editor, then approve"),
    ("s", "change its scope (it still waits)"),
    ("n", "skip: leave it waiting, show the next"),
    ("q", "quit"),
)
PROMPT = "[a]pprove [r]eject [d]ismiss [e]dit+approve [s]cope [n]ext [q]uit [?]"
REASONS = {"c": "covered", "w": "wrong", "o": "one_off", "t": "other"}
REASON_PROMPT = "dismiss because: [c]overed [w]rong [o]ne_off o[t]her (q: back)"
QUIT_KEYS = ("q", "Q", "\x1b", "\x03", "\x04", "")


def _style(text: str, **styles: object) -> str:
    """`text` in bold or dim on a terminal (click drops styles when piped). No colours:
    nothing here depends on them, so NO_COLOR has nothing to turn off."""
    return click.style(text, **styles)  # type: ignore[arg-type]


def _out(text: str = "", **styles: object) -> None:
    click.echo(_style(clean(text), **styles))


NO_TERMINAL = (
    "reviewing reads one key at a time and needs a terminal: run `ken review` in one, or "
    "decide in batches with `ken approve --all` / `ken reject --all`"
)


def _check_terminal() -> None:
    """Refuse, before any card is shown, where no key can be read: click reads keys from
    stdin when it is a terminal, else from the process's terminal (/dev/tty), which a
    process started without one (a pipe from a script, a job) does not have. A stdin that
    is no file at all (click's test runner) is read by whoever put it there."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if os.isatty(fd):
        return
    try:
        with open("/dev/tty"):
            pass
    except OSError:
        raise KenningError(NO_TERMINAL) from None


def _key(prompt: str) -> str:
    """One key press, echoed; '' at the end of input."""
    click.echo(_style(prompt, bold=True) + " ", nl=False)
    try:
        key = click.getchar()
    except (KeyboardInterrupt, EOFError):
        key = ""
    except OSError:
        raise KenningError(NO_TERMINAL) from None
    click.echo(key if key.isprintable() else "")
    return key


def _card(ctx: review.Context, position: int, total: int) -> None:
    item = ctx.item
    _out()
    _out(f"── {position} of {total} waiting, best first " + "─" * 30, dim=True)
    _out(f"{item.kind.value}  {item.scope}  [{short_id(item.id)}]", dim=True)
    _out(item.title, bold=True)
    for line in item.body.splitlines():
        _out(f"  {line}")
    if item.pinned:
        _out("pinned: approved, it is told at the top of every pack here", bold=True)
    prov = item.provenance
    who = prov.who + (f" ({prov.model})" if prov.model else "")
    by = clean(f"{who} via {prov.how}", one_line=True)  # one line, whatever it holds
    _out(f"proposed by {by}, {item.created_at[:16].replace('T', ' ')} UTC")
    if item.evidence:
        _out("why: " + one_line(item.evidence)[:300])
    if ctx.session is not None:
        s = ctx.session
        prompt = one_line(s.first_prompt or "")[:160]
        _out(
            f"session {short_id(s.id)}: {s.agent}, started "
            f"{s.started_at[:16].replace('T', ' ')}"
            + (f', first prompt: "{prompt}"' if prompt else "")
        )
    elif prov.session:
        _out(f"session {clean(prov.session, one_line=True)} (no longer recorded)")
    if ctx.supersedes is not None:
        old = ctx.supersedes
        _out("approving it supersedes (retires):", bold=True)
        _out(f"  {short_id(old.id)} ({old.scope}): {old.title}")
    if ctx.neighbours:
        _out("already in memory:", bold=True)
        for n in ctx.neighbours:
            what = "says the same" if n.relation == "copy" else "this reverses it"
            _out(f"  {short_id(n.item.id)} ({n.item.scope}): {n.item.title}  [{what}: {n.why}]")


class Reviewing:
    """One `ken review`: the filters, the person's actor and what they decided."""

    def __init__(
        self, state: State, actor: policy.Actor, scopes: Sequence[str], kinds: Sequence[str]
    ) -> None:
        self.state = state
        self.actor = actor
        self.scopes = list(scopes)
        self.kinds = list(kinds)
        self.skipped: list[str] = []
        self.tally: Counter[str] = Counter()

    def run(self) -> None:
        while True:
            item = review.next_waiting(self.state.store, self.scopes, self.kinds, self.skipped)
            if item is None:
                _out(self.ended())
                break
            total = review.count_waiting(self.state.store, self.scopes, self.kinds)
            _card(review.context(self.state.store, item), len(self.skipped) + 1, total)
            if not self.decide(item):
                break
        # What was decided, each once; what was skipped (it still waits) after the ';'.
        done = ", ".join(f"{word} {n}" for word, n in self.tally.items()) or "nothing decided"
        say(f"{done}; {len(self.skipped)} skipped" if self.skipped else done)

    def ended(self) -> str:
        """What the queue's end says: nothing else to show is not nothing waiting, when
        the person skipped some (they wait still, unless decided elsewhere since)."""
        left = review.count_waiting(self.state.store, self.scopes, self.kinds)
        if not left:
            return "nothing else waits for review"
        return (
            f"nothing else to show: {left} skipped still wait{'s' if left == 1 else ''} "
            "(`ken review` shows them again)"
        )

    def decide(self, item: Item) -> bool:
        """Read keys until one decides `item` (or skips it); False to quit."""
        while True:
            key = _key(PROMPT)
            if key in QUIT_KEYS:
                return False
            try:
                match key.lower():
                    case "a":
                        self.status(item, "approve")
                    case "r":
                        self.status(item, "reject")
                    case "d":
                        reason = self.reason()
                        if reason is None:
                            continue
                        self.status(item, "dismiss", reason)
                    case "e":
                        self.edit_then_approve(item)
                    case "s":
                        self.rescope(item)
                    case "n" | " ":
                        self.skipped.append(item.id)
                    case "?":
                        for k, text in ACTIONS:
                            _out(f"  {k}  {text}")
                        continue
                    case _:
                        _out(f"press one of the keys in brackets: {PROMPT}")
                        continue
            except KenningError as exc:
                if self.gone(item):  # `ken forget` removed it while it was on the screen
                    say(
                        f"{short_id(item.id)} was forgotten meanwhile (it no longer exists): "
                        "nothing decided"
                    )
                    return True
                say(f"ken: {exc}")
                if not self.still_waits(item):
                    return True
                continue
            return True

    def gone(self, item: Item) -> bool:
        try:
            items.get(self.state.store, item.id)
        except NotFound:
            return True
        return False

    def still_waits(self, item: Item) -> bool:
        try:
            return items.get(self.state.store, item.id).status.value == "proposed"
        except KenningError:
            return False

    def status(self, item: Item, action: str, reason: str | None = None) -> None:
        try:  # what is decided is what was shown
            done = items.set_status(
                self.state.store,
                item.id,
                action,
                reason=reason,
                actor=self.actor,
                shown=item.revision,
            )
        except RevisionConflict:  # shown again as it is now: not decided, not skipped
            say(
                f"{short_id(item.id)} changed since it was shown (it still waits): "
                "nothing decided; `ken review` shows it as it is now"
            )
            return
        past = {"approve": "approved", "reject": "rejected", "dismiss": "dismissed"}[action]
        self.tally[past] += 1
        why = f" ({done.dismiss_reason})" if done.dismiss_reason else ""
        say(f"{past} {short_id(done.id)}{why}: {done.title}")

    def reason(self) -> str | None:
        while True:
            key = _key(REASON_PROMPT)
            if key.lower() in REASONS:
                return DismissReason(REASONS[key.lower()]).value
            if key in QUIT_KEYS:
                return None

    def edit_then_approve(self, item: Item) -> None:
        before = editing.editor_text(item)
        after = editing.run_editor(before, editing.command(self.state.config))
        if after != before:
            with editing.kept_if_refused(item, after):
                item = save_edit(self.state, item, editing.parse(after), actor=self.actor)
            say(f"saved {short_id(item.id)} as a new version")
        else:  # saved as it was, or quit without saving: the file cannot tell them apart
            say("nothing changed in the editor: approving it as shown")
        self.status(item, "approve")

    def rescope(self, item: Item) -> None:
        text = click.prompt("new scope", default=str(item.scope), err=True)
        target = self.state.scope(text)
        if target == item.scope:
            return
        moved = items.change(
            self.state.store, item.id, scope=target, what="scope", actor=self.actor
        )
        say(f"moved {short_id(moved.id)} to {moved.scope}; it still waits")


@click.command("review", epilog=example("ken review --scope repo --kind preference"))
@click.option(
    "--scope",
    "-s",
    multiple=True,
    shell_complete=complete.scopes,
    help="Only these scopes (repeatable; a bare `repo` is this repo's).",
)
@click.option(
    "--kind", "-k", multiple=True, shell_complete=complete.kinds, help="Only these kinds."
)
@pass_state
def review_cmd(state: State, scope: tuple[str, ...], kind: tuple[str, ...]) -> None:
    """Decide what waits, one memory at a time, best first.

    Each waiting memory is shown with who proposed it and why (the evidence, the
    session and its first prompt) and the memories already told that it repeats or
    reverses. One key decides it: a approve, r reject, d dismiss with a reason, e edit
    in your editor and approve, s change its scope, n skip, q quit.
    """
    # A person first: an agent is told nothing of the queue, not even whether a memory
    # of a repo it may not read waits.
    actor = policy.require_person(state.actor(), "review waiting memories")
    scopes = scope_filter(state, scope, False)
    kinds = [k.value for k in map(items.parse_kind, kind) if k]
    if not review.count_waiting(state.store, scopes, kinds):
        say("nothing waits for review" + (" here" if scopes or kinds else ""))
        return
    _check_terminal()
    Reviewing(state, actor, scopes, kinds).run()
