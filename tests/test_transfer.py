"""Export and import as JSON lines (kenning.transfer, `ken export`, `ken import`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import add, export_json, opened, snapshot
from kenning import items, transfer
from kenning.errors import InvalidInput
from kenning.model import Provenance, Status


def seed():
    a = add(
        "Use pnpm\nnot npm",
        kind="preference",
        tags=["js"],
        links=["file:package.json"],
        evidence="said twice",
        provenance=Provenance(who="claude", how="mcp", session="s1"),
    )
    b = add("Archived thing", status=Status.ARCHIVED, scope="project:old")
    with opened() as store:
        items.change(store, a.id, text="Use pnpm 9\nnot npm")
    return a, b


def test_export_writes_every_item_any_status_with_history():
    a, b = seed()
    lines = export_json(ken("export").stdout)
    assert {line["id"] for line in lines} == {a.id, b.id}
    pnpm = next(line for line in lines if line["id"] == a.id)
    assert pnpm["title"] == "Use pnpm 9"
    assert pnpm["provenance"]["who"] == "claude"
    assert [h["change"] for h in pnpm["history"]] == ["add", "edit"]
    assert pnpm["history"][0]["title"] == "Use pnpm"


def test_export_to_a_file_and_by_scope(tmp_path):
    seed()
    target = tmp_path / "out.jsonl"
    result = ken("export", "-o", str(target))
    assert result.exit_code == 0 and "exported 2 memories" in result.stderr
    assert len(target.read_text().splitlines()) == 2
    assert not (tmp_path / "out.jsonl.tmp").exists()
    only = export_json(ken("export", "--scope", "project:old").stdout)
    assert [line["title"] for line in only] == ["Archived thing"]


def test_import_brings_items_back_as_proposed_with_their_ids(tmp_path, monkeypatch):
    a, b = seed()
    dump = tmp_path / "dump.jsonl"
    dump.write_text(ken("export").stdout)
    monkeypatch.setenv("KEN_DB", str(tmp_path / "other.db"))
    result = ken("import", str(dump))
    assert result.exit_code == 0, result.output
    assert "added 2 proposed memories, skipped 0" in result.stderr
    assert "imported 2/2" in result.stderr
    with opened() as store:
        back = {i.id: i for i in items.list_items(store, statuses=())}
        assert set(back) == {a.id, b.id}
        assert {i.status for i in back.values()} == {Status.PROPOSED}
        assert back[a.id].title == "Use pnpm 9"
        assert back[a.id].tags == ("js",)
        assert back[a.id].provenance.how == "import"
        assert back[a.id].provenance.who == "claude"
        assert back[a.id].created_at == a.created_at
        assert items.list_items(store) == []  # nothing active: agents are told nothing new


def test_importing_the_same_file_twice_adds_nothing(tmp_path):
    seed()
    dump = tmp_path / "dump.jsonl"
    dump.write_text(ken("export").stdout)
    before = snapshot()
    again = ken("import", str(dump))
    assert again.exit_code == 0
    assert "added 0 proposed memories, skipped 2 already here" in again.stderr
    assert snapshot() == before
    proc = ken_proc("import", str(dump))
    assert proc.returncode == 0 and "skipped 2" in proc.stderr
    assert snapshot() == before


def test_an_import_that_has_a_memory_otherwise_says_so_and_changes_nothing(tmp_path):
    """An export brought back from a machine where a memory was edited was "skipped 1
    already here", with no word that the file's text differed."""
    seed()
    lines = [json.loads(line) for line in ken("export").stdout.splitlines()]
    lines[0]["title"] += " and NEWERTEXT"
    dump = tmp_path / "edited.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in lines))
    before = snapshot()
    again = ken("import", str(dump), "--json")
    assert again.exit_code == 0
    data = json.loads(again.stdout)
    assert data["skipped"] == 2 and data["differ"] == [lines[0]["id"][-6:].lower()]
    said = ken("import", str(dump)).stderr
    assert "1 of those differ from the file and were not changed" in said
    assert snapshot() == before


