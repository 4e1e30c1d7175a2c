"""`ken panel`: browse memory and decide what waits, in a terminal app.

A face over `kenning.browse` (everything it shows) and the library's own writes
(`items.set_status`, `set_pinned`, `undo_status`, `forget`, `editing.save`, and for a
team memory `editing.propose`), each with the actor the CLI's person check gave before
the app started, so a key here decides exactly what the matching `ken` command would.
The panel holds no SQL, scoring or policy.

- **Tabs.** Here (the pack an agent starting here is told, in order, with its token
  count), Waiting (best first, the count in the tab title), Repo, Project and Global (the
  scope of that type that applies here), All, and Sessions (Enter: every pack and recall
  a session was told). A list on the left, the highlighted memory's full text,
  provenance and versions on the right.
- **Never on the event loop.** The store is read and written in thread workers, one at
  a time (one connection, one lock); the list is a `RowList`, which reads only the pages
  on screen, so 100,000 memories open as fast as ten.
- **Outside changes.** Another process (an agent's hook, `ken add` in another terminal)
  commits; the store's `data_version` moves; a timer notices and the tab, its counts and
  the header are read again, the cursor on the memory it was on.
- **Editing** suspends the app and runs the person's editor (`KEN_EDITOR`, ...). The
  editor is a seam (`editor=`): tests pass a function, since a headless pilot cannot
  suspend; the real suspend is driven in tmux.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static, Tab, Tabs

from kenning import browse, editing, items, policy
from kenning.config import Config
from kenning.errors import InvalidInput, KenningError, NotFound, RevisionConflict
from kenning.ids import short_id
from kenning.model import DismissReason, Item, ScopeType, Session, Status
from kenning.pack import Pack
from kenning.printable import clean
from kenning.store import Store
from kenning.tui import show
from kenning.tui.rows import PAGE, Loader, Row, RowList
from kenning.where import NONE_HERE, Where

Editor = Callable[[str], str]  # the editor file's text in, the saved text out

TABS = (
    ("here", "Here"),
    ("waiting", "Waiting"),
    ("repo", "Repo"),
    ("project", "Project"),
    ("global", "Global"),
    ("all", "All"),
    ("sessions", "Sessions"),
)
SCOPE_TABS = {"repo": ScopeType.REPO, "project": ScopeType.PROJECT, "global": ScopeType.GLOBAL}
POLL_SECONDS = 1.0  # how often the panel looks for changes made by other processes
PAST = {
    "approve": "approved",
    "reject": "rejected",
    "archive": "archived",
    "dismiss": "dismissed",
    "restore": "restored",
}
REASON_KEYS = {"c": "covered", "w": "wrong", "o": "one_off", "t": "other"}
# what a refusal names
REFUSED = {"a": "approve", "x": "archive", "d": "dismiss", "p": "pin", "e": "edit", "D": "forget"}
READ_ONLY = frozenset({"approve", "restore", "reject", "archive", "dismiss", "pin", "unpin"})
MEMORY_ACTIONS = READ_ONLY | {"edit", "forget", "undo"}
NO_MEMORY_IN_SESSIONS = "Sessions lists agents' sessions, not memories: 1-6 list memories"
HELP = """\
Tabs (1-7, Tab and Shift+Tab move between them)
  1 Here      the pack an agent starting here is told, in order; its tokens
  2 Waiting   what waits for a person, best first
  3 Repo      this repo's memories, newest first, every status
  4 Project   this project's memories
  5 Global    memories told everywhere
  6 All       every memory
  7 Sessions  agents' sessions; Enter shows what a session was told

Keys on a memory
  a   approve what waits (restore what was archived, rejected or dismissed)
  x   reject what waits, archive what is active
  d   dismiss with a reason: c covered, w wrong, o one_off, t other
  p   pin or unpin (a pinned memory is always in the pack)
  e   edit in your editor (KEN_EDITOR, else $VISUAL, else $EDITOR)
  D   forget: press twice; deletes it and every version (no undo)
  u   undo the last approve, reject, archive, dismiss or restore made here, if
      nothing changed that memory since (pin, edit and forget have no undo)
  /   search this tab (Enter searches, Esc goes back to the whole list)
  ?   this help       q   quit

