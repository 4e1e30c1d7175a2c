"""Onboarding: the rules in a repo's CLAUDE.md become proposals, and once approved they
reach every agent except the one that loads the file itself."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ken
from helpers import opened
from kenning import deliver, locate, onboard
from kenning.config import Config
from kenning.model import Kind, Status
from kenning.store import ItemQuery

CLAUDE_MD = """\
# Shop

This file tells Claude Code how we work in this repo.

## Commands

- Use pnpm for every install; never npm or yarn.
- Run the unit tests with `pnpm test:unit` before each commit.
- Start the dev server with `pnpm dev`; it listens on port 5173.

## Code style

- Prefer named exports over default exports in TypeScript modules.
- Keep React components under 200 lines; split them
  into smaller ones when they grow.
- Do not add comments that repeat what the code says.

```bash
# a code block is not a rule
pnpm lint --fix
```

## Architecture

We decided to keep the payment gateway behind the outbox table, because direct calls
lost orders when the gateway timed out.

| table | meaning |
| --- | --- |
| outbox | waits for the gateway |

<!--
- An entry inside a comment is skipped.
-->

## Testing

- Integration tests hit a real Postgres started by docker compose.
1. Never mock the database in integration tests.

> A quote is not a rule either.
"""
EXPECTED = [
    (7, "Use pnpm for every install; never npm or yarn.", Kind.PREFERENCE),
    (8, "Run the unit tests with `pnpm test:unit` before each commit.", Kind.PREFERENCE),
    (9, "Start the dev server with `pnpm dev`; it listens on port 5173.", Kind.FACT),
    (13, "Prefer named exports over default exports in TypeScript modules.", Kind.PREFERENCE),
    (
        14,
        "Keep React components under 200 lines; split them into smaller ones when they grow.",
        Kind.PREFERENCE,
    ),
    (16, "Do not add comments that repeat what the code says.", Kind.PREFERENCE),
    (
        23,
        "Architecture: We decided to keep the payment gateway behind the outbox table, because "
        "direct calls lost orders when the gateway timed out.",
        Kind.DECISION,
    ),
    (38, "Integration tests hit a real Postgres started by docker compose.", Kind.FACT),
    (39, "Never mock the database in integration tests.", Kind.PREFERENCE),
]


def test_an_instruction_file_reads_as_its_bullets_and_sections_prose():
    assert len(CLAUDE_MD.splitlines()) >= 40
    found = onboard.entries(CLAUDE_MD)
    assert [(e.line, e.text, e.kind) for e in found] == [
        *EXPECTED,  # the introduction under the title is no rule
    ]


def _shop(git_repo: Path) -> Path:
    path = git_repo / "CLAUDE.md"
    path.write_text(CLAUDE_MD)
    return path


def test_import_from_claude_md_proposes_each_rule_in_the_repo_with_its_file_and_line(
    git_repo, monkeypatch
):
    path = _shop(git_repo)
    monkeypatch.chdir(git_repo)

    result = ken("import", "--from", "CLAUDE.md")

    assert result.exit_code == 0, result.output
    assert "proposed 9 memories in repo:github.com/acme/shop" in result.output
    with opened() as store:
        waiting = store.list_items(ItemQuery(statuses=("proposed",), limit=100))
    assert len(waiting) == 9
    assert {str(i.scope) for i in waiting} == {"repo:github.com/acme/shop"}
    first = next(i for i in waiting if i.title.startswith("Use pnpm"))
    assert first.kind is Kind.PREFERENCE and first.status is Status.PROPOSED
    assert [str(x) for x in first.links] == [f"file:{path.resolve()}"]
    assert first.evidence == "CLAUDE.md:7: Use pnpm for every install; never npm or yarn."
    assert first.provenance.how == "onboard" and first.provenance.who == "user"

    again = ken("import", "--from", "CLAUDE.md")
    assert "proposed 0 memories in repo:github.com/acme/shop, 9 already in memory" in (again.output)


def test_a_dry_run_says_what_it_would_propose_and_stores_nothing(git_repo, monkeypatch):
    _shop(git_repo)
    monkeypatch.chdir(git_repo)

    result = ken("import", "--from", "CLAUDE.md", "--dry-run", "--json")

    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["dry_run"] is True and len(data["proposed"]) == 9
    with opened() as store:
        assert store.count_items() == 0


def test_after_approval_codex_is_told_the_rules_and_claude_which_loads_the_file_is_not(
    git_repo, monkeypatch
):
    _shop(git_repo)
    monkeypatch.chdir(git_repo)
    assert ken("import", "--from", "CLAUDE.md").exit_code == 0
    assert ken("approve", "--all", "--yes").exit_code == 0
    assert ken("add", "Staging deploys need the VPN", "--kind", "fact").exit_code == 0

    codex = ken("pack", "--for", "codex").output
    claude = ken("pack", "--for", "claude").output
    gemini = ken("pack", "--for", "gemini").output

    assert "Use pnpm for every install" in codex and "outbox table" in codex
    assert "Use pnpm for every install" in gemini
    assert "Use pnpm for every install" not in claude and "outbox table" not in claude
    assert "Staging deploys need the VPN" in claude  # other memories still reach it
    assert "did not fit" not in claude  # what it has already is not said to be left out

    # Per prompt too: recall gives Codex the rule and Claude nothing of the file.
    with opened() as store:
        config = Config()
        prompt = "which package manager should I install the dependencies with, npm?"
        told = {}
        for agent in ("codex", "claude"):
            where = locate.here(store, config, cwd=str(git_repo), agent=agent)
            got = deliver.recall_for(store, config, where, prompt, record=False)
            told[agent] = [c.item.title for c in got.kept]
    assert any(t.startswith("Use pnpm") for t in told["codex"])
    assert not any(t.startswith("Use pnpm") for t in told["claude"])


def test_an_onboarded_memory_is_known_by_the_file_it_came_from(git_repo, monkeypatch):
    _shop(git_repo)
    monkeypatch.chdir(git_repo)
    ken("import", "--from", "CLAUDE.md")
    with opened() as store:
        item = store.list_items(ItemQuery(statuses=("proposed",), limit=1))[0]
    assert deliver.onboarded_from(item) == "CLAUDE.md"
    assert (
        deliver.onboarded_from(replace(item, provenance=replace(item.provenance, how="cli")))
        is None
    )
    has = deliver.loaded_by_itself("claude")
    assert has is not None and has(item)
    codex = deliver.loaded_by_itself("codex")
    assert codex is not None and not codex(item)


def test_import_from_outside_a_repo_or_with_a_file_too_says_so(tmp_path, monkeypatch):
    (tmp_path / "AGENTS.md").write_text("- Use tabs.\n")
    monkeypatch.chdir(tmp_path)
    result = ken("import", "--from", "AGENTS.md")
    assert result.exit_code == 1
    assert "no repo here" in result.output
    both = ken("import", "x.jsonl", "--from", "AGENTS.md")
    assert both.exit_code == 2
    (tmp_path / "EMPTY.md").write_text("# Just a title\n")
    empty = ken("import", "--from", "EMPTY.md", "--scope", "global")
    assert empty.exit_code == 1 and "holds no bullets or sections" in empty.output


def test_a_file_with_a_secret_or_bytes_that_are_not_text_proposes_nothing_and_names_the_line(
    git_repo, monkeypatch
):
    monkeypatch.chdir(git_repo)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    (git_repo / "CLAUDE.md").write_text(
        f"# Rules\n\n- Use pnpm.\n- Run ruff.\n- {token}\n- Use tabs.\n"
    )
    for args in (("--dry-run",), ()):
        refused = ken("import", "--from", "CLAUDE.md", *args)
        assert refused.exit_code == 1, refused.output
        assert "CLAUDE.md:5: " in refused.stderr and "nothing was proposed" in refused.stderr
    (git_repo / "AGENTS.md").write_bytes(b"# Rules\n\n- Use pnpm.\n- caf\xe9\n")
    binary = ken("import", "--from", "AGENTS.md")
    assert binary.exit_code == 1 and "AGENTS.md:4: not UTF-8 text" in binary.stderr
    with opened() as store:
        assert store.count_items() == 0


def test_a_sections_later_paragraphs_are_its_body():
    text = "## Releases\n\nWe ship on Tuesdays.\nNever on Fridays.\n\nHotfixes skip the train.\n"
    assert [e.text for e in onboard.entries(text)] == [
        "Releases: We ship on Tuesdays. Never on Fridays.\nHotfixes skip the train."
    ]


def test_integrate_points_out_the_instruction_files_it_finds(git_repo, monkeypatch):
    _shop(git_repo)
    (git_repo / "GEMINI.md").write_text("- Use tabs.\n")
    monkeypatch.chdir(git_repo)

    result = ken("integrate", "codex")

    assert result.exit_code == 0, result.output
    assert f"found CLAUDE.md here: `ken import --from {git_repo / 'CLAUDE.md'}`" in result.output
    assert "found GEMINI.md here" in result.output and "AGENTS.md" not in result.output


def test_a_bullets_indented_paragraphs_and_blocks_are_the_bullets_own():
    """A paragraph or code block indented under a bullet became a separate, wrong entry
    under the section's heading."""
    text = (
        "## Testing\n\n- Run the integration suite before pushing\n\n"
        "  It needs Docker running, and takes about five minutes.\n"
        "- Build with make\n\n  ```sh\n  make all\n  ```\n\n  then run the smoke test\n"
        "- Never skip the migration check\n"
    )
    assert [(e.line, e.text) for e in onboard.entries(text)] == [
        (
            3,
            "Run the integration suite before pushing\n"
            "It needs Docker running, and takes about five minutes.",
        ),
        (6, "Build with make\nthen run the smoke test"),
        (13, "Never skip the migration check"),
    ]


