"""The docs keep up with the code: every command, MCP tool and setting is documented, the
generated reference is fresh, the README starts with the two commands, and no relative
link points to a missing file or heading. Regenerate with `.venv/bin/python docs/generate.py`."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import ModuleType

import pytest

from conftest import ken_proc
from helpers import load_module, one_line_error
from kenning import agents

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def generator() -> ModuleType:
    return load_module(DOCS / "generate.py", "docs_generate")


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped,
    spaces to dashes, and -1, -2... on repeats."""
    seen: dict[str, int] = {}
    found = set()
    for heading in headings_in_order(path):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def headings_in_order(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]


def headings(path: Path) -> set[str]:
    """The text of every Markdown heading in a file, without the #s."""
    return set(headings_in_order(path))


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def test_every_command_has_a_section_in_the_cli_reference() -> None:
    documented = headings(DOCS / "reference" / "cli.md")
    names = [full for full, _, _ in generator().all_commands()]
    assert len(names) > 20
    missing = [name for name in names if name not in documented]
    assert not missing, f"not in docs/reference/cli.md: {missing}; run docs/generate.py"


def test_every_mcp_tool_has_a_section_in_the_mcp_reference() -> None:
    pytest.importorskip("mcp")
    from kenning.mcp_server import build_server

    tools = [tool.name for tool in asyncio.run(build_server().list_tools())]
    assert "memory_search" in tools
    documented = headings(DOCS / "reference" / "mcp.md")
    missing = [name for name in tools if f"`{name}`" not in documented]
    assert not missing, f"no '## `TOOL`' section in docs/reference/mcp.md for {missing}"


def test_every_setting_is_in_the_config_reference() -> None:
    from kenning.config import SETTINGS

    text = (DOCS / "reference" / "config.md").read_text(encoding="utf-8")
    missing = [s.key for s in SETTINGS if f"| `{s.key}` |" not in text]
    assert not missing, f"not in docs/reference/config.md: {missing}; run docs/generate.py"


def test_every_agent_has_a_howto_that_the_readme_links() -> None:
    from kenning import agents

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for agent in agents.AGENTS.values():
        howtos = [
            p
            for p in (ROOT / "docs" / "howto").glob("*.md")
            if p.read_text().startswith(f"# Use kenning with {agent.title}\n")
        ]
        assert len(howtos) == 1, f"no docs/howto page for {agent.title}"
        assert f"(docs/howto/{howtos[0].name})" in readme, howtos[0].name


def test_the_generated_docs_are_fresh(capsys: pytest.CaptureFixture[str]) -> None:
    code = generator().main(["--check"])
    assert code == 0, capsys.readouterr().err


def test_the_readme_starts_with_the_two_commands() -> None:
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:40])
    assert "make demo" in first
    assert "make test" in first


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files_that_exist(path: Path) -> None:
    text = CODE_SPAN.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # a URL or mailto:
        file_part, _, anchor = target.partition("#")
        linked = path.parent / file_part if file_part else path
        exists = linked.exists()
        if exists and anchor and linked.suffix == ".md":
            exists = anchor in anchors(linked)
        if not exists:
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)} links to missing files or headings: {broken}"


def test_the_link_checker_sees_links() -> None:
    sample = 'See [a](docs/x.md), [b](../y.md#part), ![c](img.png "t") and [d](#top).'
    assert LINK.findall(sample) == ["docs/x.md", "../y.md#part", "img.png", "#top"]


def test_every_table_of_a_fresh_store_has_its_own_section_in_the_schema_reference(
    tmp_path: Path,
) -> None:
    import sqlite3

    from kenning.store import open_store

    open_store(tmp_path / "fresh.db").close()
    conn = sqlite3.connect(tmp_path / "fresh.db")
    try:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND name NOT LIKE 'items_fts_%' AND name NOT LIKE 'items_recent_%'"
            )
        ]
    finally:
        conn.close()
    assert {"items", "sessions", "terms", "replays"} <= set(tables)
    written = " ".join(headings(DOCS / "reference" / "schema.md"))
    missing = [t for t in tables if f"`{t}`" not in written]
    assert not missing, f"no heading names these tables in docs/reference/schema.md: {missing}"


@pytest.mark.postgres
def test_every_postgresql_table_has_a_heading_in_the_postgresql_schema_reference(
    pg_dsn: str,
) -> None:
    import psycopg

    from kenning.store import open_store

    open_store(pg_dsn, schema="ws_docs").close()
    with psycopg.connect(pg_dsn) as conn:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                ("ws_docs",),
            )
        ]
    assert {"items", "sessions", "terms", "_migrations"} <= set(tables)
    written = " ".join(headings(DOCS / "reference" / "schema-postgres.md"))
    missing = [t for t in tables if f"`{t}`" not in written]
    assert not missing, f"no heading of docs/reference/schema-postgres.md names {missing}"


ERRORS = DOCS / "reference" / "errors.md"


def test_the_doctor_sample_counts_the_events_claude_is_given() -> None:
    events = len(agents.get("claude").installs)
    assert f'"{events} of {events} events in /home/me/.claude/settings.json"' in (
        ERRORS.read_text(encoding="utf-8")
    )


def test_the_errors_table_quotes_ken_sessions_outside_a_repo_as_it_prints(tmp_path: Path) -> None:
    result = ken_proc("sessions", cwd=tmp_path)
    said = one_line_error(result.stderr).removeprefix("ken: ")
    assert result.returncode == 1 and said.startswith("this folder is not in a git repo")
    assert f"`{said}`" in ERRORS.read_text(encoding="utf-8")
