"""Lint: what in the store may no longer be true or useful. It reports; a person decides.

`against` reads the instruction files agents load on their own (CLAUDE.md, AGENTS.md,
GEMINI.md): a memory that repeats one of their lines is no memory (the agent reads it
already), and one that contradicts a line tells the agent two things. Lines are compared
as curation compares memories (`kenning.statements`), redacted as the store redacts a
memory, so a finding never quotes a secret the store would not keep.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kenning import paths, statements
from kenning.curate import FOLDABLE, covers, related
from kenning.deliver import ONBOARD
from kenning.errors import InvalidInput
from kenning.ids import short_id
from kenning.items import cap_may_archive
from kenning.model import Item, Kind, Status
from kenning.redact import redact
from kenning.store import ItemQuery, Store, now_iso


@dataclass(frozen=True, slots=True)
class Finding:
    # missing_file, expired_task, unused, duplicate, near_duplicate, contradiction,
    # capped, over_cap, in_instructions, contradicts_instructions
    rule: str
    item_id: str
    title: str
    detail: str
    file: str | None = None  # an instruction file, and the line in it
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rule": self.rule,
            "id": self.item_id,
            "short_id": short_id(self.item_id),
            "title": self.title,
            "detail": self.detail,
        }
        if self.file:
            data |= {"file": self.file, "line": self.line}
        return data


def _fingerprint(item: Item) -> str:
    words = re.findall(r"\w+", f"{item.title} {item.body}".lower())
    return hashlib.sha1(" ".join(words).encode()).hexdigest()


def lint(
    store: Store,
    *,
    unused_days: int = 90,
    scopes: tuple[str, ...] = (),
    cap: int = 0,
    exclude_repos: tuple[str, ...] = (),
    known: Callable[[Item], bool] | None = None,
) -> list[Finding]:
    """What may no longer be true or useful; `cap` is `memory.max_active_per_scope`.
    What belongs to `exclude_repos` (`ItemQuery.exclude_repos`), or `known` leaves out
    (an agent's shell: another agent's proposal), is not looked at."""
    now = now_iso()
    items = [
        item
        for item in store.list_items(
            ItemQuery(
                scopes=scopes,
                statuses=("active", "proposed"),
                include_expired=True,
                exclude_repos=exclude_repos,
            )
        )
        if known is None or known(item)
    ]
    cutoff = (datetime.now(UTC) - timedelta(days=unused_days)).strftime("%Y-%m-%dT%H:%M:%S")
    findings: list[Finding] = []
    seen: dict[str, Item] = {}
    # Oldest first, so a duplicate is reported on the later copy and names the original.
    for item in sorted(items, key=lambda i: (i.created_at, i.id)):
        for link in item.links:
            if link.type != "file":
                continue
            path = Path(link.target).expanduser()
            if not path.is_absolute() and item.provenance.cwd:
                path = Path(paths.os_path(item.provenance.cwd)) / path
            if not path.exists():
                findings.append(
                    Finding("missing_file", item.id, item.title, f"{link} does not exist")
                )
        if item.kind is Kind.TASK and item.expires_at and item.expires_at <= now:
            findings.append(
                Finding("expired_task", item.id, item.title, f"expired {item.expires_at[:10]}")
            )
        if item.status is Status.ACTIVE and item.idle_since < cutoff:
            last = item.last_used_at
            never = f"last used {last[:10]}" if last else "never used"
            findings.append(
                Finding("unused", item.id, item.title, f"{never} in {unused_days} days")
            )
        key = f"{item.scope}|{_fingerprint(item)}"
        if key in seen:
            other = seen[key]
            findings.append(
                Finding(
                    "duplicate",
                    item.id,
                    item.title,
                    f"same text as {short_id(other.id)} in {item.scope}",
                )
            )
        else:
            seen[key] = item
    exact = {f.item_id for f in findings if f.rule == "duplicate"}
    return (
        findings
        + _relation_findings(store, items, exact)
        + _cap_findings(store, items, scopes, cap, exclude_repos)
    )


def _relation_findings(store: Store, items: list[Item], exact: set[str]) -> list[Finding]:
    """Near-duplicates and contradictions, as curation reads them (`curate.related`),
    between memories that apply in the same place (one's scope covers the other's: in
    two unrelated repos, two rules may differ and both be right). Reported on the newer
    of the two; `ken curate` proposes what to do about them."""
    copies, reversals = related(store, items)
    findings = []
    for rule, pairs, says in (
        ("near_duplicate", copies, "says what {} says"),
        ("contradiction", reversals, "contradicts {}"),
    ):
        for older, newer, why in pairs:
            if newer.id in exact or not (
                covers(older.scope, newer.scope) or covers(newer.scope, older.scope)
            ):
                continue
            where = f"in {older.scope}" if older.scope == newer.scope else f"({older.scope})"
            detail = f"{says.format(short_id(older.id))} {where}: {why}"
            findings.append(Finding(rule, newer.id, newer.title, detail))
    return findings


def _cap_findings(
    store: Store,
    items: list[Item],
    scopes: tuple[str, ...],
    cap: int,
    exclude_repos: tuple[str, ...],
) -> list[Finding]:
    """Memories the cap archived (until a person restores or dismisses them), and scopes
    over the cap (after it was lowered: the next memory written there archives)."""
    findings = [
        Finding(
            "capped",
            item.id,
            item.title,
            f"archived by the cap of active memories in {item.scope} on "
            f"{item.updated_at[:10]}: `ken restore` brings it back, `ken dismiss` "
            "keeps it out of this report",
        )
        for item in store.list_items(
            ItemQuery(
                scopes=scopes,
                statuses=("archived",),
                include_expired=True,
                exclude_repos=exclude_repos,
            )
        )
        if item.archive_reason == "cap"
    ]
    if cap > 0:
        # Counted as the cap counts (every active memory), with what it leaves alone said.
        told = [
            i
            for i in items
            if i.status is Status.ACTIVE and not (i.expires_at and i.expires_at <= now_iso())
        ]
        counts = Counter(str(i.scope) for i in told)
        movable = Counter(str(i.scope) for i in told if cap_may_archive(i))
        for scope, count in sorted(counts.items()):
            if count > cap:
                findings.append(
                    Finding("over_cap", "", scope, _over_cap(count, movable[scope], cap))
                )
    return findings


def _over_cap(count: int, movable: int, cap: int) -> str:
    said = f"{count} active memories, over the cap of {cap}"
    if movable == count:
        return f"{said}: the next one written or approved there archives the lowest-ranked"
    alone = (
        f"{count - movable} of them pinned or kept in sync from a file or a team, which the "
        "cap leaves alone"
    )
    if movable == 0:
        return (
            f"{said}, all pinned or kept in sync from a file or a team, which the cap leaves "
            "alone: it archives nothing there"
        )
    return (
        f"{said}; {alone}: the next one written or approved there archives the "
        f"lowest-ranked of the other {movable}"
    )


INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", "GEMINI.md")
MAX_INSTRUCTION_BYTES = 1024 * 1024
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'])")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def instruction_lines(text: str) -> list[tuple[int, str]]:
    """The statements of an instruction file, with their line numbers: list items and
    sentences of prose; headings, code blocks, tables, HTML comments and blank lines
    left out."""
    out: list[tuple[int, str]] = []
    fenced = commented = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if commented or line.startswith("<!--"):
            commented = "-->" not in line
            continue
        if fenced or not line or line.startswith(("#", "|", ">")):
            continue
        line = _BULLET.sub("", line).strip()
        out += [(number, part.strip()) for part in _SENTENCE.split(line) if part.strip()]
    return out


def against(
    store: Store,
    files: Sequence[Path],
    *,
    scopes: tuple[str, ...] = (),
    exclude_repos: tuple[str, ...] = (),
) -> list[Finding]:
    """Memories (active or proposed, in `scopes`, none of `exclude_repos`) that repeat or
    contradict a line of an instruction file, each with the file and line."""
    lines: list[tuple[str, int, str]] = []
    for path in files:
        # Redacted as the store redacts what it keeps: a memory onboarded from a line that
        # held a secret repeats that line, and no finding quotes what the store would not.
        lines += [
            (str(path), n, redact(text).text)
            for n, text in instruction_lines(read_instructions(path))
        ]
    # Only the kinds curation compares: a handoff or summary says where a session stood
    # (an automatic handoff only quotes its prompts), not a rule to hold a file against.
    kinds = tuple(sorted(k.value for k in FOLDABLE))
    memories = store.list_items(
        ItemQuery(
            scopes=scopes,
            kinds=kinds,
            statuses=("active", "proposed"),
            exclude_repos=exclude_repos,
        )
    )
    if not lines or not memories:
        return []
    read = statements.read(store, [t for _, _, t in lines] + [m.text for m in memories])
    lex = statements.lexicon(store)
    said, kept = read[: len(lines)], read[len(lines) :]
    findings: list[Finding] = []
    resolved = {str(path): str(path.resolve()) for path in files}
    for memory, mine in zip(memories, kept, strict=True):
        # A memory imported from a file repeats it on purpose: it carries the file's rule
        # to the agents that do not load it (deliver.loaded_by_itself).
        source = {x.target for x in memory.links if x.type == "file"}
        imported = memory.provenance.how == ONBOARD
        for (name, number, text), theirs in zip(lines, said, strict=True):
            if not mine.content & theirs.content:
                continue
            # The file is what agents read now: the why says what it holds against the memory.
            verdict = statements.relate(lex, mine, theirs)
            if verdict.relation is None:
                verdict = statements.relate(lex, theirs, mine)
            where = f"{Path(name).name}:{number}"
            if verdict.relation == "copy" and imported and resolved[name] in source:
                continue
            if verdict.relation == "copy":
                findings.append(
                    Finding(
                        "in_instructions",
                        memory.id,
                        memory.title,
                        f"{where} says the same, and agents that load it read it already: "
                        f'"{text[:80]}"',
                        name,
                        number,
                    )
                )
                break
            if verdict.relation == "reversal":
                findings.append(
                    Finding(
                        "contradicts_instructions",
                        memory.id,
                        memory.title,
                        f'it contradicts {where} ({verdict.why}): "{text[:80]}"',
                        name,
                        number,
                    )
                )
                break
    return findings


def read_instructions(path: Path, strict: bool = False) -> str:
    """An instruction file's text; at most 1 MiB, else InvalidInput. `strict`: bytes that
    are not UTF-8 are InvalidInput too, not read as replacement characters."""
    try:
        # Without blocking, and a regular file only: a FIFO named CLAUDE.md hung the
        # command, and a link to a device was read as a file that is too long.
        data = paths.read_regular(str(path), MAX_INSTRUCTION_BYTES)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    except paths.NotRegular:
        raise InvalidInput(
            f"{path} is not a regular file: an instruction file is read as one"
        ) from None
    except paths.TooLarge:
        raise InvalidInput(
            f"{path} is over 1 MiB: an instruction file that long is not read"
        ) from None
    try:
        return data.decode("utf-8", errors="strict" if strict else "replace")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInput(f"{path}:{line}: not UTF-8 text; nothing was proposed") from None
