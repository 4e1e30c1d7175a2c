"""The team server (`ken serve`): team memory per workspace on PostgreSQL, its HTTP API
(docs/reference/team-api.md) and its review page. Needs the team extra (psycopg,
Starlette, uvicorn, jinja2); nothing outside this package and the CLI's `ken serve`
imports it."""
