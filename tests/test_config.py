"""Settings: `ken config set` edits config.toml without losing what a person wrote there,
commands are arrays, and the summarizer's settings read as DESIGN shows them."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from conftest import ken, ken_proc
from helpers import one_line_error
from kenning import config
from kenning.config import Config
from kenning.errors import InvalidInput

HAND_WRITTEN = """\
# kenning settings, kept by hand
workspace = "acme"  # the team's workspace

[recall]   # per-prompt recall
limit = 3  # three is plenty
min_score = 0.6

# Summaries: off until the model is set up.
[memory.summarize]
enabled = false
"""


def config_file() -> Path:
    return config.config_path()


def write(text: str) -> Path:
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_config_set_keeps_comments_order_and_layout() -> None:
    path = write(HAND_WRITTEN)
    assert ken("config", "set", "recall.limit", "4").exit_code == 0
    assert ken("config", "set", "memory.summarize.enabled", "on").exit_code == 0
    assert path.read_text(encoding="utf-8") == HAND_WRITTEN.replace(
        "limit = 3  # three", "limit = 4  # three"
    ).replace("enabled = false", "enabled = true")


def test_a_table_config_set_adds_between_two_keeps_the_blank_line_before_the_next() -> None:
    """A new table set in the middle of the file ran into the next one's header."""
    path = write("# mine\n[memory]\nenabled = true  # on\n\n[recall]\nlimit = 5\n")
    assert ken("config", "set", "memory.summarize.enabled", "true").exit_code == 0
    assert ken("config", "set", "hooks.idle_close_hours", "5").exit_code == 0
    assert path.read_text(encoding="utf-8") == (
        "# mine\n[memory]\nenabled = true  # on\n\n[memory.summarize]\nenabled = true\n\n"
        "[recall]\nlimit = 5\n\n[hooks]\nidle_close_hours = 5.0\n"
    )


def test_a_file_a_windows_editor_wrote_with_a_bom_and_crlf_is_read_and_kept_so() -> None:
    """A BOM first failed every command ("not valid TOML ... line 1, column 1") and gave
    every hook nothing; `ken config set` rewrote CRLF line endings as LF."""
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    windows = "\ufeff" + HAND_WRITTEN.replace("\n", "\r\n")
    path.write_bytes(windows.encode("utf-8"))
    got = ken("config", "get", "recall.limit")
    assert (got.exit_code, got.output.strip()) == (0, "3")
    assert Config().recall_limit == 3
    assert ken("config", "set", "recall.limit", "4").exit_code == 0
    assert ken("config", "set", "editor", "nano").exit_code == 0
    text = path.read_bytes().decode("utf-8")
    assert text.startswith("\ufeff# kenning settings")
    assert "limit = 4  # three is plenty\r\n" in text
    assert "\n" not in text.replace("\r\n", "")  # every line ends as the file's did
    assert tomllib.loads(text.removeprefix("\ufeff"))["editor"] == "nano"


def test_config_set_adds_a_new_key_to_its_table_and_keeps_the_rest() -> None:
    path = write(HAND_WRITTEN)
    assert ken("config", "set", "memory.summarize.timeout_secs", "60").exit_code == 0
    assert ken("config", "set", "editor", "nano").exit_code == 0
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# kenning settings, kept by hand\n")
    assert "limit = 3  # three is plenty" in text
    assert "# Summaries: off until the model is set up." in text
    data = tomllib.loads(text)
    assert data["memory"]["summarize"] == {"enabled": False, "timeout_secs": 60}
    assert data["editor"] == "nano" and data["workspace"] == "acme"


def test_config_set_in_a_new_file_writes_a_nested_table_header_once() -> None:
    assert ken("config", "set", "memory.summarize.command", "claude -p").exit_code == 0
    assert config_file().read_text(encoding="utf-8") == (
        '[memory.summarize]\ncommand = ["claude", "-p"]\n'
    )


def test_config_set_refuses_a_file_that_does_not_parse_and_leaves_it_alone() -> None:
    path = write("[recall\nlimit = 3\n")
    result = ken("config", "set", "recall.limit", "4")
    assert result.exit_code == 1
    assert "is not valid TOML" in one_line_error(result.stderr)
    assert path.read_text(encoding="utf-8") == "[recall\nlimit = 3\n"


def test_config_set_refuses_to_write_under_a_value_that_is_not_a_table() -> None:
    path = write('memory = "everything"\n')
    result = ken("config", "set", "memory.budget", "900")
    assert result.exit_code == 1
    assert "'memory' in" in one_line_error(result.stderr)
    assert path.read_text(encoding="utf-8") == 'memory = "everything"\n'


def test_the_summarizer_command_is_an_array_and_a_string_is_still_accepted() -> None:
    write('[memory.summarize]\ncommand = ["ollama", "run", "llama3:8b"]\n')
    assert Config().memory_summarize_command == ["ollama", "run", "llama3:8b"]
    write("[memory.summarize]\ncommand = \"claude -p --model 'claude haiku'\"\n")
    assert Config().memory_summarize_command == ["claude", "-p", "--model", "claude haiku"]
    shown = ken("config", "get", "memory.summarize.command")
    assert shown.stdout.strip() == "claude -p --model 'claude haiku'"


