"""A host's side of team memory with no team server: the membership file, what a sync
chooses to push, a pull page applied to the store, the read-only guard on team copies,
and SessionStart against a real server socket that accepts and never answers.

Against the real `ken serve` on PostgreSQL: tests/test_team_e2e.py."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken, ken_proc
from helpers import opened
from kenning import config as config_mod
from kenning import items
from kenning.errors import InvalidInput
from kenning.ids import short_id
from kenning.model import Provenance, Scope, ScopeType, Status
from kenning.team import client as team_client
from kenning.team import sync as team_sync

REPO = "github.com/acme/shop"  # the git_repo fixture's origin


def member(url: str = "http://127.0.0.1:9", **changes: str) -> team_client.Membership:
    data = {
        "url": url,
        "workspace": "acme",
        "token": "kt_" + "x" * 43,
        "token_id": "tok-1",
        "role": "member",
        "name": "alice",
        "host": "alice-laptop",
        **changes,
    }
    return team_client.Membership(**data)


def joined(url: str = "http://127.0.0.1:9") -> team_client.Membership:
    found = member(url)
    team_client.save_membership(found)
    return found


def server_memory(server_id: str, text: str, scope: str = f"repo:{REPO}", **extra: Any) -> Any:
    title, _, body = text.partition("\n")
    return {
        "id": server_id,
        "title": title,
        "body": body,
        "kind": "decision",
        "scope": scope,
        "status": "active",
        "pinned": False,
        "tags": ["deploy"],
        "links": [],
        "evidence": "",
        "provenance": {"who": "user", "how": "cli", "host": "bob-desktop"},
        "origin": {"host": "bob-desktop", "token_id": "tok-2", "local_id": "01BOBLOCAL"},
        "created_at": "2026-12-01T10:00:00.000Z",
        "updated_at": "2026-12-01T10:05:00.000Z",
        **extra,
    }


def apply_page(changes: list[dict[str, Any]], who: team_client.Membership | None = None) -> Any:
    report = team_sync.Report()
    with opened() as store:
        state = team_sync.load_state(store.path)
        team_sync.apply_changes(store, who or member(), state, changes, report)
    return report


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A real server socket on 127.0.0.1 that accepts every connection and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(timeout=2)
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture
def closed_port() -> str:
    """A loopback port nothing listens on (connections are refused at once)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


# --- membership --------------------------------------------------------------------------


def test_the_membership_file_is_the_persons_alone_and_reads_back() -> None:
    found = member()
    path = Path(team_client.save_membership(found))
    assert path == config_mod.config_dir() / "team.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert team_client.load_membership() == found
    assert found.token not in json.dumps(found.to_dict())  # shown masked
    assert team_client.remove_membership() and team_client.load_membership() is None


def test_a_broken_membership_file_says_to_join_again() -> None:
    path = Path(team_client.membership_path())
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(InvalidInput, match="join again"):
        team_client.load_membership()


@pytest.mark.parametrize(
    ("url", "base", "workspace"),
    [
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765", None),
        ("https://ken.acme.dev/w/acme/", "https://ken.acme.dev", "acme"),
        ("https://acme.dev/ken/api/v1/w/acme", "https://acme.dev/ken", "acme"),
    ],
)
def test_a_server_url_may_name_its_workspace(url: str, base: str, workspace: str | None) -> None:
    assert team_client.split_url(url) == (base, workspace)


def test_a_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(InvalidInput, match="http"):
        team_client.split_url("ftp://example.com")


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:abc"])
def test_a_malformed_server_url_is_one_line_in_join_status_and_sync(url: str) -> None:
    said = f"ken: bad team server URL '{url}': give http(s)://HOST[:PORT]"
    joining = ken_proc("team", "join", url, "--token", "kt_x")
    assert (joining.returncode, joining.stderr.strip()) == (1, said)
    assert team_client.load_membership() is None
    path = Path(team_client.membership_path())
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"url": url, "workspace": "acme", "token": "kt_x"}))
    for args in (("status",), ("sync",)):
        done = ken_proc("team", *args)
        assert (done.returncode, done.stderr.strip()) == (1, said)


