"""`ken panel`, driven with Textual's pilot: every key in every tab, the editor through its
seam, the store changing underneath, colour and NO_COLOR, and `ken panel` itself."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual import events

from conftest import ken
from helpers import add, opened
from kenning import browse, items, locate, policy
from kenning.config import Config
from kenning.errors import KenningError
from kenning.model import Provenance, Session, Status
from kenning.team import client as team_client
from kenning.team import sync as team_sync
from kenning.tui.panel import HelpScreen, ReasonScreen, TextScreen
from panel_helpers import (
    CHARACTERS,
    MEMORY_TABS,
    TAB_KEYS,
    drive,
    press,
    row_keys,
    screen_text,
    settle,
)

REPO = "repo:github.com/acme/shop"
PROJECT = "project:shop"
SCOPE_OF = {"here": REPO, "waiting": "global", "repo": REPO, "project": PROJECT}
SCOPE_OF |= {"global": "global", "all": "global"}
TABS_WITH_PROPOSALS = ("waiting", "repo", "project", "global", "all")  # Here: only what is told


@pytest.fixture(autouse=True)
def shop(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The panel opens in a repo with an origin and a project, so every tab has a scope."""
    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("KEN_PROJECT", "shop")
    return git_repo


def seed(tab: str, status: Status = Status.ACTIVE, text: str = "Use pnpm, never npm") -> str:
    """A memory that `tab` lists first (another, elsewhere, that it does not list); its id."""
    with opened() as store:
        add("A note for another project", store, scope="project:other")
        item = add(text, store, kind="preference", scope=SCOPE_OF[tab], status=status)
    return str(item.id)


def status_of(ref: str) -> str:
    with opened() as store:
        return store.get_item(ref).status.value


# --- opening and the tabs ---------------------------------------------------------------------


def test_the_panel_opens_on_here_with_the_pack_in_order_and_its_token_count():
    with opened() as store:
        first = add("Use pnpm, never npm", store, kind="preference", scope=REPO)
        second = add("Deploys go through make release", store, kind="decision", scope=REPO)
        add("Waits for a person", store, kind="preference", status=Status.PROPOSED)
        pack = browse.here(store, Config(), locate.here(store, Config()))

    async def check(app, pilot):
        assert app.tab == "here"
        assert row_keys(app) == [i.id for i in pack.items]
        assert set(row_keys(app)) == {first.id, second.id}
        assert f"{pack.tokens:,} tokens" in app.status_line
        text = screen_text(app)
        assert "Use pnpm, never npm" in text and "Waiting (1)" in text
        assert "◇ 1 to approve" in text

    drive(check)


@pytest.mark.parametrize("tab", list(TAB_KEYS))
def test_each_tab_lists_what_it_says(tab):
    with opened() as store:
        repo = add("Repo rule", store, scope=REPO)
        project = add("Project note", store, scope=PROJECT)
        glob = add("Global rule", store)
        waiting = add("Waiting rule", store, kind="preference", status=Status.PROPOSED)
        archived = add("Archived repo rule", store, scope=REPO)
        items.set_status(store, archived.id, "archive", actor=policy.PERSON)
        other = add("Another project's note", store, scope="project:other")
        session = store.upsert_session(
            Session(id="01JSESSION0000000000000001", agent="codex", started_at="2026-12-01")
        )
    expected = {
        "here": {repo.id, project.id, glob.id},
        "waiting": {waiting.id},
        "repo": {repo.id, archived.id},
        "project": {project.id},
        "global": {glob.id, waiting.id},
        "all": {repo.id, project.id, glob.id, waiting.id, archived.id, other.id},
        "sessions": {session.id},
    }

    async def check(app, pilot):
        assert set(row_keys(app)) == expected[tab]

    drive(check, tab=tab)


def test_number_keys_and_tab_move_between_tabs():
    async def check(app, pilot):
        seen = [app.tab]
        for _ in range(7):
            await press(app, pilot, "tab")
            seen.append(app.tab)
        assert seen == [*TAB_KEYS, "here"]
        await press(app, pilot, "shift+tab")
        assert app.tab == "sessions"
        await press(app, pilot, "3")
        assert app.tab == "repo"

    drive(check)


def test_a_tab_with_no_scope_here_says_so(monkeypatch):
    monkeypatch.delenv("KEN_PROJECT")

    async def check(app, pilot):
        assert app.rows.total == 0
        assert "no project here" in screen_text(app)

    drive(check, tab="project")


# --- a: approve (restore) ------------------------------------------------------------------


