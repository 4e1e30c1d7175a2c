"""The root `ken` group and the one list of its commands.

Each noun's commands live in a module of their own (`memory.py`: add, show, list, edit,
update; `status.py`: approve, reject, ...; `pack.py`: pack and recall; ...), built as
plain click commands on `kenning.cli.state`. This module imports them and registers each
one here, in COMMANDS: a new command is an import and a line, and nothing registers
itself by being imported.
"""

from __future__ import annotations

import click

from kenning.cli import (
    collect,
    config,
    curate,
    demo,
    doctor,
    forget,
    hook,
    integrate,
    lint,
    mcp,
    memory,
    pack,
    panel,
    plans,
    projects,
    promote,
    repos,
    review,
    search,
    serve,
    sessions,
    status,
    team,
    transfer,
    where,
)
from kenning.cli.state import KenGroup, State


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """`ken --version`: the version, and which code it is (an editable checkout that has
    moved on keeps its version and changes its digest)."""
    if not value or ctx.resilient_parsing:
        return
    import os

    from kenning import __version__, hookstate

    where = os.path.dirname(os.path.abspath(hookstate.__file__))
    click.echo(f"ken, version {__version__} (code {hookstate.code_digest()} in {where})")
    ctx.exit()


@click.group(cls=KenGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version, and the digest of the code that runs, and exit.",
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """kenning: one memory that every coding agent on this machine shares.

    People add, review and clean up memories here; agents read them through hooks
    and MCP and propose new ones.

    \b
    Example:
      ken add "Use pnpm, not npm, in this repo" --kind preference
    """
    from kenning.cli.output import say
    from kenning.store import report_migrations_to

    report_migrations_to(say)  # a person sees that the store was migrated, and its copy
    state = State(debug)
    ctx.obj = state
    ctx.call_on_close(state.close)


COMMANDS: list[click.Command] = [
    memory.add,
    memory.show,
    memory.list_cmd,
    memory.edit,
    memory.update,
    search.search,
    status.approve,
    status.reject,
    status.restore,
    status.archive,
    status.dismiss,
    status.pin,
    status.unpin,
    review.review_cmd,
    curate.curate_cmd,
    plans.plan_group,
    forget.forget,
    transfer.export_cmd,
    transfer.import_cmd,
    collect.collect_cmd,
    promote.promote_cmd,
    lint.lint_cmd,
    where.path,
    where.where,
    config.config_group,
    pack.pack,
    pack.recall,
    sessions.sessions_cmd,
    sessions.told,
    sessions.lessons,
    sessions.summarize_cmd,
    sessions.handoff_cmd,
    projects.project_group,
    repos.repo_group,
    integrate.integrate,
    doctor.doctor,
    hook.hook,
    hook.hook_server_group,
    mcp.mcp,
    panel.panel_cmd,
    serve.serve_group,
    team.team_group,
    demo.demo,
]
for command in COMMANDS:
    cli.add_command(command)
