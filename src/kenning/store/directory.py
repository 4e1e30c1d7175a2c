"""The team server's directory: its own tables in PostgreSQL, in the schema `ken_team`.

`ken serve` keeps team memory itself behind the `Store` protocol (one store per
workspace); this module holds what only the server needs around it:

- **workspaces**, and per workspace the **repos** the team covers;
- **tokens**, stored only as their SHA-256 (the text is printed once), each of one
  workspace and one role, revocable: every request looks its token up again, so a
  revoked token is refused at once;
- **web sessions** of the review page (a cookie's SHA-256 and its CSRF token), which
  end with their token;
- **push receipts**, keyed by the host's `push_id`: a push is claimed (with the server
  id it will get) before the memory is written and answered after, so a retry, even of
  a push cut off halfway, stores nothing twice;
- **origins** (which host and token sent each memory, its local id, what it was) and
  **decisions** (who approved, rejected, dismissed or restored it, and why);
- **uses**: how often each host used each team memory, one row per (token, memory)
  holding that host's own running count (absolute, not an increase), so a report sent
  twice, or a late retry after a newer one, changes nothing (the row keeps the greater
  count). A token is one host: the row is named by the token's name, whatever host the
  report says. A token made to replace another (`ken serve token create --replaces`, a
  rotation) is the same host as the one it replaced (`tokens.host`), and the team's
  uses of a memory are the sum over its hosts (the greatest row of each: each row is
  that host's running total, under one token or another, or, for rows an older server
  wrote, under the report's host). A use is
  kept only of a memory the token was served as active by a pull (each token keeps how
  far it has pulled the feed, `pulled_through`, and the memory's last row up to there is
  an upsert: one withdrawn before the pull came down as a removal), at most a daily
  budget of uses for each day since the memory was first served;
- the **change feed**, `seq bigserial`, that members pull from. Rows of one workspace
  are appended under a transaction-scoped advisory lock, so they commit in `seq` order
  and a reader that has seen `seq` N has seen every row before it.

Connections come from a `psycopg_pool.ConnectionPool`; every call is one short
transaction. Migrations run as in the local store: ordered, each with its record.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from kenning.errors import InvalidInput, StoreError
from kenning.model import TeamRole

SCHEMA = "ken_team"
ROLES = tuple(role.value for role in TeamRole)
TOKEN_PREFIX = "kt_"
SESSION_DAYS = 7
# Seconds a request waits for a connection: with the database down, every request (each
# looks its token up here first) is a prompt 503, not a wait hosts give up on first.
CONNECTION_WAIT = 5.0


def where(url: str) -> str:
    """The team database as messages name it: its name, host and port (libpq's defaults
    when the URL leaves them out), never its user's password."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        return "(its --db URL does not parse)"
    host = str(params.get("host") or "the local socket")
    port = str(params.get("port") or "5432")
    name = str(params.get("dbname") or params.get("user") or "(default)")
    return f"'{name}' on {host} port {port}"


def token_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Token:
    id: str
    workspace: str
    role: str
    name: str
    created_at: str
    revoked_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workspace": self.workspace,
            "role": self.role,
            "name": self.name,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


@dataclass(frozen=True, slots=True)
class Claim:
    """A push entry's receipt: the server id it gets, and its answer once it has one."""

    item_id: str | None
    answer: dict[str, Any] | None
    fresh: bool  # this call made the claim


@dataclass(frozen=True, slots=True)
class WebSession:
    token: Token
    csrf: str