def test_a_file_without_ids_imported_twice_adds_nothing_the_second_time():
    lines = "\n".join(
        json.dumps(line)
        for line in [
            {"title": "Thanks, that's great!", "scope": "project:chat"},
            {"title": "Thanks, that's great!", "scope": "project:chat"},  # said twice: kept
            {"title": "Ship on Fridays only", "scope": "project:chat"},
        ]
    )
    first = ken("import", input=lines)
    assert "added 3 proposed memories, skipped 0" in first.stderr
    before = snapshot()
    again = ken("import", input=lines.replace("Fridays only", "fridays  only."))
    assert again.exit_code == 0
    assert "added 0 proposed memories, skipped 3 already here" in again.stderr
    assert snapshot() == before
    elsewhere = ken("import", input=json.dumps({"title": "Ship on Fridays only"}))
    assert "added 1 proposed memory" in elsewhere.stderr  # another scope's statement


def test_import_reads_stdin_and_fills_defaults():
    lines = "\n".join(
        [
            json.dumps({"title": "Minimal line"}),
            "",
            json.dumps({"title": "With kind", "kind": "fact", "scope": "project:x", "tags": ["a"]}),
        ]
    )
    result = ken("import", input=lines)
    assert result.exit_code == 0, result.output
    with opened() as store:
        got = {i.title: i for i in items.list_items(store, statuses=("proposed",))}
    assert got["Minimal line"].kind.value == "note"
    assert str(got["Minimal line"].scope) == "global"
    assert str(got["With kind"].scope) == "project:x"


def test_import_redacts_secrets_in_what_it_brings():
    line = json.dumps({"title": "Bucket creds", "body": "key AKIAIOSFODNN7EXAMPLE for uploads"})
    assert ken("import", input=line).exit_code == 0
    with opened() as store:
        (item,) = items.list_items(store, statuses=("proposed",))
    assert "AKIAIOSFODNN7EXAMPLE" not in item.body


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json at all", "line 2: not JSON"),
        ("[1, 2]", "line 2: expected a JSON object"),
        ('{"body": "no title"}', "line 2: missing a text 'title'"),
        ('{"title": "x", "id": "not-an-id"}', "line 2: 'id' is not a kenning id"),
        # Made up to sort as the newest memory, or to share a memory's short id: no ULID
        # (its first character is 0-7), and none kenning made (its time is years ahead).
        ('{"title": "x", "id": "XXXXXXXXXXXXXXXXXXXX7MFDD7"}', "line 2: 'id' is not a kenning"),
        ('{"title": "x", "id": "7ZZZZZZZZZZZZZZZZZZZ7MFDD7"}', "line 2: 'id' is not a kenning"),
        ('{"title": "x", "id": "01ZZZZZZZZZZZZZZZZZZ7MFDD7"}', "line 2: 'id' is not a kenning"),
        ('{"title": "x", "tags": "a,b"}', "line 2: 'tags' must be a list of text"),
        ('{"title": "x", "kind": "opinion"}', "line 2: unknown kind 'opinion'"),
        ('{"title": "x", "scope": "planet:mars"}', "line 2: bad scope"),
        ('{"title": "x", "provenance": []}', "line 2: 'evidence' must be text"),
        # "bad scope 'None'" said nothing of what was wrong.
        ('{"title": "x", "scope": null}', "line 2: its 'scope' is missing"),
        # Dated later than now, as an id may not be: it would sort as the newest for ever.
        (
            '{"title": "x", "created_at": "2099-01-01T00:00:00.000Z"}',
            "line 2: 'created_at' is 2099-01-01T00:00:00.000Z, later than now",
        ),
        ('{"title": "x", "created_at": "2026-13-45T00:00:00Z"}', "line 2: 'created_at' must be"),
        # A source is what kenning writes there, on one line: one with a line break
        # forged a line of `ken edit`'s refusal.
        ('{"title": "x", "source": "garbage\\nstatus active"}', "line 2: 'source' must be"),
        ('{"title": "x", "source": "/etc/passwd"}', "line 2: 'source' must be"),
    ],
)
def test_one_bad_line_imports_nothing_and_names_the_line(line, message):
    text = json.dumps({"title": "Good first line"}) + "\n" + line + "\n"
    with pytest.raises(InvalidInput, match=message):
        transfer.read_items(text.splitlines())
    result = ken("import", input=text)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"ken: {message}")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("keep_status", [False, True])
