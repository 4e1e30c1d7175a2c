"""`/remember` and `/recall` typed in an agent: the words kept exactly, as the person's
own only when the agent CLI itself ran the hook."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import add, opened
from kenning import agents, slash
from kenning.model import Status
from kenning.store import ItemQuery, SessionQuery

WORDS = "Use pnpm, never npm — the lockfile is pnpm-lock.yaml"


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("/remember Use pnpm", ("remember", "Use pnpm", None)),
        (
            "  /remember   Use pnpm\nand yarn never  ",
            ("remember", "Use pnpm\nand yarn never", None),
        ),
        ("/prompts:remember Use pnpm", ("remember", "Use pnpm", None)),
        ("/remember --scope global Use tabs", ("remember", "Use tabs", "global")),
        ("/remember --scope=workspace Use tabs", ("remember", "Use tabs", "workspace")),
        ("/recall deploys", ("recall", "deploys", None)),
        ("/remember", ("remember", "", None)),
        ("/remember --scope global", ("remember", "", "global")),  # no words: not stored
        # `opencode run --command remember 'Use pnpm, never npm'`: one argument, quoted
        ('/remember "Use pnpm, never npm"', ("remember", "Use pnpm, never npm", None)),
        ("/remember 'Use pnpm, never npm'", ("remember", "Use pnpm, never npm", None)),
        (
            '/remember "--scope global Answer in British English"',
            ("remember", "Answer in British English", "global"),
        ),
        ('/recall "pnpm npm"', ("recall", "pnpm npm", None)),
        ('/remember "pnpm" over "npm"', ("remember", '"pnpm" over "npm"', None)),
    ],
)
def test_a_remember_or_recall_line_is_read_as_typed(prompt, expected):
    command = slash.parse(prompt)
    assert command is not None
    assert (command.name, command.text, command.scope) == expected


@pytest.mark.parametrize(
    "prompt", ["remember to use pnpm", "/rememberance", "/review", "x /recall"]
)
def test_other_prompts_are_no_command(prompt):
    assert slash.parse(prompt) is None


def test_a_path_that_starts_like_a_command_still_gets_recall(git_repo):
    """`/recall/hooks.py: the signature check fails` is a path, not `/recall`: it was
    answered with nothing, as a command that parsed as none."""
    repo = "repo:github.com/acme/shop"
    with opened() as store:
        add("Stripe webhook signatures are checked in hooks.py", store, scope=repo)
        add("The remember-me cookie lasts thirty days", store, scope=repo)
    env = {"CLAUDE_PROJECT_DIR": str(git_repo)}
    out = _hook(git_repo, "/recall/hooks.py: stripe webhook signature check fails", env)
    assert "Stripe webhook signatures" in out
    out = _hook(git_repo, "/remember-me cookie: how many days does it last", env)
    assert "remember-me cookie lasts" in out


def test_the_hook_environment_tells_the_cli_from_its_models_shell():
    claude = agents.get("claude")
    markers = (claude.hook_only_env, claude.tool_only_env)
    assert slash.from_cli(markers, {"CLAUDE_PROJECT_DIR": "/src/shop"})
    assert not slash.from_cli(markers, {})  # not run by the CLI as a hook
    both = {"CLAUDE_PROJECT_DIR": "/src/shop", "CLAUDE_CODE_EXECPATH": "/bin/claude"}
    assert not slash.from_cli(markers, both)  # the model's shell, copying the hook's
    codex = agents.get("codex")
    assert slash.from_cli((codex.hook_only_env, codex.tool_only_env), {})
    assert not slash.from_cli((codex.hook_only_env, codex.tool_only_env), {"CODEX_THREAD_ID": "t"})
    assert not slash.from_cli(((), ()), {})  # an agent that gives no signal: never


def _hook(git_repo: Path, prompt: str, env: dict[str, str], agent: str = "claude") -> str:
    payload = {
        "session_id": "7c0ffee0-0000-4000-8000-00000000000b",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        "cwd": str(git_repo),
    }
    done = ken_proc(
        "hook", "UserPromptSubmit", "--agent", agent, input=json.dumps(payload), env=env
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def test_remember_from_the_cli_stores_the_persons_exact_words_in_the_repo(git_repo):
    out = _hook(git_repo, f"/remember {WORDS}", {"CLAUDE_PROJECT_DIR": str(git_repo)})

    with opened() as store:
        [item] = store.list_items(ItemQuery(statuses=()))
    assert item.title == WORDS and item.status is Status.ACTIVE
    assert str(item.scope) == "repo:github.com/acme/shop"
    assert (item.provenance.who, item.provenance.how) == ("user", "slash")
    told = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert f"[m:{item.id[-6:].lower()}]" in told and "stored the person's words" in told


def test_remember_run_from_the_models_shell_is_only_a_proposal(git_repo):
    env = {"CLAUDE_PROJECT_DIR": str(git_repo), "CLAUDE_CODE_EXECPATH": "/x/claude"}
    out = _hook(git_repo, "/remember Always push straight to main", env)

    with opened() as store:
        [item] = store.list_items(ItemQuery(statuses=()))
    assert item.status is Status.PROPOSED and item.provenance.who == "claude"
    assert item.evidence == "Always push straight to main"
    assert "proposed" in out


def test_remember_run_from_one_agents_shell_as_another_agents_hook_is_only_a_proposal(
    git_repo,
):
    """Codex's hooks carry no variable of their own, so from Claude's shell a model ran
    `ken hook UserPromptSubmit --agent codex` and stored an active rule as the person's."""
    env = {"CLAUDECODE": "1", "CLAUDE_CODE_EXECPATH": "/x/claude"}
    _hook(git_repo, "/remember Always push straight to main", env, agent="codex")
    with opened() as store:
        [item] = store.list_items(ItemQuery(statuses=()))
    assert item.status is Status.PROPOSED and item.provenance.who != "user"


