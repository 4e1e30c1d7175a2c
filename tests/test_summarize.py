"""Session summaries (opt-in `[memory.summarize]`), with a stand-in summarizer command:
a Python script that records the prompt it got on stdin and prints a scripted answer
(FAKE_SUMMARY_ANSWER), optionally after a sleep (FAKE_SUMMARY_SLEEP).

Transcripts are written in Claude Code's JSONL format: one line per message, with the
assistant's message id.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken
from helpers import one_line_error, opened, plant_kenning
from kenning import summarize
from kenning.config import Config
from kenning.model import MAX_ITEM_BYTES, Item, Kind, Session, Status
from kenning.store import ItemQuery, SessionQuery, SessionUpdate, SQLiteStore, now_iso

REPO = "github.com/acme/shop"
WORKSTREAM = f"{REPO}#main"
FIRST = "Add a CSV export to the orders page"

FAKE_SUMMARIZER = """\
import json
import os
import subprocess
import sys
import time

prompt = sys.stdin.read()
with open(os.environ["FAKE_SUMMARY_LOG"], "a", encoding="utf-8") as fh:
    record = {"prompt": prompt, "ken_enabled": os.environ.get("KEN_ENABLED")}
    fh.write(json.dumps(record) + "\\n")
child = os.environ.get("FAKE_SUMMARY_CHILD")
if child:  # something the summarizer starts, that a timeout must stop too
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(child, "w", encoding="utf-8") as fh:
        fh.write(str(worker.pid))
hooks = os.environ.get("FAKE_SUMMARY_HOOKS")
if hooks:  # an agent CLI with kenning's hooks installed, run as the summarizer
    ken, cwd = hooks.split("|")
    for event, extra in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": prompt[:200]}),
        ("SessionEnd", {"reason": "other"}),
    ):
        payload = {"session_id": "summarizer-run", "cwd": cwd, "hook_event_name": event, **extra}
        subprocess.run(
            [ken, "hook", event, "--agent", "claude"], input=json.dumps(payload).encode()
        )