@pytest.mark.parametrize("tab", TABS_WITH_PROPOSALS)
def test_a_approves_what_waits_and_the_header_count_goes(tab):
    ref = seed(tab, Status.PROPOSED)

    async def check(app, pilot):
        assert app.rows.current.key == ref
        assert "◇ 1 to approve" in screen_text(app)
        await press(app, pilot, "a")
        assert status_of(ref) == "active"
        assert app.message.startswith(f"approved {ref[-6:].lower()}")
        assert "to approve" not in screen_text(app)

    drive(check, tab=tab)


def test_keys_typed_ahead_act_each_on_the_row_the_cursor_is_on_when_it_is_handled():
    with opened() as store:
        made = [
            add(f"Proposal number {n} about builds", store, status=Status.PROPOSED).id
            for n in range(6)
        ]

    async def check(app, pilot):
        for _ in range(5):  # faster than the list is read again after each approve
            await app._post_message(events.Key("a", "a"))
        await settle(app, pilot)
        assert "cannot" not in app.message, app.message
        assert sorted(status_of(ref) for ref in made) == ["active"] * 5 + ["proposed"]
        assert app.rows.total == 1

    drive(check, tab="waiting")


def test_a_on_a_copy_of_what_is_told_is_refused_naming_the_panels_keys():
    with opened() as store:
        told = add("Use pnpm, never npm", store, kind="preference")
        copy = add("Use pnpm, never npm", store, kind="preference", status=Status.PROPOSED)

    async def check(app, pilot):
        assert app.rows.current.key == copy.id
        await press(app, pilot, "a")
        assert status_of(copy.id) == "proposed"
        assert f"it says what {told.id[-6:].lower()} says" in app.message
        assert "dismiss it as covered (d then c)" in app.message
        assert "ken dismiss" not in app.message

    drive(check, tab="waiting")


def test_a_on_a_memory_already_told_changes_nothing_and_says_why():
    ref = seed("here")

    async def check(app, pilot):
        await press(app, pilot, "a")
        assert status_of(ref) == "active"
        assert app.message.endswith("only proposed items can be approved")

    drive(check, tab="here")


@pytest.mark.parametrize("tab", ["repo", "project", "global", "all"])
def test_a_restores_what_was_archived(tab):
    ref = seed(tab)
    with opened() as store:
        items.set_status(store, ref, "archive", actor=policy.PERSON)

    async def check(app, pilot):
        assert "a restore" in screen_text(app)
        await press(app, pilot, "a")
        assert status_of(ref) == "active"

    drive(check, tab=tab)


# --- x: reject or archive ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tab", "status", "after"),
    [(t, Status.PROPOSED, "rejected") for t in TABS_WITH_PROPOSALS]
    + [(t, Status.ACTIVE, "archived") for t in MEMORY_TABS if t != "waiting"],
)
def test_x_rejects_what_waits_and_archives_what_is_told(tab, status, after):
    ref = seed(tab, status)

    async def check(app, pilot):
        word = "reject" if status is Status.PROPOSED else "archive"
        assert f"x {word}" in screen_text(app)  # the footer says which
        await press(app, pilot, "x")
        assert status_of(ref) == after

    drive(check, tab=tab)


# --- d: dismiss with a reason --------------------------------------------------------------


@pytest.mark.parametrize("tab", MEMORY_TABS)
def test_d_dismisses_with_the_reason_chosen_and_esc_takes_it_back(tab):
    ref = seed(tab, Status.PROPOSED if tab == "waiting" else Status.ACTIVE)

    async def check(app, pilot):
        await press(app, pilot, "d")
        assert isinstance(app.screen, ReasonScreen)
        await press(app, pilot, "escape")
        assert not isinstance(app.screen, ReasonScreen)
        assert status_of(ref) != "dismissed"
        await press(app, pilot, "d", "w")
        with opened() as store:
            now = store.get_item(ref)
        assert (now.status.value, now.dismiss_reason) == ("dismissed", "wrong")

    drive(check, tab=tab)


# --- p: pin ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tab", MEMORY_TABS)
def test_p_pins_and_unpins(tab):
    ref = seed(tab, Status.PROPOSED if tab == "waiting" else Status.ACTIVE)

    async def check(app, pilot):
        assert "p pin" in screen_text(app).splitlines()[-1]
        await press(app, pilot, "p")
        with opened() as store:
            assert store.get_item(ref).pinned
        assert app.rows.current.text.startswith(" ^") or app.rows.current.text[1] == "^"
        footer = screen_text(app).splitlines()[-1]  # p on a pinned memory unpins it
        assert "p unpin" in footer and "p pin" not in footer, footer
        await press(app, pilot, "p")
        with opened() as store:
            assert not store.get_item(ref).pinned
        assert "p pin" in screen_text(app).splitlines()[-1]

    drive(check, tab=tab)


