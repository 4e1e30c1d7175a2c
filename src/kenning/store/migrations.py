"""The store's schema, as ordered migrations.

Each migration is a function `mNNNN_name(conn)`; `apply` runs the missing ones in order,
all in one transaction together with their rows in `_migrations`, so a crash or a full
disk leaves the store as it was, never half migrated. A database that records a
migration this code does not know was made by a newer kenning, and is refused rather
than guessed at; one that holds tables but records none of kenning's migrations is
another program's, and is refused before anything is written to it (`refuse_foreign`).

Before a store that already holds data is migrated, a copy of it as it was is kept next
to it, `ken.db.before-m0016` (named by the first migration it did not have), made with
SQLite's online backup while this process holds the write lock, so no other process
changes it meanwhile;
the two newest such copies are kept. When the copy cannot be written, nothing is
migrated: the older kenning can still open the store, and the newer one says why not.
The face that opened the store says it migrated it where its person or log sees it
(`report_to`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from kenning.errors import NewerStore, StoreError
from kenning.store import sqlite_recent as recent

COPIES_KEPT = 2  # copies of a store as it was before a migration, the newest kept
_tell: Callable[[str], None] | None = None


def report_to(tell: Callable[[str], None] | None) -> None:
    """Where this process says, in one line, that it migrated a store and where the copy
    from before is: a person's stderr, the hook log, the MCP server's log. None: nowhere."""
    global _tell
    _tell = tell


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run statements one by one: executescript would commit the open transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
    if statement.strip():
        raise StoreError("incomplete statement in a migration")


def m0001_create_items(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        CREATE TABLE items (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            scope TEXT NOT NULL,
            status TEXT NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            title TEXT NOT NULL,
            body TEXT NOT NULL DEFAULT '',
            tags TEXT NOT NULL DEFAULT '[]',
            links TEXT NOT NULL DEFAULT '[]',
            evidence TEXT NOT NULL DEFAULT '',
            provenance TEXT NOT NULL DEFAULT '{}',
            session_id TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            reviewed_at TEXT,
            expires_at TEXT,
            use_count INTEGER NOT NULL DEFAULT 0,
            last_used_at TEXT,
            revision TEXT NOT NULL,
            dismiss_reason TEXT,
            source TEXT
        );
        CREATE INDEX items_scope ON items(scope, status);
        CREATE INDEX items_status_updated ON items(status, updated_at);
        CREATE INDEX items_session ON items(session_id);
        CREATE INDEX items_source ON items(source);

        CREATE VIRTUAL TABLE items_fts USING fts5(
            title, body, tags,
            content='items', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
            INSERT INTO items_fts(rowid, title, body, tags)
            VALUES (new.rowid, new.title, new.body, new.tags);
        END;
        CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
            INSERT INTO items_fts(items_fts, rowid, title, body, tags)
            VALUES ('delete', old.rowid, old.title, old.body, old.tags);
        END;
        CREATE TRIGGER items_fts_update AFTER UPDATE OF title, body, tags ON items BEGIN
            INSERT INTO items_fts(items_fts, rowid, title, body, tags)
            VALUES ('delete', old.rowid, old.title, old.body, old.tags);
            INSERT INTO items_fts(rowid, title, body, tags)
            VALUES (new.rowid, new.title, new.body, new.tags);
        END;

        CREATE TABLE revisions (
            id TEXT PRIMARY KEY,
            item_id TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            kind TEXT NOT NULL,
            scope TEXT NOT NULL,
            status TEXT NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            title TEXT NOT NULL,
            body TEXT NOT NULL,
            tags TEXT NOT NULL,
            links TEXT NOT NULL,
            evidence TEXT NOT NULL,
            provenance TEXT NOT NULL,
            change TEXT NOT NULL
        );
        CREATE INDEX revisions_item ON revisions(item_id, id);

        CREATE TABLE uses (
            item_id TEXT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
            session_id TEXT,
            at TEXT NOT NULL,
            how TEXT NOT NULL
        );
        CREATE INDEX uses_item ON uses(item_id, session_id);
        CREATE INDEX uses_session ON uses(session_id);

        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            agent TEXT NOT NULL,
            model TEXT,
            agent_session_id TEXT,
            transcript_path TEXT,
            repo TEXT,
            cwd TEXT,
            workspace TEXT,
            workstream TEXT,
            project TEXT,
            scopes TEXT NOT NULL DEFAULT '[]',
            started_at TEXT NOT NULL,
            ended_at TEXT,
            last_seen_at TEXT,
            first_prompt TEXT,
            last_prompt TEXT,
            prompt_count INTEGER NOT NULL DEFAULT 0,
            start_commit TEXT,
            commits TEXT NOT NULL DEFAULT '[]',
            diff_stat TEXT,
            continued_from TEXT,
            pid INTEGER,
            end_reason TEXT
        );
        CREATE INDEX sessions_agent ON sessions(agent, agent_session_id);
        CREATE INDEX sessions_repo ON sessions(repo, started_at);
        CREATE INDEX sessions_open ON sessions(ended_at, cwd);

        CREATE TABLE deliveries (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            at TEXT NOT NULL,
            what TEXT NOT NULL,
            item_ids TEXT NOT NULL,
            query TEXT
        );
        CREATE INDEX deliveries_session ON deliveries(session_id, at);
        """,
    )


