"""`ken serve`: run the team server, and manage its tokens and covered repos.

The team server needs the team extra (psycopg, Starlette, uvicorn, jinja2); it is
imported only inside these commands, so `ken` without the extra works and says how to
add it.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from kenning import policy
from kenning.cli.output import Result, echo, say, table
from kenning.cli.state import KenGroup, State, example, pass_state, renders
from kenning.errors import KenningError
from kenning.model import TeamRole, normalize_name, repo_key

TEAM_LIBS = ("psycopg", "psycopg_pool", "starlette", "uvicorn", "jinja2")


def team_requirements() -> list[str]:
    """The team extra's requirements as this install's metadata lists them (kenning is
    installed from a checkout, so `kenning[team]` names nothing pip can find)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        listed = requires("kenning") or []
    except PackageNotFoundError:
        listed = []
    wanted = [r.split(";")[0].strip() for r in listed if "extra == 'team'" in r.replace('"', "'")]
    return wanted or ["kenning[team]"]


def _missing_extra(exc: ModuleNotFoundError) -> KenningError:
    if (exc.name or "").split(".")[0] not in TEAM_LIBS:
        raise exc
    return KenningError(
        f"`ken serve` needs the team extra ({exc.name} is not installed): "
        f"{shlex.quote(sys.executable)} -m pip install "
        + " ".join(shlex.quote(r) for r in team_requirements())
    )


def _db(state: State, given: str | None) -> str:
    url = given or state.config.serve_db
    if not url:
        raise KenningError(
            "give the team database: --db postgresql://… (or set KEN_SERVE_DB, or "
            "`ken config set serve.db postgresql://…`)"
        )
    if not url.startswith(("postgresql://", "postgres://")):
        raise KenningError(f"--db takes a postgresql:// URL, not {url.split(':', 1)[0]}:…")
    return url


@contextmanager
def _directory(state: State, db: str | None) -> Iterator[Any]:
    """The team directory at `db` (or the configured one), closed after the block."""
    try:
        from kenning.store.directory import Directory
    except ModuleNotFoundError as exc:
        raise _missing_extra(exc) from None
    directory = Directory(_db(state, db), min_size=1, max_size=1)
    try:
        yield directory
    finally:
        directory.close()


def _workspace(text: str) -> str:
    name = normalize_name(text)
    if not name:
        raise KenningError("the workspace name is empty")
    return name


db_option = click.option(
    "--db", metavar="URL", help="The team database (postgresql://…); else the serve.db setting."
)


@click.group(
    "serve",
    cls=KenGroup,
    invoke_without_command=True,
    epilog=example("ken serve --db postgresql://ken@db/ken --port 8765"),
)
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port (0: any free).")
@click.pass_context
def serve_group(ctx: click.Context, db: str | None, host: str, port: int) -> None:
    """Run the team server: team memory per workspace, its API and review page.

    Hosts join with a token (`ken serve token create`) and push the memories their
    people share; admins approve them on the review page at http://HOST:PORT/ (sign in
    with an admin token). Logs are JSON lines on stderr; SIGTERM finishes the requests
    in flight, then stops. The API: docs/reference/team-api.md.
    """
    if ctx.invoked_subcommand is not None:
        return
    state: State = ctx.obj
    try:  # what to install first: without it, no database would do
        from kenning.team import server
    except ModuleNotFoundError as exc:
        raise _missing_extra(exc) from None
    server.serve(_db(state, db), host=host, port=port)


@serve_group.group(
    "token", cls=KenGroup, epilog=example("ken serve token create --workspace acme --role admin")
)
def token_group() -> None:
    """Make, list and revoke the tokens hosts and admins sign in with."""


@token_group.command("create", epilog=example("ken serve token create --workspace acme"))
@db_option
@click.option("--workspace", "-w", required=True, help="The workspace the token belongs to.")
@click.option(
    "--role",
    type=click.Choice([role.value for role in TeamRole]),
    default="member",
    show_default=True,
    help="member: push and pull; admin: also decide.",
)
@click.option("--name", help="Who or which host holds it (shown on the review page).")
@click.option(
    "--replaces",
    metavar="TOKEN_ID",
    help="The token this one rotates (revoke it after): the same host in the uses counted.",
)
@renders
@pass_state
def token_create(
    state: State,
    db: str | None,
    workspace: str,
    role: str,
    name: str | None,
    replaces: str | None,
) -> Result:
    """Make a token and print it once: only its SHA-256 is kept."""
    policy.require_person(policy.Actor.from_env(), "create a team token")
    with _directory(state, db) as directory:
        text, token = directory.create_token(
            _workspace(workspace), role, name or role, replaces=replaces
        )

    def shown() -> None:
        click.echo(text)
        article = "an" if role == "admin" else "a"
        say(
            f"{token.id}: {article} {role} token of workspace '{token.workspace}'; "
            "it is not shown again"
        )

    return Result(data={"token": text, **token.to_dict()}, text=shown)


