"""`ken integrate` and `ken doctor`, on the agents' settings files (no agent CLI runs)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agents import harness  # its own Codex trust hash, to check ours against
from conftest import ken, ken_proc
from helpers import one_line_error
from kenning import agents, config, integrate
from kenning.agents.codex import codex_home
from kenning.agents.hook_settings import is_ours

AGENTS = ("claude", "codex", "gemini")  # the agents whose settings hold grouped hooks


def installs(agent: str) -> tuple[str, ...]:
    return agents.get(agent).installs


def codex_config() -> Path:
    return codex_home(os.environ) / "config.toml"


KEN = str(Path(sys.executable).with_name("ken"))


def settings(agent: str) -> Path:
    return integrate.settings_path(agent)


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=4) + "\n", encoding="utf-8")


def run(*args: str) -> Any:
    result = ken("integrate", *args, "--json")
    assert result.exit_code == 0, result.output
    [change] = json.loads(result.output)
    return change


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.ken-backup*"))


def user_settings(agent: str) -> dict[str, Any]:
    """Settings a person already has: other keys, and hooks of their own."""
    mine = {"type": "command", "command": "/usr/local/bin/notify-me", "timeout": 5}
    if agent == "gemini":
        mine = {"name": "notify", **mine, "timeout": 5000}
        return {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "hooks": {
                "SessionStart": [{"matcher": "*", "hooks": [mine]}],
                "AfterAgent": [{"matcher": "*", "hooks": [mine]}],
            },
        }
    data: dict[str, Any] = {
        "hooks": {
            "SessionStart": [{"hooks": [mine]}],
            "Stop": [{"hooks": [mine]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [mine]}],
        }
    }
    if agent == "claude":
        data = {
            "model": "opus",
            "permissions": {"allow": ["Bash(ls:*)"]},
            **data,
            "statusLine": {"type": "command", "command": "echo hi"},
        }
    return data


def ours(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """kenning's handlers in a settings dict, by event."""
    found: dict[str, list[dict[str, Any]]] = {}
    for event, groups in data.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if is_ours(handler):
                    found.setdefault(event, []).append(handler)
    return found


# ----------------------------------------------------------------------------- install


@pytest.mark.parametrize("agent", AGENTS)
def test_install_writes_one_handler_per_event(agent: str) -> None:
    change = run(agent)
    assert change["action"] == "installed"
    assert change["path"] == str(settings(agent))
    data = read(settings(agent))
    found = ours(data)
    assert sorted(found) == sorted(installs(agent))
    for event, [handler] in found.items():
        assert handler["type"] == "command"
        assert handler["command"] == integrate.hook_command(agent, event)
        assert handler["command"].endswith(f" ken hook {event} --agent {agent}")
        assert Path(handler["command"].split()[0]).is_absolute()
    assert change["commands"] == {e: h[0]["command"] for e, h in found.items()}


@pytest.mark.parametrize("agent", AGENTS)
def test_install_twice_gives_the_same_file(agent: str) -> None:
    write(settings(agent), user_settings(agent))
    run(agent)
    first = settings(agent).read_bytes()
    made = backups(settings(agent))
    change = run(agent)
    assert change["action"] == "unchanged"
    assert change["backup"] is None
    assert settings(agent).read_bytes() == first
    assert backups(settings(agent)) == made


@pytest.mark.parametrize("agent", AGENTS)
def test_install_keeps_the_persons_settings_and_hooks(agent: str) -> None:
    original = user_settings(agent)
    write(settings(agent), original)
    run(agent)
    data = read(settings(agent))
    for key, value in original.items():
        if key != "hooks":
            assert data[key] == value
    for event, groups in original["hooks"].items():
        assert data["hooks"][event][: len(groups)] == groups, event


@pytest.mark.parametrize("agent", AGENTS)
def test_install_backs_up_the_file_it_changes(agent: str) -> None:
    write(settings(agent), user_settings(agent))
    before = settings(agent).read_bytes()
    change = run(agent)
    [backup] = backups(settings(agent))
    assert change["backup"] == str(backup)
    assert backup.read_bytes() == before


def test_a_fresh_file_needs_no_backup() -> None:
    change = run("claude")
    assert change["backup"] is None
    assert backups(settings("claude")) == []


