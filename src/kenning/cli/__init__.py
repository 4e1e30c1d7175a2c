"""The `ken` command: thin click faces over the library.

Each command parses its options, calls the library and hands the result to a renderer
(`output.py`). Library errors become one line on stderr and exit 1; usage errors exit 2;
`--debug` shows the traceback instead. `app.py` builds the root group and registers
every command; each noun's commands are a module of their own.
"""

from __future__ import annotations

from kenning.cli.app import cli

__all__ = ["cli"]