@pytest.mark.parametrize(
    "args",
    [
        ("join", "http://127.0.0.1:9/w/acme", "--token", "kt_secret"),
        ("leave",),
        ("share", "abc"),
    ],
)
def test_an_agent_may_not_join_leave_or_share(args: tuple[str, ...]) -> None:
    if args[0] != "join":
        joined()
    result = ken("team", *args, env={"KEN_AGENT": "codex"})
    assert result.exit_code == 1
    assert "needs a person" in result.output
    assert (team_client.load_membership() is None) == (args[0] == "join")


def test_join_against_a_server_that_is_down_says_so_and_keeps_nothing(closed_port: str) -> None:
    result = ken("team", "join", f"{closed_port}/w/acme", "--token", "kt_x")
    assert result.exit_code == 1
    assert "cannot reach the team server" in result.output
    assert team_client.load_membership() is None


def test_status_without_a_team_says_how_to_join() -> None:
    result = ken("team", "status")
    assert result.exit_code == 0 and "ken team join" in result.output
    assert json.loads(ken("team", "status", "--json").output) == {"member": None}


@pytest.mark.parametrize("args", [("team", "sync"), ("team", "status")])
def test_how_to_join_reads_as_written(args: tuple[str, ...]) -> None:
    """The redactor every line passes through took `--token T` for a token."""
    result = ken(*args)
    assert "`ken team join URL --token TOKEN`" in result.output, result.output
    assert "redacted" not in result.output


# --- what a sync pushes -----------------------------------------------------------------


def person_add(store: Any, text: str, scope: str, **options: Any) -> Any:
    return items.add(store, text, scope=Scope.parse(scope), **options)


def test_a_sync_pushes_what_a_person_approved_in_the_scopes_the_team_covers() -> None:
    who = member()
    with opened() as store:
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        shared = person_add(store, "Deploys go through make release", f"repo:{REPO}")
        in_ws = person_add(store, "Tickets live in Linear", "workspace:acme")
        person_add(store, "Other repo's rule", "repo:github.com/acme/other")
        person_add(store, "My own rule", "global")
        person_add(store, "Ship the fix\nby Friday", f"repo:{REPO}", kind=items.Kind.TASK)
        agent_note = items.add(
            store,
            "An agent's guess",
            scope=Scope.parse(f"repo:{REPO}"),
            evidence="it said so",
            provenance=Provenance(who="codex"),
            actor=team_sync.policy.Actor("codex"),
        )
        assert agent_note.status is Status.PROPOSED
        chosen = team_sync.choose_pushes(store, who, state)
    assert sorted(e["local_id"] for e in chosen) == sorted([shared.id, in_ws.id])
    assert {e["what"] for e in chosen} == {"memory"}
    assert all("base" not in e and len(e["push_id"]) == 36 for e in chosen)
    by_id = {e["local_id"]: e for e in chosen}
    assert by_id[shared.id]["item"]["scope"] == f"repo:{REPO}"
    assert by_id[shared.id]["item"]["title"] == "Deploys go through make release"


def test_an_agents_memory_a_person_approved_is_pushed() -> None:
    with opened() as store:
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        proposal = items.add(
            store,
            "Use pnpm, not npm",
            scope=Scope.parse(f"repo:{REPO}"),
            kind=items.Kind.PREFERENCE,
            evidence="the person said: use pnpm",
            provenance=Provenance(who="claude"),
            actor=team_sync.policy.Actor("claude"),
        )
        assert team_sync.choose_pushes(store, member(), state) == []
        items.set_status(store, proposal.id, "approve")
        chosen = team_sync.choose_pushes(store, member(), state)
    assert [e["local_id"] for e in chosen] == [proposal.id]


def test_a_repo_whose_memory_is_not_delivered_is_not_pushed_for_other_hosts_agents() -> None:
    with opened() as store:
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        payroll = person_add(store, "Payroll runs on the 25th", f"repo:{REPO}")
        assert team_sync.choose_pushes(store, member(), state, {REPO}) == []
        [entry] = team_sync.choose_pushes(store, member(), state)
    assert entry["local_id"] == payroll.id


