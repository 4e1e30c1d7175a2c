"""The team server's HTTP face: Starlette routes over `kenning.team.service.Team`.

Starlette rather than FastAPI: the API is a dozen routes whose bodies the service checks
itself (as every kenning face leaves checking to the library), so FastAPI's pydantic
models and generated schema would be a second copy of the contract, and a heavier
dependency, for nothing the server uses. `docs/reference/team-api.md` is the contract.

The service is synchronous (psycopg and the stores are), so each route reads its body
and runs the service call in Starlette's thread pool. One middleware times every
request, counts it for `/metrics`, writes its JSON log line and refuses bodies over
4 MiB. uvicorn stops gracefully on SIGTERM: it stops accepting, lets the requests in
flight finish, then the lifespan closes the pool.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kenning import __version__
from kenning.errors import InvalidInput, KenningError, NotFound, StoreError
from kenning.team.observe import Metrics
from kenning.team.service import Team, TeamError

MAX_BODY = 4 * 1024 * 1024
log = logging.getLogger("kenning.team")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.detail = detail or message  # what the server's log says; `message` is sent


def error_of(exc: Exception) -> ApiError:
    """The HTTP answer for an error the service raised."""
    match exc:
        case ApiError():
            return exc
        case TeamError():
            return ApiError(exc.status, exc.code, str(exc))
        case NotFound():
            return ApiError(404, "not_found", str(exc))
        case StoreError():
            # The store's own words name its database (host, socket, schema): the log
            # keeps them, the client is told only that it may try again.
            said = "the team server cannot reach its database now; try again shortly"
            return ApiError(503, "unavailable", said, detail=str(exc))
        case InvalidInput() | KenningError():
            return ApiError(400, "bad_request", str(exc))
    return ApiError(500, "internal", "the server failed; its log says why")


def error_response(err: ApiError) -> JSONResponse:
    return JSONResponse({"error": err.code, "message": err.message}, status_code=err.status)


class Observe:
    """Times, counts and logs each request; refuses a body over MAX_BODY."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: Sequence[BaseRoute] = ()) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500
        state: dict[str, Any] = {}
        scope.setdefault("state", {})["log"] = state
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY:
            if (route := self._route_of(scope)) is not None:
                scope["route"] = route  # answered before the router: its route, logged
            response = error_response(ApiError(413, "too_large", "the body is over 4 MiB"))
            await response(scope, receive, send)
            self._done(scope, 413, began, state)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > MAX_BODY:
                    raise ApiError(413, "too_large", "the body is over 4 MiB")
            return message

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, limited, sending)
        finally:
            self._done(scope, status, began, state)

    def _route_of(self, scope: Scope) -> BaseRoute | None:
        """The route the router would take (the first full match, else the first whose
        path matches but not its method, as Starlette's router chooses)."""
        partial = None
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route
            if match is Match.PARTIAL and partial is None:
                partial = route
        return partial

    def _done(self, scope: Scope, status: int, began: float, state: dict[str, Any]) -> None:
        seconds = time.perf_counter() - began
        route = scope.get("route")
        name = getattr(route, "path", None) or "(unmatched)"
        self.metrics.observe(scope["method"], name, status, seconds)
        log.info(
            "request",
            extra={
                "method": scope["method"],
                "route": name,
                "path": scope["path"],
                "status": status,
                "ms": round(seconds * 1000, 2),
                "workspace": state.get("workspace"),
                "token_id": state.get("token_id"),
                "error": state.get("error"),
            },
        )


Handler = Callable[[Request], Awaitable[Response]]


