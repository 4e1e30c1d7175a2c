"""Handoffs: what a finished session leaves behind (SessionEnd), and `ken handoff --to
AGENT`, which continues the latest session here in another agent.

Sessions are made through the hooks themselves (in-process, with payloads shaped like
the ones the CLIs send) in a real git repo, with real commits between start and end.
The agents `ken handoff` starts are stand-ins: small Python scripts that record their
argv, KEN_CONTINUES, stdin and cwd to a JSON file.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import ken, ken_proc
from helpers import one_line_error, opened
from kenning import handoff, items
from kenning.hooks import run as hook_run
from kenning.hooks.handlers import Skip
from kenning.model import Item, Session
from kenning.store import ItemQuery

REPO = "github.com/acme/shop"
WORKSTREAM = f"workstream:{REPO}#main"
CLAUDE_SID = "9b2f6c1e-1111-4a4a-9c9c-000000000001"
CODEX_SID = "019a0c1e-2222-7b7b-8d8d-000000000002"
CODEX_MODEL = "gpt-5.1-codex"
CLAUDE_MODEL = "claude-opus-4-5"
FIRST = "Add a CSV export to the orders page"
LAST = "Also export the refunds"
CODEX_PROMPT = "Write tests for the CSV export"

FAKE_AGENT = """\
import json
import os
import sys

record = {
    "argv": sys.argv,
    "continues": os.environ.get("KEN_CONTINUES"),
    "stdin": sys.stdin.read(),
    "cwd": os.getcwd(),
}
with open(LOG, "w", encoding="utf-8") as fh:
    json.dump(record, fh)
"""


@pytest.fixture(autouse=True)
def no_outer_continuation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test run started by `ken handoff` must not lend its KEN_CONTINUES to these."""
    monkeypatch.delenv("KEN_CONTINUES", raising=False)


