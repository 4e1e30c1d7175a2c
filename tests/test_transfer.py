"""Export and import as JSON lines (kenning.transfer, `ken export`, `ken import`)."""

from __future__ import annotations

import json

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
        ('{"title": "x", "tags": "a,b"}', "line 2: 'tags' must be a list of text"),
        ('{"title": "x", "kind": "opinion"}', "line 2: unknown kind 'opinion'"),
        ('{"title": "x", "scope": "planet:mars"}', "line 2: bad scope"),
        ('{"title": "x", "provenance": []}', "line 2: 'evidence' must be text"),
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
