"""The PostgreSQL store's schema, as ordered migrations in the store's own schema.

As for SQLite (kenning.store.migrations), each migration is a function
`mNNNN_name(conn)` run in its own transaction together with its row in `_migrations`;
here a transaction-scoped advisory lock on the schema's name makes the servers that open
one store at once take turns, and the second finds the work done. A schema that records
a migration this code does not know was made by a newer kenning and is refused.

The tables mirror SQLite's with PostgreSQL's types: lists are `text[]`, provenance is
`jsonb`, pins are booleans; times stay ISO text (`YYYY-MM-DDTHH:MM:SS.mmmZ`, which
sorts as text, exactly as the library writes them). Ids, times and words use the "C"
collation, so they sort and range-match by code point whatever the database's locale.

Search: `items.tsv` is a stored generated column, the weighted `tsvector` of an item
(title A, tags B, body C, each through the 'english' configuration: Snowball stems and
its stop words), with a GIN index. Triggers keep `terms` (items per stemmed lexeme) and
`words` (items per word as typed: the 'simple' configuration, lower-cased, no stemming)
in step with every insert, change and delete, for recall's statistics and prefix search.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from psycopg import sql

from kenning.errors import NewerStore, StoreError

ITEMS = """
CREATE FUNCTION tags_text(tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN array_to_string(tags, ' ');

CREATE FUNCTION plain_text(title text, body text, tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN title || ' ' || body || ' ' || array_to_string(tags, ' ');

CREATE TABLE items (
    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    id text COLLATE "C" PRIMARY KEY,
    kind text NOT NULL,
    scope text COLLATE "C" NOT NULL,
    status text NOT NULL,
    pinned boolean NOT NULL DEFAULT false,
    title text NOT NULL,
    body text NOT NULL DEFAULT '',
    tags text[] NOT NULL DEFAULT '{}',
    links text[] NOT NULL DEFAULT '{}',
    evidence text NOT NULL DEFAULT '',
    provenance jsonb NOT NULL DEFAULT '{}',
    session_id text COLLATE "C",
    created_at text COLLATE "C" NOT NULL,
    updated_at text COLLATE "C" NOT NULL,
    reviewed_at text COLLATE "C",
    expires_at text COLLATE "C",
    use_count integer NOT NULL DEFAULT 0,
    last_used_at text COLLATE "C",
    revision text COLLATE "C" NOT NULL,
    dismiss_reason text,
    source text COLLATE "C",
    archive_reason text,
    tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, title), 'A')
        || setweight(to_tsvector('english'::regconfig, tags_text(tags)), 'B')
        || setweight(to_tsvector('english'::regconfig, body), 'C')
    ) STORED
);
CREATE INDEX items_tsv ON items USING gin (tsv);
CREATE INDEX items_scope_recent ON items (scope, status, updated_at, expires_at);
CREATE INDEX items_scope_kind ON items (scope, status, kind, updated_at);
CREATE INDEX items_scope_pinned ON items (scope, status, updated_at) WHERE pinned;
CREATE INDEX items_scope_captured ON items (scope, seq);
CREATE INDEX items_status_updated ON items (status, updated_at);
CREATE INDEX items_session ON items (session_id);
CREATE INDEX items_source ON items (source);
CREATE INDEX items_short_id ON items ((substr(id, 21)));

CREATE TABLE revisions (
    id text COLLATE "C" PRIMARY KEY,
    item_id text COLLATE "C" NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    created_at text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    scope text NOT NULL,
    status text NOT NULL,
    pinned boolean NOT NULL DEFAULT false,
    title text NOT NULL,
    body text NOT NULL,
    tags text[] NOT NULL,
    links text[] NOT NULL,
    evidence text NOT NULL,
    provenance jsonb NOT NULL,
    change text NOT NULL
);
CREATE INDEX revisions_item ON revisions (item_id, id);

CREATE TABLE uses (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    item_id text COLLATE "C" NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    session_id text COLLATE "C",
    at text COLLATE "C" NOT NULL,
    how text NOT NULL
);
CREATE INDEX uses_item ON uses (item_id, session_id);
CREATE INDEX uses_session ON uses (session_id);

CREATE TABLE terms (term text COLLATE "C" PRIMARY KEY, docs integer NOT NULL);
CREATE TABLE words (word text COLLATE "C" PRIMARY KEY, docs integer NOT NULL);