# ----------------------------------------------------------------------------- helpers


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit(repo: Path, name: str, text: str, message: str) -> str:
    (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", name)
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def hook(event: str, agent: str, repo: Path, sid: str, **fields: Any) -> str:
    """One hook call, in-process, raising on any problem (as `ken hook --debug` would log)."""
    payload = {"session_id": sid, "cwd": str(repo), "hook_event_name": event, **fields}
    return hook_run.run([event, "--agent", agent], json.dumps(payload).encode())


@dataclass
class Run:
    """One agent session driven through the hooks."""

    agent: str
    repo: Path
    sid: str
    transcript: Path
    model: str | None = None

    def start(self) -> Run:
        self.transcript.parent.mkdir(parents=True, exist_ok=True)
        self.transcript.write_text("", encoding="utf-8")
        extra = {"model": self.model} if self.model else {}
        hook(
            "SessionStart",
            self.agent,
            self.repo,
            self.sid,
            transcript_path=str(self.transcript),
            source="startup",
            **extra,
        )
        return self

    def prompt(self, text: str) -> None:
        hook(
            "UserPromptSubmit",
            self.agent,
            self.repo,
            self.sid,
            transcript_path=str(self.transcript),
            prompt=text,
        )

    def end(self) -> Session:
        hook("SessionEnd", self.agent, self.repo, self.sid, reason="exit")
        with opened() as store:
            found = store.find_session(self.agent, self.sid)
        assert found is not None and found.ended_at
        return found


def handoffs() -> list[Item]:
    with opened() as store:
        return store.list_items(ItemQuery(scopes=(WORKSTREAM,), kinds=("handoff",)))


def handoff_of(session: Session) -> Item:
    [found] = [i for i in handoffs() if i.provenance.session == session.id]
    return found


def short(sha: str) -> str:
    return sha[:7]


@dataclass
class Scene:
    repo: Path
    claude: Session
    claude_commits: list[str]
    during: Item  # a memory saved while Claude worked


@pytest.fixture
def scene(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scene:
    """A Claude session in the shop repo: two prompts, two commits, a change left
    uncommitted, a transcript on disk."""
    monkeypatch.chdir(git_repo)
    run = Run(
        "claude",
        git_repo,
        CLAUDE_SID,
        tmp_path / "home" / ".claude" / "projects" / "shop" / f"{CLAUDE_SID}.jsonl",
        CLAUDE_MODEL,
    ).start()
    run.prompt(FIRST)
    shas = [commit(git_repo, "export.py", "def export(): ...\n", "Add the CSV export")]
    run.prompt(LAST)
    shas.append(commit(git_repo, "refunds.py", "def refunds(): ...\n", "Export refunds too"))
    (git_repo / "README.md").write_text("shop\nwith exports\n", encoding="utf-8")
    with opened() as store:
        during = items.add(
            store, "Orders are exported as UTF-8", scope=items.parse_scope(f"repo:{REPO}")
        )
    return Scene(git_repo, run.end(), shas, during)


def codex_session(scene: Scene, tmp_path: Path) -> tuple[Session, str]:
    """A Codex session after Claude's: one prompt, one commit."""
    rollout = tmp_path / "home" / ".codex" / "sessions" / f"rollout-x-{CODEX_SID}.jsonl"
    run = Run("codex", scene.repo, CODEX_SID, rollout, CODEX_MODEL).start()
    run.prompt(CODEX_PROMPT)
    sha = commit(scene.repo, "test_export.py", "def test_export(): ...\n", "Test the export")
    return run.end(), sha


def write_config(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def fake_agents(tmp_path: Path, *names: str, extra: str = "") -> dict[str, Path]:
    """A stand-in executable per agent, configured as its command; returns their logs."""
    folder = tmp_path / "fake-agents"
    folder.mkdir(exist_ok=True)
    logs = {}
    config = []
    for name in names:
        script = folder / f"fake-{name}"
        log = folder / f"{name}.json"
        script.write_text(f"#!{sys.executable}\nLOG = {str(log)!r}\n{FAKE_AGENT}", encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        config += [f"[agents.{name}]", f"command = {json.dumps(str(script))}", ""]
        logs[name] = log
    write_config("\n".join(config) + extra)
    return logs


def start_agent(repo: Path, log: Path, *args: str) -> dict[str, Any]:
    """`ken handoff ARGS` as a process (it execs the agent); what the agent recorded."""
    done = ken_proc("handoff", *args, cwd=repo, input="")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    record: dict[str, Any] = json.loads(log.read_text(encoding="utf-8"))
    record["stderr"] = done.stderr
    return record


def plan_json(*args: str) -> dict[str, Any]:
    result = ken("handoff", *args, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# ------------------------------------------------------------------ SessionEnd handoffs


def test_session_end_leaves_a_handoff_with_prompts_commits_and_the_diff(scene: Scene) -> None:
    item = handoff_of(scene.claude)

    assert str(item.scope) == WORKSTREAM
    assert item.kind.value == "handoff" and item.status.value == "active"
    when = scene.claude.started_at[:16].replace("T", " ")
    assert item.title == f"claude session {when}: {FIRST}"
    lines = item.body.splitlines()
    assert lines[:4] == [
        f"Agent: claude ({CLAUDE_MODEL})",
        f"Session: {CLAUDE_SID}",
        f"First prompt: {FIRST}",
        f"Last prompt: {LAST}",
    ]
    commits = [line for line in lines if line.startswith("Commits: ")]
    assert commits == [
        f"Commits: {short(scene.claude_commits[0])} Add the CSV export; "
        f"{short(scene.claude_commits[1])} Export refunds too"
    ]
    assert "Uncommitted: 1 file changed, 1 insertion(+)" in lines
    assert f"Transcript: {scene.claude.transcript_path}" in lines
    assert item.provenance.who == "claude" and item.provenance.how == "hook"
    assert item.provenance.session == scene.claude.id
    assert item.provenance.model == CLAUDE_MODEL
    assert scene.claude.commits == tuple(scene.claude_commits)
    assert scene.claude.prompt_count == 2


def test_a_second_session_end_leaves_no_second_handoff(git_repo: Path, tmp_path: Path) -> None:
    run = Run("codex", git_repo, CODEX_SID, tmp_path / "rollout.jsonl", CODEX_MODEL).start()
    run.prompt("Add the refunds export")
    session = run.end()
    with pytest.raises(Skip, match="ended already"):  # logged, like any skipped hook
        run.end()  # an agent that sends SessionEnd twice

    assert [i.id for i in handoffs()] == [handoff_of(session).id]


def test_a_session_with_only_a_commit_leaves_a_handoff(git_repo: Path, tmp_path: Path) -> None:
    run = Run("codex", git_repo, CODEX_SID, tmp_path / "rollout.jsonl", CODEX_MODEL).start()
    sha = commit(git_repo, "fix.py", "x = 1\n", "Fix the totals")
    session = run.end()

    item = handoff_of(session)

    assert item.title.endswith(": no prompt")
    assert f"Commits: {short(sha)} Fix the totals" in item.body.splitlines()
    assert "First prompt" not in item.body and "Uncommitted" not in item.body


def test_an_empty_session_leaves_no_handoff(git_repo: Path, tmp_path: Path) -> None:
    run = Run("claude", git_repo, CLAUDE_SID, tmp_path / "t.jsonl").start()
    run.end()
    assert handoffs() == []


# ------------------------------------------------------------------ ken handoff: the plan


def test_handoff_json_shows_the_command_and_the_continuing_pack(scene: Scene) -> None:
    data = plan_json("--to", "codex")

    assert data["agent"] == "codex" and data["mode"] == "fresh"
    assert data["continues"] == scene.claude.id
    assert Path(data["cwd"]) == scene.repo.resolve()
    pack = data["pack"]
    assert data["argv"] == [
        "codex",
        "-c",
        f"developer_instructions={json.dumps(pack, ensure_ascii=False)}",
        handoff.DEFAULT_PROMPT,
    ]
    assert data["command"].startswith("codex -c 'developer_instructions=")
    lines = pack.splitlines()
    assert lines[0] == "# Continuing from another agent"
    when = scene.claude.started_at[:16].replace("T", " ")
    assert f"## Previous session: claude ({CLAUDE_MODEL}), {when} UTC" in lines
    assert f"- First prompt: {FIRST}" in lines
    assert f"- Last prompt: {LAST}" in lines
    a, b = (short(s) for s in scene.claude_commits)
    assert f"- Commits: {a} Add the CSV export; {b} Export refunds too" in lines
    item = handoff_of(scene.claude)
    assert f"- Handoff: {item.title} [m:{item.id[-6:].lower()}]" in lines
    assert f"  Session: {CLAUDE_SID}" in lines  # the handoff's lines, indented
    assert f"- Transcript: {scene.claude.transcript_path}" in lines
    assert pack.count("Transcript:") == 1
    assert "## Uncommitted change\n 1 file changed, 1 insertion(+)" in pack
    assert " M README.md" in lines


def test_handoff_print_shows_the_command_then_the_pack(scene: Scene) -> None:
    result = ken("handoff", "--to", "codex", "--print")

    assert result.exit_code == 0, result.output
    first, _, rest = result.stdout.partition("\n\n")
    assert first.startswith("$ codex -c 'developer_instructions=")
    assert first.endswith(f"{handoff.DEFAULT_PROMPT}'")
    assert rest.startswith("# Continuing from another agent\n")
    assert f"- First prompt: {FIRST}" in rest
    assert f"- Transcript: {scene.claude.transcript_path}" in rest


# ------------------------------------------------------------- ken handoff: starting agents


def test_claude_gets_the_pack_as_appended_system_prompt(scene: Scene, tmp_path: Path) -> None:
    logs = fake_agents(tmp_path, "claude")
    # Continuing Claude's own session in Claude is "fresh": it is the latest session.
    got = start_agent(scene.repo, logs["claude"], "--to", "claude")

    argv = got["argv"]
    assert argv[1] == "--append-system-prompt"
    assert argv[2].startswith("# Continuing from another agent\n")
    assert f"- First prompt: {FIRST}" in argv[2]
    assert argv[3:] == [handoff.DEFAULT_PROMPT]
    assert got["continues"] == scene.claude.id
    assert got["stdin"] == ""
    assert Path(got["cwd"]).resolve() == scene.repo.resolve()
    assert (
        f"starting claude (continuing claude session {scene.claude.id[-6:].lower()})"
        in (got["stderr"])
    )


def test_codex_gets_the_pack_as_developer_instructions(scene: Scene, tmp_path: Path) -> None:
    logs = fake_agents(tmp_path, "codex")
    got = start_agent(scene.repo, logs["codex"], "--to", "codex")

    argv = got["argv"]
    assert argv[1] == "-c" and argv[2].startswith("developer_instructions=")
    pack = tomllib.loads(argv[2].replace("developer_instructions=", "x = ", 1))["x"]
    assert pack.startswith("# Continuing from another agent\n")
    assert f"- Last prompt: {LAST}" in pack
    assert argv[3:] == [handoff.DEFAULT_PROMPT]
    assert got["continues"] == scene.claude.id


@pytest.mark.parametrize(("agent", "flag"), [("gemini", ["-i"]), ("aider", [])])
def test_other_agents_get_the_pack_at_the_start_of_the_first_message(
    scene: Scene, tmp_path: Path, agent: str, flag: list[str]
) -> None:
    logs = fake_agents(tmp_path, agent)
    got = start_agent(scene.repo, logs[agent], "--to", agent)

    argv = got["argv"]
    assert argv[1:-1] == flag
    message = argv[-1]
    assert message.startswith("# Continuing from another agent\n")
    assert message.endswith(f"\n\n{handoff.DEFAULT_PROMPT}")
    assert f"- First prompt: {FIRST}" in message
    assert got["continues"] == scene.claude.id


@pytest.mark.parametrize(
    ("agent", "model_args"),
    [("claude", ["--model", "opus"]), ("codex", ["-m", "opus"]), ("gemini", ["-m", "opus"])],
)
def test_model_adds_the_model_flag_and_prompt_replaces_the_first_prompt(
    scene: Scene, tmp_path: Path, agent: str, model_args: list[str]
) -> None:
    logs = fake_agents(tmp_path, agent)
    ask = "Finish the refunds export, then run the tests"

    got = start_agent(scene.repo, logs[agent], "--to", agent, "--model", "opus", "--prompt", ask)

    argv = got["argv"]
    assert argv[1:3] == model_args
    assert argv[-1] == ask or argv[-1].endswith(f"\n\n{ask}")
    assert handoff.DEFAULT_PROMPT not in " ".join(argv)


def test_a_model_flag_can_be_configured(scene: Scene, tmp_path: Path) -> None:
    fake_agents(tmp_path, "aider", extra='model_flag = "--llm"\n')
    data = plan_json("--to", "aider", "--model", "sonnet")
    assert data["argv"][1:3] == ["--llm", "sonnet"]


# ------------------------------------------------------------------------- going back


def test_going_back_to_claude_resumes_its_session_with_what_happened_since(
    scene: Scene, tmp_path: Path
) -> None:
    codex, codex_sha = codex_session(scene, tmp_path)
    added = ken("add", "Exports must stream rows, never load all orders")
    assert added.exit_code == 0, added.output
    logs = fake_agents(tmp_path, "claude")

    got = start_agent(scene.repo, logs["claude"], "--to", "claude")

    argv = got["argv"]
    assert argv[1:3] == ["--resume", CLAUDE_SID]
    assert argv[3] == "--append-system-prompt"
    assert argv[5:] == [handoff.RESUME_PROMPT]
    assert got["continues"] == codex.id
    assert "resuming claude (continuing codex session" in got["stderr"]
    pack = argv[4]
    lines = pack.splitlines()
    assert lines[0] == "# Since your last turn"
    when = codex.started_at[:16].replace("T", " ")
    assert f"## Then: codex ({CODEX_MODEL}), {when} UTC" in lines
    assert f"- First prompt: {CODEX_PROMPT}" in lines
    codex_handoff = handoff_of(codex)
    assert f"- Handoff: {codex_handoff.title} [m:{codex_handoff.id[-6:].lower()}]" in lines
    assert f"- Transcript: {codex.transcript_path}" in lines
    assert "Previous session" not in pack and FIRST not in pack  # Claude knows its own turn
    since = pack.split("## Commits since\n", 1)[1].split("\n\n", 1)[0]
    assert since.splitlines() == [f"{short(codex_sha)} Test the export"]
    memory = pack.split("## Added to memory since\n", 1)[1].split("\n\n", 1)[0]
    assert "Exports must stream rows, never load all orders" in memory
    assert scene.during.title not in pack  # saved before Claude's turn ended
    assert "(handoff)" not in memory
    assert "## Uncommitted change\n 1 file changed, 1 insertion(+)" in pack


def test_fresh_starts_a_new_session_instead_of_resuming(scene: Scene, tmp_path: Path) -> None:
    codex, _ = codex_session(scene, tmp_path)

    data = plan_json("--to", "claude", "--fresh")

    assert data["mode"] == "fresh" and "--resume" not in data["argv"]
    assert data["pack"].startswith("# Continuing from another agent\n")
    assert f"## Previous session: codex ({CODEX_MODEL})" in data["pack"]
    assert data["continues"] == codex.id
    assert plan_json("--to", "claude")["mode"] == "resume"


def test_a_missing_transcript_means_a_fresh_start(scene: Scene, tmp_path: Path) -> None:
    codex_session(scene, tmp_path)
    assert scene.claude.transcript_path
    Path(scene.claude.transcript_path).unlink()

    data = plan_json("--to", "claude")

    assert data["mode"] == "fresh" and "--resume" not in data["argv"]
    assert data["pack"].startswith("# Continuing from another agent\n")


def test_gemini_is_never_resumed(scene: Scene, tmp_path: Path) -> None:
    """Gemini has no resume arguments by default: going back to it starts fresh."""
    gemini = Run("gemini", scene.repo, "gem-1", tmp_path / "gemini.json").start()
    gemini.prompt("Review the export")
    gemini.end()
    codex_session(scene, tmp_path)
    assert plan_json("--to", "gemini")["mode"] == "fresh"


# ------------------------------------------------------------------------------ errors


def test_with_no_earlier_session_handoff_says_so_in_one_line(git_repo: Path) -> None:
    Run("claude", git_repo, CLAUDE_SID, git_repo.parent / "t.jsonl").start().end()  # empty

    done = ken_proc("handoff", "--to", "codex", cwd=git_repo, input="")

    assert done.returncode == 1
    assert "no earlier agent session here to continue" in one_line_error(done.stderr)


def test_a_missing_agent_command_says_what_to_set(scene: Scene) -> None:
    write_config('[agents.codex]\ncommand = "/nonexistent/codex-cli"\n')

    done = ken_proc("handoff", "--to", "codex", cwd=scene.repo, input="")

    assert done.returncode == 1
    starting, error = done.stderr.splitlines()
    assert starting.startswith("starting codex (continuing claude session ")
    line = one_line_error(error)
    assert "cannot start /nonexistent/codex-cli" in line
    assert "[agents.codex] command" in line


def test_a_bad_context_mode_is_refused(scene: Scene) -> None:
    write_config('[agents.codex]\ncontext = "stdin"\n')
    done = ken_proc("handoff", "--to", "codex", "--print", cwd=scene.repo, input="")
    assert done.returncode == 1
    assert "[agents.codex] context must be one of system, developer, message" in (
        one_line_error(done.stderr)
    )


def resume_claude(scene: Scene, prompt: str) -> tuple[Session, str]:
    """Claude's own session resumed (same session id, SessionStart source=resume)."""
    assert scene.claude.transcript_path
    hook(
        "SessionStart",
        "claude",
        scene.repo,
        CLAUDE_SID,
        transcript_path=scene.claude.transcript_path,
        source="resume",
    )
    hook(
        "UserPromptSubmit",
        "claude",
        scene.repo,
        CLAUDE_SID,
        transcript_path=scene.claude.transcript_path,
        prompt=prompt,
    )
    sha = commit(scene.repo, "pdf.py", "def pdf(): ...\n", "Add the PDF export")
    hook("SessionEnd", "claude", scene.repo, CLAUDE_SID, reason="exit")
    with opened() as store:
        found = store.find_session("claude", CLAUDE_SID)
    assert found is not None and found.id == scene.claude.id
    return found, sha


def test_after_a_resumed_turn_the_next_handoff_continues_from_it(
    scene: Scene, tmp_path: Path
) -> None:
    """claude → codex → claude (resumed) → codex: the latest work is Claude's resumed
    turn, though its session started first; Codex resumes its own session."""
    codex, _ = codex_session(scene, tmp_path)
    claude, pdf_sha = resume_claude(scene, "Now add a PDF export")

    data = plan_json("--to", "codex")

    assert data["continues"] == claude.id
    assert data["mode"] == "resume"
    assert data["argv"][1:3] == ["resume", CODEX_SID]
    pack = data["pack"]
    assert pack.startswith("# Since your last turn\n")
    assert "- Last prompt: Now add a PDF export" in pack
    since = pack.split("## Commits since\n", 1)[1].split("\n\n", 1)[0]
    assert since.splitlines() == [f"{short(pdf_sha)} Add the PDF export"]
    assert codex.id != claude.id


def test_going_back_again_lists_only_what_happened_since_the_last_turn(
    scene: Scene, tmp_path: Path
) -> None:
    """claude → codex → claude (resumed) → a new codex session → claude: the update
    tells Claude about the second Codex session only."""
    codex_session(scene, tmp_path)
    resume_claude(scene, "Now add a PDF export")
    rollout = tmp_path / "home" / ".codex" / "sessions" / "rollout-y-second.jsonl"
    second = Run("codex", scene.repo, "019a0c1e-3333-7c7c-8e8e-000000000003", rollout).start()
    second.prompt("Test the PDF export")
    second.end()

    data = plan_json("--to", "claude")

    assert data["mode"] == "resume"
    pack = data["pack"]
    assert "- First prompt: Test the PDF export" in pack
    assert CODEX_PROMPT not in pack
    assert pack.count("## Then:") == 1
