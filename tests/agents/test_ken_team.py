"""Team memory end to end: two hosts (two sandboxes: two HOMEs, two stores, every `ken`
its own process) against one real `ken serve` on the test PostgreSQL. Host A's person
adds a repo memory and syncs; the team's admin approves it on the review page, in the
distribution's headless Chromium (Playwright); host B's real Claude Code CLI, run against
the stub model with kenning's hooks from `ken integrate claude`, is told it at
SessionStart: the hook synced before it made the pack. Host B never ran `ken team sync`.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import teamserver
from teamserver import directory_cover, directory_token, start_server

from . import harness
from .harness import Sandbox
from .stubs import AnthropicStub, Text

REPO = "github.com/acme/shop"
WORKSPACE = "acme"
DECISION = "Payments webhooks are retried by the queue, never by the handler"
PROMPT = "Where should the webhook retry go?"
FINAL = "In the queue, as the team decided."


def ken(box: Sandbox, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = teamserver.ken(*args, cwd=box.repo, env=box.env, input=stdin, timeout=120)
    assert done.returncode == 0, f"ken {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def ken_json(box: Sandbox, *args: str) -> Any:
    return json.loads(ken(box, *args, "--json").stdout)


def with_origin(box: Sandbox) -> None:
    """The sandbox repo as a clone of the team's repo (so its repo scope is the team's)."""
    subprocess.run(
        ["git", "remote", "add", "origin", "git@github.com:Acme/Shop.git"],
        cwd=box.repo,
        env=box.env,
        check=True,
        capture_output=True,
        timeout=30,
    )


@pytest.fixture
def chromium() -> Iterator[Any]:
    """The distribution's Chromium, headless, through Playwright (never a download)."""
    binary = teamserver.chromium_binary()
    if not binary:
        reason = "the distribution's chromium is not installed (apt-get install chromium)"
        if os.environ.get("KEN_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    with teamserver.headless_chromium(binary) as browser:
        yield browser


def approve_on_the_page(browser: Any, url: str, admin: str, server_id: str, title: str) -> None:
    """What the team's admin does: sign in on the review page, approve the memory."""
    from playwright.sync_api import expect

    page = browser.new_context().new_page()
    page.set_default_timeout(20_000)
    page.goto(url + "/")
    page.get_by_label("Admin token").fill(admin)
    page.get_by_label("Admin token").press("Enter")
    expect(page.get_by_role("heading", name="Memories waiting for review")).to_be_visible()
    card = page.locator(f"#m-{server_id}")
    expect(card.get_by_text("proposed by alice on alice")).to_be_visible()
    card.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_have_text(f"Approved “{title}”.")
    page.context.close()


@pytest.mark.agents
@pytest.mark.postgres
@pytest.mark.browser
def test_a_memory_approved_on_the_page_reaches_claude_code_on_another_host_at_start(
    pg_dsn: str, anthropic_stub: AnthropicStub, claude_bin: Path, tmp_path: Path, chromium: Any
) -> None:
    server = start_server(pg_dsn)
    try:
        directory_cover(pg_dsn, WORKSPACE, REPO)
        admin = directory_token(pg_dsn, WORKSPACE, "admin", "lead")
        host_a = harness.make_sandbox(tmp_path / "host-a", "claude", anthropic_stub.url)
        host_b = harness.prepare_claude(tmp_path / "host-b", anthropic_stub.url, claude_bin)
        for box, name in ((host_a, "alice"), (host_b, "bob")):
            with_origin(box)
            token = directory_token(pg_dsn, WORKSPACE, "member", name)
            ken(box, "team", "join", server.url, "--token", "-", "--host", name, stdin=token)

        # Host A: a person's repo memory (active at once), pushed as a proposal.
        added = ken_json(host_a, "add", DECISION, "--kind", "decision", "--scope", "repo")
        assert added["scope"] == f"repo:{REPO}" and added["status"] == "active"
        assert ken_json(host_a, "team", "sync")["pushed"] == 1

        # The admin approves it on the review page.
        listed = server.call("GET", f"/api/v1/w/{WORKSPACE}/items?status=proposed", admin)
        [waiting] = listed.body["items"]
        assert waiting["title"] == DECISION and waiting["origin"]["name"] == "alice"
        approve_on_the_page(chromium, server.url, admin, waiting["id"], DECISION)
        got = server.call("GET", f"/api/v1/w/{WORKSPACE}/items/{waiting['id']}", admin)
        assert got.body["status"] == "active"

        # Host B: Claude Code with kenning's hooks; its SessionStart syncs, then packs.
        ken(host_b, "integrate", "claude")
        host_b.env["KEN_TEAM_START_TIMEOUT"] = "10"  # a loaded CI machine, not a slow server
        anthropic_stub.queue(Text(FINAL))
        done = harness.run_claude(host_b, PROMPT, timeout=120)
        assert done.returncode == 0, done.stderr[-4000:]
        assert FINAL in done.stdout
        requests = anthropic_stub.model_requests()
        assert requests, "Claude Code never called the model"
        first = "\n".join([requests[0].raw, json.dumps(requests[0].body)])
        assert DECISION in first

        pack = ken(host_b, "pack").stdout
        assert DECISION in pack
        [copy] = ken_json(host_b, "list", "--scope", f"repo:{REPO}")
        assert copy["provenance"]["how"] == "sync"
        assert copy["source"] == f"team:{WORKSPACE}#{waiting['id']}"
        log = Path(host_b.env["XDG_STATE_HOME"]) / "kenning" / "log"
        assert "team sync" not in (log.read_text() if log.exists() else "")
    finally:
        assert server.stop() == 0