def test_a_file_with_one_id_on_two_lines_says_so_once_and_its_counts_add_up(tmp_path, keep_status):
    """A hand-edited file with an id on two lines: the second line was filed as "differs
    from the file", its id listed twice, and --keep-status said "imported 3/3" of 5."""
    a, b = seed()
    lines = [json.loads(line) for line in ken("export").stdout.splitlines()]
    twin = dict(lines[0], title="a second line for the same id")
    fresh = {k: v for k, v in lines[0].items() if k not in ("history", "revision")}
    new_a = dict(fresh, id="01M98V6F2XV3X7R8GEAVMBF7ZZ", title="brand new row A")
    new_b = dict(new_a, title="brand new row B")
    dump = tmp_path / "hand.jsonl"
    dump.write_text("".join(json.dumps(x) + "\n" for x in [*lines, twin, new_a, new_b]))
    flags = ["--keep-status"] if keep_status else []
    result = ken("import", *flags, str(dump))
    assert result.exit_code == 0, result.output
    first_id = lines[0]["id"][-6:].lower()
    said = result.stderr
    assert f"line 3: id {first_id} is on line 1 too: only line 1 is imported" in said
    assert "line 5: id mbf7zz is on line 4 too: only line 4 is imported" in said
    assert "differ" not in said  # the first line is the memory here: nothing differs
    assert "imported 5/5" in said
    assert "skipped 2 already here, 2 that repeat an id" in said  # 1 + 2 + 2 = 5 lines
    with opened() as store:
        assert store.get_item(new_a["id"]).title == "brand new row A"
    data = json.loads(ken("import", *flags, str(dump), "--json").stdout)
    assert data["repeated"] == [
        {"line": 3, "first": 1, "id": first_id},
        {"line": 5, "first": 4, "id": "mbf7zz"},
    ]
    assert data["added"] + data["skipped"] + len(data["repeated"]) == 5


def test_import_reports_progress_per_batch(tmp_path):
    lines = [json.dumps({"title": f"Imported item {n}"}) for n in range(1200)]
    seen = []
    checked = transfer.read_items(lines)
    with opened() as store:
        added, skipped = transfer.import_items(
            store, checked, progress=lambda d, t: seen.append((d, t)), batch=500
        )
    assert (added, skipped) == (1200, 0)
    assert seen == [(500, 1200), (1000, 1200), (1200, 1200)]


def test_an_export_imports_into_an_identical_export_apart_from_status_and_history(
    tmp_path, monkeypatch
):
    seed()
    first = {line["id"]: line for line in export_json(ken("export").stdout)}
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(json.dumps(v) for v in first.values()))
    monkeypatch.setenv("KEN_DB", str(tmp_path / "copy.db"))
    ken("import", str(dump))
    second = {line["id"]: line for line in export_json(ken("export").stdout)}
    assert set(first) == set(second)
    for key, line in first.items():
        for field in (
            "title",
            "body",
            "kind",
            "scope",
            "tags",
            "links",
            "evidence",
            "pinned",
            "created_at",
        ):
            assert second[key][field] == line[field], field
        assert second[key]["status"] == "proposed"