@pytest.mark.parametrize("agent", AGENTS)
def test_remove_takes_out_exactly_what_install_added(agent: str) -> None:
    original = user_settings(agent)
    write(settings(agent), original)
    run(agent)
    change = run(agent, "--remove")
    assert change["action"] == "removed"
    assert read(settings(agent)) == original
    assert run(agent, "--remove")["action"] == "absent"


@pytest.mark.parametrize("agent", AGENTS)
def test_each_settings_file_keeps_one_backup_the_persons_file_before_kenning_first_changed_it(
    agent: str,
) -> None:
    """Each change replaced the backup, so after an install and a removal it held
    kenning's own output, and the person's file was in no backup."""
    path = settings(agent)
    write(path, user_settings(agent))
    original = path.read_bytes()
    run(agent)
    assert [p.read_bytes() for p in backups(path)] == [original]
    for _ in range(3):
        run(agent, "--remove")
        run(agent)
    assert run(agent, "--remove")["backup"] == str(path.with_name(f"{path.name}.ken-backup"))
    assert [p.read_bytes() for p in backups(path)] == [original]
    assert read(path) == user_settings(agent)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_command_that_writes_a_file_twice_backs_it_up_once_as_it_was_before(
    agent: str,
) -> None:
    """With --mcp (and Codex's --trust) one command writes a file twice: its backup was
    kenning's first change, and the person's own file was in no backup."""
    files = {settings(agent), agents.get(agent).mcp.path(os.environ)}
    codex_config = Path(os.environ["HOME"]) / ".codex" / "config.toml"
    write(settings(agent), user_settings(agent))
    if agent == "codex":
        codex_config.parent.mkdir(parents=True, exist_ok=True)
        codex_config.write_text('# mine\nmodel = "o3"\n', encoding="utf-8")
        files.add(codex_config)
    else:
        mcp = agents.get(agent).mcp.path(os.environ)
        if not mcp.exists():
            write(mcp, {"theme": "dark"})
    before = {f: f.read_bytes() for f in files if f.exists()}
    flags = ("--mcp", "--trust") if agent == "codex" else ("--mcp",)
    assert ken("integrate", agent, *flags).exit_code == 0
    for path, was in before.items():
        backup = path.with_name(f"{path.name}.ken-backup")
        assert backup.read_bytes() == was, path


@pytest.mark.parametrize(
    ("agent", "where", "text", "says"),
    [
        ("claude", "mcp", '{"mcpServers": []}', "'mcpServers' in that file is not a table"),
        ("gemini", "mcp", '{"mcpServers": "x"}', "'mcpServers' in that file is not a table"),
        ("codex", "mcp", "mcp_servers = 3\n", "'mcp_servers' in that file is not a table"),
        ("claude", "hooks", '{"permissions": []}', "'permissions' in that file is not a table"),
        # JSON would write it back as Infinity, which no agent then reads
        ("gemini", "hooks", '{"ui": {"x": 1e400}}', "holds the number 1e400"),
        (
            "claude",
            "hooks",
            '{"permissions": {"allow": "Bash"}}',
            "'permissions.allow' in that file is not a list",
        ),
    ],
)
def test_a_settings_file_of_an_unexpected_shape_is_named_and_nothing_is_written(
    agent: str, where: str, text: str, says: str
) -> None:
    """Valid JSON or TOML, but not what the agent reads there: a traceback, after the
    hooks were written ("allow": "Bash" became ["B", "a", "s", "h", ...])."""
    path = settings(agent) if where == "hooks" else agents.get(agent).mcp.path(os.environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    hooks = settings(agent)
    before = {p: p.read_bytes() for p in {path, hooks} if p.exists()}
    result = ken("integrate", agent, "--mcp")
    assert result.exit_code == 1, result.output
    line = one_line_error(result.stderr)
    assert str(path) in line and says in line, line
    assert {p: p.read_bytes() for p in before} == before
    assert not hooks.exists() or hooks in before  # not even the hooks


GEMINI_WITH_COMMENTS = """{
  // the person's own note
  "ui": {"theme": "GitHub // not a comment"}, /* and a block */
  "general": {"vimMode": true,},
}
"""


def test_gemini_settings_with_comments_are_read_and_never_written_without_them() -> None:
    """Gemini CLI reads its settings with comments and trailing commas: doctor reads
    them too, and integrate refuses in one line rather than drop the person's comments."""
    path = settings("gemini")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GEMINI_WITH_COMMENTS, encoding="utf-8")
    result = ken("integrate", "gemini", "--mcp")
    assert result.exit_code == 1
    line = one_line_error(result.stderr)
    assert str(path) in line and "holds comments or trailing commas" in line, line
    assert path.read_text(encoding="utf-8") == GEMINI_WITH_COMMENTS
    # Installed before the person wrote the comments in: doctor still sees the hooks.
    path.write_text("{}", encoding="utf-8")
    assert ken("integrate", "gemini", "--mcp").exit_code == 0
    installed = path.read_text(encoding="utf-8")
    path.write_text("// mine\n" + installed.replace("\n}", ",\n}", 1), encoding="utf-8")
    report = json.loads(ken("doctor", "--json").stdout)
    checks = {c["name"]: c for c in report["agents"]["gemini"]}
    assert checks["gemini hooks"]["ok"] and "5 of 5 events" in checks["gemini hooks"]["detail"]
    assert checks["gemini mcp"]["ok"], checks["gemini mcp"]


