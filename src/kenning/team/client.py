"""A host's side of the team server: its membership and the HTTP calls it makes.

The standard library only (`http.client`): sync runs in the SessionStart hook, whose
imports stay light. Every call has a deadline, not just a timeout per socket operation:
the hook gives the whole sync 1.5 s, and a server that accepts and never answers costs
it no more than that.

Membership (server URL, workspace, token, who the token is) lives in
`$XDG_CONFIG_HOME/kenning/team.json`, mode 0600: the token is a secret, and the file is
the person's, like config.toml. The contract is docs/reference/team-api.md.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import time
from dataclasses import asdict, dataclass, fields
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from kenning import config as config_mod
from kenning.errors import InvalidInput, KenningError

API = "/api/v1"
USER_AGENT = "kenning-team"


class TeamError(KenningError):
    """The team server refused a call, or cannot be reached."""


class Unreachable(TeamError):
    """No answer in time: the server is down, slow, or the network is away."""


class Refused(TeamError):
    """The server answered with an error (the contract's `error` code and message)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = status
        self.code = code
        # A 503 refuses nothing: the server is there but cannot serve (its database is
        # down, or it is starting); try again later.
        said = "is unavailable" if status == 503 else "refused"
        super().__init__(f"the team server {said}: {message} ({status} {code})")


@dataclass(frozen=True, slots=True)
class Membership:
    """This host in one team: where the server is and the token it uses there."""

    url: str
    workspace: str
    token: str
    token_id: str = ""
    role: str = "member"
    name: str = ""
    host: str = ""
    joined_at: str = ""

    def to_dict(self, with_token: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not with_token:
            data["token"] = masked(self.token)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Membership:
        known = {f.name for f in fields(cls)}
        return cls(**{k: str(v) for k, v in data.items() if k in known})


def masked(token: str) -> str:
    """A token as shown: its prefix and last four characters."""
    return f"{token[:3]}…{token[-4:]}" if len(token) > 10 else "…"


def membership_path() -> str:
    return str(config_mod.team_path())


# How a host joins: what a person is told when it has not, or must again.
JOIN = "`ken team join URL --token TOKEN`"


def load_membership() -> Membership | None:
    """This host's membership, or None when it has not joined a team."""
    path = membership_path()
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return Membership.from_dict(data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        raise InvalidInput(f"cannot read {path} ({exc}): join again with {JOIN}") from None


def membership() -> Membership:
    """This host's membership; one line saying how to join when it has none."""
    member = load_membership()
    if member is None:
        raise InvalidInput(f"this host is in no team: {JOIN} first")
    return member


def save_membership(membership: Membership) -> str:
    """Write the membership file (0600, replaced whole); returns its path."""
    path = membership_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(membership.to_dict(with_token=True), fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def remove_membership() -> bool:
    try:
        os.remove(membership_path())
    except FileNotFoundError:
        return False
    return True


def split_url(url: str) -> tuple[str, str | None]:
    """The server's base URL and the workspace a URL names (`…/w/acme`), if it names one."""
    text = url.strip().rstrip("/")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - read to check it: a port that is no number raises
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"bad team server URL '{url}': give http(s)://HOST[:PORT]")
    path = parts.path
    workspace = None
    for marker in (f"{API}/w/", "/w/"):
        head, sep, tail = path.rpartition(marker)
        if sep and tail and "/" not in tail:
            path, workspace = head, tail
            break
    return f"{parts.scheme}://{parts.netloc}{path}", workspace


class Client:
    """Calls to one workspace of one team server, all within one deadline."""

    def __init__(
        self,
        url: str,
        token: str,
        workspace: str,
        *,
        timeout: float = 10.0,
    ) -> None:
        self.base, _ = split_url(url)
        self.token = token
        self.workspace = workspace
        self.deadline = time.monotonic() + timeout

    @classmethod
    def of(cls, membership: Membership, timeout: float = 10.0) -> Client:
        return cls(membership.url, membership.token, membership.workspace, timeout=timeout)

    def left(self) -> float:
        """Seconds left before the deadline."""
        return self.deadline - time.monotonic()

    def _path(self, tail: str) -> str:
        return f"{API}/w/{quote(self.workspace, safe='')}/{tail}"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
    ) -> Any:
        """One call; the decoded JSON answer. Unreachable when no answer came in time,
        Refused on an error answer."""
        left = self.left()
        if left <= 0:
            raise Unreachable(f"the team server at {self.base} did not answer in time")
        parts = urlsplit(self.base)
        target = parts.path + path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if data is not None:
            headers["Content-Type"] = "application/json; charset=utf-8"
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(
                parts.netloc, timeout=left, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(parts.netloc, timeout=left)
        try:
            conn.request(method, target, body=data, headers=headers)
            if conn.sock is not None:
                conn.sock.settimeout(max(0.001, self.left()))
            response = conn.getresponse()
            raw = self._read(conn, response)
        except TimeoutError:
            raise Unreachable(f"the team server at {self.base} did not answer in time") from None
        except (OSError, http.client.HTTPException) as exc:
            raise Unreachable(f"cannot reach the team server at {self.base}: {exc}") from None
        finally:
            conn.close()
        try:
            answer = json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, ValueError):
            answer = None
        if response.status >= 400:
            error = answer if isinstance(answer, dict) else {}
            raise Refused(
                response.status,
                str(error.get("error") or "error"),
                str(error.get("message") or response.reason or "no reason given"),
            )
        if answer is None:
            raise TeamError(f"the team server at {self.base} answered with something not JSON")
        return answer

    def _read(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> bytes:
        """The body, a chunk at a time, each within what is left of the deadline: a
        server that trickles its answer cannot hold the caller past it."""
        chunks: list[bytes] = []
        while True:
            left = self.left()
            if left <= 0:
                raise TimeoutError
            if conn.sock is not None:
                conn.sock.settimeout(left)
            chunk = response.read1(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    # --- the contract's calls ---------------------------------------------------------

    def health(self) -> dict[str, Any]:
        answer: dict[str, Any] = self.request("GET", "/health")
        return answer

    def whoami(self) -> dict[str, Any]:
        answer: dict[str, Any] = self.request("GET", self._path("whoami"))
        return answer

    def token_owner(self) -> dict[str, Any]:
        """Whose the token is, and of which workspace (no workspace needed to ask)."""
        answer: dict[str, Any] = self.request("GET", f"{API}/whoami")
        return answer

    def repos(self) -> list[str]:
        answer = self.request("GET", self._path("repos"))
        return [str(r) for r in answer.get("repos", [])]

    def push(self, host: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answer = self.request("POST", self._path("push"), {"host": host, "items": entries})
        results: list[dict[str, Any]] = answer.get("results", [])
        return results

    def report_uses(self, host: str, counts: dict[str, int]) -> dict[str, Any]:
        """This host's running use counts of team memories (server id: count)."""
        body = {"host": host, "uses": [{"id": k, "count": v} for k, v in counts.items()]}
        answer: dict[str, Any] = self.request("POST", self._path("uses"), body)
        return answer

    def pull(self, since: str, limit: int = 500) -> dict[str, Any]:
        answer: dict[str, Any] = self.request(
            "GET", self._path("pull"), query={"since": since, "limit": limit}
        )
        return answer

    def item(self, server_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = self.request("GET", self._path(f"items/{quote(server_id)}"))
        return answer

    def items(self, status: str = "proposed", limit: int = 100) -> list[dict[str, Any]]:
        answer = self.request("GET", self._path("items"), query={"status": status, "limit": limit})
        found: list[dict[str, Any]] = answer.get("items", [])
        return found

    def decide(self, server_id: str, action: str, reason: str | None = None) -> dict[str, Any]:
        """An admin's decision: approve, reject, dismiss, restore or forget."""
        body = {"reason": reason} if reason else {}
        answer: dict[str, Any] = self.request(
            "POST", self._path(f"items/{quote(server_id)}/{action}"), body
        )
        return answer
