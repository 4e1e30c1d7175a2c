"""The stub model servers on their own: wire format, script order, recording (no CLI)."""

from __future__ import annotations

import gzip
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from .stubs import (
    DEFAULT_REPLY,
    AnthropicStub,
    GeminiStub,
    OpenAIChatStub,
    OpenAIResponsesStub,
    StubServer,
    Text,
    ToolCall,
    parse_sse,
)


def post(
    stub: StubServer, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, str, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        stub.url + path,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], exc.read()


# ----------------------------------------------------------------------------- Anthropic


def test_anthropic_text_stream() -> None:
    with AnthropicStub([Text("hello from the stub")]) as stub:
        status, ctype, raw = post(stub, "/v1/messages?beta=true", {"model": "m", "stream": True})
    assert status == 200
    assert ctype.startswith("text/event-stream")
    events = parse_sse(raw)
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert all(payload["type"] == name for name, payload in events)
    assert events[0][1]["message"]["role"] == "assistant"
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    assert events[2][1]["delta"] == {"type": "text_delta", "text": "hello from the stub"}
    assert events[4][1]["delta"]["stop_reason"] == "end_turn"


def test_anthropic_tool_call_stream() -> None:
    call = ToolCall("mcp__ken__recall", {"query": "säge", "limit": 3}, call_id="toolu_fixed")
    with AnthropicStub([call]) as stub:
        _, _, raw = post(stub, "/v1/messages", {"model": "m", "stream": True})
    events = parse_sse(raw)
    start = events[1][1]["content_block"]
    assert start == {
        "type": "tool_use",
        "id": "toolu_fixed",
        "name": "mcp__ken__recall",
        "input": {},
    }
    delta = events[2][1]["delta"]
    assert delta["type"] == "input_json_delta"
    assert json.loads(delta["partial_json"]) == {"query": "säge", "limit": 3}
    assert events[4][1]["delta"]["stop_reason"] == "tool_use"
    assert events[-1][0] == "message_stop"


def test_anthropic_non_streaming_and_count_tokens() -> None:
    with AnthropicStub([ToolCall("t", {"a": 1})], default="fallback") as stub:
        _, ctype, raw = post(stub, "/v1/messages", {"model": "m"})
        assert ctype == "application/json"
        message = json.loads(raw)
        assert message["stop_reason"] == "tool_use"
        assert message["content"][0]["type"] == "tool_use"
        assert message["content"][0]["input"] == {"a": 1}
        assert message["content"][0]["id"].startswith("toolu_")
        status, _, raw = post(stub, "/v1/messages/count_tokens", {"model": "m"})
        assert status == 200
        assert json.loads(raw) == {"input_tokens": 1}
        _, _, raw = post(stub, "/v1/messages", {"model": "m"})
        assert json.loads(raw)["content"] == [{"type": "text", "text": "fallback"}]
        assert [r.reply is not None for r in stub.requests] == [True, False, True]


# ----------------------------------------------------------------------------- OpenAI


