"""Secrets never reach the store, whichever way text comes in.

The whole redaction corpus (tests/fixtures/secrets/corpus.py) goes through `ken add`
(text and --evidence), MCP `memory_propose` (text, evidence and the model argument,
through the SDK's own client), hook prompts (`ken hook UserPromptSubmit`) and
`ken import` (text, evidence, tags, links and provenance); then the raw bytes of the
database, its write-ahead log and the hook log are searched for every value.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import test_summarize as summarizing
from conftest import ken
from helpers import opened
from kenning import items, projects
from kenning.errors import InvalidInput
from kenning.model import MAX_ITEM_BYTES, Scope, ScopeType, Session
from kenning.redact import redact
from kenning.store import ItemQuery, SessionQuery
from test_hooks import call_inproc, call_proc, log_file, payload
from test_mcp import Server, drive

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "secrets"))
import corpus  # noqa: E402

CASES = corpus.secrets()
FILLER = (
    "We went through the incident review and wrote down what each service uses, so "
    "that the next rotation is quicker and nobody has to ask around for it again. "
)


def memories(cases: list[corpus.Case], room: int = MAX_ITEM_BYTES - 200) -> Iterator[str]:
    """The cases as memories under 4 KB, each with enough plain words around its
    secrets that it is stored with them redacted rather than refused as a secret."""
    lines: list[str] = []
    size = 0
    for case in cases:
        pad = FILLER * (1 + len(case.secret) // len(FILLER))
        block = f"{pad}\n{case.text}\n"
        if lines and size + len(block.encode()) > room:
            yield "Secrets we rotated\n" + "".join(lines)
            lines, size = [], 0
        lines.append(block)
        size += len(block.encode())
    if lines:
        yield "Secrets we rotated\n" + "".join(lines)


def raw_files() -> dict[str, bytes]:
    db = Path(os.environ["KEN_DB"])
    found = {}
    for path in (db, db.with_name(db.name + "-wal"), log_file()):
        if path.exists():
            found[path.name] = path.read_bytes()
    return found


def assert_no_value_on_disk(cases: list[corpus.Case]) -> None:
    files = raw_files()
    assert files, "nothing was written"
    leaked = [
        (name, case.kind, case.text[:60])
        for name, data in files.items()
        for case in cases
        if case.secret.encode() in data
    ]
    assert leaked == []


def stored_text() -> str:
    with opened() as store:
        found = store.list_items(ItemQuery(statuses=(), include_expired=True))
        return "\n".join(f"{i.title}\n{i.body}\n{i.evidence}" for i in found)


def test_the_corpus_goes_through_ken_add_and_no_value_reaches_the_disk() -> None:
    texts = list(memories(CASES))
    evidence = texts[1:] + texts[:1]
    for text, quote in zip(texts, evidence, strict=True):
        result = ken("add", "--evidence", quote[:8000], input=text)
        assert result.exit_code == 0, result.output
        assert "redacted " in result.output and " secret" in result.output
    stored = stored_text()
    assert stored.count("[redacted:") >= 2 * len(CASES)  # each secret, in text and evidence
    assert "incident review" in stored
    assert_no_value_on_disk(CASES)


def test_ken_add_says_what_it_redacted_by_kind_and_count_never_the_value() -> None:
    token = CASES[0].secret  # a GitHub token
    result = ken("add", f"Deploy notes\nThe CI bot used {token} until Friday; {FILLER}")
    assert result.exit_code == 0
    assert "redacted 1 secret: github_token" in result.output
    assert token not in result.output
    text = f"Mirror notes\nIt read {token} and {token}. {FILLER}"
    data = json.loads(ken("add", "--json", text).output)
    assert data["redacted"] == {"github_token": 2}


def test_the_corpus_goes_through_mcp_memory_propose_and_no_value_reaches_the_disk(
    git_repo: Path,
) -> None:
    texts = list(memories(CASES))
    model_secret = CASES[1].secret
    answers: list[dict[str, Any]] = []

    async def scenario(server: Server) -> None:
        for number, text in enumerate(texts):
            answers.append(
                await server.ok(
                    "memory_propose",
                    {
                        "text": text,
                        "evidence": texts[(number + 1) % len(texts)][:8000],
                        "model": f"gpt-test {model_secret}",
                    },
                )
            )

    drive(git_repo, scenario)
    for answer in answers:
        assert answer["redacted"] and "redacted " in answer["note"]
        assert all(case.secret not in json.dumps(answer) for case in CASES)
    assert stored_text().count("[redacted:") >= 2 * len(CASES)
    assert_no_value_on_disk(CASES)


@pytest.mark.parametrize("how", ["inproc", "proc"])
def test_every_corpus_secret_sent_as_a_hook_prompt_leaves_no_value_on_disk(
    git_repo: Path, how: str
) -> None:
    # Every case in its own prompt in this process; through the real binary, a few
    # prompts that hold the whole corpus.
    if how == "inproc":
        prompts = [case.text for case in CASES]
        call = call_inproc
    else:
        prompts = list(memories(CASES, room=60_000))
        call = call_proc
    for prompt in prompts:
        code, _ = call(
            "UserPromptSubmit",
            "claude",
            payload("claude", "UserPromptSubmit", git_repo, prompt=prompt),
        )
        assert code == 0
    with opened() as store:
        (session,) = store.list_sessions(SessionQuery(limit=10))
    assert session.prompt_count == len(prompts)
    assert_no_value_on_disk(CASES)


def test_the_corpus_goes_through_ken_import_and_no_value_reaches_the_disk(tmp_path: Path) -> None:
    lines = []
    texts = list(memories(CASES))
    for number, text in enumerate(texts):
        title, _, body = text.partition("\n")
        case = CASES[number]
        lines.append(
            json.dumps(
                {
                    "title": title,
                    "body": body,
                    "evidence": texts[(number + 1) % len(texts)][:8000],
                    "links": [f"url:https://deploy:{case.secret}@ci.example.com/job"],
                    "provenance": {
                        "who": "codex",
                        "model": f"o4 {case.secret}",
                        "host": f"build-{number}",
                        "cwd": f"/srv/app?token={case.secret}",
                    },
                }
            )
        )
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = ken("import", str(path))
    assert result.exit_code == 0, result.output
    with opened() as store:
        imported = store.list_items(ItemQuery(statuses=(), include_expired=True))
    assert len(imported) == len(texts)
    assert all(i.provenance.model and "[redacted:" in i.provenance.model for i in imported)
    assert_no_value_on_disk(CASES)


def test_a_memory_far_over_the_size_limit_is_refused_before_it_is_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_redaction(text: str) -> Any:
        raise AssertionError("redacted a text that is refused for its size anyway")

    monkeypatch.setattr(items, "redact", no_redaction)
    monkeypatch.setattr(items, "redact_lines", no_redaction)
    huge = "Pasted logs\n" + "token: abc123 " * 400_000  # 5.6 MB
    with opened() as store, pytest.raises(InvalidInput, match="over the 4 KB limit"):
        items.add(store, huge, scope=Scope(ScopeType.GLOBAL))


def test_project_files_leave_no_value_on_disk_not_even_in_a_heading(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    cases = [case for case in CASES if "\n" not in case.text][:60]
    sections = "".join(f"## {case.text}\n\n{FILLER}\n\n" for case in cases)
    (notes / "decisions.md").write_text("# Decisions\n\n" + sections, encoding="utf-8")
    tasks = "".join(f"- [ ] rotate {case.text}\n" for case in cases)
    (notes / "plan.md").write_text("# Plan\n\n" + tasks, encoding="utf-8")
    with opened() as store:
        projects.add_project(store, "shop", str(notes), None)
        found = store.list_items(ItemQuery(statuses=(), include_expired=True))
    assert len(found) == 2 * len(cases)
    assert_no_value_on_disk(cases)


# --- tags, links and the summarizer ---------------------------------------------------

TAG_CHARS = re.compile(r"[A-Za-z0-9.:/_-]{1,64}")
# The secrets that can be written as a tag (letters, digits and . : / - _, 64 at most)
# and that are secrets on their own: a tag is one word, with nothing around it that
# names a hex string or a password.
TAGGABLE = [
    case
    for case in CASES
    if TAG_CHARS.fullmatch(case.secret) and case.secret not in redact(case.secret).text
]


def assert_no_value_on_disk_in_any_case(cases: list[corpus.Case]) -> None:
    """As assert_no_value_on_disk, and not lower-cased either (tags are)."""
    assert_no_value_on_disk(cases)
    files = raw_files()
    lowered = [
        (name, case.kind)
        for name, data in files.items()
        for case in cases
        if case.secret.lower().encode() in data
    ]
    assert lowered == []


def tags_and_links(cases: list[corpus.Case]) -> tuple[list[str], list[str]]:
    tags = [case.secret for case in cases]
    links = [
        *(f"url:https://ci.example.com/job?token={case.secret}" for case in cases),
        *(f"url:https://deploy:{case.secret}@git.example.com/acme/api.git" for case in cases),
    ]
    return tags, links


def test_taggable_secrets_are_many_and_of_many_kinds() -> None:
    assert len(TAGGABLE) >= 150
    assert len({case.kind for case in TAGGABLE}) >= 40


def test_secrets_in_tags_and_links_through_mcp_memory_propose_leave_no_value_on_disk(
    git_repo: Path,
) -> None:
    batches = [TAGGABLE[i : i + 8] for i in range(0, len(TAGGABLE), 8)]
    answers: list[dict[str, Any]] = []

    async def scenario(server: Server) -> None:
        for number, batch in enumerate(batches):
            tags, links = tags_and_links(batch)
            answers.append(
                await server.ok(
                    "memory_propose",
                    {
                        "text": f"Rotation notes {number}\n{FILLER}",
                        "tags": tags,
                        "links": links,
                    },
                )
            )

    drive(git_repo, scenario)
    assert len(answers) == len(batches)
    for answer in answers:
        assert answer["redacted"], answer
        assert all(case.secret not in json.dumps(answer) for case in TAGGABLE)
    with opened() as store:
        stored = store.list_items(ItemQuery(statuses=(), include_expired=True))
    assert len(stored) == len(batches)
    assert all(any("redacted" in tag for tag in item.tags) for item in stored)
    assert_no_value_on_disk_in_any_case(TAGGABLE)


def test_secrets_in_tags_and_links_through_ken_import_leave_no_value_on_disk(
    tmp_path: Path,
) -> None:
    batches = [TAGGABLE[i : i + 8] for i in range(0, len(TAGGABLE), 8)]
    lines = []
    for number, batch in enumerate(batches):
        tags, links = tags_and_links(batch)
        lines.append(
            json.dumps(
                {"title": f"Rotation notes {number}", "body": FILLER, "tags": tags, "links": links}
            )
        )
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = ken("import", str(path))
    assert result.exit_code == 0, result.output
    assert all(case.secret not in result.output for case in TAGGABLE)
    with opened() as store:
        assert len(store.list_items(ItemQuery(statuses=(), include_expired=True))) == len(batches)
    assert_no_value_on_disk_in_any_case(TAGGABLE)


def test_a_bad_tag_is_refused_without_echoing_a_secret_in_it() -> None:
    case = next(c for c in CASES if "+" in c.secret or "=" in c.secret)
    result = ken("add", "--tag", f"creds {case.secret}", f"Rotation notes\n{FILLER}")
    assert result.exit_code == 1
    assert "bad tag" in result.output
    assert case.secret not in result.output


@pytest.fixture
def summarized(
    tmp_path: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Session, summarizing.Transcript]:
    """A session to summarize with test_summarize's stand-in summarizer, and its
    transcript."""
    summarizing.fake.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]
    transcript = summarizing.Transcript(tmp_path / "home" / ".claude" / "session.jsonl")
    with opened() as store:
        session = summarizing.session.__wrapped__(store, transcript, git_repo)  # type: ignore[attr-defined]
    return session, transcript


def test_secrets_in_the_summarizers_answer_reach_neither_the_store_nor_the_hook_log(
    summarized: tuple[Session, summarizing.Transcript], monkeypatch: pytest.MonkeyPatch
) -> None:
    session, transcript = summarized
    chunks = list(memories(CASES))
    runs = 0
    # The whole corpus in summaries, proposed items and their evidence (whole lines: cut
    # mid-line, a password would lose the name that makes it one), six chunks a run.
    for start in range(0, len(chunks), 6):
        summary, *entries = chunks[start : start + 6]
        answer = {
            "summary": summary,
            "items": [
                {"text": text, "kind": "fact", "evidence": text[-2000:].partition("\n")[2]}
                for text in entries
            ],
        }
        monkeypatch.setenv("FAKE_SUMMARY_ANSWER", json.dumps(answer))
        transcript.exchange(f"Step {start}: rotate the keys", "Rotated.")
        result = ken("summarize", session.id)
        assert result.exit_code == 0, result.output
        runs += 1
    with opened() as store:
        assert len(summarizing.summaries(store)) == runs
    # What the summarizer prints when it fails reaches the hook log: redacted too.
    transcript.exchange("One more step", "Done.")
    sample = CASES[::19]
    for case in sample:
        monkeypatch.setenv("FAKE_SUMMARY_ANSWER", f"I could not summarize: {case.text}")
        assert ken("summarize", session.id, "--from-hook").exit_code == 0
    monkeypatch.setenv("FAKE_SUMMARY_EXIT", "2")
    for case in sample:
        monkeypatch.setenv("FAKE_SUMMARY_STDERR", f"{FILLER * 60}\nfailed near {case.text}")
        assert ken("summarize", session.id, "--from-hook").exit_code == 0
    log = log_file().read_text(encoding="utf-8")
    assert log.count("SummarizeError") == 2 * len(sample)
    assert "[redacted:" in log
    assert_no_value_on_disk(CASES)


def test_a_handoff_cut_to_its_title_or_log_heading_keeps_no_part_of_a_token(
    git_repo: Path, tmp_path: Path
) -> None:
    """The title was cut from `done` before redaction: 26 of a token's 40 characters were
    stored, listed and written into the project's log.md heading."""
    token = CASES[0].secret
    done = f"Released version 2.4 of the shop after fixing the CSV export with {token} pushed"
    part = token[:12]
    notes = tmp_path / "notes"
    notes.mkdir()
    with opened() as store:
        projects.add_project(store, "shop", str(notes), None)
    answers: list[dict[str, Any]] = []

    async def scenario(server: Server) -> None:
        answers.append(
            await server.ok("memory_handoff", {"done": done, "state": "green", "next": "notes"})
        )

    drive(git_repo, scenario)
    drive(git_repo, scenario, extra_env={"KEN_PROJECT": "shop"})
    assert len(answers) == 2 and part not in json.dumps(answers)
    assert all("[redacted:" in a["title"] for a in answers)
    assert part not in (notes / "log.md").read_text(encoding="utf-8")
    assert all(part.encode() not in data for data in raw_files().values())


