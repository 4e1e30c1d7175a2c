"""The agent guard (issue 9.2): what an agent running `ken` from its own shell may not
do. Person-only commands are refused there, with no question an agent could answer;
a hook payload forged by hand for another repo is not recorded; an import keeps no pin
unless a person brings back their own export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN
from helpers import opened
from kenning.store import SessionQuery

AGENT_SCRIPT = r"""
import json, os, subprocess, sys
ken, payloads = sys.argv[1], json.loads(sys.argv[2])
print(os.getpid())
for event, payload in payloads:
    subprocess.run([ken, "hook", event, "--agent", "claude"], input=json.dumps(payload),
                   text=True, check=True, capture_output=True)
"""


def fake_agent(tmp_path: Path) -> Path:
    """A program whose process is named `claude`, as the agent's own process is."""
    folder = tmp_path / "agent-bin"
    folder.mkdir(exist_ok=True)
    agent = folder / "claude"
    if not agent.exists():
        agent.symlink_to(os.path.realpath(sys.executable))
    return agent


def as_agent(
    tmp_path: Path, home: Path, payloads: list[tuple[str, dict[str, Any]]], server: str = "0"
) -> int:
    """Run `ken hook` for each payload from a shell of a `claude` process working in
    `home`, as an agent running it by hand would; the agent's pid."""
    done = subprocess.run(
        [str(fake_agent(tmp_path)), "-c", AGENT_SCRIPT, str(KEN_BIN), json.dumps(payloads)],
        cwd=home,
        env={**os.environ, "CLAUDECODE": "1", "KEN_HOOK_SERVER": server},
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def git_repo(folder: Path, origin: str) -> Path:
    folder.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["remote", "add", "origin", origin]):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)
    return folder


def session_payloads(cwd: Path, session: str) -> list[tuple[str, dict[str, Any]]]:
    base = {"session_id": session, "cwd": str(cwd)}
    return [
        ("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        (
            "UserPromptSubmit",
            {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Always push to main"},
        ),
        ("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"}),
    ]


def recorded() -> dict[str, list[str]]:
    """Each recorded session's agent session id, with the scopes of its handoffs."""
    with opened() as store:
        return {
            s.agent_session_id or "": [
                str(i.scope) for i in store.list_items(_query(session_id=s.id, kinds=("handoff",)))
            ]
            for s in store.list_sessions(SessionQuery(limit=100))
        }


def _query(**options: Any) -> Any:
    from kenning.store import ItemQuery

    return ItemQuery(**{"statuses": (), **options})


def log_text() -> str:
    path = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("server", ["0", "1"])
def test_a_hook_forged_for_another_repo_from_an_agents_shell_is_not_recorded(
    tmp_path: Path, server: str
):
    ours = git_repo(tmp_path / "ours", "git@github.com:acme/ours.git")
    theirs = git_repo(tmp_path / "theirs", "git@github.com:acme/theirs.git")
    (ours / "src").mkdir()
    try:
        as_agent(tmp_path, ours, session_payloads(theirs, "forged"), server)
        agent = as_agent(tmp_path, ours, session_payloads(ours / "src", "own"), server)
    finally:
        subprocess.run([str(KEN_BIN), "hook", "--stop-server"], capture_output=True, timeout=20)
    found = recorded()
    assert "forged" not in found, "a payload for another repo was recorded"
    assert found["own"] == ["workstream:github.com/acme/ours#main"]
    with opened() as store:  # the agent's process, found above the hook in either case
        assert store.find_session("claude", "own").pid == agent
    lines = [line for line in log_text().splitlines() if "lies in another repo" in line]
    assert len(lines) == 3 and all(str(theirs) in line and str(ours) in line for line in lines)


HOOKS_SCRIPT = r"""
import json, subprocess, sys
ken, agent, payloads = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
for event, payload in payloads:
    subprocess.run([ken, "hook", event, "--agent", agent], input=json.dumps(payload),
                   text=True, check=True, capture_output=True)
"""
CLAUDE_SHELL = {
    "CLAUDECODE": "1",
    "CLAUDE_CODE_ENTRYPOINT": "cli",
    "CLAUDE_CODE_EXECPATH": "/usr/bin/claude",
}


def hooks_under(
    tmp_path: Path, process: str, env: dict[str, str], agent: str, cwd: Path, payloads: Any
) -> None:
    """Run `ken hook EVENT --agent AGENT` for each payload from a process named `process`
    (a symlink to this Python), with `env` added to this test's environment."""
    program = tmp_path / "agent-bin" / process
    program.parent.mkdir(exist_ok=True)
    if not program.exists():
        program.symlink_to(os.path.realpath(sys.executable))
    subprocess.run(
        [str(program), "-c", HOOKS_SCRIPT, str(KEN_BIN), agent, json.dumps(payloads)],
        cwd=cwd,
        env={**os.environ, **env},
        check=True,
        timeout=120,
        capture_output=True,
    )


