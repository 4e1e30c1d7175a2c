"""`ken demo`: a one-minute tour in a throwaway store.

It runs the real commands, in this process, against a store in a temp folder (never
the user's), printing each command line before its output.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import click

REPO = "repo:github.com/acme/shop"


@contextmanager
def _env(**values: str | None) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _say(text: str) -> None:
    click.secho(f"\n{text}", fg="cyan", bold=True)


def _ken(*args: str, stdin: str | None = None, agent: str | None = None) -> str:
    """Run one `ken` command in-process, echoing it; returns what it printed."""
    from click.testing import CliRunner

    from kenning.cli.app import cli

    shown = " ".join(shlex.quote(a) for a in args)
    prefix = f"[{agent} runs] " if agent else ""
    piped = f"printf '%s' {shlex.quote(stdin)} | " if stdin else ""
    click.secho(f"{prefix}$ {piped}ken {shown}", fg="green")
    with _env(KEN_AGENT=agent):
        result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    text = result.output.rstrip()
    if text:
        click.echo(text)
    return result.stdout


def run_demo(keep: bool = False) -> None:
    folder = tempfile.mkdtemp(prefix="ken-demo-")
    db = os.path.join(folder, "memory.db")
    here = os.getcwd()
    try:
        os.chdir(folder)  # provenance names the demo folder, not wherever it was run
        with _env(
            KEN_DB=db,
            KEN_AGENT=None,
            CLAUDECODE=None,
            CODEX_THREAD_ID=None,
            CODEX_SANDBOX=None,
            CODEX_CI=None,
            GEMINI_CLI=None,
            CLAUDE_CODE_ENTRYPOINT=None,
            CODEX_SANDBOX_NETWORK_DISABLED=None,
        ):
            _tour(db)
    finally:
        os.chdir(here)
        if keep:
            click.echo(f"\nThe demo store is kept at {db} (KEN_DB={db} ken list).")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def _first_id(output: str) -> str:
    return output.strip().splitlines()[-1].strip()


def _tour(db: str) -> None:
    click.secho("kenning: one memory that Claude Code, Codex and Gemini CLI share.", bold=True)
    click.echo(f"This tour uses a throwaway store: {db}")

    _say("1. A person teaches the agents things they cannot learn from the code.")
    _ken(
        "add",
        "Use pnpm, never npm: the lockfile is pnpm-lock.yaml",
        "--kind",
        "preference",
        "--scope",
        "global",
        "--tag",
        "js",
    )
    _ken(
        "add",
        "--kind",
        "correction",
        "--scope",
        REPO,
        "--evidence",
        "user: no, don't mock the database in these tests",
        stdin="Integration tests hit a real Postgres, never mocks\n"
        "Mocked tests passed while the production migration failed.\n",
    )
    _ken(
        "add",
        "--template",
        "decision",
        "--scope",
        REPO,
        "--tag",
        "payments",
        stdin="Payments go through the outbox table\n"
        "Context: webhooks to the payment provider were lost when the app crashed.\n"
        "Decision: write each payment event to the outbox in the same transaction.\n"
        "Consequences: a worker must drain the outbox; events can arrive twice.\n",
    )
    _ken(
        "add",
        "Release branch freezes on Thursdays at noon UTC",
        "--kind",
        "fact",
        "--scope",
        REPO,
        "--pin",
    )
    _ken(
        "add",
        "Migrate order exports to the new CSV format (half done)",
        "--kind",
        "task",
        "--scope",
        "workstream:github.com/acme/shop#csv-export",
    )

    _say("2. Secrets never reach the store: they are redacted first.")
    secret = _ken(
        "add",
        "--scope",
        REPO,
        stdin="Staging deploys read the CI token\n"
        "export DEPLOY_TOKEN=ghp_4fT9xQ2mLk8Vb7Nc3Rd6Ws1Yz5Ja0Pe2Hu9K\n",
    )
    _ken("show", _first_id(secret))

    _say("3. An agent proposes a memory for the whole repo; it waits for a person.")
    proposed = _first_id(
        _ken(
            "add",
            "Run `make db-reset` before the integration tests",
            "--kind",
            "fact",
            "--scope",
            REPO,
            "--evidence",
            "tests failed with 'relation orders does not exist' until db-reset",
            agent="claude",
        )
    )
    _ken("list", "--status", "proposed")

    _say("4. Agents are told only active memories. A person approves the proposal.")
    _ken("approve", proposed)

    _say("5. Search: every word must match, words match their stems, the last is a prefix.")
    _ken("search", "mocking", "postgre")
    _ken("search", "payment", "outbox")

    _say("6. Edits make versions; nothing is lost.")
    _ken(
        "update",
        proposed,
        "--text",
        "Run `make db-reset` before integration tests (it also seeds fixtures)",
    )
    _ken("show", proposed)

    _say("7. Everything, newest first, pinned on top:")
    _ken("list")

    click.echo(
        "\nNext: `ken integrate claude` (or codex, gemini) gives your agents this memory;"
        "\n`ken --help` lists every command. Your own store: `ken path`."
    )