def test_openai_text_stream() -> None:
    with OpenAIResponsesStub([Text("codex answer")]) as stub:
        _, ctype, raw = post(stub, "/v1/responses", {"model": "gpt", "stream": True})
    assert ctype.startswith("text/event-stream")
    events = parse_sse(raw)
    assert [name for name, _ in events] == [
        "response.created",
        "response.output_item.done",
        "response.completed",
    ]
    assert all(payload["type"] == name for name, payload in events)
    item = events[1][1]["item"]
    assert item["type"] == "message"
    assert item["role"] == "assistant"
    assert item["content"][0] == {"type": "output_text", "text": "codex answer", "annotations": []}
    created, completed = events[0][1]["response"], events[2][1]["response"]
    assert created["id"] == completed["id"]
    assert completed["usage"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


def test_openai_tool_call_splits_mcp_namespace() -> None:
    replies = [ToolCall("mcp__ken__recall", {"query": "x"}, call_id="call_1"), ToolCall("shell")]
    with OpenAIResponsesStub(replies) as stub:
        first = parse_sse(post(stub, "/v1/responses", {"stream": True})[2])[1][1]["item"]
        second = parse_sse(post(stub, "/v1/responses", {"stream": True})[2])[1][1]["item"]
    assert first["type"] == "function_call"
    assert (first["namespace"], first["name"], first["call_id"]) == ("mcp__ken", "recall", "call_1")
    assert json.loads(first["arguments"]) == {"query": "x"}
    assert second["name"] == "shell"
    assert "namespace" not in second
    assert json.loads(second["arguments"]) == {}
    assert second["call_id"] != first["call_id"]


# ----------------------------------------------------------------------------- OpenAI chat


def chat_chunks(raw: bytes) -> list[Any]:
    """The JSON chunks of a Chat Completions stream; it must end with ``data: [DONE]``."""
    lines = [line for line in raw.decode().split("\n\n") if line.strip()]
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]


TOOLS = [{"type": "function", "function": {"name": "ken_memory_search", "parameters": {}}}]


def test_chat_text_stream() -> None:
    with OpenAIChatStub([Text("chat answer")]) as stub:
        _, ctype, raw = post(
            stub, "/v1/chat/completions", {"model": "stub-model", "stream": True, "tools": TOOLS}
        )
    assert ctype.startswith("text/event-stream")
    chunks = chat_chunks(raw)
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "chat answer"
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 2


def test_chat_tool_call_stream_and_plain() -> None:
    replies = [ToolCall("ken_memory_search", {"query": "x"}, call_id="call_1"), ToolCall("other")]
    with OpenAIChatStub(replies) as stub:
        streamed = chat_chunks(
            post(stub, "/v1/chat/completions", {"stream": True, "tools": TOOLS})[2]
        )
        _, ctype, raw = post(stub, "/v1/chat/completions", {"tools": TOOLS})
    opening, arguments = (c["choices"][0]["delta"] for c in streamed[:2])
    [call] = opening["tool_calls"]
    assert (call["id"], call["function"]["name"], call["index"]) == (
        "call_1",
        "ken_memory_search",
        0,
    )
    assert json.loads(arguments["tool_calls"][0]["function"]["arguments"]) == {"query": "x"}
    assert streamed[2]["choices"][0]["finish_reason"] == "tool_calls"
    assert ctype == "application/json"
    plain = json.loads(raw)
    assert plain["choices"][0]["finish_reason"] == "tool_calls"
    [call] = plain["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "other", "arguments": "{}"}


def test_chat_requests_without_tools_do_not_use_the_script() -> None:
    with OpenAIChatStub([Text("scripted")]) as stub:
        title = chat_chunks(post(stub, "/v1/chat/completions", {"stream": True})[2])
        main = chat_chunks(post(stub, "/v1/chat/completions", {"stream": True, "tools": TOOLS})[2])
        assert stub.pending() == []
        assert [r.reply for r in stub.requests] == [None, Text("scripted")]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in title if c["choices"])
    assert text == OpenAIChatStub.title
    assert "scripted" in json.dumps(main)


# ----------------------------------------------------------------------------- Gemini


def test_gemini_stream_and_plain() -> None:
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    replies = [Text("gemini says hi"), ToolCall("mcp_ken_recall", {"query": "q"})]
    with GeminiStub(replies) as stub:
        _, ctype, raw = post(stub, path, {"contents": []})
        assert ctype.startswith("text/event-stream")
        [(name, chunk)] = parse_sse(raw)
        assert name is None
        candidate = chunk["candidates"][0]
        assert candidate["content"] == {"role": "model", "parts": [{"text": "gemini says hi"}]}
        assert candidate["finishReason"] == "STOP"
        assert chunk["usageMetadata"]["totalTokenCount"] == 2
        _, ctype, raw = post(stub, "/v1beta/models/gemini-2.5-flash:generateContent", {})
        assert ctype == "application/json"
        part = json.loads(raw)["candidates"][0]["content"]["parts"][0]
        assert part == {"functionCall": {"name": "mcp_ken_recall", "args": {"query": "q"}}}
        status, _, raw = post(stub, "/v1beta/models/gemini-2.5-flash:countTokens", {})
        assert (status, json.loads(raw)) == (200, {"totalTokens": 1})
        assert [r.route for r in stub.model_requests()] == [
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            "/v1beta/models/gemini-2.5-flash:generateContent",
        ]


