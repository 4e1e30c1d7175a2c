"""Run lessons and the end-of-task check: what a session taught, asked for once at Stop.

The hooks note *signals* per session (kenning.store.signals): a tool call that failed or
was denied (where the agent's after-tool hook says so), the same tool call (name and
input) three times in a row, a prompt that corrects the agent (it opens with, or is
mostly, one of `lessons.corrections`), and a preference, convention or decision the person
stated (a sentence opening with one of `lessons.statements`, "always", "we use", …, and
holding none of `lessons.one_off`, "this time", …). Every prompt is kept too, redacted:
a lesson must quote one.

At Stop, a session with a signal (a statement counts only while memory holds nothing
like it) and no reflection yet is asked, once, to call `record_reflection`: the question
quotes the correcting prompts and the statements, so the agent has the person's words
to hand. Asking is marked before the question goes out, so a session is never asked
twice, and agents' "already continuing" flag (`stop_hook_active`) is never asked at all.
`record_reflection` keeps a lesson only when its evidence is found in one of the
session's prompts (kenning.lessons.check_quotes); the others are dropped and logged.

Everything here is plain string work and one or two short SQL statements: it runs on the
hook path, on every prompt and every tool call.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kenning.agents.agent import ToolUse
from kenning.config import Config
from kenning.model import Session
from kenning.printable import clean
from kenning.redact import redact
from kenning.store import Signal, Store

# What Stop asks opens with this: Gemini sends the question back as a prompt, which is
# then not the person's (not recorded, no signal, no recall).
ASK_MARK = "[kenning]"
REPEATS = 3  # the same tool call this many times in a row is a signal
MAX_PROMPT_CHARS = 4000  # of each prompt kept for the quote check
MAX_QUOTE_CHARS = 400  # of a prompt quoted in the question
MIN_QUOTE_CHARS = 4  # a shorter quote proves nothing
MOSTLY_WORDS = 6  # a prompt of at most this many words is "mostly" a correction when…
# …at least half of its words belong to correcting phrases.

# Look-alikes that open as a correction does but are not one: thanks, reassurance, a
# reminder or request ("don't forget to…" asks for something new: nothing was wrong),
# and "stop" with an object ("stop the server" is a task).
NOT_CORRECTIONS = (
    r"no (problem|problems|worries|rush|hurry|thanks|need to (worry|hurry|rush))\b",
    r"(don't|do not) (forget|hesitate|worry)\b",
    r"stop (the|a|an|my|our|your|this|these|those|all|any)\b",
    r"actually,? (that|it|this) (works|worked|looks good|is fine|was fine)\b",
)
_NOT_CORRECTION = re.compile("^(" + "|".join(NOT_CORRECTIONS) + ")")
REFLECTION_TAG = "reflection"  # on what record_reflection saves
RULE_KINDS = ("preference", "correction", "decision", "fact", "lesson")
SIGNAL_KINDS = ("correction", "statement", "failure", "denial", "repeat")


def _plain(text: str) -> str:
    """Lower case, one kind of apostrophe, quote and dash, single spaces."""
    text = text.lower().translate(str.maketrans("‘’‛`´“”„", "'''''\"\"\"", ""))
    text = re.sub(r"[‐‑‒–—―]", "-", text)
    return " ".join(text.split())


# Every quote mark a prompt or a quote of it may use: straight, typographic, low, prime,
# backtick, acute, guillemets, full-width. The quote check drops them all on both sides, so
# `use 'smart quotes'` quotes `use “smart quotes”`.
QUOTE_MARKS = "\"'`´‘’‚‛“”„‟«»‹›′″〝〞〟＂＇"
_NO_QUOTES = str.maketrans("", "", QUOTE_MARKS)


def _bare(text: str) -> str:
    """`_plain` with no quote marks at all: what the quote check compares."""
    return " ".join(_plain(text).translate(_NO_QUOTES).split())


def _opening(text: str) -> str:
    return re.sub(r"^[\s\"'(\[*_>-]+", "", _plain(text))


def is_ours(prompt: str) -> bool:
    """Whether a prompt is the question Stop asked, sent back (Gemini)."""
    return prompt.lstrip().startswith(ASK_MARK)


def is_correction(prompt: str, phrases: Sequence[str]) -> bool:
    """Whether a prompt corrects the agent: it opens with one of `phrases` (as whole
    words), or it is short and mostly made of them; look-alikes (NOT_CORRECTIONS) are
    not corrections."""
    text = _opening(prompt)
    if not text or _NOT_CORRECTION.match(text):
        return False
    wanted = [_plain(p) for p in phrases if p.strip()]
    if any(opens_with(text, phrase) for phrase in wanted):
        return True
    words = re.findall(r"[\w']+", text)
    if not words or len(words) > MOSTLY_WORDS:
        return False
    # Only the one-word phrases count here: "it" of "that's not it" is no correction.
    vocabulary = {p for p in wanted if re.fullmatch(r"[\w']+", p)}
    return sum(w in vocabulary for w in words) * 2 >= len(words)


def opens_with(text: str, phrase: str) -> bool:
    r"""Whether `text` opens with `phrase` as whole words: `re.match(re.escape(phrase) +
    r"(?![\w'])", text)` without compiling a pattern per phrase on every prompt."""
    if not text.startswith(phrase):
        return False
    after = text[len(phrase) : len(phrase) + 1]
    return not after or not (after.isalnum() or after in "_'")


_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def statements(prompt: str, openers: Sequence[str], one_off: Sequence[str]) -> list[str]:
    """The sentences of a prompt that state a lasting preference, convention or decision:
    one of `openers` begins the sentence or a clause of it ("No, don't use npm — we use
    pnpm"), and none of `one_off` is in it."""
    wanted = [_plain(o) for o in openers if o.strip()]
    if not wanted:
        return []
    opener = re.compile(
        r"(?:^|[,;:(-]\s*|\band\s+|\bbut\s+)(?:" + "|".join(map(re.escape, wanted)) + r")(?![\w'])"
    )
    once = [_plain(o) for o in one_off if o.strip()]
    found = []
    for sentence in _SENTENCES.split(prompt.strip()):
        plain = _opening(sentence)
        if plain and opener.search(plain) and not any(o in plain for o in once):
            found.append(" ".join(sentence.split()))
    return found


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def note_prompt(store: Store, session: Session, prompt: str, config: Config) -> None:
    """Keep the prompt (for the quote check) and note what it signals."""
    text = redact(prompt.strip()).text
    if not text:
        return
    store.add_prompt(session.id, text[:MAX_PROMPT_CHARS])
    if config.memory_lessons != "ask":
        return
    if is_correction(text, config.lessons_corrections):
        store.add_signal(session.id, "correction", _clip(text, MAX_QUOTE_CHARS))
    for sentence in statements(text, config.lessons_statements, config.lessons_one_off):
        store.add_signal(session.id, "statement", _clip(sentence, MAX_QUOTE_CHARS))


def note_tool(store: Store, session: Session, tool: ToolUse) -> None:
    """Note a tool call: its failure or denial, and a third same call in a row."""
    # Only a digest of the call is kept to tell a repeat: its input may hold a secret.
    key = hashlib.sha256(f"{tool.name}\0{tool.input}".encode()).hexdigest()
    if store.note_call(session.id, key) == REPEATS:
        store.add_signal(session.id, "repeat", _clip(redact(f"{tool.name} {tool.input}").text, 200))
    if tool.outcome != "ok":
        kind = "failure" if tool.outcome == "failed" else "denial"
        detail = f"{tool.name}: {tool.detail}" if tool.detail else tool.name
        store.add_signal(session.id, kind, _clip(redact(detail).text, 300))


def _held(store: Store, scopes: Sequence[str], sentence: str, openers: Sequence[str]) -> bool:
    """Whether memory here holds (active or waiting) something with the words of a
    statement, less its opener ("we use pnpm" is held by "Use pnpm, not npm")."""
    from kenning import items
    from kenning.errors import InvalidInput
    from kenning.recall.words import STOP_WORDS

    text = _plain(sentence)
    for opener in sorted((_plain(o) for o in openers), key=len, reverse=True):
        text = re.sub(r"(?<![\w'])" + re.escape(opener) + r"(?![\w'])", " ", text)
    words = [w for w in re.findall(r"[a-z0-9][\w-]*", text) if w not in STOP_WORDS][:6]
    if not words:
        return True  # nothing to keep
    try:
        found = items.search(
            store,
            " ".join(words),
            scopes=scopes,
            statuses=("active", "proposed"),
            limit=1,
            fill=False,
        )
    except InvalidInput:
        return False
    return bool(found)


def _saved_a_rule(store: Store, session: Session) -> bool:
    """Whether the session's agent already saved a rule (memory_propose of a correction,
    a preference, ...): it acted on what the person taught, so it is not asked."""
    from kenning.store import ItemQuery

    query = ItemQuery(session_id=session.id, kinds=RULE_KINDS, statuses=(), include_expired=True)
    # What the person stored with /remember is theirs, not the agent acting on a lesson.
    return any(i.provenance.how != "slash" for i in store.list_items(query))


@dataclass(frozen=True, slots=True)
class Question:
    """What Stop asks a session, and the signals it asks about."""

    text: str
    signals: tuple[Signal, ...]


def question(store: Store, config: Config, session: Session) -> Question | None:
    """What to ask this session at Stop, or None (nothing qualifies, asked already, a
    reflection recorded, or `memory.lessons = "off"`). Asking is recorded here."""
    if config.memory_lessons != "ask":
        return None
    state = store.lesson_state(session.id)
    if state.asked_at or state.reflected_at:
        return None
    found = store.signals(session.id)
    if not found or _saved_a_rule(store, session):
        return None
    scopes = store.session_scopes(session.id)
    openers = config.lessons_statements
    kept = [
        s for s in found if s.kind != "statement" or not _held(store, scopes, s.detail, openers)
    ]
    if not kept or not store.mark_lesson(session.id, "asked"):
        return None
    return Question(_ask(kept), tuple(kept))


_SAID = {
    "correction": "The person corrected you",
    "statement": "The person stated a rule memory does not hold yet",
    "failure": "A tool call failed",
    "denial": "A tool call was denied",
    "repeat": f"The same tool call ran {REPEATS} times in a row",
}


def _ask(found: Sequence[Signal]) -> str:
    lines = [
        f"{ASK_MARK} Before you finish: this session may hold a lesson for later sessions.",
    ]
    # The same rule stated in three prompts, or the same call failing three times, is
    # one line, with how many times.
    times: dict[tuple[str, str], int] = {}
    for signal in found:
        times[(signal.kind, signal.detail)] = times.get((signal.kind, signal.detail), 0) + 1
    # A prompt that corrects and states a rule at once ("No, never push to main; open a
    # PR", "No, that is wrong. Always run the linter first.") is quoted once, as the
    # correction: a rule it quotes already is not quoted again.
    corrected = [detail for kind, detail in times if kind == "correction"]
    times = {
        (kind, detail): count
        for (kind, detail), count in times.items()
        if not (kind == "statement" and any(detail in said for said in corrected))
    }
    shown: dict[str, int] = {}
    for (kind, detail), count in times.items():
        shown[kind] = shown.get(kind, 0) + 1
        if shown[kind] > 3:
            continue
        # what the person typed or a tool printed, shown as every text given an agent is
        said = clean(detail, one_line=True)
        quoted = f'"{said}"' if kind in ("correction", "statement") else said
        again = f" ({count} times)" if count > 1 else ""
        lines.append(f"- {_SAID[kind]}{again}: {quoted}")
    lines.append(
        "If the person taught something that should hold from now on (a correction, a "
        "preference, a convention, a decision), call the record_reflection tool of the "
        "ken MCP server once, with at most three lessons, each with the person's own "
        "words, quoted exactly from their prompt, as evidence. Leave out one-off "
        "instructions and anything the repo itself shows. If nothing qualifies, just "
        "finish: you will not be asked again."
    )
    return "\n".join(lines)


def check_quotes(
    store: Store, session_id: str, lessons: Sequence[tuple[str, str, str]]
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(kept, dropped): a lesson is kept when its evidence is found, as written (case,
    quote marks, dashes and spacing aside), in one of the session's prompts."""
    prompts = [_bare(p) for p in store.session_prompts(session_id)]
    kept, dropped = [], []
    for lesson in lessons:
        quote = _quote(lesson[1])
        if len(quote) >= MIN_QUOTE_CHARS and any(quote in p for p in prompts):
            kept.append(lesson)
        else:
            dropped.append(lesson)
    return kept, dropped


def _quote(evidence: str) -> str:
    return _bare(redact(evidence).text).strip(" .,;:!?")


def why_dropped(evidence: str) -> str:
    """Why `check_quotes` dropped a lesson with this evidence, in a person's words."""
    if len(_quote(evidence)) < MIN_QUOTE_CHARS:
        return (
            f"its evidence is under {MIN_QUOTE_CHARS} characters: quote more of the person's words"
        )
    return "its evidence is not in any of this session's prompts"


def reflected(store: Store, session_id: str) -> None:
    store.mark_lesson(session_id, "reflected")


def lessons_of(store: Store, session_id: str | None = None) -> list[dict[str, Any]]:
    """What reflections recorded (tagged `reflection`), oldest first, each with the
    session's signal that caused it: the correction or statement its quote comes from,
    else the session's first signal."""
    from kenning.store import ItemQuery

    query = ItemQuery(
        tags=(REFLECTION_TAG,), statuses=(), include_expired=True, session_id=session_id
    )
    signals_by: dict[str, list[Signal]] = {}
    out: list[dict[str, Any]] = []
    for item in sorted(store.list_items(query), key=lambda i: i.created_at):
        sid = item.provenance.session or ""
        if sid and sid not in signals_by:
            signals_by[sid] = store.signals(sid)
        out.append(
            {
                "item": item,
                "session": sid or None,
                "signal": _cause(item.evidence, signals_by.get(sid, [])),
            }
        )
    return out


def _cause(evidence: str, found: Sequence[Signal]) -> Signal | None:
    quote = _bare(evidence).strip(" .,;:!?")
    for signal in found:
        if (
            signal.kind in ("correction", "statement")
            and quote
            and (quote in _bare(signal.detail) or _bare(signal.detail) in quote)
        ):
            return signal
    return found[0] if found else None
