"""The review page: server-rendered HTML for a workspace's admins, no build step.

- **Sign in** with an admin token at `/login`: the server opens a web session (its
  cookie `ken_session` is `HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS, and only
  its SHA-256 is kept); a session ends when its token is revoked, at once.
- **CSRF**: every form carries the session's CSRF token, and a POST without the right
  one is refused (403) before anything is done; the login form, before there is a
  session, uses a double-submit cookie. A POST whose `Origin` is another site is
  refused too. Pages send a Content-Security-Policy that allows only the page's own
  script and style.
- **The page**: the memories waiting (or any status, or a search), each with who
  proposed it, its evidence and sources, its uses and how many others in the team sent
  the same; approve, reject, dismiss with a reason, restore; a memory's drawer with its
  history and decisions. It works without JavaScript (the drawer is then a page);
  `static/app.js` opens the drawer as a modal dialog. Every control has a label, the
  page is usable from the keyboard alone, and its colours meet WCAG AA contrast.
- **What a memory says is shown as an agent reads it**: every value the templates print
  (title, body, evidence, tags, sources, who sent it and from where) passes through
  `kenning.printable.clean` before the HTML escaping, so a bidi override, a zero-width
  space or tag characters show as `\\u202e`, `\\u200b`, `\\U000e0041`: an admin never
  approves text whose hidden part the agents would still read.

The page calls the same `Team` as the API: no rule lives here.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from kenning.errors import KenningError
from kenning.ids import short_id
from kenning.model import DismissReason
from kenning.printable import clean
from kenning.store.directory import SESSION_DAYS, WebSession
from kenning.team.app import error_of
from kenning.team.service import Team

HERE = Path(__file__).parent
SESSION_COOKIE = "ken_session"
LOGIN_COOKIE = "ken_login_csrf"
STATUSES = ("proposed", "active", "dismissed", "rejected", "archived", "superseded", "")
PAST = {
    "approve": "Approved",
    "reject": "Rejected",
    "dismiss": "Dismissed",
    "restore": "Restored",
}  # the page's actions; forget (a delete) is the API's alone
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make a form's Origin "null"
    "Cache-Control": "no-store",
}


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def web_routes(team: Team) -> list[Route]:
    """The review page's routes."""
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    static = {
        "app.css": ((HERE / "static" / "app.css").read_bytes(), "text/css; charset=utf-8"),
        "app.js": ((HERE / "static" / "app.js").read_bytes(), "text/javascript; charset=utf-8"),
    }

    def page(name: str, code: int = 200, **values: Any) -> HTMLResponse:
        html = env.get_template(name).render(**values)
        return HTMLResponse(html, status_code=code, headers=HEADERS)

    async def session_of(request: Request) -> WebSession | None:
        cookie = request.cookies.get(SESSION_COOKIE)
        if not cookie:
            return None
        session = await run_in_threadpool(team.directory.session, cookie)
        if session is not None:  # the request's log line says whose it was, as the API's
            log = request.scope["state"]["log"]
            log["workspace"], log["token_id"] = session.token.workspace, session.token.id
        return session

    async def form_of(request: Request) -> dict[str, str]:
        if not _same_origin(request):
            raise Refused(403, "this form was sent from another site")
        raw = (await request.body()).decode("utf-8", errors="replace")
        return {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}

    def signed(session: WebSession) -> dict[str, Any]:
        return {
            "signed_in": True,
            "csrf": session.csrf,
            "who": session.token.name,
            "workspace": session.token.workspace,
        }

    async def login_page(request: Request) -> Response:
        csrf = secrets.token_urlsafe(32)
        response = page("login.html", title="Sign in", csrf=csrf)
        _set_cookie(request, response, LOGIN_COOKIE, csrf, max_age=3600)
        return response

    async def login(request: Request) -> Response:
        try:
            form = await form_of(request)
        except Refused as exc:
            return page("login.html", exc.status, title="Sign in", csrf="", error=str(exc))
        expected = request.cookies.get(LOGIN_COOKIE, "")
        if not expected or not hmac.compare_digest(form.get("csrf", ""), expected):
            return page(
                "login.html",
                403,
                title="Sign in",
                csrf="",
                error="this form has expired: load the sign-in page again",
            )
        token = await run_in_threadpool(team.token_of, form.get("token", ""))
        if token is None or token.role != "admin":
            why = (
                "that token is unknown or revoked" if token is None else "that is a member's token"
            )
            csrf = secrets.token_urlsafe(32)
            response = page(
                "login.html", 403, title="Sign in", csrf=csrf, error=f"{why}: use an admin token"
            )
            _set_cookie(request, response, LOGIN_COOKIE, csrf, max_age=3600)
            return response
        cookie, _ = await run_in_threadpool(team.directory.open_session, token)
        done = RedirectResponse("/", status_code=303, headers=HEADERS)
        _set_cookie(request, done, SESSION_COOKIE, cookie, max_age=SESSION_DAYS * 86400)
        done.delete_cookie(LOGIN_COOKIE, path="/")
        return done

    async def logout(request: Request) -> Response:
        session = await session_of(request)
        form = await form_of(request)
        if session is None or not _csrf_ok(form, session):
            return page("login.html", 403, title="Sign in", csrf="", error="sign in again")
        await run_in_threadpool(team.directory.close_session, request.cookies[SESSION_COOKIE])
        response = RedirectResponse("/login", status_code=303, headers=HEADERS)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def index(request: Request, error: str | None = None, status: int = 200) -> Response:
        session = await session_of(request)
        if session is None:
            return RedirectResponse("/login", status_code=303, headers=HEADERS)
        ws = session.token.workspace
        params = request.query_params
        q = params.get("q", "").strip()
        chosen = params.get("status", "" if q else "proposed")
        chosen = chosen if chosen in STATUSES else "proposed"
        found = await run_in_threadpool(team.list_items, ws, chosen or None, q or None, 200)
        twins = await run_in_threadpool(team.same_text_counts, ws, [i["id"] for i in found])
        for item in found:
            item["twins"] = twins.get(item["id"], 0)
        message = ""
        done, done_id = params.get("done"), params.get("id")
        if done in PAST and done_id:
            message = f"{PAST[done]} {short_id(done_id)}."
            title = next((i["title"] for i in found if i["id"] == done_id), None)
            if title is None:
                try:
                    title = (await run_in_threadpool(team.get_item, ws, done_id))["title"]
                except KenningError:
                    title = None
            if title:
                message = f"{PAST[done]} “{title}”."
        if q:
            heading = f"Memories matching “{q}”"
        elif chosen == "proposed":
            heading = "Memories waiting for review"
        else:
            heading = f"{chosen.capitalize() or 'All'} memories"
        return page(
            "index.html",
            status,
            title=heading,
            heading=heading,
            items=found,
            q=q,
            status=chosen,
            statuses=STATUSES,
            reasons=[r.value for r in DismissReason],
            message=message,
            error=error,
            back=_back(request),
            **signed(session),
        )

    async def item_page(request: Request) -> Response:
        session = await session_of(request)
        if session is None:
            return RedirectResponse("/login", status_code=303, headers=HEADERS)
        try:
            item = await run_in_threadpool(
                team.get_item, session.token.workspace, request.path_params["id"]
            )
        except KenningError as exc:
            return page("item_page.html", 404, title="Not found", item=None, error=str(exc))
        if request.query_params.get("fragment"):
            return page("drawer.html", item=item)
        return page("item_page.html", title=item["title"], item=item, **signed(session))

    async def act(request: Request) -> Response:
        session = await session_of(request)
        if session is None:
            return RedirectResponse("/login", status_code=303, headers=HEADERS)
        try:
            form = await form_of(request)
        except Refused as exc:
            return HTMLResponse(str(exc), status_code=exc.status, headers=HEADERS)
        if not _csrf_ok(form, session):
            return HTMLResponse(
                "refused: this form has no valid CSRF token; load the page again",
                status_code=403,
                headers=HEADERS,
            )
        item_id, action = request.path_params["id"], request.path_params["action"]
        if action not in PAST:
            return HTMLResponse(
                f"no action '{action}' here: use approve, reject, dismiss or restore",
                status_code=404,
                headers=HEADERS,
            )
        try:
            await run_in_threadpool(
                team.act,
                session.token,
                session.token.workspace,
                item_id,
                action,
                form.get("reason") or None,
                form.get("note") or None,
            )
        except KenningError as exc:
            return await index(request, error=str(exc), status=error_of(exc).status)
        back = _safe_back(form.get("back", "/"))
        parts = urlsplit(back)
        query = [(k, v) for k, v in parse_qs(parts.query).items() if k not in ("done", "id")]
        flat = [(k, x) for k, vs in query for x in vs]
        target = parts.path + "?" + urlencode([*flat, ("done", action), ("id", item_id)])
        return RedirectResponse(target + f"#m-{item_id}", status_code=303, headers=HEADERS)

    async def asset(request: Request) -> Response:
        found = static.get(request.path_params["name"])
        if found is None:
            return Response("not found", status_code=404)
        body, kind = found
        return Response(body, media_type=kind, headers={"Cache-Control": "max-age=300"})

    return [
        Route("/", index, methods=["GET"]),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/items/{id}", item_page, methods=["GET"]),
        Route("/items/{id}/{action}", act, methods=["POST"]),
        Route("/static/{name}", asset, methods=["GET"]),
    ]


def _shown(value: Any) -> Any:
    """A value as the page prints it: text with its invisible and bidi characters escaped
    (Jinja escapes the HTML after this)."""
    if isinstance(value, str) and not hasattr(value, "__html__"):  # markup is the page's own
        return clean(value)
    return value


def _csrf_ok(form: dict[str, str], session: WebSession) -> bool:
    given = form.get("csrf", "")
    return bool(given) and hmac.compare_digest(given, session.csrf)


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _back(request: Request) -> str:
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def _safe_back(back: str) -> str:
    """A path on this site to go back to, never another site's address."""
    if not back.startswith("/") or back.startswith("//") or "\\" in back:
        return "/"
    return back


def _set_cookie(request: Request, response: Response, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