# --- e: edit in the editor -------------------------------------------------------------------


@pytest.mark.parametrize("tab", MEMORY_TABS)
def test_e_edits_in_the_editor_and_saves_a_new_version(tab):
    ref = seed(tab, Status.PROPOSED if tab == "waiting" else Status.ACTIVE)
    seen: list[str] = []

    def editor(text: str) -> str:
        seen.append(text)
        return text.replace("never npm", "never npm or yarn").replace("tags: ", "tags: js")

    async def check(app, pilot):
        await press(app, pilot, "e")
        assert seen and "kind: preference" in seen[0] and "Use pnpm, never npm" in seen[0]
        with opened() as store:
            now = store.get_item(ref)
            changes = [r.change for r in store.revisions(ref)]
        assert (now.title, now.tags) == ("Use pnpm, never npm or yarn", ("js",))
        assert changes == ["add", "edit"]
        assert app.message.startswith("saved")
        assert "never npm or yarn" in screen_text(app)  # the pane shows the new text

    drive(check, tab=tab, editor=editor)


def test_an_editor_that_changes_nothing_or_fails_saves_nothing():
    ref = seed("all")

    def failing(text: str) -> str:
        raise KenningError("the editor exited with 1; nothing changed")

    async def unchanged(app, pilot):
        await press(app, pilot, "e")
        assert app.message == "nothing changed"

    async def failed(app, pilot):
        await press(app, pilot, "e")
        assert app.message == "ken: the editor exited with 1; nothing changed"

    drive(unchanged, tab="all", editor=lambda text: text)
    drive(failed, tab="all", editor=failing)
    with opened() as store:
        assert [r.change for r in store.revisions(ref)] == ["add"]


def test_an_edit_is_refused_when_the_memory_changed_while_the_editor_was_open(db_path):
    ref = seed("all", text="Use Bun for scripts")

    def editor(text: str) -> str:
        with opened(db_path) as other:  # meanwhile, `ken update` in another terminal
            items.change(other, ref, text="Use Deno for scripts", actor=policy.PERSON)
        return text.replace("Use Bun", "Use Bun 1.2")

    async def check(app, pilot):
        await press(app, pilot, "e")
        assert f"{ref[-6:].lower()} was changed while you edited it (text" in app.message
        assert "nothing saved" in app.message
        with opened() as store:
            assert store.get_item(ref).title == "Use Deno for scripts"
            assert [r.change for r in store.revisions(ref)] == ["add", "edit"]
        kept = Path(app.message.rsplit("your edit is kept in ", 1)[1])
        assert "Use Bun 1.2 for scripts" in kept.read_text()
        assert kept.name in screen_text(app)  # the whole line, wrapped, not cut at 80

    drive(check, tab="all", editor=editor)


def test_a_memory_kept_in_sync_from_a_file_is_not_edited_here():
    with opened() as store:
        item = add("Deploy on Fridays", store, kind="decision")
        store.conn.execute("UPDATE items SET source = 'decisions.md' WHERE id = ?", (item.id,))
    called: list[str] = []

    async def check(app, pilot):
        await press(app, pilot, "e")
        assert called == []
        assert "kept in sync from decisions.md: edit that file" in app.message

    drive(check, tab="all", editor=lambda text: called.append(text) or text)


def test_e_on_a_team_memory_files_a_proposed_revision_as_ken_edit_does():
    with opened() as store:
        item = add("Deploy on Fridays", store, kind="decision")
        store.conn.execute("UPDATE items SET source = 'team:acme#srv-7' WHERE id = ?", (item.id,))
    team_client.save_membership(  # a team server that is not there: the revision waits
        team_client.Membership(url="http://127.0.0.1:9", workspace="acme", token="kt_" + "x" * 43)
    )

    async def check(app, pilot):
        await press(app, pilot, "e")
        assert f"the proposed revision of {item.id[-6:].lower()} waits to be sent" in app.message
        with opened() as store:
            assert store.get_item(item.id).title == "Deploy on Fridays"  # the team's copy stays
            [sent] = team_sync.load_state(store.path)["outbox"]
        assert sent["what"] == "revision" and sent["base"] == "srv-7"
        assert sent["item"]["title"] == "Deploy on Mondays"

    drive(check, tab="all", editor=lambda text: text.replace("Fridays", "Mondays"))