def m0002_projects_and_summaries(conn: sqlite3.Connection) -> None:
    _run_script(
        conn,
        """
        CREATE TABLE projects (
            slug TEXT PRIMARY KEY,
            dir TEXT NOT NULL,
            repo TEXT,
            added_at TEXT NOT NULL
        );
        CREATE TABLE project_files (
            slug TEXT NOT NULL REFERENCES projects(slug) ON DELETE CASCADE,
            name TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            synced_at TEXT NOT NULL,
            PRIMARY KEY (slug, name)
        );
        ALTER TABLE sessions ADD COLUMN summary_parts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE sessions ADD COLUMN summarized_turns INTEGER NOT NULL DEFAULT 0;
        """,
    )


def m0003_index_recent_by_scope(conn: sqlite3.Connection) -> None:
    # Packs read each scope's newest active items section by section, and count the
    # rest. The first index serves the common sections in order and the count without
    # reading the table; the second the rare kinds (tasks, handoffs); the third pins.
    conn.execute("CREATE INDEX items_scope_recent ON items(scope, status, updated_at, expires_at)")
    conn.execute("CREATE INDEX items_scope_kind ON items(scope, status, kind, updated_at)")
    conn.execute(
        "CREATE INDEX items_scope_pinned ON items(scope, status, updated_at) WHERE pinned = 1"
    )


def m0004_term_counts(conn: sqlite3.Connection) -> None:
    # How many items hold each stemmed word, kept by the store as items change. The
    # FTS5 vocabulary can say the same, but only by walking each word's whole posting
    # list; recall asks on every prompt.
    conn.execute("CREATE TABLE terms (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID")
    conn.execute("CREATE VIRTUAL TABLE temp.m0004_vocab USING fts5vocab(main, items_fts, row)")
    conn.execute("INSERT INTO terms (term, docs) SELECT term, doc FROM temp.m0004_vocab")
    conn.execute("DROP TABLE temp.m0004_vocab")


def m0005_index_short_ids(conn: sqlite3.Connection) -> None:
    # People (and agents) name items by the last six characters of their ids.
    conn.execute("CREATE INDEX items_short_id ON items(substr(id, 21))")


def m0006_normalize_scopes(conn: sqlite3.Connection) -> None:
    # Scopes typed before one rule normalized them (`repo:GitHub.com/Acme/Shop`,
    # `repo:git@github.com:acme/shop.git`, `workspace:Acme`) are moved to the key that
    # rule gives, so they apply again where they were meant to. Values it cannot read
    # are left as they are.
    from kenning.model import Scope

    for (text,) in conn.execute("SELECT DISTINCT scope FROM items").fetchall():
        stored = Scope.from_stored(text)
        if stored.unreadable:
            continue
        try:
            clean = str(Scope.of(stored.type, stored.value))
        except ValueError:
            continue
        if clean != text:
            conn.execute("UPDATE items SET scope = ? WHERE scope = ?", (clean, text))