def test_import_keep_status_brings_your_own_export_back_as_it_was(tmp_path, monkeypatch):
    from dataclasses import replace

    a, b = seed()
    with opened() as store:
        items.set_pinned(store, a.id, True)
        dismissed = add("Dismissed idea", store=store, status=Status.PROPOSED)
        items.set_status(store, dismissed.id, "dismiss", reason="wrong")
        task = add("Finish the export", store=store, kind="task")
        used = store.insert_item(
            replace(items.new_item("Used a lot", scope=items.parse_scope("global")), use_count=4)
        )
        store.record_uses([used.id], None, "pack")
    first = {line["id"]: line for line in export_json(ken("export").stdout)}
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(json.dumps(v) for v in first.values()) + "\n")

    monkeypatch.setenv("KEN_DB", str(tmp_path / "restored.db"))
    result = ken("import", "--keep-status", str(dump))
    assert result.exit_code == 0, result.output
    assert "added 5 memories as they were, skipped 0 already here" in result.stderr
    second = {line["id"]: line for line in export_json(ken("export").stdout)}
    assert set(second) == set(first) == {a.id, b.id, dismissed.id, task.id, used.id}
    for key, line in first.items():
        for field, value in line.items():
            assert second[key][field] == value, (key, field)
    assert second[a.id]["status"] == "active" and second[a.id]["pinned"] is True
    assert (second[dismissed.id]["status"], second[dismissed.id]["dismiss_reason"]) == (
        "dismissed",
        "wrong",
    )
    assert second[b.id]["status"] == "archived"
    # Nothing is lost and nothing added: every version comes back as it was, the current
    # one under the same revision, so an agent's expected_revision still holds.
    assert [h["title"] for h in second[a.id]["history"]] == ["Use pnpm", "Use pnpm 9", "Use pnpm 9"]
    with opened(tmp_path / "restored.db") as store:
        assert store.get_item(a.id).revision == first[a.id]["revision"]


def test_an_import_whose_revision_ids_another_memory_has_gives_those_new_ones(tmp_path):
    """A line copied under a new id (an export edited by hand, or two merged) brings
    revision ids another memory has, here or on an earlier line: the import failed on a
    UNIQUE constraint. The copy's versions get new ids, in their order; the rest of the
    file comes back exact."""
    from kenning import ids

    a, _ = seed()
    [line] = [x for x in export_json(ken("export").stdout) if x["id"] == a.id]
    copy = {**line, "id": ids.new_ulid(), "title": "Use pnpm 10"}
    again = {**line, "id": ids.new_ulid(), "title": "Use pnpm 11"}
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps(copy) + "\n" + json.dumps(again) + "\n")

    done = ken("import", "--keep-status", str(dump))  # into the store that has `line`

    assert done.exit_code == 0, done.output
    assert "added 2 memories as they were" in done.stderr
    assert "2 of them got new revision ids (theirs were another memory's: " in done.stderr
    old = [h["id"] for h in line["history"]]
    with opened() as store:
        assert [r.id for r in store.revisions(a.id)] == old  # untouched
        for made in (copy, again):
            versions = store.revisions(made["id"])
            # The current version is the line itself, as the file has it now.
            titles = [h["title"] for h in line["history"][:-1]] + [made["title"]]
            assert [r.title for r in versions] == titles
            assert not {r.id for r in versions} & set(old)
            assert store.get_item(made["id"]).revision == versions[-1].id
            assert store.get_item(made["id"]).title == made["title"]
    # Into an empty store the first line is exact; the second line's copy is renumbered.
    fresh = tmp_path / "fresh.db"
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps(line) + "\n" + json.dumps(copy) + "\n")
    done = ken("import", "--keep-status", str(both), env={"KEN_DB": str(fresh)})
    assert done.exit_code == 0, done.output
    assert "1 of them got new revision ids" in done.stderr
    with opened(fresh) as store:
        assert [r.id for r in store.revisions(a.id)] == old
        assert store.get_item(a.id).revision == line["revision"]
        assert not {r.id for r in store.revisions(copy["id"])} & set(old)


