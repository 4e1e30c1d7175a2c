"""kenning in the real GitHub Copilot CLI, end to end and offline: what `ken integrate
copilot --mcp` writes (kenning's hook file in ~/.copilot/hooks, and `ken mcp` in
~/.copilot/mcp-config.json) is all that gives Copilot memory here.

Each test runs `copilot -p` against the Chat Completions stub, then checks what reached
the model (the pack as a user message of its own, the recall as a reminder after the
prompt, nothing of an unrelated repo), what kenning recorded (the session, opened and
closed by Copilot's hooks, its model and transcript, what it was told), a continued
session, a compaction, and MCP tool calls that round-trip.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kenning import items
from kenning import where as where_mod
from kenning.recall import HEADER as RECALL_HEADER
from kenning.store import ItemQuery, SessionQuery, open_store
from kenning.transcripts import conversation, last_model, user_turns

from . import harness
from .harness import HookProbe, Sandbox
from .stubs import OpenAIChatStub, RecordedRequest, Text, ToolCall
from .test_harness import check_fixtures
from .test_ken_hooks import (
    FINAL,
    PINNED,
    PROMPT,
    RULE,
    RULE_TITLE,
    UNRELATED,
    UNRELATED_SCOPE,
    budget_for_only,
    hook_log,
    ken,
    ken_json,
)
from .test_ken_transcripts import RECORD, _shorten

pytestmark = pytest.mark.agents

TRANSCRIPT = (
    Path(__file__).parents[1]
    / "fixtures"
    / "transcripts"
    / "copilot"
    / "tool-call-and-continue.jsonl"
)
# The conversation in that transcript: what kenning reads back.
PROMPTS = ["Export the orders as CSV", "Now the refunds too"]
TURNS = [
    ("user", PROMPTS[0]),
    ("assistant", "There is no export tool; orders.csv is written by hand."),
    ("user", PROMPTS[1]),
    ("assistant", "refunds.csv is written too."),
]

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
REMINDER = re.compile(r"(?s)\n\n<system_reminder>\n(.*)\n</system_reminder>$")


def text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content)
    return str(content or "")


def conversation_of(request: RecordedRequest) -> list[dict[str, Any]]:
    """The messages after Copilot's system prompt."""
    messages: list[dict[str, Any]] = request.body["messages"]
    assert messages[0]["role"] == "system"
    return messages[1:]


def pack_line(pinned: dict[str, Any]) -> str:
    return f"- (note) {PINNED} [m:{pinned['short_id']}]"


def integrate(box: Sandbox) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = ken_json(box, "integrate", "copilot", "--mcp")
    assert [c["action"] for c in changes] == ["installed", "installed"]
    assert changes[0]["path"] == str(box.copilot_home / "hooks" / "kenning.json")
    assert changes[1]["path"] == str(box.copilot_home / "mcp-config.json")
    return changes


def seed(box: Sandbox) -> dict[str, Any]:
    """A pinned fact, a correction that fits the prompt and an unrelated memory; a pack
    budget with room for the pin only, so the correction can only come as recall."""
    pinned = ken_json(box, "add", PINNED, "--pin")
    rule = ken_json(box, "add", RULE, "--kind", "correction")
    unrelated = ken_json(box, "add", UNRELATED, "--scope", UNRELATED_SCOPE)
    ken(box, "config", "set", "memory.budget", str(budget_for_only(box, pinned["id"])))
    return {"pinned": pinned, "rule": rule, "unrelated": unrelated}


