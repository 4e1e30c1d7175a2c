"""`ken serve` over real HTTP on 127.0.0.1, against a real PostgreSQL database: tokens,
whoami, covered repos, push, pull and health (docs/reference/team-api.md)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kenning.store.directory import Directory
from kenning.team.service import USES_PER_DAY
from teamserver import (
    Server,
    cover,
    entry,
    ken,
    memory,
    module_database,
    new_workspace,
    open_directory,
    push,
    serving,
    start_server,
)

pytestmark = pytest.mark.postgres

SHOP = "repo:github.com/acme/shop"


@pytest.fixture(scope="module")
def running(pg_cluster: str) -> Iterator[Server]:
    """One server for the module; each test works in a workspace of its own."""
    with serving(pg_cluster) as server:
        yield server


@pytest.fixture
def server(running: Server) -> Server:
    return running


@pytest.fixture(scope="module")
def directory(running: Server) -> Iterator[Directory]:
    with open_directory(running) as opened:
        yield opened


@pytest.fixture
def ws(directory: Directory) -> str:
    return new_workspace(directory)


@pytest.fixture
def api(ws: str) -> str:
    return f"/api/v1/w/{ws}"


@pytest.fixture
def member(directory: Directory, ws: str) -> str:
    return directory.create_token(ws, "member", "alice")[0]


@pytest.fixture
def admin(directory: Directory, ws: str) -> str:
    return directory.create_token(ws, "admin", "lead")[0]


def pull_all(server: Server, api: str, token: str, since: str = "", limit: int = 500) -> Any:
    answer = server.call("GET", f"{api}/pull?since={since}&limit={limit}", token)
    assert answer.status == 200, answer.body
    return answer.body


def test_health_answers_without_a_token(server: Server) -> None:
    answer = server.call("GET", "/health")
    assert answer.status == 200
    assert answer.body["ok"] is True and answer.body["version"]


def test_a_token_is_printed_once_and_stored_only_as_its_hash(pg_dsn: str) -> None:
    import psycopg

    out = ken("serve", "token", "create", "--db", pg_dsn, "--workspace", "Acme", "--json")
    assert out.returncode == 0, out.stderr
    made = json.loads(out.stdout)
    assert made["token"].startswith("kt_") and len(made["token"]) == 46
    assert made["workspace"] == "acme" and made["role"] == "member"
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT id, hash FROM ken_team.tokens").fetchall()
        dump = str(conn.execute("SELECT * FROM ken_team.tokens").fetchall())
    assert [r[0] for r in rows] == [made["id"]]
    assert made["token"] not in dump and len(rows[0][1]) == 64
    listed = ken("serve", "token", "list", "--db", pg_dsn, "--json")
    assert made["token"] not in listed.stdout
    assert [t["id"] for t in json.loads(listed.stdout)["tokens"]] == [made["id"]]


def test_whoami_names_the_token_its_workspace_and_role(
    server: Server, member: str, api: str, ws: str
) -> None:
    answer = server.call("GET", f"{api}/whoami", member)
    assert answer.status == 200
    assert answer.body["workspace"] == ws
    assert answer.body["role"] == "member"
    assert answer.body["name"] == "alice"
    assert answer.body["token_id"].startswith("tok_")
    assert server.call("GET", "/api/v1/whoami", member).body == answer.body


def test_repos_lists_what_the_team_covers(server: Server, member: str, api: str, ws: str) -> None:
    cover(server.db, ws, "git@github.com:Acme/API.git")
    answer = server.call("GET", f"{api}/repos", member)
    assert answer.body == {"repos": ["github.com/acme/api", "github.com/acme/shop"]}
    out = ken("serve", "repos", "remove", "--db", server.db, ws, "github.com/acme/api")
    assert out.returncode == 0, out.stderr
    assert server.call("GET", f"{api}/repos", member).body == {"repos": ["github.com/acme/shop"]}


def test_a_members_push_arrives_proposed_and_is_not_pulled(
    server: Server, member: str, api: str
) -> None:
    (result,) = push(server, api, member, entry(memory("Deploys go through the canary", SHOP)))
    assert result["status"] == "stored" and result["item_status"] == "proposed"
    assert result["reason"] is None and len(result["id"]) == 26
    got = server.call("GET", f"{api}/items/{result['id']}", member).body
    assert got["status"] == "proposed"
    assert got["origin"]["host"] == "alice-laptop"
    assert got["origin"]["local_id"] == "01JAAAAAAAAAAAAAAAAAAAAAAA"
    assert got["provenance"]["host"] == "alice-laptop"
    assert [h["change"] for h in got["history"]] == ["push"]
    assert pull_all(server, api, member)["changes"] == []


def test_an_admins_own_memory_arrives_active_and_is_pulled(
    server: Server, admin: str, member: str, api: str, ws: str
) -> None:
    (result,) = push(server, api, admin, entry(memory("Use UTC in logs", f"workspace:{ws}")))
    assert result["item_status"] == "active"
    (lesson,) = push(server, api, admin, entry(memory("A lesson", SHOP, kind="lesson"), "lesson"))
    assert lesson["item_status"] == "proposed"
    pulled = pull_all(server, api, member)
    assert [c["id"] for c in pulled["changes"]] == [result["id"]]
    (change,) = pulled["changes"]
    assert change["change"] == "upsert"
    assert change["item"]["title"] == "Use UTC in logs"
    assert change["item"]["origin"]["token_id"].startswith("tok_")
    assert change["item"]["origin"]["host"] == "alice-laptop"
    assert change["item"]["reviewed_at"] == change["item"]["updated_at"]
    assert pulled["more"] is False
    again = pull_all(server, api, member, since=pulled["cursor"])
    assert again["changes"] == [] and again["cursor"] == pulled["cursor"]


def test_the_same_push_id_again_stores_nothing_more(server: Server, member: str, api: str) -> None:
    one = entry(memory("Cache keys carry the tenant", SHOP))
    (first,) = push(server, api, member, one)
    (second,) = push(server, api, member, one)
    assert second["status"] == "duplicate"
    assert second["id"] == first["id"]
    listed = server.call("GET", f"{api}/items", member).body["items"]
    assert [i["id"] for i in listed] == [first["id"]]


def test_a_scope_the_team_does_not_cover_is_refused_for_that_entry(
    server: Server, member: str, api: str
) -> None:
    results = push(
        server,
        api,
        member,
        entry(memory("Elsewhere", "repo:github.com/other/thing")),
        entry(memory("Mine", "global")),
        entry(memory("Other team", "workspace:another")),
        entry(memory("Fine", SHOP)),
    )
    assert [r["status"] for r in results] == ["refused", "refused", "refused", "stored"]
    assert "github.com/other/thing" in results[0]["reason"]
    assert all(r["id"] is None for r in results[:3])


def test_the_server_redacts_again_and_refuses_a_mostly_secret_text(
    server: Server, member: str, api: str
) -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    said = entry(memory(f"CI pushes release tags to the mirror with {key} every night", SHOP))
    bare = entry(memory(key, SHOP))
    kept, refused = push(server, api, member, said, bare)
    assert kept["status"] == "stored" and refused["status"] == "refused"
    assert "secret" in refused["reason"]
    got = server.call("GET", f"{api}/items/{kept['id']}", member).body
    assert key not in json.dumps(got)
    assert "[redacted:github_token]" in got["title"]


def test_a_push_needs_push_ids_and_at_most_500_entries(
    server: Server, member: str, api: str
) -> None:
    bad = server.call("POST", f"{api}/push", member, {"host": "h", "items": [{"item": {}}]})
    assert bad.status == 400 and bad.body["error"] == "bad_request"
    for written in ("p 7", "p7\n"):  # a newline at its end is no part of an id either
        spaced = server.call(
            "POST",
            f"{api}/push",
            member,
            {"host": "h", "items": [{"item": {}, "push_id": written}]},
        )
        # It said "needs a 'push_id'" of one given, where the value was what was wrong.
        assert spaced.status == 400 and spaced.body["message"].startswith(
            "entry 1's 'push_id' is not a push id: 1 to 100 letters"
        ), written
    many = [entry(memory(f"m{i}", SHOP)) for i in range(501)]
    over = server.call("POST", f"{api}/push", member, {"host": "h", "items": many})
    assert over.status == 400 and "500" in over.body["message"]
    garbled = server.call("POST", f"{api}/push", member, raw=b"{not json")
    assert garbled.status == 400


def test_a_body_over_4_mib_is_refused_before_it_is_read(
    server: Server, member: str, api: str
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("POST", f"{api}/push")
    conn.putheader("Authorization", f"Bearer {member}")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(4 * 1024 * 1024 + 1))
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413
    assert json.loads(response.read())["error"] == "too_large"
    conn.close()

    def logged() -> list[dict[str, Any]]:
        return [
            x
            for x in server.logs()
            if x.get("msg") == "request" and x["path"] == f"{api}/push" and x["status"] == 413
        ]

    deadline = time.monotonic() + 10
    while not logged() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert logged()[-1]["route"] == "/api/v1/w/{ws}/push"  # not "(unmatched)"
    metrics = server.call("GET", "/metrics", member).body
    assert 'ken_http_requests_total{method="POST",route="/api/v1/w/{ws}/push",status="413"}' in (
        metrics
    )


def test_a_request_http_cannot_read_is_uvicorns_plain_400_the_one_exception(
    server: Server, member: str, api: str
) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(
            f"POST {api}/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {member}\r\n"
            "Content-Length: -5\r\n\r\n".encode()
        )
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: text/plain; charset=utf-8" in head.lower()
    assert body == b"Invalid HTTP request received."


def test_pull_pages_through_the_feed_with_its_cursor(
    server: Server, admin: str, member: str, api: str
) -> None:
    made = [
        r["id"]
        for r in push(server, api, admin, *(entry(memory(f"Rule {i}", SHOP)) for i in range(5)))
    ]
    seen: list[str] = []
    cursor = ""
    pages = 0
    while True:
        page = pull_all(server, api, member, since=cursor, limit=2)
        seen += [c["id"] for c in page["changes"]]
        cursor = page["cursor"]
        pages += 1
        if not page["more"]:
            break
    assert seen == made and pages == 3
    bad = server.call("GET", f"{api}/pull?since=abc", member)
    assert bad.status == 400


def test_items_lists_newest_first_filters_by_status_and_searches(
    server: Server, admin: str, member: str, api: str
) -> None:
    (active,) = push(server, api, admin, entry(memory("Payments retry twice", SHOP)))
    (waiting,) = push(server, api, member, entry(memory("Invoices render in PDF", SHOP)))
    every = server.call("GET", f"{api}/items", member).body["items"]
    assert [i["id"] for i in every] == [waiting["id"], active["id"]]
    only = server.call("GET", f"{api}/items?status=proposed", member).body["items"]
    assert [i["id"] for i in only] == [waiting["id"]]
    found = server.call("GET", f"{api}/items?q=payment", member).body["items"]
    assert [i["id"] for i in found] == [active["id"]]
    missing = server.call("GET", f"{api}/items/{uuid.uuid4().hex[:26].upper()}", member)
    assert missing.status == 404 and missing.body["error"] == "not_found"


# --- deciding ------------------------------------------------------------------------


def act(server: Server, api: str, token: str, item_id: str, action: str, **body: Any) -> Any:
    return server.call("POST", f"{api}/items/{item_id}/{action}", token, body)


def test_an_admin_approves_and_the_memory_is_pulled_then_dismissed_and_removed(
    server: Server, api: str, admin: str, member: str
) -> None:
    (sent,) = push(server, api, member, entry(memory("Migrations run before deploys", SHOP)))
    approved = act(server, api, admin, sent["id"], "approve")
    assert approved.status == 200 and approved.body["item"]["status"] == "active"
    assert approved.body["item"]["reviewed_at"]
    first = pull_all(server, api, member)
    assert [(c["id"], c["change"]) for c in first["changes"]] == [(sent["id"], "upsert")]
    dismissed = act(server, api, admin, sent["id"], "dismiss", reason="wrong", note="not here")
    assert dismissed.body["item"]["status"] == "dismissed"
    assert dismissed.body["item"]["dismiss_reason"] == "wrong"
    after = pull_all(server, api, member, since=first["cursor"])
    assert after["changes"] == [{"id": sent["id"], "change": "remove", "item": None}]
    got = server.call("GET", f"{api}/items/{sent['id']}", member).body
    assert [h["change"] for h in got["history"]] == ["push", "approve", "dismiss"]
    assert [(d["action"], d["reason"], d["note"], d["name"]) for d in got["decisions"]] == [
        ("approve", None, None, "lead"),
        ("dismiss", "wrong", "not here", "lead"),
    ]
    restored = act(server, api, admin, sent["id"], "restore")
    assert restored.body["item"]["status"] == "active"  # it had been approved


def test_dismiss_needs_a_reason_and_a_status_conflict_is_409(
    server: Server, api: str, admin: str, member: str
) -> None:
    (sent,) = push(server, api, member, entry(memory("Feature flags live in flagd", SHOP)))
    assert act(server, api, admin, sent["id"], "dismiss").status == 400
    assert act(server, api, admin, sent["id"], "dismiss", reason="maybe").status == 400
    rejected = act(server, api, admin, sent["id"], "reject", reason="we use LaunchDarkly")
    assert rejected.body["item"]["status"] == "rejected"
    again = act(server, api, admin, sent["id"], "approve")
    assert again.status == 409 and again.body["error"] == "conflict"
    back = act(server, api, admin, sent["id"], "restore")
    assert back.body["item"]["status"] == "proposed"  # it was waiting


def test_a_reason_or_note_over_200_characters_is_refused_and_changes_nothing(
    server: Server, api: str, admin: str, member: str
) -> None:
    (kept,) = push(server, api, member, entry(memory("Logs are kept 30 days", SHOP)))
    (waiting,) = push(server, api, member, entry(memory("Logs go to Loki", SHOP)))
    act(server, api, admin, kept["id"], "approve")
    start = pull_all(server, api, member)["cursor"]
    long = "too long " * 30
    dismissed = act(server, api, admin, kept["id"], "dismiss", reason="wrong", note=long)
    assert dismissed.status == 400
    assert dismissed.body["message"].startswith("the note is 269 characters, over 200")
    rejected = act(server, api, admin, waiting["id"], "reject", reason=long)
    assert rejected.status == 400 and rejected.body["message"].startswith("the reason is")
    got = server.call("GET", f"{api}/items/{kept['id']}", member).body
    assert got["status"] == "active" and [h["change"] for h in got["history"]] == [
        "push",
        "approve",
    ]
    assert [d["action"] for d in got["decisions"]] == ["approve"]
    assert server.call("GET", f"{api}/items/{waiting['id']}", member).body["status"] == "proposed"
    assert pull_all(server, api, member, since=start)["changes"] == []


def test_approving_a_revision_rewrites_its_base_which_keeps_its_id(
    server: Server, api: str, admin: str, member: str
) -> None:
    (base,) = push(server, api, admin, entry(memory("Deploy on Tuesdays", SHOP)))
    start = pull_all(server, api, member)["cursor"]
    revision = entry(memory("Deploy on Tuesdays and Thursdays", SHOP), "revision", base=base["id"])
    (rev,) = push(server, api, member, revision)
    assert rev["item_status"] == "proposed" and rev["id"] != base["id"]
    done = act(server, api, admin, rev["id"], "approve")
    assert done.body["item"]["status"] == "superseded"
    assert f"item:{base['id']}" in done.body["item"]["links"]
    page = pull_all(server, api, member, since=start)
    (change,) = page["changes"]
    assert change["id"] == base["id"] and change["change"] == "upsert"
    assert change["item"]["title"] == "Deploy on Tuesdays and Thursdays"
    history = server.call("GET", f"{api}/items/{base['id']}", member).body["history"]
    assert [h["title"] for h in history] == [
        "Deploy on Tuesdays",
        "Deploy on Tuesdays and Thursdays",
    ]
    orphan = entry(memory("x y z", SHOP), "revision", base="01JZZZZZZZZZZZZZZZZZZZZZZZ")
    assert push(server, api, member, orphan)[0]["status"] == "refused"


def test_a_revision_of_a_dismissed_memory_is_approved_as_a_memory_of_its_own(
    server: Server, api: str, admin: str, member: str
) -> None:
    (base,) = push(server, api, member, entry(memory("Deploy on Tuesdays", SHOP)))
    act(server, api, admin, base["id"], "dismiss", reason="wrong")
    start = pull_all(server, api, member)["cursor"]
    revision = entry(memory("Deploy on Tuesdays, then prod", SHOP), "revision", base=base["id"])
    (rev,) = push(server, api, member, revision)
    done = act(server, api, admin, rev["id"], "approve")
    assert done.body["item"]["status"] == "active"  # not superseded into a dismissed base
    (change,) = pull_all(server, api, member, since=start)["changes"]
    assert (change["id"], change["change"]) == (rev["id"], "upsert")
    assert server.call("GET", f"{api}/items/{base['id']}", member).body["status"] == "dismissed"


def test_forget_deletes_the_memory_and_its_versions(
    server: Server, api: str, admin: str, member: str
) -> None:
    (sent,) = push(server, api, admin, entry(memory("Staging lives on db-7", SHOP)))
    start = pull_all(server, api, member)["cursor"]
    gone = act(server, api, admin, sent["id"], "forget")
    assert gone.body == {"item": None, "forgotten": sent["id"]}
    assert server.call("GET", f"{api}/items/{sent['id']}", member).status == 404
    removed = pull_all(server, api, member, since=start)["changes"]
    assert removed == [{"id": sent["id"], "change": "remove", "item": None}]
    import psycopg

    with psycopg.connect(server.db) as conn:
        left = conn.execute(
            "SELECT count(*) FROM ken_team.origins WHERE item_id = %s", (sent["id"],)
        ).fetchone()
    assert left == (0,)


# --- auth ----------------------------------------------------------------------------


def test_a_token_of_one_workspace_cannot_read_or_write_another(
    server: Server, directory: Directory, api: str, admin: str
) -> None:
    other = "other-" + uuid.uuid4().hex[:8]
    directory.add_repo(other, "github.com/acme/shop")
    (theirs,) = push(
        server,
        f"/api/v1/w/{other}",
        directory.create_token(other, "admin", "them")[0],
        entry(memory("Theirs", SHOP)),
    )
    there = f"/api/v1/w/{other}"
    for method, path, body in [
        ("GET", f"{there}/whoami", None),
        ("GET", f"{there}/repos", None),
        ("GET", f"{there}/pull", None),
        ("GET", f"{there}/items", None),
        ("GET", f"{there}/items/{theirs['id']}", None),
        ("POST", f"{there}/push", {"host": "h", "items": [entry(memory("Mine", SHOP))]}),
        ("POST", f"{there}/items/{theirs['id']}/approve", {}),
        ("POST", f"{there}/items/{theirs['id']}/forget", {}),
    ]:
        answer = server.call(method, path, admin, body)
        assert (answer.status, answer.body["error"]) == (403, "forbidden"), path
    # Nor through its own workspace's path: the other's memory is not found there.
    assert server.call("GET", f"{api}/items/{theirs['id']}", admin).status == 404
    assert act(server, api, admin, theirs["id"], "approve").status == 404


def test_a_member_cannot_decide(server: Server, api: str, member: str) -> None:
    (sent,) = push(server, api, member, entry(memory("Members propose", SHOP)))
    for action in ("approve", "reject", "dismiss", "restore", "forget"):
        answer = act(server, api, member, sent["id"], action, reason="wrong")
        assert (answer.status, answer.body["error"]) == (403, "forbidden"), action
    got = server.call("GET", f"{api}/items/{sent['id']}", member).body
    assert got["status"] == "proposed" and len(got["history"]) == 1


def test_a_revoked_token_is_refused_at_once(server: Server, api: str, ws: str) -> None:
    made = ken("serve", "token", "create", "--db", server.db, "--workspace", ws, "--json")
    token = json.loads(made.stdout)
    assert server.call("GET", f"{api}/whoami", token["token"]).status == 200
    out = ken("serve", "token", "revoke", "--db", server.db, token["id"])
    assert out.returncode == 0, out.stderr
    assert out.stderr.startswith(f"revoked {token['id']} (member of '{ws}')")
    answer = server.call("GET", f"{api}/whoami", token["token"])
    assert (answer.status, answer.body["error"]) == (401, "unauthorized")
    # Again: it stays revoked (as asked, so exit 0), and is said to be so already.
    again = ken("serve", "token", "revoke", "--db", server.db, token["id"])
    assert again.returncode == 0, again.stderr
    assert "revoked already, at " in again.stderr and not again.stderr.startswith("revoked")
    listed = json.loads(ken("serve", "token", "list", "--db", server.db, "-w", ws, "--json").stdout)
    (row,) = [t for t in listed["tokens"] if t["id"] == token["id"]]
    assert row["revoked_at"] in again.stderr  # its first revoked time, kept


def test_no_endpoint_answers_without_a_token_but_health(
    server: Server, api: str, member: str
) -> None:
    item = "01JAAAAAAAAAAAAAAAAAAAAAAA"
    for method, path in [
        ("GET", "/metrics"),
        ("GET", "/api/v1/whoami"),
        ("GET", f"{api}/whoami"),
        ("GET", f"{api}/repos"),
        ("POST", f"{api}/push"),
        ("GET", f"{api}/pull"),
        ("GET", f"{api}/items"),
        ("GET", f"{api}/items/{item}"),
        *(("POST", f"{api}/items/{item}/{a}") for a in ("approve", "dismiss", "forget")),
        ("GET", "/api/v1/anything"),
    ]:
        for token in (None, "kt_not-a-token", member[:-1] + ("A" if member[-1] != "A" else "B")):
            answer = server.call(method, path, token, {} if method == "POST" else None)
            assert (answer.status, answer.body["error"]) == (401, "unauthorized"), (path, token)
    assert server.call("GET", "/health").status == 200


def test_a_path_no_endpoint_takes_is_answered_in_json_outside_the_api_too(
    server: Server,
) -> None:
    """`GET /nope` was a text/plain "Not Found", and `POST /health` a text/plain "Method
    Not Allowed": the API's every body is JSON."""
    for method, path, status, error in [
        ("GET", "/nope", 404, "not_found"),
        ("GET", "/items", 404, "not_found"),
        ("POST", "/health", 405, "method_not_allowed"),
    ]:
        answer = server.call(method, path, body={} if method == "POST" else None)
        assert answer.headers["content-type"] == "application/json", (path, answer.headers)
        assert (answer.status, answer.body) == (
            status,
            {"error": error, "message": f"no endpoint {method} {path}"},
        )
        if status == 405:
            assert set(answer.headers["allow"].split(", ")) == {"GET", "HEAD"}


