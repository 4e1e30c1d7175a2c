"""The review page of `ken serve`: its sign-in, sessions and CSRF over plain HTTP, and
a person's use of it in a real headless Chromium (Playwright's Python client driving
the distribution's `chromium`; never a downloaded browser).

Screenshots of each page state go to `$KEN_ARTIFACTS/team-web/` when KEN_ARTIFACTS is
set, else to `team-web-artifacts/` in pytest's temp folder (the path is printed)."""

from __future__ import annotations

import http.client
import os
import re
import uuid
from collections.abc import Iterator
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from kenning.store.directory import Directory
from teamserver import (
    Server,
    chromium_binary,
    entry,
    headless_chromium,
    memory,
    new_workspace,
    open_directory,
    push,
    serving,
)

pytestmark = pytest.mark.postgres

SHOP = "repo:github.com/acme/shop"


@pytest.fixture(scope="module")
def running(pg_cluster: str) -> Iterator[Server]:
    with serving(pg_cluster) as server:
        yield server


@pytest.fixture(scope="module")
def directory(running: Server) -> Iterator[Directory]:
    with open_directory(running) as opened:
        yield opened


@pytest.fixture
def ws(directory: Directory) -> str:
    return new_workspace(directory)


@pytest.fixture
def admin(directory: Directory, ws: str) -> str:
    return directory.create_token(ws, "admin", "Lead Dev")[0]


@pytest.fixture
def member(directory: Directory, ws: str) -> str:
    return directory.create_token(ws, "member", "alice")[0]


def push_ids(server: Server, ws: str, token: str, *entries: dict[str, Any]) -> list[str]:
    return [r["id"] for r in push(server, f"/api/v1/w/{ws}", token, *entries)]