def test_removing_codex_tables_keeps_the_persons_comment_on_the_table_after_them() -> None:
    """tomlkit keeps a comment written above a table with the table before it: taking out
    kenning's MCP server (and its hook trust) took the person's comment on their own
    server with it."""
    assert ken("integrate", "codex", "--mcp", "--trust").exit_code == 0
    path = codex_config()
    mine = '\n# my own server\n[mcp_servers.other]\ncommand = "true"\n\n# the end\n'
    path.write_text(path.read_text(encoding="utf-8") + mine, encoding="utf-8")
    assert ken("integrate", "codex", "--remove", "--mcp").exit_code == 0
    text = path.read_text(encoding="utf-8")
    assert "[mcp_servers.ken]" not in text and "[hooks" not in text, text
    assert '# my own server\n[mcp_servers.other]\ncommand = "true"' in text, text
    assert "# the end" in text
    assert tomllib.loads(text)["mcp_servers"] == {"other": {"command": "true"}}


def test_a_remove_that_cannot_take_out_the_mcp_server_takes_out_nothing() -> None:
    """`--remove --mcp` deleted the plugin and commands, then refused opencode.json (which
    OpenCode reads with comments) saying "nothing changed"."""
    assert ken("integrate", "opencode", "--mcp").exit_code == 0
    config = agents.get("opencode").mcp.path(os.environ)
    config.write_text("// mine\n" + config.read_text(encoding="utf-8"), encoding="utf-8")
    home = Path(os.environ["XDG_CONFIG_HOME"]) / "opencode"
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    result = ken("integrate", "opencode", "--remove", "--mcp")
    assert result.exit_code == 1
    assert "holds comments" in one_line_error(result.stderr)
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before