def test_a_session_end_reason_is_stored_redacted(git_repo: Path) -> None:
    token = CASES[0].secret
    start = payload("claude", "SessionStart", git_repo)
    assert call_inproc("SessionStart", "claude", start)[0] == 0
    end = payload("claude", "SessionEnd", git_repo, reason=f"logout {token}")
    assert call_inproc("SessionEnd", "claude", end)[0] == 0
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(limit=10))
    assert session.end_reason == "logout [redacted:github_token]"
    assert all(token.encode() not in data for data in raw_files().values())


def test_an_error_or_answer_that_echoes_its_input_says_no_secret(git_repo: Path) -> None:
    """Errors echoed a bad scope, kind, id or revision whole: what an agent's shell or
    tool call gets goes to its model."""
    token = CASES[0].secret
    for args in (
        ("add", "A note long enough to be plain text", "--scope", f"repo:{token}"),
        ("add", "A note long enough to be plain text", "--kind", token),
        ("show", token),
        ("search", "x", "--status", token),
    ):
        result = ken(*args)
        assert result.exit_code != 0 and token not in result.output, args
        assert "[redacted:github_token]" in result.stderr, args
    said: list[str] = []

    async def scenario(server: Server) -> None:
        said.append(await server.error("memory_get", {"id": token}))
        note = await server.ok("memory_propose", {"text": "Branch note on the mirror"})
        said.append(
            await server.error(
                "memory_update", {"id": note["id"], "text": "x y z", "expected_revision": token}
            )
        )

    drive(git_repo, scenario)
    assert all(token not in text for text in said), said
    assert all(token.encode() not in data for data in raw_files().values())