def m0007_word_counts(conn: sqlite3.Connection) -> None:
    # How many items hold each word as typed (case and accents folded, not stemmed), so a
    # search can widen the prefix a person typed to the whole words that start with it
    # before the stemmer shortens them (`tagg` finds "Tagged", `pay` finds "payments").
    conn.execute("CREATE TABLE words (word TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID")
    conn.execute(
        "CREATE VIRTUAL TABLE m0007_raw USING fts5(title, body, tags, content='items', "
        "content_rowid='rowid', tokenize='unicode61 remove_diacritics 2', detail=none)"
    )
    conn.execute("INSERT INTO m0007_raw(m0007_raw) VALUES ('rebuild')")
    conn.execute("CREATE VIRTUAL TABLE temp.m0007_vocab USING fts5vocab(main, m0007_raw, row)")
    conn.execute("INSERT INTO words (word, docs) SELECT term, doc FROM temp.m0007_vocab")
    conn.execute("DROP TABLE temp.m0007_vocab")
    conn.execute("DROP TABLE m0007_raw")


def m0008_spool_replays(conn: sqlite3.Connection) -> None:
    # The spooled writes replayed, by entry id: a replay and this row commit together,
    # so a replay after a crash (entry file not yet removed) is skipped, not repeated.
    conn.execute("CREATE TABLE replays (id TEXT PRIMARY KEY, at TEXT NOT NULL)")


def m0009_archive_reasons(conn: sqlite3.Connection) -> None:
    # Why an item was archived: a person's words (`ken archive --reason`), or `cap` when
    # the cap of active items per scope set it aside.
    conn.execute("ALTER TABLE items ADD COLUMN archive_reason TEXT")


def m0010_plan_receipts(conn: sqlite3.Connection) -> None:
    # One row per applied maintenance plan, keyed by the plan's digest (its idempotency
    # key) and written in the plan's own transaction: a receipt exists exactly when the
    # plan's writes do.
    conn.execute(
        "CREATE TABLE plan_receipts (digest TEXT PRIMARY KEY, plan_id TEXT NOT NULL, "
        "owner TEXT NOT NULL, applied_at TEXT NOT NULL, receipt TEXT NOT NULL)"
    )
    conn.execute("CREATE INDEX plan_receipts_plan ON plan_receipts(plan_id)")


def m0011_index_captured_by_scope(conn: sqlite3.Connection) -> None:
    # A scope's memories newest captured first (an index on scope ends in the rowid), so
    # `ken panel` pages through a scope of any size without sorting it.
    conn.execute("CREATE INDEX items_scope_captured ON items(scope)")


def m0012_collected_places(conn: sqlite3.Connection) -> None:
    # Where `ken collect` last looked in each agent's own memory: a place's stamp (how
    # many files, and a digest of their names, sizes and times), so an unchanged place
    # is not read again.
    conn.execute(
        "CREATE TABLE collected_places (agent TEXT NOT NULL, path TEXT NOT NULL, "
        "files INTEGER NOT NULL, digest INTEGER NOT NULL, collected_at TEXT NOT NULL, "
        "PRIMARY KEY (agent, path))"
    )


def m0013_session_signals(conn: sqlite3.Connection) -> None:
    # Run lessons: what the hooks noted in a session (a failed, denied or thrice repeated
    # tool call, a correcting prompt, a preference the person stated), each prompt as it
    # came (a lesson's quote must be found in one), and per session the last tool call
    # seen (for repeats) and whether Stop asked for a reflection and one was recorded.
    _run_script(
        conn,
        """
        CREATE TABLE signals (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            detail TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX signals_session ON signals(session_id, id);
        CREATE TABLE session_prompts (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            at TEXT NOT NULL,
            text TEXT NOT NULL
        );
        CREATE INDEX session_prompts_session ON session_prompts(session_id, id);
        CREATE TABLE lesson_state (
            session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
            last_call TEXT,
            repeats INTEGER NOT NULL DEFAULT 0,
            asked_at TEXT,
            reflected_at TEXT
        );
        """,
    )