def test_a_byte_order_mark_does_not_hide_the_first_entry():
    assert [e.text for e in onboard.entries("\ufeff- First rule\n- Second rule\n")] == [
        "First rule",
        "Second rule",
    ]
    assert [e.text for e in onboard.entries("\ufeff## Setup\n\nRun make setup first.\n")] == [
        "Setup: Run make setup first."
    ]


@pytest.mark.timing
def test_a_long_file_is_read_in_time_proportional_to_it(git_repo, monkeypatch, tmp_path):
    """Each entry was compared with every one chosen before it: 2,000 bullets took 12 s,
    a file under the 1 MiB cap ran for minutes."""
    import time

    monkeypatch.chdir(git_repo)
    rules = tmp_path / "RULES.md"
    rules.write_text("".join(f"- rule number {n} about thing{n}\n" for n in range(3000)))
    started = time.process_time()
    done = ken("import", "--from", str(rules), "--dry-run")
    assert done.exit_code == 0 and "would propose 3000 memories" in done.output
    assert time.process_time() - started < 20


def test_an_instruction_file_that_is_a_pipe_is_refused_at_once(git_repo, monkeypatch):
    """`ken import --from CLAUDE.md` with CLAUDE.md a FIFO waited for a writer for ever."""
    import os
    import subprocess

    from conftest import KEN_BIN

    monkeypatch.chdir(git_repo)
    os.mkfifo(git_repo / "CLAUDE.md")
    done = subprocess.run(
        [str(KEN_BIN), "import", "--from", "CLAUDE.md", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=20,
        env=dict(os.environ),
    )
    assert done.returncode == 1
    assert "CLAUDE.md is not a regular file" in done.stderr
