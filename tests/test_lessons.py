"""Run lessons: the signals the hooks note, the correction and statement detectors, the
once-only Stop question, the quote check and the switch.

The hook payloads are the recorded ones of `tests/fixtures/hooks/` (prompt and Stop), and,
for the tool events, the fields Claude Code 2.1.332, Codex 0.171.0 and Gemini CLI 0.61.0
sent in `tests/agents/test_ken_lessons.py`'s runs.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import opened
from kenning import agents, items
from kenning import lessons as run_lessons
from kenning.config import BY_KEY, Config, parse_value
from kenning.errors import InvalidInput
from kenning.store import SessionQuery, Signal
from test_hooks import (
    PROMPT_EVENT,
    call_inproc,
    empty_store,
    payload,
    shop,
    template,
    write_config,
)

__all__ = ["empty_store", "shop", "template"]  # fixtures, used by name

CORRECTIONS = BY_KEY["lessons.corrections"].default
OPENERS = BY_KEY["lessons.statements"].default
ONE_OFF = BY_KEY["lessons.one_off"].default
STOP_EVENT = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent"}
TOOL_EVENT = {"claude": "PostToolUse", "codex": "PostToolUse", "gemini": "AfterTool"}
PROMPT = "No, don't use npm here — we use pnpm. Install the dependencies."


# ------------------------------------------------------------------------ detectors


@pytest.mark.parametrize(
    "prompt",
    [
        "No, don't use npm here",
        "no. use the other one",
        "Nope",
        "Actually, put it in the config file",
        "Don't touch the migrations",
        "don’t touch the migrations",  # a typographic apostrophe
        "Do not commit that",
        "Stop, that deletes the cache",
        "stop adding comments",
        "Wrong file.",
        "That's not it",
        "Not what I asked for",
        "Undo that",
        "revert the last change",
        "I said tabs",
        "Why did you delete the test?",
        '"No, the other branch"',
        "hmm, wrong",  # short and mostly a correction
        "ugh... no",
    ],
)
def test_a_correcting_prompt_is_a_correction(prompt: str) -> None:
    assert run_lessons.is_correction(prompt, CORRECTIONS)


@pytest.mark.parametrize(
    "prompt",
    [
        "No problem, carry on",
        "no worries, take your time",
        "Don't forget to run the tests",  # a request for more, not a correction
        "Do not hesitate to ask",
        "Stop the dev server and restart it",  # a task
        "Actually, that works. Thanks!",
        "Nothing else for today",  # "no" as part of a word
        "Now add the tests",
        "Notes go in docs/",
        "Install the dependencies",
        "Build it",  # short, and "it" is in "that's not it", but no correction
        "Why is the build slow?",
        "Please fix the wrong import in app.py",  # the word, but not opening the prompt
    ],
)
def test_look_alikes_are_not_corrections(prompt: str) -> None:
    assert not run_lessons.is_correction(prompt, CORRECTIONS)


def test_the_correcting_phrases_are_a_setting() -> None:
    assert not run_lessons.is_correction("Hmm, use yarn", CORRECTIONS)
    assert run_lessons.is_correction("Hmm, use yarn", [*CORRECTIONS, "hmm"])
    assert not run_lessons.is_correction("No, use yarn", ["wrong"])


@pytest.mark.parametrize(
    ("prompt", "found"),
    [
        (PROMPT, ["No, don't use npm here — we use pnpm."]),
        ("Always run ruff before committing.", ["Always run ruff before committing."]),
        ("From now on, write tests first. Then fix it.", ["From now on, write tests first."]),
        ("We decided to drop Python 3.9", ["We decided to drop Python 3.9"]),
        ("Never push to main!\nAnd fix the build", ["Never push to main!"]),
        ("Fix the build, but never skip the lint", ["Fix the build, but never skip the lint"]),
        ("Fix the build", []),
        ("Use tabs this time", []),
        ("Always answer in French, just for this answer", []),  # one-off
        ("Just this once, never mind the tests", []),
        ("Which tools do we usually use?", []),  # "we use" is not a word of it
        ("The never-ending build again", []),
    ],
)
def test_stated_preferences_are_found_and_one_offs_are_not(prompt: str, found: list[str]) -> None:
    assert run_lessons.statements(prompt, OPENERS, ONE_OFF) == found


def test_the_question_stop_asks_is_recognized_as_ours() -> None:
    assert run_lessons.is_ours(f"{run_lessons.ASK_MARK} Before you finish")
    assert not run_lessons.is_ours("Before you finish [kenning]")


# ------------------------------------------------------------------------ hook path


def turn(agent: str, repo: Path, prompt: str = PROMPT) -> str:
    """Start a session and send one prompt through the agent's recorded payloads."""
    call_inproc("SessionStart", agent, payload(agent, "SessionStart", repo))
    event = PROMPT_EVENT[agent]
    call_inproc(event, agent, payload(agent, event, repo, prompt=prompt))
    return str(payload(agent, "SessionStart", repo)["session_id"])


