"""Lint: what in the store may no longer be true or useful. It reports; a person decides."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kenning.model import Item, Kind, Status
from kenning.store import ItemQuery, Store, now_iso


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str  # missing_file, expired_task, unused, duplicate, capped, over_cap
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


def lint(
    store: Store, *, unused_days: int = 90, scopes: tuple[str, ...] = (), cap: int = 0
) -> list[Finding]:
    """What may no longer be true or useful; `cap` is `memory.max_active_per_scope`."""
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
    return findings + _cap_findings(store, items, scopes, cap)


def _cap_findings(
    store: Store, items: list[Item], scopes: tuple[str, ...], cap: int
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
            ItemQuery(scopes=scopes, statuses=("archived",), include_expired=True)
        )
        if item.archive_reason == "cap"
    ]
    if cap > 0:
        told = Counter(
            str(i.scope)
            for i in items
            if i.status is Status.ACTIVE and not (i.expires_at and i.expires_at <= now_iso())
        )
        for scope, count in sorted(told.items()):
            if count > cap:
                findings.append(
                    Finding(
                        "over_cap",
                        "",
                        scope,
                        f"{count} active memories, over the cap of {cap}: the next one "
                        "written or approved there archives the lowest-ranked",
                    )
                )
    return findings