-- Items per lexeme and per word, moved once per statement by the rows it inserted,
-- deleted or changed (transition tables), so a batch of 500 items is one upsert per
-- table; rows are upserted in sorted order, so that writers lock shared words in the
-- same order.
CREATE FUNCTION move_counts(plus tsvector[], minus tsvector[], plus_text text[],
                            minus_text text[]) RETURNS void
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO terms AS t (term, docs)
        SELECT x, sum(d) FROM (
            SELECT unnest(tsvector_to_array(v)) AS x, 1 AS d FROM unnest(plus) AS v
            UNION ALL SELECT unnest(tsvector_to_array(v)), -1 FROM unnest(minus) AS v
        ) delta GROUP BY x HAVING sum(d) <> 0 ORDER BY x
        ON CONFLICT (term) DO UPDATE SET docs = t.docs + excluded.docs;
    INSERT INTO words AS w (word, docs)
        SELECT x, sum(d) FROM (
            SELECT unnest(tsvector_to_array(to_tsvector('simple'::regconfig, v))) AS x,
                   1 AS d FROM unnest(plus_text) AS v
            UNION ALL SELECT unnest(tsvector_to_array(to_tsvector('simple'::regconfig, v))),
                   -1 FROM unnest(minus_text) AS v
        ) delta GROUP BY x HAVING sum(d) <> 0 ORDER BY x
        ON CONFLICT (word) DO UPDATE SET docs = w.docs + excluded.docs;
    IF cardinality(minus) > 0 THEN
        DELETE FROM terms WHERE docs <= 0 AND term = ANY (ARRAY(
            SELECT unnest(tsvector_to_array(v)) FROM unnest(minus) AS v));
        DELETE FROM words WHERE docs <= 0 AND word = ANY (ARRAY(
            SELECT unnest(tsvector_to_array(to_tsvector('simple'::regconfig, v)))
            FROM unnest(minus_text) AS v));
    END IF;
END $$;

CREATE FUNCTION count_terms() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM move_counts(
            ARRAY(SELECT tsv FROM new_rows), '{}',
            ARRAY(SELECT plain_text(title, body, tags) FROM new_rows), '{}');
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM move_counts(
            '{}', ARRAY(SELECT tsv FROM old_rows),
            '{}', ARRAY(SELECT plain_text(title, body, tags) FROM old_rows));
    ELSE
        PERFORM move_counts(
            ARRAY(SELECT n.tsv FROM old_rows o JOIN new_rows n ON n.id = o.id
                  WHERE (o.title, o.body, o.tags) IS DISTINCT FROM (n.title, n.body, n.tags)),
            ARRAY(SELECT o.tsv FROM old_rows o JOIN new_rows n ON n.id = o.id
                  WHERE (o.title, o.body, o.tags) IS DISTINCT FROM (n.title, n.body, n.tags)),
            ARRAY(SELECT plain_text(n.title, n.body, n.tags) FROM old_rows o
                  JOIN new_rows n ON n.id = o.id
                  WHERE (o.title, o.body, o.tags) IS DISTINCT FROM (n.title, n.body, n.tags)),
            ARRAY(SELECT plain_text(o.title, o.body, o.tags) FROM old_rows o
                  JOIN new_rows n ON n.id = o.id
                  WHERE (o.title, o.body, o.tags) IS DISTINCT FROM (n.title, n.body, n.tags)));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER items_count_insert AFTER INSERT ON items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION count_terms();
CREATE TRIGGER items_count_delete AFTER DELETE ON items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION count_terms();
CREATE TRIGGER items_count_update AFTER UPDATE ON items
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION count_terms();
"""

SESSIONS = """
CREATE TABLE sessions (
    id text COLLATE "C" PRIMARY KEY,
    agent text NOT NULL,
    model text,
    agent_session_id text,
    transcript_path text,
    repo text,
    cwd text,
    workspace text,
    workstream text,
    project text,
    scopes text[] NOT NULL DEFAULT '{}',
    started_at text COLLATE "C" NOT NULL,
    ended_at text COLLATE "C",
    last_seen_at text COLLATE "C",
    first_prompt text,
    last_prompt text,
    prompt_count integer NOT NULL DEFAULT 0,
    start_commit text,
    commits text[] NOT NULL DEFAULT '{}',
    diff_stat text,
    continued_from text,
    pid integer,
    end_reason text,
    summary_parts integer NOT NULL DEFAULT 0,
    summarized_turns integer NOT NULL DEFAULT 0
);
CREATE INDEX sessions_agent ON sessions (agent, agent_session_id);
CREATE INDEX sessions_repo ON sessions (repo, started_at);
CREATE INDEX sessions_open ON sessions (ended_at, cwd);

CREATE TABLE deliveries (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    at text COLLATE "C" NOT NULL,
    what text NOT NULL,
    item_ids text[] NOT NULL,
    query text
);
CREATE INDEX deliveries_session ON deliveries (session_id, at);

