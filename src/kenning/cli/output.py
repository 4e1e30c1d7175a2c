"""Rendering: data to stdout as text or JSON, messages to stderr.

A command that takes `--json` builds a `Result` (its data, and how to show it as text)
and returns it; `render` prints one form or the other, so no command body asks which.

Tables use rich when stdout is a terminal and plain aligned text when it is piped, so
scripts and tests see stable text.

Every line of text printed goes through `clean` (`kenning.printable`), so a control
character in a memory is shown escaped, never acted on by the terminal. JSON is left
exact: it escapes control characters itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import click

from kenning.ids import short_id
from kenning.items import RETIRED_BY_REPLACEMENT
from kenning.model import Item, Revision, Status
from kenning.printable import clean


class _Nothing(Enum):
    NOTHING = "nothing"


NOTHING = _Nothing.NOTHING  # a Result whose JSON form prints nothing (not even `null`)


@dataclass(frozen=True, slots=True)
class Result:
    """What a command gives back, for `render` to print as text or as JSON.

    `data` is the JSON form, exactly what `--json` prints on stdout (NOTHING: nothing).
    `text` prints the text form, stdout and stderr (None: nothing). `before` and `after`
    are lines for the person on stderr, said in either form before and after the data.
    Then the command exits with `exit` when it is not 0, or raises `error` when given.
    """

    data: Any = NOTHING
    text: Callable[[], None] | None = None
    before: Sequence[str] = ()
    after: Sequence[str] = ()
    exit: int = 0
    error: Exception | None = None


def render(result: Result, *, as_json: bool) -> None:
    """Print `result` as JSON (`--json`) or as text: the one place that chooses."""
    for note in result.before:
        say(note)
    if as_json:
        if result.data is not NOTHING:
            emit_json(result.data)
    elif result.text is not None:
        result.text()
    for note in result.after:
        say(note)
    if result.error is not None:
        raise result.error
    if result.exit:
        raise SystemExit(result.exit)


def echo(text: str) -> None:
    """A line of text on stdout, cleaned."""
    click.echo(clean(text))


def echo_told(text: str) -> None:
    """What an agent is told (a pack, a recall): exact when piped, where it is the agent's
    input, and cleaned on a terminal, where a person reads it."""
    click.echo(clean(text) if sys.stdout.isatty() else text)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))


def memories(count: int, adjective: str = "") -> str:
    """ "1 memory", "3 proposed memories": a count in a message."""
    noun = "memory" if count == 1 else "memories"
    return f"{count} {adjective} {noun}" if adjective else f"{count} {noun}"


def confirm(question: str) -> bool:
    """Ask the person; no answer (stdin closed, as under a script) is a no, said in one
    line rather than click's bare "Aborted!"."""
    try:
        return click.confirm(question, err=True)
    except click.Abort:
        click.echo("", err=True)
        say("no answer (stdin is closed); pass --yes to skip the question")
        return False


def say(message: str) -> None:
    """A message for the person, on stderr."""
    click.echo(clean(message), err=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    click.echo(render_table(headers, rows))


def table_or_say(
    headers: Sequence[str], rows: Sequence[Sequence[str]], empty: str
) -> Callable[[], None]:
    """The text form of a table: the table, or `empty` said when it has no rows."""
    return (lambda: table(headers, rows)) if rows else (lambda: say(empty))


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The table as text: rich's layout on a terminal, plain aligned columns when piped."""
    rows = [[clean(cell, one_line=True) for cell in row] for row in rows]
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        t = Table(box=None, pad_edge=False, header_style="bold")
        for h in headers:
            t.add_column(h, overflow="fold")
        for row in rows:
            t.add_row(*(Text(cell) for cell in row))  # Text: a '[red]' in a title is text
        console = Console()
        with console.capture() as captured:
            console.print(t)
        return captured.get().rstrip("\n")
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *rows]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def page(text: str, before: Sequence[str] = (), after: Sequence[str] = ()) -> None:
    """Print `text` with notes for the person before and after it, on stderr. On a
    terminal, what is taller than the screen goes through the pager ($PAGER, else less),
    notes included."""
    if sys.stdout.isatty():
        import shutil

        lines = len(before) + text.count("\n") + 1 + len(after)
        if lines >= shutil.get_terminal_size().lines:
            notes_before, notes_after = [clean(n) for n in before], [clean(n) for n in after]
            click.echo_via_pager("\n".join([*notes_before, text, *notes_after]) + "\n")
            return
    for note in before:
        say(note)
    click.echo(text)
    for note in after:
        say(note)