def m0014_scope_counts(conn: sqlite3.Connection) -> None:
    # How many items each scope holds in each status, kept by triggers: a pack's "N more
    # memories here" was a count(*) over every item of its scopes, the one cost of a pack
    # that grew with the store. Items past their expiry are few and found through
    # items_expiring, and taken off.
    _run_script(
        conn,
        """
        CREATE TABLE scope_counts (
            scope TEXT NOT NULL,
            status TEXT NOT NULL,
            n INTEGER NOT NULL,
            PRIMARY KEY (scope, status)
        ) WITHOUT ROWID;
        INSERT INTO scope_counts(scope, status, n)
            SELECT scope, status, count(*) FROM items GROUP BY scope, status;
        CREATE TRIGGER scope_counts_insert AFTER INSERT ON items BEGIN
            INSERT INTO scope_counts(scope, status, n) VALUES (new.scope, new.status, 1)
                ON CONFLICT(scope, status) DO UPDATE SET n = n + 1;
        END;
        CREATE TRIGGER scope_counts_delete AFTER DELETE ON items BEGIN
            UPDATE scope_counts SET n = n - 1 WHERE scope = old.scope AND status = old.status;
        END;
        CREATE TRIGGER scope_counts_update AFTER UPDATE OF scope, status ON items
        WHEN old.scope IS NOT new.scope OR old.status IS NOT new.status BEGIN
            UPDATE scope_counts SET n = n - 1 WHERE scope = old.scope AND status = old.status;
            INSERT INTO scope_counts(scope, status, n) VALUES (new.scope, new.status, 1)
                ON CONFLICT(scope, status) DO UPDATE SET n = n + 1;
        END;
        CREATE INDEX items_expiring ON items(expires_at, scope, status)
            WHERE expires_at IS NOT NULL;
        """,
    )


def m0015_recent_index(conn: sqlite3.Connection) -> None:
    # A second full-text index over the newest items only, on the same content (`items`):
    # `recent_index.since` is the oldest rowid it holds and `n` how many rows it holds; the
    # triggers keep it in step for those rows, and `sqlite_recent.trim` moves `since` on
    # as items are added.
    _run_script(
        conn,
        """
        CREATE VIRTUAL TABLE items_recent USING fts5(
            title, body, tags,
            content='items', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE recent_index (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            since INTEGER NOT NULL,
            n INTEGER NOT NULL
        );
        CREATE TRIGGER items_recent_insert AFTER INSERT ON items
        WHEN new.rowid >= (SELECT since FROM recent_index) BEGIN
            INSERT INTO items_recent(rowid, title, body, tags)
            VALUES (new.rowid, new.title, new.body, new.tags);
            UPDATE recent_index SET n = n + 1;
        END;
        CREATE TRIGGER items_recent_delete AFTER DELETE ON items
        WHEN old.rowid >= (SELECT since FROM recent_index) BEGIN
            INSERT INTO items_recent(items_recent, rowid, title, body, tags)
            VALUES ('delete', old.rowid, old.title, old.body, old.tags);
            UPDATE recent_index SET n = n - 1;
        END;
        CREATE TRIGGER items_recent_update AFTER UPDATE OF title, body, tags ON items
        WHEN old.rowid >= (SELECT since FROM recent_index) BEGIN
            INSERT INTO items_recent(items_recent, rowid, title, body, tags)
            VALUES ('delete', old.rowid, old.title, old.body, old.tags);
            INSERT INTO items_recent(rowid, title, body, tags)
            VALUES (new.rowid, new.title, new.body, new.tags);
        END;
        """,
    )
    conn.execute("INSERT INTO recent_index(id, since, n) VALUES (1, 0, 0)")
    recent.fill(conn)


def m0016_scope_versions(conn: sqlite3.Connection) -> None:
    # m0006 moved items to the scope its rule gives without a version, so their newest
    # version still names the scope as typed (`workspace:Acme`). Each item whose newest
    # version's scope is not its own gets a version, `migrate`, with the scope it has:
    # its history keeps the old one.
    from kenning import ids
    from kenning.store.base import now_iso

    stale = conn.execute(
        "SELECT items.id, items.scope, revisions.id FROM items JOIN revisions ON revisions.id "
        "= (SELECT max(id) FROM revisions WHERE item_id = items.id) "
        "WHERE revisions.scope != items.scope"
    ).fetchall()
    at = now_iso()
    for item_id, scope, newest in stale:
        version = ids.new_ulid()
        conn.execute(
            "INSERT INTO revisions (id, item_id, created_at, kind, scope, status, pinned, "
            "title, body, tags, links, evidence, provenance, change) "
            "SELECT ?, item_id, ?, kind, ?, status, pinned, title, body, tags, links, "
            "evidence, provenance, 'migrate' FROM revisions WHERE id = ?",
            (version, at, scope, newest),
        )
        conn.execute("UPDATE items SET revision = ? WHERE id = ?", (version, item_id))