CREATE TABLE signals (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    at text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    detail text NOT NULL DEFAULT ''
);
CREATE INDEX signals_session ON signals (session_id, id);
CREATE TABLE session_prompts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    at text COLLATE "C" NOT NULL,
    text text NOT NULL
);
CREATE INDEX session_prompts_session ON session_prompts (session_id, id);
CREATE TABLE lesson_state (
    session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    last_call text,
    repeats integer NOT NULL DEFAULT 0,
    asked_at text,
    reflected_at text
);
"""

PLACES = """
CREATE TABLE projects (
    slug text COLLATE "C" PRIMARY KEY,
    dir text NOT NULL,
    repo text,
    added_at text NOT NULL
);
CREATE TABLE project_files (
    slug text COLLATE "C" NOT NULL REFERENCES projects (slug) ON DELETE CASCADE,
    name text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    synced_at text NOT NULL,
    PRIMARY KEY (slug, name)
);
CREATE TABLE collected_places (
    agent text NOT NULL,
    path text NOT NULL,
    files bigint NOT NULL,
    digest bigint NOT NULL,
    collected_at text NOT NULL,
    PRIMARY KEY (agent, path)
);
CREATE TABLE plan_receipts (
    digest text COLLATE "C" PRIMARY KEY,
    plan_id text NOT NULL,
    owner text NOT NULL,
    applied_at text COLLATE "C" NOT NULL,
    receipt jsonb NOT NULL
);
CREATE INDEX plan_receipts_plan ON plan_receipts (plan_id);
"""

# A sequence (no row to lock, so writers never queue on it) that every changing
# statement on the tables a reader shows advances: the store's data_version.
CHANGES = """
CREATE SEQUENCE change_counter;
CREATE FUNCTION count_change() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM nextval('change_counter');
    RETURN NULL;
END $$;
"""
CHANGED_TABLES = ("items", "revisions", "uses", "sessions", "deliveries")


def m0001_create_items(conn: psycopg.Connection[object]) -> None:
    conn.execute(ITEMS)


def m0002_create_sessions(conn: psycopg.Connection[object]) -> None:
    conn.execute(SESSIONS)


def m0003_projects_places_and_plans(conn: psycopg.Connection[object]) -> None:
    conn.execute(PLACES)


def m0004_change_counter(conn: psycopg.Connection[object]) -> None:
    conn.execute(CHANGES)
    for table in CHANGED_TABLES:
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER {} AFTER INSERT OR UPDATE OR DELETE ON {} "
                "FOR EACH STATEMENT EXECUTE FUNCTION count_change()"
            ).format(sql.Identifier(f"{table}_changed"), sql.Identifier(table))
        )


def m0005_index_session_short_ids(conn: psycopg.Connection[object]) -> None:
    # People name sessions, as items, by the start of the six characters they see.
    conn.execute("CREATE INDEX sessions_short_id ON sessions ((substr(id, 21)))")


def m0006_forgotten(conn: psycopg.Connection[object]) -> None:
    # What `forget` leaves of a memory kept in sync from a file: a digest of its source
    # and text, no text (`kenning.tombstones`).
    conn.execute(
        'CREATE TABLE forgotten (digest text COLLATE "C" PRIMARY KEY, forgotten_at text NOT NULL)'
    )


MIGRATIONS: tuple[Callable[[psycopg.Connection[object]], None], ...] = (
    m0001_create_items,
    m0002_create_sessions,
    m0003_projects_places_and_plans,
    m0004_change_counter,
    m0005_index_session_short_ids,
    m0006_forgotten,
)
KNOWN = {m.__name__ for m in MIGRATIONS}


def applied(conn: psycopg.Connection[object]) -> list[str]:
    rows = conn.execute("SELECT name FROM _migrations ORDER BY name").fetchall()
    return [str(row[0]) for row in rows]  # type: ignore[index]


def apply(conn: psycopg.Connection[object], schema: str, *, create: bool = True) -> int:
    """Create `schema` when it is missing (unless not `create`: then a missing schema is
    a StoreError) and apply the missing migrations in it (the connection's search_path
    is that schema); returns how many ran. `conn` is in autocommit mode: each step
    opens its own transaction."""
    if (
        not create
        and not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    ):
        raise StoreError(f"no store in schema {schema}; open it once with create to make it")
    lock = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
    key = f"kenning-migrations:{schema}"
    with conn.transaction():
        conn.execute(lock, (key,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations "
            '(name text COLLATE "C" PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())'
        )
    done = set(applied(conn))
    unknown = sorted(done - KNOWN)
    if unknown:
        raise NewerStore(
            f"the schema {schema} was written by a newer kenning (it has migration "
            f"{unknown[-1]}); upgrade kenning to open it"
        )
    ran = 0
    for migration in MIGRATIONS:
        if migration.__name__ in done:
            continue
        with conn.transaction():
            conn.execute(lock, (key,))
            # Another server may have applied it while this one waited for the lock.
            if conn.execute(
                "SELECT 1 FROM _migrations WHERE name = %s", (migration.__name__,)
            ).fetchone():
                continue
            migration(conn)
            conn.execute("INSERT INTO _migrations (name) VALUES (%s)", (migration.__name__,))
            ran += 1
    return ran
