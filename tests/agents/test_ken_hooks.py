"""kenning's hooks in the real Claude Code, Codex and Gemini CLIs, end to end.

Each test installs the hooks exactly as a person would (`ken integrate AGENT`, run with the
sandbox's environment), fills the sandbox's store with `ken add`, runs one prompt offline
against a stub model server, and then checks what reached the model and what kenning
recorded: the pack in the first request, the relevant correction as recall, nothing of an
unrelated repo anywhere, the session, and what `ken told` says the session was told; and,
with memories waiting for review, that the person's notice never reaches the model and
that a prompt with no signal in it is asked for no reflection (see test_ken_lessons.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import middle_budget
from kenning.lessons import ASK_MARK
from kenning.recall import HEADER as RECALL_HEADER
from kenning.store import SessionQuery, open_store

from . import harness
from .harness import Sandbox
from .stubs import RecordedRequest, StubServer, Text

KEN = Path(sys.executable).with_name("ken")
PROMPT = "Why are the payments webhook tests flaky?"
FINAL = "Quarantined, as asked."
PINNED = "Deploys of this sandbox go through make ship"
RULE_TITLE = "Never retry the flaky payments webhook tests"
# Long enough that the smallest pack (which always holds the pinned fact) has no room for it.
RULE = RULE_TITLE + (
    "\nThe payments webhook tests are flaky; quarantine them and file an issue. The person "
    "said so after a retry loop hid a real regression for a week: a retry makes a red build "
    "green without anyone reading why. Quarantine means the test moves to the quarantine "
    "list with a link to its issue, and the issue names who looks at it next."
)
UNRELATED = "Giraffes prefer acacia leaves at dusk"
UNRELATED_SCOPE = "repo:github.com/acme/zoo"
STUBS = {"claude": "anthropic_stub", "codex": "openai_stub", "gemini": "gemini_stub"}
RUN = {"claude": harness.run_claude, "codex": harness.run_codex, "gemini": harness.run_gemini}


def ken(box: Sandbox, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return harness.run_ken(box, *args, check=check)


def ken_json(box: Sandbox, *args: str, check: bool = True) -> Any:
    return json.loads(ken(box, *args, "--json", check=check).stdout)


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def request_text(request: RecordedRequest) -> str:
    """One request's body: raw, and every string in it decoded (nested JSON included)."""
    return "\n".join([request.raw, *strings(request.body)])


def budget_for_only(box: Sandbox, item_id: str) -> int:
    """A pack budget with room for this item only: the middle of the range of such
    budgets, so that no rounding decides."""
    from kenning.where import detect

    scopes = [str(s) for s in detect(box.repo, env={}).scopes]
    with open_store(box.db) as store:
        return middle_budget(store, scopes, item_id)


def hook_log(box: Sandbox) -> list[str]:
    path = Path(box.env["XDG_STATE_HOME"]) / "kenning" / "log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.agents
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_hooks_from_ken_integrate_reach_the_model(
    agent: str, request: pytest.FixtureRequest
) -> None:
    stub: StubServer = request.getfixturevalue(STUBS[agent])
    box: Sandbox = request.getfixturevalue(f"{agent}_box")

    # What a person runs: integrate (Codex also needs the hooks trusted), then memories.
    [change] = ken_json(box, "integrate", agent, *(["--trust"] if agent == "codex" else []))
    assert change["action"] == "installed"
    pinned = ken_json(box, "add", PINNED, "--pin")
    rule = ken_json(box, "add", RULE, "--kind", "correction")
    unrelated = ken_json(box, "add", UNRELATED, "--scope", UNRELATED_SCOPE)
    assert rule["scope"] == pinned["scope"]  # both in the sandbox repo's scope
    # Room in the pack for the pinned fact but not the correction: it can only come as recall.
    ken(box, "config", "set", "memory.budget", str(budget_for_only(box, pinned["id"])))
    pack = ken_json(box, "pack")
    assert [i["id"] for i in pack["items"]] == [pinned["id"]], "the budget must cut the rule"
    recalled = ken_json(box, "recall", PROMPT)
    assert [i["id"] for i in recalled["items"]] == [rule["id"]]

    stub.queue(Text(FINAL))
    done = RUN[agent](box, PROMPT, timeout=120)

    assert done.returncode == 0, done.stderr[-4000:]
    assert FINAL in done.stdout
    requests = stub.model_requests()
    assert requests, "the agent never called the model"
    first = request_text(requests[0])
    # A budget this small has no room for the opening lines: the pack starts with the pin.
    assert f"## Pinned\n- (note) {PINNED} [m:{pinned['short_id']}]" in first
    assert f"- (note) {PINNED} [m:{pinned['short_id']}]" in first
    assert f"{RECALL_HEADER}\n- (correction) {RULE_TITLE}: " in first
    assert f"[m:{rule['short_id']}]" in first
    everything = stub.all_request_text()
    assert UNRELATED not in everything
    assert unrelated["short_id"] not in everything

    [session] = ken_json(box, "sessions", "--all")
    assert session["agent"] == agent
    assert session["agent_session_id"]
    assert session["transcript_path"]
    assert Path(session["transcript_path"]).is_relative_to(box.home)
    assert session["first_prompt"] == PROMPT
    assert session["ended_at"], "SessionEnd did not close the session"
    assert Path(session["cwd"]).resolve() == box.repo.resolve()
    if agent == "claude":  # from the transcript: Claude's hooks send no model
        assert session["model"] == requests[0].body["model"]

    told = ken_json(box, "told", session["id"])
    assert told["session"]["id"] == session["id"]
    given = [(d["what"], d["item_ids"], d["query"]) for d in told["deliveries"]]
    assert given == [("pack", [pinned["id"]], None), ("recall", [rule["id"]], PROMPT)]
    titles = {i["id"]: i["title"] for d in told["deliveries"] for i in d["items"]}
    assert titles == {pinned["id"]: PINNED, rule["id"]: RULE_TITLE}

    report = ken_json(box, "doctor", check=False)
    checks = {c["name"]: c for c in report["agents"][agent]}
    assert checks[f"{agent} hooks"]["ok"], checks
    assert checks[f"{agent} hooks"]["detail"].startswith(f"{len(change['commands'])} of ")
    for event in change["commands"]:
        assert checks[f"{agent} {event}"]["ok"], checks[f"{agent} {event}"]
    assert report["recent_errors"] == []
    assert hook_log(box) == []