def test_config_set_writes_the_summarizer_command_as_an_array() -> None:
    result = ken("config", "set", "memory.summarize.command", "claude -p --model 'claude haiku'")
    assert result.exit_code == 0, result.output
    data = tomllib.loads(config_file().read_text(encoding="utf-8"))
    assert data["memory"]["summarize"]["command"] == ["claude", "-p", "--model", "claude haiku"]
    bad = ken("config", "set", "memory.summarize.command", "claude 'unclosed")
    assert bad.exit_code == 1 and "memory.summarize.command takes a command" in bad.stderr
    # Typed as the help shows it, an array: its words, not "[claude," and "-p]".
    assert ken("config", "set", "memory.summarize.command", '["claude", "-p"]').exit_code == 0
    data = tomllib.loads(config_file().read_text(encoding="utf-8"))
    assert data["memory"]["summarize"]["command"] == ["claude", "-p"]
    assert ken("config", "set", "memory.summarize.repos", '["github.com/acme/*"]').exit_code == 0
    data = tomllib.loads(config_file().read_text(encoding="utf-8"))
    assert data["memory"]["summarize"]["repos"] == ["github.com/acme/*"]
    bad = ken("config", "set", "memory.summarize.command", '["claude", 3]')
    assert bad.exit_code == 1 and "memory.summarize.command takes a command" in bad.stderr


def test_a_summarizer_command_that_is_not_text_or_an_array_is_one_clear_error() -> None:
    write("[memory.summarize]\ncommand = 3\n")
    result = ken("config", "get", "memory.summarize.command")
    assert result.exit_code == 1
    assert "memory.summarize.command in" in one_line_error(result.stderr)


def test_summarizer_defaults_send_30000_tokens_and_wait_180_seconds() -> None:
    assert Config().memory_summarize_max_input_tokens == 30_000
    assert Config().memory_summarize_timeout_secs == 180


@pytest.mark.parametrize(
    ("repo", "patterns", "expected"),
    [
        ("github.com/acme/shop", ["github.com/acme/*"], True),
        ("github.com/acme/shop", ["github.com/Acme/*"], True),
        ("github.com/acme/shop", ["github.com/other/*"], False),
        ("github.com/acme/shop", ["github.com/acme/shop"], True),
        ("github.com/acme/shop", ["github.com/acme/sho"], False),
        ("gitlab.com/acme/shop", ["*/acme/shop", "x"], True),
        ("/home/dev/My Repo", ["/home/dev/My *"], True),
        ("/home/dev/My Repo", ["/home/dev/my *"], False),
        (None, ["*"], False),
    ],
)
def test_summarize_repos_take_globs(repo: str | None, patterns: list[str], expected: bool) -> None:
    from kenning.summarize import repo_matches

    assert repo_matches(repo, patterns) is expected


def test_the_workspace_setting_puts_every_folder_in_that_workspace(tmp_path: Path) -> None:
    write(f'workspace = "acme"\n[workspaces]\nother = ["{tmp_path}"]\n')
    found = json.loads(ken("where", "--json").stdout)["scopes"]
    scopes = [s["scope"] for s in found]
    assert "workspace:acme" in scopes and "workspace:other" not in scopes
    # And `ken where` says why: the setting, not an environment variable nobody set.
    why = {s["scope"]: s["why"] for s in found}
    assert why["workspace:acme"] == "the workspace setting (ken config get workspace)"


def test_every_setting_has_one_typed_accessor_named_after_its_key() -> None:
    """Library code reads `config.recall_limit`, never a dotted string: one accessor per
    row of the table, of the row's type."""
    import typing

    config_mod = config
    hints = typing.get_type_hints(Config, vars(config_mod))
    accessors = {
        name: value for name, value in vars(Config).items() if isinstance(value, config_mod.Value)
    }
    assert sorted(a.setting.key for a in accessors.values()) == sorted(config_mod.BY_KEY)
    for name, accessor in accessors.items():
        setting = accessor.setting
        assert name == setting.key.replace(".", "_")
        (declared,) = typing.get_args(hints[name])
        if setting.type in (list, config_mod.Command):
            assert declared == list[str], name
        else:
            assert declared is setting.type, name
    assert not hasattr(Config, "get")


def test_an_accessor_reads_the_env_then_the_file_then_the_default(monkeypatch) -> None:
    assert Config().workspace == ""
    write('workspace = "shop"\n[recall]\nlimit = 3\n')
    assert (Config().workspace, Config().recall_limit) == ("shop", 3)
    monkeypatch.setenv("KEN_WORKSPACE", "billing")
    assert Config().workspace == "billing"
    assert ken("config", "get", "workspace").stdout == "billing\n"
    write("[recall]\nlimit = 99\n")
    with pytest.raises(InvalidInput, match="recall.limit must be from 0 to 50"):
        assert Config().recall_limit


