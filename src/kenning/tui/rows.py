"""A list of any length that holds only the rows on screen and near it.

A tab may list 100,000 memories; reading them all to show twenty would make opening,
scrolling and searching wait on the whole store. `RowList` knows only how many rows
there are and a `loader` that reads `limit` rows from `offset` (a page). It draws each
line of the screen itself (Textual's line API), asks for a page the first time one of
its rows comes into view, shows a placeholder until it arrives, and keeps a few pages
(the cursor's and the last ones seen). Pages are read in a thread worker, so the store is
never read on the event loop; a `reset` (another tab, a search, the store changed
underneath) starts a new generation, and pages from an older one are dropped.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

PAGE = 100  # rows read at once
KEEP_PAGES = 8  # pages kept in memory


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a list: the key of what it shows, the text, and the value itself."""

    key: str
    text: str
    value: Any = None
    dim: bool = False


Loader = Callable[[int, int], list[Row]]


class RowList(ScrollView, can_focus=True):
    """A cursor over `total` rows, read a page at a time through `loader`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown,space", "page(1)", "page down", show=False),
        Binding("home,g", "jump(0)", "first", show=False),
        Binding("end,G", "jump(-1)", "last", show=False),
        Binding("enter", "select", "open", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"rowlist--cursor", "rowlist--dim"}
    DEFAULT_CSS = """
    RowList { overflow-x: hidden; }
    RowList > .rowlist--cursor { background: $accent 40%; text-style: bold; }
    RowList:focus > .rowlist--cursor { background: $accent; color: $text; }
    RowList > .rowlist--dim { color: $text-muted; }
    """

    class Highlighted(Message):
        """The cursor rests on a row that is loaded (None: the list is empty)."""

        def __init__(self, rows: RowList, row: Row | None) -> None:
            super().__init__()
            self.rows = rows
            self.row = row

    class Selected(Message):
        """Enter on a row."""

        def __init__(self, rows: RowList, row: Row) -> None:
            super().__init__()
            self.rows = rows
            self.row = row

    def __init__(self, *, empty: str = "nothing here", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.total = 0
        self.cursor = 0
        self.empty = empty
        self.generation = 0
        self.pages: OrderedDict[int, list[Row]] = OrderedDict()
        self.pending: set[int] = set()
        self.loader: Loader | None = None
        self._announced: str | None = None

    # --- what the app calls ---------------------------------------------------------------

    def reset(self, total: int, loader: Loader, *, keep_cursor: bool = False) -> None:
        """Show `total` rows read through `loader`, from the top unless `keep_cursor`
        (then the cursor keeps its position, clamped to the new length)."""
        self.generation += 1
        self.total = total
        self.loader = loader
        self.pages.clear()
        self.pending.clear()
        self._announced = None
        self.cursor = min(self.cursor, max(0, total - 1)) if keep_cursor else 0
        self.virtual_size = Size(self.size.width, total)
        if not keep_cursor:
            self.scroll_to(0, 0, animate=False)
        self._request(self.cursor // PAGE)
        self.refresh()
        self._announce()

    @property
    def current(self) -> Row | None:
        """The row under the cursor, when it is loaded."""
        return self.row_at(self.cursor)

    def row_at(self, index: int) -> Row | None:
        page = self.pages.get(index // PAGE)
        if page is None or index % PAGE >= len(page):
            return None
        return page[index % PAGE]

    @property
    def loaded(self) -> bool:
        """Whether the rows on screen and under the cursor are all read."""
        top = int(self.scroll_offset.y)
        wanted = {i // PAGE for i in (self.cursor, top, top + self.size.height - 1)}
        return not self.total or all(p in self.pages for p in wanted if p * PAGE < self.total)

    # --- pages -----------------------------------------------------------------------------

    def _request(self, page: int) -> None:
        if self.loader is None or page in self.pages or page in self.pending:
            return
        if page < 0 or page * PAGE >= self.total:
            return
        self.pending.add(page)
        generation, loader = self.generation, self.loader

        def work() -> None:
            rows = loader(page * PAGE, PAGE)
            # RuntimeError: the app stopped meanwhile; there is no list to show them in.
            with contextlib.suppress(RuntimeError):
                self.app.call_from_thread(self._arrived, generation, page, rows)

        self.run_worker(work, thread=True, group="rows")

    def _arrived(self, generation: int, page: int, rows: list[Row]) -> None:
        if generation != self.generation:
            return
        self.pending.discard(page)
        self.pages[page] = rows
        self.pages.move_to_end(page)
        keep = {self.cursor // PAGE}
        while len(self.pages) > KEEP_PAGES:
            oldest = next(p for p in self.pages if p not in keep)
            del self.pages[oldest]
        self.refresh()
        self._announce()

    def _announce(self) -> None:
        row = self.current
        key = "" if row is None else f"{self.generation}:{row.key}:{row.text}"
        if self.total == 0:
            key = f"{self.generation}:empty"
        elif row is None:
            return
        if key != self._announced:
            self._announced = key
            self.post_message(self.Highlighted(self, row))

    # --- drawing ---------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        index = int(self.scroll_offset.y) + y
        base = self.rich_style
        if self.total == 0:  # what an empty list says, wrapped to the list's width
            lines = Text(self.empty).wrap(self.app.console, max(1, width - 1))
            text = f" {lines[y].plain}" if y < len(lines) else ""
            return Strip([Segment(set_cell_size(text, width), base)], width)
        if index >= self.total:
            return Strip.blank(width, base)
        row = self.row_at(index)
        if row is None:
            self._request(index // PAGE)
            return Strip([Segment(set_cell_size(" …", width), base)], width)
        style: Style = base
        if row.dim:
            style = style + self.get_component_rich_style("rowlist--dim")
        if index == self.cursor:
            style = style + self.get_component_rich_style("rowlist--cursor")
        # Cells, not characters: a CJK letter or an emoji takes two columns on screen.
        text = row.text
        if cell_len(text) > width:
            text = set_cell_size(text, max(0, width - 1)) + "…"
        return Strip([Segment(set_cell_size(text, width), style)], width)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, self.total)

    # --- moving ----------------------------------------------------------------------------

    def move_to(self, index: int) -> None:
        if not self.total:
            return
        index = max(0, min(self.total - 1, index))
        old, self.cursor = self.cursor, index
        self._request(index // PAGE)
        self.scroll_to_region(Region(0, index, 1, 1), animate=False, force=True)
        self.refresh_row(old)
        self.refresh_row(index)
        self._announce()

    def refresh_row(self, index: int) -> None:
        y = index - int(self.scroll_offset.y)
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def action_cursor(self, step: int) -> None:
        self.move_to(self.cursor + step)

    def action_page(self, step: int) -> None:
        self.move_to(self.cursor + step * max(1, self.size.height - 1))

    def action_jump(self, where: int) -> None:
        self.move_to(self.total - 1 if where < 0 else where)

    def action_select(self) -> None:
        row = self.current
        if row is not None:
            self.post_message(self.Selected(self, row))

    def on_click(self, event: Any) -> None:
        self.focus()
        self.move_to(int(self.scroll_offset.y) + int(event.y))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        top = int(new_value)
        for page in {top // PAGE, (top + self.size.height) // PAGE}:
            self._request(page)
