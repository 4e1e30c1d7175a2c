"""`ken team` against the real `ken serve` on the test PostgreSQL: two hosts (two HOMEs,
two stores, each `ken` its own process) join one workspace, push, get approved, pull.

The server: tests/teamserver.py (a subprocess on 127.0.0.1). No browser here: the admin
decides through the admin API; the real-CLI end-to-end run is tests/agents/test_ken_team.py.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from teamserver import (
    Server,
    cover,
    entry,
    ken,
    make_token,
    memory,
    new_workspace,
    open_directory,
    push,
    serving,
)

pytestmark = pytest.mark.postgres

REPO = "github.com/acme/shop"


@pytest.fixture(scope="module")
def running(pg_cluster: str) -> Iterator[Server]:
    with serving(pg_cluster) as server:
        yield server


class Host:
    """One host: its own HOME, XDG folders and store; `ken` runs as its own process."""

    def __init__(self, root: Path, repo: Path) -> None:
        self.root = root
        self.repo = repo
        home = root / "home"
        self.env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "KEN_DB": str(root / "memory.db"),
        }
        home.mkdir(parents=True)

    def ken(self, *args: str, check: bool = True, input: str | None = None) -> Any:
        done = ken(*args, cwd=self.repo, env=self.env, input=input, timeout=120, new_session=True)
        if check:
            assert done.returncode == 0, f"ken {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.ken(*args, "--json").stdout)


@pytest.fixture
def team(running: Server, git_repo: Path, tmp_path: Path) -> Any:
    """A fresh workspace covering the shop repo, an admin token and two joined hosts."""
    # The workspace and its tokens through the directory in this process: `ken serve` has
    # its own tests for making them with the CLI.
    with open_directory(running) as directory:
        ws = new_workspace(directory, REPO)
        admin = directory.create_token(ws, "admin", "lead")[0]
        tokens = {name: directory.create_token(ws, "member", name)[0] for name in ("alice", "bob")}
    hosts = []
    for name, token in tokens.items():
        host = Host(tmp_path / name, git_repo)
        # Alice's URL names the workspace; bob's does not: the token says which.
        url = f"{running.url}/w/{ws}" if name == "alice" else running.url
        joined = host.ken(
            "team",
            "join",
            url,
            "--token",
            "-",
            "--host",
            f"{name}-laptop",
            input=token + "\n",
        )
        assert f"joined workspace {ws}" in joined.stderr
        hosts.append(host)
    return ws, admin, hosts[0], hosts[1]


def approve(server: Server, ws: str, admin: str, server_id: str) -> Any:
    answer = server.call("POST", f"/api/v1/w/{ws}/items/{server_id}/approve", admin, {})
    assert answer.status == 200, answer.body
    return answer.body["item"]


def proposed(server: Server, ws: str, admin: str) -> list[Any]:
    answer = server.call("GET", f"/api/v1/w/{ws}/items?status=proposed", admin)
    assert answer.status == 200, answer.body
    return list(answer.body["items"])


def test_a_memory_approved_on_one_host_reaches_the_other_hosts_pack(
    running: Server, team: Any
) -> None:
    ws, admin, alice, bob = team
    added = alice.json("add", "Deploys go through make ship, never by hand", "--scope", "repo")
    assert added["scope"] == f"repo:{REPO}"
    alice.json("add", "Alice's own note", "--scope", "global")
    report = alice.json("team", "sync")
    assert report["pushed"] == 1 and report["error"] is None and report["waiting"] == 0
    [waiting] = proposed(running, ws, admin)
    assert waiting["title"] == added["title"]
    assert waiting["origin"]["local_id"] == added["id"]
    assert waiting["origin"]["host"] == "alice-laptop"
    # Nothing is approved yet: bob's pull brings nothing.
    assert bob.json("team", "sync")["pulled"] == 0
    approve(running, ws, admin, waiting["id"])

    report = bob.json("team", "sync")
    assert report["pulled"] == 1
    pack = bob.ken("pack").stdout
    assert "Deploys go through make ship, never by hand" in pack
    [copy] = bob.json("list", "--scope", f"repo:{REPO}")
    assert copy["source"] == f"team:{ws}#{waiting['id']}"
    assert copy["provenance"]["how"] == "sync" and copy["provenance"]["host"] == "alice-laptop"
    refused = bob.ken("dismiss", copy["id"], check=False)
    assert refused.returncode == 1 and "read-only here" in refused.stderr
    # Alice pulls it too, but holds the original: it becomes the team's, not a copy beside.
    again = alice.json("team", "sync")
    assert again["own"] == 1 and again["pulled"] == 0 and again["pushed"] == 0
    [original] = alice.json("list", "--scope", f"repo:{REPO}")
    assert original["id"] == added["id"] and original["source"] == copy["source"]
    assert alice.json("team", "sync")["pushed"] == 0  # and it is not pushed again
    status = bob.json("team", "status")
    assert status["copies"] == 1 and status["server"]["reachable"] is True
    assert status["server"]["repos"] == [REPO]
    assert status["member"]["token"].startswith("kt_…")  # masked: prefix and last four
    assert len(status["member"]["token"]) == 8


def test_a_lost_answer_is_resent_with_its_push_id_and_stored_once(
    running: Server, team: Any
) -> None:
    ws, admin, alice, _ = team
    alice.ken("add", "Tickets live in Linear", "--scope", f"workspace:{ws}")
    first = alice.json("team", "sync")
    assert first["pushed"] == 1
    state_file = Path(alice.env["XDG_STATE_HOME"]) / "kenning" / "team-sync.json"
    state = json.loads(state_file.read_text())
    [section] = state["stores"].values()
    [(local_id, record)] = section["pushed"].items()
    # As if the answer had been lost: the entry is back in the outbox with its push id.
    section["outbox"] = [
        {
            "push_id": record["push_id"],
            "what": "memory",
            "item": alice.json("show", local_id),
            "local_id": local_id,
            "revision": record["revision"],
        }
    ]
    del section["pushed"][local_id]
    state_file.write_text(json.dumps(state))
    again = alice.json("team", "sync")
    assert again["duplicates"] == 1 and again["pushed"] == 0 and again["waiting"] == 0
    assert len(proposed(running, ws, admin)) == 1


def test_an_edit_of_a_team_memory_is_a_revision_the_admin_approves_into_every_copy(
    running: Server, team: Any, tmp_path: Path
) -> None:
    ws, admin, alice, bob = team
    alice.ken("add", "Deploy on Fridays", "--scope", "repo")
    alice.ken("team", "sync")
    [waiting] = proposed(running, ws, admin)
    approve(running, ws, admin, waiting["id"])
    bob.ken("team", "sync")
    [copy] = bob.json("list", "--scope", f"repo:{REPO}")
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/Fridays/Mondays/' \"$1\"\n")
    editor.chmod(0o755)
    bob.env["KEN_EDITOR"] = str(editor)
    edited = bob.ken("edit", copy["id"])
    assert "filed a proposed revision" in edited.stderr
    assert bob.json("show", copy["id"])["title"] == "Deploy on Fridays"  # not yet
    [revision] = proposed(running, ws, admin)
    assert revision["title"] == "Deploy on Mondays"
    assert revision["origin"]["what"] == "revision" and revision["origin"]["base"] == waiting["id"]
    approve(running, ws, admin, revision["id"])
    assert bob.json("team", "sync")["pulled"] == 1
    assert bob.json("show", copy["id"])["title"] == "Deploy on Mondays"
    # Alice's original, adopted as the team's memory, follows the team's revision.
    alice.ken("team", "sync")
    [original] = alice.json("list", "--scope", f"repo:{REPO}")
    assert original["title"] == "Deploy on Mondays"
    assert original["source"] == f"team:{ws}#{waiting['id']}"


def test_a_revision_approved_while_its_base_waits_takes_its_place(
    running: Server, team: Any, tmp_path: Path
) -> None:
    ws, admin, alice, bob = team
    added = bob.json("add", "Cron jobs: 4 per node", "--scope", "repo")
    bob.ken("team", "sync")
    editor = tmp_path / "editor.sh"
    bob.env["KEN_EDITOR"] = str(editor)
    for before, after in (("4", "6"), ("6", "8")):  # the second: a revision of the revision
        editor.write_text(f"#!/bin/sh\nsed -i 's/{before} per node/{after} per node/' \"$1\"\n")
        editor.chmod(0o755)
        bob.ken("edit", added["id"])
        assert bob.json("team", "sync")["pushed"] == 1
    waiting = proposed(running, ws, admin)
    assert len(waiting) == 3
    latest = next(i for i in waiting if i["origin"]["base"] not in (None, added["id"]))
    approve(running, ws, admin, latest["id"])
    for older in waiting:
        if older["id"] == latest["id"]:
            continue
        refused = running.call("POST", f"/api/v1/w/{ws}/items/{older['id']}/approve", admin, {})
        assert refused.status == 409 and "superseded" in refused.body["message"]
    active = running.call("GET", f"/api/v1/w/{ws}/items?status=active", admin).body["items"]
    assert [i["title"] for i in active] == ["Cron jobs: 8 per node"]
    assert alice.json("team", "sync")["pulled"] == 1
    assert [i["title"] for i in alice.json("list", "--scope", f"repo:{REPO}")] == [
        "Cron jobs: 8 per node"
    ]
    assert bob.json("team", "sync")["own"] == 1
    [original] = bob.json("list", "--scope", f"repo:{REPO}")
    assert original["id"] == added["id"] and original["source"] == f"team:{ws}#{latest['id']}"


def test_a_shared_lesson_goes_to_the_team_as_a_proposal(running: Server, team: Any) -> None:
    ws, admin, alice, _ = team
    lesson = alice.json(
        "add",
        "Run the migrations before the test suite",
        "--kind",
        "lesson",
        "--scope",
        "session:claude:abc",
        "--propose",
    )
    assert alice.json("team", "sync")["pushed"] == 0  # a proposal, in a session: not pushed
    shared = alice.json("team", "share", lesson["short_id"])
    assert shared["what"] == "lesson" and shared["scope"] == f"repo:{REPO}"
    [waiting] = proposed(running, ws, admin)
    assert waiting["kind"] == "lesson" and waiting["origin"]["what"] == "lesson"
    assert waiting["scope"] == f"repo:{REPO}"


def test_a_refused_share_exits_1_and_sharing_it_to_a_covered_scope_sends_it(
    running: Server, team: Any
) -> None:
    ws, admin, alice, _ = team
    lesson = alice.json(
        "add", "Flaky tests get a ticket", "--kind", "lesson", "--scope", "global", "--propose"
    )
    other = "repo:github.com/acme/other"
    refused = alice.ken("team", "share", lesson["short_id"], "--scope", other, check=False)
    assert refused.returncode == 1
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .startswith(f"ken: the team server refused {lesson['short_id']}: the team does not cover")
    )
    status = alice.json("team", "status")
    assert (status["pushed"], status["refused"], status["shared"]) == (0, 1, 0)
    shared = alice.ken("team", "share", lesson["short_id"], "--scope", f"workspace:{ws}")
    assert "the team's admins review it" in shared.stderr
    [waiting] = proposed(running, ws, admin)
    assert waiting["title"] == "Flaky tests get a ticket" and waiting["scope"] == f"workspace:{ws}"
    again = alice.ken("team", "share", lesson["short_id"], "--scope", f"repo:{REPO}", check=False)
    assert again.returncode == 1
    assert f"went to the team in workspace:{ws} already" in again.stderr.strip().splitlines()[-1]
    status = alice.json("team", "status")
    assert (status["pushed"], status["refused"], status["shared"]) == (1, 0, 1)
    assert len(proposed(running, ws, admin)) == 1


def test_what_is_added_while_the_server_is_away_waits_in_the_outbox_and_is_counted(
    running: Server, team: Any
) -> None:
    ws, admin, alice, _ = team
    alice.ken("team", "sync")  # the covered repos, seen once
    team_file = Path(alice.env["XDG_CONFIG_HOME"]) / "kenning" / "team.json"
    joined = json.loads(team_file.read_text())
    with socket.socket() as sock:  # a port nothing listens on: the server is away
        sock.bind(("127.0.0.1", 0))
        away = f"http://127.0.0.1:{sock.getsockname()[1]}"
    team_file.write_text(json.dumps({**joined, "url": away}))
    for name in ("billing", "ledger", "search"):
        alice.ken("add", f"The {name} service deploys with make ship", "--scope", "repo")
    failed = alice.ken("team", "sync", check=False)
    assert failed.returncode == 1 and "cannot reach the team server" in failed.stderr
    assert alice.json("team", "status", "--offline")["waiting"] == 3
    assert "3 waiting to be sent" in alice.ken("team", "status", "--offline").stdout
    team_file.write_text(json.dumps(joined))
    report = alice.json("team", "sync")
    assert (report["pushed"], report["waiting"]) == (3, 0)
    assert len(proposed(running, ws, admin)) == 3


def test_a_memory_forgotten_while_it_waits_in_the_outbox_is_never_sent(
    running: Server, team: Any
) -> None:
    ws, admin, alice, _ = team
    alice.ken("team", "sync")  # the covered repos, seen once
    team_file = Path(alice.env["XDG_CONFIG_HOME"]) / "kenning" / "team.json"
    joined = json.loads(team_file.read_text())
    with socket.socket() as sock:  # a port nothing listens on: the server is away
        sock.bind(("127.0.0.1", 0))
        away = f"http://127.0.0.1:{sock.getsockname()[1]}"
    team_file.write_text(json.dumps({**joined, "url": away}))
    secret = alice.json("add", "The vault unseal runbook lives on the red laptop", "-s", "repo")
    kept = alice.json("add", "The billing service deploys with make ship", "--scope", "repo")
    assert alice.ken("team", "sync", check=False).returncode == 1
    state_file = Path(alice.env["XDG_STATE_HOME"]) / "kenning" / "team-sync.json"
    assert "red laptop" in state_file.read_text()
    alice.ken("forget", secret["id"], "-y")
    assert "red laptop" not in state_file.read_text()
    assert alice.json("team", "status", "--offline")["waiting"] == 1
    team_file.write_text(json.dumps(joined))
    assert alice.json("team", "sync")["pushed"] == 1
    [sent] = proposed(running, ws, admin)
    assert sent["title"] == kept["title"]


def test_leaving_and_joining_the_same_team_again_pushes_nothing_twice(
    running: Server, team: Any
) -> None:
    ws, admin, alice, _ = team
    alice.ken("add", "Releases are tagged vX.Y.Z", "--scope", "repo")
    alice.ken("add", "Hotfixes branch from the last tag", "--scope", "repo")
    assert alice.json("team", "sync")["pushed"] == 2
    first, _ = proposed(running, ws, admin)
    approve(running, ws, admin, first["id"])
    assert alice.json("team", "sync")["own"] == 1
    team_file = Path(alice.env["XDG_CONFIG_HOME"]) / "kenning" / "team.json"
    joined = json.loads(team_file.read_text())
    alice.ken("team", "leave")
    alice.ken("team", "join", joined["url"], "--token", "-", input=joined["token"] + "\n")
    again = alice.json("team", "sync")
    assert (again["pushed"], again["duplicates"], again["own"]) == (0, 0, 1)
    assert len(proposed(running, ws, admin)) == 1
    active = running.call("GET", f"/api/v1/w/{ws}/items?status=active", admin).body["items"]
    assert [i["id"] for i in active] == [first["id"]]
    sources = [i["source"] for i in alice.json("list", "--scope", f"repo:{REPO}")]
    assert sorted(sources, key=str) == [None, f"team:{ws}#{first['id']}"]  # no copy beside


def test_a_revoked_token_is_told_in_one_line_and_leave_cleans_up(
    running: Server, team: Any
) -> None:
    ws, admin, alice, bob = team
    alice.ken("add", "Use pnpm", "--scope", "repo")
    alice.ken("team", "sync")
    approve(running, ws, admin, proposed(running, ws, admin)[0]["id"])
    bob.ken("team", "sync")
    token_id = bob.json("team", "status")["member"]["token_id"]
    out = ken("serve", "token", "revoke", "--db", running.db, token_id)
    assert out.returncode == 0, out.stderr
    failed = bob.ken("team", "sync", check=False)
    assert failed.returncode == 1
    assert "401" in failed.stderr.splitlines()[-1]
    left = bob.ken("team", "leave")
    assert "1 team memory removed" in left.stderr
    assert bob.json("list", "--scope", f"repo:{REPO}") == []
    assert bob.json("team", "status") == {"member": None}


def test_session_start_pulls_before_it_prints_the_pack(running: Server, team: Any) -> None:
    ws, admin, alice, bob = team
    alice.ken("add", "The payments service owns the ledger", "--scope", "repo")
    alice.ken("team", "sync")
    approve(running, ws, admin, proposed(running, ws, admin)[0]["id"])
    payload = {
        "session_id": "s-1",
        "transcript_path": str(bob.root / "t.jsonl"),
        "cwd": str(bob.repo),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    done = ken(
        "hook",
        "SessionStart",
        "--agent",
        "claude",
        input=json.dumps(payload),
        env={**bob.env, "KEN_HOOK_SERVER": "0", "KEN_TEAM_START_TIMEOUT": "10"},
        new_session=True,
    )
    assert done.returncode == 0 and not done.stderr
    assert "The payments service owns the ledger" in done.stdout


def session_start(host: Host, session_id: str) -> str:
    """SessionStart on `host` (its sync, then its pack, which records the uses)."""
    payload = {
        "session_id": session_id,
        "transcript_path": str(host.root / f"{session_id}.jsonl"),
        "cwd": str(host.repo),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    done = ken(
        "hook",
        "SessionStart",
        "--agent",
        "claude",
        input=json.dumps(payload),
        env={**host.env, "KEN_HOOK_SERVER": "0", "KEN_TEAM_START_TIMEOUT": "10"},
        new_session=True,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout


def test_uses_on_two_hosts_reach_the_server_once_each(running: Server, team: Any) -> None:
    ws, admin, alice, bob = team
    api = f"/api/v1/w/{ws}"
    title = "The ledger is append-only: correct it with a reversing entry"
    [stored] = push(running, api, admin, entry(memory(title, f"repo:{REPO}")), host="lead-box")
    server_id = stored["id"]
    assert stored["item_status"] == "active"
    unused = running.call("GET", f"{api}/items/{server_id}", admin).body
    assert unused["uses"] == {"count": 0, "hosts": 0}

    for n, host in enumerate((alice, bob)):
        assert host.json("team", "sync")["pulled"] == 1
        assert title in session_start(host, f"s-{n}")  # the pack delivers it: one use
        [copy] = [i for i in host.json("list", "--scope", f"repo:{REPO}") if i["title"] == title]
        assert copy["use_count"] == 1
        assert host.json("team", "sync")["uses"] == 1

    seen = running.call("GET", f"{api}/items/{server_id}", admin).body
    assert seen["uses"] == {"count": 2, "hosts": 2}
    [listed] = [
        i
        for i in running.call("GET", f"{api}/items?status=active", admin).body["items"]
        if i["id"] == server_id
    ]
    assert listed["uses"] == {"count": 2, "hosts": 2}

    # A sync with no new use reports nothing, and the count stays.
    assert alice.json("team", "sync")["uses"] == 0
    # A report whose answer was lost is sent again (the state never learned it went):
    # the server holds alice's running count, so the resend changes nothing.
    path = Path(alice.env["XDG_STATE_HOME"]) / "kenning" / "team-sync.json"
    state = json.loads(path.read_text())
    for section in state["stores"].values():
        section["uses"] = {}
    path.write_text(json.dumps(state))
    assert alice.json("team", "sync")["uses"] == 1
    assert running.call("GET", f"{api}/items/{server_id}", admin).body["uses"]["count"] == 2

    # Two more sessions on bob: the second's SessionStart sync reports the first's use
    # (bob's count 2, the team's 3) before its own pack makes bob's count 3.
    session_start(bob, "s-again")
    session_start(bob, "s-third")
    again = running.call("GET", f"{api}/items/{server_id}", admin).body
    assert again["uses"] == {"count": 3, "hosts": 2}
    assert bob.json("team", "sync")["uses"] == 1
    last = running.call("GET", f"{api}/items/{server_id}", admin).body
    assert last["uses"] == {"count": 4, "hosts": 2}


def test_uses_are_refused_outside_the_workspace(running: Server, team: Any) -> None:
    ws, admin, _, _ = team
    api = f"/api/v1/w/{ws}"
    [stored] = push(running, api, admin, entry(memory("Ours", f"repo:{REPO}")), host="lead-box")
    other_ws = "other-" + uuid.uuid4().hex[:8]
    cover(running.db, other_ws, REPO)
    stranger = make_token(running.db, other_ws, "member", "mallory")
    [theirs] = push(
        running,
        f"/api/v1/w/{other_ws}",
        make_token(running.db, other_ws, "admin"),
        entry(memory("Theirs", f"repo:{REPO}")),
    )
    body = {"host": "mallory-box", "uses": [{"id": stored["id"], "count": 1000}]}
    refused = running.call("POST", f"{api}/uses", stranger, body)
    assert refused.status == 403 and refused.body["error"] == "forbidden"
    assert running.call("POST", f"{api}/uses", None, body).status == 401
    # A member here cannot count uses onto another workspace's memory either.
    member = make_token(running.db, ws, "member", "carol")
    body = {"host": "carol-box", "uses": [{"id": theirs["id"], "count": 5}]}
    answer = running.call("POST", f"{api}/uses", member, body)
    assert answer.status == 200
    assert answer.body == {"recorded": 0, "unknown": [theirs["id"]], "not_pulled": []}
    for bad in (
        {"host": "x", "uses": [{"id": stored["id"], "count": -1}]},
        {"host": "x", "uses": [{"id": stored["id"], "count": True}]},
        {"host": "", "uses": []},
        {"host": "x", "uses": {}},
    ):
        assert running.call("POST", f"{api}/uses", member, bad).status == 400, bad
    mine = running.call("GET", f"{api}/items/{stored['id']}", admin).body
    assert mine["uses"] == {"count": 0, "hosts": 0}