time.sleep(float(os.environ.get("FAKE_SUMMARY_SLEEP", "0")))
sys.stdout.write(os.environ.get("FAKE_SUMMARY_ANSWER", ""))
sys.stderr.write(os.environ.get("FAKE_SUMMARY_STDERR", ""))
sys.exit(int(os.environ.get("FAKE_SUMMARY_EXIT", "0")))
"""

GOOD = {
    "summary": "Added the CSV export; refunds are still missing.",
    "items": [
        {
            "text": "Exports stream rows\nNever load every order into memory.",
            "kind": "decision",
            "evidence": "don't load all the orders at once",
        },
        {"text": "Use semicolons in CSV files", "kind": "preference", "evidence": "semicolons"},
        {"text": "Totals are in cents", "kind": "fact"},
        {"text": "Never retry the payments webhook", "kind": "correction"},
        {"text": "Check the export with a 10k-row fixture", "kind": "rubbish"},
        {"text": "A sixth item is one too many", "kind": "fact"},
        {"text": "A seventh as well", "kind": "fact"},
    ],
}


# ----------------------------------------------------------------------------- helpers


def write_config(**settings: Any) -> None:
    lines = ["[memory.summarize]"]
    for key, value in settings.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def user_line(text: str) -> str:
    return json.dumps(
        {"type": "user", "message": {"role": "user", "content": text}, "timestamp": now_iso()}
    )


def assistant_line(message_id: str, text: str) -> str:
    message = {"id": message_id, "role": "assistant", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": "assistant", "message": message, "timestamp": now_iso()})


class Transcript:
    """A Claude Code transcript that grows one exchange (prompt and answer) at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def exchange(self, prompt: str, answer: str) -> None:
        self.count += 1
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(user_line(prompt) + "\n")
            fh.write(assistant_line(f"msg_{self.count:04d}", answer) + "\n")

    def exchanges(self, first: int, last: int) -> None:
        for n in range(first, last + 1):
            self.exchange(f"Prompt number {n}: step {n} of the export", f"Answer number {n}")


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in summarizer, configured and enabled; returns its log of prompts."""
    script = tmp_path / "fake-summarizer"
    script.write_text(f"#!{sys.executable}\n{FAKE_SUMMARIZER}", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "summarizer.jsonl"
    monkeypatch.setenv("FAKE_SUMMARY_LOG", str(log))
    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", json.dumps(GOOD))
    write_config(enabled=True, command=str(script), timeout_secs=20)
    return log


def prompts_sent(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["prompt"] for line in log.read_text().splitlines()]


def conversation_part(prompt: str) -> str:
    assert prompt.startswith(summarize.PROMPT)
    return prompt[len(summarize.PROMPT) :]


@pytest.fixture
def store() -> Iterator[SQLiteStore]:
    with opened() as s:
        yield s


@pytest.fixture
def transcript(tmp_path: Path) -> Transcript:
    return Transcript(tmp_path / "home" / ".claude" / "projects" / "shop" / "session.jsonl")


@pytest.fixture
def session(store: SQLiteStore, transcript: Transcript, git_repo: Path) -> Session:
    transcript.exchange(FIRST, "Where should the button go?")
    transcript.exchange(
        "Next to Print. And don't load all the orders at once", "Streaming rows, then."
    )
    found = Session(
        id="01M8SUMMARIZESESSION000001",
        agent="claude",
        agent_session_id="3e1c2b8a-5555-4d4d-9e9e-000000000005",
        model="claude-opus-4-5",
        transcript_path=str(transcript.path),
        repo=REPO,
        cwd=str(git_repo),
        workstream=WORKSTREAM,
        started_at=now_iso(),
        first_prompt=FIRST,
    )
    store.upsert_session(found, [f"workstream:{WORKSTREAM}", f"repo:{REPO}", "global"])
    return found


def summaries(store: SQLiteStore) -> list[Item]:
    found = store.list_items(ItemQuery(kinds=("summary",), statuses=(), limit=100))
    return sorted(found, key=lambda i: i.created_at)


def everything(store: SQLiteStore) -> list[Item]:
    return store.list_items(ItemQuery(statuses=(), include_expired=True))


# ---------------------------------------------------------------------------- answers


def test_a_good_answer_stores_the_summary_and_proposes_up_to_five_items(
    store: SQLiteStore, session: Session, fake: Path
) -> None:
    result = summarize.summarize(store, Config(), session)

    assert result is not None and result.summary is not None
    summary = result.summary
    assert summary.kind is Kind.SUMMARY and summary.status is Status.ACTIVE
    assert str(summary.scope) == f"workstream:{WORKSTREAM}"
    assert summary.title == f"Session summary: {FIRST}"
    assert summary.body == GOOD["summary"]
    assert summary.provenance.how == "summarizer"
    assert summary.provenance.session == session.id
    assert summary.provenance.model == "claude-opus-4-5"

    assert len(result.items) == 5
    assert [i.title for i in result.items] == [
        "Exports stream rows",
        "Use semicolons in CSV files",
        "Totals are in cents",
        "Never retry the payments webhook",
        "Check the export with a 10k-row fixture",
    ]
    assert [i.kind.value for i in result.items] == [
        "decision",
        "preference",
        "fact",
        "correction",
        "note",  # an unknown kind becomes a note
    ]
    for item in result.items:
        assert item.status is Status.PROPOSED and str(item.scope) == f"repo:{REPO}"
        assert item.provenance.how == "summarizer" and item.provenance.session == session.id
    assert result.items[0].evidence == "don't load all the orders at once"
    assert len(everything(store)) == 6

    [prompt] = prompts_sent(fake)
    sent = conversation_part(prompt)
    assert sent == (
        f"USER: {FIRST}\n\nASSISTANT: Where should the button go?\n\n"
        "USER: Next to Print. And don't load all the orders at once\n\n"
        "ASSISTANT: Streaming rows, then."
    )
    assert (result.part, result.turns_sent, result.chars_sent) == (1, 4, len(sent))
    assert store.summary_progress(session.id) == (1, 4)
    # Nothing new since: nothing to send.
    assert summarize.summarize(store, Config(), session) is None
    assert len(prompts_sent(fake)) == 1


@pytest.mark.parametrize(
    ("answer", "exit_code", "message"),
    [
        ("I could not summarize this, sorry.", 0, "did not print JSON"),
        ('{"items": []}', 0, 'no "summary" text'),
        ('{"summary": "fine", "items": "none"}', 0, '"items" is not a list'),
        (json.dumps(GOOD), 3, "exited with 3: it wrote nothing on stderr"),
    ],
)
def test_a_bad_answer_stores_nothing_and_keeps_the_progress(
    store: SQLiteStore,
    session: Session,
    fake: Path,
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    exit_code: int,
    message: str,
) -> None:
    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", answer)
    monkeypatch.setenv("FAKE_SUMMARY_EXIT", str(exit_code))

    with pytest.raises(summarize.SummarizeError, match=message):
        summarize.summarize(store, Config(), session)

    assert everything(store) == []
    assert store.summary_progress(session.id) == (0, 0)
    assert len(prompts_sent(fake)) == 1


class Stopped(Exception):
    """The summarizer's process ending between two of its writes."""