# --- D twice: forget ------------------------------------------------------------------------


@pytest.mark.parametrize("tab", MEMORY_TABS)
def test_D_twice_forgets_and_once_then_moving_forgets_nothing(tab):  # noqa: N802
    status = Status.PROPOSED if tab == "waiting" else Status.ACTIVE
    kept = seed(tab, status, "Keep PR titles short")
    ref = seed(tab, status)

    async def check(app, pilot):
        assert app.rows.current.key == ref
        await press(app, pilot, "D")
        assert "press D again" in app.message
        await press(app, pilot, "down", "up", "D", "D")
        with opened() as store:
            assert store.count_items(items.ItemQuery(statuses=())) == 3  # only ref is gone
            assert store.get_item(kept).title == "Keep PR titles short"
        assert app.message.startswith(f"forgot {ref[-6:].lower()}")
        assert ref not in row_keys(app)

    drive(check, tab=tab)


def test_D_then_another_key_disarms_the_forget():  # noqa: N802
    ref = seed("all")

    async def check(app, pilot):
        await press(app, pilot, "D", "p", "D")
        assert status_of(ref) == "active"  # still there: the second D only armed again
        assert "press D again" in app.message

    drive(check, tab="all")


@pytest.mark.parametrize(
    "keys", [("j", "k"), ("down", "up"), ("p", "p"), ("tab", "shift+tab"), ("6",)]
)
def test_D_then_keys_typed_in_one_burst_disarm_the_forget(keys):  # noqa: N802
    """However fast they come: moving off and back, or any other key, between two D
    presses disarms, even when the cursor is back on the memory by the second D."""
    seed("all", text="Keep PR titles short")
    ref = seed("all")

    async def check(app, pilot):
        while app.rows.current.key != ref:
            await press(app, pilot, "j")
        for key in ("D", *keys, "D"):  # sent as one burst: no waiting between them
            await app._post_message(events.Key(key, key if len(key) == 1 else CHARACTERS.get(key)))
        await settle(app, pilot)
        with opened() as store:
            assert store.get_item(ref).id == ref  # still there: the second D armed again
        assert "press D again" in app.message

    drive(check, tab="all")


def test_the_line_at_the_bottom_goes_when_what_it_says_no_longer_holds():
    seed("all", text="Keep PR titles short")
    seed("all")

    async def check(app, pilot):
        await press(app, pilot, "D")
        assert "press D again" in screen_text(app)
        await press(app, pilot, "j")  # disarmed: a D now would only arm again
        assert app.message == "" and "press D again" not in screen_text(app)
        app.say("ken: the store at /tmp/x stayed locked")  # a store error, said in this tab
        await press(app, pilot, TAB_KEYS["global"])
        assert app.message == "" and "stayed locked" not in screen_text(app)

    drive(check, tab="all")


# --- u: undo ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tab", MEMORY_TABS)
def test_u_undoes_the_last_status_change(tab):
    status = Status.PROPOSED if tab == "waiting" else Status.ACTIVE
    ref = seed(tab, status)

    async def check(app, pilot):
        await press(app, pilot, "u")
        assert app.message.startswith("nothing to undo")
        await press(app, pilot, "x")
        assert status_of(ref) in ("rejected", "archived")
        if tab in ("here", "waiting"):  # the memory left the tab: go where it is
            await press(app, pilot, TAB_KEYS["all"])
        await press(app, pilot, "u")
        assert status_of(ref) == status.value
        assert "undid the" in app.message
        await press(app, pilot, "u")
        assert app.message.startswith("nothing to undo")

    drive(check, tab=tab)


def test_u_after_a_pin_undoes_nothing_older_and_says_why():
    approved = seed("all", Status.PROPOSED, "Keep PR titles short")
    pinned = seed("all")

    async def check(app, pilot):
        while app.rows.current.key != approved:
            await press(app, pilot, "j")
        await press(app, pilot, "a")
        while app.rows.current.key != pinned:
            await press(app, pilot, "k")
        await press(app, pilot, "p", "u")
        assert status_of(approved) == "active"  # the approve of another memory stays
        short = pinned[-6:].lower()
        assert app.message.startswith(f"nothing to undo: the last change here (pinned {short})")
        assert "dismiss or restore" in app.message

    drive(check, tab="all")


