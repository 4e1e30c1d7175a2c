"""`ken export` and `ken import` (JSON lines, and the rules of an instruction file)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kenning import deliver, outfile, policy, printable, transfer
from kenning.cli import complete
from kenning.cli.output import Result, memories, say
from kenning.cli.state import State, example, pass_state, renders, scope_filter
from kenning.ids import short_id
from kenning.model import Scope
from kenning.store import ItemQuery, Version

if TYPE_CHECKING:
    from kenning.onboard import Onboarded


@click.command("export", epilog=example("ken export > memories.jsonl"))
@click.option(
    "--scope", "-s", multiple=True, shell_complete=complete.scopes, help="Only these scopes."
)
@click.option(
    "--output",
    "-o",
    "target",
    type=click.Path(dir_okay=False),
    help="Write to this file (readable by you alone) instead of stdout; "
    "a device, pipe or link there is refused.",
)
@pass_state
def export_cmd(state: State, scope: tuple[str, ...], target: str | None) -> None:
    """Export every memory, any status, as JSON lines with provenance and history."""
    query = ItemQuery(
        scopes=tuple(scope_filter(state, scope, False)), statuses=(), include_expired=True
    )
    lines = transfer.export_lines(state.store, query, skip=state.withheld(), known=state.known())
    if target:
        count = 0
        with outfile.replacing(target) as fh:
            for line in lines:
                fh.write(line + "\n")
                count += 1
        say(f"exported {memories(count)} to {target}")
    else:
        for line in lines:
            click.echo(line)


@click.command("import", epilog=example("ken import --from CLAUDE.md --dry-run"))
@click.argument("file", type=click.File("rb"), required=False)
@click.option(
    "--keep-status",
    is_flag=True,
    help="Your own export: keep each memory's status, pin, source and history fields as they were.",
)
@click.option(
    "--from",
    "instructions",
    type=click.Path(exists=True, dir_okay=False),
    help="An instruction file (CLAUDE.md, AGENTS.md, GEMINI.md): each bullet or ## section "
    "becomes a proposed memory for the repo.",
)
@click.option(
    "--scope", "-s", shell_complete=complete.scopes, help="With --from: where (default: repo)."
)
@click.option("--dry-run", is_flag=True, help="With --from: say what would be proposed.")
@renders
@pass_state
def import_cmd(
    state: State,
    file: Any,
    keep_status: bool,
    instructions: str | None,
    scope: str | None,
    dry_run: bool,
) -> Result:
    """Import JSON lines (as `ken export` writes) as proposed memories, unpinned.

    Nothing an import brings is told to agents until a person approves it; importing
    the same file twice adds nothing, and a memory here already is never changed (the
    import says which ones the file holds otherwise). One bad line imports nothing; a line
    with the id of an earlier one is left out, and said. An import stopped partway (a
    full disk) keeps the batches it added, says how many, and the same import run again
    adds the rest. --keep-status brings your own export back as it was (active memories
    are told at once, at the revision they had), so a person must run it.

    With --from FILE, the rules already written in an agent's instruction file become
    proposals in the repo, each linked to the file and its line. Once approved they
    reach every agent except the ones that load that file themselves (Claude Code reads
    CLAUDE.md, Codex, OpenCode and Copilot CLI AGENTS.md, Gemini CLI GEMINI.md).
    """
    if instructions:
        if file is not None or keep_status:
            raise click.UsageError(
                "--from reads an instruction file: give no FILE or --keep-status"
            )
        return _onboard(state, Path(instructions), scope, dry_run)
    if dry_run or scope:
        raise click.UsageError("--dry-run and --scope go with --from")
    if keep_status:  # a person's own restore: refused in an agent's shell, even empty
        policy.require_person(state.actor(), "import --keep-status")
    history: dict[str, list[Version]] = {}
    repeated: list[transfer.Repeat] = []
    checked = transfer.read_items(
        file or sys.stdin.buffer, keep_status=keep_status, history=history, repeated=repeated
    )
    for again in repeated:
        say(
            f"line {again.line}: id {short_id(again.id)} is on line {again.first} too: "
            f"only line {again.first} is imported"
        )
    here = state.where()  # an agent's import is its write: the switches hold as for `add`
    deliver.check_agent_write(
        state.config, here.agent, here, [i.scope for i in checked], projects=state.store.projects()
    )

    def progress(done: int, total: int) -> None:
        # Of the file's rows: a row that repeats an id is done once it is read.
        say(f"imported {done + len(repeated)}/{total + len(repeated)}")

    differ: list[str] = []
    renumbered: list[str] = []
    added, skipped = transfer.import_items(
        state.store,
        checked,
        progress=progress,
        actor=state.actor(),
        history=history,
        differ=differ,
        renumbered=renumbered,
    )
    twice = f", {len(repeated)} that repeat an id" if repeated else ""
    if keep_status:
        said = f"added {memories(added)} as they were, skipped {skipped} already here{twice}"
    else:
        said = f"added {memories(added, 'proposed')}, skipped {skipped} already here{twice}" + (
            "; review them with `ken list --status proposed`" if added else ""
        )
    if renumbered:
        # A line copied under a new id: the copy is a memory of its own, versions and all.
        said += (
            f"; {len(renumbered)} of them got new revision ids (theirs were another "
            "memory's: a line copied under a new id)"
        )
    if differ:
        # An import never changes a memory: say which ones the file has otherwise.
        shown = ", ".join(short_id(i) for i in differ[:5]) + (", ..." if len(differ) > 5 else "")
        said += (
            f"; {len(differ)} of those differ from the file and were not changed ({shown}): "
            "`ken update ID --text` brings a newer text in as a version"
        )
    data = {
        "added": added,
        "skipped": skipped,
        "differ": [short_id(i) for i in differ],
        "renumbered": [short_id(i) for i in renumbered],
        "repeated": [{"line": r.line, "first": r.first, "id": short_id(r.id)} for r in repeated],
    }
    return Result(data=data, text=lambda: say(said))


def _onboard(state: State, path: Path, scope: str | None, dry_run: bool) -> Result:
    from kenning import onboard

    target = state.scope(scope or "repo")
    here = state.where()
    deliver.check_agent_write(
        state.config, here.agent, here, [target], projects=state.store.projects()
    )
    done = onboard.read_file(state.store, path, target, dry_run=dry_run, actor=state.actor())
    data = {
        "file": done.path,
        "dry_run": dry_run,
        "proposed": [i.to_dict() for i in done.proposed],
        "already": [{"line": e.line, "text": e.text} for e in done.already],
        "too_long": [{"line": e.line, "text": e.text} for e in done.too_long],
    }
    return Result(data=data, text=lambda: _onboarded(done, path, target, dry_run))


def _onboarded(done: Onboarded, path: Path, scope: Scope, dry_run: bool) -> None:
    for item in done.proposed:
        line = item.evidence.split(":", 2)[1]
        short = "" if dry_run else f"{short_id(item.id)}  "
        click.echo(
            f"{short}{item.kind.value:<10}  {path.name}:{line}  {printable.clean(item.title)}"
        )
    for entry in done.too_long:
        say(f"{path.name}:{entry.line}: over 4 KB, not proposed: split that section")
    verb = "would propose" if dry_run else "proposed"
    say(
        f"{verb} {memories(len(done.proposed))} in {scope}"
        + (f", {len(done.already)} already in memory" if done.already else "")
        + ("; review them with `ken review`" if done.proposed and not dry_run else "")
    )
