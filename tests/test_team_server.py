"""`ken serve` over real HTTP on 127.0.0.1, against a real PostgreSQL database: tokens,
whoami, covered repos, push, pull and health (docs/reference/team-api.md)."""

from __future__ import annotations

import http.client
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from teamserver import (
    Server,
    cover,
    entry,
    ken,
    make_token,
    memory,
    module_database,
    start_server,
)

pytestmark = pytest.mark.postgres

SHOP = "repo:github.com/acme/shop"


@pytest.fixture(scope="module")
def running(pg_cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module; each test works in a workspace of its own."""
    with module_database(pg_cluster) as db:
        server = start_server(db, tmp_path_factory.mktemp("serve-data"))
        yield server
        assert server.stop() == 0


@pytest.fixture
def server(running: Server) -> Server:
    return running


@pytest.fixture
def ws(running: Server) -> str:
    name = "acme-" + uuid.uuid4().hex[:8]
    cover(running.db, name, "github.com/acme/shop")
    return name


@pytest.fixture
def api(ws: str) -> str:
    return f"/api/v1/w/{ws}"


@pytest.fixture
def member(server: Server, ws: str) -> str:
    return make_token(server.db, ws, "member", "alice")


@pytest.fixture
def admin(server: Server, ws: str) -> str:
    return make_token(server.db, ws, "admin", "lead")


def push(
    server: Server, api: str, token: str, *entries: dict[str, Any], host: str = "alice-laptop"
) -> Any:
    answer = server.call("POST", f"{api}/push", token, {"host": host, "items": list(entries)})
    assert answer.status == 200, answer.body
    return answer.body["results"]


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
