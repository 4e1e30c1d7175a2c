"""Reading agents' transcripts (kenning.transcripts): the conversation for summaries,
and the person's last prompts for recall.

The Claude Code transcript and one Codex rollout in tests/fixtures/transcripts were
recorded from the real CLIs by tests/agents/test_ken_transcripts.py (which also checks
them against today's CLIs); the other Codex rollout is written by hand from the format,
to cover lines the recorded run does not have. The constants below are shared with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kenning.transcripts import (
    MAX_LINE_CHARS,
    TAIL_BYTES,
    Turn,
    conversation,
    last_model,
    user_turns,
)

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CLAUDE_FIXTURE = FIXTURES / "claude" / "tool-call-and-compact.jsonl"
CODEX_FIXTURE = FIXTURES / "codex" / "recorded-tool-call.jsonl"
TOKEN = "gh" + "p_pLWZCd7bTm19IVp53dwoYzg9YBeBkbFsDdy8"  # fake, in two parts on purpose
REDACTED = "[redacted:github_token]"
FIRST = "Export the orders as CSV. The deploy token is {}."

CLAUDE_PROMPTS = [FIRST.format(TOKEN), "Also export the refunds", "Now add a PDF export"]
CLAUDE_TURNS = [
    ("user", FIRST.format(REDACTED)),
    ("assistant", "Let me look for the export helper."),
    ("assistant", "The export is done.\norders.csv has every column."),
    ("user", "Also export the refunds"),
    ("assistant", "Refunds are exported too."),
    ("user", "Now add a PDF export"),
    ("assistant", "The PDF export is in place."),
]
CODEX_PROMPTS = [FIRST.format(TOKEN), "Also export the refunds"]
CODEX_TURNS = [
    ("user", FIRST.format(REDACTED)),
    ("assistant", "The export is done."),
    ("user", "Also export the refunds"),
    ("assistant", "Refunds are exported too."),
]


def turns_of(turns: list[Turn]) -> list[tuple[str, str]]:
    return [(t.role, t.text) for t in turns]


HANDWRITTEN = FIXTURES / "codex" / "handwritten-rollout.jsonl"
HANDWRITTEN_TURNS = [
    ("user", FIRST.format(REDACTED).replace("Export the orders as CSV", "Rename the CSV columns")),
    ("assistant", "Renamed the columns.\nThe tests pass."),
    ("user", "Use snake_case for the headers"),
    ("assistant", "Switched to snake_case."),
    ("user", "Is this header right?"),
    ("assistant", "Yes, that header is right."),
]


def records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


# ------------------------------------------------------------------------ Claude Code


def test_a_recorded_claude_transcript_gives_only_the_conversation_in_order() -> None:
    turns = conversation("claude", str(CLAUDE_FIXTURE))

    assert turns_of(turns) == CLAUDE_TURNS
    stamps = [t.at for t in turns]
    assert all(stamps) and stamps == sorted(stamps)  # type: ignore[type-var]


def test_the_recorded_claude_transcript_holds_what_is_left_out() -> None:
    """The fixture really has the lines the reader must skip (so the test above means
    something): thinking, tool calls and results, hook context, the compact summary,
    the /compact command messages and meta lines."""
    found = records(CLAUDE_FIXTURE)
    blocks = [
        block.get("type")
        for r in found
        if r.get("type") in ("user", "assistant") and isinstance(r["message"]["content"], list)
        for block in r["message"]["content"]
    ]
    assert {"thinking", "tool_use", "tool_result", "text"} <= set(blocks)
    assert any(r.get("isCompactSummary") for r in found)
    assert any(r.get("isMeta") for r in found)
    text = CLAUDE_FIXTURE.read_text(encoding="utf-8")
    for skipped in ("<command-name>/compact", "This is kenning", "NoSuchTool"):
        assert skipped in text
    everything = "\n".join(t.text for t in conversation("claude", str(CLAUDE_FIXTURE)))
    for skipped in (
        "Maybe the repo has an export tool",  # thinking
        "NoSuchTool",  # the call and its error
        "This session is being continued",  # the compact summary
        "<command-name>",
        "<local-command",
        "This is kenning",  # hook context
        "Summary: orders and refunds",
    ):
        assert skipped not in everything


def test_claude_assistant_lines_of_one_message_are_merged() -> None:
    ids = [
        r["message"].get("id")
        for r in records(CLAUDE_FIXTURE)
        if r.get("type") == "assistant"
        and any(b.get("type") == "text" for b in r["message"]["content"])
    ]
    assert len(ids) == 5 and len(set(ids)) == 4  # one message written as two lines
    merged = [t for t in conversation("claude", str(CLAUDE_FIXTURE)) if "\n" in t.text]
    assert turns_of(merged) == [("assistant", "The export is done.\norders.csv has every column.")]


def test_a_fake_token_in_a_prompt_is_redacted() -> None:
    raw = json.loads(CLAUDE_FIXTURE.read_text(encoding="utf-8").splitlines()[0])
    assert TOKEN in json.dumps(raw)  # the fixture holds it (escaped in the file)
    for path, agent in ((CLAUDE_FIXTURE, "claude"), (CODEX_FIXTURE, "codex")):
        turns = conversation(agent, str(path))
        assert turns[0].text == FIRST.format(REDACTED)
        assert all(TOKEN not in t.text for t in turns)


def test_claude_lines_of_subagents_meta_and_odd_shapes_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "claude.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Fix the totals"}},
        {
            "type": "assistant",
            "isSidechain": True,
            "message": {"id": "m_side", "content": [{"type": "text", "text": "subagent talk"}]},
        },
        {"type": "user", "isSidechain": True, "message": {"content": "subagent prompt"}},
        {"type": "user", "isMeta": True, "message": {"content": "Caveat: meta"}},
        {"type": "user", "message": {"content": "Caveat: The messages below were generated"}},
        {"type": "user", "message": {"content": [{"type": "text", "text": "In a list"}]}},
        {"type": "assistant", "message": "not a dict"},
        {"type": "summary", "summary": "Totals fixed", "leafUuid": "x"},
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "A"}]}},
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "B"}]}},
        {"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "C"}]}},
    ]
    text = "\n".join(json.dumps(line) for line in lines)
    path.write_text(f"{text}\nnot json\n[1]\n\n", encoding="utf-8")

    assert turns_of(conversation("claude", str(path))) == [
        ("user", "Fix the totals"),
        ("user", "In a list"),
        ("assistant", "A"),
        ("assistant", "B\nC"),
    ]


def test_blocks_injected_into_a_persons_turn_are_taken_out_and_their_words_kept(
    tmp_path: Path,
) -> None:
    """An IDE's opened-file block before the words dropped the whole turn (the person's
    correction never reached a summary), and a reminder after them was kept as theirs."""
    path = tmp_path / "claude.jsonl"
    opened = "<ide_opened_file>The user opened /x/orders.py</ide_opened_file>"
    lines = [
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "text", "text": opened},
                    {"type": "text", "text": "No, German CSV exports use semicolons"},
                ]
            },
        },
        {
            "type": "user",
            "message": {"content": "never npm\n\n<system-reminder>X</system-reminder>"},
        },
        {"type": "user", "message": {"content": "<system-reminder>only this</system-reminder>"}},
        {"type": "user", "message": {"content": "keep <b>bold</b> as typed"}},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    assert turns_of(conversation("claude", str(path))) == [
        ("user", "No, German CSV exports use semicolons"),
        ("user", "never npm"),
        ("user", "keep <b>bold</b> as typed"),
    ]


def test_a_deeply_nested_or_huge_line_is_skipped_and_the_prompts_around_it_stay(
    tmp_path: Path,
) -> None:
    path = tmp_path / "claude.jsonl"
    prompt = {"type": "user", "message": {"role": "user", "content": "Fix the totals"}}
    later = {"type": "user", "message": {"role": "user", "content": "Now the refunds"}}
    nested = '{"type": "user", "message": ' + "[" * 50_000 + "]" * 50_000 + "}"
    path.write_text(f"{json.dumps(prompt)}\n{nested}\n{json.dumps(later)}\n", encoding="utf-8")

    assert user_turns("claude", str(path)) == ["Fix the totals", "Now the refunds"]

    huge = json.dumps({"type": "user", "message": {"content": "x" * (MAX_LINE_CHARS + 1)}})
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"{huge}\n")
    assert turns_of(conversation("claude", str(path))) == [
        ("user", "Fix the totals"),
        ("user", "Now the refunds"),
    ]


# ------------------------------------------------------------------------------ Codex


def test_a_recorded_codex_rollout_gives_only_the_conversation() -> None:
    assert turns_of(conversation("codex", str(CODEX_FIXTURE))) == CODEX_TURNS
    text = CODEX_FIXTURE.read_text(encoding="utf-8")
    for present in ("function_call_output", "<environment_context>", '"developer"'):
        assert present in text


def test_a_codex_rollout_skips_instructions_tools_reasoning_and_events() -> None:
    turns = conversation("codex", str(HANDWRITTEN))

    assert turns_of(turns) == HANDWRITTEN_TURNS
    assert [t.at for t in turns] == [
        "2026-11-02T10:00:06.000Z",
        "2026-11-02T10:00:14.000Z",
        "2026-11-02T10:00:17.000Z",
        "2026-11-02T10:00:19.000Z",
        "2026-11-02T10:00:22.000Z",
        "2026-11-02T10:00:23.000Z",
    ]
    everything = "\n".join(t.text for t in turns)
    for skipped in (
        "permissions instructions",  # developer
        "This is kenning",  # developer: the pack
        "AGENTS.md",
        "<environment_context>",
        "Looking at the CSV writer",  # reasoning
        "rg",  # a function call
        "src/export.py",  # its output, and the patch
        "Summary: the CSV columns",  # compacted
        "unexpected role",
    ):
        assert skipped not in everything


# ------------------------------------------------------------------------- user_turns


def test_user_turns_gives_the_last_prompts_as_typed() -> None:
    assert user_turns("claude", str(CLAUDE_FIXTURE)) == CLAUDE_PROMPTS
    assert user_turns("claude", str(CLAUDE_FIXTURE), limit=1) == ["Now add a PDF export"]
    assert user_turns("codex", str(CODEX_FIXTURE), limit=5) == CODEX_PROMPTS
    assert user_turns("codex", str(HANDWRITTEN), limit=2) == [
        "Use snake_case for the headers",
        "Is this header right?",
    ]


def test_user_turns_reads_only_the_tail_of_a_long_transcript(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    filler = json.dumps(
        {"type": "attachment", "attachment": {"type": "prompt_snapshot", "text": "x" * 2000}}
    )
    early = [json.dumps({"type": "user", "message": {"content": f"Early {n}"}}) for n in range(3)]
    late = [json.dumps({"type": "user", "message": {"content": f"Late {n}"}}) for n in range(4)]
    path.write_text("\n".join([*early, *[filler] * 200, *late]) + "\n", encoding="utf-8")
    assert path.stat().st_size > TAIL_BYTES

    assert user_turns("claude", str(path), limit=10) == [f"Late {n}" for n in range(4)]
    assert user_turns("claude", str(path), limit=2) == ["Late 2", "Late 3"]
    # conversation() reads the whole file.
    assert [t.text for t in conversation("claude", str(path))][:3] == [
        "Early 0",
        "Early 1",
        "Early 2",
    ]


def test_missing_files_and_unknown_agents_give_nothing(tmp_path: Path) -> None:
    for agent, path in (
        ("claude", None),
        ("claude", str(tmp_path / "gone.jsonl")),
        ("claude", str(tmp_path)),
        ("gemini", str(CLAUDE_FIXTURE)),
    ):
        assert user_turns(agent, path) == []
        assert conversation(agent, path) == []


def test_the_model_is_read_from_the_recorded_transcripts(tmp_path: Path) -> None:
    assert last_model("claude", str(CLAUDE_FIXTURE)) == "claude-opus-5-5"
    assert last_model("codex", str(CODEX_FIXTURE)) is None  # Codex's hooks send the model
    assert last_model("gemini", str(CLAUDE_FIXTURE)) is None
    assert last_model("claude", str(tmp_path / "missing.jsonl")) is None
    assert last_model("claude", None) is None


def test_the_model_is_the_latest_real_one(tmp_path: Path) -> None:
    """A model switch mid-session gives the newer model; Claude Code's own made-up
    messages ("<synthetic>") and malformed lines are passed over."""
    path = tmp_path / "switch.jsonl"
    lines = [
        {"type": "assistant", "message": {"model": "claude-sonnet-4-5", "content": []}},
        {"type": "assistant", "message": {"model": "claude-opus-4-1", "content": []}},
        {"type": "user", "message": {"model": "not-a-reply", "content": "hi"}},
        {"type": "assistant", "message": {"model": "<synthetic>", "content": []}},
        {"type": "assistant", "message": {"model": 7}},
        {"type": "assistant", "message": "text"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n{not json\n")
    assert last_model("claude", str(path)) == "claude-opus-4-1"


def test_claude_s_last_prompts_read_from_the_end_are_the_user_turns_of_its_tail(tmp_path: Path):
    """Recall reads the person's last prompts on every prompt: from the end of the file,
    stopping once it has them, and the same prompts as reading the whole tail."""
    from kenning.agents import claude
    from kenning.agents.transcript import read_lines

    fixture = FIXTURES / "claude" / "tool-call-and-compact.jsonl"
    lines = fixture.read_text().splitlines()
    longer = tmp_path / "long.jsonl"
    prompts = [
        json.dumps({"type": "user", "message": {"role": "user", "content": f"prompt {n}"}})
        for n in range(6)
    ]
    longer.write_text("\n".join([*lines, *prompts[:3], *lines, *prompts[3:], lines[-1]]) + "\n")
    for path in (fixture, longer):
        every = [t.text for t in claude.turns(read_lines(str(path), claude.TAIL_BYTES))]
        users = [
            t.text
            for t in claude.turns(read_lines(str(path), claude.TAIL_BYTES))
            if t.role == "user"
        ]
        assert every  # the fixture has a conversation
        for limit in (1, 2, 3, 5, 50):
            assert claude.last_prompts(str(path), None, limit) == users[-limit:]
    assert claude.last_prompts(str(longer), None, 2) == ["prompt 4", "prompt 5"]