def test_import_keep_status_checks_and_redacts_the_history_it_brings(tmp_path):
    a, _ = seed()
    line = next(x for x in export_json(ken("export").stdout) if x["id"] == a.id)
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    line["history"][0]["body"] = f"CI reads the deploy token from the vault; it was {secret} once"
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps(line) + "\n")
    restored = tmp_path / "restored.db"
    done = ken("import", "--keep-status", str(dump), env={"KEN_DB": str(restored)})
    assert done.exit_code == 0, done.stderr
    with opened(restored) as store:
        bodies = [r.body for r in store.revisions(a.id)]
    assert secret not in " ".join(bodies) and "[redacted:github_token]" in bodies[0]
    line["history"][1]["id"] = "not-a-revision"
    dump.write_text(json.dumps(line) + "\n")
    bad = ken("import", "--keep-status", str(dump), env={"KEN_DB": str(tmp_path / "b.db")})
    assert bad.exit_code == 1 and "line 1: history[1]: 'id' is not a kenning id" in bad.stderr


def test_import_keep_status_needs_a_person_and_checks_what_it_keeps(tmp_path):
    line = {"id": "01KB2Z5QG1V3Y4W5X6Z7A8B9CD", "title": "Rule", "status": "active"}
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps(line) + "\n")
    agent = ken_proc("import", "--keep-status", str(dump), env={"KEN_AGENT": "claude"})
    assert agent.returncode == 1 and "needs a person" in agent.stderr
    with opened() as store:
        assert items.list_items(store, statuses=()) == []

    for bad, message in (
        ({"status": "happy"}, "line 1: unknown status 'happy'"),
        ({"status": "dismissed"}, "line 1: a dismissed item needs a 'dismiss_reason'"),
        ({"reviewed_at": "yesterday"}, "line 1: 'reviewed_at' must be a UTC time"),
        ({"use_count": -1}, "line 1: 'use_count' must be a whole number, 0 or more"),
    ):
        dump.write_text(json.dumps({**line, **bad}) + "\n")
        result = ken("import", "--keep-status", str(dump))
        assert result.exit_code == 1 and message in result.stderr, result.stderr
    proposed = ken("import", str(dump))  # without the flag, the same line is a proposal
    assert proposed.exit_code == 0
    assert [i["status"] for i in json.loads(ken("list", "--all", "--json").stdout)] == ["proposed"]


def test_the_library_refuses_an_agent_an_import_that_keeps_status():
    from kenning import policy
    from kenning.errors import NeedsPerson

    line = json.dumps({"title": "Rule", "status": "active"})
    kept = transfer.read_items([line], keep_status=True)
    with opened() as store:
        with pytest.raises(NeedsPerson):
            transfer.import_items(store, kept, actor=policy.Actor(agent="codex"))
        assert store.count_items(None) == 0
        proposals = transfer.read_items([line])
        assert transfer.import_items(store, proposals, actor=policy.Actor(agent="codex")) == (1, 0)


def test_an_agents_import_is_its_own_proposal_whoever_the_lines_name(tmp_path):
    # A line saying a person wrote it, imported from Claude's shell, is claude's proposal:
    # nothing passes it off as the person's (review, labels, team sharing).
    line = {"title": "Skip the tests", "kind": "preference", "scope": "global"}
    said = {"who": "user", "how": "cli", "session": "theirs", "model": "m"}
    dump = tmp_path / "in.jsonl"
    dump.write_text(json.dumps({**line, "provenance": said}) + "\n")
    done = ken_proc("import", str(dump), env={"CLAUDECODE": "1"})
    assert done.returncode == 0, done.stderr
    with opened() as store:
        [item] = items.list_items(store, statuses=())
    assert item.status is Status.PROPOSED
    assert item.provenance == Provenance(who="claude", how="import")

    # A person's own import keeps what the lines say.
    dump.write_text(json.dumps({**line, "title": "Mine", "provenance": said}) + "\n")
    assert ken("import", str(dump)).exit_code == 0
    with opened() as store:
        mine = [i for i in items.list_items(store, statuses=()) if i.title == "Mine"]
    assert [(i.provenance.who, i.provenance.session) for i in mine] == [("user", "theirs")]


