"""Shell completion, through click's protocol as bash, zsh and fish drive it: the installed
`ken` runs with `_KEN_COMPLETE=<shell>_complete` and the words typed so far."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import KEN_BIN, ken_proc
from helpers import add
from kenning.model import Status

DOCS = Path(__file__).resolve().parent.parent / "docs"


def complete(shell: str, words: str, cwd: Path | None = None) -> list[str]:
    """What `ken` offers for the last of `words` (empty after a trailing space)."""
    parts = words.split(" ")
    env = {
        **os.environ,
        "_KEN_COMPLETE": f"{shell}_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": parts[-1] if shell == "fish" else str(len(parts) - 1),
    }
    done = subprocess.run(
        [str(KEN_BIN)], env=env, capture_output=True, text=True, cwd=cwd, timeout=60
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.splitlines()


def bash_values(words: str, cwd: Path | None = None) -> list[str]:
    return [line.split(",", 1)[1] for line in complete("bash", words, cwd) if line]


def test_ids_complete_from_their_short_start_with_titles_for_zsh_and_fish() -> None:
    first = add("Use pnpm, never npm")
    add("Release on Thursdays")
    short = first.id[-6:].lower()
    offered = bash_values(f"ken show {short[:2]}")
    assert short in offered
    assert all(v.startswith(short[:2]) for v in offered)
    assert len(bash_values("ken show ")) == 2

    zsh = complete("zsh", f"ken show {short[:3]}")
    assert zsh[zsh.index(short) + 1] == "Use pnpm, never npm"
    fish = complete("fish", f"ken pin {short[:3]}")
    assert f"plain,{short}\tUse pnpm, never npm" in fish


def test_ids_offered_fit_the_command() -> None:
    proposal = add("A proposal", status=Status.PROPOSED).id[-6:].lower()
    active = add("An active one").id[-6:].lower()
    archived = add("An archived one", status=Status.ARCHIVED).id[-6:].lower()
    assert bash_values("ken approve ") == [proposal]
    assert bash_values("ken approve x ") == [proposal]  # every ref, not only the first
    assert bash_values("ken restore ") == [archived]
    assert set(bash_values("ken forget ")) == {proposal, active, archived}


def test_kinds_complete() -> None:
    assert bash_values("ken add --kind pr") == ["preference"]
    assert bash_values("ken list -k c") == ["correction"]
    assert len(bash_values("ken search --kind ")) == 9


def test_scopes_complete_from_where_you_are_and_from_the_store(git_repo: Path) -> None:
    add("Note for a project", scope="project:billing")
    offered = bash_values("ken add --scope ", cwd=git_repo)
    assert offered[:2] == ["workstream:github.com/acme/shop#main", "repo:github.com/acme/shop"]
    assert {"global", "project:billing", "repo", "workstream"} <= set(offered)
    assert "project" not in offered  # no project applies here
    assert bash_values("ken add --scope re", cwd=git_repo) == ["repo:github.com/acme/shop", "repo"]
    assert bash_values("ken list --scope proj", cwd=git_repo) == ["project:billing"]
    zsh = complete("zsh", "ken search --scope proj", cwd=git_repo)
    assert zsh == ["plain", "project\\:billing", "holds memories"]  # zsh's colons escaped


def bash_split(line: str) -> tuple[list[str], int]:
    """COMP_WORDS and COMP_CWORD as bash makes them for `line` (no quotes in it), the
    cursor at its end: words end at spaces, and each character of COMP_WORDBREAKS
    (`:` and `=` here) is a word of its own."""
    words: list[str] = []
    for part in line.split(" "):
        words += [w for w in re.split(r"([:=])", part) if w] or [""]
    return words, len(words) - 1


def bash_completes(line: str, cwd: Path) -> str:
    """The line after a <TAB> at its end in bash, one candidate or their common start:
    `ken`'s bash script run by a real bash with the variables bash gives a completion
    function, and COMPREPLY put in place of readline's word (what follows the last
    space or character of COMP_WORDBREAKS)."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash here")
    script = ken_proc(env={"_KEN_COMPLETE": "bash_source"}).stdout
    words, cword = bash_split(line)
    driver = (
        script
        + 'COMP_LINE=$1; COMP_POINT=${#1}; COMP_CWORD=$2; shift 2; COMP_WORDS=("$@")\n'
        + f"_ken_completion {shlex.quote(str(KEN_BIN))}\n"
        + 'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", driver, "bash", line, str(cword), *words],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    replies = done.stdout.splitlines()
    word = re.split(r"[ :=@]", line)[-1]
    return line[: len(line) - len(word)] + os.path.commonprefix(replies)


def test_bash_completes_a_scope_after_its_colon_and_escapes_its_spaces(git_repo: Path) -> None:
    """`:` is in COMP_WORDBREAKS: bash hands `repo:github.com/x` over as three words, and
    replaces only what follows the colon; a scope's space must reach ken as one word."""
    add("Team note", scope="workspace:my team")
    add("Billing note", scope="project:billing")
    for typed, completed in (
        ("ken list --scope repo:github.com/acme/sh", "ken list --scope repo:github.com/acme/shop"),
        ("ken list --scope repo:", "ken list --scope repo:github.com/acme/shop"),
        ("ken add x --scope=project:bi", "ken add x --scope=project:billing"),
        ("ken list --scope workspace:my", "ken list --scope workspace:my\\ team"),
        ("ken list --scope worksp", "ken list --scope workspace:my\\ team"),
        (
            "ken search -s workstream:github.com/acme/shop#",
            "ken search -s workstream:github.com/acme/shop#main",
        ),
        ("ken list --kind pr", "ken list --kind preference"),
    ):
        assert bash_completes(typed, git_repo) == completed, typed
    # What bash completed is the scope itself once the shell reads the line.
    done = subprocess.run(
        [
            "bash",
            "--norc",
            "--noprofile",
            "-c",
            f"{KEN_BIN} list --scope workspace:my\\ team --json",
        ],
        capture_output=True,
        text=True,
        cwd=git_repo,
        timeout=60,
    )
    assert [i["title"] for i in json.loads(done.stdout)] == ["Team note"], done.stderr


def test_completion_without_a_store_offers_no_ids_and_makes_no_store(tmp_path: Path) -> None:
    assert bash_values("ken show ") == []
    assert bash_values("ken add --scope g") == ["global"]
    assert not Path(os.environ["KEN_DB"]).exists()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_s_completion_script_is_documented_and_made(shell: str) -> None:
    text = (DOCS / "howto" / "shell-completion.md").read_text(encoding="utf-8")
    assert f"_KEN_COMPLETE={shell}_source ken" in text
    script = ken_proc(env={"_KEN_COMPLETE": f"{shell}_source"})
    assert script.returncode == 0 and "_KEN_COMPLETE" in script.stdout


@pytest.mark.parametrize("broken", ["store_a_folder", "store_not_sqlite", "config_not_toml"])
def test_scopes_of_where_you_are_complete_with_a_broken_store_or_config(
    broken: str, git_repo: Path, tmp_path: Path, isolated_home: Path
) -> None:
    db = Path(os.environ["KEN_DB"])
    if broken == "store_a_folder":
        db.mkdir()
    elif broken == "store_not_sqlite":
        db.write_bytes(b"not a database, only words " * 100)
    else:
        (isolated_home / ".config/kenning").mkdir(parents=True)
        (isolated_home / ".config/kenning/config.toml").write_text("memory = [\n")
    offered = bash_values("ken list --scope ", cwd=git_repo)
    assert offered[:2] == ["workstream:github.com/acme/shop#main", "repo:github.com/acme/shop"]
    assert {"global", "repo", "workstream"} <= set(offered)