def m0017_index_session_short_ids(conn: sqlite3.Connection) -> None:
    # People name sessions, as items, by the start of the six characters they see.
    conn.execute("CREATE INDEX sessions_short_id ON sessions(substr(id, 21))")


def m0018_forgotten(conn: sqlite3.Connection) -> None:
    # What `forget` leaves of a memory kept in sync from a file (a project's entry, an
    # agent's memory file): a digest of its source and text, no text, so the next sync
    # or collection does not bring the same entry back (`kenning.tombstones`).
    conn.execute(
        "CREATE TABLE forgotten (digest TEXT PRIMARY KEY, forgotten_at TEXT NOT NULL) WITHOUT ROWID"
    )


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    m0001_create_items,
    m0002_projects_and_summaries,
    m0003_index_recent_by_scope,
    m0004_term_counts,
    m0005_index_short_ids,
    m0006_normalize_scopes,
    m0007_word_counts,
    m0008_spool_replays,
    m0009_archive_reasons,
    m0010_plan_receipts,
    m0011_index_captured_by_scope,
    m0012_collected_places,
    m0013_session_signals,
    m0014_scope_counts,
    m0015_recent_index,
    m0016_scope_versions,
    m0017_index_session_short_ids,
    m0018_forgotten,
)
KNOWN = {m.__name__ for m in MIGRATIONS}


def applied(conn: sqlite3.Connection) -> list[str]:
    """The migrations the store records, in order; none in a file without `_migrations`."""
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone():
        return []
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY name")]


def refuse_foreign(conn: sqlite3.Connection, path: str) -> None:
    """Refuse another program's database, read only, before anything is written to it: a
    file that holds tables or views is a store when its `_migrations` records a
    migration of kenning's (`mNNNN_...`, a newer kenning's too), or is all it holds (a
    store whose first migration was stopped). An empty file is made into a store."""
    names = {
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        )
    }
    if not names:
        return
    recorded: list[object] | None = None
    if "_migrations" in names:
        try:
            recorded = [row[0] for row in conn.execute("SELECT name FROM _migrations")]
        except sqlite3.OperationalError:  # a table of that name, but not kenning's
            recorded = None
    ours = [n for n in recorded or () if isinstance(n, str) and re.fullmatch(r"m\d{4}_\w+", n)]
    if names == {"_migrations"}:
        # A store whose first migration was stopped holds its record alone, empty or
        # kenning's; another program's table of migrations is no such record.
        if recorded is not None and len(ours) == len(recorded):
            return
    elif ours:
        return
    theirs = sorted(names - {"_migrations"}) or ["_migrations"]
    shown = ", ".join(theirs[:3]) + (f" and {len(theirs) - 3} more" if len(theirs) > 3 else "")
    raise StoreError(
        f"the store {path} is not a kenning database: it holds another program's tables "
        f"({shown}) and no record of kenning's migrations; nothing was changed: point "
        "KEN_DB at another file"
    )


def check_not_newer(done: list[str]) -> None:
    unknown = [name for name in done if name not in KNOWN]
    if unknown:
        raise NewerStore(
            f"this store was written by a newer kenning (it has migration {unknown[-1]}); "
            "upgrade kenning to open it"
        )