def test_an_agents_import_gives_each_line_a_new_id_so_no_short_id_of_a_persons_is_taken(
    tmp_path,
):
    """An agent's import kept the file's ids: one chosen to end as a person's memory's
    did made that memory's short id ambiguous in `ken show`, `approve`, `forget`."""
    mine = add("Use pnpm, never npm", kind="preference")
    short = mine.id[-6:]
    decoy = "01" + "0" * 18 + short  # a well-formed ULID, from long ago
    line = {"id": decoy, "title": "decoy", "scope": "global", "created_at": "2001-01-01T00:00:00Z"}
    dump = tmp_path / "in.jsonl"
    dump.write_text(json.dumps(line) + "\n")
    done = ken_proc("import", str(dump), env={"CODEX_THREAD_ID": "t"})
    assert done.returncode == 0, done.stderr
    with opened() as store:
        [theirs] = [i for i in items.list_items(store, statuses=()) if i.title == "decoy"]
    assert theirs.id != decoy and not theirs.id.endswith(short)
    assert theirs.created_at > mine.created_at  # proposed now, not restored from 2001
    shown = ken("show", short.lower())
    assert shown.exit_code == 0, shown.stderr
    assert "Use pnpm" in shown.stdout
    # The same file again adds nothing: its line is that agent's proposal already.
    again = ken_proc("import", str(dump), env={"CODEX_THREAD_ID": "t"})
    assert "added 0" in again.stderr + again.stdout

    # A person's own import keeps a well-formed id it gives.
    dump.write_text(json.dumps({**line, "title": "kept"}) + "\n")
    assert ken("import", str(dump)).exit_code == 0
    with opened() as store:
        assert store.get_item(decoy).title == "kept"


def test_an_export_and_import_keep_status_round_trip_every_scope_status_and_provenance(
    tmp_path, monkeypatch
):
    # Scopes that apply nowhere near the import (another repo, another agent's session, a
    # workstream on a branch that is not checked out, an agent kenning knows only by name,
    # a checkout without an origin that has been given one since), each status, and
    # writers of every kind: a person's export brings them all back.
    import subprocess
    from dataclasses import replace

    checkout = tmp_path / "no-origin"
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    checkout = checkout.resolve()
    made = [
        ("Build with make", f"repo:{checkout}", "fact", Status.ACTIVE, False, (), "hook"),
        ("Port is half done", f"workstream:{checkout}#port", "task", Status.ACTIVE, False,
         (), "mcp"),
        ("Ship on Fridays never", "global", "decision", Status.ACTIVE, True, ("ops",), None),
        ("Shop uses pnpm", "repo:github.com/acme/shop", "fact", Status.ACTIVE, False, (), "hook"),
        ("Half-way through the port", "workstream:github.com/acme/shop#port", "task",
         Status.PROPOSED, False, ("port",), "mcp"),
        ("Codex saw the flaky test", "session:codex:sess-77", "note", Status.ACTIVE, False,
         (), "hook"),
        ("Aider prefers small diffs", "agent:aider", "preference", Status.PROPOSED, True,
         ("style", "diffs"), "mcp"),
        ("Old billing plan", "project:billing", "decision", Status.ARCHIVED, False, (), "cli"),
        ("Wrong guess", "workspace:acme", "fact", Status.REJECTED, False, (), "summarizer"),
    ]  # fmt: skip
    agents = ["claude", "gemini", "user", "claude", "codex", "codex", "aider", "user", "ken"]
    with opened() as store:
        for (text, scope, kind, status, pinned, tags, how), who in zip(made, agents, strict=True):
            prov = Provenance(who=who, how=how or "cli", session=f"s-{who}", model="m1")
            item = items.new_item(
                text,
                scope=items.parse_scope(scope, to_find=True),
                kind=items.parse_kind(kind),
                tags=tags,
                pinned=pinned,
                status=status,
                provenance=prov,
            )
            store.insert_item(replace(item, reviewed_at=None))
    first = {line["id"]: line for line in export_json(ken("export").stdout)}
    assert len(first) == len(made)
    assert {line["scope"] for line in first.values()} >= {f"repo:{checkout}"}
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(json.dumps(v) for v in first.values()) + "\n")
    origin = "https://github.com/acme/no-origin.git"
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", origin], check=True)

    monkeypatch.setenv("KEN_DB", str(tmp_path / "fresh.db"))
    kept = ken("import", "--keep-status", str(dump))
    assert kept.exit_code == 0, kept.output
    second = {line["id"]: line for line in export_json(ken("export").stdout)}
    assert set(second) == set(first)
    for key, line in first.items():
        for field in ("scope", "status", "pinned", "kind", "tags", "provenance", "title"):
            assert second[key][field] == line[field], (line["title"], field)

    # Without the flag, the same file makes proposals, each marked as imported.
    monkeypatch.setenv("KEN_DB", str(tmp_path / "plain.db"))
    plain = ken("import", str(dump))
    assert plain.exit_code == 0, plain.output
    third = {line["id"]: line for line in export_json(ken("export").stdout)}
    assert set(third) == set(first)
    for key, line in first.items():
        assert third[key]["status"] == "proposed" and third[key]["pinned"] is False
        assert third[key]["provenance"] == {**line["provenance"], "how": "import"}
        for field in ("scope", "kind", "tags"):
            assert third[key][field] == line[field], (line["title"], field)