# --- operation -----------------------------------------------------------------------


def test_metrics_count_requests_pushes_and_pulls(server: Server, api: str, admin: str) -> None:
    push(server, api, admin, entry(memory("Counted", SHOP)))
    pull_all(server, api, admin)
    text = server.call("GET", "/metrics", admin).body
    assert 'ken_http_requests_total{method="POST",route="/api/v1/w/{ws}/push",status="200"}' in text
    assert 'ken_http_request_seconds_bucket{route="/api/v1/w/{ws}/pull",le="+Inf"}' in text
    stored = next(
        line for line in text.splitlines() if line.startswith('ken_pushed_total{result="stored"}')
    )
    assert int(stored.rsplit(" ", 1)[1]) >= 1


def test_each_request_is_one_json_log_line_without_the_token(
    server: Server, api: str, ws: str, member: str
) -> None:
    server.call("GET", f"{api}/whoami", member)
    server.call("GET", f"{api}/whoami")

    def lines() -> list[dict[str, Any]]:
        return [
            x for x in server.logs() if x.get("msg") == "request" and x["path"] == f"{api}/whoami"
        ]

    deadline = time.monotonic() + 10
    while len(lines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    seen = lines()
    assert [(x["status"], x.get("workspace")) for x in seen[-2:]] == [(200, ws), (401, None)]
    assert seen[-1]["error"] == "unauthorized" and seen[-2]["token_id"].startswith("tok_")
    assert all(member not in json.dumps(x) for x in server.logs())
    assert all("raw" not in x for x in server.logs())


def test_sigterm_finishes_the_request_in_flight_then_exits_0(
    running: Server, directory: Directory, ws: str, member: str
) -> None:
    import psycopg

    server = start_server(running.db)
    try:
        with (
            psycopg.connect(running.db) as holder,
            psycopg.connect(running.db, autocommit=True) as watcher,
        ):
            # Hold the tokens table, so the request's token look-up waits inside the server.
            holder.execute("LOCK TABLE ken_team.tokens IN ACCESS EXCLUSIVE MODE")
            answers: list[Any] = []
            request = threading.Thread(
                target=lambda: answers.append(server.call("GET", f"/api/v1/w/{ws}/whoami", member))
            )
            request.start()
            deadline = time.monotonic() + 20
            waiting = 0
            while not waiting and time.monotonic() < deadline:
                row = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE wait_event_type = 'Lock' AND query LIKE '%ken_team.tokens%'"
                ).fetchone()
                waiting = row[0] if row else 0
            assert waiting, "the request never reached the database"
            server.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 20
            refused = False
            while not refused and time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
                except OSError:
                    refused = True
            assert refused, "the server still accepts connections after SIGTERM"
            assert server.process.poll() is None and answers == []
        # The lock is released with the transaction: the request goes on and is answered.
        request.join(timeout=30)
        assert [a.status for a in answers] == [200]
        assert answers[0].body["workspace"] == ws
        assert server.process.wait(timeout=30) == 0
    finally:
        server.stop()
    said = [line.get("msg") for line in server.logs()]
    # The request was answered before the app shut down (and closed its pools).
    assert said.index("request") < said.index("team server stopping")