def stop(agent: str, repo: Path, **changes: Any) -> str:
    return call_inproc(
        STOP_EVENT[agent], agent, payload(agent, STOP_EVENT[agent], repo, **changes)
    )[1]


def tool(agent: str, repo: Path, name: str, args: dict[str, Any], **extra: Any) -> None:
    data = payload(agent, "SessionStart", repo)
    data.update(
        hook_event_name=extra.pop("event", TOOL_EVENT[agent]),
        tool_name=name,
        tool_input=args,
        **extra,
    )
    data.pop("source", None)
    call_inproc(str(data["hook_event_name"]), agent, data)


def session_signals() -> list[Signal]:
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(limit=5))
        return store.signals(session.id)


def asked(out: str, agent: str) -> str:
    """The reason of a Stop answer that asks the agent to go on ('' when it does not)."""
    if not out.strip():
        return ""
    answer = json.loads(out)
    assert answer["decision"] == agents.get(agent).stop_decision
    return str(answer["reason"])


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_correction_is_asked_about_once_quoting_the_prompt(agent: str, shop: Path) -> None:
    turn(agent, shop)
    assert [s.kind for s in session_signals()] == ["correction", "statement"]

    reason = asked(stop(agent, shop), agent)

    assert reason.startswith(run_lessons.ASK_MARK)
    assert f'The person corrected you: "{PROMPT}"' in reason
    assert "record_reflection" in reason
    # Never twice, whether or not the agent says it goes on because of a Stop hook.
    assert stop(agent, shop) == ""
    assert stop(agent, shop, stop_hook_active=True) == ""


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_a_session_with_no_signal_is_never_asked(agent: str, shop: Path) -> None:
    turn(agent, shop, "Summarize the README")
    assert session_signals() == []
    assert stop(agent, shop) == ""


def test_an_agent_already_going_on_is_not_asked(shop: Path) -> None:
    turn("claude", shop)
    assert stop("claude", shop, stop_hook_active=True) == ""
    assert asked(stop("claude", shop), "claude")  # the flag does not use up the question


@pytest.mark.parametrize("flag", ["true", "True", "1"])
def test_the_going_on_flag_given_as_a_string_is_read_as_yes(shop: Path, flag: str) -> None:
    turn("claude", shop)
    assert stop("claude", shop, stop_hook_active=flag) == ""
    assert asked(stop("claude", shop), "claude")


def test_a_session_whose_agent_saved_a_rule_already_is_not_asked(shop: Path) -> None:
    turn("claude", shop)
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(limit=5))
        items.add(
            store,
            "Use pnpm, not npm",
            kind=items.parse_kind("correction"),
            scope=items.parse_scope("repo:github.com/acme/shop"),
            provenance=session.provenance("mcp"),
        )
    assert stop("claude", shop) == ""


def test_lessons_off_notes_nothing_and_asks_nothing(shop: Path) -> None:
    write_config('[memory]\nlessons = "off"\n')
    turn("claude", shop)
    tool("claude", shop, "Bash", {"command": "exit 3"}, event="PostToolUseFailure", error="x")
    assert session_signals() == []
    assert stop("claude", shop) == ""


def test_the_switch_takes_ask_or_off_only() -> None:
    setting = BY_KEY["memory.lessons"]
    assert parse_value(setting, "off") == "off"
    with pytest.raises(InvalidInput, match="ask, off"):
        parse_value(setting, "sometimes")
    with pytest.raises(InvalidInput, match="ask, off"):
        assert Config(file={"memory": {"lessons": "always"}}).memory_lessons


