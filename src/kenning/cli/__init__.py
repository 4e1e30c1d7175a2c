"""The `ken` command: thin click faces over the library.

Each command parses its options, calls the library and hands the result to a renderer
(`output.py`). Library errors become one line on stderr and exit 1; usage errors exit 2;
`--debug` shows the traceback instead.
"""

from __future__ import annotations

from kenning.cli import agents as _agents  # noqa: F401  (registers commands)
from kenning.cli import collect as _collect  # noqa: F401
from kenning.cli import curate as _curate  # noqa: F401
from kenning.cli import panel as _panel  # noqa: F401
from kenning.cli import plans as _plans  # noqa: F401
from kenning.cli import projects as _projects  # noqa: F401
from kenning.cli import promote as _promote  # noqa: F401
from kenning.cli import review as _review  # noqa: F401
from kenning.cli import serve as _serve  # noqa: F401
from kenning.cli import team as _team  # noqa: F401
from kenning.cli.app import cli

__all__ = ["cli"]