def test_copilot_gets_the_pack_and_recall_and_its_session_is_recorded(
    copilot_box: Sandbox, chat_stub: OpenAIChatStub
) -> None:
    box = copilot_box
    hooks, _ = integrate(box)
    memories = seed(box)
    pinned, rule, unrelated = memories["pinned"], memories["rule"], memories["unrelated"]
    chat_stub.queue(Text(FINAL))

    done = harness.run_copilot(box, PROMPT, timeout=150)

    assert done.returncode == 0, done.stderr[-4000:]
    assert FINAL in done.stdout
    [request] = chat_stub.model_requests()
    pack, prompt = conversation_of(request)
    # The pack is a user message of its own, before the conversation.
    assert pack["role"] == "user"
    assert text(pack).startswith(f"## Pinned\n{pack_line(pinned)}"), text(pack)
    # The recall is a reminder appended to the person's prompt.
    assert prompt["role"] == "user" and PROMPT in text(prompt)
    reminder = REMINDER.search(text(prompt))
    assert reminder, text(prompt)
    assert reminder.group(1).startswith(f"{RECALL_HEADER}\n- (correction) {RULE_TITLE}: ")
    assert f"[m:{rule['short_id']}]" in reminder.group(1)
    everything = chat_stub.all_request_text()
    assert UNRELATED not in everything and unrelated["short_id"] not in everything

    [session] = ken_json(box, "sessions", "--all")
    assert session["agent"] == "copilot"
    assert UUID.match(session["agent_session_id"]), session["agent_session_id"]
    assert session["first_prompt"] == PROMPT
    assert session["ended_at"], "sessionEnd did not close the session"
    assert session["end_reason"] == "complete"
    assert Path(session["cwd"]).resolve() == box.repo.resolve()
    # Copilot's hooks send no model: its transcript has it.
    assert session["model"] == harness.CHAT_MODEL
    transcript = Path(session["transcript_path"])
    state = box.copilot_home / "session-state" / session["agent_session_id"]
    assert transcript == state / "events.jsonl" and transcript.is_file()
    # The person's words and the answer, without the recall Copilot added to the prompt.
    turns = conversation("copilot", str(transcript), session["agent_session_id"])
    assert [(t.role, t.text) for t in turns] == [("user", PROMPT), ("assistant", FINAL)]

    told = ken_json(box, "told", session["id"])
    given = [(d["what"], d["item_ids"]) for d in told["deliveries"]]
    # sessionStart and userPromptSubmitted run at the same time: either may be first.
    assert sorted(given) == [("pack", [pinned["id"]]), ("recall", [rule["id"]])]
    report = ken_json(box, "doctor", check=False)
    checks = {c["name"]: c for c in report["agents"]["copilot"]}
    assert checks["copilot hooks"]["ok"]
    assert checks["copilot hooks"]["detail"].startswith(f"4 of 4 events in {hooks['path']}")
    assert checks["copilot mcp"]["ok"]
    for event in hooks["commands"]:
        assert checks[f"copilot {event}"]["ok"], checks[f"copilot {event}"]
    assert hook_log(box) == []


def test_copilot_calls_ken_mcp_tools(copilot_box: Sandbox, chat_stub: OpenAIChatStub) -> None:
    box = copilot_box
    integrate(box)
    config = json.loads((box.copilot_home / "mcp-config.json").read_text())
    server = config["mcpServers"]["ken"]
    assert server["type"] == "local" and server["args"] == ["mcp"]
    assert server["env"]["KEN_DB"] == str(box.db)
    repo_key = where_mod.detect(box.repo).repo
    elsewhere = "repo:github.com/acme/billing"
    with open_store(box.db) as store:
        existing = items.add(
            store,
            "Billing deploys go through the zebrafish pipeline",
            scope=items.parse_scope(elsewhere),
        )
    chat_stub.queue(
        ToolCall(
            "ken-memory_propose",
            {
                "text": "Use pnpm, not npm, in this repo",
                "kind": "correction",
                "scope": f"repo:{repo_key}",
                "evidence": "No, use pnpm here, not npm.",
            },
            call_id="call_propose",
        ),
        ToolCall("ken-memory_search", {"query": "zebrafish", "scopes": [elsewhere]}, "call_find"),
        Text(FINAL),
    )

    # In -p mode Copilot runs an MCP tool only when allowed: kenning's server, by name.
    done = harness.run_copilot(
        box, "No, use pnpm here, not npm. Remember that.", ["--allow-tool=ken"], timeout=180
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert chat_stub.pending() == []
    requests = chat_stub.model_requests()
    offered = {t["function"]["name"] for t in requests[0].body["tools"]}
    assert {"ken-memory_search", "ken-memory_propose", "ken-memory_context"} <= offered
    results = {
        m["tool_call_id"]: text(m)
        for r in requests
        for m in r.body["messages"]
        if m["role"] == "tool"
    }
    assert "proposed" in results["call_propose"]
    assert existing.id in results["call_find"] and "zebrafish" in results["call_find"]
    with open_store(box.db) as store:
        [session] = store.list_sessions(SessionQuery(limit=10))
        [proposal] = [
            i
            for i in store.list_items(ItemQuery(statuses=(), include_expired=True))
            if i.provenance.how == "mcp"
        ]
    assert proposal.title == "Use pnpm, not npm, in this repo"
    assert proposal.status.value == "proposed"
    # The MCP server found the session the hooks opened, through Copilot's process.
    assert (proposal.provenance.who, proposal.provenance.session) == ("copilot", session.id)
    assert hook_log(box) == []


def transcript_fixture(live: Path, box: Sandbox) -> str:
    """The transcript with stable paths, and lines other than messages shortened."""
    lines = []
    for raw in live.read_text(encoding="utf-8").splitlines():
        record = harness.sanitize(json.loads(raw), box)
        if record.get("type") not in ("user.message", "assistant.message"):
            record = _shorten(record)
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines) + "\n"