Moving: up/down or j/k, PgUp/PgDn or space, Home/End or g/G; Enter opens.
The pane on the right: J/K or Shift+Down/Up page it down and up.
"""


def _listed(rows: list[Row]) -> Loader:
    return lambda offset, limit: rows[offset : offset + limit]


def _item_rows(found: list[Item]) -> list[Row]:
    return [Row(i.id, show.item_row(i), i, show.is_dim(i)) for i in found]


def _session_rows(found: list[Session]) -> list[Row]:
    return [Row(s.id, show.session_row(s), s) for s in found]


def _position(loader: Loader, key: str, near: int) -> int:
    """Where the row `key` is now, looked for a page either side of `near`, its place
    before the list was read again (other memories came or went above it); `near` when
    it is not there, having left the list."""
    start = max(0, near - PAGE)
    found = loader(start, 2 * PAGE + 1)
    return next((start + n for n, row in enumerate(found) if row.key == key), near)


def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


@dataclass(frozen=True, slots=True)
class Listing:
    """What a tab lists: how many rows, how to read a page (with the store in hand: the
    panel takes its lock around it), the line above the list and what an empty list says."""

    total: int
    loader: Loader
    status: str
    empty: str
    pack: Pack | None = None


@dataclass(slots=True)
class TabState:
    search: str | None = None
    cursor: int = 0


@dataclass(frozen=True, slots=True)
class Change:
    """The last status change made in the panel: what the memory was before it, and the
    revision the change made (undo only while nothing else changed it since)."""

    before: Item
    revision: str
    action: str


class TextScreen(ModalScreen[None]):
    """A full-screen text to read (what a session was told, the pack); Esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "close", "close"),
    ]
    DEFAULT_CSS = """
    TextScreen { background: $background; }
    TextScreen > VerticalScroll { padding: 0 1; }
    """

    def __init__(self, text: Text) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.text, id="text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(TextScreen):
    def __init__(self) -> None:
        super().__init__(Text(HELP.rstrip("\n")))