def test_claude_config_dir_holds_the_hooks_as_it_holds_the_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With CLAUDE_CONFIG_DIR, Claude Code reads its settings there: the hooks went to
    ~/.claude/settings.json while /remember went to the folder it names."""
    folder = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    assert ken("integrate", "claude").exit_code == 0
    assert "SessionStart" in read(folder / "settings.json")["hooks"]
    assert (folder / "commands" / "remember.md").exists()
    assert not (Path(os.environ["HOME"]) / ".claude" / "settings.json").exists()


def test_a_folder_where_a_settings_file_belongs_is_one_line() -> None:
    settings("claude").mkdir(parents=True)
    result = ken("integrate", "claude")
    assert result.exit_code == 1 and "cannot read" in one_line_error(result.stderr)


def test_a_private_settings_file_stays_private_and_so_does_its_backup() -> None:
    path = agents.get("claude").mcp.path(os.environ)
    write(path, {"oauthAccount": {"token": "secret-ish"}})
    path.chmod(0o600)
    old = os.umask(0o022)  # what most shells have: new files readable by all
    try:
        result = ken("integrate", "claude", "--mcp")
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    [backup] = backups(path)
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert oct(backup.stat().st_mode & 0o777) == oct(0o600)


def test_remove_with_nothing_installed() -> None:
    assert run("claude", "--remove")["action"] == "absent"
    write(settings("claude"), {"model": "opus"})
    assert run("claude", "--remove")["action"] == "absent"
    assert read(settings("claude")) == {"model": "opus"}


def test_reinstall_replaces_an_old_path_in_place() -> None:
    """After the venv moves, installing again swaps the command where it stood."""
    path = settings("claude")
    integrate.install("claude", ken="/old/venv/bin/ken")
    data = read(path)
    mine = {"type": "command", "command": "/usr/local/bin/after-ours"}
    data["hooks"]["SessionStart"].append({"hooks": [mine]})
    write(path, data)
    run("claude")
    groups = read(path)["hooks"]["SessionStart"]
    assert [g["hooks"][0]["command"] for g in groups] == [
        integrate.hook_command("claude", "SessionStart"),
        "/usr/local/bin/after-ours",
    ]
    assert "/old/venv" not in path.read_text()


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"hooks": []}'])
def test_a_settings_file_it_cannot_read_is_left_alone(text: str) -> None:
    path = settings("claude")
    path.parent.mkdir(parents=True)
    path.write_text(text)
    result = ken("integrate", "claude")
    assert result.exit_code != 0
    assert "fix it by hand" in result.output
    assert path.read_text() == text
    assert backups(path) == []


@pytest.mark.parametrize(
    ("hooks", "problem"),
    [
        ([], "'hooks' is a list, not an object"),
        ({"SessionStart": "ken hook SessionStart"}, "'hooks.SessionStart' is a string, not a list"),
        ({"Stop": [["notify"]]}, "'hooks.Stop[0]' is a list, not an object"),
        ({"Stop": [{"hooks": "notify"}]}, "'hooks.Stop[0].hooks' is a string, not a list"),
        ({"Stop": [{"hooks": ["notify"]}]}, "'hooks.Stop[0].hooks' holds a handler that is not"),
    ],
)
@pytest.mark.parametrize("remove", [False, True])
def test_a_malformed_hooks_entry_gets_one_clear_line_and_changes_nothing(
    hooks: Any, problem: str, remove: bool
) -> None:
    path = settings("claude")
    write(path, {"theme": "dark", "hooks": hooks})
    before = path.read_bytes()

    result = ken("integrate", "claude", *(["--remove"] if remove else []))

    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"ken: {path}: {problem}")
    assert line.endswith("; fix it by hand first (nothing changed)")
    assert path.read_bytes() == before
    assert backups(path) == []


def test_a_symlinked_settings_file_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "claude-settings.json"
    write(real, {"theme": "dark"})
    real.chmod(0o600)
    path = settings("claude")
    path.parent.mkdir(parents=True)
    path.symlink_to(real)

    run("claude")

    assert path.is_symlink() and path.resolve() == real
    assert read(real)["theme"] == "dark" and "SessionStart" in read(real)["hooks"]
    assert real.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in dotfiles.iterdir()] == ["claude-settings.json"]

    run("claude", "--remove")

    assert path.is_symlink() and read(real) == {"theme": "dark"}


def test_gemini_timeouts_are_milliseconds_and_others_seconds() -> None:
    for agent in AGENTS:
        run(agent)
    gemini = ours(read(settings("gemini")))
    assert {e: h[0]["timeout"] for e, h in gemini.items()} == {
        "SessionStart": 15_000,
        "BeforeAgent": 10_000,
        "AfterTool": 5_000,
        "AfterAgent": 10_000,
        "SessionEnd": 3_000,
    }
    assert all(h[0]["name"] == "kenning" for h in gemini.values())
    groups = read(settings("gemini"))["hooks"]["BeforeAgent"]
    assert groups[-1]["matcher"] == "*"
    for agent in ("claude", "codex"):
        timeouts = {e: h[0]["timeout"] for e, h in ours(read(settings(agent))).items()}
        assert timeouts["SessionStart"] == 15
        assert timeouts["UserPromptSubmit"] == 10
        assert timeouts["SessionEnd"] == 3


def test_the_human_output_names_the_file_and_commands() -> None:
    result = ken("integrate", "codex")
    assert result.exit_code == 0
    assert f"codex: hooks installed in {settings('codex')}" in result.output
    assert "SessionStart: " in result.output
    assert "ken integrate codex --trust" in result.output  # how to trust them


# ----------------------------------------------------------------------------- codex trust

CODEX_CONFIG = """\
# my codex settings
model = "gpt-5.1-codex"  # the one I like
approval_policy = "never"

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
trusted_hash = "sha256:mine"  # someone else's hook