def build_app(
    team: Team,
    *,
    metrics: Metrics | None = None,
    extra_routes: list[Route] | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> Starlette:
    """The ASGI app of the team server."""
    metrics = metrics or Metrics()

    def api(handler: Callable[[Request], Awaitable[Any]]) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                result = await handler(request)
            except Exception as exc:
                err = error_of(exc)
                request.scope["state"]["log"]["error"] = err.code
                if err.status == 500:  # a bug: its traceback
                    log.error("request failed", exc_info=exc)
                elif err.status > 500:  # the database is away: said, not a bug
                    log.warning("request failed: %s", err.detail)
                return error_response(err)
            return result if isinstance(result, Response) else JSONResponse(result)

        return endpoint

    async def caller(request: Request, *, admin: bool = False) -> tuple[Any, str]:
        token = await run_in_threadpool(team.authenticate, request.headers.get("authorization"))
        state = request.scope["state"]["log"]
        state["token_id"] = token.id
        workspace = request.path_params.get("ws")
        if workspace is None:
            return token, token.workspace
        name = team.check(token, workspace, admin=admin)
        state["workspace"] = name
        return token, name

    async def body_of(request: Request) -> Any:
        raw = await request.body()
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"the body is not JSON: {exc}") from None

    def int_param(request: Request, name: str, default: int) -> int:
        text = request.query_params.get(name)
        if text is None or text == "":
            return default
        try:
            return int(text)
        except ValueError:
            raise InvalidInput(f"'{name}' must be a whole number") from None

    async def health(request: Request) -> Response:
        ok = await run_in_threadpool(team.directory.ping)
        return JSONResponse({"ok": ok, "version": __version__}, status_code=200 if ok else 503)

    async def metrics_page(request: Request) -> Response:
        await caller(request)
        return PlainTextResponse(
            metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    async def whoami(request: Request) -> Any:
        token, _ = await caller(request)
        return team.whoami(token)

    async def repos(request: Request) -> Any:
        _, ws = await caller(request)
        return {"repos": await run_in_threadpool(team.repos, ws)}

    async def push(request: Request) -> Any:
        token, ws = await caller(request)
        body = await body_of(request)
        answer = await run_in_threadpool(team.push, token, ws, body)
        metrics.count_push(answer["results"])
        return answer

    async def uses(request: Request) -> Any:
        token, ws = await caller(request)
        body = await body_of(request)
        return await run_in_threadpool(team.record_uses, token, ws, body)

    async def pull(request: Request) -> Any:
        token, ws = await caller(request)
        since = request.query_params.get("since")
        limit = int_param(request, "limit", 500)
        answer = await run_in_threadpool(team.pull, token, ws, since, limit)
        metrics.count_pull(len(answer["changes"]))
        return answer

    async def list_items(request: Request) -> Any:
        _, ws = await caller(request)
        params = request.query_params
        limit = max(1, min(int_param(request, "limit", 100), 1000))
        found = await run_in_threadpool(
            team.list_items, ws, params.get("status") or None, params.get("q"), limit
        )
        return {"items": found}

    async def get_item(request: Request) -> Any:
        _, ws = await caller(request)
        return await run_in_threadpool(team.get_item, ws, request.path_params["id"])

    async def act(request: Request) -> Any:
        token, ws = await caller(request, admin=True)
        body = await body_of(request)
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object")
        reason, note = body.get("reason"), body.get("note")
        if not isinstance(reason, str | None) or not isinstance(note, str | None):
            raise InvalidInput("'reason' and 'note' must be text")
        return await run_in_threadpool(
            team.act,
            token,
            ws,
            request.path_params["id"],
            request.path_params["action"],
            reason,
            note,
        )

    async def not_found(request: Request) -> Any:
        await caller(request)
        raise ApiError(404, "not_found", f"no endpoint {request.method} {request.url.path}")

    async def unrouted(request: Request, exc: Exception) -> Response:
        """Starlette's own answers, for a path outside the API no route takes (404) or a
        method its route does not (405): JSON, as every other answer."""
        status = getattr(exc, "status_code", 404)
        code = {404: "not_found", 405: "method_not_allowed"}.get(status)
        message = f"no endpoint {request.method} {request.url.path}" if code else str(exc)
        err = ApiError(status, code or "bad_request", message)
        request.scope["state"]["log"]["error"] = err.code
        response = error_response(err)
        response.headers.update(getattr(exc, "headers", None) or {})  # 405's Allow
        return response

    prefix = "/api/v1/w/{ws}"
    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/metrics", api(metrics_page), methods=["GET"]),
        Route("/api/v1/whoami", api(whoami), methods=["GET"]),
        Route(f"{prefix}/whoami", api(whoami), methods=["GET"]),
        Route(f"{prefix}/repos", api(repos), methods=["GET"]),
        Route(f"{prefix}/push", api(push), methods=["POST"]),
        Route(f"{prefix}/pull", api(pull), methods=["GET"]),
        Route(f"{prefix}/uses", api(uses), methods=["POST"]),
        Route(f"{prefix}/items", api(list_items), methods=["GET"]),
        Route(f"{prefix}/items/{{id}}", api(get_item), methods=["GET"]),
        Route(f"{prefix}/items/{{id}}/{{action}}", api(act), methods=["POST"]),
        *(extra_routes or []),
        Route("/api/{rest:path}", api(not_found), methods=["GET", "POST", "PUT", "DELETE"]),
    ]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        log.info("team server ready")
        yield
        log.info("team server stopping")
        if on_shutdown is not None:
            await run_in_threadpool(on_shutdown)

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: unrouted})
    app.add_middleware(Observe, metrics=metrics, routes=routes)
    return app