class ReasonScreen(ModalScreen[str | None]):
    """Why a memory is dismissed: one key each."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"choose('{reason}')", reason) for key, reason in REASON_KEYS.items()),
        Binding("escape,q", "choose('')", "back"),
    ]
    DEFAULT_CSS = """
    ReasonScreen { align: center middle; }
    ReasonScreen > Static { width: 60; height: auto; border: round $accent; padding: 0 1;
        background: $surface; }
    """

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        text = Text()
        text.append("Dismiss because…\n", style="bold")
        text.append(show.flat(self.title_text, 56) + "\n\n")
        for key, reason in REASON_KEYS.items():
            text.append(f"  {key}  {reason}\n")
        text.append("  Esc  back, nothing dismissed")
        yield Static(text)
        yield Footer()

    def action_choose(self, reason: str) -> None:
        self.dismiss(DismissReason(reason).value if reason else None)


class PanelApp(App[None]):
    """The memory panel over an open store, as `actor` (a person: `ken panel` checks)."""

    TITLE = "ken panel"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    #top { height: 1; background: $panel; }
    #where { width: 1fr; padding: 0 1; text-style: bold; }
    #waiting-note { width: auto; padding: 0 1; text-style: bold; color: $warning; }
    #status { height: 1; padding: 0 1; color: $text-muted; }
    #body { height: 1fr; }
    #rows { width: 45%; min-width: 30; border-right: vkey $panel-lighten-2; }
    #detail { width: 1fr; padding: 0 1; }
    #say { height: auto; min-height: 1; max-height: 4; padding: 0 1; }
    #search { height: 1; border: none; padding: 0 1; display: none; }
    #search.-shown { display: block; }
    App:nocolor RowList > .rowlist--cursor { text-style: bold reverse; }
    App:nocolor #waiting-note { text-style: bold reverse; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "approve", "approve"),
        Binding("a", "restore", "restore"),
        Binding("x", "reject", "reject"),
        Binding("x", "archive", "archive"),
        Binding("d", "dismiss", "dismiss"),
        Binding("p", "pin", "pin"),
        Binding("p", "unpin", "unpin"),
        Binding("e", "edit", "edit"),
        Binding("D", "forget", "forget"),
        # A key that does not apply is not in the footer; pressed anyway, it says why.
        *(Binding(key, f"refused('{action}')", show=False) for key, action in REFUSED.items()),
        Binding("u", "undo", "undo"),
        Binding("slash", "search", "find"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        Binding("escape", "leave", "back", show=False),
        Binding("J,shift+down", "scroll_detail(1)", "pane down", show=False),
        Binding("K,shift+up", "scroll_detail(-1)", "pane up", show=False),
        Binding("tab", "next_tab(1)", "next tab", show=False, priority=True),
        Binding("shift+tab", "next_tab(-1)", "previous tab", show=False, priority=True),
        *(
            Binding(str(n), f"show_tab('{tab}')", label, show=False)
            for n, (tab, label) in enumerate(TABS, 1)
        ),
    ]

    def __init__(
        self,
        store: Store,
        config: Config,
        where: Where,
        actor: policy.Actor,
        *,
        editor: Editor | None = None,
        poll_seconds: float = POLL_SECONDS,
        tab: str = "here",
    ) -> None:
        super().__init__()
        self.store = store
        self.kconfig = config
        self.where = where
        self.actor = actor
        self.editor: Editor = editor or self._suspend_and_edit
        self.poll_seconds = poll_seconds
        self.store_lock = threading.Lock()  # one connection: one reader or writer at a time
        self.tab = tab if tab in dict(TABS) else "here"
        self.tabs: dict[str, TabState] = {tab: TabState() for tab, _ in TABS}
        self.generation = 0  # each listing read; an older one's answer is dropped
        self.waiting = 0
        self.pack: Pack | None = None
        self.last_change: Change | None = None
        self.other_change = ""  # the last change here when it was not one u undoes
        self.armed: tuple[str, int] | None = None  # a first D: the memory, the key's number
        self.inputs = 0  # keys and clicks that reached the panel, numbered as they came
        self.handed: list[tuple[events.Key, int]] = []  # keys handed to a widget, numbered
        self.key_number = 0  # the number of the key (or click) being handled
        self.detail_key: str | None = None
        self.version: int | None = None
        self.message = ""
        self.status_line = ""
        self.acting = False  # a change is being made: keys wait until the list shows it
        self.held: list[events.Key] = []
        self.reread = False  # the list was read again since the change began
        self.closed = False  # set as the app ends: the store is the caller's again

    # --- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield Static(self._where_text(), id="where")
            yield Static("", id="waiting-note")
        tabs = Tabs(
            *(Tab(label, id=f"tab-{tab}") for tab, label in TABS),
            active=f"tab-{self.tab}",
            id="tabs",
        )
        tabs.can_focus = False
        yield tabs
        yield Static("", id="status")
        with Horizontal(id="body"):
            yield RowList(id="rows")
            with VerticalScroll(id="detail-scroll"):
                yield Static("", id="detail")
        yield Input(placeholder="search this tab; Enter searches, Esc goes back", id="search")
        yield Static("", id="say")
        yield Footer(compact=True)

    def _where_text(self) -> str:
        here = self.where.repo or self.where.cwd
        return show.flat(f"ken panel · {here}")

    def on_mount(self) -> None:
        self.query_one(RowList).focus()
        self._background(self._read_version)
        self.load()
        self.set_interval(self.poll_seconds, self.poll)

    def on_unmount(self) -> None:
        self.hand_back()

    def hand_back(self) -> None:
        """Wait for the store job in hand, then touch the store no more: the caller may
        close it (a thread still reading a closed connection could crash the process)."""
        with self.store_lock:
            self.closed = True

    @property
    def rows(self) -> RowList:
        return self.query_one(RowList)

    def _disarm(self) -> None:
        """Forget a first D (another action, a tab left), and the line that asked for a
        second D says so no more. A second D forgets only when it is the very next key
        (or click) after the first: see `on_event` and `action_forget`."""
        if self.armed is not None:
            self.armed = None
            self.say("")

    def say(self, message: str) -> None:
        """One line at the bottom: what a key did, or why it did nothing."""
        self.message = show.flat(message)
        self.query_one("#say", Static).update(Text(self.message))

    # --- the store, off the event loop ------------------------------------------------------

    def _background(self, job: Callable[[], Callable[[], None] | None]) -> None:
        """Run `job` in a thread with the store to itself; what it returns runs on the
        event loop afterwards. A library error becomes a line at the bottom."""

        def work() -> None:
            then: Callable[[], None] | None
            try:
                with self.store_lock:
                    if self.closed:
                        return
                    then = job()
            except KenningError as exc:
                message = f"ken: {exc}"

                def then() -> None:
                    self.say(message)
                    self._release()  # nothing more comes of it: the held keys go on

            if then is not None:
                self._on_loop(then)

        self.run_worker(work, thread=True, group="store")

    def _act(self, job: Callable[[], Callable[[], None] | None]) -> None:
        """A change to a memory: keys pressed until the list shows its result are held,
        then handled in order, each on the row the cursor is on by then (type-ahead on a
        row the change just moved would act on a memory no longer there)."""
        self.acting, self.reread = True, False
        self._background(job)

    def _release(self) -> None:
        if not self.acting:
            return
        self.acting = False
        held, self.held = self.held, []
        for key in held:  # in order; one that changes a memory holds those after it again
            self.post_message(events.Key(key.key, key.character))

    async def on_event(self, event: events.Event) -> None:
        # A key reaches the app twice: from the terminal, then back from the list it was
        # handed to, unhandled; either way, while a change is made it waits, and goes
        # round again from the start once the list shows the change.
        if self.acting and isinstance(event, events.Key) and len(self.screen_stack) == 1:
            self.held.append(event)
            return
        self._number(event)
        await super().on_event(event)

    def _number(self, event: events.Event) -> None:
        """Number each key and click as it comes from the terminal, and know, when a key
        comes back from the list and its binding acts, which one it was: two D presses
        forget only with no key or click between them, however fast they came (j k typed
        in one burst are handled in order after the first D, but the list reports the
        cursor's moves later still, with the cursor back on the memory by then)."""
        if isinstance(event, (events.Key, events.MouseDown)) and not event.is_forwarded:
            self.inputs += 1
            self.key_number = self.inputs  # a priority binding (Tab) acts now
            if isinstance(event, events.Key):
                self.handed = [*self.handed[-63:], (event, self.inputs)]
        elif isinstance(event, events.Key):  # back, unhandled: the app's bindings act now
            at = next((n for n, (key, _) in enumerate(self.handed) if key is event), None)
            if at is None:  # not numbered (long gone): a number no D follows
                self.inputs += 1
                self.key_number = self.inputs
            else:
                self.key_number = self.handed[at][1]
                del self.handed[: at + 1]
            if event.key != "D":
                self._disarm()

    def _on_loop(self, then: Callable[[], None]) -> None:
        def live() -> None:
            if self.live:
                then()

        # RuntimeError: the app has stopped meanwhile, there is nothing to show it on.
        with contextlib.suppress(RuntimeError):
            self.call_from_thread(live)

    @property
    def live(self) -> bool:
        """Whether the app still has its screen (an answer may arrive as it quits)."""
        return bool(self.screen_stack)

    def _locked(self, loader: Loader) -> Loader:
        def read(offset: int, limit: int) -> list[Row]:
            with self.store_lock:
                return [] if self.closed else loader(offset, limit)

        return read

    def _read_version(self) -> None:
        self.version = self.store.data_version()

    def poll(self) -> None:
        """Read again when another process changed the store."""

        def job() -> Callable[[], None] | None:
            now = self.store.data_version()
            if now == self.version:
                return None
            self.version = now
            return lambda: self.load(keep_cursor=True)

        self._background(job)

    # --- listing a tab ----------------------------------------------------------------------

    def load(self, *, keep_cursor: bool = False) -> None:
        """Read the current tab again (its count, its first page, the waiting count);
        with `keep_cursor`, the cursor stays on the memory it was on, wherever that is
        now, so a key pressed next acts on the memory the person picked."""
        self.generation += 1
        generation, tab = self.generation, self.tab
        state = self.tabs[tab]
        cursor = self.rows.cursor if keep_cursor else state.cursor
        current = self.rows.current if keep_cursor else None

        def job() -> Callable[[], None]:
            listing = self._listing(tab, state.search)
            at = cursor if current is None else _position(listing.loader, current.key, cursor)
            waiting = browse.waiting_count(self.store)
            return lambda: self._shown(generation, tab, listing, waiting, at)

        self._background(job)

    def _listing(self, tab: str, search: str | None) -> Listing:
        store = self.store
        found = f'"{search}" in {dict(TABS)[tab]}' if search else ""
        if tab == "here":
            pack = browse.here(store, self.kconfig, self.where)
            shown = browse.find_told(store, pack, search) if search else list(pack.items)
            more = f"; {pack.omitted} more did not fit" if pack.omitted else ""
            status = (
                f"{found}: {len(shown)} of the pack"
                if search
                else f"the pack told here: {_plural(len(shown), 'memory', 'memories')}, "
                f"{pack.tokens:,} tokens{more} · Enter shows it"
            )
            return Listing(
                len(shown), _listed(_item_rows(shown)), status, "nothing is told here yet", pack
            )
        if tab == "sessions":
            if search:
                hits = _session_rows(browse.find_sessions(store, search))
                return Listing(len(hits), _listed(hits), f"{found}: {len(hits)} found", "none")
            total = browse.session_count(store)
            return Listing(
                total,
                lambda o, n: _session_rows(browse.sessions_page(store, o, n)),
                f"sessions, newest first: {total:,} (Enter: what one was told)",
                "no sessions recorded yet: they start when an agent's hooks run",
            )
        view = self._view(tab)
        if view is None:
            return Listing(0, _listed([]), "", NONE_HERE[SCOPE_TABS[tab]])
        if search:
            hits = _item_rows(browse.find(store, view, search))
            cap = " (the best shown)" if len(hits) >= browse.SEARCH_LIMIT else ""
            return Listing(
                len(hits), _listed(hits), f"{found}: {len(hits)} found, best first{cap}", "none"
            )
        total = browse.count(store, view)
        loader: Loader = lambda o, n: _item_rows(browse.page(store, view, o, n))  # noqa: E731
        if tab == "waiting":
            return Listing(
                total,
                loader,
                f"waiting for a person, best first: {total:,}",
                "nothing waits for a person",
            )
        where = view.scopes[0] if view.scopes else "every scope"
        return Listing(
            total,
            loader,
            show.flat(f"{where}, newest first, every status: {total:,}"),
            "no memories here yet",
        )

    def _view(self, tab: str) -> browse.View | None:
        if tab == "waiting":
            return browse.WAITING
        if tab == "all":
            return browse.ALL
        return browse.scope_view(self.where, SCOPE_TABS[tab])

    def _shown(
        self, generation: int, tab: str, listing: Listing, waiting: int, cursor: int
    ) -> None:
        self.waiting = waiting
        self._show_waiting()
        if generation != self.generation or tab != self.tab:
            return
        if tab == "here":
            self.pack = listing.pack
        self.status_line = listing.status
        self.query_one("#status", Static).update(Text(listing.status))
        rows = self.rows
        rows.empty = listing.empty
        rows.cursor = cursor
        rows.reset(listing.total, self._locked(listing.loader), keep_cursor=True)
        rows.move_to(rows.cursor)
        if not listing.total:
            self._show_detail(None, Text(""))
        self.refresh_bindings()
        self.reread = True  # the held keys go on once the row under the cursor is read

    def _show_waiting(self) -> None:
        n = self.waiting
        note = f"◇ {n:,} to approve" if n else ""
        self.query_one("#waiting-note", Static).update(note)
        self.query_one("#tab-waiting", Tab).label = f"Waiting ({n:,})" if n else "Waiting"

    # --- the pane on the right --------------------------------------------------------------

    def on_row_list_highlighted(self, message: RowList.Highlighted) -> None:
        if not self.live:
            return
        row = message.row
        self.refresh_bindings()
        if self.reread:
            self._release()
        if row is None:
            self.detail_key = None
            self._show_detail(None, Text(""))
            return
        self.detail_key = row.key
        if isinstance(row.value, Session):
            self._show_detail(row.key, show.session(row.value))
            return
        key = row.key

        def job() -> Callable[[], None] | None:
            if self.detail_key != key:
                return None  # the cursor moved on before this was read
            try:
                text = show.memory(browse.detail(self.store, key))
            except NotFound:
                text = Text("(forgotten since)")
            return lambda: self._show_detail(key, text)

        self._background(job)

    def action_scroll_detail(self, step: int) -> None:
        """Page the pane on the right (a long memory's provenance, neighbours and
        versions are below it), the list keeping the keys."""
        pane = self.query_one("#detail-scroll", VerticalScroll)
        if step > 0:
            pane.scroll_page_down(animate=False)
        else:
            pane.scroll_page_up(animate=False)

    def _show_detail(self, key: str | None, text: Text) -> None:
        if key is not None and key != self.detail_key:
            return
        self.query_one("#detail", Static).update(text)
        self.query_one("#detail-scroll", VerticalScroll).scroll_home(animate=False)

    # --- which keys apply -------------------------------------------------------------------

    def current_item(self) -> Item | None:
        row = self.rows.current
        return row.value if row is not None and isinstance(row.value, Item) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in MEMORY_ACTIONS:
            return True
        if action == "undo":  # in Sessions too: the last change made here, in any tab
            return True
        if self.tab == "sessions":
            return False
        item = self.current_item()
        if item is None:
            return False  # nothing highlighted: no key for a memory applies
        if action in READ_ONLY and policy.team_origin(item) is not None:
            return False  # a team memory changes on the server (e files a revision there)
        match action:
            case "approve" | "restore" | "reject" | "dismiss":
                return item.status in items.allowed_from(action)
            case "archive":  # x on a proposal rejects it
                return item.status is Status.ACTIVE
            case "pin" | "unpin":  # the footer says which p does
                return item.pinned == (action == "unpin")
        return True

    # --- tabs and search ---------------------------------------------------------------------

    def on_tabs_tab_activated(self, message: Tabs.TabActivated) -> None:
        tab = (message.tab.id or "tab-here").removeprefix("tab-")
        if tab == self.tab and self.generation:
            return
        self.tabs[self.tab].cursor = self.rows.cursor
        self.tab = tab
        self._disarm()
        self.say("")  # the line spoke of the tab left behind
        self.detail_key = None
        self._show_detail(None, Text(""))
        self.load()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(Tabs).active = f"tab-{tab}"

    def action_next_tab(self, step: int) -> None:
        names = [t for t, _ in TABS]
        self.action_show_tab(names[(names.index(self.tab) + step) % len(names)])

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.value = self.tabs[self.tab].search or ""
        box.add_class("-shown")
        box.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        text = message.value.strip()
        self._close_search()
        state = self.tabs[self.tab]
        state.search = text or None
        state.cursor = 0
        self.load()

    def _close_search(self) -> None:
        self.query_one("#search", Input).remove_class("-shown")
        self.rows.focus()

    def action_leave(self) -> None:
        """Esc: close the search box, else leave a search for the whole list."""
        box = self.query_one("#search", Input)
        if box.has_class("-shown"):
            self._close_search()
            return
        state = self.tabs[self.tab]
        if state.search:
            state.search = None
            state.cursor = 0
            self.load()

    def on_row_list_selected(self, message: RowList.Selected) -> None:
        value = message.row.value
        if isinstance(value, Session):
            session = value

            def job() -> Callable[[], None]:
                text = show.told(session, browse.told(self.store, session.id))
                return lambda: self._open(text)

            self._background(job)
        elif self.tab == "here" and self.pack is not None:
            self._open(Text(clean(self.pack.text)))

    def _open(self, text: Text) -> None:
        self.push_screen(TextScreen(text))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # --- deciding ---------------------------------------------------------------------------

    def _target(self) -> Item | None:
        item = self.current_item()
        if item is None:
            self.say("no memory is highlighted")
        return item

    def action_refused(self, action: str) -> None:
        """A key that does not apply to the highlighted memory: the library says why."""
        if self.tab == "sessions":
            self.say(NO_MEMORY_IN_SESSIONS)
        elif action == "pin":
            self._pin()
        elif action in ("edit", "forget"):  # they apply to every memory: none is highlighted
            self._target()
        else:
            self._decide(action)

    def action_approve(self) -> None:
        self._decide("approve")

    def action_restore(self) -> None:
        self._decide("restore")

    def action_reject(self) -> None:
        self._decide("reject")

    def action_archive(self) -> None:
        self._decide("archive")

    def action_dismiss(self) -> None:
        item = self._target()
        if item is None:
            return
        self._disarm()

        def chosen(reason: str | None) -> None:
            if reason:
                self._decide("dismiss", reason, item)

        self.push_screen(ReasonScreen(item.title), chosen)

    def _decide(self, action: str, reason: str | None = None, item: Item | None = None) -> None:
        item = item or self._target()
        if item is None:
            return
        self._disarm()
        ref, shown = item.id, item.revision

        def job() -> Callable[[], None]:
            before = items.get(self.store, ref)
            try:  # what is decided is what was shown
                after = items.set_status(
                    self.store, ref, action, reason=reason, actor=self.actor, shown=shown
                )
            except items.ToldAlready as exc:  # said with the panel's keys, not the command
                raise InvalidInput(exc.said("d then c")) from None
            except RevisionConflict:
                raise InvalidInput(
                    f"{short_id(ref)} changed since it was shown: nothing decided; read it again"
                ) from None
            change = Change(before, after.revision, action)
            why = f" ({after.dismiss_reason})" if after.dismiss_reason else ""
            message = f"{PAST[action]} {short_id(ref)}{why}: {after.title}  (u undoes it)"
            return lambda: self._changed(message, change)

        self._act(job)

    def _changed(
        self, message: str, change: Change | None = None, *, other: str | None = None
    ) -> None:
        """After a change: say what it did, read the list again. `change` is one u undoes;
        `other` names one it does not (a pin, an edit, a forget), after which u refuses
        rather than undo something older, elsewhere, unasked."""
        if change is not None or other is not None:
            self.last_change, self.other_change = change, other or ""
        self.say(message)
        self.load(keep_cursor=True)
        self.detail_key = None  # read the highlighted memory again, changed or new

    def action_pin(self) -> None:
        self._pin()

    def action_unpin(self) -> None:
        self._pin()

    def _pin(self) -> None:
        item = self._target()
        if item is None:
            return
        self._disarm()
        ref = item.id

        def job() -> Callable[[], None]:
            now = items.get(self.store, ref)
            done = items.set_pinned(self.store, ref, not now.pinned, actor=self.actor)
            word = "pinned" if done.pinned else "unpinned"
            said = f"{word} {short_id(ref)}"
            return lambda: self._changed(f"{said}: {done.title}", other=said)

        self._act(job)

    def action_forget(self) -> None:
        item = self._target()
        if item is None:
            return
        if self.armed != (item.id, self.key_number - 1):  # the key just before: the first D
            self.armed = (item.id, self.key_number)
            self.say(f"press D again to forget {short_id(item.id)} and every version of it")
            return
        self._disarm()
        ref = item.id

        def job() -> Callable[[], None]:
            target = items.get(self.store, ref)
            items.forget(self.store, [target], actor=self.actor)
            if self.last_change and self.last_change.before.id == ref:
                self.last_change = None
            said = f"forgot {short_id(ref)}"
            return lambda: self._changed(f"{said}: {target.title}", other=said)

        self._act(job)

    def action_undo(self) -> None:
        self._disarm()
        change = self.last_change
        if change is None:
            last = ""
            if self.other_change:
                last = f"the last change here ({self.other_change}) is not one u undoes; "
            self.say(
                f"nothing to undo: {last}u undoes the last approve, reject, archive, dismiss "
                "or restore made here"
            )
            return

        def job() -> Callable[[], None]:
            self.last_change = None  # undone, or changed since: either way, no undo left
            back = items.undo_status(
                self.store, change.before, expected_revision=change.revision, actor=self.actor
            )
            message = (
                f"undid the {change.action} of {short_id(back.id)}: {back.status.value} "
                f"again: {back.title}"
            )
            return lambda: self._changed(message, other="")

        self._act(job)

    # --- editing ----------------------------------------------------------------------------

    def action_edit(self) -> None:
        item = self._target()
        if item is None:
            return
        self._disarm()
        ref = item.id

        def job() -> Callable[[], None]:
            fresh = items.get(self.store, ref)
            if policy.team_origin(fresh) is None:  # a team memory's edit is a proposal
                items.check_not_synced(fresh)
            return lambda: self._edit(fresh)

        self._background(job)

    def _edit(self, item: Item) -> None:
        before = editing.editor_text(item)
        try:
            after = self.editor(before)
        except KenningError as exc:
            self.say(f"ken: {exc}")
            return
        if after == before:
            self.say("nothing changed")
            return

        def job() -> Callable[[], None]:
            with editing.kept_if_refused(item, after):
                edit = editing.parse(after)
                scope = self.where.scope(edit.scope) if edit.scope else None
                if policy.team_origin(item) is not None:  # read-only here: as `ken edit` does
                    said = editing.propose(self.store, item, edit, scope=scope)
                    return lambda: self._changed(said, other=f"edited {short_id(item.id)}")
                saved = editing.save(self.store, item, edit, scope=scope, actor=self.actor)
            return lambda: self._changed(
                f"saved {short_id(saved.id)} as a new version", other=f"edited {short_id(saved.id)}"
            )

        self._background(job)

    def _suspend_and_edit(self, text: str) -> str:
        """The person's editor on this terminal, the app suspended meanwhile."""
        from textual.app import SuspendNotSupported

        try:
            with self.suspend():
                return editing.run_editor(text, editing.command(self.kconfig))
        except SuspendNotSupported:
            raise KenningError(
                "this terminal cannot hand itself to an editor: use `ken edit ID`"
            ) from None


def run(store: Store, config: Config, where: Where, actor: policy.Actor, **kw: Any) -> None:
    """Open the panel on this terminal until the person quits."""
    app = PanelApp(store, config, where, actor, **kw)
    try:
        app.run()
    finally:
        app.hand_back()
