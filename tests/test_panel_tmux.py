"""The installed `ken panel` and `ken review` on a real terminal: tmux runs them, the test
types keys with `send-keys` and reads the screen with `capture-pane`.

The pilot proves what each key does inside the app; this proves the whole path a person
takes (the console script, click, the person check, Textual's real driver, suspending for
the editor, the terminal restored at the end). Each wait is bounded and polls the screen.
tmux runs on a socket of its own in the test's folder, with HOME, XDG_* and KEN_DB there
(conftest sets them), so neither the user's tmux nor their memory is touched. CI installs
tmux (`.ci/run`); elsewhere the test is skipped when tmux is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import KEN_BIN
from helpers import add, opened
from kenning.model import Status

pytestmark = pytest.mark.slow

TMUX = shutil.which("tmux")
if TMUX is None and not os.environ.get("CI"):
    pytest.skip(
        "tmux is not installed (CI installs it in .ci/run; here: apt-get install tmux)",
        allow_module_level=True,
    )
WAIT = 30.0  # seconds: the most any screen may take to show up


class Terminal:
    """One tmux session on its own server, running one command."""

    def __init__(self, folder: Path, command: list[str], env: dict[str, str]) -> None:
        assert TMUX is not None, "tmux is missing: .ci/run installs it before `make test`"
        self.socket = str(folder / "tmux.sock")
        self.env = env
        self.tmux(
            "new-session", "-d", "-s", "ken", "-x", "100", "-y", "30",
            *(f"-e{k}={v}" for k, v in env.items() if k.startswith(("KEN_", "XDG_", "HOME"))),
            " ".join(command),
        )  # fmt: skip
        self.tmux("set-option", "-t", "ken", "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            [str(TMUX), "-S", self.socket, *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=WAIT,
            check=False,
        )
        assert result.returncode == 0, f"tmux {args[0]}: {result.stderr}"
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "ken")

    def wait_for(self, text: str) -> str:
        """The screen once it shows `text`; fails after WAIT seconds with the screen."""
        deadline = time.monotonic() + WAIT
        while True:
            shown = self.screen()
            if text in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the screen:\n{shown}")
            time.sleep(0.05)  # a poll of the screen, bounded by the deadline above

    def keys(self, *keys: str) -> None:
        """Type `keys` once the command reads keys one by one. `ken review` asks with
        click's getchar, which puts the terminal in raw mode only once it asks, and
        discards what was typed before (tty.setraw flushes the input): a key sent as soon
        as the question shows could be lost, echoed on a line nobody reads."""
        self.wait_for_raw()
        self.tmux("send-keys", "-t", "ken", *keys)

    def wait_for_raw(self) -> None:
        """Wait until the pane's terminal is out of line mode (ICANON off), as it is while
        Textual runs and while getchar waits for a key; fails after WAIT seconds."""
        tty = self.tmux("display-message", "-p", "-t", "ken", "#{pane_tty}").strip()
        fd = os.open(tty, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            deadline = time.monotonic() + WAIT
            while termios.tcgetattr(fd)[3] & termios.ICANON:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no key was asked for; the screen:\n{self.screen()}")
                time.sleep(0.02)  # a poll of the terminal's mode, bounded by the deadline
        finally:
            os.close(fd)

    def wait_exit(self) -> None:
        """Wait until the command has ended (the pane stays, dead, to be read)."""
        deadline = time.monotonic() + WAIT
        while self.tmux("display-message", "-p", "-t", "ken", "#{pane_dead}").strip() != "1":
            if time.monotonic() > deadline:
                raise AssertionError(f"the command never ended; the screen:\n{self.screen()}")
            time.sleep(0.05)

    def close(self) -> None:
        subprocess.run(
            [str(TMUX), "-S", self.socket, "kill-server"], capture_output=True, check=False
        )


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[object]:
    opened_terminals: list[Terminal] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Terminal:
        full = {**os.environ, "TERM": "xterm-256color", **(env or {})}
        term = Terminal(tmp_path, [str(KEN_BIN), *args], full)
        opened_terminals.append(term)
        return term

    yield start
    for term in opened_terminals:
        term.close()


def status(ref: str) -> Status:
    with opened() as store:
        return store.get_item(ref).status


def test_ken_panel_in_a_terminal_approves_with_a_edits_in_the_editor_and_quits(terminal, tmp_path):
    with opened() as store:
        first = add("Use pnpm, never npm", store, kind="preference", status=Status.PROPOSED)
        second = add("Deploy on Fridays", store, kind="decision", status=Status.PROPOSED)
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import pathlib, sys\npath = pathlib.Path(sys.argv[1])\n"
        "path.write_text(path.read_text().replace('Fridays', 'Thursdays'))\n"
    )
    term = terminal("panel", env={"KEN_EDITOR": f"{sys.executable} {editor}"})
    term.wait_for("◇ 2 to approve")
    term.keys("2")
    term.wait_for("waiting for a person, best first: 2")
    top = term.wait_for("◇ preference Use pnpm, never npm")
    assert top.index("Use pnpm, never npm") < top.index("Deploy on Fridays")  # best first
    term.keys("a")
    term.wait_for("approved")
    term.wait_for("◇ 1 to approve")
    # The real editor: the app suspends, the editor runs on this terminal, the app comes back.
    term.keys("e")
    term.wait_for("saved")
    term.wait_for("Deploy on Thursdays")
    term.keys("q")
    term.wait_exit()
    assert status(first.id) is Status.ACTIVE
    with opened() as store:
        edited = store.get_item(second.id)
    assert (edited.title, edited.status) == ("Deploy on Thursdays", Status.PROPOSED)


def test_ken_review_in_a_terminal_approves_one_dismisses_one_and_quits(terminal):
    with opened() as store:
        first = add("Use pnpm, never npm", store, kind="correction", status=Status.PROPOSED)
        second = add("Keep PR titles short", store, kind="note", status=Status.PROPOSED)
        third = add("The flaky test is test_sync", store, kind="note", status=Status.PROPOSED)
    term = terminal("review")
    term.wait_for("1 of 3 waiting")
    term.keys("a")
    term.wait_for("approved")
    term.wait_for("1 of 2 waiting")
    term.keys("d")
    term.wait_for("dismiss because")
    term.keys("w")
    term.wait_for("dismissed")
    term.wait_for("1 of 1 waiting")
    term.keys("q")
    term.wait_exit()
    assert "approved 1, dismissed 1" in term.screen()
    assert status(first.id) is Status.ACTIVE
    dismissed = [r for r in (second.id, third.id) if status(r) is Status.DISMISSED]
    assert len(dismissed) == 1
    with opened() as store:
        assert store.get_item(dismissed[0]).dismiss_reason == "wrong"