def test_import_keep_status_keeps_the_file_a_memory_is_collected_from(
    git_repo, tmp_path, monkeypatch
):
    """A round trip dropped `source`: `ken collect` then no longer archived or revised
    the memory of a file the agent had saved."""
    import os
    from pathlib import Path

    from kenning import collect
    from kenning.agents import claude

    home = Path(os.environ["HOME"])
    folder = home / ".claude" / "projects" / claude.checkout_name(str(git_repo)) / "memory"
    folder.mkdir(parents=True)
    (folder / "feedback_pnpm.md").write_text("# Use pnpm, never npm\n")
    with opened() as store:
        collect.collect(store, cwd=str(git_repo))
    [line] = export_json(ken("export").stdout)
    assert line["source"].startswith("collect:claude:")
    dump = tmp_path / "dump.jsonl"
    dump.write_text(json.dumps(line) + "\n")

    monkeypatch.setenv("KEN_DB", str(tmp_path / "restored.db"))
    assert ken("import", "--keep-status", str(dump)).exit_code == 0
    [back] = export_json(ken("export").stdout)
    assert back["source"] == line["source"]
    (folder / "feedback_pnpm.md").unlink()
    with opened(tmp_path / "restored.db") as store:
        done = collect.collect(store, cwd=str(git_repo))
    assert [i.id for i in done.archived] == [line["id"]]

    # A plain import is a proposal and an agent's import its own: neither is a file's copy.
    for db, env in (("plain.db", {}), ("agent.db", {"KEN_AGENT": "claude"})):
        monkeypatch.setenv("KEN_DB", str(tmp_path / db))
        done = ken_proc("import", str(dump), env=env)
        assert done.returncode == 0, done.stderr
        [copy] = export_json(ken("export").stdout)
        assert copy["source"] is None
    # and --keep-status is a person's own restore: refused in an agent's shell
    refused = ken_proc("import", "--keep-status", str(dump), env={"KEN_AGENT": "claude"})
    assert refused.returncode == 1 and "needs a person" in refused.stderr