def test_the_question_sent_back_as_a_prompt_is_not_the_persons(shop: Path) -> None:
    turn("gemini", shop, "Summarize the README")
    event = PROMPT_EVENT["gemini"]
    ours = f"{run_lessons.ASK_MARK} Before you finish: no, really"
    call_inproc(event, "gemini", payload("gemini", event, shop, prompt=ours))
    assert session_signals() == []
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(limit=5))
        assert store.session_prompts(session.id) == ["Summarize the README"]
        assert session.prompt_count == 1


# ------------------------------------------------------------------------ tool signals


def test_claude_failures_denials_and_error_results_are_noted(shop: Path) -> None:
    turn("claude", shop, "Build it")
    tool(
        "claude",
        shop,
        "Bash",
        {"command": "exit 3"},
        event="PostToolUseFailure",
        error="Exit code 3",
        is_interrupt=False,
    )
    tool(
        "claude",
        shop,
        "Bash",
        {"command": "sleep 9"},
        event="PostToolUseFailure",
        is_interrupt=True,
    )
    tool(
        "claude",
        shop,
        "Write",
        {"file_path": "/etc/x"},
        event="PermissionDenied",
        reason="auto mode",
    )
    tool("claude", shop, "mcp__x__y", {}, tool_response={"is_error": True, "content": "boom"})
    tool("claude", shop, "Read", {"file_path": "a"}, tool_response={"file": {}})
    assert [(s.kind, s.detail) for s in session_signals()] == [
        ("failure", "Bash: Exit code 3"),
        ("denial", "Write: auto mode"),
        ("failure", "mcp__x__y: boom"),
    ]


def test_gemini_after_tool_errors_are_failures(shop: Path) -> None:
    turn("gemini", shop, "Read it")
    error = {"message": "File not found: missing.txt", "type": "file_not_found"}
    tool("gemini", shop, "read_file", {"file_path": "missing.txt"}, tool_response={"error": error})
    tool("gemini", shop, "read_file", {"file_path": "README.md"}, tool_response={"llmContent": "x"})
    assert [(s.kind, s.detail) for s in session_signals()] == [
        ("failure", "read_file: File not found: missing.txt")
    ]


