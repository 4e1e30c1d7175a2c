"""A session belongs to the place it works in, with the real CLIs: a Copilot or Codex
session begun in one repo and resumed in another (Copilot's `--continue` and
`--resume=ID`, `codex exec resume ID`) is recorded in the second repo as a session of
its own, under that repo's switches; nothing typed there reaches the first repo's packs
or handoffs (docs/reference/hooks.md, "Where a hook works")."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from . import harness
from .harness import Sandbox
from .stubs import OpenAIChatStub, OpenAIResponsesStub, Text
from .test_ken_hooks import hook_log, ken, ken_json

pytestmark = pytest.mark.agents

SECRET = "PRIVATEPLAN acquire the rival company quietly"
FIRST = "work in the public repo"


def private_repo(box: Sandbox, deliver: bool = True) -> Path:
    """A second repo beside the sandbox's; with `deliver` off, kenning tells nothing there."""
    repo = harness.make_repo(box.root / "private", box.env)
    if not deliver:
        config = Path(box.env["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'[memory.repos."{repo}"]\ndeliver = false\n', encoding="utf-8")
    return repo


def sessions_by_repo(box: Sandbox) -> dict[str, dict[str, Any]]:
    return {s["repo"]: s for s in ken_json(box, "sessions", "--all")}


def assert_kept_apart(box: Sandbox, there: Path) -> None:
    sessions = sessions_by_repo(box)
    here = sessions[str(box.repo)]
    moved = sessions[str(there)]
    assert (here["first_prompt"], here["last_prompt"]) == (FIRST, FIRST), here
    assert (moved["first_prompt"], moved["last_prompt"]) == (SECRET, SECRET), moved
    assert moved["agent_session_id"] == here["agent_session_id"]
    handoffs = ken_json(box, "list", "--kind", "handoff", "--all")
    in_here = [h for h in handoffs if h["scope"] == f"workstream:{box.repo}#main"]
    assert in_here and all("PRIVATEPLAN" not in json.dumps(h) for h in in_here), handoffs
    pack = ken(box, "pack", "--for", "claude").stdout
    handed = ken(box, "handoff", "--to", "claude", "--print").stdout
    assert FIRST in pack
    assert "PRIVATEPLAN" not in pack + handed
    assert hook_log(box) == []


@pytest.mark.parametrize("form", ["--continue", "--resume"])
def test_a_copilot_session_resumed_in_another_repo_is_recorded_there(
    form: str, copilot_box: Sandbox, chat_stub: OpenAIChatStub
) -> None:
    box = copilot_box
    ken(box, "integrate", "copilot")
    there = private_repo(box, deliver=False)
    chat_stub.queue(Text("one"), Text("two"))
    assert harness.run_copilot(box, FIRST, timeout=150).returncode == 0
    [first] = ken_json(box, "sessions", "--all")
    resume = "--continue" if form == "--continue" else f"--resume={first['agent_session_id']}"

    done = harness.run_copilot(replace(box, repo=there), SECRET, [resume], timeout=150)

    assert done.returncode == 0, done.stderr[-4000:]
    assert SECRET in chat_stub.all_request_text()  # the same conversation went on there
    assert_kept_apart(box, there)


def test_a_codex_session_resumed_in_another_repo_is_recorded_there(
    codex_box: Sandbox, openai_stub: OpenAIResponsesStub
) -> None:
    box = codex_box
    ken(box, "integrate", "codex", "--trust")
    there = private_repo(box, deliver=False)
    openai_stub.queue(Text("one"), Text("two"))
    assert harness.run_codex(box, FIRST, timeout=150).returncode == 0
    [first] = ken_json(box, "sessions", "--all")

    done = harness.run_codex(
        replace(box, repo=there), SECRET, ["resume", first["agent_session_id"]], timeout=150
    )

    assert done.returncode == 0, done.stderr[-4000:]
    assert_kept_apart(box, there)
