"""A real `ken serve` for the tests: the installed `ken` in a subprocess, on 127.0.0.1
and a port the kernel picks, against a test's own PostgreSQL database; and a small
HTTP client over urllib (the tests hold the contract, not a client library)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from conftest import KEN_BIN


def ken(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KEN_BIN), *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )


def make_token(db: str, workspace: str, role: str = "member", name: str | None = None) -> str:
    args = ["serve", "token", "create", "--db", db, "--workspace", workspace, "--role", role]
    out = ken(*args, *(["--name", name] if name else []))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def cover(db: str, workspace: str, repo: str) -> None:
    out = ken("serve", "repos", "add", "--db", db, workspace, repo)
    assert out.returncode == 0, out.stderr


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Server:
    db: str
    process: subprocess.Popen[str]
    port: int
    lines: list[str]
    reader: threading.Thread

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        raw: bytes | None = None,
        timeout: float = 30,
    ) -> Answer:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return _answer(response.status, response.read(), dict(response.headers))
        except urllib.error.HTTPError as exc:
            return _answer(exc.code, exc.read(), dict(exc.headers))

    def logs(self) -> list[dict[str, Any]]:
        out = []
        for line in list(self.lines):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                out.append({"raw": line})
        return out

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(timeout=10)
        self.reader.join(timeout=10)
        assert self.process.stderr is not None
        self.process.stderr.close()
        return code


def _answer(status: int, raw: bytes, headers: dict[str, str]) -> Answer:
    kind = headers.get("content-type", headers.get("Content-Type", ""))
    body: Any = json.loads(raw) if raw and "json" in kind else raw.decode(errors="replace")
    return Answer(status, body, {k.lower(): v for k, v in headers.items()})


def start_server(db: str, env: dict[str, str] | None = None) -> Server:
    """`ken serve` on an ephemeral port; returns once it listens."""
    process = subprocess.Popen(
        [str(KEN_BIN), "serve", "--db", db, "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env or dict(os.environ),
    )
    lines: list[str] = []
    ready = threading.Event()
    port: list[int] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            if not port and '"port"' in line:
                port.append(json.loads(line)["port"])
            if "team server ready" in line or "Application startup complete" in line:
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (ready.is_set() and port):
        if process.poll() is not None:
            break
        ready.wait(0.05)
    listening = False
    while port and not listening and time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port[0]), timeout=1).close()
            listening = True
        except OSError:
            time.sleep(0.02)
    if not listening or process.poll() is not None:
        process.kill()
        process.wait(timeout=10)
        reader.join(timeout=10)
        assert process.stderr is not None
        process.stderr.close()
        raise AssertionError("ken serve did not start:\n" + "\n".join(lines[-30:]))
    return Server(db, process, port[0], lines, reader)


def memory(title: str, scope: str, **fields: Any) -> dict[str, Any]:
    """A memory as a host sends it (Item.to_dict()'s fields)."""
    return {
        "id": fields.pop("id", "01JAAAAAAAAAAAAAAAAAAAAAAA"),
        "title": title,
        "body": fields.pop("body", ""),
        "kind": fields.pop("kind", "decision"),
        "scope": scope,
        "status": "active",
        "tags": fields.pop("tags", []),
        "links": fields.pop("links", []),
        "evidence": fields.pop("evidence", "the person said so"),
        "provenance": fields.pop("provenance", {"who": "user", "how": "cli"}),
        "created_at": "2026-11-30T10:00:00.000Z",
        **fields,
    }


def entry(item: dict[str, Any], what: str = "memory", **extra: Any) -> dict[str, Any]:
    return {"push_id": str(uuid.uuid4()), "what": what, "item": item, **extra}


@contextmanager
def module_database(cluster: str) -> Iterator[str]:
    """A database of its own for one test module, dropped after it."""
    import psycopg

    name = f"m_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(cluster, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield cluster.replace("/postgres?", f"/{name}?", 1)
    finally:
        with psycopg.connect(cluster, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
