"""A real `ken serve` for the tests (and bench/team_load.py): the installed `ken` in a
subprocess, on 127.0.0.1 and a port the kernel picks, against a test's own PostgreSQL
database; a small HTTP client over urllib (the tests hold the contract, not a client
library); and the scaffolding the team tests share (a module's server, its directory, a
fresh workspace, a push, the distribution's headless Chromium).

It imports nothing of pytest's (the bench runs it without pytest)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kenning.store.directory import Directory

KEN_BIN = Path(sys.executable).with_name("ken")
CHROMIUM = "/usr/bin/chromium"


def ken(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 60,
    new_session: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The installed `ken` in a process of its own; its exit code is the caller's to check."""
    return subprocess.run(
        [str(KEN_BIN), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        input=input,
        start_new_session=new_session,
    )


def make_token(db: str, workspace: str, role: str = "member", name: str | None = None) -> str:
    args = ["serve", "token", "create", "--db", db, "--workspace", workspace, "--role", role]
    out = ken(*args, *(["--name", name] if name else []))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def cover(db: str, workspace: str, repo: str) -> None:
    out = ken("serve", "repos", "add", "--db", db, workspace, repo)
    assert out.returncode == 0, out.stderr


def directory_token(db: str, workspace: str, role: str = "member", name: str | None = None) -> str:
    """What `make_token` makes, through the directory in this process: for the tests whose
    subject is not `ken serve token create` (tests/test_team_server.py runs that)."""
    from kenning.store.directory import Directory

    opened = Directory(db, max_size=1)
    try:
        return opened.create_token(workspace, role, name or role)[0]
    finally:
        opened.close()


def directory_cover(db: str, workspace: str, repo: str) -> None:
    """What `cover` does (`repo` given as its key, e.g. github.com/acme/shop), in this
    process, as `directory_token`."""
    from kenning.store.directory import Directory

    opened = Directory(db, max_size=1)
    try:
        opened.add_repo(workspace, repo)
    finally:
        opened.close()


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

    def logged(
        self, wanted: Callable[[dict[str, Any]], bool], count: int = 1, seconds: float = 10
    ) -> list[dict[str, Any]]:
        """The log lines `wanted` keeps, once there are `count` of them (or `seconds` have
        passed): the server writes a request's line as it answers, and the thread that
        reads its output may not have read it yet when the answer arrives."""
        deadline = time.monotonic() + seconds
        while True:
            found = [x for x in self.logs() if wanted(x)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.02)

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


@contextmanager
def serving(cluster: str) -> Iterator[Server]:
    """One `ken serve` for a test module, on a database of its own; it must stop cleanly."""
    with module_database(cluster) as db:
        server = start_server(db)
        yield server
        assert server.stop() == 0


@contextmanager
def open_directory(server: Server) -> Iterator[Directory]:
    """The server's directory, opened in the tests' process (quicker than `ken serve
    token create` in a subprocess, which its own tests run)."""
    from kenning.store.directory import Directory

    opened = Directory(server.db)
    try:
        yield opened
    finally:
        opened.close()


def new_workspace(directory: Directory, repo: str = "github.com/acme/shop") -> str:
    """A workspace of the test's own, covering `repo`."""
    name = "acme-" + uuid.uuid4().hex[:8]
    directory.add_repo(name, repo)
    return name


def push(
    server: Server, api: str, token: str, *entries: dict[str, Any], host: str = "alice-laptop"
) -> Any:
    """POST `entries` to `api`/push (api: /api/v1/w/WS); the results, once it said 200."""
    answer = server.call("POST", f"{api}/push", token, {"host": host, "items": list(entries)})
    assert answer.status == 200, answer.body
    return answer.body["results"]


def chromium_binary() -> str | None:
    """The distribution's Chromium (never a downloaded one), or None."""
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


@contextmanager
def headless_chromium(binary: str) -> Iterator[Any]:
    """`binary` headless through Playwright's Python client."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=binary,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            yield browser
        finally:
            browser.close()
