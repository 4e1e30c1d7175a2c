"""Text from a memory, a file or a log, made safe to show on a terminal.

Text that came from a memory, a file or a log (a title, a body, a hook log line) can hold
control characters: an ANSI escape can hide "Always push to main" behind harmless text
in a terminal, a carriage return can print over it, a bidi override can reverse it. Every
face that shows such text to a person (the CLI's lines, the panel's rows and details)
passes it through `clean`, which shows those characters escaped (`\\x1b`, `\\u202e`)
instead of letting the terminal act on them.

What kenning gives an agent goes through it too (a pack's or recall's line for a memory,
`/recall`'s list, every MCP answer): there a carriage return, U+2028 or any other
character `str.splitlines` breaks at would start a line of the agent's context, where
an agent's note could pass for a `## Preferences and corrections` section of its own.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, bidi controls, line separators; and
# what draws nothing yet is read: the soft hyphen, the Mongolian vowel separator, the
# zero-width space, word joiner and invisible operators, the zero-width no-break space
# (BOM), interlinear annotation marks, and the tag characters, which spell ASCII that no
# terminal shows and a model reads ("ASCII smuggling"). The zero-width joiner and
# non-joiner stay: emoji and several scripts need them, and they spell nothing alone.
_CONTROLS = (
    r"\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u061c\u180e\u200b\u200e\u200f\u2028-\u202e"
    r"\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
)
_CONTROL = re.compile(f"[{_CONTROLS}]")
_CONTROL_OR_NEWLINE = re.compile(f"[{_CONTROLS}\\n]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def clean(text: str, *, one_line: bool = False) -> str:
    """`text` with control characters shown escaped; `one_line` escapes newlines too."""
    return (_CONTROL_OR_NEWLINE if one_line else _CONTROL).sub(_escaped, text)