def message_types(text: str) -> list[str]:
    types = [json.loads(line).get("type") for line in text.splitlines()]
    return [t for t in types if t in ("user.message", "assistant.message")]


def test_copilot_continue_packs_again_its_events_file_reads_as_the_conversation_and_compacts(
    copilot_box: Sandbox, chat_stub: OpenAIChatStub, probe: HookProbe
) -> None:
    """One session, three runs: a prompt with a failing tool call, a `--continue` (the
    pack again), then `/compact` (recorded through preCompact)."""
    box = copilot_box
    ken(box, "integrate", "copilot")
    pinned = ken_json(box, "add", PINNED, "--pin")
    # A probe beside kenning's hook records preCompact's payload (tests/fixtures/hooks).
    harness.add_copilot_hook(box, "preCompact", probe.command("preCompact", "silent"))
    chat_stub.queue(
        ToolCall("no_such_tool", {"path": "orders.csv"}, call_id="call_missing"),
        Text(TURNS[1][1]),
        Text(TURNS[3][1]),
    )
    assert harness.run_copilot(box, PROMPTS[0], timeout=150).returncode == 0
    done = harness.run_copilot(box, PROMPTS[1], ["--continue"], timeout=150)

    assert done.returncode == 0, done.stderr[-4000:]
    first, after_tool, second = chat_stub.model_requests()
    # Copilot drops the earlier session-start context on a resume: the pack comes again,
    # once, at the top.
    for request in (first, after_tool, second):
        packs = [m for m in conversation_of(request) if pack_line(pinned) in text(m)]
        assert len(packs) == 1 and packs[0] is conversation_of(request)[0]
    assert PROMPTS[0] in json.dumps(second.body)
    [session] = ken_json(box, "sessions", "--all")
    assert (session["prompt_count"], session["first_prompt"]) == (2, PROMPTS[0])
    assert session["last_prompt"] == PROMPTS[1]
    assert session["ended_at"]
    told = ken_json(box, "told", session["id"])
    assert [d["what"] for d in told["deliveries"]] == ["pack", "repack", "pack"]

    live = Path(session["transcript_path"])
    events = live.read_text(encoding="utf-8")
    # The tool call, its failure and kenning's pack are in there, and are left out.
    assert '"tool.execution_complete"' in events and '"call_missing"' in events
    assert "## Pinned" in events
    turns = conversation("copilot", str(live), session["agent_session_id"])
    assert [(t.role, t.text) for t in turns] == TURNS
    assert all(t.at for t in turns)
    assert user_turns("copilot", str(live)) == PROMPTS
    assert last_model("copilot", str(live)) == harness.CHAT_MODEL
    if RECORD:
        TRANSCRIPT.parent.mkdir(parents=True, exist_ok=True)
        TRANSCRIPT.write_text(transcript_fixture(live, box), encoding="utf-8")
    assert TRANSCRIPT.exists(), f"no fixture {TRANSCRIPT}; run with KEN_RECORD_FIXTURES=1"
    assert message_types(transcript_fixture(live, box)) == message_types(
        TRANSCRIPT.read_text(encoding="utf-8")
    ), f"{TRANSCRIPT.name} no longer matches what Copilot writes; re-record it"
    assert probe.events() == []

    chat_stub.queue(Text("A summary of the conversation so far."))
    done = harness.run_copilot(box, "/compact", ["--continue"], timeout=150)

    assert done.returncode == 0, done.stderr[-4000:]
    sessions = ken_json(box, "sessions", "--all")
    assert [s["id"] for s in sessions] == [session["id"]], sessions
    payload = probe.payload("preCompact")
    assert payload["sessionId"] == session["agent_session_id"]
    assert payload["trigger"] == "manual"
    told = ken_json(box, "told", session["id"])
    assert [d["what"] for d in told["deliveries"]][-1] == "compact"
    check_fixtures("copilot", probe, box)
    assert hook_log(box) == []
