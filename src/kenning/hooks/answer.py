"""Printing a hook's answer, for the hook client (a server's answer) and the hook
wrapper (its own): with nothing imported that the client cannot afford."""

from __future__ import annotations

import os
import sys

from kenning.hooks.wire import hook_args


def write_answer(argv: list[str], out: str) -> None:
    """Print a hook's answer. An agent that stops reading before the end (its pipe
    closed: `ken hook ... | head -c1`) is no fault of kenning's: one line in the log
    says so, naming the agent, and the hook exits quietly."""
    if not out:
        return
    try:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # What is still buffered goes to /dev/null, or Python's exit would flush it
        # into the closed pipe again and complain on stderr.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        from kenning.hooklog import log

        event, agent, _ = hook_args(argv)
        log(
            agent or "",
            event or "",
            "the agent stopped reading the hook's output before its end (broken pipe)",
        )