def test_config_set_reads_a_negative_number_as_the_value_and_refuses_it_by_its_range() -> None:
    """`ken config set recall.limit -1` was click's "No such option '-1'", exit 2."""
    result = ken("config", "set", "recall.limit", "-1")
    assert result.exit_code == 1
    assert one_line_error(result.stderr) == "ken: recall.limit must be from 0 to 50, not -1"


def test_config_set_refuses_a_workspace_name_every_command_would_refuse() -> None:
    result = ken("config", "set", "workspace", "a\x01b")
    assert result.exit_code == 1 and "holds a control character" in result.stderr
    assert ken("where").exit_code == 0


def test_setting_deliver_to_to_nothing_says_that_no_agent_is_told() -> None:
    """`ken config set memory.deliver_to ''` wrote `[]` without a word, and from then on
    no agent got a pack or a recall."""
    result = ken("config", "set", "memory.deliver_to", "")
    assert result.exit_code == 0
    assert "no agent is told memory now" in result.stderr
    assert "no agent" not in ken("config", "set", "memory.deliver_to", "claude,codex").stderr


def test_a_repos_privacy_switches_are_set_and_read_by_config_in_any_form_of_its_name() -> None:
    """The switches DESIGN names were settable only by editing config.toml: `ken config
    set 'memory.repos."github.com/acme/payroll".deliver' false` said "unknown setting"."""
    path = write(
        HAND_WRITTEN + '\n[memory.repos."git@github.com:Acme/Payroll.git"]  # hr\ncapture = true\n'
    )
    done = ken("config", "set", 'memory.repos."github.com/acme/payroll".deliver', "false")
    assert done.exit_code == 0, done.output
    assert done.output.strip() == (
        f'[memory.repos."git@github.com:Acme/Payroll.git"] deliver = false in {path}'
    )
    assert ken("config", "set", "memory.repos.gitlab.com/acme/ops.capture", "off").exit_code == 0
    written = path.read_text(encoding="utf-8")
    assert written.startswith(HAND_WRITTEN)  # the person's file as it was, then the switches
    assert (
        '[memory.repos."git@github.com:Acme/Payroll.git"]  # hr\ncapture = true\ndeliver = false\n'
        in written
    )
    assert '[memory.repos."gitlab.com/acme/ops"]\ncapture = false\n' in written
    read = Config()
    assert read.repos_not_delivered() == {"github.com/acme/payroll"}
    assert not read.repo_capture("gitlab.com/acme/ops")
    got = ken("config", "get", "memory.repos.github.com/acme/payroll.deliver")
    assert (got.exit_code, got.output.strip()) == (0, "false")
    assert (
        ken("config", "get", "memory.repos.github.com/acme/else.deliver").output.strip() == "true"
    )
    bad = ken("config", "set", "memory.repos.gitlab.com/acme/ops.deliver", "maybe")
    assert (
        bad.exit_code != 0
        and one_line_error(bad.output) == "ken: deliver is true or false, not 'maybe'"
    )
    assert path.read_text(encoding="utf-8") == written  # nothing changed
    listed = {r["key"]: r["value"] for r in json.loads(ken("config", "list", "--json").output)}
    assert listed['memory.repos."github.com/acme/payroll".deliver'] is False
    assert listed['memory.repos."gitlab.com/acme/ops".capture'] is False
    shown = ken_proc("config", "list", "--json", env={"CLAUDECODE": "1"})
    assert "payroll" not in shown.stdout and "gitlab.com/acme/ops" not in shown.stdout
    guessed = ken_proc(
        "config", "get", "memory.repos.github.com/acme/payroll.deliver", env={"CLAUDECODE": "1"}
    )
    assert guessed.returncode == 1 and "needs a person" in guessed.stderr
    # An agent may not turn a switch back on (nor off): a person decides.
    agent = ken_proc(
        "config",
        "set",
        "memory.repos.github.com/acme/payroll.deliver",
        "true",
        env={"CLAUDECODE": "1"},
    )
    assert agent.returncode == 1 and "needs a person" in one_line_error(agent.stderr)
    assert path.read_text(encoding="utf-8") == written


def test_serve_db_is_refused_at_config_set_as_ken_serve_refuses_it() -> None:
    """`ken config set serve.db mysql://x` was written, and `ken serve` then refused it."""
    done = ken("config", "set", "serve.db", "mysql://u:pw@h/db")
    assert done.exit_code == 1
    assert one_line_error(done.stderr) == "ken: serve.db takes a postgresql:// URL, not mysql:…"
    assert not config_file().exists()
    assert ken("config", "set", "serve.db", "postgresql://ken@db/ken").exit_code == 0


def test_an_agents_shell_reads_no_repos_name_in_notes_about_the_switches() -> None:
    """`config list` left the switch rows out in an agent's shell but still printed the
    notes naming a repo (an old `[repos."..."]` table, a switch neither true nor false),
    and `ken doctor` named it too."""
    write('[repos."github.com/acme/hidden-old"]\ndeliver = "nope"\n')
    person = ken("config", "list")
    assert "hidden-old" in person.stderr  # the person is told
    for args in (["config", "list"], ["doctor"]):
        done = ken_proc(*args, env={"CLAUDECODE": "1"})
        assert "hidden-old" not in done.stdout + done.stderr, args