def test_a_file_saved_with_a_byte_order_mark_imports(tmp_path):
    """Notepad saves UTF-8 with a BOM: the import refused it as "not JSON"."""
    dump = tmp_path / "edited.jsonl"
    lines = [{"title": "Use pnpm, never npm", "kind": "preference"}, {"title": "Second"}]
    text = "\r\n".join(json.dumps(line) for line in lines) + "\r\n"
    dump.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    result = ken("import", str(dump))
    assert result.exit_code == 0, result.stderr
    with opened() as store:
        titles = sorted(i.title for i in items.list_items(store, statuses=()))
    assert titles == ["Second", "Use pnpm, never npm"]


@pytest.mark.parametrize("command", [["export", "-o"], ["curate", "--plan"]])
def test_a_file_ken_writes_where_told_never_replaces_a_device_a_pipe_or_a_link(
    tmp_path: Path, command: list[str]
) -> None:
    """`ken curate --plan /dev/full`, run as root, made /dev/full a regular file: the plan
    was written to a guessable `.FILE.tmp` (whose link was followed) and renamed over the
    path. A path that is not a regular file is refused, and what is written is 0600."""
    import os
    import stat

    out = tmp_path / "out"
    out.mkdir()
    add("Deploys go through make release", kind="decision")
    add("Deploy by running make release", kind="decision")
    target = out / "file.json"
    os.mkfifo(out / "pipe")
    (out / "elsewhere").write_text("keep me\n")
    (out / "link").symlink_to(out / "elsewhere")
    (out / ".file.json.tmp").symlink_to(out / "elsewhere")  # an old guess
    for bad in ("pipe", "link"):
        done = ken(*command, str(out / bad))
        assert done.exit_code == 1 and "is not a regular file" in done.stderr, done.output
    store = Path(os.environ["KEN_DB"])
    kept = store.read_bytes()
    done = ken(*command, str(store))  # it wrote JSON over the live store
    assert done.exit_code == 1 and "is the memory store itself" in done.stderr, done.output
    assert store.read_bytes() == kept
    assert stat.S_ISFIFO(os.lstat(out / "pipe").st_mode)
    assert (out / "link").is_symlink()
    done = ken(*command, str(target))
    assert done.exit_code == 0, done.output
    assert (out / "elsewhere").read_text() == "keep me\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in out.iterdir()) == [
        ".file.json.tmp",
        "elsewhere",
        "file.json",
        "link",
        "pipe",
    ]


def test_an_import_stopped_by_a_full_disk_says_what_it_kept_and_that_a_rerun_adds_the_rest(
    tmp_path, monkeypatch
):
    """An import that stopped partway on a full disk said only the store's error line, not
    that the batches before were kept, nor that running it again adds the rest."""
    from kenning.store.sqlite import SQLiteStore
    from kenning.store.sqlite_core import friendly

    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps({"title": f"Imported item {n}"}) + "\n" for n in range(7)))
    real_import, real_insert = transfer.import_items, SQLiteStore.insert_many
    calls = []

    def small_batches(*args, **kwargs):
        return real_import(*args, **{**kwargs, "batch": 3})

    def fills_the_disk(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise friendly(sqlite3.OperationalError("database or disk is full"), self.path)
        return real_insert(self, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(transfer, "import_items", small_batches)
        patched.setattr(SQLiteStore, "insert_many", fills_the_disk)
        done = ken("import", str(dump))
    assert done.exit_code == 1
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("ken: the store ") and "the disk holding it is full" in line
    assert line.endswith(
        "free some space there and run the command again; the import stopped there: the 3 "
        "of 7 memories it added before are kept, and running the same import again adds "
        "the rest and skips those"
    )
    assert len(export_json(ken("export").stdout)) == 3
    again = ken("import", str(dump))
    assert again.exit_code == 0
    assert "added 4 proposed memories, skipped 3 already here" in again.stderr
    listed = export_json(ken("export").stdout)
    assert sorted(row["title"] for row in listed) == [f"Imported item {n}" for n in range(7)]
