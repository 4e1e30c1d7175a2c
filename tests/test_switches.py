"""The per-repo switches as config.toml writes them, and what config.toml holds that
kenning would not read (reported, never silently ignored)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ken
from helpers import add
from kenning import config, deliver
from kenning.where import detect

REPO = "github.com/acme/shop"


def write_config(text: str) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_repo_switches_are_read_from_memory_repos_and_the_old_table_still_works():
    both = config.Config(
        {
            "memory": {"repos": {"GitHub.com/Acme/Shop": {"capture": False}}},
            "repos": {
                "git@github.com:acme/shop.git": {"capture": True, "deliver": False},
                "/home/Me/Local Repo": {"deliver": False},
            },
        }
    )
    assert both.repo_capture(REPO) is False  # the new table wins
    assert both.repo_deliver(REPO) is False  # the old one fills in
    assert both.repo_deliver("/home/Me/Local Repo") is False
    assert both.repo_deliver("github.com/acme/other") is True
    assert deliver.blocked_repos(both) == {REPO, "/home/Me/Local Repo"}


@pytest.mark.parametrize(
    ("written", "on"),
    [
        *[(v, False) for v in ("false", '"false"', '"No"', '" off "', '"0"', "0")],
        *[(v, True) for v in ("true", '"true"', '"yes"', '"ON"', '"1"', "1")],
        # neither: the private side
        *[(v, False) for v in ('"maybe"', "2", "0.0", '""', "[]", "{ on = true }")],
    ],
)
def test_a_switch_is_read_as_the_person_meant_it_and_else_off(written, on):
    path = write_config(f'[repos."{REPO}"]\ncapture = {written}\ndeliver = {written}\n')
    read = config.Config()
    assert (read.repo_capture(REPO), read.repo_deliver(REPO)) == (on, on)
    assert (REPO in deliver.blocked_repos(read)) is not on
    if written not in ("true", "false"):  # reported all the same
        problems = config.file_problems(config.read_file(path))
        reported = [p for p in problems if p.key.endswith(".capture")]
        assert f"read as {'on' if on else 'off'}" in reported[0].detail


@pytest.mark.parametrize("written", ["false", '"off"', "0"])
def test_ken_pack_honours_deliver_false_in_the_memory_repos_table(git_repo, monkeypatch, written):
    write_config(f'[memory.repos."{REPO}"]\ndeliver = {written}\n')
    add("Shop deploys freeze on Fridays", scope=f"repo:{REPO}")
    add("Answer in British English", scope="global")
    monkeypatch.chdir(git_repo)
    pack = ken("pack").stdout
    assert "British English" in pack and "Fridays" not in pack


def test_capture_false_in_the_memory_repos_table_stops_capture(git_repo):
    write_config(f'[memory.repos."{REPO}"]\ncapture = false\n')
    assert not deliver.may_capture(config.Config(), detect(git_repo, env={}))


def test_doctor_and_config_list_report_unknown_keys_and_the_old_switch_table():
    path = write_config(
        "[memory]\nbudgett = 900\n\n"
        '[memory.repos."github.com/acme/shop"]\ncapture = "no"\ndelivr = false\n\n'
        '[repos."github.com/acme/old"]\ndeliver = false\n\n'
        "[recal]\nlimit = 3\n"
    )
    listed = ken("config", "list")
    assert listed.exit_code == 0
    for expected in (
        f"memory.budgett in {path} is not a kenning setting",
        'memory.repos."github.com/acme/shop".capture',
        'memory.repos."github.com/acme/shop".delivr in',
        "recal in",
        'rename the table to [memory.repos."github.com/acme/old"]',
    ):
        assert expected in listed.stderr, expected
    doctor = ken("doctor", "--json")
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["config"]}
    assert not checks["config memory.budgett"]["ok"]
    assert not checks["config recal"]["ok"]
    moved = checks['config [repos."github.com/acme/old"]']
    assert moved["ok"] and "memory.repos" in moved["fix"]
    text = ken("doctor").stdout
    assert "config:" in text and 'rename the table to [memory.repos."github.com/acme/old"]' in text


def test_doctor_and_config_list_report_agent_settings_handoff_would_refuse():
    write_config(
        '[agents.codex]\nresume = "resume {id}"\nmodel_flag = "--model {model}"\n\n'
        '[agents.gemini]\ncommand = ""\n'
    )
    listed = ken("config", "list")
    assert listed.exit_code == 0
    assert (
        "note: agents.codex.resume in " in listed.stderr
        and 'must be a list of the arguments that resume a session, with {id} (["resume", '
        '"{id}"]), or [] for none, not "resume {id}"; write resume = ["resume", "{id}"]'
        in listed.stderr
    )
    assert "agents.gemini.command in" in listed.stderr
    # the fix names that agent's own command: it said `command = "codex"` for every one
    assert 'write command = "gemini"' in listed.stderr
    assert "model_flag" not in listed.stderr
    doctor = ken("doctor", "--json")
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["config"]}
    assert not checks["config agents.codex.resume"]["ok"]
    assert not checks["config agents.gemini.command"]["ok"]
    assert not any("every table and key is read" in c["detail"] for c in checks.values())


def test_a_config_kenning_reads_whole_has_nothing_to_report(git_repo):
    write_config(
        "[memory]\nbudget = 900\n\n"
        f'[memory.repos."{REPO}"]\ncapture = true\ndeliver = false\n\n'
        '[workspaces]\nacme = ["~/src/acme"]\n\n'
        '[agents.codex]\ncommand = "codex"\n\n'
        "[recall]\nlimit = 3\n"
    )
    assert config.file_problems(config.read_file()) == []
    assert ken("config", "list").stderr == ""


def test_a_relative_workspace_folder_matches_nothing_and_doctor_and_config_list_say_so(
    tmp_path, monkeypatch
):
    home = Path(os.environ["HOME"])
    (home / "src" / "acme").mkdir(parents=True)
    path = write_config(
        '[workspaces]\nacme = "src/acme"\nhere = "."\nmixed = ["~/src/other", "./tools"]\n'
    )
    for cwd in (home, home / "src" / "acme", tmp_path):  # `.` held every folder
        monkeypatch.chdir(cwd)
        assert json.loads(ken("where", "--json").stdout)["workspace"] is None, cwd
    listed = ken("config", "list").stderr
    assert (
        f"workspaces.acme in {path} holds 'src/acme', not a full path: it matches no folder; "
        'write it from / or from your home: "~/src/acme"'
    ) in listed
    assert "workspaces.mixed" in listed and "'./tools'" in listed and "'~/src" not in listed
    doctor = ken("doctor", "--json")
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["config"]}
    for name in ("acme", "here", "mixed"):
        assert not checks[f"config workspaces.{name}"]["ok"], name
    assert (
        checks["config workspaces.acme"]["fix"] == 'write it from / or from your home: "~/src/acme"'
    )