[tui]
# keep the theme
theme = "dark"
"""


CODEX_EVENT_NAMES = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PostToolUse": "post_tool_use",
    "Stop": "stop",
    "PreCompact": "pre_compact",
    "SessionEnd": "session_end",
}


def trust_table() -> dict[str, Any]:
    config = tomllib.loads(codex_config().read_text())
    return dict(config.get("hooks", {}).get("state", {}))


def test_codex_trust_covers_exactly_kennings_handlers() -> None:
    config = codex_config()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(CODEX_CONFIG)
    write(settings("codex"), user_settings("codex"))

    run("codex", "--trust")

    hooks_file = settings("codex").resolve()
    data = read(settings("codex"))
    expected = {"/elsewhere/hooks.json:stop:0:0": {"trusted_hash": "sha256:mine"}}
    for event, groups in data["hooks"].items():
        for g, group in enumerate(groups):
            for h, handler in enumerate(group["hooks"]):
                if is_ours(handler):
                    key = f"{hooks_file}:{CODEX_EVENT_NAMES[event]}:{g}:{h}"
                    # The harness computes Codex's hash on its own; the two must agree.
                    expected[key] = {"trusted_hash": harness.codex_hook_hash(event, handler)}
    assert trust_table() == expected
    assert len(expected) == 1 + len(installs("codex"))
    text = config.read_text()
    for comment in (
        "# my codex settings",
        "# the one I like",
        "# someone else's hook",
        "# keep the theme",
    ):
        assert comment in text
    assert tomllib.loads(text)["tui"] == {"theme": "dark"}
    # Idempotent, trust included.
    run("codex", "--trust")
    assert config.read_text() == text


def test_codex_remove_drops_its_trust_and_keeps_the_rest() -> None:
    config = codex_config()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(CODEX_CONFIG)
    original = user_settings("codex")
    write(settings("codex"), original)
    run("codex", "--trust")

    run("codex", "--remove")

    assert read(settings("codex")) == original
    assert tomllib.loads(config.read_text()) == tomllib.loads(CODEX_CONFIG)
    assert "# keep the theme" in config.read_text()


def test_codex_reinstall_elsewhere_moves_the_trust() -> None:
    integrate.install("codex", trust=True, ken="/old/venv/bin/ken")
    old = trust_table()
    run("codex", "--trust")
    new = trust_table()
    assert set(old) == set(new)  # same positions...
    old_hashes = {v["trusted_hash"] for v in old.values()}
    assert not old_hashes & {v["trusted_hash"] for v in new.values()}  # ...new hashes
    assert "/old/venv" not in settings("codex").read_text()


def test_codex_reinstall_keeps_the_trust_of_a_hook_after_ours() -> None:
    """Codex keys trust by position: re-installing must not move the person's hooks."""
    integrate.install("codex", trust=True, ken="/old/venv/bin/ken")
    data = read(settings("codex"))
    mine = {"type": "command", "command": "/usr/local/bin/after-ours", "timeout": 5}
    data["hooks"]["SessionStart"].append({"hooks": [mine]})
    write(settings("codex"), data)
    key = f"{settings('codex').resolve()}:session_start:1:0"
    config = codex_config()
    config.write_text(
        config.read_text() + f'\n[hooks.state."{key}"]\n'
        f'trusted_hash = "{harness.codex_hook_hash("SessionStart", mine)}"\n'
    )

    run("codex", "--trust")

    groups = read(settings("codex"))["hooks"]["SessionStart"]
    assert groups[1] == {"hooks": [mine]}
    assert trust_table()[key] == {"trusted_hash": harness.codex_hook_hash("SessionStart", mine)}
    assert len(trust_table()) == len(installs("codex")) + 1


def test_codex_without_trust_writes_no_config() -> None:
    run("codex")
    assert not codex_config().exists()


# ----------------------------------------------------------------------------- doctor