def test_codex_failures_are_read_from_the_rollout(shop: Path, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout-2026-12-01T19-26-56-x.jsonl"
    done = {"type": "item_completed", "item": {"id": "call_1", "status": "failed", "exit_code": 3}}
    ok = {"type": "item_completed", "item": {"id": "call_2", "status": "completed", "exit_code": 0}}
    rollout.write_text(
        "\n".join(json.dumps({"type": "event_msg", "payload": p}) for p in (done, ok)) + "\n"
    )
    turn("codex", shop, "Build it")
    for call_id in ("call_1", "call_2", "call_3"):
        tool(
            "codex",
            shop,
            "Bash",
            {"command": call_id},
            tool_response="",
            tool_use_id=call_id,
            transcript_path=str(rollout),
        )
    assert [(s.kind, s.detail) for s in session_signals()] == [("failure", "Bash: exit code 3")]


def test_the_same_call_three_times_in_a_row_is_a_repeat(shop: Path) -> None:
    turn("claude", shop, "Build it")
    same = {"command": "make", "description": "build"}
    tool("claude", shop, "Bash", same, tool_response={})
    tool("claude", shop, "Bash", {"command": "ls"}, tool_response={})  # breaks the row
    for _ in range(4):  # keys in another order are the same input
        tool("claude", shop, "Bash", {"description": "build", "command": "make"}, tool_response={})
    signals = session_signals()
    assert [s.kind for s in signals] == ["repeat"]
    assert signals[0].detail.startswith("Bash {")
    reason = asked(stop("claude", shop), "claude")
    assert "The same tool call ran 3 times in a row: Bash" in reason


TOKEN = "ghp_Rp1aB2cD3eF4gH5iJ6kL7mN8oP9qR0sT1uV2w"
PASSWORD = "Vb7Qx2Lm9Rt4-5K"


def test_a_tool_calls_secrets_are_stored_nowhere_and_said_nowhere(
    shop: Path, db_path: Path
) -> None:
    """The repeat's detail and the call kept to tell a repeat held the raw input: a token
    in a curl command, a password in a mysql one."""
    turn("claude", shop, "Build it")
    command = f'curl -H "Authorization: token {TOKEN}" https://api.github.com/user'
    for _ in range(3):
        tool("claude", shop, "Bash", {"command": command}, tool_response={})
    failing = f"mysql -u app --password {PASSWORD} shop"
    tool("claude", shop, "Bash", {"command": failing}, event="PostToolUseFailure", error="exit 1")
    signals = session_signals()
    assert [s.kind for s in signals] == ["repeat", "failure"]
    reason = asked(stop("claude", shop), "claude")
    for secret in (TOKEN, PASSWORD):
        assert secret not in reason
        assert all(secret not in s.detail for s in signals)
        for path in db_path.parent.iterdir():
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path


# ------------------------------------------------------------------------ statements


def test_a_statement_memory_already_holds_is_not_asked_about(shop: Path) -> None:
    with opened() as store:
        items.add(
            store,
            "Use pnpm in this repo",
            kind=items.parse_kind("preference"),
            scope=items.parse_scope("repo:github.com/acme/shop"),
        )
    turn("codex", shop, "We use pnpm.")
    assert [s.kind for s in session_signals()] == ["statement"]
    assert stop("codex", shop) == ""


def test_a_new_statement_is_asked_about_with_the_persons_words(shop: Path) -> None:
    turn("codex", shop, "Add the endpoint. From now on, every endpoint gets a test.")
    reason = asked(stop("codex", shop), "codex")
    assert (
        'The person stated a rule memory does not hold yet: "From now on, every endpoint '
        'gets a test."' in reason
    )


def test_a_one_off_instruction_is_never_asked_about(shop: Path) -> None:
    turn("claude", shop, "Always answer in French this time.")
    assert session_signals() == []
    assert stop("claude", shop) == ""


# ------------------------------------------------------------------------ quote check


def test_a_lesson_whose_quote_no_prompt_holds_is_dropped(shop: Path) -> None:
    turn("claude", shop)
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(limit=5))
        kept, dropped = run_lessons.check_quotes(
            store,
            session.id,
            [
                ("Use pnpm", "we use pnpm", "correction"),  # case and spacing aside
                ("Use pnpm", '"No,  don\'t use npm here - we use pnpm."', "lesson"),
                ("Deploy on Fridays", "always deploy on Fridays", "lesson"),
                ("Too short", "no", "lesson"),
            ],
        )
    assert [k[1] for k in kept] == ["we use pnpm", '"No,  don\'t use npm here - we use pnpm."']
    assert [d[0] for d in dropped] == ["Deploy on Fridays", "Too short"]


@pytest.mark.parametrize(
    "evidence",
    [
        "use smart quotes in the docs",
        'use "smart quotes" in the docs',
        "use 'smart quotes' in the docs",
        "use `smart quotes` in the docs",
        "use «smart quotes» in the docs",
        "use ‘smart quotes’ in the docs",
    ],
)
def test_a_quote_is_kept_whatever_quote_marks_either_side_uses(shop: Path, evidence: str) -> None:
    """Only `use "smart quotes"` was kept for a prompt with typographic double quotes."""
    turn("claude", shop, "Please use “smart quotes” in the docs from now on.")
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(limit=5))
        kept, dropped = run_lessons.check_quotes(
            store, session.id, [("Smart quotes in docs", evidence, "lesson")]
        )
    assert [k[1] for k in kept] == [evidence] and dropped == []


@given(
    st.text(alphabet="ab_' -é1١Ⅷ", max_size=8),
    st.text(alphabet="ab_' -é1١Ⅷ", min_size=1, max_size=4),
)
def test_a_phrase_opens_a_prompt_exactly_where_the_whole_word_pattern_matches(text, phrase):
    # `opens_with` stands for `re.match(re.escape(phrase) + r"(?![\w'])", text)`, which
    # `is_correction` compiled for every phrase on every prompt; Unicode letters and digits
    # (é, ١, Ⅷ) are word characters to both.
    pattern = re.escape(phrase) + r"(?![\w'])"
    assert run_lessons.opens_with(text, phrase) == bool(re.match(pattern, text))
    assert run_lessons.opens_with(phrase + text, phrase) == bool(re.match(pattern, phrase + text))