def item_row(item: Item, score: float | None = None) -> list[str]:
    marks = ("* " if item.pinned else "") + ("? " if item.status.value == "proposed" else "")
    state = "" if item.status.value in ("active", "proposed") else f" [{item.status.value}]"
    scope = f"{item.scope} (unreadable)" if item.scope.unreadable else str(item.scope)
    row = [short_id(item.id), item.kind.value, scope]
    if score is not None:
        row.append(f"{score:.2f}")
    row.append(f"{marks}{item.title}{state}")
    return row


def items_table(items: Sequence[Item], scores: Sequence[float] | None = None) -> None:
    click.echo(render_items(items, scores))


def render_items(items: Sequence[Item], scores: Sequence[float] | None = None) -> str:
    headers = ["id", "kind", "scope", *(["score"] if scores is not None else []), "title"]
    rows = [
        item_row(item, scores[i] if scores is not None else None) for i, item in enumerate(items)
    ]
    return render_table(headers, rows)


def _replaces(item: Item, old: Item | None) -> list[tuple[str, str]]:
    """The line naming the memory a replacement was filed for, and what approving does."""
    if old is None:
        return []
    line = f"{short_id(old.id)} ({old.status.value}): {old.title}"
    if item.status is Status.PROPOSED and old.status in RETIRED_BY_REPLACEMENT:
        line += "; approving this supersedes it"
    return [("replaces", line)]


def _scope_line(item: Item) -> str:
    if not item.scope.unreadable:
        return str(item.scope)
    return (
        f"{item.scope} (unreadable: {item.scope.unreadable}; move it with "
        f"`ken update {short_id(item.id)} --scope SCOPE`)"
    )


def show_item(item: Item, history: Sequence[Revision], replaces: Item | None = None) -> None:
    lines = [f"# {item.title}"]
    if item.body:
        lines += ["", item.body]
    lines += [""]
    fields = [
        ("id", f"{short_id(item.id)} ({item.id})"),
        ("kind", item.kind.value),
        ("scope", _scope_line(item)),
        (
            "status",
            item.status.value
            + (f" ({item.dismiss_reason})" if item.dismiss_reason else "")
            + (f" ({item.archive_reason})" if item.archive_reason else ""),
        ),
        ("pinned", "yes" if item.pinned else "no"),
        ("tags", ", ".join(item.tags) or "-"),
        ("links", ", ".join(str(x) for x in item.links) or "-"),
        *_replaces(item, replaces),
        ("created", item.created_at),
        ("updated", item.updated_at),
        ("reviewed", item.reviewed_at or "-"),
        ("expires", item.expires_at or "-"),
        (
            "uses",
            f"{item.use_count}" + (f", last {item.last_used_at}" if item.last_used_at else ""),
        ),
        ("source", item.source or "-"),
    ]
    prov = item.provenance.to_dict()
    fields.append(("by", ", ".join(f"{k}={v}" for k, v in prov.items()) or "-"))
    width = max(len(k) for k, _ in fields)
    # A field is one line: a line break in a link or a model name (stored before kenning
    # refused one) shows escaped, as in a title, never as a line of its own.
    lines += [f"{k.ljust(width)}  {clean(v, one_line=True)}" for k, v in fields]
    if item.evidence:
        lines += ["", "evidence:", *("  " + line for line in item.evidence.splitlines())]
    lines += ["", f"versions ({len(history)}):"]
    for rev in reversed(history):
        mark = "  <- current" if rev.id == item.revision else ""
        lines.append(f"  {rev.created_at}  {rev.change:<8} {rev.status:<9} {rev.title[:60]}{mark}")
    echo("\n".join(lines))