def test_a_version_is_pushed_once_and_a_later_one_as_a_revision_of_the_servers_copy() -> None:
    with opened() as store:
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        first = person_add(store, "Deploys go through make release", f"repo:{REPO}")
        [entry] = team_sync.choose_pushes(store, member(), state)
        state["outbox"].append(entry)
        assert team_sync.choose_pushes(store, member(), state) == []  # waiting: not again
        state["outbox"] = []
        state["pushed"][first.id] = {
            "revision": first.revision,
            "push_id": entry["push_id"],
            "server_id": "srv-1",
            "status": "proposed",
        }
        assert team_sync.choose_pushes(store, member(), state) == []  # sent: not again
        changed = items.change(store, first.id, text="Deploys go through make ship")
        [again] = team_sync.choose_pushes(store, member(), state)
    assert again["what"] == "revision" and again["base"] == "srv-1"
    assert again["revision"] == changed.revision and again["push_id"] != entry["push_id"]


class Storing:
    """A client whose pushes are all stored, as proposals."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def push(self, host: str, wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.sent.extend(wire)
        return [
            {"push_id": e["push_id"], "status": "stored", "id": "srv-1", "item_status": "proposed"}
            for e in wire
        ]


def test_a_pin_is_no_new_version_to_push_only_new_words_are() -> None:
    client = Storing()
    with opened() as store:
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        first = person_add(store, "Deploys go through make release", f"repo:{REPO}")
        state["outbox"] += team_sync.choose_pushes(store, member(), state)
        report = team_sync.Report()
        team_sync.send_outbox(client, member(), state, lambda _: None, report)  # type: ignore[arg-type]
        assert report.pushed == 1 and len(client.sent) == 1
        pinned = items.set_pinned(store, first.id, True)
        assert pinned.revision != first.revision
        # The admins may have rejected it: the same words must not be filed again.
        assert team_sync.choose_pushes(store, member(), state) == []
        items.change(store, first.id, text="Deploys go through make ship")
        [again] = team_sync.choose_pushes(store, member(), state)
    assert again["what"] == "revision" and again["base"] == "srv-1"


def test_sharing_again_with_no_scope_goes_to_the_scope_it_went_to(closed_port: str) -> None:
    joined(closed_port)
    with opened() as store:
        lesson = person_add(
            store, "Flaky tests get a ticket", f"repo:{REPO}", kind=items.Kind.LESSON
        )
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        state["pushed"][lesson.id] = {
            "revision": lesson.revision,
            "server_id": "s1",
            "status": "proposed",
            "scope": "workspace:acme",
        }
        team_sync.save_state(store.path, state)
    result = ken("team", "share", lesson.id, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scope"] == "workspace:acme"
    other = ken("team", "share", lesson.id, "--scope", f"repo:{REPO}")
    assert other.exit_code == 1 and "went to the team in workspace:acme already" in other.output


def test_sharing_what_the_team_holds_already_says_nothing_new_goes(closed_port: str) -> None:
    """A pin is no new version to push (above); share said "it goes at the next sync"
    after a pin, and "the team's admins review it" when nothing at all had changed."""
    joined(closed_port)
    with opened() as store:
        rule = person_add(store, "Deploys go through make release", f"repo:{REPO}")
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        words = team_sync.words_of(team_sync.wire_item(rule, rule.scope))
        state["pushed"][rule.id] = {
            "revision": rule.revision,
            "server_id": "srv-1",
            "status": "proposed",
            "scope": f"repo:{REPO}",
            "words": words,
        }
        team_sync.save_state(store.path, state)
    for change in ((), ("pin",)):
        if change:
            assert ken(*change, rule.id).exit_code == 0
        result = ken("team", "share", rule.id)
        assert result.exit_code == 0, result.output
        assert (
            f"shared {short_id(rule.id)} as a memory in repo:{REPO}: the team holds these words "
            "already (sent before); nothing new to send"
        ) in result.output


def test_a_task_is_not_shared_in_one_line(closed_port: str) -> None:
    joined(closed_port)
    with opened() as store:
        task = person_add(store, "Ship the fix by Friday", f"repo:{REPO}", kind=items.Kind.TASK)
    result = ken("team", "share", task.id)
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"ken: {short_id(task.id)} is a task, which stays on this machine: only a preference, "
        "correction, decision, fact, lesson or note goes to the team"
    )
    with opened() as store:
        assert team_sync.load_state(store.path)["shared"] == {}


def test_a_shared_lesson_goes_to_the_repo_it_was_written_in_when_the_team_covers_it() -> None:
    who = member()
    with opened() as store:
        lesson = items.add(
            store,
            "Run the migrations before the tests",
            scope=Scope(ScopeType.SESSION, "claude:abc"),
            kind=items.Kind.LESSON,
            provenance=Provenance(who="claude", repo=REPO),
            status=Status.PROPOSED,
        )
        assert team_sync.share_scope(lesson, who, [REPO]) == Scope(ScopeType.REPO, REPO)
        assert team_sync.share_scope(lesson, who, []) == Scope(ScopeType.WORKSPACE, "acme")
        assert team_sync.share_what(lesson) == "lesson"
        team_sync.share(store, lesson, Scope(ScopeType.REPO, REPO), "lesson")
        state = team_sync.load_state(store.path)
        [entry] = team_sync.choose_pushes(store, who, state)
    assert entry["what"] == "lesson" and entry["item"]["scope"] == f"repo:{REPO}"
    assert entry["item"]["status"] == "proposed"


def test_a_shared_memory_an_agent_saved_in_its_own_files_goes_too() -> None:
    """`ken collect` brings an agent's memory in with its file as `source`; shared by
    name, it was accepted and never sent."""
    who = member()
    with opened() as store:
        collected = store.insert_item(
            replace(
                items.new_item(
                    "Use pnpm 9", scope=Scope(ScopeType.REPO, REPO), status=Status.PROPOSED
                ),
                source="collect:claude:/home/x/.claude/memory/pnpm.md",
            )
        )
        team_sync.share(store, collected, Scope(ScopeType.REPO, REPO), "proposal")
        state = team_sync.load_state(store.path)
        [entry] = team_sync.choose_pushes(store, who, state)
    assert entry["local_id"] == collected.id and entry["what"] == "proposal"


# --- a pull applied ---------------------------------------------------------------------


def test_pulled_team_memory_is_active_read_only_and_in_the_pack_and_recall(
    git_repo: Path,
) -> None:
    report = apply_page(
        [
            {
                "id": "srv-7",
                "change": "upsert",
                "item": server_memory("srv-7", "Deploys go through make ship\nNever by hand."),
            }
        ]
    )
    assert report.pulled == 1
    with opened() as store:
        [copy] = team_sync.copies(store, "acme")
    assert copy.status is Status.ACTIVE and copy.scope == Scope(ScopeType.REPO, REPO)
    assert copy.provenance.how == "sync" and copy.source == "team:acme#srv-7"
    assert copy.provenance.host == "bob-desktop" and copy.reviewed_at
    pack = ken_proc("pack", cwd=git_repo)
    assert pack.returncode == 0 and "Deploys go through make ship" in pack.stdout
    recall = ken_proc("recall", "do deploys go through make ship or by hand?", cwd=git_repo)
    assert "Deploys go through make ship" in recall.stdout, recall.stderr
    for args in (
        ("dismiss", copy.id),
        ("archive", copy.id),
        ("pin", copy.id),
        ("update", copy.id, "--text", "by hand"),
    ):
        result = ken_proc(*args)
        assert result.returncode == 1, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "team memory from workspace acme, read-only here" in lines[0]
    # Nor through a plan, which changes tags, kind or scope without a text.
    from kenning import plans

    for op in (
        {"op": "revise", "tags": ["mine"], "kind": "correction", "scope": "global"},
        {"op": "retire", "reason": "meh"},
    ):
        plan = plans.parse_plan(
            {
                "schema": 1,
                "id": "p",
                "owner": "me",
                "operations": [{**op, "id": copy.id, "expected_revision": copy.revision}],
            }
        )
        with opened() as store, pytest.raises(InvalidInput, match=r"operations\[0\].*read-only"):
            plans.preview(store, plan)
    with opened() as store:
        assert store.get_item(copy.id).revision == copy.revision


def test_the_teams_workspace_applies_in_its_repos_and_its_memory_is_told_there(
    git_repo: Path, tmp_path: Path
) -> None:
    joined()
    with opened() as store:
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]  # as the last sync saw them
        team_sync.save_state(store.path, state)
    apply_page(
        [
            {
                "id": "w1",
                "change": "upsert",
                "item": server_memory("w1", "Tickets live in Linear", "workspace:acme"),
            }
        ]
    )
    where = json.loads(ken_proc("where", "--json", cwd=git_repo).stdout)
    assert where["workspace"] == "acme"
    assert "workspace:acme" in [s["scope"] for s in where["scopes"]]
    pack = ken_proc("pack", cwd=git_repo)
    assert pack.returncode == 0 and "Tickets live in Linear" in pack.stdout
    # Outside the team's repos it does not apply.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert json.loads(ken_proc("where", "--json", cwd=elsewhere).stdout)["workspace"] is None
    # A workspace the person named wins.
    named = ken_proc("where", "--json", cwd=git_repo, env={"KEN_WORKSPACE": "mine"})
    assert json.loads(named.stdout)["workspace"] == "mine"


def test_where_reads_the_teams_repos_again_only_when_the_sync_state_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sync state holds every pushed memory's record: the warm hook server, which
    finds where each hook runs, must not parse it on every prompt; nor may a process
    that never joined a team import what writing it needs."""
    from kenning.team import state as team_state

    joined()
    with opened() as store:
        path = store.path
    state = team_sync.load_state(path)
    state["repos"] = [REPO]
    team_sync.save_state(path, state)
    assert team_state.team_here(path) == ("acme", (REPO,))

    def unread(_: str) -> dict[str, Any]:
        raise AssertionError("the unchanged sync state was parsed again")

    with monkeypatch.context() as patched:
        patched.setattr(team_state, "load_state", unread)
        assert team_state.team_here(path) == ("acme", (REPO,))
    state["repos"] = [REPO, "github.com/acme/other"]
    team_sync.save_state(path, state)
    assert team_state.team_here(path) == ("acme", (REPO, "github.com/acme/other"))

    code = "import sys, kenning.locate; print('kenning.drafts' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "broken",
    [
        {"stores": []},
        {"stores": {"STORE": "x"}},
        {"stores": {"STORE": {"repos": "x", "pushed": [], "outbox": {}, "cursor": 5}}},
    ],
)
def test_a_sync_state_file_broken_inside_is_taken_as_empty(
    git_repo: Path, broken: dict[str, Any]
) -> None:
    """Where scopes are found reads the sync state on every command and hook: a file of
    the wrong shape inside (a list for the stores, a string for a store's section) made
    `ken list`, `ken where` and `ken doctor` fail with a traceback, and every hook say
    nothing."""
    from kenning.team import state as team_state

    joined()
    with opened() as store:
        path = store.path
    text = json.dumps(broken).replace("STORE", path)
    Path(team_state.state_path()).parent.mkdir(parents=True, exist_ok=True)
    Path(team_state.state_path()).write_text(text, encoding="utf-8")
    assert team_sync.load_state(path)["repos"] == []
    for args in (("where",), ("list",)):
        result = ken_proc(*args, cwd=git_repo)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    start = {"session_id": "s1", "cwd": str(git_repo), "source": "startup"}
    told = ken_proc(
        "hook", "SessionStart", "--agent", "claude", cwd=git_repo, input=json.dumps(start)
    )
    assert told.returncode == 0 and "kenning" in told.stdout, told.stdout


