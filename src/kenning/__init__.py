"""kenning: one local memory that every coding agent on a machine shares."""

# The one place the version is written: pyproject.toml reads it (`[tool.hatch.version]`),
# and `ken --version`, the hook server and the team server say it, with no look at the
# installed metadata (slow, and stale in an editable checkout that has moved on).
__version__ = "0.2.0"