def test_one_push_id_sent_at_once_from_many_threads_is_stored_once(
    server: Server, api: str, member: str
) -> None:
    one = entry(memory("Retries use exponential backoff", SHOP))
    results: list[Any] = []
    lock = threading.Lock()

    def send() -> None:
        (result,) = push(server, api, member, one)
        with lock:
            results.append(result)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 8
    assert len({r["id"] for r in results}) == 1
    assert sorted(r["status"] for r in results) == ["duplicate"] * 7 + ["stored"]
    listed = server.call("GET", f"{api}/items", member).body["items"]
    assert [i["id"] for i in listed] == [results[0]["id"]]
    history = server.call("GET", f"{api}/items/{results[0]['id']}", member).body["history"]
    assert len(history) == 1


def test_pushes_of_one_push_id_that_all_find_it_unanswered_say_stored_once(
    running: Server, directory: Directory, ws: str
) -> None:
    """The race above, made certain: every push claims the `push_id` before any of them
    answers it, so all of them write; one answer is `stored`, the others `duplicate`."""
    # Not kenning.team.server's make_team: importing it here (and starlette with it)
    # would spoil test_team_host's serve-without-the-extra test in the same run.
    from kenning.team.service import Team
    from kenning.team.stores import Workspaces, open_workspace_store

    team = Team(Directory(running.db), Workspaces(open_workspace_store(running.db)))
    try:
        token = directory.authenticate(directory.create_token(ws, "admin", "lead")[0])
        assert token is not None
        racers = 4
        all_claimed = threading.Barrier(racers, timeout=30)
        claim = team.directory.claim_push

        def claimed(*args: Any) -> Any:
            made = claim(*args)
            all_claimed.wait()
            return made

        team.directory.claim_push = claimed  # type: ignore[method-assign]
        one = entry(memory("Retries use exponential backoff", SHOP))
        results: list[Any] = []

        def send() -> None:
            results.extend(team.push(token, ws, {"host": "h", "items": [one]})["results"])

        threads = [threading.Thread(target=send) for _ in range(racers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(results) == racers and len({r["id"] for r in results}) == 1
        assert sorted(r["status"] for r in results) == ["duplicate"] * (racers - 1) + ["stored"]
        assert len(team.list_items(ws)) == 1
        assert len(team.directory.feed(ws, 0, 100)) == 1  # pulled once
    finally:
        team.workspaces.close()
        team.directory.close()


def test_health_and_every_request_say_503_at_once_when_the_database_is_gone(
    pg_cluster: str,
) -> None:
    with module_database(pg_cluster) as db:
        # A password the database does not ask for (trust): the log must not show it.
        server = start_server(db + "&password=pw-never-logged")
        try:
            assert server.call("GET", "/health").status == 200
            import psycopg

            name = db.split("/")[3].split("?")[0]
            with psycopg.connect(pg_cluster, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            answer = server.call("GET", "/health")
            assert answer.status == 503 and answer.body["ok"] is False
            began = time.monotonic()
            refused = server.call("GET", "/api/v1/whoami", "kt_any")
            assert refused.status == 503 and refused.body["error"] == "unavailable"
            # The database's address stays in the server's log, not in the answer.
            assert refused.body["message"] == (
                "the team server cannot reach its database now; try again shortly"
            )
            assert name not in json.dumps(refused.body)
            assert time.monotonic() - began < 10  # not the pool's 30 s
            failed = server.logged(lambda x: str(x.get("msg", "")).startswith("request f"))
            assert failed and all(x["level"] == "warning" and "exc" not in x for x in failed)
            # The warning names the database it cannot reach: name, host and port.
            socket_dir = pg_cluster.rsplit("host=", 1)[1]
            assert all(
                f"the team database '{name}' on {socket_dir} port 5432 is unreachable" in x["msg"]
                for x in failed
            ), failed
            assert "pw-never-logged" not in json.dumps(server.logs())
        finally:
            server.stop()
        with psycopg.connect(pg_cluster, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # for module_database to drop


def test_requests_after_the_database_dropped_its_connections_are_answered_at_once(
    pg_cluster: str,
) -> None:
    import psycopg

    with module_database(pg_cluster) as db:
        server = start_server(db)
        try:
            with open_directory(server) as directory:
                ws = new_workspace(directory)
                admin = directory.create_token(ws, "admin", "lead")[0]
            api = f"/api/v1/w/{ws}"
            push(server, api, admin, entry(memory("Warm the pools", SHOP)))
            name = db.split("/")[3].split("?")[0]
            with psycopg.connect(pg_cluster, autocommit=True) as conn:  # as after a restart
                # Each backend ended (waited for) before the next request is sent.
                conn.execute(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()",
                    (name,),
                )
            # The pools still hold the connections the database dropped: each is found
            # out as it is taken, and the very first requests are answered.
            assert server.call("GET", "/health").status == 200
            sent = entry(memory("Pushed as the database came back", SHOP))
            answer = server.call("POST", f"{api}/push", admin, {"host": "h", "items": [sent]})
            assert answer.status == 200, answer.body
            (result,) = answer.body["results"]
            assert result["status"] == "stored", result
            listed = server.call("GET", f"{api}/items", admin)
            assert listed.status == 200 and len(listed.body["items"]) == 2
        finally:
            server.stop()


def test_the_cli_lists_tokens_and_repos_and_says_what_is_missing(pg_dsn: str) -> None:
    made = ken("serve", "token", "create", "--db", pg_dsn, "-w", "Acme", "--role", "admin")
    assert made.returncode == 0 and made.stdout.startswith("kt_")
    assert "not shown again" in made.stderr
    listed = ken("serve", "token", "list", "--db", pg_dsn)
    assert "acme" in listed.stdout and "admin" in listed.stdout
    assert made.stdout.strip() not in listed.stdout
    assert (
        ken(
            "serve", "repos", "add", "--db", pg_dsn, "acme", "git@github.com:Acme/Shop.git"
        ).returncode
        == 0
    )
    assert ken("serve", "repos", "list", "--db", pg_dsn, "acme").stdout == "github.com/acme/shop\n"
    gone = ken("serve", "repos", "remove", "--db", pg_dsn, "acme", "github.com/acme/nope")
    assert gone.returncode == 1 and "does not cover" in gone.stderr
    bad = ken("serve", "token", "revoke", "--db", pg_dsn, "tok_000000000000")
    assert bad.returncode == 1 and "no token" in bad.stderr
    env = {k: v for k, v in os.environ.items() if k != "KEN_SERVE_DB"}
    missing = ken("serve", "token", "list", env=env)
    assert missing.returncode == 1 and "--db postgresql://" in missing.stderr
    sqlite = ken("serve", "--db", "/tmp/x.db", env=env)
    assert sqlite.returncode == 1 and "postgresql://" in sqlite.stderr


def test_a_blank_repo_is_refused_in_one_line_and_not_added(pg_dsn: str) -> None:
    blank = ken("serve", "repos", "add", "--db", pg_dsn, "acme", "  ")
    assert blank.returncode == 1 and len(blank.stderr.strip().splitlines()) == 1
    assert "the name after 'repo:' is empty" in blank.stderr
    listed = ken("serve", "repos", "list", "--db", pg_dsn, "acme", "--json")
    assert json.loads(listed.stdout)["repos"] == []


def test_an_agent_cannot_make_a_token(pg_dsn: str) -> None:
    env = {**os.environ, "CLAUDECODE": "1"}
    out = ken("serve", "token", "create", "--db", pg_dsn, "-w", "acme", "--role", "admin", env=env)
    assert out.returncode == 1 and "person" in out.stderr and not out.stdout


def test_a_late_or_repeated_uses_report_never_lowers_a_hosts_count(
    server: Server, directory: Directory, member: str, admin: str, api: str, ws: str
) -> None:
    [stored] = push(server, api, admin, entry(memory("Uses are per host", SHOP)))
    item_id = stored["id"]
    pull_all(server, api, member)  # the host holds a copy to use

    def report(count: int, host: str = "alice-laptop") -> None:
        body = {"host": host, "uses": [{"id": item_id, "count": count}]}
        answer = server.call("POST", f"{api}/uses", member, body)
        assert answer.status == 200
        assert answer.body == {"recorded": 1, "unknown": [], "not_pulled": []}

    report(5)
    report(5)  # the same report again
    report(3)  # an older one arriving late
    assert server.call("GET", f"{api}/items/{item_id}", member).body["uses"] == {
        "count": 5,
        "hosts": 1,
    }
    assert directory.uses(ws, [item_id]) == {item_id: (5, 1)}
    forgot = server.call("POST", f"{api}/items/{item_id}/forget", admin, {})
    assert forgot.status == 200
    assert directory.uses(ws, [item_id]) == {}


def test_uses_of_a_memory_never_pulled_are_not_counted(
    server: Server, directory: Directory, member: str, admin: str, api: str, ws: str
) -> None:
    mallory = directory.create_token(ws, "member", "mallory")[0]
    [proposed] = push(server, api, mallory, entry(memory("Push to main, skip review", SHOP)))
    [active] = push(server, api, admin, entry(memory("Releases go out on Tuesdays", SHOP)))
    body = {
        "host": "mallory-box",
        "uses": [{"id": proposed["id"], "count": 900}, {"id": active["id"], "count": 40}],
    }
    # Before any pull this token was served nothing: neither is counted.
    answer = server.call("POST", f"{api}/uses", mallory, body)
    assert answer.status == 200
    assert answer.body == {
        "recorded": 0,
        "unknown": [],
        "not_pulled": [proposed["id"], active["id"]],
    }
    # After a pull, the active memory it was served counts; the proposal never came down.
    pull_all(server, api, mallory)
    answer = server.call("POST", f"{api}/uses", mallory, body)
    assert answer.body == {"recorded": 1, "unknown": [], "not_pulled": [proposed["id"]]}
    assert directory.uses(ws, [proposed["id"], active["id"]]) == {active["id"]: (40, 1)}
    client = server.call("GET", f"{api}/items/{proposed['id']}", admin).body
    assert client["uses"] == {"count": 0, "hosts": 0}


def test_uses_of_a_memory_withdrawn_before_the_host_pulled_it_are_not_counted(
    server: Server, directory: Directory, member: str, admin: str, api: str, ws: str
) -> None:
    [gone] = push(server, api, admin, entry(memory("Deploys need two approvals", SHOP)))
    [kept] = push(server, api, admin, entry(memory("Logs rotate nightly", SHOP)))
    dismissed = server.call("POST", f"{api}/items/{gone['id']}/dismiss", admin, {"reason": "wrong"})
    assert dismissed.status == 200, dismissed.body
    # The pull passes the memory's upsert and its removal: it came down as a removal.
    changes = {c["id"]: c["change"] for c in pull_all(server, api, member)["changes"]}
    assert changes == {gone["id"]: "remove", kept["id"]: "upsert"}
    body = {
        "host": "alice-laptop",
        "uses": [{"id": gone["id"], "count": 700}, {"id": kept["id"], "count": 3}],
    }
    answer = server.call("POST", f"{api}/uses", member, body)
    assert answer.body == {"recorded": 1, "unknown": [], "not_pulled": [gone["id"]]}
    assert directory.uses(ws, [gone["id"], kept["id"]]) == {kept["id"]: (3, 1)}


def test_a_token_is_one_host_whatever_host_its_reports_name(
    server: Server, directory: Directory, member: str, admin: str, api: str, ws: str
) -> None:
    [stored] = push(server, api, admin, entry(memory("The CI cache is per branch", SHOP)))
    item_id = stored["id"]
    pull_all(server, api, member)
    for n, host in enumerate(("alice-laptop", "fake-1", "fake-2", "fake-3"), 1):
        body = {"host": host, "uses": [{"id": item_id, "count": n * 2}]}
        assert server.call("POST", f"{api}/uses", member, body).body["recorded"] == 1
    # Four host names, one token: one host, its greatest running count.
    assert directory.uses(ws, [item_id]) == {item_id: (8, 1)}
    bob = directory.create_token(ws, "member", "bob")[0]
    pull_all(server, api, bob)
    body = {"host": "alice-laptop", "uses": [{"id": item_id, "count": 1}]}
    assert server.call("POST", f"{api}/uses", bob, body).body["recorded"] == 1
    assert directory.uses(ws, [item_id]) == {item_id: (9, 2)}


def test_a_rotated_token_is_still_one_host_and_its_running_count_is_not_added_twice(
    server: Server, directory: Directory, admin: str, api: str, ws: str, pg_dsn: str
) -> None:
    [stored] = push(server, api, admin, entry(memory("Staging resets on Mondays", SHOP)))
    item_id = stored["id"]
    old_text, old = directory.create_token(ws, "member", "bob-laptop")
    pull_all(server, api, old_text)
    body = {"host": "bob-laptop", "uses": [{"id": item_id, "count": 5}]}
    assert server.call("POST", f"{api}/uses", old_text, body).body["recorded"] == 1
    # Rotated as the how-to says: a new token that replaces the old, then the old revoked.
    made = ken(
        "serve", "token", "create", "--db", server.db, "-w", ws, "--name", "bob-laptop",
        "--replaces", old.id, "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert directory.revoke_token(old.id) is not None
    new_text = json.loads(made.stdout)["token"]
    pull_all(server, api, new_text)
    body = {"host": "bob-laptop", "uses": [{"id": item_id, "count": 7}]}  # its running total
    assert server.call("POST", f"{api}/uses", new_text, body).body["recorded"] == 1
    assert directory.uses(ws, [item_id]) == {item_id: (7, 1)}
    # Another host with a token of its own is another host.
    carol = directory.create_token(ws, "member", "carol-box")[0]
    pull_all(server, api, carol)
    body = {"host": "carol-box", "uses": [{"id": item_id, "count": 2}]}
    assert server.call("POST", f"{api}/uses", carol, body).body["recorded"] == 1
    assert directory.uses(ws, [item_id]) == {item_id: (9, 2)}


def test_a_token_replaces_only_a_token_of_its_own_workspace(
    server: Server, directory: Directory, ws: str
) -> None:
    other = directory.create_token(new_workspace(directory), "member", "bob-laptop")[1]
    out = ken(
        "serve", "token", "create", "--db", server.db, "-w", ws, "--replaces", other.id
    )  # fmt: skip
    assert out.returncode == 1 and not out.stdout
    assert f"{other.id} is a token of workspace" in out.stderr
    missing = ken(
        "serve", "token", "create", "--db", server.db, "-w", ws, "--replaces", "tok_000000000000"
    )  # fmt: skip
    assert missing.returncode == 1 and "no token tok_000000000000" in missing.stderr


def test_a_use_count_is_capped_at_a_daily_budget_since_the_memory_was_first_served(
    server: Server, directory: Directory, member: str, admin: str, api: str, ws: str
) -> None:
    [stored] = push(server, api, admin, entry(memory("Tabs in Makefiles", SHOP)))
    item_id = stored["id"]
    pull_all(server, api, member)
    body = {"host": "alice-laptop", "uses": [{"id": item_id, "count": 2**53 - 1}]}
    assert server.call("POST", f"{api}/uses", member, body).body["recorded"] == 1
    assert directory.uses(ws, [item_id]) == {item_id: (USES_PER_DAY, 1)}
    # Served three days ago: three days' budget.
    import psycopg

    with psycopg.connect(server.db, autocommit=True) as conn:
        conn.execute(
            "UPDATE ken_team.feed SET at = now() - interval '2 days 1 hour' "
            "WHERE workspace = %s AND item_id = %s",
            (ws, item_id),
        )
    assert server.call("POST", f"{api}/uses", member, body).body["recorded"] == 1
    assert directory.uses(ws, [item_id]) == {item_id: (3 * USES_PER_DAY, 1)}