def test_a_pulled_change_updates_the_copy_and_a_removal_deletes_it() -> None:
    apply_page([{"id": "s1", "change": "upsert", "item": server_memory("s1", "Old text")}])
    with opened() as store:
        [before] = team_sync.copies(store)
    report = apply_page([{"id": "s1", "change": "upsert", "item": server_memory("s1", "New text")}])
    assert report.pulled == 1
    with opened() as store:
        [after] = team_sync.copies(store)
        assert after.id == before.id and after.title == "New text"
        assert [r.change for r in store.revisions(after.id)] == ["sync", "sync"]
    same = apply_page([{"id": "s1", "change": "upsert", "item": server_memory("s1", "New text")}])
    assert same.pulled == 0  # nothing changed: no new version
    gone = apply_page([{"id": "s1", "change": "remove", "item": None}])
    assert gone.removed == 1
    with opened() as store:
        assert team_sync.copies(store) == []


def test_a_memory_this_host_pushed_comes_back_as_its_own_original_not_a_copy() -> None:
    with opened() as store:
        mine = person_add(store, "Deploys go through make release", f"repo:{REPO}")
    data = server_memory(
        "s9", mine.title, origin={"host": "alice-laptop", "token_id": "tok-1", "local_id": mine.id}
    )
    report = apply_page([{"id": "s9", "change": "upsert", "item": data}])
    assert report.own == 1 and report.pulled == 0
    with opened() as store:
        [adopted] = team_sync.copies(store)
        assert adopted.id == mine.id and adopted.source == "team:acme#s9"
        assert store.count_items() == 1
        team_sync.save_state(
            store.path,
            {
                **team_sync.load_state(store.path),
                "pushed": {
                    mine.id: {"revision": adopted.revision, "server_id": "s9", "status": "active"}
                },
            },
        )
    # A revision approved on the server (another host's) comes down into the original.
    data["title"] = "Deploys go through make ship"
    apply_page([{"id": "s9", "change": "upsert", "item": data}])
    with opened() as store:
        assert store.get_item(mine.id).title == "Deploys go through make ship"
        state = team_sync.load_state(store.path)
    # Dropped by the team: the person's own memory again, not deleted, not pushed again.
    report = team_sync.Report()
    with opened() as store:
        team_sync.apply_changes(
            store, member(), state, [{"id": "s9", "change": "remove", "item": None}], report
        )
        back = store.get_item(mine.id)
        assert back.source is None and back.title == "Deploys go through make ship"
        state["repos"] = [REPO]
        assert team_sync.choose_pushes(store, member(), state) == []