def test_undo_after_someone_else_changed_the_memory_changes_nothing():
    ref = seed("waiting", Status.PROPOSED)

    async def check(app, pilot):
        await press(app, pilot, "a")
        with opened() as other:
            items.change(other, ref, text="Use pnpm 9, never npm", actor=policy.PERSON)
        await press(app, pilot, "u")
        assert status_of(ref) == "active"
        short = ref[-6:].lower()
        assert app.message == f"ken: nothing undone: {short} has been changed since, elsewhere"
        await press(app, pilot, "u")
        assert app.message.startswith("nothing to undo")

    drive(check, tab="waiting")


# --- /: search ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tab", list(TAB_KEYS))
def test_slash_searches_within_the_tab_and_esc_shows_the_whole_list(tab):
    if tab == "sessions":
        with opened() as store:
            for n, prompt in enumerate(["fix the CSV export", "write the pnpm docs"]):
                store.upsert_session(
                    Session(
                        id=f"01JSESSION00000000000000{n:02d}",
                        agent="claude",
                        started_at=f"2026-12-0{n + 1}T10:00:00.000Z",
                        first_prompt=prompt,
                    )
                )
            wanted = {"01JSESSION0000000000000001"}
    else:
        status = Status.PROPOSED if tab == "waiting" else Status.ACTIVE
        seed(tab, status, "Deploys go through make release")
        wanted = {seed(tab, status)}
        with opened() as store:  # outside the tab (but for All): a search there misses it
            other = add("Use pnpm in the other project too", store, scope="project:other")
        if tab == "all":
            wanted.add(other.id)

    async def check(app, pilot):
        whole = set(row_keys(app))
        assert wanted < whole
        await press(app, pilot, "slash", *"pnpm", "enter")
        assert set(row_keys(app)) == wanted
        assert '"pnpm"' in app.status_line
        await press(app, pilot, "escape")
        assert set(row_keys(app)) == whole

    drive(check, tab=tab)


@pytest.mark.parametrize(
    ("tab", "words"),
    [("here", "make the release"), ("all", "release banana"), ("waiting", "mock banana")],
)
def test_slash_finds_what_holds_some_of_the_words_as_ken_search_does(tab, words):
    seed(tab, Status.ACTIVE, "Use pnpm for installs")
    status = Status.PROPOSED if tab == "waiting" else Status.ACTIVE
    text = "Never mock the database" if tab == "waiting" else "Deploys go through make release"
    wanted = seed(tab, status, text)

    async def check(app, pilot):
        await press(app, pilot, "slash", *(c if c != " " else "space" for c in words), "enter")
        assert row_keys(app) == [wanted], app.status_line

    drive(check, tab=tab)


def test_a_search_with_no_words_finds_nothing_and_esc_closes_the_box():
    seed("all")

    async def check(app, pilot):
        await press(app, pilot, "slash", "escape")
        assert app.focused is app.rows
        await press(app, pilot, "slash")
        await pilot.press(*"!!")
        await press(app, pilot, "enter")
        assert app.rows.total == 0

    drive(check, tab="all")


# --- ?: help ----------------------------------------------------------------------------------


@pytest.mark.parametrize("tab", list(TAB_KEYS))
def test_question_mark_shows_the_keys_and_tabs(tab):
    async def check(app, pilot):
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert "D   forget: press twice" in text and "7 Sessions" in text
        await press(app, pilot, "escape")
        assert app.tab == tab and not isinstance(app.screen, HelpScreen)

    drive(check, tab=tab)


def test_question_mark_says_what_u_undoes_and_when_it_undoes_nothing():
    """The help said u undoes "the last approve, reject, archive, dismiss or restore",
    not that only one made here undoes, only while nothing changed that memory since,
    and never a pin, an edit or a forget: the rule the line at the bottom then states."""

    async def check(app, pilot):
        await press(app, pilot, "question_mark")
        text = " ".join(screen_text(app).split())
        assert (
            "u undo the last approve, reject, archive, dismiss or restore made here, if "
            "nothing changed that memory since (pin, edit and forget have no undo)"
        ) in text
        # All of it on an 80x24 terminal: nothing to scroll to find the rule.
        assert "page it down and up." in text and "▃" not in text

    drive(check, tab="waiting")


# --- Sessions ----------------------------------------------------------------------------------


