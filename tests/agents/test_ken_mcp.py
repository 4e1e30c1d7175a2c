"""`ken mcp` end to end in the real Claude Code, Codex and Gemini CLIs, offline.

Each test installs exactly what `ken integrate <agent> --mcp` writes (the hooks, which
open the session, and the MCP server), scripts the stub model to call `memory_propose`
and then `memory_search`, and checks that the proposal is stored as proposed with the
agent, how=mcp and the hooks' session in its provenance, and that the search result
reaches the model's next request.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kenning import items
from kenning import where as where_mod
from kenning.agents.claude import ALLOWED as CLAUDE_ALLOWED
from kenning.store import ItemQuery, SessionQuery, open_store

from . import harness
from .harness import Sandbox
from .stubs import StubServer, Text, ToolCall

KEN = Path(sys.executable).with_name("ken")
PROMPT = "No, use pnpm here, not npm. Remember that."
FINAL = "Noted the pnpm correction."
ELSEWHERE = "repo:github.com/acme/billing"
EXISTING = "Billing deploys go through the zebrafish pipeline"
PROPOSAL = "Use pnpm, not npm, in this repo"
TOOLS = (
    "memory_context",
    "memory_search",
    "memory_get",
    "memory_propose",
    "memory_update",
    "memory_handoff",
    "session_history",
    "record_reflection",
)

pytestmark = [
    pytest.mark.agents,
    pytest.mark.skipif(not KEN.exists(), reason="ken is not installed in this venv"),
]


def integrate(box: Sandbox) -> None:
    """Run `ken integrate <agent> --mcp` (codex: --trust) with the sandbox's env."""
    args = ["integrate", box.agent, "--mcp", "--json"]
    if box.agent == "codex":
        args.append("--trust")  # Codex skips untrusted hooks, and no hooks means no session
    done = harness.run_ken(box, *args)
    changes = json.loads(done.stdout)
    assert [c["action"] for c in changes] == ["installed", "installed"], changes


def check_integrated(box: Sandbox) -> None:
    """What integrate wrote is what the agent will read (nothing added by this test)."""
    if box.agent == "claude":
        server = json.loads((box.home / ".claude.json").read_text())["mcpServers"]["ken"]
        settings = json.loads(box.claude_settings.read_text())
        # -p mode runs only allowed tools: integrate's allow list is all it gets here.
        assert set(CLAUDE_ALLOWED) <= set(settings["permissions"]["allow"])
        assert set(settings["hooks"]) >= {"SessionStart", "UserPromptSubmit", "SessionEnd"}
    elif box.agent == "codex":
        import tomllib

        config = tomllib.loads(box.codex_config.read_text())
        server = config["mcp_servers"]["ken"]
        assert server["required"] is True
        assert server["default_tools_approval_mode"] == "approve"
        assert {"session_start", "session_end"} <= {
            key.split(":")[-3] for key in config["hooks"]["state"]
        }
    else:
        settings = json.loads(box.gemini_settings.read_text())
        server = settings["mcpServers"]["ken"]
        assert server["trust"] is True
        assert set(settings["hooks"]) >= {"SessionStart", "BeforeAgent", "SessionEnd"}
    assert (server["command"], server["args"]) == (str(KEN.resolve()), ["mcp"])
    assert server["env"]["KEN_DB"] == str(box.db)


def offered_tools(agent: str, body: Any) -> set[str]:
    """The tool names a model request defines (with schemas, not merely mentions)."""
    tools = body.get("tools", [])
    if agent == "claude":
        return {tool["name"] for tool in tools if "input_schema" in tool}
    if agent == "codex":  # MCP tools come as a namespace "mcp__<server>" of functions
        return {
            f"{tool['name']}__{inner['name']}"
            if tool.get("type") == "namespace"
            else str(tool.get("name"))
            for tool in tools
            for inner in tool.get("tools", [{}])
        }
    return {d["name"] for tool in tools for d in tool.get("functionDeclarations", [])}


