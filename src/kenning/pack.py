"""Context packs: what an agent is told about where it is when it starts.

A pack opens with two short lines (what this memory is, the rule for writing to it and
how the agent it is for reaches memory itself: `Tools`), then sections in a fixed order:
pinned; preferences and corrections; decisions, facts and notes; current tasks (5 at
most); latest handoffs (3); recent sessions here (3). Within a section the most specific
scope comes first, then the newest; handoffs come in the order every face shows them
(`kenning.handoffs`). Items are added until the token budget is spent; what does not fit
is counted in a last line that points to `ken search`. The latest handoff keeps its room
(a quarter of the pack's at most) while the sections before it fill: where the last
session left the work is where a new one starts. Each item ends in `[m:<short id>]` so
an agent (or a person) can ask for it by id.

The opening never crowds out memories: both lines from 600 tokens, one short line from
150, none below that; a bigger budget never leaves memories less room. At any budget
(100 at least) the first memory, the top pinned item or rule, is given, cut with a
visible marker when it is longer than the room left. With nothing to tell, a pack is
the one short line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kenning import agents, handoffs
from kenning.ids import short_id
from kenning.model import Item, Session, kinds_where
from kenning.policy import unreviewed_from
from kenning.printable import clean
from kenning.store import ItemQuery, SessionQuery, Store
from kenning.tokens import estimate_tokens


@dataclass(frozen=True, slots=True)
class Tools:
    """How the agent a pack is for reaches memory itself, as its opening lines and last
    line tell it: kenning's MCP tools by the names that agent shows them (`form`, where
    `{tool}` is the tool's own name: OpenCode shows `memory_search` as
    `ken_memory_search`), or, with no `ken` MCP server registered (`form` None), `ken` in
    its shell. Every agent kenning integrates runs shell commands, and an agent's `ken
    add` there keeps to the rules its `memory_propose` would: the rule for writing always
    comes with a way to follow it, and no tool the agent lacks is named. Nor is their
    absence claimed: a server registered where kenning does not look (a project's
    `.mcp.json`, Claude Code's per-project list) is still there, and the shell works
    beside it.
    """

    form: str | None = "{tool}"

    def name(self, tool: str) -> str:
        return (self.form or "{tool}").format(tool=tool)

    @property
    def intro(self) -> str:
        if self.form is None:
            how = (
                "In the shell, `ken search WORDS` "
                'finds memories, `ken show ID` reads one, `ken add "TEXT" --kind KIND '
                '--evidence "WORDS"` saves one.'
            )
        else:
            names = ", ".join(
                self.name(t)
                for t in ("memory_search", "memory_get", "memory_propose", "memory_handoff")
            )
            how = f"Tools: {names} (MCP server `ken`)."
        return (
            "This is kenning, the memory the person's coding agents share: what they taught "
            "agents before, and where the work stands.\n"
            "Save only what the repo cannot tell: a correction, refusal, preference or "
            "decision, in the person's words, with what prompted it; where work stands "
            f"belongs in the issue. {how}"
        )

    @property
    def short_intro(self) -> str:
        if self.form is None:
            how = "with `ken add` in the shell; `ken search` finds the rest."
        else:
            propose, search = self.name("memory_propose"), self.name("memory_search")
            how = f"with {propose}; {search} finds the rest."
        return (
            "kenning is the memory the person's coding agents share: save only what the repo "
            "cannot tell (a correction, refusal, preference or decision, in the person's "
            f"words) {how}"
        )

    @property
    def finds(self) -> str:
        """What finds the memories a pack had no room for."""
        if self.form is None:
            return "`ken search WORDS` finds them"
        return f"`ken search WORDS` or {self.name('memory_search')} finds them"


# What a person looking (`ken pack`), and an agent kenning knows nothing of, is told.
GENERIC_TOOLS = Tools()
NO_TOOLS = Tools(None)  # no `ken` MCP server registered: `ken` in the shell
INTRO = GENERIC_TOOLS.intro
SHORT_INTRO = GENERIC_TOOLS.short_intro
MIN_BUDGET = 100
SHORT_INTRO_FROM = 150
INTRO_FROM = 600
MAX_TASKS = 5
MAX_HANDOFFS = 3
MAX_SESSIONS = 3
READ_PER_SECTION = 40
UNREVIEWED_PER_SECTION = 10  # agents' working notes no person reviewed, in one section
SESSION_READ_LIMIT = 50
# Handoffs read, the newest of every scope: enough for three once each session's own
# stands in for its automatic one.
HANDOFFS_READ = 3 * MAX_HANDOFFS
SECTIONS = (
    ("pinned", "Pinned"),
    ("rules", "Preferences and corrections"),
    ("knowledge", "Decisions, facts and notes"),
    ("tasks", "Current tasks"),
    ("handoffs", "Latest handoffs"),
    ("sessions", "Recent sessions here"),
)


