"""OpenCode (kenning.agents.opencode) without the CLI: the plugin `ken integrate opencode`
writes, its MCP registration, the hooks the plugin runs, and reading OpenCode's
database. tests/agents/test_opencode.py runs all of it in the real OpenCode."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken
from helpers import add
from kenning import agentenv, agents, integrate
from kenning.agents import opencode
from kenning.transcripts import conversation, last_model, user_turns

SESSION = "ses_dcecfe42affexX98K5X2kTqPIF"


def plugin() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "opencode" / "plugins" / "kenning.js"


def config_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"


def integrate_json(*args: str) -> list[dict[str, Any]]:
    result = ken("integrate", "opencode", *args, "--json")
    assert result.exit_code == 0, result.output
    changes: list[dict[str, Any]] = json.loads(result.output)
    return changes


# ----------------------------------------------------------------------------- the plugin


def test_integrate_writes_a_plugin_that_runs_ken_hook_for_four_events() -> None:
    [change] = integrate_json()
    assert change["action"] == "installed" and change["path"] == str(plugin())
    assert change["commands"] == {
        event: integrate.hook_command("opencode", event)
        for event in ("session_start", "prompt", "pre_compact", "session_end")
    }
    text = plugin().read_text()
    hooks = json.loads(text.split("const HOOKS = ", 1)[1].split("\n", 1)[0])
    assert hooks["prompt"] == shlex.split(integrate.hook_command("opencode", "prompt"))
    assert hooks["prompt"][-5:] == ["ken", "hook", "prompt", "--agent", "opencode"]
    timeouts = json.loads(text.split("const TIMEOUTS = ", 1)[1].split("\n", 1)[0])
    assert timeouts == {
        "session_start": 15000,
        "prompt": 10000,
        "pre_compact": 10000,
        "session_end": 3000,
    }
    for hook in ("experimental.chat.system.transform", "chat.message", "session.created"):
        assert hook in text
    assert integrate.installed_commands("opencode") == change["commands"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_plugin_is_a_valid_es_module(tmp_path: Path) -> None:
    integrate_json()
    copy = tmp_path / "kenning.mjs"
    copy.write_text(plugin().read_text())
    done = subprocess.run(
        ["node", "--check", str(copy)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


def test_integrate_twice_changes_nothing_and_keeps_no_backup() -> None:
    integrate_json()
    first = plugin().read_bytes()
    [change] = integrate_json()
    assert change["action"] == "unchanged"
    assert plugin().read_bytes() == first
    assert sorted(p.name for p in plugin().parent.iterdir()) == ["kenning.js"]


def test_a_moved_ken_is_written_anew_and_doctor_sees_a_gone_one(tmp_path: Path) -> None:
    gone = str(tmp_path / "old-venv" / "bin" / "ken")
    integrate.install("opencode", ken=gone)
    result = ken("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(result.output)["agents"]["opencode"]}
    assert checks["opencode hooks"]["detail"].startswith("4 of 4 events in ")
    assert checks["opencode prompt"]["ok"] is False
    assert "ken integrate opencode" in checks["opencode prompt"]["fix"]
    [change] = integrate_json()
    assert change["action"] == "installed"
    assert gone not in plugin().read_text()
    checks = {
        c["name"]: c for c in json.loads(ken("doctor", "--json").output)["agents"]["opencode"]
    }
    assert all(c["ok"] for c in checks.values()), checks


def test_an_older_kennings_plugin_is_flagged_by_doctor_until_integrate_writes_it_anew():
    # The plugin before it left OpenCode's own markers out of its hooks' environment: its
    # /remember is only proposed, and doctor says what to run.
    integrate_json()
    older = plugin().read_text().replace("for (const name of", "// for (const name of")
    plugin().write_text(older)
    checks = {
        c["name"]: c for c in json.loads(ken("doctor", "--json").output)["agents"]["opencode"]
    }
    stale = checks["opencode hooks up to date"]
    assert stale["ok"] is False and stale["fix"] == "ken integrate opencode"
    integrate_json()
    checks = {
        c["name"]: c for c in json.loads(ken("doctor", "--json").output)["agents"]["opencode"]
    }
    assert "opencode hooks up to date" not in checks and all(c["ok"] for c in checks.values())


def test_remove_deletes_the_plugin_and_nothing_else() -> None:
    other = plugin().with_name("theirs.js")
    other.parent.mkdir(parents=True)
    other.write_text("export const Theirs = async () => ({})\n")
    integrate_json()
    [change] = integrate_json("--remove")
    assert change["action"] == "removed"
    assert not plugin().exists() and other.exists()
    [again] = integrate_json("--remove")
    assert again["action"] == "absent"


def test_a_plugin_of_that_name_that_is_not_kennings_is_not_removed() -> None:
    plugin().parent.mkdir(parents=True)
    plugin().write_text("// someone else's plugin\nexport const Mine = async () => ({})\n")
    [change] = integrate_json("--remove")
    assert change["action"] == "absent"
    assert plugin().exists()


# ----------------------------------------------------------------------------- MCP


def test_mcp_goes_into_opencode_json_and_keeps_what_is_there() -> None:
    mine = {
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5",
        "mcp": {"github": {"type": "remote", "url": "https://example.invalid/mcp"}},
    }
    config_file().parent.mkdir(parents=True)
    config_file().write_text(json.dumps(mine, indent=2))
    hooks, server = integrate_json("--mcp")
    assert server["path"] == str(config_file()) and server["action"] == "installed"
    data = json.loads(config_file().read_text())
    assert data["model"] == mine["model"] and data["mcp"]["github"] == mine["mcp"]["github"]
    entry = data["mcp"]["ken"]
    assert entry["type"] == "local" and entry["enabled"] is True
    assert entry["command"] == [integrate.ken_command(), "mcp"]
    assert entry["environment"]["KEN_DB"] == os.environ["KEN_DB"]
    doctor = json.loads(ken("doctor", "--json").output)["agents"]["opencode"]
    [check] = [c for c in doctor if c["name"] == "opencode mcp"]
    assert check["ok"] and check["detail"].endswith(f"{integrate.ken_command()} mcp")
    assert not [c for c in doctor if c["name"] == "opencode mcp store"]

    _, removed = integrate_json("--mcp", "--remove")
    assert removed["action"] == "removed"
    assert json.loads(config_file().read_text()) == mine


def test_an_opencode_json_kenning_cannot_read_is_left_alone() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text('{"mcp": {"github": ')
    result = ken("integrate", "opencode", "--mcp")
    assert result.exit_code == 1
    assert "is not valid JSON" in result.output and "fix it by hand" in result.output
    assert config_file().read_text() == '{"mcp": {"github": '


# ----------------------------------------------------------------------------- hooks


def hook(event: str, payload: dict[str, Any]) -> str:
    done = subprocess.run(
        [str(KEN_BIN), "hook", event, "--agent", "opencode"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_plugins_payloads_get_the_pack_and_recall_as_plain_text(git_repo: Path) -> None:
    add("Deploys go through make ship", scope="repo:github.com/acme/shop", pinned=True)
    add(
        "Never retry the flaky payments tests\nQuarantine them.",
        scope="repo:github.com/acme/shop",
        kind="correction",
    )
    base = {"session_id": SESSION, "cwd": str(git_repo)}
    pack = hook("session_start", {**base, "hook_event_name": "session_start", "source": "startup"})
    assert "Deploys go through make ship" in pack and not pack.startswith("{")
    recall = hook(
        "prompt",
        {
            **base,
            "hook_event_name": "prompt",
            "model": "stub/m",
            "prompt": "why are the payments tests flaky?",
        },
    )
    # The pack had room for the correction too: recall does not repeat it.
    assert recall == ""
    result = ken("sessions", "--all", "--json")
    [session] = json.loads(result.output)
    assert (session["agent"], session["agent_session_id"]) == ("opencode", SESSION)
    database = Path(os.environ["XDG_DATA_HOME"]) / "opencode" / "opencode.db"
    assert session["transcript_path"] == str(database)
    hook("session_end", {**base, "hook_event_name": "session_end", "reason": "exit"})
    [ended] = json.loads(ken("sessions", "--all", "--json").output)
    assert ended["ended_at"] and ended["end_reason"] == "exit"


def test_opencode_is_detected_by_its_marker_and_its_process() -> None:
    assert agentenv.detect_agent({"OPENCODE": "1"}) == "opencode"
    assert agents.from_process("opencode") is agents.get("opencode")
    assert agents.get("opencode").event("session_start").value == "session_start"


# ----------------------------------------------------------------------------- database

# The two tables kenning reads, as OpenCode 1.18.33 creates them.
SCHEMA = """
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL,
  `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
"""


def database(tmp_path: Path, rows: list[tuple[str, str, int, dict[str, Any], list[Any]]]) -> str:
    """A database with messages (id, session, time, data, [part data, ...])."""
    path = tmp_path / "opencode.db"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    for message_id, session, created, data, parts in rows:
        data = {**data, "time": {"created": created}}
        db.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (message_id, session, created, created, json.dumps(data)),
        )
        for n, part in enumerate(parts):
            db.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (f"prt_{message_id}_{n}", message_id, session, created, created, json.dumps(part)),
            )
    db.commit()
    db.close()
    return str(path)


def user(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


MODEL = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
ROWS = [
    (
        "msg_1",
        SESSION,
        1000,
        {"role": "user", "model": MODEL},
        [user("Export the orders as CSV"), {**user("## Recalled\n- (note) x"), "synthetic": True}],
    ),
    (
        "msg_2",
        SESSION,
        2000,
        {"role": "assistant", "modelID": "claude-sonnet-4-5", "providerID": "anthropic"},
        [
            {"type": "step-start"},
            {"type": "reasoning", "text": "thinking..."},
            user("Done."),
            {"type": "tool", "tool": "bash"},
            user("orders.csv has every column."),
        ],
    ),
    ("msg_3", "ses_other", 2500, {"role": "user"}, [user("Another session's prompt")]),
    ("msg_4", SESSION, 3000, {"role": "user", "model": MODEL}, [user("Now the refunds")]),
]


def test_the_transcript_is_read_from_opencodes_database_for_one_session(tmp_path: Path) -> None:
    path = database(tmp_path, ROWS)
    turns = conversation("opencode", path, SESSION)
    assert [(t.role, t.text) for t in turns] == [
        ("user", "Export the orders as CSV"),
        ("assistant", "Done.\norders.csv has every column."),
        ("user", "Now the refunds"),
    ]
    assert turns[0].at == "1970-01-01T00:00:01.000000Z"
    assert user_turns("opencode", path, session_id=SESSION) == [
        "Export the orders as CSV",
        "Now the refunds",
    ]
    assert last_model("opencode", path, SESSION) == "anthropic/claude-sonnet-4-5"
    assert conversation("opencode", path, "ses_missing") == []
    assert conversation("opencode", path, None) == []


def test_a_database_that_is_not_opencodes_gives_nothing(tmp_path: Path) -> None:
    junk = tmp_path / "opencode.db"
    junk.write_bytes(b"not a database at all" * 100)
    assert conversation("opencode", str(junk), SESSION) == []
    assert last_model("opencode", str(junk), SESSION) is None
    assert opencode.read_transcript(str(tmp_path / "missing.db"), SESSION, None) == []


def test_reading_the_database_never_writes_it(tmp_path: Path) -> None:
    path = database(tmp_path, ROWS)
    before = Path(path).read_bytes()
    os.chmod(path, 0o444)
    assert conversation("opencode", path, SESSION)
    assert Path(path).read_bytes() == before