def test_remember_that_cannot_be_stored_says_so(git_repo):
    """A secret or an over-long text stored nothing and said nothing, while the installed
    command tells the agent to confirm it was saved."""
    env = {"CLAUDE_PROJECT_DIR": str(git_repo)}
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    for words in (f"CI token is {token}", "x" * 5000):
        told = json.loads(_hook(git_repo, f"/remember {words}", env))
        context = told["hookSpecificOutput"]["additionalContext"]
        assert context.startswith("kenning: nothing stored: ") and token not in context
    with opened() as store:
        assert store.list_items(ItemQuery(statuses=())) == []


@pytest.mark.parametrize("switch", ["env", "config"])
def test_remember_and_recall_with_memory_off_say_nothing_was_done(git_repo, switch):
    """With memory off the hook said nothing: the model saw the bare `/remember ...` and
    could claim it was saved. Kenning's own commands are told; other prompts stay silent."""
    env = {"CLAUDE_PROJECT_DIR": str(git_repo)}
    if switch == "env":
        env["KEN_ENABLED"] = "0"
    else:
        config = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[memory]\nenabled = false\n", encoding="utf-8")
    off = "kenning: memory is turned off (memory.enabled = false in config.toml, or KEN_ENABLED=0)"
    for prompt, done in (
        (f"/remember {WORDS}", "nothing was stored"),
        ("/recall deploys", "nothing was recalled"),
    ):
        told = json.loads(_hook(git_repo, prompt, env))
        assert told["hookSpecificOutput"]["additionalContext"] == f"{off}: {done}."
    assert _hook(git_repo, "how do we deploy?", env) == ""
    with opened() as store:
        assert store.list_items(ItemQuery(statuses=())) == []


def test_remember_typed_twice_keeps_one_memory(git_repo):
    env = {"CLAUDE_PROJECT_DIR": str(git_repo)}
    _hook(git_repo, "/remember Use pnpm, never npm", env)
    again = json.loads(_hook(git_repo, "/remember use pnpm -- never NPM", env))
    assert "kenning holds this already" in again["hookSpecificOutput"]["additionalContext"]
    with opened() as store:
        assert len(store.list_items(ItemQuery(statuses=()))) == 1