def one_line(text: str) -> str:
    return " ".join(text.split())


def cut_to(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, never inside a `[redacted:kind]` marker
    (`kenning.redact`): one the cut would split is left out whole, not shown half-open."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    opened = head.rfind("[redacted:")
    if opened >= 0 and "]" not in head[opened:]:
        head = head[:opened]
    return head.rstrip()


HEADING = re.compile(r" {0,3}#{1,6}[ \t]+(.*?)[ \t#]*")
FENCE = re.compile(r" {0,3}(```|~~~)")


def body_line(body: str) -> str:
    """An item's body on one line. A Markdown heading outside a code block (a template's
    `## Context`) becomes the lead-in of what follows it (`Context: …`), not a `##`
    left in the middle of the line."""
    parts, fenced = [], False
    for line in body.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else HEADING.fullmatch(line)
        if heading and heading.group(1):
            lead = heading.group(1)
            parts.append(lead if lead[-1] in ":.?!" else lead + ":")
        else:
            parts.append(line)
    return one_line(" ".join(parts))


def render_item(item: Item, max_chars: int = 400, kind_label: bool = True) -> str:
    """One item as a Markdown bullet ending in its id marker; long bodies are cut.

    One line whatever the memory holds: a title with a carriage return, U+2028 or any
    other character `str.splitlines` breaks at would start a line of its own in what the
    agent reads (a forged `## Preferences and corrections` heading with no unreviewed
    label), so each is shown escaped, as `ken list` shows it (`printable.clean`). No
    agent's context tag either (`agents.defused`): a `</hook_context>` in a note would
    end Gemini's block of kenning's context early."""
    short = short_id(item.id)
    label = f"({item.kind.value}) " if kind_label else ""
    body = body_line(item.body)
    text = agents.defused(clean(f"{item.title}: {body}" if body else item.title, one_line=True))
    if len(text) > max_chars:
        text = text[: max(0, max_chars - 1)].rstrip() + f"… [cut: ken show {short}]"
    agent = unreviewed_from(item)
    origin = f" (from {agent}, unreviewed)" if agent else ""
    return f"- {label}{text}{origin} [m:{short}]"


def render_session(session: Session) -> str:
    when = (session.started_at or "")[:16].replace("T", " ")
    who = session.agent + (f" ({session.model})" if session.model else "")
    prompt = cut_to(one_line(session.first_prompt or ""), 160)
    commits = len(session.commits)
    tail = f"; {commits} commit{'s' if commits != 1 else ''}" if commits else ""
    quoted = f': "{prompt}"' if prompt else ""
    # The model's name is what the agent's hook payload said: one line too.
    return agents.defused(clean(f"- {when} UTC, {who}{quoted}{tail}", one_line=True))


@dataclass(frozen=True, slots=True)
class Pack:
    text: str
    items: tuple[Item, ...]
    sessions: tuple[Session, ...]
    omitted: int
    tokens: int
    scopes: tuple[str, ...]
    sections: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scopes": list(self.scopes),
            "items": [i.to_dict() for i in self.items],
            "sessions": [s.to_dict() for s in self.sessions],
            "omitted": self.omitted,
            "tokens": self.tokens,
            "text": self.text,
        }


def omitted_line(count: int, tools: Tools = GENERIC_TOOLS) -> str:
    return f"({count} more memor{'ies' if count != 1 else 'y'} here did not fit; {tools.finds}.)"


def _kinds_in(section: str) -> tuple[str, ...]:
    return tuple(k.value for k in kinds_where(lambda spec: spec.section == section))


SECTION_KINDS: dict[str, tuple[tuple[str, ...], bool | None, int]] = {
    # section: (kinds, from the KINDS table; pinned; most items read)
    "pinned": ((), True, READ_PER_SECTION),
    "rules": (_kinds_in("rules"), False, READ_PER_SECTION),
    "knowledge": (_kinds_in("knowledge"), False, READ_PER_SECTION),
    "tasks": (_kinds_in("tasks"), False, MAX_TASKS),
    "handoffs": (_kinds_in("handoffs"), False, MAX_HANDOFFS),
}


def gather(
    store: Store,
    scopes: Sequence[str],
    exclude: set[str] | frozenset[str],
    skip: Callable[[Item], bool] | None = None,
    exclude_repos: tuple[str, ...] = (),
) -> tuple[dict[str, list[Item]], int]:
    """Each section's candidates: scope by scope, most specific first, newest first
    (handoffs: in the order `handoffs.to_show` gives); and how many read were left out
    on purpose (by `skip`, or an automatic handoff its agent's own stands in for). What
    belongs to `exclude_repos` is left out in the reading itself
    (`ItemQuery.exclude_repos`): it takes no place of what the pack may give.

    Only as many as a pack could hold are read, so a pack costs the same with a
    hundred items or a hundred thousand.
    """
    out: dict[str, list[Item]] = {key: [] for key, _ in SECTIONS}
    skipped = 0
    for key, (kinds, pinned, most) in SECTION_KINDS.items():
        if key == "handoffs":
            out[key], left_out = _handoffs(store, scopes, exclude, skip, exclude_repos)
            skipped += left_out
            continue
        agents_own = 0  # agents' working notes no person reviewed, read so far
        for scope in scopes:
            room = most - len(out[key])
            if room <= 0:
                break
            found = store.list_items(
                ItemQuery(
                    scopes=(scope,),
                    kinds=kinds,
                    statuses=("active",),
                    pinned=pinned,
                    limit=room + len(exclude),
                    recent_first=True,
                    exclude_repos=exclude_repos,
                )
            )
            found = [i for i in found if i.id not in exclude]
            if skip is not None:
                kept = [i for i in found if not skip(i)]
                skipped += len(found) - len(kept)
                found = kept
            # An agent's unreviewed notes take at most UNREVIEWED_PER_SECTION places:
            # sixty of them in a workstream must not hide what a person approved for
            # the repo. The rest count among those that did not fit.
            kept = []
            for item in found:
                if unreviewed_from(item) is not None:
                    if agents_own >= UNREVIEWED_PER_SECTION:
                        continue
                    agents_own += 1
                kept.append(item)
            out[key] += kept[:room]
        # What people wrote or approved comes before agents' unreviewed notes.
        out[key].sort(key=lambda i: unreviewed_from(i) is not None)
    return out, skipped


def _handoffs(
    store: Store,
    scopes: Sequence[str],
    exclude: set[str] | frozenset[str],
    skip: Callable[[Item], bool] | None,
    exclude_repos: tuple[str, ...] = (),
) -> tuple[list[Item], int]:
    """The latest handoffs, in the order every face shows them (`handoffs.to_show`: a
    session's own stands in for its automatic one, wherever either went; the session
    active last first), and how many read were left out on purpose.

    Handoffs are read from every scope, not the most specific first: the agent's own may
    be in the project (its log.md) while its automatic one is in the workstream.
    """
    kinds, _, most = SECTION_KINDS["handoffs"]

    def keep(item: Item) -> bool:
        return item.id not in exclude and not (skip is not None and skip(item))

    found: list[Item] = []
    left_out = 0
    for scope in scopes:
        read = store.list_items(
            ItemQuery(
                scopes=(scope,),
                kinds=kinds,
                statuses=("active",),
                pinned=False,
                limit=HANDOFFS_READ + len(exclude),
                recent_first=True,
                exclude_repos=exclude_repos,
            )
        )
        read = [i for i in read if i.id not in exclude]
        kept = [i for i in read if keep(i)]
        left_out += len(read) - len(kept)
        found += kept
    found = sorted(found, key=lambda i: (handoffs.written_at(i), i.id), reverse=True)
    found = found[:HANDOFFS_READ]
    shown = handoffs.to_show(store, found, scopes=scopes, keep=keep, most=most)
    # Replaced on purpose, not "did not fit"; one from outside the scopes read (a branch
    # the agent moved to) is not among the memories here that the last line counts.
    ids = {i.id for i in shown}
    left_out += sum(1 for i in found if i.id not in ids)
    left_out -= sum(1 for i in shown[:most] if str(i.scope) not in scopes)
    return shown[:most], left_out


def opening(budget: int, tools: Tools = GENERIC_TOOLS) -> str:
    """The lines a pack of `budget` tokens opens with."""
    if budget >= INTRO_FROM:
        return tools.intro
    if budget >= SHORT_INTRO_FROM:
        return tools.short_intro
    return ""


def memory_room(budget: int, tools: Tools = GENERIC_TOOLS) -> int:
    """Tokens left for memories after the opening. Where a bigger budget would open with
    more, the room below it is capped, so that a bigger budget never leaves less."""
    room = budget - estimate_tokens(opening(budget, tools))
    for start in (SHORT_INTRO_FROM, INTRO_FROM):
        if budget < start:
            room = min(room, start - estimate_tokens(opening(start, tools)))
    return room


def cut_to_fit(item: Item, kind_label: bool, tokens: float, chars: float) -> str:
    """The item's line cut (with its marker) to at most `tokens` and `chars`; the
    shortest cut when even that does not fit."""
    low, high = 1, 400
    while low < high:
        mid = (low + high + 1) // 2
        line = render_item(item, max_chars=mid, kind_label=kind_label)
        if estimate_tokens(line) <= tokens and len(line) <= chars:
            low = mid
        else:
            high = mid - 1
    return render_item(item, max_chars=low, kind_label=kind_label)


HANDOFF_SHARE = 4  # the latest handoff keeps at most 1/4 of a pack's room


def _handoff_room(
    handoffs: Sequence[tuple[Item | Session, str, int]], limit: float, char_limit: float
) -> tuple[float, float]:
    """The tokens and characters kept for the latest handoff (its line and heading, at
    most a quarter of the room, but never less than its shortest cut) while the sections
    before it fill."""
    if not handoffs:
        return 0, 0
    latest, line, cost = handoffs[0]
    heading = "## " + dict(SECTIONS)["handoffs"]
    tokens = cost + estimate_tokens(heading)
    chars = len(line) + len(heading) + 3
    least_tokens, least_chars = tokens, chars
    if isinstance(latest, Item):
        # the shortest cut's cost depends on its id's characters: a quarter of a small
        # pack is sometimes under it, and then an older, shorter handoff took its place
        shortest = render_item(latest, max_chars=1, kind_label=False)
        least_tokens = estimate_tokens(shortest) + estimate_tokens(heading)
        least_chars = len(shortest) + len(heading) + 3
    return (
        min(tokens, max(limit / HANDOFF_SHARE, least_tokens)),
        min(chars, max(char_limit / HANDOFF_SHARE, least_chars)),
    )


def _fits_cut(item: Item, extra_tokens: int, tokens: float, chars: float) -> bool:
    """Whether the shortest cut of a handoff's line (no kind label) fits."""
    shortest = render_item(item, max_chars=1, kind_label=False)
    return estimate_tokens(shortest) + extra_tokens <= tokens and len(shortest) <= chars


def build_pack(
    store: Store,
    scopes: Sequence[str],
    *,
    budget: int = 1500,
    repo: str | None = None,
    exclude_session: str | None = None,
    exclude_items: set[str] | frozenset[str] = frozenset(),
    max_chars: int | None = None,
    skip: Callable[[Item], bool] | None = None,
    exclude_repos: Iterable[str] = (),
    tools: Tools = GENERIC_TOOLS,
) -> Pack:
    """The pack for `scopes` (most specific first) within `budget` tokens (raised to
    MIN_BUDGET) and, when given, `max_chars` characters: what a hook's output may hold.
    Items `skip` says the agent has already are left out; what belongs to
    `exclude_repos` (repos whose memory is not delivered) is never read nor counted.
    `tools` is how the agent it is for reaches memory itself (`Tools`)."""
    budget = max(budget, MIN_BUDGET)
    hidden = tuple(sorted(exclude_repos))
    by_section, skipped = gather(store, scopes, exclude_items, skip, hidden)
    total = store.count_items(
        ItemQuery(scopes=tuple(scopes), statuses=("active",), exclude_repos=hidden)
    )
    gathered = sum(len(found) for found in by_section.values())
    # What the agent has already (its own file's rules) did not "not fit": not counted.
    overflow = max(0, total - len(exclude_items) - skipped - gathered)
    sessions: list[Session] = []
    if repo:
        # Read past the sessions that did nothing (and this one) to find the last three.
        sessions = [
            s
            for s in store.list_sessions(SessionQuery(repo=repo, limit=SESSION_READ_LIMIT))
            if s.id != exclude_session and s.did_something
        ][:MAX_SESSIONS]
    if not gathered and not sessions and not overflow:
        # Nothing to tell: the rule and the tools, in one line.
        line = tools.short_intro
        return Pack(line, (), (), 0, estimate_tokens(line), tuple(scopes), {})
    intro = opening(budget, tools)

    # Each line and its cost, once: a fill with less room (below) costs them again.
    rendered: dict[str, list[tuple[Item | Session, str, int]]] = {}
    for key, _ in SECTIONS:
        lines_of: list[tuple[Item | Session, str]]
        if key == "sessions":
            lines_of = [(s, render_session(s)) for s in sessions]
        else:
            label = key in ("pinned", "knowledge")
            lines_of = [(i, render_item(i, kind_label=label)) for i in by_section[key]]
        rendered[key] = [(obj, line, estimate_tokens(line)) for obj, line in lines_of]
    heading_cost = {key: estimate_tokens(f"## {title}") for key, title in SECTIONS}

    def fill(
        limit: float, char_limit: float
    ) -> tuple[dict[str, list[str]], list[Item], list[Session], int]:
        used = 0
        chars = len(intro) + 2 if intro else 0
        given: list[Item] = []
        shown: list[Session] = []
        lines: dict[str, list[str]] = {}
        omitted = overflow
        # The latest handoff keeps its room (at most a quarter of it) from the sections
        # before it: what the last session left is where a new one starts.
        kept_tokens, kept_chars = _handoff_room(rendered["handoffs"], limit, char_limit)
        for key, title in SECTIONS:
            heading = f"## {title}"
            if key == "handoffs":
                kept_tokens, kept_chars = 0, 0
            for n, (obj, line, cost) in enumerate(rendered[key]):
                length = len(line) + 1
                if key not in lines:
                    cost += heading_cost[key]
                    length += len(heading) + 2
                tokens_left = limit - kept_tokens - used
                chars_left = char_limit - kept_chars - chars
                if cost > tokens_left or length > chars_left:
                    extra_tokens = cost - estimate_tokens(line)
                    extra_chars = length - len(line)
                    # The first memory is always given, and the latest handoff whenever
                    # its shortest cut fits: cut to the room left.
                    if isinstance(obj, Item) and (
                        not given
                        or (
                            key == "handoffs"
                            and n == 0
                            and _fits_cut(obj, extra_tokens, tokens_left, chars_left - extra_chars)
                        )
                    ):
                        line = cut_to_fit(
                            obj,
                            key in ("pinned", "knowledge"),
                            tokens_left - extra_tokens,
                            chars_left - extra_chars,
                        )
                        cost = extra_tokens + estimate_tokens(line)
                        length = extra_chars + len(line)
                    else:
                        omitted += 1 if isinstance(obj, Item) else 0
                        continue
                used += cost
                chars += length
                lines.setdefault(key, []).append(line)
                if isinstance(obj, Item):
                    given.append(obj)
                else:
                    shown.append(obj)
        return lines, given, shown, omitted

    def compose(lines: dict[str, list[str]], omitted: int) -> str:
        parts = []
        for key, title in SECTIONS:
            if lines.get(key):
                parts.append(f"## {title}\n" + "\n".join(lines[key]))
        if omitted:
            parts.append(omitted_line(omitted, tools))
        return "\n\n".join(parts)

    # Lines are costed one by one; the estimate of the whole text (with the line that
    # counts what did not fit) decides: all of it within the budget, and what follows
    # the opening within the room for memories. Over, fill again with less room.
    char_cap = max_chars if max_chars is not None else math.inf
    room = memory_room(budget, tools)
    token_limit: float = room
    char_limit = char_cap
    while True:
        lines, given, shown_sessions, omitted = fill(token_limit, char_limit)
        body = compose(lines, omitted)
        text = f"{intro}\n\n{body}" if intro and body else intro or body
        over_tokens = max(estimate_tokens(text) - budget, estimate_tokens(body) - room)
        over_chars = len(text) - char_cap
        if (over_tokens <= 0 and over_chars <= 0) or token_limit <= 0 or char_limit <= 0:
            break
        token_limit -= max(over_tokens, 0)
        char_limit -= max(over_chars, 0)
    return Pack(
        text,
        tuple(given),
        tuple(shown_sessions),
        omitted,
        estimate_tokens(text),
        tuple(scopes),
        lines,
    )


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, for `codex -c developer_instructions=…`.

    A JSON string is one, except that TOML also wants DEL (U+007F) escaped.
    """
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
