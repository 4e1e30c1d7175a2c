"""The `ken` console entry point.

`ken hook …` runs on every prompt of every agent, so it is dispatched here before
click or anything heavy is imported.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"] and not set(args[1:]) & {"-h", "--help"}:
        from kenning.hooks.client import main as hook_main

        raise SystemExit(hook_main(args[1:]))
    if args[:1] == ["mcp"] and not set(args[1:]) & {"-h", "--help"}:
        try:
            from kenning.mcp_server import main as mcp_main
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in ("mcp", "pydantic"):
                raise
            from kenning.integrate import mcp_install_hint

            sys.stderr.write(
                f"ken: `ken mcp` needs the MCP SDK, which is not installed for this kenning: "
                f"{mcp_install_hint()}\n"
            )
            raise SystemExit(1) from None
        raise SystemExit(mcp_main())
    from kenning.cli import cli

    cli.main(args=args, prog_name="ken")


if __name__ == "__main__":
    main()