def test_an_adopted_original_keeps_its_own_scope_and_pin_and_has_them_when_dropped() -> None:
    with opened() as store:
        mine = person_add(store, "Prefer small commits", "global", kind=items.Kind.PREFERENCE)
        mine = items.set_pinned(store, mine.id, True)
        state = team_sync.load_state(store.path)
        # Shared to the repo (the team covers no global scope); the admins approved it.
        state["pushed"][mine.id] = {
            "revision": mine.revision,
            "server_id": "s7",
            "status": "proposed",
            "scope": f"repo:{REPO}",
        }
        team_sync.save_state(store.path, state)
    data = server_memory(
        "s7",
        mine.title,
        kind="preference",
        origin={"host": "alice-laptop", "token_id": "tok-1", "local_id": mine.id},
    )
    assert apply_page([{"id": "s7", "change": "upsert", "item": data}]).own == 1
    with opened() as store:
        adopted = store.get_item(mine.id)
        assert adopted.source == "team:acme#s7"
        assert str(adopted.scope) == "global" and adopted.pinned
    data["title"] = "Prefer small, focused commits"  # a revision the team approved
    apply_page([{"id": "s7", "change": "upsert", "item": data}])
    with opened() as store:
        revised = store.get_item(mine.id)
        assert revised.title == "Prefer small, focused commits"
        assert str(revised.scope) == "global" and revised.pinned
        # An edit here goes to the team as a revision in the team's scope.
        team_sync.file_revision(store, revised, replace(revised, title="Prefer tiny commits"))
        [entry] = team_sync.load_state(store.path)["outbox"]
        assert entry["item"]["scope"] == f"repo:{REPO}"
    apply_page([{"id": "s7", "change": "remove", "item": None}])
    with opened() as store:
        back = store.get_item(mine.id)
        assert back.source is None and str(back.scope) == "global" and back.pinned


