"""`ken forget` means forget: a marker string written into every place kenning keeps text
(the memory and its versions, an agent's proposed replacement, a summary and a handoff
quoting a line or sentence of it, a session's prompts, a recall's query, the hook log)
is gone from the database file, its WAL and the log afterwards — the quotes only when
asked with `--everywhere`."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import ken
from helpers import add, opened
from kenning import hooklog, items, proposals
from kenning import where as where_mod
from kenning.agents import claude
from kenning.config import log_path
from kenning.model import Scope, ScopeType, Session
from kenning.store import ItemQuery

GLOBAL = Scope(ScopeType.GLOBAL)

MARKER = "Quokkaflint Vexbrandt"  # in no dictionary: any byte of it found is a leak
TEXT = f"The {MARKER} rotation runs on Fridays\nAsk the {MARKER} desk before a deploy"


def _raw(db: Path) -> bytes:
    files = [Path(f"{db}{end}") for end in ("", "-wal")] + [log_path()]
    return b"".join(p.read_bytes() for p in files if p.exists())


def _everywhere(db: Path, git_repo: Path) -> dict[str, str]:
    """The memory, and the marker in every other place text is kept; ids by role."""
    with opened(db) as store:
        memory = add(TEXT, store, scope="global", kind="fact")
        items.change(store, memory.id, text=f"{TEXT}\nsince March")  # a second version
        ctx = proposals.AgentContext("codex", where_mod.detect(git_repo, env={}))
        copy, _ = proposals.update(
            store,
            ctx,
            memory.id,
            f"The {MARKER} rotation runs on Thursdays",
            expected_revision=store.get_item(memory.id).revision,
            evidence="the person moved it",
        )
        first, second = TEXT.splitlines()
        summary = add(f"Session summary\nWe agreed: {first}.", store, kind="summary")
        handoff = add(f"Handoff\nNext: {second.lower()}", store, kind="handoff")
        kept = add("Deploys go through staging first", store, kind="decision")
        session = store.upsert_session(Session(id="01KSESSIONFORGETTEST0000001", agent="claude"))
        store.note_prompt(session.id, f"remember this: {second}!")
        store.add_prompt(session.id, f"remember this: {second}!")  # run lessons' copy
        store.add_signal(session.id, "correction", f"remember this: {second}!")
        store.record_delivery(session.id, "recall", [memory.id], query=f"is it true that {first}?")
        store.checkpoint()
    hooklog.log(  # a summarizer's answer that did not parse, quoting the memory
        "claude", "summarize", f'not JSON: {{"items": [{{"text": "{TEXT.splitlines()[0]}"'
    )
    hooklog.log("claude", "prompt", "an unrelated line stays")
    return {
        "memory": memory.id,
        "copy": copy.id,
        "summary": summary.id,
        "handoff": handoff.id,
        "kept": kept.id,
        "session": session.id,
    }


def test_forget_drops_the_memory_its_waiting_copies_and_its_hook_log_lines(db_path, git_repo):
    ids = _everywhere(db_path, git_repo)
    assert MARKER.encode() in _raw(db_path)

    result = ken("forget", ids["memory"][-6:], "--yes")

    assert result.exit_code == 0, result.output
    assert "forgot 2 memories (1 copy waiting to replace it; 1 hook log line dropped)" in (
        result.output
    )
    with opened(db_path) as store:
        left = {i.id for i in store.list_items(items.ItemQuery(statuses=()))}
        assert ids["memory"] not in left and ids["copy"] not in left
        # Without --everywhere, what quotes it stays, and says so.
        assert {ids["summary"], ids["handoff"], ids["kept"]} <= left
        assert MARKER in (store.get_session(ids["session"]).first_prompt or "")
    log = log_path().read_text()
    assert MARKER not in log and "an unrelated line stays" in log


def test_forget_everywhere_leaves_no_byte_of_the_text_in_the_store_its_wal_or_the_log(
    db_path, git_repo
):
    ids = _everywhere(db_path, git_repo)

    result = ken("forget", ids["memory"][-6:], "--everywhere", "--yes")

    assert result.exit_code == 0, result.output
    assert "forgot 4 memories" in result.output
    assert "2 memories that quoted it" in result.output
    # first and last prompt, the recall's query, run lessons' copy of the prompt and signal
    assert "5 session prompts and recall queries blanked" in result.output
    assert MARKER.encode() not in _raw(db_path)
    with opened(db_path) as store:
        left = {i.id for i in store.list_items(items.ItemQuery(statuses=()))}
        assert left == {ids["kept"]}
        session = store.get_session(ids["session"])
        assert session.first_prompt is None and session.prompt_count == 1
        assert store.integrity_check() == "ok"
    assert "an unrelated line stays" in log_path().read_text()


def test_forget_everywhere_of_a_scope_of_hundreds_of_memories(db_path: Path) -> None:
    """Each memory gives a few quotable lines, and they were one OR term each: past a
    thousand, SQLite refused the query ("Expression tree is too large"), so a scope of
    a few hundred memories could not be forgotten everywhere; a proposal that links to
    one was looked for with one read of every proposal per memory."""
    scope = Scope(ScopeType.WORKSPACE, "big")
    with opened() as store:
        batch = [
            items.new_item(
                f"Rule number {n} of the big workspace\nIts first line, as written {n}.\n"
                f"Its second line, as written {n}.",
                scope=scope,
            )
            for n in range(450)
        ]
        store.insert_many(batch, change="add")
        quoting = add("A summary that says: Its second line, as written 7.", scope="global")
        kept = add("A memory about something else entirely", scope="global")
    result = ken("forget", "--scope", "workspace:big", "--everywhere", "--yes")
    assert result.exit_code == 0, result.output
    with opened() as store:
        left = {i.id for i in store.list_items(ItemQuery(statuses=(), include_expired=True))}
    assert left == {kept.id}, quoting


def test_the_confirmation_names_every_memory_forget_everywhere_would_take(db_path, git_repo):
    ids = _everywhere(db_path, git_repo)

    result = ken("forget", ids["memory"][-6:], "--everywhere", input="n\n")

    assert result.exit_code == 1
    assert f"{ids['copy'][-6:].lower()}  The {MARKER} rotation runs on Thursdays  (a copy" in (
        result.output
    )
    assert f"{ids['summary'][-6:].lower()}  Session summary  (quotes it)" in result.output
    assert "Forget 4 memories for good?" in result.output
    assert MARKER.encode() in _raw(db_path)  # nothing forgotten


def test_short_lines_are_not_looked_for_elsewhere():
    item = items.new_item("Use pnpm\nnever npm here, ever again", scope=GLOBAL)
    long = items.new_item(
        "Deploys wait for CI. Then staging gets them first; prod after", scope=GLOBAL
    )
    with opened() as store:
        assert items.quotable(store, [item]) == ["never npm here, ever again"]
        assert items.quotable(store, [long])[1:] == [
            "Deploys wait for CI.",
            "Then staging gets them first;",
        ]


def test_forget_everywhere_takes_what_quotes_an_earlier_version_of_it(db_path, git_repo):
    """Only the current version's lines were looked for: a note quoting the text a person
    had edited out (the very text they want gone) stayed, with the prompt that quoted it."""
    before = "Vault unseal keys sit with Marisol Okonkwo"
    with opened(db_path) as store:
        memory = add(before, store, scope="global", kind="fact")
        items.change(store, memory.id, text="Vault unseal keys sit with the platform team")
        note = add(f"Note: {before}, ask her first", store, kind="note")
        session = store.upsert_session(Session(id="01KSESSIONFORGETTEST0000002", agent="claude"))
        store.note_prompt(session.id, f"who has them? {before}")
        store.checkpoint()
    result = ken("forget", memory.id[-6:], "--everywhere", "--yes")
    assert result.exit_code == 0, result.output
    assert b"Marisol" not in _raw(db_path)
    with opened(db_path) as store:
        assert {i.id for i in store.list_items(items.ItemQuery(statuses=()))} == set()
        assert store.get_session(session.id).first_prompt is None
    assert note.id


LOG = """\
# Log