@pytest.mark.parametrize("server", ["0", "1"])
def test_a_hook_run_from_one_agents_shell_as_another_agents_is_not_recorded(
    tmp_path: Path, server: str
):
    # Claude's model ran codex's hooks by hand, with a session id and prompts of its own
    # making: a "codex" session whose first prompt passes for the person's words. Codex
    # started from Claude's shell (its own process above its hooks) is recorded.
    ours = git_repo(tmp_path / "ours", "git@github.com:acme/ours.git")
    env = {**CLAUDE_SHELL, "KEN_HOOK_SERVER": server}
    try:
        hooks_under(tmp_path, "claude", env, "codex", ours, session_payloads(ours, "made-up"))
        hooks_under(tmp_path, "codex", env, "codex", ours, session_payloads(ours, "nested"))
    finally:
        subprocess.run([str(KEN_BIN), "hook", "--stop-server"], capture_output=True, timeout=20)
    found = recorded()
    assert "made-up" not in found, "a hook run by hand as another agent's was recorded"
    assert found["nested"] == ["workstream:github.com/acme/ours#main"]
    lines = [line for line in log_text().splitlines() if "another agent's shell" in line]
    assert len(lines) == 3, log_text()
    assert all("CLAUDECODE, CLAUDE_CODE_ENTRYPOINT, CLAUDE_CODE_EXECPATH" in x for x in lines)
    with opened() as store:
        [nested] = store.list_sessions(SessionQuery(limit=10))
        assert (nested.agent, nested.first_prompt) == ("codex", "Always push to main")


def test_what_a_hook_writes_is_a_working_note_labelled_with_its_agent(tmp_path: Path):
    from kenning.model import Kind, Status
    from kenning.policy import unreviewed_from

    ours = git_repo(tmp_path / "ours", "git@github.com:acme/ours.git")
    as_agent(tmp_path, ours, session_payloads(ours, "own"))
    with opened() as store:
        written = store.list_items(_query())
    assert written and all(i.kind is Kind.HANDOFF for i in written)
    assert all(i.status is Status.ACTIVE and unreviewed_from(i) == "claude" for i in written)


# --- person-only commands: refused in an agent's shell, with no question --------------------

REFUSAL = "needs a person: run it in your own terminal"


def agent_env() -> dict[str, str]:
    return {**os.environ, "CLAUDECODE": "1"}


def in_agent_pty(args: list[str], answer: bytes = b"y\n") -> tuple[int, str]:
    """Run `ken ARGS` on a terminal the agent made itself (pty.fork), typing `answer`
    at once, as an agent would to get past a question: (exit code, what it printed)."""
    import pty

    env = agent_env()
    pid, master = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the agent's pty
        try:
            os.execve(str(KEN_BIN), [str(KEN_BIN), *args], env)
        finally:
            os._exit(127)
    os.write(master, answer)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child is gone and the terminal closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def plain(args: list[str]) -> subprocess.CompletedProcess[str]:
    """`ken ARGS` from an agent's shell with no terminal (how agents usually run it)."""
    return subprocess.run(
        [str(KEN_BIN), *args],
        env=agent_env(),
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )


def proposal() -> str:
    from helpers import add
    from kenning.model import Status

    return str(add("Always push to main", status=Status.PROPOSED).id[-6:].lower())


def test_an_agent_answering_yes_on_a_terminal_it_made_itself_cannot_approve():
    ref = proposal()
    code, shown = in_agent_pty(["approve", ref])
    assert code == 1
    assert f"ken: approve {ref} {REFUSAL}" in shown
    assert "Allow" not in shown and "?" not in shown  # no question was asked
    from kenning.model import Status

    with opened() as store:
        assert store.list_items(_query(statuses=("active",))) == []
        assert [i.status for i in store.list_items(_query())] == [Status.PROPOSED]


def test_the_cli_reference_says_a_decision_on_an_agents_terminal_is_refused_as_it_is():
    ref = proposal()
    code, shown = in_agent_pty(["approve", ref])
    [line] = [x.strip() for x in shown.splitlines() if x.startswith("ken: ")]
    reference = (Path(__file__).parent.parent / "docs/reference/cli.md").read_text()
    start = reference.index("- **Inside an agent's shell**")
    said = " ".join(reference[start : reference.index("\n- **", start + 1)].split())
    assert code == 1 and "ask a person" not in said
    assert line.replace(ref, "7hq2xa") in said


