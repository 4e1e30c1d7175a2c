"""Item templates: a bug postmortem, an architecture decision, a compact note.

A template lays a memory out in named sections. Given explicitly, it arranges the text
under its headings (lines written `Label: text` or `## Label` go to their section; the
rest goes to the first); not given, it is detected when the text already uses two or
more of a template's section labels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kenning.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    sections: tuple[str, ...]
    kind: str | None  # the kind it implies when none is given


TEMPLATES = {
    "postmortem": Template("postmortem", ("Symptom", "Root cause", "Fix", "Prevention"), None),
    "decision": Template("decision", ("Context", "Decision", "Consequences"), "decision"),
    "note": Template("note", (), None),
}

_LABEL = re.compile(r"^\s*(?:#{1,6}\s*)?([A-Za-z][A-Za-z ]{1,30}?)\s*(?::|$)\s*(.*)$")


def _sections_in(body: str, template: Template) -> dict[str, list[str]]:
    wanted = {s.lower(): s for s in template.sections}
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in body.splitlines():
        match = _LABEL.match(line)
        label = match.group(1).strip().lower() if match else None
        if label in wanted and (line.lstrip().startswith("#") or ":" in line):
            current = wanted[label]
            rest = match.group(2).strip() if match else ""
            found.setdefault(current, [])
            if rest:
                found[current].append(rest)
        else:
            found.setdefault(current or "", []).append(line)
    return found


def detect(body: str) -> str | None:
    """The template the text already follows, if any."""
    if len(body.splitlines()) < 2:
        return None  # two sections take two lines: most memories are one
    for template in TEMPLATES.values():
        if template.sections:
            sections = _sections_in(body, template)
            if sum(1 for s in template.sections if s in sections) >= 2:
                return template.name
    return None


def apply(name: str, title: str, body: str) -> tuple[str, str]:
    """Lay out (title, body) in the named template."""
    template = TEMPLATES.get(name)
    if template is None:
        raise InvalidInput(f"unknown template '{name}': use {', '.join(TEMPLATES)}")
    if not template.sections:
        compact = "\n".join(line.rstrip() for line in body.strip().splitlines() if line.strip())
        return " ".join(title.split()), compact
    found = _sections_in(body, template)
    loose = [line for line in found.pop("", []) if line.strip()]
    first = template.sections[0]
    if loose:
        found.setdefault(first, [])
        found[first] = loose + found[first]
    parts = []
    for section in template.sections:
        text = "\n".join(found.get(section, [])).strip()
        parts.append(f"## {section}\n{text}" if text else f"## {section}\n")
    return title, "\n\n".join(p.rstrip() for p in parts)