def test_an_original_adopted_with_no_push_record_sends_its_edits_in_the_teams_scope() -> None:
    """A state file started again (it was unreadable) has no push record: the original
    is still adopted by its origin, and kept its own scope here, so an edit of it went
    to the team in that scope (global), not the one the team holds it in."""
    with opened() as store:
        mine = person_add(store, "Prefer small commits", "global", kind=items.Kind.PREFERENCE)
    data = server_memory(
        "s8",
        mine.title,
        kind="preference",
        origin={"host": "alice-laptop", "token_id": "tok-1", "local_id": mine.id},
    )
    report = team_sync.Report()
    with opened() as store:  # a pull, which keeps its state
        state = team_sync.load_state(store.path)
        team_sync.apply_changes(
            store, member(), state, [{"id": "s8", "change": "upsert", "item": data}], report
        )
        team_sync.save_state(store.path, state)
    assert report.own == 1
    with opened() as store:
        adopted = store.get_item(mine.id)
        assert str(adopted.scope) == "global"
        team_sync.file_revision(store, adopted, replace(adopted, title="Prefer tiny commits"))
        [entry] = team_sync.load_state(store.path)["outbox"]
    assert entry["item"]["scope"] == f"repo:{REPO}"


class Counting:
    """A client that keeps the use counts reported to it."""

    def __init__(self) -> None:
        self.reported: dict[str, int] = {}

    def report_uses(self, host: str, counts: dict[str, int]) -> None:
        self.reported.update(counts)