def doctor() -> tuple[int, dict[str, Any]]:
    result = ken("doctor", "--json")
    return result.exit_code, json.loads(result.output)


def checks(report: dict[str, Any], agent: str) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["agents"][agent]}


def test_doctor_with_nothing_installed() -> None:
    code, report = doctor()
    assert code == 0 and report["ok"] is True
    for agent in AGENTS:
        check, mcp = report["agents"][agent]
        assert check["ok"] is True
        assert check["detail"] == f"not installed in {settings(agent)}"
        assert check["fix"] == f"to give {agent} memory: ken integrate {agent}"
        assert (mcp["ok"], mcp["detail"]) == (True, "MCP server not registered")
    assert "does not exist yet" in report["store"][0]["detail"]
    assert report["recent_errors"] == []


@pytest.mark.parametrize("agent", AGENTS)
def test_doctor_with_hooks_installed(agent: str) -> None:
    run(agent)
    ken("add", "Deploys go through make ship")
    code, report = doctor()
    assert code == 0, report
    found = checks(report, agent)
    wanted = installs(agent)
    assert found[f"{agent} hooks"]["ok"] is True
    assert found[f"{agent} hooks"]["detail"].startswith(f"{len(wanted)} of {len(wanted)} events")
    for event in wanted:
        assert found[f"{agent} {event}"]["ok"] is True
        assert found[f"{agent} {event}"]["detail"].startswith("runs: ")
    assert report["store"][0]["ok"] is True
    assert "1 items" in report["store"][0]["detail"]


def test_doctor_finds_a_hook_whose_binary_is_gone(tmp_path: Path) -> None:
    gone = tmp_path / "old-venv" / "bin" / "ken"
    integrate.install("claude", ken=str(gone))
    code, report = doctor()
    assert code == 1 and report["ok"] is False
    found = checks(report, "claude")
    for event in installs("claude"):
        assert found[f"claude {event}"]["ok"] is False
        assert found[f"claude {event}"]["fix"] == (
            f"{gone} is gone: run `ken integrate claude` again"
        )
    text = ken("doctor").output
    assert f"BAD claude SessionStart: runs: {gone} hook SessionStart" in text
    # Integrating again points the hooks at this ken.
    run("claude")
    assert doctor()[0] == 0


def test_doctor_finds_a_hook_whose_kenning_is_gone(tmp_path: Path) -> None:
    """A fast hook command names the folder its kenning was in: gone (another Python's
    site-packages, an uninstall), doctor says so."""
    run("claude")
    path = settings("claude")
    gone = tmp_path / "lib" / "python3.99" / "site-packages"
    path.write_text(path.read_text().replace(integrate.kenning_root(), str(gone)))
    code, report = doctor()
    assert code == 1
    found = checks(report, "claude")
    for event in installs("claude"):
        assert found[f"claude {event}"]["fix"] == (
            f"no kenning in {gone}: run `ken integrate claude` again"
        )
    run("claude")
    assert doctor()[0] == 0


def test_the_hook_command_runs_python_without_site(tmp_path: Path) -> None:
    """The installed command is `ken hook` in a Python started with -S and kenning's
    folder first on sys.path: the agent's working folder shadows no module, and a
    kenning that is gone exits 1 (an error Claude Code shows), never 2 (which blocks the
    person's prompt)."""
    command = integrate.hook_command("claude", "UserPromptSubmit")
    argv = shlex.split(command)
    assert argv[0] == sys.executable and argv[1:3] == ["-S", "-c"]
    assert argv[4:] == ["ken", "hook", "UserPromptSubmit", "--agent", "claude"]
    assert integrate.hook_root(command) == integrate.kenning_root()
    repo = tmp_path / "repo"
    (repo / "kenning").mkdir(parents=True)
    (repo / "kenning" / "__init__.py").write_text("raise SystemExit(3)\n")
    (repo / "json.py").write_text("raise SystemExit(4)\n")
    ken("add", "The docker build is slow when its layer cache is cold", "--scope", "global")
    payload = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "UserPromptSubmit"}
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps(payload | {"prompt": "why is the docker build so slow?"}).encode(),
        cwd=repo,
        capture_output=True,
        env={**os.environ, "KEN_HOOK_SERVER": "0"},
    )
    # The whole hook path ran without `site`: the store, recall, the session.
    assert (done.returncode, done.stderr) == (0, b"")
    assert b"layer cache is cold" in done.stdout
    assert not config.log_path().exists()  # no hook error was logged
    broken = command.replace(integrate.kenning_root(), str(tmp_path / "gone"))
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the agent's own
    done = subprocess.run(broken, shell=True, input=b"{}", cwd=repo, capture_output=True, env=bare)
    assert done.returncode == 1 and b"No module named 'kenning'" in done.stderr


