"""The hook log: one line per problem a hook (or a background job a hook started) hit.

Hooks must never print errors into an agent, so they write here instead:
`$XDG_STATE_HOME/kenning/log`, kept under 1 MB. `ken doctor` shows the last lines.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from kenning import config as config_mod
from kenning.printable import clean

MAX_LOG_BYTES = 1024 * 1024


def log(agent: str, event: str, message: str) -> None:
    """Append one line to the hook log; never raises."""
    try:
        from kenning.redact import redact  # the redactor only when a line is written

        path = config_mod.log_path()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            data = path.read_bytes()[-MAX_LOG_BYTES // 2 :]
            path.write_bytes(data[data.find(b"\n") + 1 :])
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        # An error can quote what it choked on (a prompt, a summarizer's answer, a
        # payload's cwd): it is redacted before it is written, its control characters
        # shown escaped (a person `tail`s this log on a terminal), and only then cut.
        line = flat(redact(message[:65536]).text)[:2000]
        who, what = (
            _column(name, lambda text: bool(redact(text).kinds)) for name in (agent, event)
        )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {who} {what} {line}\n")
    except Exception:  # noqa: BLE001 - the log is best effort
        pass


def flat(text: str) -> str:
    """`text` as one log line: runs of whitespace one space, control characters escaped
    (`\\x1b`), so no escape sequence in a payload acts on the terminal that shows it."""
    return clean(" ".join(text.split()), one_line=True)


MAX_NAME = 40  # characters of an agent's or an event's name in its column


def _column(name: str, secret: Callable[[str], bool]) -> str:
    """An agent's or an event's name as its column shows it: as given when it is a plain
    name (`claude`, `UserPromptSubmit`, `hook-server`), else `?`. Both can come from a
    hook's command line (`--agent NAME`), so either may hold anything, a key pasted in
    the wrong place included; the message says what was wrong with it, redacted."""
    if not name:
        return "-"
    plain = len(name) <= MAX_NAME and all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
    return name if plain and not secret(name) else "?"


def scrub(needles: list[str]) -> int:
    """Rewrite the log without the lines that hold one of `needles` (compared without
    case, made one line as `log` writes it: `flat`): a forgotten memory's text leaves the
    log with it. Returns how many lines went."""
    wanted = [flat(n).lower() for n in needles if n.strip()]
    path = config_mod.log_path()
    if not wanted or not path.exists():
        return 0
    kept, dropped = [], 0
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if any(n in line.lower() for n in wanted):
                dropped += 1
            else:
                kept.append(line)
    if dropped:
        # Overwritten in place, the freed tail zeroed before it is cut off, so the
        # dropped lines' bytes do not linger in blocks the file no longer uses.
        data = "".join(kept).encode("utf-8")
        with path.open("r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(0)
            fh.write(data + bytes(max(0, size - len(data))))
            fh.flush()
            os.fsync(fh.fileno())
            fh.truncate(len(data))
    return dropped