@token_group.command("list", epilog=example("ken serve token list --workspace acme"))
@db_option
@click.option("--workspace", "-w", help="Only this workspace's tokens.")
@renders
@pass_state
def token_list(state: State, db: str | None, workspace: str | None) -> Result:
    """List tokens (never their text): id, workspace, role, name, made, revoked."""
    with _directory(state, db) as directory:
        tokens = directory.tokens(_workspace(workspace) if workspace else None)
    return Result(
        data={"tokens": [t.to_dict() for t in tokens]},
        text=lambda: table(
            ["id", "workspace", "role", "name", "created", "revoked"],
            [
                [t.id, t.workspace, t.role, t.name, t.created_at, t.revoked_at or "-"]
                for t in tokens
            ],
        ),
    )


@token_group.command("revoke", epilog=example("ken serve token revoke tok_3f9a1c2b7d4e"))
@db_option
@click.argument("token_id")
@pass_state
def token_revoke(state: State, db: str | None, token_id: str) -> None:
    """Revoke a token: refused from the next request on, its web sessions ended. A token
    revoked already is left as it was, and said so."""
    policy.require_person(policy.Actor.from_env(), f"revoke token {token_id}")
    with _directory(state, db) as directory:
        revoked = directory.revoke_token(token_id)
    if revoked is None:
        raise KenningError(f"no token {token_id}; `ken serve token list` shows them")
    token, now = revoked
    if now:
        say(f"revoked {token.id} ({token.role} of '{token.workspace}')")
    else:
        say(
            f"{token.id} ({token.role} of '{token.workspace}') was revoked already, "
            f"at {token.revoked_at}"
        )


@serve_group.group(
    "repos", cls=KenGroup, epilog=example("ken serve repos add acme github.com/acme/shop")
)
def repos_group() -> None:
    """The repos a workspace's team covers: their memories may be pushed."""


@repos_group.command("add", epilog=example("ken serve repos add acme github.com/acme/shop"))
@db_option
@click.argument("workspace")
@click.argument("repo")
@pass_state
def repos_add(state: State, db: str | None, workspace: str, repo: str) -> None:
    """Cover a repo (its origin, e.g. github.com/acme/shop) in a workspace."""
    policy.require_person(policy.Actor.from_env(), f"add {repo} to a team")
    key = _repo(repo)
    with _directory(state, db) as directory:
        added = directory.add_repo(_workspace(workspace), key)
    say(f"{'added' if added else 'already covered:'} {key} in '{_workspace(workspace)}'")


@repos_group.command("list", epilog=example("ken serve repos list acme"))
@db_option
@click.argument("workspace")
@renders
@pass_state
def repos_list(state: State, db: str | None, workspace: str) -> Result:
    """List the repos a workspace covers."""
    with _directory(state, db) as directory:
        repos = directory.repos(_workspace(workspace))

    def shown() -> None:
        for repo in repos:
            echo(repo)

    return Result(data={"workspace": _workspace(workspace), "repos": repos}, text=shown)


@repos_group.command("remove", epilog=example("ken serve repos remove acme github.com/acme/shop"))
@db_option
@click.argument("workspace")
@click.argument("repo")
@pass_state
def repos_remove(state: State, db: str | None, workspace: str, repo: str) -> None:
    """Stop covering a repo: new pushes to it are refused; its memories stay."""
    policy.require_person(policy.Actor.from_env(), f"remove {repo} from a team")
    key = _repo(repo)
    with _directory(state, db) as directory:
        removed = directory.remove_repo(_workspace(workspace), key)
    if not removed:
        raise KenningError(f"'{_workspace(workspace)}' does not cover {key}")
    say(f"removed {key} from '{_workspace(workspace)}'")


def _repo(text: str) -> str:
    try:
        return repo_key(text)
    except ValueError as exc:
        raise KenningError(str(exc)) from None