def test_doctor_finds_a_missing_event() -> None:
    run("claude")
    data = read(settings("claude"))
    del data["hooks"]["UserPromptSubmit"]
    write(settings("claude"), data)
    code, report = doctor()
    assert code == 1
    check = checks(report, "claude")["claude hooks"]
    assert check["ok"] is False
    assert check["detail"].endswith("; missing UserPromptSubmit")
    assert check["fix"] == "ken integrate claude"


def test_doctor_finds_a_corrupt_store(db_path: Path) -> None:
    db_path.write_bytes(b"not a database at all\n" * 300)
    code, report = doctor()
    assert code == 1
    [check] = [c for c in report["store"] if c["name"] == "store"]
    assert check["ok"] is False
    assert "damaged" in check["detail"] or "not a" in check["detail"]
    assert check["fix"]
    assert "BAD store" in ken("doctor").output
    assert db_path.read_bytes() == b"not a database at all\n" * 300


def test_doctor_finds_a_store_others_can_read(db_path: Path) -> None:
    ken("add", "Deploys go through make ship")
    os.chmod(db_path, 0o644)
    code, report = doctor()
    assert code == 1
    store = {c["name"]: c for c in report["store"]}
    assert store["store file mode"]["ok"] is False
    assert store["store file mode"]["fix"] == f"chmod 600 {db_path}"


def test_doctor_shows_recent_hook_errors() -> None:
    done = ken_proc("hook", "UserPromptSubmit", "--agent", "claude", input="{oops")
    assert (done.returncode, done.stdout) == (0, "")
    code, report = doctor()
    [line] = report["recent_errors"]
    assert "claude UserPromptSubmit BadPayload" in line
    assert "recent hook log:" in ken("doctor").output


# --------------------------------------------------------------- byte-stable, every agent


def persons_files(agent: str) -> dict[Path, bytes]:
    """The files a person has before kenning: the agent's settings (when they are not
    kenning's alone) and its MCP registry, each with something of their own."""
    spec = agents.get(agent)
    made: dict[Path, bytes] = {}
    if not spec.hooks.owned:
        write(settings(agent), user_settings(agent))
    mcp = spec.mcp.path(os.environ)
    if spec.mcp.syntax == "toml":
        mcp.parent.mkdir(parents=True, exist_ok=True)
        mcp.write_text('# mine\nmodel = "o3"\n\n[profiles.fast]\nmodel = "o4-mini"\n')
    elif not mcp.exists():
        write(mcp, {"theme": "dark"})
    for path in (settings(agent), mcp):
        if path.exists():
            made[path] = path.read_bytes()
    return made