def test_an_adopted_originals_uses_count_for_the_team_only_from_its_adoption() -> None:
    client = Counting()
    with opened() as store:
        mine = person_add(store, "Deploys go through make release", f"repo:{REPO}")
        for n in range(4):  # told in four sessions before it was the team's
            store.record_uses([mine.id], f"s-{n}", "pack")
        state = team_sync.load_state(store.path)
        state["pushed"][mine.id] = {"revision": mine.revision, "server_id": "s9"}
        data = server_memory(
            "s9",
            mine.title,
            origin={"host": "alice-laptop", "token_id": "tok-1", "local_id": mine.id},
        )
        report = team_sync.Report()
        team_sync.apply_changes(store, member(), state, [{"id": "s9", "item": data}], report)
        assert report.own == 1 and store.get_item(mine.id).use_count == 4
        team_sync.report_uses(store, client, member(), state, lambda _: None, report)  # type: ignore[arg-type]
        assert client.reported == {}
        store.record_uses([mine.id], "s-after", "pack")
        team_sync.report_uses(store, client, member(), state, lambda _: None, report)  # type: ignore[arg-type]
    assert client.reported == {"s9": 1}


def test_sync_counts_adopted_originals_as_pulled_in_words_that_agree_in_number(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kenning.cli.team import _report

    _report(team_sync.Report(own=3))
    _report(team_sync.Report(pulled=1))
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "pulled 3 team memories (3 of them yours, now the team's; 0 removed); pushed 0 "
        "(+0 already there)",
        "pulled 1 team memory (0 removed); pushed 0 (+0 already there)",
    ]


def test_a_pulled_secret_is_redacted_and_a_bad_entry_is_skipped_not_fatal() -> None:
    key = "AKIA" + "Q" * 16
    report = apply_page(
        [
            {
                "id": "a",
                "change": "upsert",
                "item": server_memory(
                    "a", f"The staging deploy key is {key} and it lives in the vault under ci"
                ),
            },
            {"id": "b", "change": "upsert", "item": server_memory("b", "x", scope="nowhere")},
            {"id": "c", "change": "upsert", "item": server_memory("c", "y" * 5000)},
        ]
    )
    assert report.pulled == 1 and len(report.skipped) == 2
    with opened() as store:
        [copy] = team_sync.copies(store)
    assert key not in copy.title and "redacted" in copy.title


def test_leave_removes_the_membership_and_what_sync_brought_in_but_not_own_memory() -> None:
    joined()
    apply_page([{"id": "s1", "change": "upsert", "item": server_memory("s1", "Team rule")}])
    with opened() as store:
        mine = person_add(store, "My rule", f"repo:{REPO}")
    result = ken("team", "leave")
    assert result.exit_code == 0 and "1 team memory removed" in result.output
    assert team_client.load_membership() is None
    with opened() as store:
        assert team_sync.copies(store) == []
        assert store.get_item(mine.id).title == "My rule"


# --- offline and slow servers -----------------------------------------------------------


def test_edit_of_a_team_memory_files_a_revision_and_leaves_the_copy(closed_port: str) -> None:
    joined(closed_port)
    apply_page([{"id": "s1", "change": "upsert", "item": server_memory("s1", "Deploy on Fridays")}])
    with opened() as store:
        [copy] = team_sync.copies(store)
    editor = Path.cwd() / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/Fridays/Mondays/' \"$1\"\n")
    editor.chmod(0o755)
    result = ken_proc("edit", copy.id, env={"KEN_EDITOR": str(editor)})
    assert result.returncode == 0, result.stderr
    assert "waits to be sent" in result.stderr and "ken team sync" in result.stderr
    with opened() as store:
        assert store.get_item(copy.id).title == "Deploy on Fridays"
        [entry] = team_sync.load_state(store.path)["outbox"]
    assert entry["what"] == "revision" and entry["base"] == "s1"
    assert entry["item"]["title"] == "Deploy on Mondays"


def test_a_push_with_no_answer_is_resent_with_the_same_push_id(silent_server: str) -> None:
    who = joined(silent_server)
    with opened() as store:
        person_add(store, "Deploys go through make release", "workspace:acme")
        state = team_sync.load_state(store.path)
        state["repos"] = [REPO]
        team_sync.save_state(store.path, state)
        first = team_sync.sync(store, who, timeout=0.3, do_pull=False, refresh_repos=False)
        second = team_sync.sync(store, who, timeout=0.3, do_pull=False, refresh_repos=False)
        outbox = team_sync.load_state(store.path)["outbox"]
    assert first.error and "did not answer in time" in first.error
    assert second.waiting == 1 and len(outbox) == 1  # the same entry, not a second one


