"""What a pack tells its agent to reach memory with: kenning's MCP tools by the names that
agent shows them when the server is registered with it, `ken` in its shell when not.

A tester's case: `ken integrate opencode` (no --mcp), then `ken pack --for opencode`, gave
"Tools: memory_search, memory_get, ... (MCP server `ken`)", tools OpenCode did not have;
and with --mcp OpenCode calls them `ken_memory_*`, Copilot `ken-memory_*`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ken
from helpers import opened
from kenning import agents, items
from kenning.pack import (
    INTRO,
    INTRO_FROM,
    NO_TOOLS,
    SHORT_INTRO,
    SHORT_INTRO_FROM,
    Tools,
    build_pack,
)

REPO = "github.com/acme/shop"
SCOPES = [f"repo:{REPO}", "global"]
TOOLS = ("memory_search", "memory_get", "memory_propose", "memory_handoff")
# How each agent shows kenning's `memory_search` to its model (tests/agents/ see it so).
SEARCH_AS = {
    "claude": "mcp__ken__memory_search",
    "codex": "mcp__ken__memory_search",
    "gemini": "mcp_ken_memory_search",
    "opencode": "ken_memory_search",
    "copilot": "ken-memory_search",
}


def told(agent: str) -> str:
    result = ken("pack", "--for", agent)
    assert result.exit_code == 0, result.output
    return result.output


def names_a_tool(text: str) -> bool:
    return any(tool in text for tool in TOOLS)


@pytest.fixture
def in_repo(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(git_repo)
    ken("add", "Deploys go through make ship", "--kind", "fact", "--pin")
    return git_repo


def test_every_agent_has_its_tool_names() -> None:
    assert {name: agents.get(name).mcp.tool("memory_search") for name in agents.NAMES} == (
        SEARCH_AS
    )


@pytest.mark.parametrize("agent", agents.NAMES)
def test_an_agent_integrated_without_mcp_is_told_no_tool_it_lacks(
    in_repo: Path, agent: str
) -> None:
    assert ken("integrate", agent).exit_code == 0
    text = told(agent)
    intro = text.split("\n\n", 1)[0]
    assert not names_a_tool(text), intro
    assert "`ken search WORDS`" in intro and '`ken add "TEXT"' in intro
    assert intro == NO_TOOLS.intro
    # Nor does it say the agent has none: a server registered where kenning does not
    # look (a project's .mcp.json) may be there all the same.
    assert "no mcp" not in intro.lower() and "no memory tools" not in intro.lower()


@pytest.mark.parametrize("agent", agents.NAMES)
def test_an_agent_integrated_with_mcp_is_told_the_tools_by_its_own_names(
    in_repo: Path, agent: str
) -> None:
    flags = ("--mcp", "--trust") if agent == "codex" else ("--mcp",)
    assert ken("integrate", agent, *flags).exit_code == 0
    intro = told(agent).split("\n\n", 1)[0]
    prefix = SEARCH_AS[agent].removesuffix("memory_search")
    named = ", ".join(prefix + tool for tool in TOOLS)
    assert f"Tools: {named} (MCP server `ken`)." in intro
    if prefix:  # no bare name the agent does not know
        assert not any(f" {tool}" in intro for tool in TOOLS), intro


def test_a_person_looking_is_shown_the_tools_own_names(in_repo: Path) -> None:
    assert ken("integrate", "opencode").exit_code == 0
    assert ken("pack").output.startswith(INTRO + "\n\n")


def test_removing_the_server_takes_the_tools_out_of_the_pack(in_repo: Path) -> None:
    assert ken("integrate", "copilot", "--mcp").exit_code == 0
    assert "ken-memory_propose" in told("copilot")
    assert ken("integrate", "copilot", "--remove", "--mcp").exit_code == 0
    assert ken("integrate", "copilot").exit_code == 0
    text = told("copilot")
    assert not names_a_tool(text) and "ken add" in text


def test_a_server_turned_off_gives_no_tools(in_repo: Path) -> None:
    assert ken("integrate", "opencode", "--mcp").exit_code == 0
    path = agents.get("opencode").mcp.path(os.environ)
    config = json.loads(path.read_text(encoding="utf-8"))
    config["mcp"]["ken"]["enabled"] = False
    path.write_text(json.dumps(config), encoding="utf-8")
    assert not names_a_tool(told("opencode"))


@pytest.mark.parametrize(
    ("text", "registered"),
    [
        ("", False),
        ("{not json", False),
        ('{"mcpServers": {"other": {"command": "x"}}}', False),
        ('{"mcpServers": {"ken": "x"}}', False),
        ('{"mcpServers": {"ken": {"command": "ken", "disabled": true}}}', False),
        ('{"mcpServers": {"ken": {"command": "ken"}}}', True),
        # the name with an escape is the same key to the agent
        ('{"mcpServers": {"\\u006ben": {"command": "ken"}}}', True),
        ('// mine\n{"mcpServers": {"ken": {"command": "ken"},},}', True),
    ],
)
def test_a_registration_is_read_as_the_agent_reads_it(text: str, registered: bool) -> None:
    mcp = agents.get("gemini").mcp
    path = mcp.path(os.environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    assert mcp.registered(os.environ) is registered


@pytest.mark.parametrize(
    ("text", "registered"),
    [
        ('[mcp_servers.other]\ncommand = "x"\n', False),
        ('[mcp_servers.ken]\ncommand = "ken"\nenabled = false\n', False),
        ('[mcp_servers.ken]\ncommand = "ken"\n', True),
        ('mcp_servers.ken.command = "ken"\n', True),
        ("[mcp_servers.ken\n", False),
    ],
)
def test_codex_s_toml_registration_is_read(text: str, registered: bool) -> None:
    mcp = agents.get("codex").mcp
    path = mcp.path(os.environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    assert mcp.registered(os.environ) is registered


# --------------------------------------------------------------- the opening's budget rules

VARIANTS = [Tools(), NO_TOOLS, Tools("mcp__ken__{tool}"), Tools("ken-{tool}")]


@pytest.fixture
def crowded() -> None:
    with opened() as store:
        items.add(store, "Deploys go through make ship", scope=items.parse_scope(f"repo:{REPO}"))
        for n in range(60):
            items.add(
                store,
                f"Note {n} about the checkout flow, its refunds and the ledger totals",
                scope=items.parse_scope(f"repo:{REPO}"),
            )


@pytest.mark.parametrize("tools", VARIANTS)
@pytest.mark.parametrize(
    ("budget", "lines"),
    [(100, 0), (149, 0), (SHORT_INTRO_FROM, 1), (INTRO_FROM - 1, 1), (INTRO_FROM, 2), (1500, 2)],
)
def test_every_opening_shrinks_with_the_budget(
    crowded: None, tools: Tools, budget: int, lines: int
) -> None:
    with opened() as store:
        pack = build_pack(store, SCOPES, budget=budget, tools=tools)
    opening = pack.text[: pack.text.index("## ")]
    expected = {0: "", 1: tools.short_intro + "\n\n", 2: tools.intro + "\n\n"}[lines]
    assert opening == expected
    assert pack.tokens <= budget and pack.items
    assert pack.omitted and tools.finds in pack.text.splitlines()[-1]


@pytest.mark.parametrize("tools", VARIANTS)
def test_a_bigger_budget_never_leaves_memories_less_room(crowded: None, tools: Tools) -> None:
    with opened() as store:
        given = [
            len(build_pack(store, SCOPES, budget=budget, tools=tools).items)
            for budget in range(100, 700, 7)
        ]
    assert given == sorted(given)


def test_nothing_to_tell_is_the_one_line_for_the_agent() -> None:
    with opened() as store:
        assert build_pack(store, SCOPES).text == SHORT_INTRO
        pack = build_pack(store, SCOPES, tools=NO_TOOLS)
    assert pack.text == NO_TOOLS.short_intro
    assert "\n" not in pack.text and not names_a_tool(pack.text) and "ken add" in pack.text
