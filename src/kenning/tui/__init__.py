"""The terminal faces: `ken panel` (`kenning.tui.panel`), a Textual app.

Textual is an extra (`pip install 'kenning[tui]'`): only a person who opens the panel
needs it, and nothing on the hook path, the MCP server or the rest of the CLI imports
this package. `ken panel` imports it inside its command.
"""