@pytest.mark.agents
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_memories_waiting_for_review_are_shown_to_the_person_and_never_to_the_model(
    agent: str, request: pytest.FixtureRequest
) -> None:
    stub: StubServer = request.getfixturevalue(STUBS[agent])
    box: Sandbox = request.getfixturevalue(f"{agent}_box")
    ken_json(box, "integrate", agent, *(["--trust"] if agent == "codex" else []))
    pinned = ken_json(box, "add", PINNED, "--pin")
    ken_json(box, "add", "Squash merge every pull request", "--propose")
    ken_json(box, "add", "Tag releases with a v prefix", "--propose")

    stub.queue(Text(FINAL))
    done = RUN[agent](box, PROMPT, timeout=120)

    assert done.returncode == 0, done.stderr[-4000:]
    first = request_text(stub.model_requests()[0])
    # The pack still reaches the model, now carried in the hook's JSON beside the notice,
    assert f"- (note) {PINNED} [m:{pinned['short_id']}]" in first
    # and the notice, which is the person's, reaches no request.
    everything = stub.all_request_text()
    assert "wait for your review" not in everything and "◇" not in everything
    assert "Squash merge every pull request" not in everything
    # A prompt with no signal (no correction, no failure): the Stop hook (Gemini:
    # AfterAgent) asks for no reflection, so the agent does not go on.
    assert len(stub.model_requests()) == 1, "the Stop hook made the agent go on"
    assert ASK_MARK not in everything
    with open_store(box.db) as store:
        [session] = store.list_sessions(SessionQuery(limit=10))
        assert session.first_prompt == PROMPT
        assert store.signals(session.id) == []
        assert store.lesson_state(session.id).asked_at is None
    assert hook_log(box) == []


@pytest.mark.agents
def test_a_gemini_resume_is_given_the_pack_and_what_it_was_told_again(
    gemini_box: Sandbox, gemini_stub: StubServer
) -> None:
    """`gemini --resume` keeps no turn that begins with hook context: the first one, which
    carried the pack, the first prompt and its recall, is gone, and SessionStart runs again
    with `source: resume`. kenning gives the pack again, and recall what fits the prompt
    though it told the session before."""
    box = gemini_box
    ken_json(box, "integrate", "gemini")
    pinned = ken_json(box, "add", PINNED, "--pin")
    rule = ken_json(box, "add", RULE, "--kind", "correction")
    ken(box, "config", "set", "memory.budget", str(budget_for_only(box, pinned["id"])))
    later = "Should I retry the flaky payments webhook tests in CI?"
    gemini_stub.queue(Text("Flaky because of the shared sandbox."), Text(FINAL))

    assert harness.run_gemini(box, PROMPT, timeout=120).returncode == 0
    done = harness.run_gemini(box, later, ["--resume", "latest"], timeout=120)

    assert done.returncode == 0, done.stderr[-4000:]
    [_, resumed] = gemini_stub.model_requests()
    text = request_text(resumed)
    # Gemini's own doing: the first prompt is gone from the conversation, its answer is not.
    assert PROMPT not in text and "Flaky because of the shared sandbox." in text
    assert f"- (note) {PINNED} [m:{pinned['short_id']}]" in text
    assert f"{RECALL_HEADER}\n- (correction) {RULE_TITLE}: " in text
    [session] = ken_json(box, "sessions", "--all")
    assert (session["prompt_count"], session["first_prompt"]) == (2, PROMPT)
    told = ken_json(box, "told", session["id"])
    given = [(d["what"], d["item_ids"]) for d in told["deliveries"]]
    assert given == [
        ("pack", [pinned["id"]]),
        ("recall", [rule["id"]]),
        ("restart", []),
        ("pack", [pinned["id"]]),
        ("recall", [rule["id"]]),
    ]
    assert hook_log(box) == []