def files_under(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("agent", agents.NAMES)
def test_integrate_twice_writes_the_same_bytes_and_remove_gives_back_the_persons_files(
    agent: str,
) -> None:
    """`ken integrate codex --trust --mcp` run twice added a blank line to config.toml,
    which put kenning's own first output in its backup; `--remove` then left a blank
    line the person's file did not have."""
    home = Path(os.environ["HOME"])
    original = persons_files(agent)
    flags = ("--mcp", "--trust") if agent == "codex" else ("--mcp",)
    assert ken("integrate", agent, *flags).exit_code == 0
    first = files_under(home)
    assert ken("integrate", agent, *flags).exit_code == 0
    assert files_under(home) == first
    for path, was in original.items():
        backup = path.with_name(f"{path.name}.ken-backup")
        assert backup.read_bytes() == was, path
    assert ken("integrate", agent, "--remove", "--mcp").exit_code == 0
    for path, was in original.items():
        if path.suffix == ".json":  # written back as kenning writes JSON: the same data
            assert read(path) == json.loads(was), path
        else:
            assert path.read_bytes() == was, path


def test_removing_codex_tables_from_the_end_takes_the_blank_line_set_before_them() -> None:
    path = codex_config()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('model = "o3"\n\n[profiles.fast]\nmodel = "o4-mini"\n', encoding="utf-8")
    original = path.read_bytes()
    for flags in (("--trust",), ("--mcp",), ("--trust", "--mcp")):
        assert ken("integrate", "codex", *flags).exit_code == 0
        assert ken("integrate", "codex", "--remove", "--mcp").exit_code == 0
        assert path.read_bytes() == original, flags


# ------------------------------------------------------------- what integrate made


def entries(home: Path) -> set[str]:
    """What is under HOME, but kenning's own state folder."""
    state = config.state_dir()
    return {
        str(p.relative_to(home))
        for p in home.rglob("*")
        if p != state and state not in p.parents and p not in state.parents
    }


@pytest.mark.parametrize("agent", agents.NAMES)
def test_remove_takes_out_the_files_and_folders_integrate_made_and_left_empty(agent: str) -> None:
    """`--remove` left ~/.claude/commands, ~/.gemini/commands and
    ~/.config/opencode/plugins behind, empty."""
    home = Path(os.environ["HOME"])
    before = entries(home)
    flags = ("--mcp", "--trust") if agent == "codex" else ("--mcp",)
    assert ken("integrate", agent, *flags).exit_code == 0
    assert entries(home) != before
    assert ken("integrate", agent, "--remove", "--mcp").exit_code == 0
    assert entries(home) == before


def test_remove_keeps_a_folder_that_was_there_before_or_holds_the_persons_file() -> None:
    home = Path(os.environ["HOME"])
    (home / ".gemini" / "commands").mkdir(parents=True)  # there before: stays, empty
    claude_commands = home / ".claude" / "commands"
    assert ken("integrate", "gemini").exit_code == 0
    assert ken("integrate", "claude").exit_code == 0
    (claude_commands / "deploy.md").write_text("my own command\n", encoding="utf-8")
    assert ken("integrate", "gemini", "--remove").exit_code == 0
    assert ken("integrate", "claude", "--remove").exit_code == 0
    assert (home / ".gemini" / "commands").is_dir()
    assert not list((home / ".gemini" / "commands").iterdir())
    assert [p.name for p in claude_commands.iterdir()] == ["deploy.md"]


def test_a_file_kenning_made_gets_no_backup_of_kennings_own_output() -> None:
    """The hooks made settings.json, the MCP server's allow list then changed it: its
    backup held kenning's first output, as if it were the person's file."""
    path = settings("claude")
    assert ken("integrate", "claude", "--mcp").exit_code == 0
    assert path.exists() and backups(path) == []
    assert ken("integrate", "claude", "--remove", "--mcp").exit_code == 0
    assert backups(path) == [] and not path.exists()


def test_a_file_kenning_made_that_another_program_wrote_since_is_backed_up_and_kept() -> None:
    path = settings("claude")
    assert ken("integrate", "claude").exit_code == 0
    data = read(path)
    data["model"] = "opus"  # Claude Code (or the person) writes into it
    write(path, data)
    written = path.read_bytes()
    assert ken("integrate", "claude", "--mcp").exit_code == 0
    assert [p.read_bytes() for p in backups(path)] == [written]
    assert ken("integrate", "claude", "--remove", "--mcp").exit_code == 0
    assert read(path) == {"model": "opus"}


def test_registering_the_mcp_server_without_the_sdk_says_which_pip_command_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Registered anyway (a later pip install makes it work), with a note naming the
    command doctor's fix gives, not silently until `ken doctor` says it."""
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` fails here
    result = ken("integrate", "claude", "--mcp")
    assert result.exit_code == 0, result.output
    assert integrate.installed_mcp("claude")
    notes = [line for line in result.stderr.splitlines() if "MCP SDK" in line]
    assert len(notes) == 1, result.stderr
    assert notes[0].startswith("  note: ")
    assert integrate.mcp_install_hint() in notes[0]


def test_registering_the_mcp_server_with_the_sdk_says_nothing_of_it() -> None:
    result = ken("integrate", "claude", "--mcp")
    assert result.exit_code == 0, result.output
    assert "MCP SDK" not in result.stderr