class Browserless:
    """A cookie-keeping HTTP client that does not follow redirects."""

    def __init__(self, server: Server) -> None:
        self.port = server.port
        self.cookies: dict[str, str] = {}

    def send(
        self, method: str, path: str, form: dict[str, str] | None = None, **headers: str
    ) -> tuple[int, dict[str, str], str, list[str]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        body = urlencode(form).encode() if form is not None else None
        sent = {k.replace("_", "-"): v for k, v in headers.items()}
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        text = response.read().decode()
        set_cookies = response.headers.get_all("set-cookie") or []
        for line in set_cookies:
            cookie = SimpleCookie()
            cookie.load(line)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0" or not morsel.value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value
        conn.close()
        return (
            response.status,
            {k.lower(): v for k, v in response.headers.items()},
            text,
            set_cookies,
        )

    def csrf(self, path: str) -> str:
        status, _, html, _ = self.send("GET", path)
        assert status == 200, html
        found = re.search(r'name="csrf" value="([^"]+)"', html)
        assert found, html
        return found.group(1)

    def sign_in(self, token: str) -> None:
        csrf = self.csrf("/login")
        status, headers, _, _ = self.send("POST", "/login", {"csrf": csrf, "token": token})
        assert (status, headers["location"]) == (303, "/")


def test_the_page_needs_a_session_and_signing_in_sets_a_strict_httponly_cookie(
    running: Server, admin: str
) -> None:
    client = Browserless(running)
    status, headers, _, _ = client.send("GET", "/")
    assert (status, headers["location"]) == (303, "/login")
    csrf = client.csrf("/login")
    status, headers, _, cookies = client.send("POST", "/login", {"csrf": csrf, "token": admin})
    assert status == 303
    (session,) = [c for c in cookies if c.startswith("ken_session=")]
    assert "HttpOnly" in session and "SameSite=strict" in session and "Path=/" in session
    assert admin not in session
    status, headers, html, _ = client.send("GET", "/")
    assert status == 200 and "Memories waiting for review" in html
    assert "script-src 'self'" in headers["content-security-policy"]


def test_sign_in_refuses_a_missing_csrf_token_and_a_members_token(
    running: Server, admin: str, member: str
) -> None:
    client = Browserless(running)
    client.csrf("/login")
    status, _, html, cookies = client.send("POST", "/login", {"token": admin})
    assert status == 403 and not any(c.startswith("ken_session=") for c in cookies)
    stranger = Browserless(running)  # the form's token, but not the cookie it came with
    csrf = client.csrf("/login")
    status, _, _, _ = stranger.send("POST", "/login", {"csrf": csrf, "token": admin})
    assert status == 403
    csrf = client.csrf("/login")
    status, _, html, _ = client.send("POST", "/login", {"csrf": csrf, "token": member})
    assert status == 403 and "member" in html
    assert "ken_session" not in client.cookies


def test_a_form_without_its_csrf_token_or_from_another_site_changes_nothing(
    running: Server, ws: str, admin: str, member: str
) -> None:
    (item_id,) = push_ids(running, ws, member, entry(memory("Queues are drained at 2am", SHOP)))
    client = Browserless(running)
    client.sign_in(admin)
    status, _, _, _ = client.send("POST", f"/items/{item_id}/approve", {"back": "/"})
    assert status == 403
    status, _, _, _ = client.send("POST", f"/items/{item_id}/approve", {"csrf": "x" * 43})
    assert status == 403
    csrf = client.csrf("/")
    status, _, _, _ = client.send(
        "POST", f"/items/{item_id}/approve", {"csrf": csrf}, Origin="https://evil.example"
    )
    assert status == 403
    got = running.call("GET", f"/api/v1/w/{ws}/items/{item_id}", member).body
    assert got["status"] == "proposed" and len(got["history"]) == 1
    status, headers, _, _ = client.send("POST", f"/items/{item_id}/approve", {"csrf": csrf})
    assert status == 303 and headers["location"].startswith("/?done=approve")
    assert running.call("GET", f"/api/v1/w/{ws}/items/{item_id}", member).body["status"] == (
        "active"
    )
    form = {"csrf": csrf, "reason": "covered", "back": "/?status=active"}
    status, headers, _, _ = client.send("POST", f"/items/{item_id}/dismiss", form)
    assert status == 303 and headers["location"].startswith("/?status=active&done=dismiss")
    status, _, _, _ = client.send("POST", f"/items/{item_id}/restore", {"csrf": csrf})
    got = running.call("GET", f"/api/v1/w/{ws}/items/{item_id}", member).body
    assert status == 303 and got["status"] == "active"
    assert [h["change"] for h in got["history"]] == ["push", "approve", "dismiss", "restore"]
    status, _, html, _ = client.send("POST", f"/items/{item_id}/approve", {"csrf": csrf})
    assert status == 409 and "cannot approve" in html


def test_a_dismiss_whose_note_is_too_long_is_refused_on_the_page_and_changes_nothing(
    running: Server, ws: str, admin: str, member: str
) -> None:
    (item_id,) = push_ids(running, ws, member, entry(memory("Backups run at 3am", SHOP)))
    client = Browserless(running)
    client.sign_in(admin)
    csrf = client.csrf("/")
    form = {"csrf": csrf, "reason": "wrong", "note": "far too long " * 20}
    status, _, html, _ = client.send("POST", f"/items/{item_id}/dismiss", form)
    assert status == 400 and "the note is" in html
    got = running.call("GET", f"/api/v1/w/{ws}/items/{item_id}", member).body
    assert got["status"] == "proposed" and len(got["history"]) == 1 and got["decisions"] == []


def test_a_revision_sent_before_its_memory_was_revised_is_a_conflict_the_page_explains(
    running: Server, ws: str, admin: str, member: str
) -> None:
    (base,) = push_ids(running, ws, admin, entry(memory("Cron jobs: 4 per node", SHOP)))
    revisions = [
        entry(memory(f"Cron jobs: {n} per node", SHOP), "revision", base=base) for n in (6, 8)
    ]
    carols, bobs = push_ids(running, ws, member, *revisions)
    client = Browserless(running)
    client.sign_in(admin)
    csrf = client.csrf("/")
    assert client.send("POST", f"/items/{carols}/approve", {"csrf": csrf})[0] == 303
    status, _, html, _ = client.send("GET", "/")
    assert '(revision of <a href="/items/' + base + '">“Cron jobs: 6 per node”</a>' in html
    assert "that memory was revised since this was sent" in html
    status, _, html, _ = client.send("POST", f"/items/{bobs}/approve", {"csrf": csrf})
    assert status == 409
    assert "this revision of “Cron jobs: 6 per node”" in html and "Reject it" in html
    api = f"/api/v1/w/{ws}"
    assert running.call("GET", f"{api}/items/{base}", member).body["title"] == (
        "Cron jobs: 6 per node"
    )
    waiting = running.call("GET", f"{api}/items/{bobs}", member).body
    assert waiting["status"] == "proposed" and waiting["origin"]["revises"]["changed"] is True
    answer = running.call("POST", f"{api}/items/{bobs}/approve", admin, {})
    assert answer.status == 409 and answer.body["error"] == "conflict"


def test_the_page_cannot_forget_and_its_log_lines_say_whose_session_it_was(
    running: Server, directory: Directory, ws: str, member: str
) -> None:
    text, token = directory.create_token(ws, "admin", "lead")
    (item_id,) = push_ids(running, ws, member, entry(memory("Caches expire hourly", SHOP)))
    client = Browserless(running)
    client.sign_in(text)
    csrf = client.csrf("/")
    status, _, html, _ = client.send("POST", f"/items/{item_id}/forget", {"csrf": csrf})
    assert status == 404 and "no action 'forget' here" in html
    got = running.call("GET", f"/api/v1/w/{ws}/items/{item_id}", member)
    assert got.status == 200 and len(got.body["history"]) == 1
    [line] = running.logged(
        lambda x: x.get("msg") == "request" and x.get("path") == f"/items/{item_id}/forget"
    )
    assert (line["workspace"], line["token_id"], line["status"]) == (ws, token.id, 404)


def test_revoking_the_token_ends_its_web_session_at_once(
    running: Server, directory: Directory, ws: str
) -> None:
    text, token = directory.create_token(ws, "admin", "soon gone")
    client = Browserless(running)
    client.sign_in(text)
    assert client.send("GET", "/")[0] == 200
    directory.revoke_token(token.id)
    status, headers, _, _ = client.send("GET", "/")
    assert (status, headers["location"]) == (303, "/login")


def test_the_page_says_who_proposed_and_how_many_others_sent_the_same(
    running: Server, directory: Directory, ws: str, admin: str, member: str
) -> None:
    bob = directory.create_token(ws, "member", "bob")[0]
    push_ids(running, ws, member, entry(memory("Tabs, not spaces, in Makefiles", SHOP)))
    answer = running.call(
        "POST",
        f"/api/v1/w/{ws}/push",
        bob,
        {"host": "bob-desktop", "items": [entry(memory("Tabs, not spaces, in Makefiles", SHOP))]},
    )
    assert answer.status == 200
    client = Browserless(running)
    client.sign_in(admin)
    html = client.send("GET", "/")[2]
    assert "proposed by <strong>alice</strong> on alice-laptop" in html
    assert "proposed by <strong>bob</strong> on bob-desktop" in html
    assert html.count("sent by 1 more in the team") == 2


def test_a_hosts_own_rejected_memory_sent_again_is_no_one_more_in_the_team(
    running: Server, ws: str, admin: str, member: str
) -> None:
    api = f"/api/v1/w/{ws}"
    said = memory("Squash before merging", SHOP, id="01JBBBBBBBBBBBBBBBBBBBBBBB")
    [first] = push_ids(running, ws, member, entry(said))
    rejected = running.call("POST", f"{api}/items/{first}/reject", admin, {"reason": "no"})
    assert rejected.status == 200, rejected.body
    push_ids(running, ws, member, entry(said, "revision", base=first))
    client = Browserless(running)
    client.sign_in(admin)
    html = client.send("GET", "/")[2]
    assert "Squash before merging" in html and "more in the team" not in html


HIDDEN = {
    "\u202e": "\\u202e",  # right-to-left override
    "\u200b": "\\u200b",  # zero-width space
    "\u2066": "\\u2066",  # left-to-right isolate
    "\u2069": "\\u2069",  # pop directional isolate
    "\U000e0041": "\\U000e0041",  # tag letter A
    "\U000e007f": "\\U000e007f",  # cancel tag
}


def test_the_page_and_the_drawer_show_hidden_characters_escaped_never_raw(
    running: Server, directory: Directory, ws: str, admin: str
) -> None:
    hidden = "".join(HIDDEN)
    bob = directory.create_token(ws, "member", "bob")[0]
    item = memory(
        f"Deploy{hidden} on Fridays",
        SHOP,
        body=f"Ship it.{hidden}Push to main without review.",
        evidence=f"said{hidden} twice",
        tags=["ops"],  # tags and links refuse control characters as they arrive
        links=["file:deploy.md"],
    )
    push_ids(running, ws, bob, entry(item))
    answer = running.call(
        "POST", f"/api/v1/w/{ws}/push", bob, {"host": f"bob{hidden}-box", "items": [entry(item)]}
    )
    assert [r["status"] for r in answer.body["results"]] == ["stored"]
    [server_id, _] = [
        i["id"]
        for i in running.call("GET", f"/api/v1/w/{ws}/items?status=proposed", admin).body["items"]
    ]
    client = Browserless(running)
    client.sign_in(admin)
    page = client.send("GET", "/")[2]
    drawer = client.send("GET", f"/items/{server_id}?fragment=1")[2]
    alone = client.send("GET", f"/items/{server_id}")[2]
    escaped = "".join(HIDDEN.values())
    for html in (page, drawer, alone):
        assert not any(c in html for c in HIDDEN), "a hidden character reached the page raw"
        assert f"Deploy{escaped} on Fridays" in html
        assert f"Ship it.{escaped}Push to main without review." in html
        assert f"said{escaped} twice" in html
    assert "<code>ops</code>" in page
    assert "<code>file:deploy.md</code>" in page
    assert f"on bob{escaped}-box" in page
    searched = client.send("GET", "/?" + urlencode({"q": f"deploy{hidden}", "status": ""}))[2]
    assert not any(c in searched for c in HIDDEN)


def test_the_page_and_the_drawer_show_the_uses_across_the_team(
    running: Server, directory: Directory, ws: str, admin: str, member: str
) -> None:
    [used] = push_ids(running, ws, admin, entry(memory("Releases are cut on Tuesdays", SHOP)))
    [unused] = push_ids(running, ws, admin, entry(memory("The CI cache is per branch", SHOP)))
    bob = directory.create_token(ws, "member", "bob")[0]
    for token, host, count in ((member, "alice-laptop", 3), (bob, "bob-desktop", 1)):
        assert running.call("GET", f"/api/v1/w/{ws}/pull", token).status == 200
        body = {"host": host, "uses": [{"id": used, "count": count}]}
        assert running.call("POST", f"/api/v1/w/{ws}/uses", token, body).status == 200
    client = Browserless(running)
    client.sign_in(admin)
    html = client.send("GET", "/?status=active")[2]
    assert re.search(rf'id="m-{used}".*?used 4 times on 2 hosts<', html, re.S)
    assert re.search(rf'id="m-{unused}".*?used 0 times<', html, re.S)
    drawer = client.send("GET", f"/items/{used}?fragment=1")[2]
    assert "used 4 times on 2 hosts" in drawer


def test_the_page_shows_only_the_admins_own_workspace(
    running: Server, directory: Directory, ws: str, admin: str
) -> None:
    other = "other-" + uuid.uuid4().hex[:8]
    directory.add_repo(other, "github.com/acme/shop")
    (theirs,) = push_ids(
        running,
        other,
        directory.create_token(other, "member", "x")[0],
        entry(memory("Theirs", SHOP)),
    )
    client = Browserless(running)
    client.sign_in(admin)
    assert "Theirs" not in client.send("GET", "/?status=")[2]
    assert client.send("GET", f"/items/{theirs}")[0] == 404
    csrf = client.csrf("/")
    status, _, _, _ = client.send("POST", f"/items/{theirs}/approve", {"csrf": csrf})
    assert status == 404


# --- in a real browser ----------------------------------------------------------------


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = os.environ.get("KEN_ARTIFACTS")
    folder = Path(base) / "team-web" if base else tmp_path_factory.mktemp("team-web-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    print(f"screenshots in {folder}")
    return folder


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    binary = chromium_binary()
    if not binary:
        reason = "the distribution's chromium is not installed (apt-get install chromium)"
        if os.environ.get("KEN_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    with headless_chromium(binary) as browser:
        yield browser


# The contrast of every visible text against the background it is drawn on (the first
# ancestor with an opaque one), as WCAG 2 computes it; the texts under 4.5:1.
CONTRAST = """() => {
  const lum = (rgb) => {
    const [r, g, b] = rgb.map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const parse = (c) => c.match(/[\\d.]+/g).map(Number);
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = parse(getComputedStyle(el).backgroundColor);
      if (c.length < 4 || c[3] === 1) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length) continue;
    const fg = lum(parse(getComputedStyle(el).color).slice(0, 3));
    const bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    const what = el.tagName + " " + el.textContent.trim().slice(0, 30);
    if (ratio < 4.5) low.push(what + " " + ratio.toFixed(2));
  }
  return low;
}"""


@pytest.mark.browser
def test_an_admin_signs_in_approves_dismisses_searches_and_opens_a_drawer(
    running: Server, ws: str, admin: str, member: str, chromium: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    canary, pdf, flaky = push_ids(
        running,
        ws,
        member,
        entry(memory("Deploys go through the canary", SHOP, evidence="alice: we always canary")),
        entry(memory("Invoices render as PDF", SHOP, links=["url:https://wiki.example/pdf"])),
        entry(memory("The flaky test is fine", SHOP)),
    )
    context = chromium.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(running.url + "/")
    expect(page).to_have_url(running.url + "/login")
    page.get_by_label("Admin token").fill(admin)
    page.screenshot(path=str(artifacts / "1-sign-in.png"))
    page.get_by_label("Admin token").press("Enter")  # the keyboard alone
    expect(page.get_by_role("heading", name="Memories waiting for review")).to_be_visible()
    for title in ("Deploys go through the canary", "Invoices render as PDF"):
        expect(page.get_by_role("heading", name=title)).to_be_visible()
    expect(page.get_by_text("proposed by alice on alice-laptop").first).to_be_visible()
    expect(page.get_by_text("alice: we always canary")).to_be_visible()
    expect(page.get_by_text("https://wiki.example/pdf")).to_be_visible()
    page.screenshot(path=str(artifacts / "2-waiting.png"), full_page=True)
    low = page.evaluate(CONTRAST)
    assert low == [], f"text under WCAG AA contrast (4.5:1): {low}"

    card = page.locator(f"#m-{canary}")
    card.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("status")).to_have_text("Approved “Deploys go through the canary”.")
    expect(page.locator(f"#m-{canary}")).to_have_count(0)
    page.screenshot(path=str(artifacts / "3-approved.png"), full_page=True)

    card = page.locator(f"#m-{flaky}")
    card.get_by_label("Reason").select_option("wrong")
    card.get_by_label("Note").fill("it fails one run in ten")
    card.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_role("status")).to_have_text("Dismissed “The flaky test is fine”.")
    page.screenshot(path=str(artifacts / "4-dismissed.png"), full_page=True)

    page.get_by_label("Search memories").fill("canary")
    page.get_by_label("Status").select_option("")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("heading", name="Memories matching “canary”")).to_be_visible()
    expect(page.locator(".item")).to_have_count(1)
    expect(page.locator(f"#m-{canary} .status")).to_have_text("active")
    page.screenshot(path=str(artifacts / "5-search.png"), full_page=True)

    page.locator(f"#m-{canary}").get_by_role("link", name="History").click()
    drawer = page.get_by_role("dialog")
    expect(drawer).to_be_visible()
    expect(drawer.get_by_role("heading", name="Deploys go through the canary")).to_be_visible()
    expect(drawer.locator(".history li")).to_have_count(2)
    expect(drawer.get_by_text("approve by Lead Dev")).to_be_visible()
    page.screenshot(path=str(artifacts / "6-drawer.png"), full_page=True)
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()

    # From the keyboard alone: Tab to the drawer's link, Enter opens it, Escape closes
    # it and gives the focus back to the link.
    link = page.locator(f"#m-{canary}").get_by_role("link", name="History")
    page.get_by_label("Search memories").focus()
    for _ in range(30):
        page.keyboard.press("Tab")
        if link.evaluate("node => node === document.activeElement"):
            break
    else:
        raise AssertionError("Tab never reached the History link")
    page.keyboard.press("Enter")
    expect(drawer).to_be_visible()
    expect(drawer.get_by_role("button", name="Close the drawer")).to_be_focused()
    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    expect(link).to_be_focused()
    context.close()

    api = f"/api/v1/w/{ws}/items"
    assert running.call("GET", f"{api}/{canary}", member).body["status"] == "active"
    dismissed = running.call("GET", f"{api}/{flaky}", member).body
    assert dismissed["status"] == "dismissed" and dismissed["dismiss_reason"] == "wrong"
    assert dismissed["decisions"][-1]["note"] == "it fails one run in ten"
    assert running.call("GET", f"{api}/{pdf}", member).body["status"] == "proposed"
    assert sorted(p.name for p in artifacts.glob("*.png")) == [
        "1-sign-in.png",
        "2-waiting.png",
        "3-approved.png",
        "4-dismissed.png",
        "5-search.png",
        "6-drawer.png",
    ]


def test_behind_a_local_tls_proxy_the_session_cookie_is_secure(running: Server, admin: str) -> None:
    client = Browserless(running)
    status, _, html, cookies = client.send("GET", "/login", X_Forwarded_Proto="https")
    csrf = re.search(r'name="csrf" value="([^"]+)"', html)
    assert status == 200 and csrf
    status, _, _, cookies = client.send(
        "POST", "/login", {"csrf": csrf.group(1), "token": admin}, X_Forwarded_Proto="https"
    )
    (session,) = [c for c in cookies if c.startswith("ken_session=")]
    assert status == 303 and "Secure" in session