def test_a_summarizer_stopped_while_storing_leaves_nothing_and_the_next_run_stores_once(
    store: SQLiteStore, session: Session, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stop(*args: Any) -> None:
        raise Stopped

    # Stopped after the summary and its items, before the progress that counts the turns.
    with monkeypatch.context() as patch:
        patch.setattr(store, "set_summary_progress", stop)
        with pytest.raises(Stopped):
            summarize.summarize(store, Config(), session)
    assert everything(store) == []
    assert store.summary_progress(session.id) == (0, 0)

    result = summarize.summarize(store, Config(), session)

    assert result is not None and [s.title for s in summaries(store)] == [
        f"Session summary: {FIRST}"
    ]
    assert len(everything(store)) == 6  # the summary and five items, once
    assert store.summary_progress(session.id) == (1, 4)


def test_an_answer_in_a_code_fence_with_prose_around_it_is_read(
    store: SQLiteStore, session: Session, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = 'Here you go:\n```json\n{"summary": "Export added.", "items": []}\n```\nDone.'
    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", answer)

    result = summarize.summarize(store, Config(), session)

    assert result is not None and result.summary is not None
    assert result.summary.body == "Export added." and result.items == []


def test_an_answer_with_null_items_still_stores_its_summary(
    store: SQLiteStore, session: Session, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", '{"summary": "Export added.", "items": null}')

    result = summarize.summarize(store, Config(), session)

    assert result is not None and result.summary is not None and result.items == []


def test_a_summarizer_past_its_timeout_is_stopped_with_what_it_started(
    store: SQLiteStore,
    session: Session,
    fake: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_config(enabled=True, command=str(fake.parent / "fake-summarizer"), timeout_secs=1)
    monkeypatch.setenv("FAKE_SUMMARY_SLEEP", "30")
    child = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_SUMMARY_CHILD", str(child))

    with pytest.raises(summarize.SummarizeError, match="took over 1 s and was stopped"):
        summarize.summarize(store, Config(), session)

    assert everything(store) == []
    assert store.summary_progress(session.id) == (0, 0)
    worker = int(child.read_text())
    deadline = time.monotonic() + 5  # SIGKILL is delivered when the worker next runs
    while running(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running(worker)


def test_a_summarizer_that_exits_leaving_a_child_on_its_stdout_is_taken_at_its_word(
    store: SQLiteStore,
    session: Session,
    fake: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It printed its answer and exited at once, but a child it left running held its
    # stdout: kenning waited out the timeout, then said "took over 3 s" and kept nothing.
    write_config(enabled=True, command=str(fake.parent / "fake-summarizer"), timeout_secs=3)
    child = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_SUMMARY_CHILD", str(child))
    started = time.monotonic()

    result = summarize.summarize(store, Config(), session)

    assert time.monotonic() - started < 3
    assert result is not None and result.summary is not None
    assert result.summary.body == GOOD["summary"]
    worker = int(child.read_text())
    deadline = time.monotonic() + 5  # what it left running is stopped
    while running(worker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running(worker)


def running(pid: int) -> bool:
    """Whether a process runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_long_transcript_is_cut_from_the_front(
    store: SQLiteStore,
    session: Session,
    transcript: Transcript,
    fake: Path,
) -> None:
    transcript.exchanges(3, 60)  # 120 turns in all
    write_config(enabled=True, command=str(fake.parent / "fake-summarizer"), max_input_tokens=300)

    result = summarize.summarize(store, Config(), session)

    assert result is not None
    [prompt] = prompts_sent(fake)
    sent = conversation_part(prompt)
    assert sent.endswith(
        "USER: Prompt number 60: step 60 of the export\n\nASSISTANT: Answer number 60"
    )
    assert FIRST not in sent and "Prompt number 3:" not in sent
    assert 0 < result.turns_sent < 120
    assert sent.count("USER: ") + sent.count("ASSISTANT: ") == result.turns_sent
    assert result.tokens_sent <= 300
    assert store.summary_progress(session.id) == (1, 120)  # the cut part is not sent again


def test_two_compactions_then_the_end_give_three_parts_each_with_only_new_turns(
    store: SQLiteStore,
    session: Session,
    transcript: Transcript,
    fake: Path,
) -> None:
    first = summarize.summarize(store, Config(), session, final=False)
    transcript.exchanges(3, 4)
    second = summarize.summarize(store, Config(), session, final=False)
    transcript.exchanges(5, 5)
    third = summarize.summarize(store, Config(), session, final=True)

    assert [r.part if r else None for r in (first, second, third)] == [1, 2, 3]
    assert [s.title for s in summaries(store)] == [
        f"Session summary, part 1: {FIRST}",
        f"Session summary, part 2: {FIRST}",
        f"Session summary, part 3: {FIRST}",
    ]
    sent = [conversation_part(p) for p in prompts_sent(fake)]
    assert len(sent) == 3
    assert sent[0].startswith(f"USER: {FIRST}") and "Prompt number" not in sent[0]
    assert sent[1].startswith("USER: Prompt number 3:") and FIRST not in sent[1]
    assert "Answer number 4" in sent[1] and "number 5" not in sent[1]
    assert sent[2] == "USER: Prompt number 5: step 5 of the export\n\nASSISTANT: Answer number 5"
    assert store.summary_progress(session.id) == (3, 10)
    assert summarize.summarize(store, Config(), session) is None  # nothing left


# ------------------------------------------------------------------- when it runs at all


def test_disabled_or_a_repo_not_listed_summarizes_nothing(
    store: SQLiteStore, session: Session, fake: Path
) -> None:
    command = str(fake.parent / "fake-summarizer")
    write_config(enabled=False, command=command)
    assert summarize.summarize(store, Config(), session) is None
    write_config(enabled=True, command=command, repos=["github.com/acme/other"])
    assert summarize.summarize(store, Config(), session) is None
    write_config(enabled=True, command="")
    assert summarize.summarize(store, Config(), session) is None

    assert prompts_sent(fake) == []
    assert everything(store) == []

    write_config(enabled=True, command=command, repos=[REPO])
    assert summarize.summarize(store, Config(), session) is not None


def test_a_summarizer_given_as_an_array_runs_for_repos_that_match_a_glob(
    store: SQLiteStore, session: Session, fake: Path
) -> None:
    command = [sys.executable, str(fake.parent / "fake-summarizer")]
    write_config(enabled=True, command=command, repos=["github.com/other/*"])
    assert summarize.summarize(store, Config(), session) is None
    assert prompts_sent(fake) == []

    write_config(enabled=True, command=command, repos=["github.com/other/*", "github.com/acme/*"])
    result = summarize.summarize(store, Config(), session)
    assert result is not None and result.summary is not None
    assert len(prompts_sent(fake)) == 1


def test_a_summarizer_that_is_an_agent_with_kenning_hooks_records_no_session(
    store: SQLiteStore,
    session: Session,
    fake: Path,
    git_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`claude -p` as the summarizer runs kenning's hooks too: they must stay quiet, or
    its own session would leave a handoff and, at its end, be summarized in turn."""
    monkeypatch.setenv("FAKE_SUMMARY_HOOKS", f"{KEN_BIN}|{git_repo}")

    result = summarize.summarize(store, Config(), session)

    assert result is not None
    assert [json.loads(line)["ken_enabled"] for line in fake.read_text().splitlines()] == ["0"]
    assert [s.id for s in store.list_sessions(SessionQuery(limit=10))] == [session.id]
    assert store.list_items(ItemQuery(kinds=("handoff",), statuses=())) == []


# ------------------------------------------------------------------------ ken summarize


def test_ken_summarize_says_what_it_sent_and_stored(session: Session, fake: Path) -> None:
    result = ken("summarize", session.id[-6:])

    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    short = session.id[-6:].lower()
    assert lines[0].startswith("sent 4 turns (")
    assert lines[0].endswith(f" tokens) of session {short}")
    chars = len(conversation_part(prompts_sent(fake)[0]))
    assert f"({chars:,} characters, about " in lines[0]
    assert lines[1].startswith("stored summary ")
    assert lines[1].endswith(f" in workstream:{WORKSTREAM} (active): Session summary: {FIRST}")
    proposed = [line for line in lines if line.startswith("proposed ")]
    assert len(proposed) == 5
    assert proposed[0].endswith(f" in repo:{REPO}: Exports stream rows")

    again = ken("summarize", session.id[-6:])
    assert again.exit_code == 0 and "nothing new to summarize" in again.stderr


def test_ken_summarize_of_a_session_whose_transcript_is_gone_or_never_given_says_so(
    store: SQLiteStore, session: Session, transcript: Transcript, fake: Path
) -> None:
    # It said "nothing new to summarize" and exited 0.
    transcript.path.unlink()
    short = session.id[-6:].lower()
    gone = ken("summarize", session.id)
    assert gone.exit_code == 1 and gone.stdout == ""
    assert one_line_error(gone.stderr) == (
        f"ken: cannot read the transcript of session {short}: {transcript.path} is not there "
        "(moved or deleted?); nothing was summarized"
    )
    store.upsert_session(dataclasses.replace(session, transcript_path=None), [])
    never = ken("summarize", session.id)
    assert never.exit_code == 1
    assert "claude never gave its path" in one_line_error(never.stderr)
    assert prompts_sent(fake) == [] and everything(store) == []


def test_ken_summarize_json_and_errors(session: Session, fake: Path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", "not json")
    failed = ken("summarize", session.id)
    assert failed.exit_code == 1
    assert "the summarizer did not print JSON: not json" in failed.stderr

    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", json.dumps(GOOD))
    data = json.loads(ken("summarize", session.id, "--json").stdout)
    assert data["session"] == session.id and data["part"] == 1
    assert data["turns_sent"] == 4 and data["summary"]["kind"] == "summary"
    assert len(data["items"]) == 5


def test_ken_summarize_from_a_hook_honours_the_switch_and_stays_quiet(
    session: Session, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(enabled=False, command=str(fake.parent / "fake-summarizer"))
    quiet = ken("summarize", session.id, "--from-hook")
    assert quiet.exit_code == 0 and prompts_sent(fake) == []

    write_config(enabled=True, command=str(fake.parent / "fake-summarizer"))
    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", "garbage")
    failed = ken("summarize", session.id, "--from-hook")
    assert failed.exit_code == 0 and failed.stderr.strip() == ""
    log = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    assert "SummarizeError: the summarizer did not print JSON" in log.read_text()


# ------------------------------------------------------------------------ from the hooks


def hook_proc(event: str, payload: dict[str, Any], cwd: Path | None = None) -> None:
    """`ken hook EVENT --agent claude` as the agent runs it: a process, no terminal."""
    done = subprocess.run(
        [str(KEN_BIN), "hook", event, "--agent", "claude"],
        cwd=cwd,
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=dict(os.environ),
        timeout=60,
        check=False,
        start_new_session=True,
    )
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr


def wait_for(check: Callable[[], Any], timeout: float = 30) -> Any:
    """Poll `check` until it gives something truthy, or fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            log = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
            pytest.fail(f"timed out; hook log: {log.read_text() if log.exists() else '-'}")
        time.sleep(0.05)


def summary_titles() -> list[str]:
    with opened() as store:
        return [s.title for s in summaries(store)]


def test_pre_compact_and_session_end_summarize_in_a_detached_process(
    git_repo: Path, transcript: Transcript, fake: Path
) -> None:
    sid = "7d4e2f10-6666-4e4e-8f8f-000000000006"
    base = {"session_id": sid, "cwd": str(git_repo), "transcript_path": str(transcript.path)}
    hook_proc("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"})
    hook_proc("UserPromptSubmit", {**base, "hook_event_name": "UserPromptSubmit", "prompt": FIRST})
    transcript.exchange(FIRST, "Done: the button is next to Print.")

    hook_proc("PreCompact", {**base, "hook_event_name": "PreCompact", "trigger": "auto"})
    wait_for(lambda: summary_titles() == [f"Session summary, part 1: {FIRST}"])

    transcript.exchange("Now the refunds", "Refunds are exported too.")
    hook_proc("SessionEnd", {**base, "hook_event_name": "SessionEnd", "reason": "exit"})
    titles = wait_for(lambda: summary_titles() if len(summary_titles()) == 2 else None)

    assert titles[1] == f"Session summary, part 2: {FIRST}"
    sent = [conversation_part(p) for p in prompts_sent(fake)]
    assert sent == [
        f"USER: {FIRST}\n\nASSISTANT: Done: the button is next to Print.",
        "USER: Now the refunds\n\nASSISTANT: Refunds are exported too.",
    ]
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(limit=10))
        assert store.summary_progress(session.id) == (2, 4)
        proposed = store.list_items(ItemQuery(statuses=("proposed",), limit=100))
        # five from the first part, all proposed in the repo; the second part's answer
        # says the same five again, and they are not proposed twice
        assert len(proposed) == 5
        assert {str(i.scope) for i in proposed} == {f"repo:{REPO}"}


@pytest.mark.parametrize("server", ["off", "on"])
def test_a_summary_a_hook_starts_never_runs_a_kenning_package_of_the_repo(
    git_repo: Path,
    transcript: Transcript,
    fake: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: str,
) -> None:
    """The summary runs in the session's folder (the repo), which may hold a `kenning/`
    package: started by the hook itself, or by its client for the hook server, it imports
    kenning's own code, never that."""
    marker = tmp_path / "hostile-ran"
    plant_kenning(git_repo, marker)
    monkeypatch.setenv("KEN_HOOK_SERVER", "1" if server == "on" else "0")
    monkeypatch.setenv("KEN_HOOK_SERVER_IDLE", "30")
    sid = "7d4e2f10-6666-4e4e-8f8f-00000000000a"
    base = {"session_id": sid, "cwd": str(git_repo), "transcript_path": str(transcript.path)}
    try:
        hook_proc("SessionStart", {**base, "source": "startup"}, cwd=git_repo)
        hook_proc("UserPromptSubmit", {**base, "prompt": FIRST}, cwd=git_repo)
        transcript.exchange(FIRST, "Done: the button is next to Print.")
        hook_proc("PreCompact", {**base, "trigger": "auto"}, cwd=git_repo)
        wait_for(lambda: summary_titles() == [f"Session summary, part 1: {FIRST}"])
        transcript.exchange("Now the refunds", "Refunds are exported too.")
        hook_proc("SessionEnd", {**base, "reason": "exit"}, cwd=git_repo)
        wait_for(lambda: len(summary_titles()) == 2)
    finally:
        subprocess.run([str(KEN_BIN), "hook", "--stop-server"], capture_output=True, timeout=20)
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize("why", ["replaced", "agent exited", "idle"])
def test_a_session_left_without_session_end_is_summarized_like_a_clean_end(
    git_repo: Path, transcript: Transcript, fake: Path, why: str
) -> None:
    """No SessionEnd came (a /clear replaced the session, its agent process is gone, or
    it sat idle past the limit): the next start closes it, and it gets the same summary
    and handoff as a clean end."""
    old = "7d4e2f10-7777-4e4e-8f8f-000000000007"
    base = {"cwd": str(git_repo), "transcript_path": str(transcript.path)}
    hook_proc(
        "SessionStart",
        {**base, "session_id": old, "hook_event_name": "SessionStart", "source": "startup"},
    )
    hook_proc(
        "UserPromptSubmit",
        {**base, "session_id": old, "hook_event_name": "UserPromptSubmit", "prompt": FIRST},
    )
    transcript.exchange(FIRST, "Done: the button is next to Print.")
    with opened() as store:
        started = store.find_session("claude", old)
        assert started is not None
        if why == "agent exited":
            gone = subprocess.Popen(["true"])
            gone.wait()
            store.update_session(started.id, SessionUpdate(pid=gone.pid))
        if why == "idle":
            store.update_session(started.id, SessionUpdate(last_seen_at="2026-01-01T00:00:00.000Z"))

    hook_proc(
        "SessionStart",
        {
            **base,
            "session_id": "after-" + why.replace(" ", "-"),
            "hook_event_name": "SessionStart",
            "source": "clear" if why == "replaced" else "startup",
        },
    )

    wait_for(lambda: summary_titles() == [f"Session summary: {FIRST}"])
    with opened() as store:
        ended = store.find_session("claude", old)
        assert ended is not None and ended.end_reason == why
        handoffs = store.list_items(ItemQuery(kinds=("handoff",), session_id=ended.id))
    assert [h.provenance.how for h in handoffs] == ["hook"]
    sent = [conversation_part(p) for p in prompts_sent(fake)]
    assert sent == [f"USER: {FIRST}\n\nASSISTANT: Done: the button is next to Print."]


def test_the_hooks_start_a_summarizer_only_when_summaries_are_on(
    git_repo: Path, transcript: Transcript, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kenning.hooks import handlers
    from kenning.hooks import run as hook_run

    started: list[tuple[str, bool]] = []
    monkeypatch.setattr(
        handlers, "_summarize_later", lambda s, *, final: started.append((s.agent, final))
    )

    def call(agent: str, event: str, sid: str, **extra: Any) -> None:
        payload = {
            "session_id": sid,
            "cwd": str(git_repo),
            "transcript_path": str(transcript.path),
            "hook_event_name": event,
            **extra,
        }
        hook_run.run([event, "--agent", agent], json.dumps(payload).encode())

    for agent, sid in (("claude", "off-1"), ("gemini", "gem-1")):
        call(agent, "SessionStart", sid, source="startup")
        call(agent, "UserPromptSubmit", sid, prompt=FIRST)

    write_config(enabled=False, command=str(fake.parent / "fake-summarizer"))
    call("claude", "PreCompact", "off-1", trigger="auto")
    call("claude", "SessionEnd", "off-1", reason="exit")
    assert started == []

    write_config(enabled=True, command=str(fake.parent / "fake-summarizer"))
    call("gemini", "PreCompress", "gem-1")  # fires before every model call: not a compaction
    assert started == []
    call("claude", "SessionStart", "on-1", source="startup")
    call("claude", "UserPromptSubmit", "on-1", prompt=FIRST)
    call("claude", "PreCompact", "on-1", trigger="manual")
    call("claude", "SessionEnd", "on-1", reason="exit")
    assert started == [("claude", False), ("claude", True)]
    # kenning reads no Gemini CLI transcript: its end starts no summary that could only
    # log that it has nothing to read.
    call("gemini", "SessionEnd", "gem-1", reason="exit")
    assert started == [("claude", False), ("claude", True)]


def test_a_summary_over_4_kb_is_cut_to_fit(
    store: SQLiteStore, session: Session, fake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-winded summarizer still leaves a summary (and its items), not an error
    that repeats, with a fresh model call, on every later run."""
    long = " ".join(f"Step {n}: the export wrote another batch of rows." for n in range(150))
    monkeypatch.setenv("FAKE_SUMMARY_ANSWER", json.dumps({**GOOD, "summary": long}))

    result = summarize.summarize(store, Config(), session)

    assert result is not None and result.summary is not None
    stored = result.summary
    assert len(f"{stored.title}\n{stored.body}".encode()) <= MAX_ITEM_BYTES
    assert stored.body.startswith("Step 0: the export") and stored.body.endswith(" …")
    assert len(result.items) == 5
    assert store.summary_progress(session.id) == (1, 4)