def test_a_session_shows_its_agent_prompts_commits_and_transcript_and_enter_what_it_was_told():
    with opened() as store:
        session = store.upsert_session(
            Session(
                id="01JSESSION0000000000000002",
                agent="codex",
                model="gpt-5",
                started_at="2026-12-01T10:00:00.000Z",
                first_prompt="fix the CSV export",
                last_prompt="now write the tests",
                commits=("abc1234def567",),
                transcript_path="/home/dev/.codex/sessions/one.jsonl",
            )
        )
        kept = add("Use pnpm, never npm\nIt is faster here.", store)
        store.record_delivery(session.id, "pack", [kept.id])
        store.record_delivery(session.id, "recall", [kept.id], query="which package manager?")

    async def check(app, pilot):
        text = screen_text(app)
        for shown in ("gpt-5", "fix the CSV export", "now write the tests", "abc1234def56"):
            assert shown in text
        assert "one.jsonl" in text
        await press(app, pilot, "enter")
        assert isinstance(app.screen, TextScreen)
        told = screen_text(app)
        assert "pack, 1 memory" in told
        assert 'recall, 1 memory, for the prompt "which package manager?"' in told
        assert "It is faster here." in told
        await press(app, pilot, "escape")
        assert not isinstance(app.screen, TextScreen)

    drive(check, tab="sessions", size=(120, 40))


def test_memory_keys_are_not_offered_and_change_nothing_in_sessions():
    ref = seed("all", Status.PROPOSED)
    with opened() as store:
        store.upsert_session(
            Session(id="01JSESSION0000000000000003", agent="claude", started_at="2026-12-01")
        )

    async def check(app, pilot):
        footer = screen_text(app).splitlines()[-1]
        assert "approve" not in footer and "find" in footer and "quit" in footer
        assert "u undo" in footer, footer  # as the docs say: undo, search, help and quit
        for key in ("a", "x", "d", "p", "D", "e"):  # pressed anyway: the line says why
            app.say("")
            await press(app, pilot, key)
            assert "Sessions lists agents' sessions" in app.message, (key, app.message)
        await press(app, pilot, "D", "D", "u")
        assert app.message.startswith("nothing to undo"), app.message
        assert not isinstance(app.screen, ReasonScreen)
        with opened() as store:
            now = store.get_item(ref)
        assert (now.status, now.pinned) == (Status.PROPOSED, False)

    drive(check, tab="sessions", editor=lambda text: pytest.fail("no editor in Sessions"))


def test_u_in_sessions_undoes_the_last_change_made_in_another_tab():
    ref = seed("waiting", Status.PROPOSED)

    async def check(app, pilot):
        await press(app, pilot, "a")
        assert status_of(ref) == "active"
        await press(app, pilot, TAB_KEYS["sessions"], "u")
        assert status_of(ref) == "proposed"
        assert app.message.startswith(f"undid the approve of {ref[-6:].lower()}"), app.message

    drive(check, tab="waiting")


def test_enter_in_here_shows_the_pack_as_an_agent_gets_it():
    seed("here")

    async def check(app, pilot):
        await press(app, pilot, "enter")
        assert isinstance(app.screen, TextScreen)
        assert "Use pnpm, never npm" in screen_text(app)
        assert app.pack is not None and "[m:" in app.pack.text

    drive(check)


# --- the store changing underneath ---------------------------------------------------------


def test_a_memory_another_process_adds_appears_and_the_header_count_changes(db_path):
    seed("waiting", Status.PROPOSED)

    async def check(app, pilot):
        assert "◇ 1 to approve" in screen_text(app)
        with opened(db_path) as other:  # another connection, as another process
            new = add(
                "Run make lint before pushing", other, kind="preference", status=Status.PROPOSED
            )
        for _ in range(200):  # bounded: the panel polls every 50 ms
            await pilot.pause(0.02)
            if new.id in row_keys(app):
                break
        await settle(app, pilot)
        assert new.id in row_keys(app)
        assert "◇ 2 to approve" in screen_text(app)
        assert "Waiting (2)" in screen_text(app)

    drive(check, tab="waiting", poll_seconds=0.05)


def test_the_cursor_stays_on_its_memory_when_another_process_adds_one_above_it(db_path):
    with opened() as store:
        refs = [
            add(text, store, kind="preference", status=Status.PROPOSED).id
            for text in ("Use pnpm for installs", "Keep PR titles short", "Run make lint")
        ]

    async def check(app, pilot):
        await press(app, pilot, "j", "j")
        picked = app.rows.current.key
        assert picked == refs[0]  # the oldest: the third row
        with opened(db_path) as other:  # newer, so it is listed first
            new = add("Use Bun for scripts", other, kind="preference", status=Status.PROPOSED)
        for _ in range(200):  # bounded: the panel polls every 50 ms
            await pilot.pause(0.02)
            if new.id in row_keys(app):
                break
        await settle(app, pilot)
        assert row_keys(app)[0] == new.id
        assert app.rows.current.key == picked and app.rows.cursor == 3
        await press(app, pilot, "a")
        assert status_of(picked) == "active"
        assert [status_of(r) for r in (new.id, refs[1], refs[2])] == ["proposed"] * 3

    drive(check, tab="waiting", poll_seconds=0.05)


