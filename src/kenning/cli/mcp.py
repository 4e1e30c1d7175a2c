"""`ken mcp` (dispatched before click, in `kenning.entry`)."""

from __future__ import annotations

import click

from kenning.cli.state import example


@click.command(epilog=example("claude mcp add --scope user ken -- ken mcp"))
def mcp() -> None:
    """Serve memory to agents over MCP (stdio). Agents start this themselves."""
    # `ken mcp` is dispatched in kenning.entry before click is imported (the server
    # should answer quickly); this command exists for `ken --help` and `ken mcp --help`.
    raise click.UsageError("run the server as `ken mcp`, with no other options")