def apply(conn: sqlite3.Connection, path: str | None = None) -> int:
    """Apply the missing migrations; returns how many ran. Safe with many processes.

    A store at `path` that already had migrations is first copied as it was (see the
    module's doc); a StoreError, with nothing changed, when that copy fails."""
    done = set(applied(conn))
    check_not_newer(sorted(done))
    missing = [m.__name__ for m in MIGRATIONS if m.__name__ not in done]
    if not missing:
        return 0
    if done and path is not None:
        copy = _keep_copy(conn, path, done)
        if copy is not None and _tell is not None:
            _tell(
                f"migrating the store {path} for this kenning ({len(missing)} "
                f"migration{'s' if len(missing) != 1 else ''}); the store as it was is "
                f"kept in {copy}"
            )
    ran, now = 0, done
    # All the missing migrations in one transaction, with their rows in `_migrations`: a
    # failure (a full disk among them) leaves the store as it was, at its old migration,
    # which the older kenning can still open. None of them needs to run outside one.
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations "
            "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        # Another process may have applied some while we waited for the lock.
        now = set(applied(conn))
        check_not_newer(sorted(now))
        for migration in MIGRATIONS:
            if migration.__name__ in now:
                continue
            migration(conn)
            conn.execute(
                "INSERT INTO _migrations(name, applied_at) VALUES (?, datetime('now'))",
                (migration.__name__,),
            )
            ran += 1
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        _roll_back(conn)
        raise _failed(exc, path, sorted(now)[-1] if now else None) from None
    except BaseException:
        _roll_back(conn)
        raise
    if ran and done and path is not None:
        stopped = stop_other_hook_servers()
        if stopped and _tell is not None:
            _tell(
                f"asked the hook servers of {len(stopped)} other install"
                f"{'s' if len(stopped) != 1 else ''} to stop (pid "
                f"{', '.join(map(str, stopped))}): their code may not know this schema; "
                "their next hook starts them again, on their own code"
            )
    return ran