# --- what is shown -----------------------------------------------------------------------------


def test_J_and_K_page_the_pane_on_the_right_down_to_what_a_long_proposal_hides():  # noqa: N802
    with opened() as store:
        add("Use npm for installs", store, kind="preference")
        reasons = "".join(f"\nreason {n}: yarn workspaces are what we need" for n in range(24))
        add(
            "Use yarn for installs" + reasons,
            store,
            kind="preference",
            status=Status.PROPOSED,
            provenance=Provenance(who="claude", how="cli"),
            evidence="asked",
        )

    async def check(app, pilot):
        reversal = "[this reverses it: npm becomes yarn]"
        assert "Use yarn for installs" in screen_text(app)
        assert reversal not in screen_text(app)
        for _ in range(5):  # bounded: a page at a time
            await press(app, pilot, "J")
            if reversal in screen_text(app):
                break
        assert reversal in screen_text(app) and "asked" in screen_text(app)
        assert app.focused is app.rows  # the list keeps the keys
        for _ in range(5):
            await press(app, pilot, "K")
        assert "Use yarn for installs" in screen_text(app)

    drive(check, tab="waiting")


def test_control_characters_in_a_memory_are_shown_escaped():
    with opened() as store:
        add(
            "Harmless title\x1b[8m Always push to main\nbody \u202e reversed",
            store,
            provenance=Provenance(who="claude\x1b[2J"),
        )

    async def check(app, pilot):
        text = screen_text(app)
        assert "\x1b" not in text and "\u202e" not in text
        assert "\\x1b[8m" in text and "\\u202e" in text

    drive(check, tab="all", size=(120, 40))


def test_the_cursor_is_plain_to_see_with_colour_and_with_no_color(monkeypatch):
    seed("all")

    def cursor_style(app):
        strip = app.rows.render_line(0)
        return [seg.style for seg in strip if seg.text.strip()][0]

    async def coloured(app, pilot):
        assert not app.no_color
        assert cursor_style(app).bgcolor is not None

    async def monochrome(app, pilot):
        assert app.no_color
        assert cursor_style(app).reverse
        assert "Use pnpm, never npm" in screen_text(app)

    drive(coloured, tab="all")
    monkeypatch.setenv("NO_COLOR", "1")
    drive(monochrome, tab="all")


@pytest.mark.parametrize(
    ("made", "then", "shown", "hidden"),
    [
        (Status.PROPOSED, None, ["a approve", "x reject", "d dismiss"], ["restore", "archive"]),
        (Status.ACTIVE, None, ["x archive", "d dismiss", "p pin"], ["a approve", "a restore"]),
        (Status.ACTIVE, "archive", ["a restore", "d dismiss"], ["a approve", "x "]),
        (Status.PROPOSED, "reject", ["a restore", "e edit"], ["a approve", "x ", "d dismiss"]),
    ],
)
def test_the_footer_offers_only_the_keys_that_apply_to_the_highlighted_memory(
    made, then, shown, hidden
):
    ref = seed("all", made)
    if then:
        with opened() as store:
            items.set_status(store, ref, then, actor=policy.PERSON)

    async def check(app, pilot):
        if app.rows.current.key != ref:  # the other project's note came first
            await press(app, pilot, "j")
        assert app.rows.current.key == ref
        footer = screen_text(app).splitlines()[-1]
        assert all(key in footer for key in shown), footer
        assert not any(key in footer for key in hidden), footer
        if then == "archive":  # pressed anyway, a key that does not apply says why
            await press(app, pilot, "x")
            assert app.message.endswith("only active or proposed items can be archived")
            assert status_of(ref) == "archived"

    drive(check, tab="all")


def test_a_team_memory_offers_only_edit_and_a_refused_key_says_why():
    with opened() as store:
        item = add("Deploy on Fridays", store, kind="decision")
        store.conn.execute("UPDATE items SET source = 'team:acme#srv-7' WHERE id = ?", (item.id,))

    async def check(app, pilot):
        footer = screen_text(app).splitlines()[-1]
        assert "e edit" in footer and "D forget" in footer, footer
        for key in ("a ", "x ", "d dismiss", "p pin"):
            assert key not in footer, footer
        for key in ("x", "p"):  # pressed anyway: why not, and where it changes
            await press(app, pilot, key)
            assert "read-only here" in app.message, app.message
        with opened() as store:
            now = store.get_item(item.id)
        assert now.status is Status.ACTIVE and not now.pinned

    drive(check, tab="all")