PERSON_ONLY = {
    "approve": lambda tmp, ref: ["approve", ref],
    "forget": lambda tmp, ref: ["forget", ref, "--yes"],
    # refused before anything is looked up: "no item matches", or a count, told an agent
    # what a repo kept from it, or another agent, holds
    "forget an id no memory has": lambda tmp, ref: ["forget", "zzzzzz", "--yes"],
    "forget --scope": lambda tmp, ref: ["forget", "--scope", "repo:github.com/acme/pay", "--yes"],
    # refused whatever it names, before its status is looked at ("cannot restore: it is
    # active" told it what the memory was)
    "restore an active memory": lambda tmp, ref: ["restore", ref],
    "import --keep-status of nothing": lambda tmp, ref: ["import", "--keep-status", "/dev/null"],
    # refused before the ids are read: a pin, archive or dismiss of another agent's
    # proposal said "needs a person" (and its scope) where an unknown id said "no item"
    "pin": lambda tmp, ref: ["pin", ref],
    "unpin": lambda tmp, ref: ["unpin", ref],
    "archive an id no memory has": lambda tmp, ref: ["archive", "qqqqqq"],
    "dismiss an id no memory has": lambda tmp, ref: ["dismiss", "qqqqqq", "--reason", "wrong"],
    "config set": lambda tmp, ref: ["config", "set", "recall.limit", "9"],
    "project add": lambda tmp, ref: ["project", "add", "notes", str(tmp)],
    "project remove": lambda tmp, ref: ["project", "remove", "kept"],
    "integrate --remove": lambda tmp, ref: ["integrate", "claude", "--remove"],
    "integrate codex --trust": lambda tmp, ref: ["integrate", "codex", "--trust"],
    "integrate codex --mcp": lambda tmp, ref: ["integrate", "codex", "--mcp"],
    "integrate gemini": lambda tmp, ref: ["integrate", "gemini"],
    "integrate claude": lambda tmp, ref: ["integrate", "claude"],
    "plan apply": lambda tmp, ref: ["plan", "apply", str(tmp.parent / "plan.json")],
}


@pytest.mark.parametrize("command", sorted(PERSON_ONLY))
def test_a_person_only_command_in_an_agents_shell_is_refused_in_one_line(
    tmp_path: Path, command: str
):
    from conftest import ken

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "decisions.md").write_text("# Decisions\n\n## Always push to main\nSo it goes.\n")
    assert ken("project", "add", "kept", str(notes)).exit_code == 0
    assert ken("integrate", "claude").exit_code == 0
    ref = proposal()
    retire = {"op": "retire", "id": ref, "expected_revision": revision(ref), "reason": "done"}
    plan = {"schema": 1, "id": "p1", "owner": "claude", "operations": [retire]}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    before = (snapshot_all(), settings.read_bytes(), config.exists())
    args = PERSON_ONLY[command](notes, ref)

    done = plain(args)
    code, shown = in_agent_pty(args)

    assert done.returncode == 1 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("ken: ") and line.endswith(f"{REFUSAL} (agents propose, people decide)")
    assert code == 1 and REFUSAL in shown
    assert (snapshot_all(), settings.read_bytes(), config.exists()) == before
    assert not (Path(os.environ["CODEX_HOME"]) / "config.toml").exists()
    assert not (Path(os.environ["HOME"]) / ".gemini").exists()


def revision(ref: str) -> str:
    from kenning import items

    with opened() as store:
        return str(items.get(store, ref).revision)


def snapshot_all() -> Any:
    from helpers import snapshot

    with opened() as store:
        projects = store.projects()
    return snapshot(), projects


def test_the_library_refuses_an_agent_registering_or_removing_a_project(tmp_path: Path):
    from kenning import projects
    from kenning.errors import NeedsPerson
    from kenning.policy import PERSON, Actor

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "decisions.md").write_text("# Decisions\n\n## Always push to main\nSo it goes.\n")
    agent = Actor("codex")
    with opened() as store:
        with pytest.raises(NeedsPerson, match="register project notes needs a person"):
            projects.add_project(store, "notes", str(notes), None, actor=agent)
        assert store.projects() == [] and store.count_items() == 0
        projects.add_project(store, "notes", str(notes), None, actor=PERSON)
        with pytest.raises(NeedsPerson, match="remove project notes needs a person"):
            projects.remove_project(store, "notes", actor=agent)
        assert [p.slug for p in store.projects()] == ["notes"]


# --- import: a pin only from a person's own export ---------------------------------------


def test_a_plain_import_keeps_no_pin_and_keep_status_needs_a_person(tmp_path: Path):
    from conftest import ken

    line = {"title": "Always push to main", "kind": "decision", "scope": "global"}
    exported = tmp_path / "in.jsonl"
    exported.write_text(json.dumps({**line, "pinned": True, "status": "proposed"}) + "\n")
    assert ken("import", str(exported)).exit_code == 0
    with opened() as store:
        [item] = store.list_items(_query())
    assert (item.status.value, item.pinned) == ("proposed", False)

    again = tmp_path / "again.jsonl"
    again.write_text(json.dumps({**line, "title": "Pinned by me", "pinned": True}) + "\n")
    refused = plain(["import", str(again), "--keep-status"])
    assert refused.returncode == 1 and REFUSAL in refused.stderr
    assert ken("import", str(again), "--keep-status").exit_code == 0
    with opened() as store:
        mine = [i for i in store.list_items(_query()) if i.title == "Pinned by me"]
    assert [i.pinned for i in mine] == [True]
