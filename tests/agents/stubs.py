"""Stub model servers for driving agent CLIs offline.

Each stub listens on 127.0.0.1 (port picked by the OS), records every request it receives
and answers model calls from a script: a queue of :class:`Text` / :class:`ToolCall` replies,
consumed in order, after which every model call gets the default text reply.

    with AnthropicStub([ToolCall("mcp__ken__recall", {"query": "x"}), Text("done")]) as stub:
        env["ANTHROPIC_BASE_URL"] = stub.url
        ...
        assert "marker" in stub.all_request_text()
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import socket
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

DEFAULT_REPLY = "Stub reply: nothing scripted."
MAX_BODY = 64 * 1024 * 1024
SOCKET_TIMEOUT = 30.0


@dataclass(frozen=True)
class Text:
    """A plain assistant text answer that ends the turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """An assistant tool call; the agent runs the tool and sends the result next request.

    ``name`` is the tool's name as the agent offers it to the model: ``mcp__NAME__TOOL`` for
    Claude Code and Codex, ``mcp_NAME_TOOL`` for Gemini, ``NAME_TOOL`` for OpenCode and
    ``NAME-TOOL`` for Copilot CLI.  For Codex the stub sends that as
    namespace ``mcp__NAME`` plus name ``TOOL``, which is how Codex offers MCP tools.
    ``call_id`` defaults to a fresh id (Gemini gets none unless one is given).
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None


Reply = Text | ToolCall


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # path with query string, as sent
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None when the body is empty or not JSON
    raw: str  # body as text (utf-8, undecodable bytes replaced)
    reply: Reply | None = None  # the scripted reply it got, for model calls

    @property
    def route(self) -> str:
        """The path without the query string."""
        return urlsplit(self.path).path


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes


def sse(events: Iterable[tuple[str | None, Any]]) -> bytes:
    """Encode ``(event name or None, JSON payload)`` pairs as a server-sent-events body."""
    chunks = []
    for name, payload in events:
        head = f"event: {name}\n" if name else ""
        chunks.append(f"{head}data: {json.dumps(payload, separators=(',', ':'))}\n\n")
    return "".join(chunks).encode()


def parse_sse(body: bytes | str) -> list[tuple[str | None, Any]]:
    """Decode an SSE body back into ``(event name or None, parsed JSON)`` pairs."""
    text = body.decode() if isinstance(body, bytes) else body
    events: list[tuple[str | None, Any]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name: str | None = None
        data: list[str] = []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].strip())
        events.append((name, json.loads("\n".join(data)) if data else None))
    return events


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 64  # the default 5 makes bursts of connections wait for SYN retries

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up early (or is cut off by stop()) is not a stub failure.
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            return
        super().handle_error(request, client_address)


class StubServer:
    """Base class: HTTP plumbing, recording and the reply script.

    Subclasses say which requests are model calls (:meth:`is_model_call`) and how to render
    a reply (:meth:`render`); anything else gets :meth:`other` (404 by default).
    """

    name = "stub"

    def __init__(self, replies: Iterable[Reply] = (), default: str = DEFAULT_REPLY) -> None:
        self.default = default
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._script: deque[Reply] = deque(replies)
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> StubServer:
        if self._server is not None:
            return self
        stub = self

        class Handler(BaseHTTPRequestHandler):
            timeout = SOCKET_TIMEOUT  # never block forever on a silent client

            def setup(self) -> None:
                super().setup()
                stub._track(self.connection, True)

            def finish(self) -> None:
                try:
                    super().finish()
                finally:
                    stub._track(self.connection, False)

            def do_GET(self) -> None:
                stub._serve(self)

            def do_POST(self) -> None:
                stub._serve(self)

            def do_PUT(self) -> None:
                stub._serve(self)

            def do_HEAD(self) -> None:
                stub._serve(self, head=True)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = _QuietServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.name}-server",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        with self._lock:
            open_connections = list(self._connections)
        for connection in open_connections:  # wake handlers blocked on a silent client
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if thread is not None:
            thread.join(timeout=10)
        deadline = time.monotonic() + 10
        with self._changed:
            while self._connections and time.monotonic() < deadline:
                self._changed.wait(0.05)

    def _track(self, connection: socket.socket, opened: bool) -> None:
        with self._changed:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)
            self._changed.notify_all()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{self.name} stub is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Base URL, ``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------- script

    def queue(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    def pending(self) -> list[Reply]:
        """Scripted replies not yet consumed."""
        with self._lock:
            return list(self._script)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._script.popleft() if self._script else Text(self.default)

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}"

    # ---------------------------------------------------------------- recording

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def model_requests(self) -> list[RecordedRequest]:
        """Only the requests that were model calls (the ones that consumed the script)."""
        return [r for r in self.requests if r.reply is not None]

    def all_request_text(self) -> str:
        """Every recorded body (and path) as one string, to assert that text reached the model.

        Bodies are included both raw and JSON-decoded-then-re-encoded without ASCII escaping,
        so a marker matches whatever escaping the client used.
        """
        parts = []
        for request in self.requests:
            parts.append(request.path)
            parts.append(request.raw)
            if request.body is not None:
                parts.append(json.dumps(request.body, ensure_ascii=False))
                parts.extend(_strings(request.body))
        return "\n".join(parts)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        """Wait (bounded) until at least ``count`` requests arrived; True when they did."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    # ---------------------------------------------------------------- protocol hooks

    def is_model_call(self, method: str, route: str, body: Any) -> bool:
        raise NotImplementedError

    def render(self, reply: Reply, body: Any, route: str) -> Response:
        raise NotImplementedError

    def other(self, method: str, route: str, body: Any) -> Response:
        return _json_response({"error": {"message": f"stub: no route {method} {route}"}}, 404)

    # ---------------------------------------------------------------- plumbing

    def _serve(self, handler: BaseHTTPRequestHandler, head: bool = False) -> None:
        raw = _decode_body(_read_body(handler), handler.headers.get("Content-Encoding", ""))
        try:
            body = json.loads(raw) if raw.strip() else None
        except ValueError:
            body = None
        method = handler.command
        route = urlsplit(handler.path).path
        reply: Reply | None = None
        try:
            if self.is_model_call(method, route, body):
                reply = self._next_reply()
                response = self.render(reply, body, route)
            else:
                response = self.other(method, route, body)
        except Exception as exc:  # a broken stub should say so to the client, not hang
            response = _json_response({"error": {"message": f"stub error: {exc!r}"}}, 500)
        record = RecordedRequest(
            method=method,
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            raw=raw,
            reply=reply,
        )
        with self._changed:
            self._requests.append(record)
            self._changed.notify_all()
        handler.send_response(response.status)
        handler.send_header("Content-Type", response.content_type)
        handler.send_header("Content-Length", str(len(response.body)))
        handler.send_header("Connection", "close")
        if response.content_type.startswith("text/event-stream"):
            handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        if not head:
            handler.wfile.write(response.body)
            handler.wfile.flush()
        handler.close_connection = True


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        chunks = []
        total = 0
        while total <= MAX_BODY:
            size = int(handler.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline(1024)  # CRLF after each chunk
            total += size
        return b"".join(chunks)
    length = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(min(length, MAX_BODY)) if length > 0 else b""


def _decode_body(data: bytes, encoding: str) -> str:
    encoding = encoding.strip().lower()
    try:
        if encoding == "gzip":
            data = gzip.decompress(data)
        elif encoding == "deflate":
            data = zlib.decompress(data)
    except (OSError, zlib.error, EOFError):
        pass  # keep the raw bytes; the recording shows what arrived
    return data.decode("utf-8", errors="replace")


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (so nested JSON-in-strings can be searched)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _json_response(payload: Any, status: int = 200) -> Response:
    return Response(status, "application/json", json.dumps(payload).encode())


def _sse_response(events: Iterable[tuple[str | None, Any]]) -> Response:
    return Response(200, "text/event-stream; charset=utf-8", sse(events))


# ===================================================================== Anthropic


class AnthropicStub(StubServer):
    """Anthropic Messages API: ``POST /v1/messages`` (streamed or not)."""

    name = "anthropic"

    def is_model_call(self, method: str, route: str, body: Any) -> bool:
        return method == "POST" and route == "/v1/messages"

    def other(self, method: str, route: str, body: Any) -> Response:
        if method == "POST" and route == "/v1/messages/count_tokens":
            return _json_response({"input_tokens": 1})
        return super().other(method, route, body)

    def content_blocks(self, reply: Reply) -> list[dict[str, Any]]:
        if isinstance(reply, Text):
            return [{"type": "text", "text": reply.text}]
        return [
            {
                "type": "tool_use",
                "id": reply.call_id or self.new_id("toolu_stub"),
                "name": reply.name,
                "input": reply.args,
            }
        ]

    def render(self, reply: Reply, body: Any, route: str) -> Response:
        model = (body or {}).get("model", "claude-stub")
        blocks = self.content_blocks(reply)
        stop_reason = "tool_use" if isinstance(reply, ToolCall) else "end_turn"
        message = {
            "id": self.new_id("msg_stub"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        if not (body or {}).get("stream"):
            done = dict(message, content=blocks, stop_reason=stop_reason)
            return _json_response(done)
        events: list[tuple[str | None, Any]] = [
            ("message_start", {"type": "message_start", "message": message})
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = dict(block, input={})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append(("content_block_start", {"content_block": start}))
            events.append(("content_block_delta", {"delta": delta}))
            events.append(("content_block_stop", {}))
            for name, payload in events[-3:]:
                payload.update(type=name, index=index)
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": 1},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return _sse_response(events)


# ===================================================================== OpenAI Responses


class OpenAIResponsesStub(StubServer):
    """OpenAI Responses API as Codex uses it: ``POST /v1/responses`` streamed."""

    name = "openai"

    def is_model_call(self, method: str, route: str, body: Any) -> bool:
        return method == "POST" and route.endswith("/responses")

    def output_item(self, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, Text):
            return {
                "type": "message",
                "role": "assistant",
                "id": self.new_id("msg_stub"),
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        item: dict[str, Any] = {
            "type": "function_call",
            "id": self.new_id("fc_stub"),
            "call_id": reply.call_id or self.new_id("call_stub"),
            "name": reply.name,
            "arguments": json.dumps(reply.args),
        }
        # Codex offers MCP tools as namespace "mcp__NAME" + tool name; accept either the
        # full "mcp__NAME__TOOL" or an explicit namespace-free name.
        if reply.name.startswith("mcp__") and reply.name.count("__") >= 2:
            namespace, _, tool = reply.name.rpartition("__")
            item["namespace"], item["name"] = namespace, tool
        return item

    def render(self, reply: Reply, body: Any, route: str) -> Response:
        response_id = self.new_id("resp_stub")
        usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        return _sse_response(
            [
                (
                    "response.created",
                    {"type": "response.created", "response": {"id": response_id}},
                ),
                (
                    "response.output_item.done",
                    {
                        "type": "response.output_item.done",
                        "output_index": 0,
                        "item": self.output_item(reply),
                    },
                ),
                (
                    "response.completed",
                    {
                        "type": "response.completed",
                        "response": {"id": response_id, "usage": usage},
                    },
                ),
            ]
        )


# ===================================================================== Gemini


class GeminiStub(StubServer):
    """Gemini API: ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``."""

    name = "gemini"

    def is_model_call(self, method: str, route: str, body: Any) -> bool:
        return method == "POST" and (
            route.endswith(":streamGenerateContent") or route.endswith(":generateContent")
        )

    def other(self, method: str, route: str, body: Any) -> Response:
        if method == "POST" and route.endswith(":countTokens"):
            return _json_response({"totalTokens": 1})
        return super().other(method, route, body)

    def candidate(self, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, Text):
            part: dict[str, Any] = {"text": reply.text}
        else:
            call: dict[str, Any] = {"name": reply.name, "args": reply.args}
            if reply.call_id:
                call["id"] = reply.call_id
            part = {"functionCall": call}
        return {
            "content": {"role": "model", "parts": [part]},
            "finishReason": "STOP",
            "index": 0,
        }

    def render(self, reply: Reply, body: Any, route: str) -> Response:
        payload = {
            "candidates": [self.candidate(reply)],
            "usageMetadata": {
                "promptTokenCount": 1,
                "candidatesTokenCount": 1,
                "totalTokenCount": 2,
            },
        }
        if route.endswith(":streamGenerateContent"):
            return _sse_response([(None, payload)])
        return _json_response(payload)


# ===================================================================== OpenAI Chat Completions


class OpenAIChatStub(StubServer):
    """OpenAI Chat Completions, streamed, as OpenCode and Copilot CLI speak it:
    ``POST /v1/chat/completions``.

    Only requests that offer tools take the next scripted reply: OpenCode sends a title
    request (no ``tools``) before the first turn of a new session, and that one gets
    :attr:`title` as its answer without using up the script.
    """

    name = "openai-chat"
    title = "Stub session title"

    def is_model_call(self, method: str, route: str, body: Any) -> bool:
        return (
            method == "POST"
            and route.endswith("/chat/completions")
            and isinstance(body, dict)
            and bool(body.get("tools"))
        )

    def other(self, method: str, route: str, body: Any) -> Response:
        if method == "POST" and route.endswith("/chat/completions"):
            return self.render(Text(self.title), body, route)
        if method == "GET" and route.endswith("/models"):
            model = {"id": "stub-model", "object": "model", "created": 0, "owned_by": "stub"}
            return _json_response({"object": "list", "data": [model]})
        return super().other(method, route, body)

    def message(self, reply: Reply) -> dict[str, Any]:
        """The whole assistant message of a reply (what the stream adds up to)."""
        if isinstance(reply, Text):
            return {"role": "assistant", "content": reply.text}
        call = {
            "id": reply.call_id or self.new_id("call_stub"),
            "type": "function",
            "function": {"name": reply.name, "arguments": json.dumps(reply.args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def render(self, reply: Reply, body: Any, route: str) -> Response:
        head = {
            "id": self.new_id("chatcmpl-stub"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": (body or {}).get("model", "stub-model"),
        }
        message = self.message(reply)
        finish = "tool_calls" if isinstance(reply, ToolCall) else "stop"
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if not (body or {}).get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return _json_response(
                dict(head, object="chat.completion", choices=[choice], usage=usage)
            )
        if isinstance(reply, Text):
            deltas = [{"role": "assistant", "content": ""}, {"content": reply.text}]
        else:
            [call] = message["tool_calls"]
            opening = dict(call, index=0, function={"name": reply.name, "arguments": ""})
            arguments = {"index": 0, "function": {"arguments": call["function"]["arguments"]}}
            deltas = [
                {"role": "assistant", "content": None, "tool_calls": [opening]},
                {"tool_calls": [arguments]},
            ]
        chunks: list[tuple[str | None, Any]] = [
            (None, dict(head, choices=[{"index": 0, "delta": d, "finish_reason": None}]))
            for d in [*deltas, {}]
        ]
        chunks[-1][1]["choices"][0]["finish_reason"] = finish
        chunks.append((None, dict(head, choices=[], usage=usage)))
        return Response(200, "text/event-stream; charset=utf-8", sse(chunks) + b"data: [DONE]\n\n")