# ----------------------------------------------------------------------------- common


def test_script_order_default_and_unknown_routes() -> None:
    with AnthropicStub([Text("one")]) as stub:
        stub.queue(Text("two"))
        assert stub.pending() == [Text("one"), Text("two")]
        status, _, _ = post(stub, "/v1/unknown", {"x": 1})
        assert status == 404
        texts = []
        for _ in range(3):
            _, _, raw = post(stub, "/v1/messages", {"model": "m"})
            texts.append(json.loads(raw)["content"][0]["text"])
        assert texts == ["one", "two", DEFAULT_REPLY]
        assert stub.pending() == []
        assert [r.route for r in stub.requests] == ["/v1/unknown"] + ["/v1/messages"] * 3
        assert stub.requests[0].body == {"x": 1}
        assert stub.requests[0].headers["content-type"] == "application/json"


def test_all_request_text_sees_escaped_and_compressed_bodies() -> None:
    with GeminiStub() as stub:
        # ensure_ascii escaping: the raw text holds \u00fc, the decoded text holds ü
        post(stub, "/v1beta/models/m:generateContent", {"prompt": "marker-grün"})
        # JSON inside a JSON string is found too (Codex ships metadata that way)
        post(stub, "/v1beta/models/m:generateContent", {"meta": json.dumps({"x": "nested-mark"})})
        compressed = gzip.compress(json.dumps({"prompt": "zipped-mark"}).encode())
        post(stub, "/v1beta/models/m:generateContent", compressed, {"Content-Encoding": "gzip"})
        text = stub.all_request_text()
    assert "marker-grün" in text
    assert "nested-mark" in text
    assert "zipped-mark" in text
    assert "not-sent" not in text


def test_concurrent_requests_are_all_recorded() -> None:
    with OpenAIResponsesStub([Text(f"r{i}") for i in range(20)]) as stub:
        threads = [
            threading.Thread(target=post, args=(stub, "/v1/responses", {"n": i})) for i in range(20)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
        assert stub.wait_for_requests(20, timeout=10)
        assert sorted(r.body["n"] for r in stub.requests) == list(range(20))
        replies = sorted(r.reply.text for r in stub.model_requests())  # type: ignore[union-attr]
        assert replies == sorted(f"r{i}" for i in range(20))


def test_wait_is_bounded_and_stop_is_clean() -> None:
    stub = AnthropicStub().start()
    url = stub.url
    assert stub.wait_for_requests(1, timeout=0.2) is False
    stub.stop()
    stub.stop()  # idempotent
    with pytest.raises(RuntimeError):
        _ = stub.port
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/v1/messages", data=b"{}", timeout=2)


def test_stop_does_not_hang_on_a_silent_client() -> None:
    import socket
    import time

    stub = AnthropicStub().start()
    with socket.create_connection(("127.0.0.1", stub.port), timeout=5) as client:
        client.sendall(b"POST /v1/messages HTTP/1.1\r\nContent-Length: 10\r\n\r\n{")
        deadline = time.monotonic() + 10  # until the handler holds the half-sent request
        while not stub._connections and time.monotonic() < deadline:
            with stub._changed:
                stub._changed.wait(0.05)
        assert stub._connections
        stub.stop()
        # The blocked handler was woken and finished (stop gives up on it after 10 s).
        assert stub._connections == set()