def _m0001_create(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        """
        CREATE TABLE ken_team.workspaces (
            name text PRIMARY KEY,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE ken_team.tokens (
            id text PRIMARY KEY,
            workspace text NOT NULL REFERENCES ken_team.workspaces(name),
            role text NOT NULL CHECK (role IN ('member', 'admin')),
            name text NOT NULL,
            hash text NOT NULL UNIQUE,
            created_at timestamptz NOT NULL DEFAULT now(),
            revoked_at timestamptz
        );
        CREATE TABLE ken_team.repos (
            workspace text NOT NULL REFERENCES ken_team.workspaces(name),
            repo text NOT NULL,
            added_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (workspace, repo)
        );
        CREATE TABLE ken_team.receipts (
            workspace text NOT NULL,
            push_id text NOT NULL,
            token_id text NOT NULL,
            item_id text,
            answer jsonb,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (workspace, push_id)
        );
        CREATE TABLE ken_team.origins (
            workspace text NOT NULL,
            item_id text NOT NULL,
            host text NOT NULL,
            token_id text NOT NULL,
            local_id text,
            what text NOT NULL,
            base text,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (workspace, item_id)
        );
        CREATE TABLE ken_team.decisions (
            id bigserial PRIMARY KEY,
            workspace text NOT NULL,
            item_id text NOT NULL,
            action text NOT NULL,
            reason text,
            note text,
            token_id text NOT NULL,
            at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX decisions_item ON ken_team.decisions(workspace, item_id);
        CREATE TABLE ken_team.feed (
            seq bigserial PRIMARY KEY,
            workspace text NOT NULL,
            item_id text NOT NULL,
            change text NOT NULL CHECK (change IN ('upsert', 'remove')),
            at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX feed_workspace ON ken_team.feed(workspace, seq);
        CREATE TABLE ken_team.web_sessions (
            hash text PRIMARY KEY,
            token_id text NOT NULL REFERENCES ken_team.tokens(id),
            csrf text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            expires_at timestamptz NOT NULL
        );
        """
    )


def _m0002_uses(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        """
        CREATE TABLE ken_team.uses (
            workspace text NOT NULL,
            item_id text NOT NULL,
            token_id text NOT NULL,
            host text NOT NULL,
            count bigint NOT NULL CHECK (count >= 0),
            reported_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (workspace, item_id, token_id, host)
        );
        """
    )


def _m0003_base_revision(conn: psycopg.Connection[Any]) -> None:
    # The version of its base a revision was sent against: approving it after the base
    # was rewritten since is a conflict, not a silent undo.
    conn.execute("ALTER TABLE ken_team.origins ADD COLUMN base_revision text")


def _m0004_pulled_through(conn: psycopg.Connection[Any]) -> None:
    # How far each token has pulled the feed: a use is counted only of a memory the
    # token was served. A token from before starts at 0: its next pull sets it.
    conn.execute(
        """
        ALTER TABLE ken_team.tokens ADD COLUMN pulled_through bigint NOT NULL DEFAULT 0;
        CREATE INDEX feed_item ON ken_team.feed(workspace, item_id);
        """
    )


def _m0005_token_host(conn: psycopg.Connection[Any]) -> None:
    # The host a token stands for: its own id, or that of the token it replaced (a
    # rotation), so a host's uses count once across its tokens.
    conn.execute(
        """
        ALTER TABLE ken_team.tokens ADD COLUMN host text;
        UPDATE ken_team.tokens SET host = id;
        ALTER TABLE ken_team.tokens ALTER COLUMN host SET NOT NULL;
        """
    )


MIGRATIONS: tuple[Callable[[psycopg.Connection[Any]], None], ...] = (
    _m0001_create,
    _m0002_uses,
    _m0003_base_revision,
    _m0004_pulled_through,
    _m0005_token_host,
)
_TIME = "to_char(%s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"


def _token_columns(alias: str = "") -> str:
    a = f"{alias}." if alias else ""
    return (
        f"{a}id, {a}workspace, {a}role, {a}name, {_TIME % (a + 'created_at')} AS created_at, "
        f"{_TIME % (a + 'revoked_at')} AS revoked_at"
    )


_TOKEN_COLUMNS = _token_columns()


def _token(row: dict[str, Any]) -> Token:
    return Token(
        row["id"], row["workspace"], row["role"], row["name"], row["created_at"], row["revoked_at"]
    )


def _append_feed(
    conn: psycopg.Connection[dict[str, Any]], workspace: str, changes: Sequence[tuple[str, str]]
) -> None:
    # Rows of one workspace commit one transaction at a time, so in `seq` order.
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('ken_team:feed:' || %s))", (workspace,))
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO ken_team.feed (workspace, item_id, change) VALUES (%s, %s, %s)",
            [(workspace, item_id, change) for item_id, change in changes],
        )