def tool_results(agent: str, body: Any) -> list[tuple[str, str]]:
    """(call id or tool name, result as JSON text) for each tool result in a model request."""
    if agent == "claude":
        return [
            (block["tool_use_id"], json.dumps(block["content"]))
            for message in body.get("messages", [])
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
    if agent == "codex":
        return [
            (entry["call_id"], json.dumps(entry["output"]))
            for entry in body.get("input", [])
            if entry.get("type") == "function_call_output"
        ]
    return [
        (part["functionResponse"]["name"], json.dumps(part["functionResponse"]["response"]))
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]


def run_agent(box: Sandbox) -> str:
    """Run the agent once; returns its final answer text."""
    if box.agent == "claude":
        # No --allowedTools: the permissions.allow that integrate wrote is all that lets
        # -p mode run ken's tools (without it Claude refuses them and nothing is stored).
        done = harness.run_claude(box, PROMPT, timeout=150)
    elif box.agent == "codex":
        done = harness.run_codex(box, PROMPT, timeout=150)
    else:
        done = harness.run_gemini(box, PROMPT, timeout=150)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if box.agent == "codex":
        return "\n".join(harness.codex_messages(done.stdout))
    return done.stdout


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_agent_proposes_and_searches_through_ken_mcp(
    agent: str, request: pytest.FixtureRequest
) -> None:
    box: Sandbox = request.getfixturevalue(f"{agent}_box")
    stub: StubServer = request.getfixturevalue(
        {"claude": "anthropic_stub", "codex": "openai_stub", "gemini": "gemini_stub"}[agent]
    )
    if agent == "claude":
        # Claude Code defers MCP tools behind its ToolSearch tool unless this is off: with
        # it on, the request names mcp__ken__* only in a list of deferred tools, without
        # their schemas, and a model must call ToolSearch before it can use them.
        box.env["ENABLE_TOOL_SEARCH"] = "false"
        # In -p mode Claude sends its first request about 3 s after start whether or not
        # the MCP servers have connected. `ken mcp` needs 1-2.5 s to import the MCP SDK on
        # a busy machine, and past Claude's version-probe timeout it connects in ~3.5 s,
        # so the first request can lack ken's tools. This makes Claude hold the first turn
        # until its servers connect. Codex (required = true) and Gemini wait on their own.
        box.env["CLAUDE_CODE_MCP_STARTUP_WAIT_MS"] = "30000"
    integrate(box)
    check_integrated(box)

    repo_key = where_mod.detect(box.repo).repo
    assert repo_key
    with open_store(box.db) as store:
        # In another repo's scope, so neither the start pack nor recall can show it: only
        # the search tool's result can bring its title to the model.
        existing = items.add(
            store, f"{EXISTING}\nNever by hand.", scope=items.parse_scope(ELSEWHERE)
        )

    prefix = "mcp_ken_" if agent == "gemini" else "mcp__ken__"
    propose_id: str | None = None
    search_id: str | None = None
    if agent != "gemini":  # Gemini's function calls carry no id: results go by tool name
        propose_id, search_id = f"call_{agent}_propose", f"call_{agent}_search"
    stub.queue(
        ToolCall(
            f"{prefix}memory_propose",
            {
                "text": f"{PROPOSAL}\nThe person corrected npm to pnpm.",
                "kind": "correction",
                "scope": f"repo:{repo_key}",
                "evidence": PROMPT,
            },
            call_id=propose_id,
        ),
        ToolCall(
            f"{prefix}memory_search",
            {"query": "zebrafish", "scopes": [ELSEWHERE]},
            call_id=search_id,
        ),
        Text(FINAL),
    )

    answer = run_agent(box)

    assert FINAL in answer
    assert stub.pending() == [], "the agent stopped before the scripted turns ran"
    requests = stub.model_requests()
    offered = offered_tools(agent, requests[0].body)
    assert {f"{prefix}{name}" for name in TOOLS} <= offered, sorted(offered)

    with open_store(box.db) as store:
        found = store.list_sessions(SessionQuery(limit=10))
        written = [
            i
            for i in store.list_items(ItemQuery(statuses=(), include_expired=True))
            if i.provenance.how == "mcp"
        ]
    [session] = found
    assert session.agent == agent and session.agent_session_id and session.pid
    [proposal] = written
    assert proposal.title == PROPOSAL
    assert (proposal.status.value, proposal.kind.value) == ("proposed", "correction")
    assert str(proposal.scope) == f"repo:{repo_key}"
    assert proposal.evidence == PROMPT
    prov = proposal.provenance
    assert (prov.who, prov.how, prov.session) == (agent, "mcp", session.id)
    assert Path(prov.cwd or "").resolve() == box.repo.resolve()

    # Each tool result went back to the model: the proposal's status, then the search hit.
    results: dict[str, str] = {}
    for req in requests:
        results.update(tool_results(agent, req.body or {}))
    propose_key = propose_id or f"{prefix}memory_propose"
    search_key = search_id or f"{prefix}memory_search"
    assert propose_key in results and search_key in results, list(results)
    assert "proposed" in results[propose_key] and proposal.id in results[propose_key]
    assert EXISTING in results[search_key], results[search_key]
    assert existing.id in results[search_key]
    assert EXISTING not in "".join(r.raw for r in requests[:2])  # only the tool told it


def test_codex_passes_the_shells_switches_to_ken_mcp(
    codex_box: Sandbox, openai_stub: StubServer
) -> None:
    """Codex gives an MCP server only HOME, LANG, PATH and TMPDIR: with KEN_ENABLED=0 in
    the shell its hooks went quiet but `ken mcp` still saved. The registration names the
    switches to pass on."""
    integrate(codex_box)
    codex_box.env["KEN_ENABLED"] = "0"
    openai_stub.queue(
        ToolCall(
            "mcp__ken__memory_propose",
            {"text": "Saved with memory off", "kind": "note"},
            call_id="call_off",
        ),
        Text(FINAL),
    )
    run_agent(codex_box)
    results = [r for req in openai_stub.model_requests() for r in tool_results("codex", req.body)]
    assert any(call == "call_off" and "turned off" in text for call, text in results), results
    with open_store(codex_box.db) as store:
        found = store.list_items(ItemQuery(statuses=(), include_expired=True))
        assert not [i for i in found if "memory off" in i.title]
