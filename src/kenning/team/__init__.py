"""Team memory: the team server (`ken serve`: team memory per workspace on PostgreSQL,
its HTTP API, docs/reference/team-api.md, and its review page) and each host's side of
it (`ken team`).

The server's modules need the team extra (psycopg, Starlette, uvicorn, jinja2); nothing
outside them and the CLI's `ken serve` imports them. The host's side, `client` and
`sync`, is the standard library only: it runs in the SessionStart hook. So this file
imports nothing.
"""
