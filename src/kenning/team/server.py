"""Running the team server: the directory, the workspaces' stores, the app and uvicorn.

`serve` blocks until SIGINT or SIGTERM. uvicorn then stops accepting connections and
waits for the requests in flight (at most `grace` seconds) before the app's lifespan
closes the stores and the connection pool: a deploy that restarts the server loses no
push that was already being answered.
"""

from __future__ import annotations

import logging
import signal
import socket
import threading
from importlib.metadata import version

import uvicorn

from kenning.store.directory import Directory
from kenning.team.app import build_app
from kenning.team.observe import Metrics, setup_logging
from kenning.team.service import Team
from kenning.team.stores import Workspaces, open_workspace_store
from kenning.team.web import web_routes

log = logging.getLogger("kenning.team")


def make_team(db_url: str) -> Team:
    directory = Directory(db_url)
    return Team(directory, Workspaces(open_workspace_store(db_url)))


def close_team(team: Team) -> None:
    team.workspaces.close()
    team.directory.close()


def serve(db_url: str, host: str = "127.0.0.1", port: int = 8765, grace: float = 30) -> None:
    setup_logging()
    team = make_team(db_url)
    app = build_app(
        team, metrics=Metrics(), extra_routes=web_routes(team), on_shutdown=lambda: close_team(team)
    )
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    log.info(
        "kenning team server %s listening on http://%s:%d",
        version("kenning"),
        host,
        bound,
        extra={"port": bound},
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=int(grace),
        server_header=False,
        # A TLS proxy on this host (127.0.0.1) says the request was https: the session
        # cookie is then Secure. Forwarded headers from anywhere else are ignored.
        proxy_headers=True,
        forwarded_allow_ips="127.0.0.1",
    )
    if threading.current_thread() is threading.main_thread():
        # uvicorn shuts down gracefully on the signal, then raises it again with the
        # handlers it found: a stop asked for is a clean exit.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _stopped)
    uvicorn.Server(config).run(sockets=[sock])


def _stopped(sig: int, frame: object) -> None:
    raise SystemExit(0)