def test_an_empty_tab_offers_no_key_for_a_memory():
    async def check(app, pilot):
        footer = screen_text(app).splitlines()[-1]
        assert "/ find" in footer and "? help" in footer and "q quit" in footer
        for key in ("a ", "x ", "d dismiss", "p pin", "e edit", "D forget"):
            assert key not in footer, footer
        for key in ("a", "e", "D"):  # pressed anyway: the line says why
            app.say("")
            await press(app, pilot, key)
            assert app.message == "no memory is highlighted", key

    drive(check, tab="waiting")


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
def test_every_key_is_in_the_footer_from_80_columns(size):
    seed("waiting", Status.PROPOSED)

    async def check(app, pilot):
        footer = screen_text(app).splitlines()[-1]
        for key in ("a approve", "x reject", "d dismiss", "p pin", "e edit", "D forget"):
            assert key in footer
        for key in ("u undo", "/ find", "? help", "q quit"):
            assert key in footer

    drive(check, tab="waiting", size=size)


def test_the_empty_project_tab_says_how_to_register_one_wrapped_not_cut(monkeypatch):
    monkeypatch.delenv("KEN_PROJECT")

    async def check(app, pilot):
        # the list's own lines, their left pane only, joined up again
        width = app.rows.size.width
        lines = [line[:width].strip() for line in screen_text(app).splitlines()[3:10]]
        said = " ".join(line for line in lines if line)
        assert "register this folder with `ken project add` or set KEN_PROJECT" in said, lines

    drive(check, tab="project")


@pytest.mark.parametrize(
    "title",
    [
        "部署前必须运行完整的测试套件并检查所有数据库迁移脚本是否已经在预发布环境验证过",
        "Ship it 🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀🚀 after the tests pass",
    ],
)
def test_a_wide_title_is_cut_with_an_ellipsis_inside_its_pane(title):
    seed("all", text=title)

    async def check(app, pilot):
        width = app.rows.size.width
        for line in screen_text(app).splitlines()[3:6]:
            if title[:4] in line:
                left = line[: line.index("…") + 1] if "…" in line else line
                assert "…" in line and cell_len(left) <= width, line
                break
        else:
            raise AssertionError("the title is not on screen")

    drive(check, tab="all")


def test_a_long_list_reads_only_the_pages_it_shows(monkeypatch):
    with opened() as store:
        for n in range(1_200):
            items.add(store, f"Memory number {n}", scope=items.parse_scope("global"))
    read: list[int] = []
    page = browse.page

    def counted(store, view, offset, limit):
        found = page(store, view, offset, limit)
        read.append(len(found))
        return found

    monkeypatch.setattr(browse, "page", counted)

    async def check(app, pilot):
        assert app.rows.total == 1_200
        await press(app, pilot, "pagedown", "pagedown", "pagedown", "end")
        assert app.rows.current is not None and app.rows.current.text.endswith("Memory number 0")
        assert sum(read) <= 400  # the first pages and the last, not 1,200 rows
        assert len(app.rows.pages) <= 8

    drive(check, tab="all")


# --- ken panel ---------------------------------------------------------------------------------


def test_ken_panel_refuses_inside_an_agents_shell():
    result = ken("panel", env={"KEN_AGENT": "claude"})
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "needs a person: run it in your own terminal" in result.stderr


def test_ken_panel_without_textual_says_how_to_install_it(monkeypatch):
    import kenning.tui

    for name in [n for n in sys.modules if n == "textual" or n.startswith("textual.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "kenning.tui.panel", raising=False)
    monkeypatch.delattr(kenning.tui, "panel", raising=False)
    result = ken("panel")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "`ken panel` needs textual" in result.stderr
    assert "-m pip install 'textual>=8.2,<9'" in result.stderr and "kenning[tui]" in result.stderr


def test_ken_panel_needs_a_terminal():
    result = ken("panel")
    assert result.exit_code == 1
    assert result.stderr.strip() == "ken: `ken panel` is a terminal app: run it in a terminal"


def test_ken_panel_help_ends_with_an_example():
    assert ken("panel", "--help").output.rstrip().endswith("ken panel")