@pytest.fixture
def unavailable_server() -> Iterator[str]:
    """A real server on 127.0.0.1 that answers every call 503, as `ken serve` does while
    its database is down."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Down(BaseHTTPRequestHandler):
        def answer(self) -> None:
            body = json.dumps(
                {"error": "unavailable", "message": "the database does not answer"}
            ).encode()
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Down)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_503_is_told_as_the_server_unavailable_not_a_refusal(unavailable_server: str) -> None:
    joined(unavailable_server)
    result = ken("team", "sync")
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert "the team server is unavailable: the database does not answer (503" in last
    assert "refused" not in last


def test_team_sync_against_a_silent_server_gives_up_in_time_in_one_line(
    silent_server: str,
) -> None:
    joined(silent_server)
    started = time.monotonic()
    result = ken_proc("team", "sync", "--timeout", "0.5")
    assert time.monotonic() - started < 10
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert "did not answer in time" in lines[-1] and "Traceback" not in result.stderr


def session_start(repo: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    data = {
        "session_id": "s-team-1",
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    started = time.monotonic()
    done = subprocess.run(
        [str(KEN_BIN), "hook", "SessionStart", "--agent", "claude"],
        input=json.dumps(data).encode(),
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
        start_new_session=True,
    )
    spent = time.monotonic() - started
    assert done.returncode == 0 and not done.stderr, done.stderr
    return spent, done.stdout.decode()


@pytest.mark.timing
def test_session_start_with_a_silent_team_server_gives_the_pack_within_its_budget(
    silent_server: str, git_repo: Path
) -> None:
    with opened() as store:
        person_add(store, "Deploys go through make release", f"repo:{REPO}")
    _, alone = session_start(git_repo)  # not in a team: the pack, as always
    joined(silent_server)
    spent, out = session_start(git_repo, {"KEN_TEAM_START_TIMEOUT": "1.5"})
    assert "Deploys go through make release" in out
    assert "team" not in out.lower() or "team" in alone.lower()  # nothing said to the agent
    # 1.5 s for the sync, the rest Python and the pack (a hook alone takes well under 2 s).
    assert spent < 1.5 + 2.5, spent
    log = (config_mod.log_path()).read_text()
    assert "team sync:" in log and "did not answer in time" in log


def test_session_start_with_the_team_server_down_logs_a_line_and_gives_the_pack(
    closed_port: str, git_repo: Path
) -> None:
    with opened() as store:
        person_add(store, "Deploys go through make release", f"repo:{REPO}")
    joined(closed_port)
    _, out = session_start(git_repo)
    assert "Deploys go through make release" in out
    [line] = config_mod.log_path().read_text().splitlines()
    assert "cannot reach the team server" in line
    # The event as the hook was given it, as every other hook log line names it.
    assert line.split()[1:4] == ["claude", "SessionStart", "team"], line


def test_the_sync_the_hook_runs_loads_the_standard_library_and_kenning_only() -> None:
    code = (
        "import sys, kenning.hooks.handlers, kenning.team.sync, kenning.team.client\n"
        "print('\\n'.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    tops = {name.split(".")[0] for name in done.stdout.split()}
    heavy = {"click", "rich", "pydantic", "mcp", "textual", "psycopg", "starlette", "uvicorn"}
    assert tops & (heavy | {"httpx", "requests", "urllib3"}) == set()
    assert "kenning" in tops and "http" in tops


def test_serve_without_the_team_extra_says_what_to_install_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before, it asked for a database first, and then named `kenning[team]`, which no
    index holds (kenning is installed from a checkout)."""
    gone = [m for m in sys.modules if m == "kenning.team.server" or m.startswith("starlette")]
    for name in gone:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "starlette", None)  # as if not installed
    import kenning.team

    monkeypatch.delattr(kenning.team, "server", raising=False)
    monkeypatch.delenv("KEN_SERVE_DB", raising=False)
    result = ken("serve")
    assert result.exit_code == 1
    assert "needs the team extra" in result.output and "starlette" in result.output
    assert "kenning[team]" not in result.output and "--db" not in result.output
