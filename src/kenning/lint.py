"""Lint: what in the store may no longer be true or useful. It reports; a person decides."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kenning.model import Item, Kind, Status
from kenning.store import ItemQuery, Store, now_iso


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str  # missing_file, expired_task, unused, duplicate
    item_id: str
    title: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "id": self.item_id,
            "short_id": self.item_id[-6:].lower(),
            "title": self.title,
            "detail": self.detail,
        }


def _fingerprint(item: Item) -> str:
    words = re.findall(r"\w+", f"{item.title} {item.body}".lower())
    return hashlib.sha1(" ".join(words).encode()).hexdigest()


def lint(store: Store, *, unused_days: int = 90, scopes: tuple[str, ...] = ()) -> list[Finding]:
    now = now_iso()
    items = store.list_items(
        ItemQuery(scopes=scopes, statuses=("active", "proposed"), include_expired=True)
    )
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
                path = Path(item.provenance.cwd) / path
            if not path.exists():
                findings.append(
                    Finding("missing_file", item.id, item.title, f"{link} does not exist")
                )
        if item.kind is Kind.TASK and item.expires_at and item.expires_at <= now:
            findings.append(
                Finding("expired_task", item.id, item.title, f"expired {item.expires_at[:10]}")
            )
        last = item.last_used_at or item.created_at
        if item.status is Status.ACTIVE and last < cutoff:
            never = "never used" if not item.last_used_at else f"last used {last[:10]}"
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
                    f"same text as {other.id[-6:].lower()} in {item.scope}",
                )
            )
        else:
            seen[key] = item
    return findings