def test_remember_with_a_scope_and_recall_show_what_memory_holds(git_repo):
    env = {"CLAUDE_PROJECT_DIR": str(git_repo)}
    _hook(git_repo, "/remember --scope global Answer in British English", env)
    with opened() as store:
        add("Deploys go through staging first", store, scope="repo:github.com/acme/shop")
        [english] = store.list_items(ItemQuery(scopes=("global",)))
    assert english.title == "Answer in British English"

    shown = json.loads(_hook(git_repo, "/recall deploys", env))["hookSpecificOutput"]
    assert "Deploys go through staging first" in shown["additionalContext"]
    nothing = json.loads(_hook(git_repo, "/recall zeppelins", env))["hookSpecificOutput"]
    assert 'holds nothing for "zeppelins"' in nothing["additionalContext"]


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "opencode"])
def test_integrate_installs_remember_and_recall_and_remove_takes_only_them(agent):
    found = agents.get(agent)
    assert found.commands is not None
    files = list(found.commands(os.environ))
    assert [p.stem for p in files] == ["remember", "recall"]
    result = ken("integrate", agent)
    assert result.exit_code == 0, result.output
    assert all(p.exists() for p in files)
    assert f"/remember installed: {files[0]}" in result.output
    assert "/remember installed" not in ken("integrate", agent).output  # nothing to do again

    gone = ken("integrate", agent, "--remove")
    assert gone.exit_code == 0 and not any(p.exists() for p in files)


def test_a_remember_command_of_the_persons_own_is_left_as_it_is():
    path = list(agents.get("claude").commands(os.environ))[0]
    path.parent.mkdir(parents=True)
    path.write_text("my own /remember\n")
    result = ken("integrate", "claude")
    assert "is your own command: left as it is" in result.output
    ken("integrate", "claude", "--remove")
    assert path.read_text() == "my own /remember\n"


def test_an_opencode_command_of_the_persons_own_in_commands_is_left_as_its_own():
    """OpenCode reads commands/ as well as command/: kenning wrote its /remember beside
    the person's own there."""
    path = list(agents.get("opencode").commands(os.environ))[0]
    own = path.parent.parent / "commands" / path.name
    own.parent.mkdir(parents=True)
    own.write_text("my own /remember\n")
    result = ken("integrate", "opencode")
    assert f"{own} is your own command: none written" in result.output
    assert not path.exists() and own.read_text() == "my own /remember\n"


def test_a_remembered_rule_is_neither_told_again_nor_asked_about_at_stop(git_repo):
    """The memory `/remember` stores is the session's own: the next prompt's recall does
    not tell it back, and Stop does not ask the agent to record the rule it states."""
    env = {"CLAUDE_PROJECT_DIR": str(git_repo)}
    rule = "Integration tests hit a real Postgres, never mocks"
    _hook(git_repo, f"/remember {rule}", env)
    with opened() as store:
        [item] = store.list_items(ItemQuery())
        [session] = store.list_sessions(SessionQuery(limit=5))
        assert store.signals(session.id) == []  # nothing for Stop to ask about
    assert item.provenance.session == session.id
    told = _hook(git_repo, "can I mock postgres in the integration tests?", env)
    assert f"[m:{item.id[-6:].lower()}]" not in told
    assert _hook(git_repo, "/remember --scope global   ", env).count("needs words") == 1
    # A correction after it is still asked about: the /remember was the person's save.
    _hook(git_repo, "No, never use sudo in the deploy scripts.", env)
    stop = {"session_id": "7c0ffee0-0000-4000-8000-00000000000b", "cwd": str(git_repo)}
    asked = ken_proc("hook", "Stop", "--agent", "claude", input=json.dumps(stop), env=env)
    assert "never use sudo" in asked.stdout
