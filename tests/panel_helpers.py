"""Driving `ken panel` (kenning.tui.panel) with Textual's pilot, and reading its screen."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from textual import events
from textual.worker import WorkerState

from helpers import opened
from kenning import locate, policy
from kenning.config import Config
from kenning.tui.panel import PanelApp

TAB_KEYS = {"here": "1", "waiting": "2", "repo": "3", "project": "4", "global": "5"}
TAB_KEYS |= {"all": "6", "sessions": "7"}
MEMORY_TABS = ("here", "waiting", "repo", "project", "global", "all")
BUSY = (WorkerState.PENDING, WorkerState.RUNNING)
LOOK_SECONDS = 0.01  # between two looks at the panel while it settles


def screen_text(app: PanelApp) -> str:
    """The screen as plain text, as a person would read it."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        color_system=None,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()


async def settle(app: PanelApp, pilot: Any, timeout: float = 15.0) -> None:
    """Wait, bounded, until no worker runs, the rows on screen are read and the screen has
    drawn them (no layout, repaint or dirty widget pending, no message queued):
    three looks in a row, since a worker's answer may start the next one. On a
    loaded machine the screen's update timer can lag the rows by a frame or more,
    and a test that reads the screen then sees only its header."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline:
        await pilot.pause(LOOK_SECONDS)  # not pause(): it waits for the CPU to idle
        busy = any(w.state in BUSY for w in app.workers) or any(
            # keys typed ahead still queued: a loaded machine may not have read them yet
            pump.message_queue_size
            for pump in (app, app.screen, app.focused)
            if pump is not None
        )
        rows = app.screen.query("RowList")
        loaded = all(r.loaded and not r.pending for r in rows)  # type: ignore[attr-defined]
        quiet = quiet + 1 if not busy and loaded and drawn(app) else 0
        if quiet >= 3:
            if whole(app):  # rendered once, on the last look: the costly part of a look
                return
            quiet = 0
    raise AssertionError("the panel kept working past the timeout")


def drawn(app: PanelApp) -> bool:
    """Whether the screen shows what its widgets hold (Textual's pending-update flags)."""
    screen = app.screen
    return not (
        screen._layout_required
        or screen._scroll_required
        or screen._repaint_required
        or screen._recompose_required
        or screen._dirty_widgets
    )


def whole(app: PanelApp) -> bool:
    """Whether the screen is drawn to its last line, where the footer of keys is: under
    load, a look between a layout and its paint sees the header alone."""
    lines = screen_text(app).splitlines()
    return len(lines) >= app.size.height and bool(lines[app.size.height - 1].strip())


CHARACTERS = {"slash": "/", "question_mark": "?", "space": " ", "enter": "\r"}
CHARACTERS |= {"escape": "\x1b", "tab": "\t"}


async def press(app: PanelApp, pilot: Any, *keys: str) -> None:
    """Press each key (a name, or a letter or digit) and let the panel answer it before the
    next. The key goes to the app as the terminal driver sends it; `pilot.press` would also
    wait for the CPU to idle after each key, which a busy machine makes slow."""
    for key in keys:
        assert len(key) > 1 or key.isalnum(), f"name the key {key!r}"
        char = key if len(key) == 1 else CHARACTERS.get(key)
        await app._post_message(events.Key(key, char))
        await settle(app, pilot)


def drive(
    test: Callable[[PanelApp, Any], Awaitable[None]],
    *,
    size: tuple[int, int] = (80, 24),
    editor: Callable[[str], str] | None = None,
    poll_seconds: float = 3600,
    tab: str | None = None,
) -> None:
    """Open the panel on KEN_DB here, as a person, go to `tab`, and run `test` on it."""

    async def main() -> None:
        with opened() as store:
            where = locate.here(store, Config())
            app = PanelApp(
                store, Config(), where, policy.PERSON, editor=editor, poll_seconds=poll_seconds
            )
            app.animation_level = "none"  # the tabs' underline would be caught mid-slide
            async with app.run_test(size=size) as pilot:
                await settle(app, pilot)
                if tab is not None:
                    await press(app, pilot, TAB_KEYS[tab])
                    assert app.tab == tab
                await test(app, pilot)
                await settle(app, pilot)
            assert app.closed  # the store is handed back, no thread reads it any more

    asyncio.run(main())


def row_keys(app: PanelApp) -> list[str]:
    rows = app.rows
    return [r.key for i in range(rows.total) if (r := rows.row_at(i)) is not None]