@pytest.mark.parametrize(
    ("said", "rule"),
    [
        ("No, never push to main directly; open a PR.", "never push to main directly"),
        ("No, that is wrong. Always run the linter before committing.", "run the linter"),
    ],
)
def test_a_correction_that_states_a_rule_is_quoted_once(shop: Path, said: str, rule: str) -> None:
    """The reason quoted the same prompt twice: as a correction and as a rule stated."""
    turn("claude", shop, said)
    reason = asked(stop("claude", shop), "claude")
    assert reason.count(rule) == 1, reason
    assert "The person corrected you" in reason


def test_a_rule_and_a_failure_repeated_in_three_turns_are_each_asked_about_once(
    shop: Path,
) -> None:
    """The reason listed the same rule three times and the same failure three times."""
    rule = "From now on, every endpoint gets a test."
    for _ in range(3):
        turn("claude", shop, f"Add the endpoint. {rule}")
        tool(
            "claude",
            shop,
            "Bash",
            {"command": "make test"},
            event="PostToolUseFailure",
            error="Exit code 2",
            is_interrupt=False,
        )
    reason = asked(stop("claude", shop), "claude")
    said = f'The person stated a rule memory does not hold yet (3 times): "{rule}"'
    assert reason.count(rule) == 1 and said in reason
    assert reason.count("Exit code 2") == 1
    assert "- A tool call failed (3 times): Bash: Exit code 2" in reason


def test_a_session_moved_into_a_repo_that_captures_nothing_notes_nothing_there(
    shop: Path, tmp_path: Path
) -> None:
    """A session begun in one repo whose agent goes into a repo with `capture = false`:
    the tool calls and turns there are that repo's, so nothing of them joins the session
    (a failure's output is the repo's content), and Stop asks nothing for them."""
    vault = tmp_path / "vault"
    vault.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=vault, check=True)
    subprocess.run(
        ["git", "remote", "add", "origin", "https://github.com/acme/vault.git"],
        cwd=vault,
        check=True,
    )
    write_config('[memory.repos."github.com/acme/vault"]\ncapture = false\n')
    turn("claude", shop, "Build it")
    for _ in range(3):
        tool("claude", vault, "Bash", {"command": "cat .env"}, tool_response={})
    tool(
        "claude",
        vault,
        "Bash",
        {"command": "deploy"},
        event="PostToolUseFailure",
        error="vault-only failure text",
    )
    assert session_signals() == []
    assert stop("claude", vault) == ""
    # Back in its own repo, the session's calls count again.
    tool("claude", shop, "Bash", {"command": "make"}, event="PostToolUseFailure", error="boom")
    assert [s.kind for s in session_signals()] == ["failure"]


def test_the_stop_question_shows_the_prompt_it_quotes_escaped(shop: Path) -> None:
    """The Stop hook's reason quoted the person's correcting prompt with its raw escape
    and bidi characters, which every other text given an agent escapes."""
    turn("codex", shop, "no, \x1b[2Kdon't mock the database \u202e in these tests")
    reason = asked(stop("codex", shop), "codex")
    assert "\\x1b[2Kdon't mock the database \\u202e in these tests" in reason
    assert "\x1b" not in reason and "\u202e" not in reason


def test_a_failed_calls_detail_keeps_the_error_at_the_end_of_its_output(shop: Path) -> None:
    """Three failing `curl` calls were asked about as "Bash: Exit code 7 % Total %
    Received % Xferd ...": the start of the progress meter, not curl's error at the end."""
    meter = "\n".join(
        ["  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current"]
        + [
            f"  0     0    0     0    0     0      0      0 --:--:-- 0:00:0{i} --:--:--     0"
            for i in range(9)
        ]
    )
    error = f"Exit code 7\n{meter}\ncurl: (7) Failed to connect to localhost port 9 after 0 ms"
    turn("claude", shop, "Fetch it")
    tool(
        "claude",
        shop,
        "Bash",
        {"command": "curl localhost:9"},
        event="PostToolUseFailure",
        error=error,
    )
    [signal] = session_signals()
    assert signal.detail.startswith("Bash: Exit code 7 … ")
    assert signal.detail.endswith("curl: (7) Failed to connect to localhost port 9 after 0 ms")
    assert len(signal.detail) <= 300