def _roll_back(conn: sqlite3.Connection) -> None:
    """Undo the migrations' transaction, unless SQLite ended it itself (a full disk can):
    a ROLLBACK then fails, and its error must not hide the one that ended it."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _failed(exc: sqlite3.Error, path: str | None, at: str | None) -> StoreError:
    """What a failed migration says: why, that the store was left as it was (at its old
    migration `at`), and what to do; a full disk is said as such."""
    where = f"the store {path}" if path else "the store"
    kept = (
        f"nothing was migrated: it is as it was (at {at}), and the older kenning can still open it"
        if at
        else "nothing was written to it"
    )
    if full_disk(exc):
        return StoreError(
            f"could not migrate {where} for this kenning: the disk is full (database or "
            f"disk is full); {kept}: free some space there and run the command again"
        )
    return StoreError(
        f"could not migrate {where} for this kenning: {exc}; {kept}: run the command again"
    )


def full_disk(exc: BaseException) -> bool:
    """Whether SQLite failed for want of space (SQLITE_FULL)."""
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" or "disk is full" in str(exc)


def stop_other_hook_servers() -> list[int]:
    """Ask the running hook servers of other installs of kenning (`hookstate.servers`, as
    `ken hook-server stop --all` finds them) to stop, after a migration: an older one
    would go on reading and writing a store whose schema its code does not know. Started
    again by their next hook, on their own code, an older one refuses the store and says
    so in the hook log. Their pids."""
    import signal

    from kenning import hookstate

    stopped = []
    for server in hookstate.servers():
        if server["running"] and not server["current"]:
            try:
                os.kill(int(str(server["pid"])), signal.SIGTERM)
            except (ProcessLookupError, PermissionError, ValueError):
                continue
            stopped.append(int(str(server["pid"])))
    return stopped


def _keep_copy(conn: sqlite3.Connection, path: str, done: set[str]) -> Path | None:
    """Copy the store as it is to `<path>.before-mNNNN` under the write lock, unless
    another process migrated it meanwhile (None then); keep the newest copies only."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if set(applied(conn)) != done:
            return None  # another process is migrating it, and kept the copy
        first = next(m.__name__ for m in MIGRATIONS if m.__name__ not in done)
        copy = Path(f"{path}.before-{first.split('_')[0]}")
        partial = copy.with_name(copy.name + ".partial")
        try:
            fd = os.open(partial, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
            os.close(fd)
            # Read through a second connection: the backup cannot read through one that
            # holds the write lock; WAL lets it read beside it, the state that lock keeps.
            source, target = sqlite3.connect(path), sqlite3.connect(partial)
            try:
                source.backup(target)
            finally:
                source.close()
                target.close()
            os.replace(partial, copy)
        except (OSError, sqlite3.Error) as exc:
            partial.unlink(missing_ok=True)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise StoreError(
                f"the store {path} needs migrating for this kenning, but its copy as it was "
                f"could not be written to {copy} ({reason}); nothing was changed: make room "
                "there and run the command again"
            ) from None
    finally:
        conn.execute("COMMIT")
    for stale in kept_copies(path)[:-COPIES_KEPT]:
        stale.unlink(missing_ok=True)
    return copy


def kept_copies(path: str, *, partial: bool = False) -> list[Path]:
    """The copies of the store at `path` kept from before a migration, oldest first; with
    `partial`, a copy a crash left half made too."""
    prefix = f"{Path(path).name}.before-m"
    folder = Path(path).parent
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.startswith(prefix):
            continue
        number = name[len(prefix) :]
        if partial and number.endswith(".partial"):
            number = number[: -len(".partial")]
        if number.isdigit():
            found.append(folder / name)
    return sorted(found)


# The tables and columns a forget --everywhere blanks when they quote a forgotten memory
# (`scrub_quotes`), as far as a copy's older schema has them.
QUOTING = (
    ("sessions", "first_prompt"),
    ("sessions", "last_prompt"),
    ("deliveries", "query"),
    ("session_prompts", "text"),
    ("signals", "detail"),
)


def drop_copies_holding(
    path: str, item_ids: Sequence[str], session_id: str | None, needles: Sequence[str]
) -> list[Path]:
    """Remove the copies kept from before a migration (`kept_copies`, and a partial one a
    crash left) that hold any of what a forget deleted: a version of one of `item_ids`,
    the session `session_id`'s record, or a session prompt, recall query or signal
    quoting one of `needles`; and any copy that cannot be read (it cannot be cleared).
    Each file is overwritten with zeros before it is unlinked, as secure_delete does the
    store's freed pages. Returns the copies removed.

    Removed, not edited: a copy has an older kenning's schema, whose word counts
    (`terms`, `words`: each word of a memory), recent index and FTS indexes that kenning's
    code keeps, not SQL alone; an edit made with this code could leave a forgotten word
    in one, or give back a copy the older kenning misreads."""
    removed = []
    for copy in kept_copies(path, partial=True):
        if _holds(copy, item_ids, session_id, needles):
            _wipe(copy)
            removed.append(copy)
    return removed


def _holds(
    copy: Path, item_ids: Sequence[str], session_id: str | None, needles: Sequence[str]
) -> bool:
    try:
        # immutable: read as a file nobody writes, with no -wal or -shm made beside it.
        conn = sqlite3.connect(f"{copy.as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return True
    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables:
            return False  # an empty file: nothing in it
        for start in range(0, len(item_ids), 500):
            chunk = list(item_ids[start : start + 500])
            marks = ", ".join("?" * len(chunk))
            if conn.execute(f"SELECT 1 FROM items WHERE id IN ({marks})", chunk).fetchone():
                return True
            if conn.execute(
                f"SELECT 1 FROM revisions WHERE item_id IN ({marks})", chunk
            ).fetchone():
                return True
        if (
            session_id
            and conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
        ):
            return True
        for table, column in QUOTING:
            if table not in tables:
                continue
            for needle in needles:
                if conn.execute(
                    f"SELECT 1 FROM {table} WHERE {column} IS NOT NULL "
                    f"AND instr(lower({column}), ?) > 0",
                    (needle.lower(),),
                ).fetchone():
                    return True
        return False
    except sqlite3.Error:
        return True  # not a store this can read: it cannot tell what it holds
    finally:
        conn.close()


def _wipe(copy: Path) -> None:
    """Overwrite `copy` (and any side file SQLite left beside it) with zeros, then
    unlink it."""
    for file in (copy, *(Path(f"{copy}{end}") for end in ("-wal", "-shm", "-journal"))):
        try:
            with open(file, "r+b") as fh:
                size = os.fstat(fh.fileno()).st_size
                for _ in range(0, size, 1 << 20):
                    fh.write(bytes(min(1 << 20, size - fh.tell())))
                fh.flush()
                os.fsync(fh.fileno())
        except FileNotFoundError:
            continue
        except OSError:
            pass  # unlinked all the same
        file.unlink(missing_ok=True)
