"""A throwaway PostgreSQL cluster for the tests that need one (marked `postgres`).

`.ci/run` starts one before `make test` and stops it after (`python tests/pgcluster.py
start DIR` prints the connection string; `stop DIR` ends it), and exports the string as
`KEN_TEST_PG`. Without it, the `pg_cluster` fixture starts a cluster of its own in a temp
folder, once per test process, when the PostgreSQL server programs are on this machine.
`initdb` refuses to run as root, so as root the cluster belongs to `nobody`.

The cluster listens on a Unix socket only (no TCP port to collide with), trusts local
connections, and keeps its data on tmpfs where there is one, with fsync off: it holds
nothing worth keeping.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUPERUSER = "kenning"
UNPRIVILEGED = "nobody"


def server_bin() -> Path | None:
    """The folder of `initdb` and `pg_ctl`, or None when PostgreSQL is not installed."""
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False)
        folder = Path(out.stdout.strip())
        if (folder / "initdb").exists():
            return folder
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    if versions:
        return Path(versions[0]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", f"--reuid={UNPRIVILEGED}", "--regid=nogroup", "--clear-groups", *argv]


def dsn(folder: Path) -> str:
    return f"postgresql://{SUPERUSER}@/postgres?host={folder / 'sock'}"


def start(folder: Path) -> str:
    """Create and start a cluster in `folder`; return its connection string."""
    bindir = server_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed: no initdb found")
    folder.mkdir(parents=True, exist_ok=True)
    data, sock = folder / "data", folder / "sock"
    sock.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        os.chmod(folder, 0o755)
        shutil.chown(folder, UNPRIVILEGED)
        shutil.chown(sock, UNPRIVILEGED)
    if not data.exists():
        subprocess.run(
            _as_owner(
                [
                    str(bindir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "--no-sync",
                    "--encoding=UTF8",
                    "--locale=C.UTF-8",
                ]
            ),
            check=True,
            capture_output=True,
        )
    options = (
        f"-c listen_addresses='' -c unix_socket_directories={sock} -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    subprocess.run(
        _as_owner(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(folder / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    return dsn(folder)


def stop(folder: Path) -> None:
    bindir = server_bin()
    data = folder / "data"
    if bindir is None or not (data / "postmaster.pid").exists():
        return
    subprocess.run(
        _as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
        check=False,
        capture_output=True,
    )


def scratch_folder() -> Path:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="ken-pg-", dir=base))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: pgcluster.py start|stop DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    if argv[0] == "start":
        began = time.monotonic()
        print(start(folder))
        print(f"postgres cluster up in {time.monotonic() - began:.1f} s", file=sys.stderr)
    else:
        stop(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
