"""`ken demo`: a one-minute tour in a throwaway store, ending in the payoff.

It runs the real commands against a store, a config folder and a git repo in a temp
folder (never the user's), printing each command line before its output: a person
teaches the agents a few things, an agent proposes one, and then what it is all for:
what an agent is told when it starts in the repo (`ken pack`), what it is given for one
prompt and why (`ken recall --explain`), and, after a Claude Code session there (its
real hooks, fed the payloads Claude Code sends), how Codex would continue it
(`ken handoff --to codex --print`).

`ken` commands run in this process through click; the hooks run as `ken hook` does, in
a process of their own.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from kenning import agents, child
from kenning.cli.state import example

REPO = "repo:github.com/acme/shop"
BRANCH = "csv-export"
# Markers that make `ken` think it runs inside an agent's shell, and settings that
# would carry the person's own workspace, project or switches into the tour.
CLEARED = (
    "KEN_AGENT",
    *(var for agent in agents.AGENTS.values() for var in agent.env_markers),
    "KEN_WORKSPACE",
    "KEN_WORKSTREAM",
    "KEN_PROJECT",
    "KEN_ENABLED",
    "KEN_CONTINUES",
)


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
    """Run one `ken` command in-process, echoing it; returns what it printed on stdout."""
    from click.testing import CliRunner

    # The root `ken` group that runs `ken demo`: the tour runs the same commands, and this
    # module needs no import of the one that registers it (no circle).
    cli = click.get_current_context().find_root().command
    shown = " ".join(shlex.quote(a) for a in args)
    prefix = f"[{agent} runs] " if agent else ""
    piped = f"printf '%s' {shlex.quote(stdin)} | " if stdin else ""
    click.secho(f"{prefix}$ {piped}ken {shown}", fg="green")
    with _env(KEN_AGENT=agent):
        result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    text = result.output.rstrip()
    if text:
        click.echo(text)
    if result.exit_code != 0:
        raise click.ClickException(f"the demo's `ken {shown}` failed")
    return result.stdout


def _hook(event: str, payload: dict[str, object]) -> str:
    """Run `ken hook EVENT --agent claude` as Claude Code would: the payload on stdin,
    in a process of its own (no hook server: the tour leaves nothing running)."""
    done = subprocess.run(
        child.argv("kenning.entry", "main", ["hook", event, "--agent", "claude"]),
        input=json.dumps({**payload, "hook_event_name": event}),
        capture_output=True,
        text=True,
        env={**os.environ, "KEN_HOOK_SERVER": "0"},
        timeout=60,
        check=False,
    )
    return done.stdout


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, timeout=60)


def _make_repo(folder: Path) -> Path:
    """A git repo whose origin is github.com/acme/shop, on a branch of work."""
    repo = folder / "shop"
    repo.mkdir()
    try:
        _git(repo, "init", "-q", "-b", BRANCH)
        _git(repo, "remote", "add", "origin", "git@github.com:acme/shop.git")
        (repo / "README.md").write_text("shop\n", encoding="utf-8")
        _git(repo, "add", "README.md")
        _git(
            repo,
            "-c",
            "user.name=Demo",
            "-c",
            "user.email=demo@example.com",
            "commit",
            "-qm",
            "first",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise click.ClickException(f"the demo needs git: {exc}") from None
    return repo


@click.command(epilog=example("ken demo"))
@click.option("--keep", is_flag=True, help="Keep the demo store and print where it is.")
def demo(keep: bool) -> None:
    """Tour kenning in a throwaway store and repo (never yours).

    A person adds memories and approves an agent's proposal; then what agents get: the
    pack at start (`ken pack`), a recall explained, and a Claude Code session there
    continued in Codex (`ken handoff --print`).
    """
    run_demo(keep=keep)


def run_demo(keep: bool = False) -> None:
    folder = Path(tempfile.mkdtemp(prefix="ken-demo-"))
    db = folder / "memory.db"
    here = os.getcwd()
    try:
        repo = _make_repo(folder)
        os.chdir(repo)  # the tour happens in a repo, as an agent's session would
        cleared: dict[str, str | None] = dict.fromkeys(CLEARED)
        # A home of its own too: the handoff it prints reads the agents' own settings
        # (Codex's developer_instructions), and a tour never shows the person's.
        (folder / "home").mkdir()
        with _env(
            KEN_DB=str(db),
            HOME=str(folder / "home"),
            XDG_CONFIG_HOME=str(folder / "config"),
            XDG_STATE_HOME=str(folder / "state"),
            XDG_DATA_HOME=str(folder / "data"),
            CODEX_HOME=None,
            **cleared,
        ):
            _tour(db, repo)
    finally:
        os.chdir(here)
        if keep:
            click.echo(f"\nThe demo store is kept at {db} (KEN_DB={db} ken list).")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def _first_id(output: str) -> str:
    return output.strip().splitlines()[-1].strip()


def _tour(db: Path, repo: Path) -> None:
    click.secho(
        "kenning: one memory that Claude Code, Codex, Gemini CLI, OpenCode and Copilot CLI share.",
        bold=True,
    )
    click.echo(f"This tour uses a throwaway store, {db},")
    click.echo(f"and a repo whose origin is github.com/acme/shop: {repo}")

    _say("1. A person teaches the agents what they cannot learn from the code.")
    _ken(
        "add",
        "Use pnpm, never npm: the lockfile is pnpm-lock.yaml",
        "--kind",
        "preference",
        "--scope",
        "global",
    )
    _ken(
        "add",
        "--kind",
        "correction",
        "--evidence",
        "user: no, don't mock the database in these tests",
        stdin="Integration tests hit a real Postgres database, never mocks\n"
        "Mocked tests passed while the production migration failed.\n",
    )
    _ken(
        "add",
        "--template",
        "decision",
        "--tag",
        "payments",
        stdin="Payments go through the outbox table\n"
        "Context: webhooks to the payment provider were lost when the app crashed.\n"
        "Decision: write each payment event to the outbox in the same transaction.\n"
        "Consequences: a worker must drain the outbox; events can arrive twice.\n",
    )
    _ken("add", "Release branch freezes on Thursdays at noon UTC", "--kind", "fact", "--pin")
    _ken(
        "add",
        "--scope",
        "repo",
        stdin="Staging deploys read the CI token\n"
        "export DEPLOY_TOKEN=ghp_4fT9xQ2mLk8Vb7Nc3Rd6Ws1Yz5Ja0Pe2Hu9K\n",
    )
    click.echo("(that token was redacted before anything was stored: step 3 shows it)")

    _say("2. An agent proposes a memory for the whole repo; a person approves it.")
    proposed = _first_id(
        _ken(
            "add",
            "Run `make db-reset` before the integration tests",
            "--kind",
            "fact",
            "--scope",
            "repo",
            "--evidence",
            "tests failed with 'relation orders does not exist' until db-reset",
            agent="claude",
        )
    )
    _ken("approve", proposed)

    _say("3. The payoff. What any agent is told when it starts in this repo:")
    _ken("pack")

    _say("4. What it is given for one prompt, and why (each candidate's score):")
    _ken("recall", "can I mock the database in the integration tests?", "--explain")

    _say("5. Claude Code works here; its hooks record the session. Then Codex picks it up.")
    payload: dict[str, object] = {"session_id": "demo-claude-1", "cwd": str(repo)}
    prompt = "add a CSV export of the orders page"
    started = _hook("SessionStart", {**payload, "source": "startup"})
    click.secho("[claude starts] its SessionStart hook", fg="green")
    click.echo(f"  gives it the pack above ({len(started.splitlines())} lines)")
    click.secho(f"[the person types] {prompt}", fg="green")
    told = _hook("UserPromptSubmit", {**payload, "prompt": prompt})
    click.echo(
        "  recall adds " + ("what fits the prompt" if told else "nothing new for that prompt")
    )
    (repo / "orders_export.py").write_text("def export_orders(rows): ...\n", encoding="utf-8")
    _git(repo, "add", "orders_export.py")
    _git(
        repo,
        "-c",
        "user.name=Demo",
        "-c",
        "user.email=demo@example.com",
        "commit",
        "-qm",
        "Add a CSV export of the orders page",
    )
    (repo / "README.md").write_text("shop\n\nOrders can be exported as CSV.\n", encoding="utf-8")
    click.secho("[claude commits the export, edits README.md, and exits]", fg="green")
    _hook("SessionEnd", {**payload, "reason": "exit"})
    click.echo("  its SessionEnd hook records the commit, the change left and a handoff")
    _ken("handoff", "--to", "codex", "--print")

    click.echo(
        f"\nNext: `ken integrate AGENT` ({', '.join(agents.NAMES)}) gives your own agents "
        "this memory;\n`ken --help` lists every command. Your own store: `ken path`."
    )