def _answer(
    conn: psycopg.Connection[dict[str, Any]],
    workspace: str,
    push_id: str,
    answer: dict[str, Any],
) -> dict[str, Any] | None:
    """Set a receipt's answer unless it has one (then that one); None when this set it.
    A racing UPDATE waits for the row, then sees its answer: one of them wins."""
    row = conn.execute(
        "UPDATE ken_team.receipts SET answer = %s "
        "WHERE workspace = %s AND push_id = %s AND answer IS NULL RETURNING push_id",
        (json.dumps(answer), workspace, push_id),
    ).fetchone()
    if row is not None:
        return None
    first = conn.execute(
        "SELECT answer FROM ken_team.receipts WHERE workspace = %s AND push_id = %s",
        (workspace, push_id),
    ).fetchone()
    return first["answer"] if first is not None else None


class Directory:
    """The server's own tables, over a connection pool to `url`."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.where = where(url)
        try:
            self.pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] = ConnectionPool(
                url,
                min_size=min_size,
                max_size=max_size,
                kwargs={"row_factory": dict_row},
                # A connection the database dropped (a restart) is found out and replaced
                # as it is taken, not handed to a request that would fail on it.
                check=ConnectionPool.check_connection,
                open=False,
                timeout=CONNECTION_WAIT,
            )
            self.pool.open(wait=True, timeout=15)
        except (psycopg.Error, Exception) as exc:  # the pool raises its own PoolTimeout
            raise StoreError(f"cannot reach the team database {self.where}: {exc}") from None
        self._migrate()

    def close(self) -> None:
        self.pool.close()

    @contextmanager
    def _tx(self, wait: float | None = None) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        try:
            with self.pool.connection(timeout=wait) as conn, conn.transaction():
                yield conn
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreError(f"the team database {self.where} is unreachable: {exc}") from None

    def _migrate(self) -> None:
        with self._tx() as conn:
            # One server migrates at a time; the others wait, then find it done.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('ken_team:migrate'))")
            conn.execute("CREATE SCHEMA IF NOT EXISTS ken_team")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS ken_team._migrations "
                "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["name"] for r in conn.execute("SELECT name FROM ken_team._migrations")}
        known = {m.__name__.lstrip("_") for m in MIGRATIONS}
        if newer := ", ".join(sorted(done - known)):
            raise StoreError(
                f"the team database was set up by a newer kenning ({newer}): "
                "upgrade kenning on this host"
            )
        for migration in MIGRATIONS:
            name = migration.__name__.lstrip("_")
            with self._tx() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(hashtext('ken_team:migrate'))")
                row = conn.execute(
                    "SELECT 1 FROM ken_team._migrations WHERE name = %s", (name,)
                ).fetchone()
                if row:
                    continue
                migration(conn)
                conn.execute("INSERT INTO ken_team._migrations (name) VALUES (%s)", (name,))

    def ping(self, wait: float = 3.0) -> bool:
        """Whether the database answers within `wait` seconds."""
        try:
            with self._tx(wait) as conn:
                conn.execute("SELECT 1")
            return True
        except (StoreError, psycopg.Error):
            return False

    # workspaces and repos

    def ensure_workspace(self, name: str) -> bool:
        """Create the workspace when it is new; True when it was."""
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO ken_team.workspaces (name) VALUES (%s) ON CONFLICT DO NOTHING",
                (name,),
            )
            return cur.rowcount == 1

    def workspaces(self) -> list[str]:
        with self._tx() as conn:
            rows = conn.execute("SELECT name FROM ken_team.workspaces ORDER BY name").fetchall()
        return [r["name"] for r in rows]

    def add_repo(self, workspace: str, repo: str) -> bool:
        self.ensure_workspace(workspace)
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO ken_team.repos (workspace, repo) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING",
                (workspace, repo),
            )
            return cur.rowcount == 1

    def remove_repo(self, workspace: str, repo: str) -> bool:
        with self._tx() as conn:
            cur = conn.execute(
                "DELETE FROM ken_team.repos WHERE workspace = %s AND repo = %s", (workspace, repo)
            )
            return cur.rowcount == 1

    def repos(self, workspace: str) -> list[str]:
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT repo FROM ken_team.repos WHERE workspace = %s ORDER BY repo", (workspace,)
            ).fetchall()
        return [r["repo"] for r in rows]

    # tokens

    def create_token(
        self, workspace: str, role: str, name: str, replaces: str | None = None
    ) -> tuple[str, Token]:
        """A new token: its text (shown once, never stored) and its record. A token that
        `replaces` another of the workspace (a rotation) stands for the same host."""
        if role not in ROLES:
            raise InvalidInput(f"unknown role '{role}': use member or admin")
        self.ensure_workspace(workspace)
        text = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token_id = "tok_" + secrets.token_hex(6)
        with self._tx() as conn:
            host = token_id
            if replaces is not None:
                old = conn.execute(
                    "SELECT workspace, host FROM ken_team.tokens WHERE id = %s", (replaces,)
                ).fetchone()
                if old is None:
                    raise InvalidInput(f"no token {replaces}; `ken serve token list` shows them")
                if old["workspace"] != workspace:
                    raise InvalidInput(
                        f"{replaces} is a token of workspace '{old['workspace']}', "
                        f"not of '{workspace}'"
                    )
                host = old["host"]
            row = conn.execute(
                "INSERT INTO ken_team.tokens (id, workspace, role, name, hash, host) "
                f"VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_TOKEN_COLUMNS}",
                (token_id, workspace, role, name, token_hash(text), host),
            ).fetchone()
        assert row is not None
        return text, _token(row)

    def tokens(self, workspace: str | None = None) -> list[Token]:
        with self._tx() as conn:
            rows = conn.execute(
                f"SELECT {_TOKEN_COLUMNS} FROM ken_team.tokens "
                "WHERE %(ws)s::text IS NULL OR workspace = %(ws)s ORDER BY created_at, id",
                {"ws": workspace},
            ).fetchall()
        return [_token(r) for r in rows]

    def revoke_token(self, token_id: str) -> tuple[Token, bool] | None:
        """Revoke a token (and end its web sessions): the token, and whether this call
        revoked it (False: it was revoked already, and keeps its first revoked time);
        None when there is no such token."""
        with self._tx() as conn:
            before = conn.execute(
                "SELECT revoked_at FROM ken_team.tokens WHERE id = %s FOR UPDATE", (token_id,)
            ).fetchone()
            if before is None:
                return None
            row = conn.execute(
                "UPDATE ken_team.tokens SET revoked_at = coalesce(revoked_at, now()) "
                f"WHERE id = %s RETURNING {_TOKEN_COLUMNS}",
                (token_id,),
            ).fetchone()
            conn.execute("DELETE FROM ken_team.web_sessions WHERE token_id = %s", (token_id,))
        assert row is not None
        return _token(row), before["revoked_at"] is None

    def authenticate(self, text: str) -> Token | None:
        """The live token whose text this is, else None."""
        with self._tx() as conn:
            row = conn.execute(
                f"SELECT {_TOKEN_COLUMNS} FROM ken_team.tokens "
                "WHERE hash = %s AND revoked_at IS NULL",
                (token_hash(text),),
            ).fetchone()
        return _token(row) if row else None

    def token_names(self, token_ids: Sequence[str]) -> dict[str, str]:
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id, name FROM ken_team.tokens WHERE id = ANY(%s)", (list(token_ids),)
            ).fetchall()
        return {r["id"]: r["name"] for r in rows}

    # web sessions

    def open_session(self, token: Token) -> tuple[str, str]:
        """A new web session for `token`: (cookie value, CSRF token)."""
        cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self._tx() as conn:
            conn.execute("DELETE FROM ken_team.web_sessions WHERE expires_at < now()")
            conn.execute(
                "INSERT INTO ken_team.web_sessions (hash, token_id, csrf, expires_at) "
                f"VALUES (%s, %s, %s, now() + interval '{SESSION_DAYS} days')",
                (token_hash(cookie), token.id, csrf),
            )
        return cookie, csrf

    def session(self, cookie: str) -> WebSession | None:
        """The live session of this cookie whose token is still live, else None."""
        with self._tx() as conn:
            row = conn.execute(
                f"SELECT {_token_columns('t')}, s.csrf "
                "FROM ken_team.web_sessions s JOIN ken_team.tokens t ON t.id = s.token_id "
                "WHERE s.hash = %s AND s.expires_at > now() AND t.revoked_at IS NULL",
                (token_hash(cookie),),
            ).fetchone()
        return WebSession(_token(row), row["csrf"]) if row else None

    def close_session(self, cookie: str) -> None:
        with self._tx() as conn:
            conn.execute("DELETE FROM ken_team.web_sessions WHERE hash = %s", (token_hash(cookie),))

    # pushes

    def claim_push(self, workspace: str, push_id: str, token_id: str, item_id: str) -> Claim:
        """Claim `push_id` for `item_id`; when it was claimed before, its first claim."""
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO ken_team.receipts (workspace, push_id, token_id, item_id) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (workspace, push_id, token_id, item_id),
            )
            if cur.rowcount == 1:
                return Claim(item_id, None, True)
            row = conn.execute(
                "SELECT item_id, answer FROM ken_team.receipts "
                "WHERE workspace = %s AND push_id = %s",
                (workspace, push_id),
            ).fetchone()
        assert row is not None
        return Claim(row["item_id"], row["answer"], False)

    def answer_push(
        self, workspace: str, push_id: str, answer: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Answer a claimed push; the answer given first instead, when a racing push of
        the same `push_id` gave one (see `finish_push`)."""
        with self._tx() as conn:
            return _answer(conn, workspace, push_id, answer)

    def finish_push(
        self,
        workspace: str,
        push_id: str,
        answer: dict[str, Any],
        origin: dict[str, Any] | None = None,
        feed: Sequence[tuple[str, str]] = (),
    ) -> dict[str, Any] | None:
        """A stored entry's answer, origin and feed rows, in one transaction; None when
        this call answered it. Pushes of one `push_id` sent at once all find it claimed
        but unanswered, and all write (the store keeps one memory): the first to answer
        is the one that stored it, and the others get its answer back and add nothing."""
        with self._tx() as conn:
            if (first := _answer(conn, workspace, push_id, answer)) is not None:
                return first
            if origin is not None:
                conn.execute(
                    "INSERT INTO ken_team.origins "
                    "(workspace, item_id, host, token_id, local_id, what, base, base_revision) "
                    "VALUES (%(workspace)s, %(item_id)s, %(host)s, %(token_id)s, %(local_id)s, "
                    "%(what)s, %(base)s, %(base_revision)s) ON CONFLICT DO NOTHING",
                    {"workspace": workspace, "base_revision": None, **origin},
                )
            if feed:
                _append_feed(conn, workspace, feed)
        return None

    # origins and decisions

    def origins(self, workspace: str, item_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Who sent each of these memories: host, token_id, name (the token's), local_id,
        what, base and base_revision (the base's version a revision was sent against)."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT o.item_id, o.host, o.token_id, t.name, o.local_id, o.what, o.base, "
                "o.base_revision "
                "FROM ken_team.origins o LEFT JOIN ken_team.tokens t ON t.id = o.token_id "
                "WHERE o.workspace = %s AND o.item_id = ANY(%s)",
                (workspace, list(item_ids)),
            ).fetchall()
        return {r.pop("item_id"): r for r in rows}

    def record_decision(
        self,
        workspace: str,
        item_id: str,
        action: str,
        token_id: str,
        reason: str | None = None,
        note: str | None = None,
        feed: Sequence[tuple[str, str]] = (),
    ) -> None:
        """A decision and the feed rows it makes, in one transaction."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO ken_team.decisions "
                "(workspace, item_id, action, reason, note, token_id) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (workspace, item_id, action, reason, note, token_id),
            )
            if feed:
                _append_feed(conn, workspace, feed)

    def decisions(self, workspace: str, item_id: str) -> list[dict[str, Any]]:
        with self._tx() as conn:
            return conn.execute(
                f"SELECT d.action, d.reason, d.note, d.token_id, t.name, {_TIME % 'd.at'} AS at "
                "FROM ken_team.decisions d LEFT JOIN ken_team.tokens t ON t.id = d.token_id "
                "WHERE d.workspace = %s AND d.item_id = %s ORDER BY d.id",
                (workspace, item_id),
            ).fetchall()

    def forget(self, workspace: str, item_id: str) -> None:
        """What the directory holds of a forgotten memory: its origin and decisions."""
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM ken_team.origins WHERE workspace = %s AND item_id = %s",
                (workspace, item_id),
            )
            conn.execute(
                "DELETE FROM ken_team.decisions WHERE workspace = %s AND item_id = %s",
                (workspace, item_id),
            )
            conn.execute(
                "DELETE FROM ken_team.uses WHERE workspace = %s AND item_id = %s",
                (workspace, item_id),
            )

    # uses

    def record_uses(
        self,
        workspace: str,
        token: Token,
        counts: Sequence[tuple[str, int]],
        per_day: int,
    ) -> list[str]:
        """Set each (item_id, count): this token's host's running count of uses of the
        memory, kept under the token's name. Only memories a pull served this token as
        active (their last feed row up to its `pulled_through` an upsert) are kept, each
        count at most `per_day` for each day (begun) since the memory was first served; a
        count below the one stored (a retry arriving after a newer report) is ignored.
        Answers the ids kept."""
        if not counts:
            return []
        with self._tx() as conn:
            # Served active: the memory's last feed row the token has pulled past is an
            # upsert. One withdrawn before the pull came down as a removal, though an
            # upsert lies behind it too.
            rows = conn.execute(
                "SELECT f.item_id, floor(extract(epoch FROM now() - "
                "min(f.at) FILTER (WHERE f.change = 'upsert')) / 86400)::bigint + 1 AS days "
                "FROM ken_team.feed f JOIN ken_team.tokens t ON t.id = %s "
                "WHERE f.workspace = %s AND f.item_id = ANY(%s) "
                "AND f.seq <= t.pulled_through GROUP BY f.item_id "
                "HAVING (array_agg(f.change ORDER BY f.seq DESC))[1] = 'upsert'",
                (token.id, workspace, [item_id for item_id, _ in counts]),
            ).fetchall()
            days = {r["item_id"]: int(r["days"]) for r in rows}
            kept = [(i, min(n, days[i] * per_day)) for i, n in counts if i in days]
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO ken_team.uses (workspace, item_id, token_id, host, count) "
                    "VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (workspace, item_id, token_id, host) DO UPDATE "
                    "SET count = greatest(ken_team.uses.count, excluded.count), "
                    "reported_at = CASE WHEN excluded.count > ken_team.uses.count "
                    "THEN now() ELSE ken_team.uses.reported_at END",
                    [(workspace, i, token.id, token.name, n) for i, n in kept],
                )
        return [i for i, _ in kept]

    def uses(self, workspace: str, item_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(uses summed over hosts, how many hosts used it) of each memory that has any.
        A host is a token and the tokens that replaced it: each row holds a running total
        of that host's, so of several rows of one host, its greatest count."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT item_id, sum(count) AS count, count(*) AS hosts FROM ("
                "SELECT u.item_id, max(u.count) AS count FROM ken_team.uses u "
                "LEFT JOIN ken_team.tokens t ON t.id = u.token_id "
                "WHERE u.workspace = %s AND u.item_id = ANY(%s) AND u.count > 0 "
                "GROUP BY u.item_id, coalesce(t.host, u.token_id)) AS per_host "
                "GROUP BY item_id",
                (workspace, list(item_ids)),
            ).fetchall()
        return {r["item_id"]: (int(r["count"]), int(r["hosts"])) for r in rows}

    def mark_pulled(self, token_id: str, cursor: int) -> None:
        """The token was served the feed up to `cursor` (never lowered)."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE ken_team.tokens SET pulled_through = greatest(pulled_through, %s) "
                "WHERE id = %s",
                (cursor, token_id),
            )

    # the change feed

    def append_feed(self, workspace: str, changes: Sequence[tuple[str, str]]) -> None:
        """Append (item_id, upsert|remove) rows, committed in `seq` order per workspace."""
        if not changes:
            return
        with self._tx() as conn:
            _append_feed(conn, workspace, changes)

    def feed(self, workspace: str, since: int, limit: int) -> list[tuple[int, str, str]]:
        """(seq, item_id, change) after `since`, oldest first, at most `limit`."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT seq, item_id, change FROM ken_team.feed "
                "WHERE workspace = %s AND seq > %s ORDER BY seq LIMIT %s",
                (workspace, since, limit),
            ).fetchall()
        return [(r["seq"], r["item_id"], r["change"]) for r in rows]
