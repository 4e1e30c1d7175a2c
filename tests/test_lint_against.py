"""`ken lint --against`: memories that repeat or contradict a line of the instruction
files agents load on their own, with the file and line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ken
from helpers import add, one_line_error
from kenning import lint, paths
from kenning.errors import InvalidInput

REPO = "repo:github.com/acme/shop"
CLAUDE_MD = """\
# Shop

## Conventions

- Use pnpm, not npm, for installs.
- Deploys go through make release.

```sh
npm install   # a code block: not an instruction
```

<!-- Use yarn everywhere. (a comment: not read) -->
Tests run with `make test`. Never push directly to main.
"""


@pytest.fixture
def shop(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (git_repo / "CLAUDE.md").write_text(CLAUDE_MD)
    (git_repo / "AGENTS.md").write_text("- Answer in British English.\n")
    monkeypatch.chdir(git_repo)
    return git_repo


def test_instruction_lines_are_list_items_and_sentences_not_code_or_headings():
    assert lint.instruction_lines(CLAUDE_MD) == [
        (5, "Use pnpm, not npm, for installs."),
        (6, "Deploys go through make release."),
        (13, "Tests run with `make test`."),
        (13, "Never push directly to main."),
    ]


def test_a_memory_repeating_or_contradicting_a_line_is_reported_with_file_and_line(shop):
    copy = add("Install packages with pnpm rather than npm", scope=REPO, kind="preference")
    wrong = add("Use npm for installs", scope=REPO, kind="preference")
    also = add("Replies should be in British English", scope=REPO, kind="preference")
    add("The API listens on port 8080", scope=REPO, kind="fact")
    add("Use yarn everywhere", scope=REPO, kind="preference")  # only the comment says so
    found = json.loads(ken("lint", "--against", "--json").stdout)
    against = {f["id"]: f for f in found if f["rule"].endswith("instructions")}
    assert set(against) == {copy.id, wrong.id, also.id}
    assert against[copy.id]["rule"] == "in_instructions"
    assert (against[copy.id]["file"], against[copy.id]["line"]) == (str(shop / "CLAUDE.md"), 5)
    assert "CLAUDE.md:5 says the same" in against[copy.id]["detail"]
    assert against[wrong.id]["rule"] == "contradicts_instructions"
    assert "it contradicts CLAUDE.md:5 (npm is" in against[wrong.id]["detail"]
    assert (against[also.id]["rule"], against[also.id]["line"]) == ("in_instructions", 1)
    text = ken("lint", "--against").stdout
    assert "in_instructions" in text and "contradicts_instructions" in text


def test_a_memory_imported_from_the_file_is_not_reported_as_repeating_it(shop):
    ken("import", "--from", "CLAUDE.md")
    ken("approve", "--all", "--yes")
    imported = json.loads(ken("list", "--json").stdout)
    assert any(i["title"].startswith("Use pnpm") for i in imported)
    found = json.loads(ken("lint", "--against", "--json").stdout)
    assert [f for f in found if f["rule"].endswith("instructions")] == []
    # Imported from CLAUDE.md, it still repeats AGENTS.md when that says the same.
    (shop / "AGENTS.md").write_text("- Use pnpm, not npm, for installs.\n")
    found = json.loads(ken("lint", "--against", "--json").stdout)
    assert {(Path(f["file"]).name, f["rule"]) for f in found if "file" in f} == {
        ("AGENTS.md", "in_instructions")
    }
    # And the file changed to say the opposite contradicts what it once said.
    (shop / "AGENTS.md").write_text("- Answer in British English.\n")
    (shop / "CLAUDE.md").write_text(CLAUDE_MD.replace("Use pnpm, not npm", "Use npm, not pnpm"))
    found = json.loads(ken("lint", "--against", "--json").stdout)
    assert {(Path(f["file"]).name, f["rule"]) for f in found if "file" in f} == {
        ("CLAUDE.md", "contradicts_instructions")
    }


def test_a_contradiction_says_what_the_file_holds_against_the_memory(shop, tmp_path):
    agents_md = tmp_path / "AGENTS.md"
    agents_md.write_text("- Use npm, not pnpm, for installs.\n")
    add("Use pnpm for installs, never npm", scope=REPO, kind="preference")
    [found] = [f for f in json.loads(ken("lint", "--json", str(agents_md)).stdout) if "file" in f]
    assert "(pnpm is rejected now)" in found["detail"], found


def test_files_named_are_read_instead_of_the_repos_own(shop, tmp_path):
    gemini = tmp_path / "GEMINI.md"
    gemini.write_text("- Never deploy on Fridays.\n")
    friday = add("Deploying on Fridays is fine", scope=REPO, kind="preference")
    add("Install packages with pnpm rather than npm", scope=REPO, kind="preference")
    found = json.loads(ken("lint", "--json", str(gemini)).stdout)
    assert [(f["id"], f["rule"], f["line"]) for f in found if "file" in f] == [
        (friday.id, "contradicts_instructions", 1)
    ]


def test_without_instruction_files_to_read_lint_against_says_so(git_repo, monkeypatch, tmp_path):
    monkeypatch.chdir(git_repo)
    result = ken("lint", "--against")
    assert result.exit_code == 1
    assert "no CLAUDE.md, AGENTS.md, GEMINI.md at" in one_line_error(result.stderr)
    monkeypatch.chdir(tmp_path)
    result = ken("lint", "--against")
    assert result.exit_code == 1 and "name them" in one_line_error(result.stderr)
    result = ken("lint", str(tmp_path / "missing.md"))
    assert result.exit_code == 1 and "cannot read" in one_line_error(result.stderr)


def test_an_automatic_session_handoff_is_not_held_against_the_files(shop):
    """A session asked "npm or pnpm?": its handoff quotes the question, which states
    nothing the file could contradict."""
    import json as _json

    from kenning.hooks import run as hook_run

    for event, extra in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "should installs use npm rather than pnpm?"}),
        ("SessionEnd", {"reason": "exit"}),
    ):
        payload = {"session_id": "s-npm", "cwd": str(shop), "hook_event_name": event}
        hook_run.run([event, "--agent", "claude"], _json.dumps({**payload, **extra}).encode())
    add("Use npm rather than pnpm", scope=REPO, kind="preference")
    found = _json.loads(ken("lint", "--against", "--json").stdout)
    assert [f["title"] for f in found] == ["Use npm rather than pnpm"]


def test_a_line_holding_a_secret_is_compared_redacted_and_never_quoted(shop):
    """The memory onboarded from a line with a password was reported as contradicting
    that line ("redacted becomes Tr0ub4dor 3xyz"), quoting the password the store had
    redacted."""
    secret = "Tr0ub4dor&3xyz"
    (shop / "CLAUDE.md").write_text(f"# Shop\n\n- The staging password is {secret}\n")
    assert ken("import", "--from", "CLAUDE.md").exit_code == 0
    found = ken("lint", "--against", "--json")
    assert [f for f in json.loads(found.stdout) if f["rule"].endswith("instructions")] == []
    # A memory that does differ from the line is reported, with the line as stored.
    add("The staging password is rotated weekly now", scope=REPO, kind="fact")
    for form in ([], ["--json"]):
        said = ken("lint", "--against", *form)
        assert "Tr0ub4dor" not in said.stdout + said.stderr
        assert "3xyz" not in said.stdout + said.stderr


def test_an_instruction_file_is_read_by_the_one_reader_of_files_others_chose(tmp_path, monkeypatch):
    """lint kept its own copy of `paths.read_file`'s checks (a regular file, opened
    without blocking, a cap): one reader now, and lint's messages as before."""
    read: list[str] = []
    reader = paths.read_regular

    def spy(path: str, cap: int) -> bytes:
        read.append(path)
        return reader(path, cap)

    monkeypatch.setattr(paths, "read_regular", spy)
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("- Never deploy on Fridays.\n")
    assert lint.read_instructions(notes) == "- Never deploy on Fridays.\n"
    assert read == [str(notes)]

    fifo = tmp_path / "AGENTS.md"
    os.mkfifo(fifo)  # no writer: a blocking read would wait for ever
    with pytest.raises(InvalidInput, match="AGENTS.md is not a regular file: an instruction"):
        lint.read_instructions(fifo)
    device = tmp_path / "GEMINI.md"
    device.symlink_to("/dev/zero")
    with pytest.raises(InvalidInput, match="GEMINI.md is not a regular file"):
        lint.read_instructions(device)
    big = tmp_path / "big.md"
    with big.open("wb") as file:
        file.truncate(lint.MAX_INSTRUCTION_BYTES + 1)
    with pytest.raises(InvalidInput, match="big.md is over 1 MiB: an instruction file that"):
        lint.read_instructions(big)
    with pytest.raises(InvalidInput, match="cannot read .*missing.md: No such file"):
        lint.read_instructions(tmp_path / "missing.md")