## 2026-11-02 claude: started the export
Wrote the first half of quagmire.

## 2026-11-03 codex: finished the export
All columns are in.
"""


def test_a_forgotten_project_entry_is_named_with_its_file_and_does_not_come_back(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "log.md").write_text(LOG)
    assert ken("project", "add", "shop", str(notes)).exit_code == 0
    with opened() as store:
        entry = next(i for i in store.list_items(ItemQuery()) if "started" in i.title)

    asked = ken("forget", entry.id[-6:], input="n\n")
    assert f"the text stays in {notes.resolve() / 'log.md'}" in asked.stderr
    result = ken("forget", entry.id[-6:], "--yes")
    assert result.exit_code == 0, result.output
    assert "forgot 1 memory" in result.stderr
    assert f"the text stays in {notes.resolve() / 'log.md'}" in result.stderr
    assert "remove it from that file" in result.stderr

    with (notes / "log.md").open("a") as fh:
        fh.write("One more line.\n")
    os.utime(notes / "log.md", (time.time() + 5, time.time() + 5))
    synced = ken("project", "sync", "shop")
    assert "0 added, 1 updated, 0 archived, 1 you forgot left out" in synced.stderr
    with opened() as store:
        titles = [i.title for i in store.list_items(ItemQuery(statuses=()))]
    assert titles == ["2026-11-03 codex: finished the export"]
    # No text of it is kept to recognise it: only a digest.
    assert b"quagmire" not in _raw(Path(os.environ["KEN_DB"]))


def test_a_forgotten_project_entry_edited_in_its_file_comes_back_as_new(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "log.md").write_text(LOG)
    ken("project", "add", "shop", str(notes))
    with opened() as store:
        entry = next(i for i in store.list_items(ItemQuery()) if "started" in i.title)
    ken("forget", entry.id[-6:], "--yes")
    (notes / "log.md").write_text(LOG.replace("first half", "second half"))
    os.utime(notes / "log.md", (time.time() + 5, time.time() + 5))
    assert "1 added" in ken("project", "sync", "shop").stderr


def test_a_forgotten_collected_memory_is_not_proposed_again(git_repo, monkeypatch):
    home = Path(os.environ["HOME"])
    folder = home / ".claude" / "projects" / claude.checkout_name(str(git_repo)) / "memory"
    folder.mkdir(parents=True)
    (folder / "quag.md").write_text("# Quagmire deploys on Fridays\n")
    monkeypatch.chdir(git_repo)
    assert ken("collect").exit_code == 0
    with opened() as store:
        [memory] = store.list_items(ItemQuery(statuses=()))

    result = ken("forget", memory.id[-6:], "--yes")
    assert f"the text stays in {folder / 'quag.md'}" in result.stderr
    (folder / "other.md").write_text("# Tabs in the Makefile\n")
    again = ken("collect")
    assert again.exit_code == 0, again.output
    with opened() as store:
        titles = [i.title for i in store.list_items(ItemQuery(statuses=()))]
    assert titles == ["Tabs in the Makefile"]
