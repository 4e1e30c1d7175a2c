"""Snapshots of `ken panel` screens at 80x24 and 120x40, as text.

Each screen is rendered through the pilot and read as plain text (what a person reads),
with ids and times made the same on every run, then compared with the file of the same
name in tests/fixtures/panel/. A change that moves what the panel shows fails here; to
accept it, run with KEN_UPDATE_SNAPSHOTS=1 and read the diff of the fixtures.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from helpers import add, opened
from kenning import items, policy
from kenning.model import Provenance, Session, Status
from panel_helpers import drive, press, screen_text

FIXTURES = Path(__file__).parent / "fixtures" / "panel"
REPO = "repo:github.com/acme/shop"
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
# A pack's tokens count its ids too, and a ULID's letters are tokens of any length.
TOKENS = re.compile(r"\d[\d,]* tokens")
CLOCK = re.compile(r"\b\d{2}:\d{2}\b")  # on its own: a wrapped line may part it from its date


@pytest.fixture(autouse=True)
def shop(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("KEN_PROJECT", "shop")
    with opened() as store:
        session = store.upsert_session(
            Session(
                id="01JSESSION0000000000000001",
                agent="claude",
                model="claude-sonnet-4-5",
                started_at="2026-12-01T09:00:00.000Z",
                ended_at="2026-12-01T09:40:00.000Z",
                repo="github.com/acme/shop",
                first_prompt="fix the CSV export",
                last_prompt="now run the tests",
                commits=("4f1c2a9e0b7d",),
                transcript_path="/home/dev/.claude/projects/shop/one.jsonl",
                prompt_count=4,
            )
        )
        pnpm = add(
            "Use pnpm, never npm\nThe lockfile is pnpm-lock.yaml.",
            store,
            kind="preference",
            scope=REPO,
            pinned=True,
        )
        store.record_delivery(session.id, "pack", [pnpm.id])
        store.record_delivery(session.id, "recall", [pnpm.id], query="which package manager?")
        add("Deploys go through make release", store, kind="decision", scope=REPO)
        old = add("Staging resets every night", store, kind="fact", scope=REPO)
        items.set_status(store, old.id, "archive", actor=policy.PERSON)
        add("Keep PR titles short", store, kind="note")
        add(
            "Always use pnpm rather than npm",
            store,
            kind="preference",
            scope=REPO,
            status=Status.PROPOSED,
            evidence="user: no, use pnpm here, not npm",
            provenance=Provenance(
                who="claude", how="mcp", model="claude-sonnet-4-5", session=session.id
            ),
        )


def normalized(text: str) -> str:
    """The screen with every memory's id, short id and time the same on every run."""
    with opened() as store:
        ids = [i.id for i in store.list_items(items.ItemQuery(statuses=(), limit=None))]
        revisions = [r.id for ref in ids for r in store.revisions(ref)]
    for n, ulid in enumerate(sorted(ids + revisions), 1):
        text = text.replace(ulid, f"{n:026d}").replace(ulid[-6:].lower(), f"m{n:05d}")
    text = CLOCK.sub("10:00", DATE.sub("2026-12-01", text))
    text = TOKENS.sub(lambda m: "1" * (len(m.group()) - 7) + " tokens", text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def check_snapshot(name: str, text: str) -> None:
    path = FIXTURES / f"{name}.txt"
    if os.environ.get("KEN_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: run with KEN_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} changed"


@pytest.mark.parametrize(
    ("name", "size", "tab", "keys"),
    [
        ("here-80x24", (80, 24), "here", ()),
        ("waiting-80x24", (80, 24), "waiting", ()),
        ("help-80x24", (80, 24), "here", ("question_mark",)),
        ("dismiss-80x24", (80, 24), "waiting", ("d",)),
        ("repo-120x40", (120, 40), "repo", ("down",)),
        ("all-search-120x40", (120, 40), "all", ("slash", *"pnpm", "enter")),
        ("sessions-120x40", (120, 40), "sessions", ()),
        ("told-120x40", (120, 40), "sessions", ("enter",)),
    ],
)
def test_the_screen_matches_its_snapshot(name, size, tab, keys):
    async def snap(app, pilot):
        await press(app, pilot, *keys)
        check_snapshot(name, normalized(screen_text(app)))

    drive(snap, size=size, tab=tab)
