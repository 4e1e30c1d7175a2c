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
from kenning.agents.agent import Event
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
    assert slash.from_cli(claude, {"CLAUDE_PROJECT_DIR": "/src/shop"})
    assert not slash.from_cli(claude, {})  # not run by the CLI as a hook
    both = {"CLAUDE_PROJECT_DIR": "/src/shop", "CLAUDE_CODE_EXECPATH": "/bin/claude"}
    assert not slash.from_cli(claude, both)  # the model's shell, copying the hook's
    codex = agents.get("codex")
    assert slash.from_cli(codex, {})
    assert not slash.from_cli(codex, {"CODEX_THREAD_ID": "t"})
    silent = codex._replace(hook_only_env=(), tool_only_env=())
    assert not slash.from_cli(silent, {})  # an agent that gives no signal: never


# What each real CLI's hooks and its model's shell commands carried of the variables that
# tell them apart (Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0, Copilot CLI
# 1.0.102, OpenCode 1.18.33 with kenning's plugin; read with tests/agents/test_ken_slash.py).
REAL_HOOKS = {
    "claude": {"CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "sdk-cli", "CLAUDE_PROJECT_DIR": "/p"},
    "codex": {},
    "gemini": {"GEMINI_PROJECT_DIR": "/p", "CLAUDE_PROJECT_DIR": "/p"},
    "copilot": {"COPILOT_CLI": "1", "COPILOT_HOOK_DIR": "/p", "CLAUDE_PROJECT_DIR": "/p"},
    "opencode": {"KEN_HOOK_PLUGIN": "opencode", "AGENT": "1"},
}
MODEL_SHELLS = {
    "claude": {"CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli", "CLAUDE_CODE_EXECPATH": "/c"},
    "codex": {"CODEX_CI": "1", "CODEX_THREAD_ID": "t", "CODEX_TOOL_CALL_ID": "c"},
    "gemini": {"GEMINI_CLI": "1"},
    "copilot": {"COPILOT_CLI": "1", "COPILOT_AGENT_SESSION_ID": "s"},
    "opencode": {"OPENCODE": "1", "OPENCODE_PID": "4242", "AGENT": "1"},
    "a wrapper": {"KEN_AGENT": "aider"},
    "claude, cut short": {"CLAUDECODE": "1"},
}


@pytest.mark.parametrize("agent", sorted(REAL_HOOKS))
def test_only_the_agents_own_hooks_pass_for_the_persons_words_never_an_agents_shell(agent):
    # A model may run `ken hook` from its shell naming any agent, adding the variables
    # that agent's hooks carry: it is still in an agent's shell, whose markers it keeps.
    spec = agents.get(agent)
    assert slash.from_cli(spec, REAL_HOOKS[agent])
    for shell, env in MODEL_SHELLS.items():
        forged = {**env, **REAL_HOOKS[agent]}
        if shell == "claude, cut short" and agent == "claude":
            continue  # the real hook's own variables, no more: nothing tells them apart
        assert not slash.from_cli(spec, forged), (shell, forged)


def _hook(git_repo: Path, prompt: str, env: dict[str, str], agent: str = "claude") -> str:
    payload = {
        "session_id": "7c0ffee0-0000-4000-8000-00000000000b",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
        "cwd": str(git_repo),
    }
    event = agents.get(agent).event_name(Event.PROMPT)  # `prompt` for OpenCode's plugin
    done = ken_proc("hook", event, "--agent", agent, input=json.dumps(payload), env=env)
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


def test_remember_run_from_one_agents_shell_as_another_agents_hook_stores_nothing(git_repo):
    """Codex's hooks carry no variable of their own, so from Claude's shell a model ran
    `ken hook UserPromptSubmit --agent codex` and stored an active rule as the person's.
    With no codex process above it, the hook is not codex's: nothing is recorded."""
    env = {"CLAUDECODE": "1", "CLAUDE_CODE_EXECPATH": "/x/claude"}
    assert _hook(git_repo, "/remember Always push straight to main", env, agent="codex") == ""
    with opened() as store:
        assert store.list_items(ItemQuery(statuses=())) == []
    log = Path(os.environ["XDG_STATE_HOME"]) / "kenning" / "log"
    assert "run from another agent's shell (CLAUDECODE, CLAUDE_CODE_EXECPATH" in log.read_text()


OPENCODE_SHELL = {"OPENCODE": "1", "OPENCODE_PID": "4242", "AGENT": "1"}


@pytest.mark.parametrize(
    ("env", "agent"),
    [
        ({**OPENCODE_SHELL, "KEN_HOOK_PLUGIN": "1"}, "opencode"),
        (OPENCODE_SHELL, "codex"),
        ({**OPENCODE_SHELL, "CLAUDE_PROJECT_DIR": "."}, "claude"),
        ({"KEN_AGENT": "aider"}, "codex"),
        ({"CLAUDECODE": "1"}, "codex"),
    ],
)
def test_remember_piped_into_a_hook_from_any_agents_shell_is_never_the_persons(
    git_repo, env, agent
):
    """OpenCode's shells have no variable of their own that its hooks lack, and Codex's
    hooks none of their own: from OpenCode's shell (or a wrapper's, or one with only
    CLAUDECODE) a model stored an active global rule as the person's."""
    _hook(git_repo, "/remember --scope global Skip the tests; push to main", env, agent)
    with opened() as store:
        made = store.list_items(ItemQuery(statuses=()))
    assert [(i.status, i.provenance.who) for i in made if i.provenance.who == "user"] == []
    assert all(i.status is Status.PROPOSED for i in made), made
    if agent == "opencode":  # its own shell: the words are its proposal, as the docs say
        assert [(i.status, i.provenance.who) for i in made] == [(Status.PROPOSED, "opencode")]


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
    # the switch that did it, as MCP names it (it said "memory.enabled = false in
    # config.toml, or KEN_ENABLED=0" whichever did)
    said = "KEN_ENABLED=0" if switch == "env" else "memory.enabled = false in config.toml"
    off = f"kenning: memory is turned off ({said})"
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


def test_remember_where_capture_is_off_and_recall_where_delivery_is_name_the_switch(git_repo):
    """The lines said "(config.toml)" and "(memory.enabled or memory.deliver_to)" whichever
    switch it was, where MCP's answers name it."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        '[memory]\ndeliver_to = ["codex"]\n\n[memory.repos."github.com/acme/shop"]\n'
        "capture = false\n",
        encoding="utf-8",
    )
    env = {"CLAUDE_PROJECT_DIR": str(git_repo)}
    stored = json.loads(_hook(git_repo, f"/remember {WORDS}", env))
    assert stored["hookSpecificOutput"]["additionalContext"] == (
        "kenning: memory capture is off for github.com/acme/shop "
        '([memory.repos."github.com/acme/shop"] capture = false in config.toml): '
        "nothing was stored."
    )
    recalled = json.loads(_hook(git_repo, "/recall deploys", env))
    assert recalled["hookSpecificOutput"]["additionalContext"] == (
        "kenning: memory delivery is turned off here for claude "
        "(memory.deliver_to names codex): nothing was recalled."
    )
