"""Onboarding: the rules a person already wrote for one agent become memory for all.

A repo's `CLAUDE.md` reaches Claude Code only, `AGENTS.md` Codex, `GEMINI.md` Gemini
CLI. `ken import --from FILE` reads one such file and proposes, in the repo, one memory
per bullet and one per `##` section's prose (titled by its heading), each with the file
and line it came from (a `file:` link, and the line as evidence). Headings, code
blocks, tables, quotes and HTML comments are not statements and are left out; the same
statement already in memory, in any status, is not proposed twice.

Once a person approves them, such memories are told to every agent except the ones
that load that file themselves (`Agent.instruction_files`): a rule written for Claude
reaches Codex and Gemini without repeating itself to Claude
(`deliver.loaded_by_itself`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kenning import items, lint, policy
from kenning.deliver import ONBOARD as HOW
from kenning.errors import InvalidInput
from kenning.model import MAX_EVIDENCE_BYTES, MAX_ITEM_BYTES, Item, Kind, Provenance, Scope, Status
from kenning.store import Store
from kenning.where import Where

_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
PARAGRAPH = "\x00"  # where one paragraph of a section's prose ends
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")
_DECISION = re.compile(r"\b(?:we (?:decided|chose|picked|settled)|decided|decision)\b", re.I)
_RULE = re.compile(
    r"^(?:always|never|prefer|use|do not|don't|avoid|keep|run|write|put|name|make|"
    r"add|follow|must|should)\b|\b(?:always|never|must|should|instead of|rather than)\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One statement of an instruction file: its text and the line it starts on."""

    line: int
    text: str

    @property
    def kind(self) -> Kind:
        return guess_kind(self.text)


def guess_kind(text: str) -> Kind:
    """A decision when it says one was made; a preference when it tells the agent what
    to do; otherwise a fact."""
    if _DECISION.search(text):
        return Kind.DECISION
    return Kind.PREFERENCE if _RULE.search(text) else Kind.FACT


def entries(text: str) -> list[Entry]:
    """Each bullet (with the lines that continue it), and each `##`-or-deeper section's
    prose as one (`Heading: first paragraph`, later paragraphs its body), of a Markdown
    instruction file, in file order. Prose under the file's `#` title, or before any
    heading, introduces the file: left out."""
    out: list[Entry] = []
    heading: tuple[int, str] | None = None
    prose: list[tuple[int, str]] = []
    bullet: list[tuple[int, str]] = []
    fenced = commented = gap = False
    text = text.removeprefix("\ufeff")  # a byte order mark is no part of the first line

    def end_bullet() -> None:
        if bullet:
            out.append(Entry(bullet[0][0], " ".join(t for _, t in bullet).replace(" \n ", "\n")))
            bullet.clear()

    def end_section() -> None:
        end_bullet()
        if prose and heading is not None:  # prose under the title only introduces
            paragraphs = " ".join(t for _, t in prose).split(PARAGRAPH)
            first, rest = paragraphs[0].strip(), [p.strip() for p in paragraphs[1:]]
            text = "\n".join([f"{heading[1]}: {first}", *(p for p in rest if p)])
            out.append(Entry(heading[0], text))
        prose.clear()

    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        indented = raw[:1].isspace()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            if bullet and indented:  # a block inside a bullet leaves it open
                gap = False
            else:
                end_bullet()
            continue
        if commented or line.startswith("<!--"):
            commented = "-->" not in line
            continue
        if fenced:
            continue
        if bullet and gap:
            gap = False
            if line and indented and not _BULLET.match(raw):
                bullet.append((number, "\n"))  # a paragraph of the bullet, indented under it
            else:
                end_bullet()
        if not line and bullet:
            gap = True  # the bullet may go on after a blank line, indented
            continue
        if found := _HEADING.match(line):
            end_section()
            level, title = len(found.group(1)), found.group(2).strip()
            heading = (number, title) if level >= 2 and title else None
            continue
        if not line or line.startswith(("|", ">")):
            end_bullet()
            if prose and prose[-1][1] != PARAGRAPH:
                prose.append((number, PARAGRAPH))
            continue
        if found := _BULLET.match(raw):
            end_bullet()
            bullet.append((number, _CHECKBOX.sub("", found.group(2).strip())))
        elif bullet and indented:
            bullet.append((number, line))  # a wrapped bullet goes on, indented
        else:
            end_bullet()
            prose.append((number, line))
    end_section()
    return [e for e in out if e.text.strip()]


@dataclass(frozen=True, slots=True)
class Onboarded:
    """What reading one instruction file did (or, for a dry run, would do)."""

    path: str
    proposed: tuple[Item, ...]
    already: tuple[Entry, ...]  # the same statement is in memory already
    too_long: tuple[Entry, ...]  # over the item limit: left for the person to split


def read_file(
    store: Store,
    path: Path,
    scope: Scope,
    *,
    dry_run: bool = False,
    actor: policy.Actor | None = None,
) -> Onboarded:
    """Propose the statements of the instruction file at `path` in `scope` (the repo)."""
    text = lint.read_instructions(path, strict=True)
    found = entries(text)
    if not found:
        raise InvalidInput(f"{path} holds no bullets or sections to propose")
    where = str(path.resolve())
    who = policy.resolve(actor)
    chosen: list[tuple[Entry, Item]] = []
    keys: set[str] = set()  # the statements chosen so far
    already: list[Entry] = []
    too_long: list[Entry] = []
    # Every entry is checked before any is proposed: one that cannot be stored (a
    # secret) stops the file, named by its line, with nothing half done.
    for entry in found:
        if len(entry.text.encode("utf-8")) > MAX_ITEM_BYTES:
            too_long.append(entry)
            continue
        try:
            item = items.new_item(
                entry.text,
                scope=scope,
                kind=entry.kind,
                links=[f"file:{where}"],
                evidence=f"{path.name}:{entry.line}: {entry.text}"[:MAX_EVIDENCE_BYTES],
                provenance=Provenance(who=who.agent or "user", how=HOW),
            )
        except InvalidInput as exc:
            raise InvalidInput(f"{path.name}:{entry.line}: {exc}; nothing was proposed") from None
        key = items.statement_key(item.text)
        if key in keys or items.same_text(store, item, limit=50):
            already.append(entry)
            continue
        keys.add(key)
        chosen.append((entry, item))
    proposed = [
        item
        if dry_run
        else items.add(
            store,
            entry.text,
            scope=scope,
            kind=entry.kind,
            status=Status.PROPOSED,
            links=[f"file:{where}"],
            evidence=item.evidence,
            provenance=item.provenance,
            actor=who,
        )
        for entry, item in chosen
    ]
    return Onboarded(where, tuple(proposed), tuple(already), tuple(too_long))


def files_here(where: Where) -> list[Path]:
    """The instruction files at the top of the repo here, which `ken import --from` can
    read: what `ken integrate` points out."""
    if where.git is None:
        return []
    return [
        where.git.root / name
        for name in lint.INSTRUCTION_FILES
        if (where.git.root / name).is_file()
    ]
