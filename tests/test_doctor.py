"""`ken doctor` tells the truth: each way an agent would get no memory, or another
store's, fails with the line that fixes it; `ken mcp` and `ken integrate --mcp` say what
they depend on."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import tomllib
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken, ken_proc
from helpers import add, one_line_error, run_python
from kenning import config, integrate
from kenning.agents.codex import codex_home
from kenning.store import migrations


def doctor(env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    result = ken("doctor", "--json", env=env)
    text = ken("doctor", env=env).stdout
    return result.exit_code, json.loads(result.stdout), text


def named(checks: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(c for c in checks if c["name"] == name)


def write_config(text: str) -> Path:
    path = config.config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_config_that_does_not_parse_fails_with_a_fix_line() -> None:
    path = write_config("[recall\nlimit = 3\n")
    code, report, text = doctor()
    assert code == 1 and report["ok"] is False
    check = named(report["config"], "config")
    assert check["ok"] is False and "is not valid TOML" in check["detail"]
    assert check["fix"] == f"fix or remove {path}"
    assert f"      fix: fix or remove {path}" in text


def test_a_setting_out_of_its_range_fails_with_a_fix_line() -> None:
    """It stops every command and the prompt hook, which then tells the agent nothing;
    doctor said the config was fine."""
    write_config("[recall]\nhalf_life_days = 0.0\n")
    code, report, _ = doctor()
    assert code == 1
    check = named(report["config"], "config")
    assert check["ok"] is False and "recall.half_life_days must be from 0.1" in check["detail"]
    assert check["fix"] == "ken config set recall.half_life_days 30.0"


def test_agent_settings_it_cannot_read_are_bad_not_not_installed() -> None:
    """A broken settings file was "ok: not installed", with a fix line that then failed
    on the same file; nobody can tell what it holds, and doctor says so."""
    hooks = integrate.settings_path("claude")
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hooks.write_text("{ broken", encoding="utf-8")
    mcp = codex_home(os.environ) / "config.toml"
    mcp.parent.mkdir(parents=True, exist_ok=True)
    mcp.write_text("[mcp_servers\n", encoding="utf-8")
    code, report, text = doctor()
    claude = named(report["agents"]["claude"], "claude hooks")
    assert code == 1 and claude["ok"] is False and "not valid JSON" in claude["detail"]
    assert claude["fix"] == f"fix {hooks} by hand"
    codex = named(report["agents"]["codex"], "codex mcp")
    assert codex["ok"] is False and "not valid TOML" in codex["detail"]
    assert "BAD claude hooks" in text


def test_memory_turned_off_fails_with_how_to_turn_it_on() -> None:
    code, report, _ = doctor()
    assert code == 0 and named(report["config"], "memory")["ok"] is True

    write_config("[memory]\nenabled = false\n")
    code, report, text = doctor()
    memory = named(report["config"], "memory")
    assert code == 1 and memory["ok"] is False
    assert memory["detail"].startswith("turned off (file)")
    assert memory["fix"] == "ken config set memory.enabled true"
    assert "BAD memory: turned off" in text

    write_config("")
    code, report, _ = doctor(env={"KEN_ENABLED": "0"})
    memory = named(report["config"], "memory")
    assert code == 1 and memory["fix"] == "unset KEN_ENABLED"


def python_without_mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A real Python environment in which `import mcp` fails (no site-packages of ours),
    and `import kenning` works (this kenning's folder on PYTHONPATH, which doctor passes
    on when it asks the environment)."""
    with_kenning(monkeypatch)
    folder = tmp_path / "bare-venv"
    venv.create(folder, with_pip=False)
    python = str(folder / "bin" / "python")
    probe = subprocess.run([python, "-c", "import mcp"], capture_output=True, timeout=60)
    assert probe.returncode == 1 and b"No module named 'mcp'" in probe.stderr
    return python


def with_kenning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python started from here imports this kenning (and no `mcp` with it)."""
    monkeypatch.setenv("PYTHONPATH", integrate.kenning_root())


def fake_ken(tmp_path: Path, python: str) -> str:
    """A `ken` console script that runs with `python`."""
    script = tmp_path / "bin" / "ken"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!{python}\nimport sys\nsys.exit(0)\n")
    script.chmod(0o755)
    return str(script)


def test_an_mcp_server_whose_python_lacks_the_sdk_fails_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = python_without_mcp(tmp_path, monkeypatch)
    ken_script = fake_ken(tmp_path, python)
    integrate.install_mcp("codex", ken=ken_script)
    code, report, text = doctor()
    sdk = named(report["agents"]["codex"], "codex mcp sdk")
    assert code == 1 and sdk["ok"] is False
    assert sdk["fix"] == f"{python} -m pip install 'mcp>=2.3,<3'"
    assert f"fix: {python} -m pip install" in text

    integrate.install_mcp("codex", ken=str(KEN_BIN))  # this kenning has the SDK
    code, report, _ = doctor()
    assert code == 0, report
    assert "codex mcp sdk" not in {c["name"] for c in report["agents"]["codex"]}


def test_an_mcp_server_whose_python_has_no_kenning_says_so_not_only_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A venv with neither: doctor said only that the SDK was missing, with its install
    line, which cannot make the server start."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    folder = tmp_path / "empty-venv"
    venv.create(folder, with_pip=False)
    python = str(folder / "bin" / "python")
    integrate.install_mcp("codex", ken=fake_ken(tmp_path, python))
    code, report, text = doctor()
    missing = named(report["agents"]["codex"], "codex mcp kenning")
    assert code == 1 and missing["ok"] is False
    assert missing["detail"].startswith(f"kenning is not installed for {python}, the Python ")
    assert missing["fix"] == f"{integrate.ken_command()} integrate codex --mcp"
    assert f"fix: {integrate.ken_command()} integrate codex --mcp" in text
    assert "codex mcp sdk" not in {c["name"] for c in report["agents"]["codex"]}


def linked_venv(folder: Path, with_mcp: bool = False) -> str:
    """A venv as `python -m venv --without-pip` makes one on Linux: its python a link to
    the base Python this test's venv links to as well; `with_mcp` puts a stand-in `mcp`
    package in its own site-packages. Its Python, as a script's #! line names it."""
    venv.create(folder, with_pip=False, symlinks=True)
    python = folder / "bin" / "python"
    assert python.resolve() == Path(sys.executable).resolve()  # one base Python for both
    if with_mcp:
        site = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        (Path(site) / "mcp").mkdir()
        (Path(site) / "mcp" / "__init__.py").write_text("")
    return str(python)


def test_the_mcp_sdk_is_asked_of_the_registered_venv_not_its_base_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two venvs on one base Python are two environments: the server's venv lacking the
    SDK fails, with the install line for that venv, though this one has it; and the
    other way round passes."""
    with_kenning(monkeypatch)
    bare = linked_venv(tmp_path / "server-venv")
    integrate.install_mcp("codex", ken=fake_ken(tmp_path / "a", bare))
    code, report, text = doctor()
    sdk = named(report["agents"]["codex"], "codex mcp sdk")
    assert code == 1 and sdk["ok"] is False
    assert sdk["detail"].startswith(f"the MCP SDK is not installed for {bare}, the Python ")
    assert sdk["fix"] == f"{bare} -m pip install 'mcp>=2.3,<3'"
    assert f"fix: {bare} -m pip install" in text

    equipped = linked_venv(tmp_path / "equipped-venv", with_mcp=True)
    integrate.install_mcp("codex", ken=fake_ken(tmp_path / "b", equipped))
    monkeypatch.setitem(sys.modules, "mcp", None)  # doctor runs where `import mcp` fails
    code, report, _ = doctor()
    assert code == 0, report
    assert "codex mcp sdk" not in {c["name"] for c in report["agents"]["codex"]}


def test_an_mcp_server_whose_command_is_gone_fails(tmp_path: Path) -> None:
    integrate.install_mcp("gemini", ken=str(tmp_path / "old-venv" / "bin" / "ken"))
    code, report, _ = doctor()
    check = named(report["agents"]["gemini"], "gemini mcp")
    assert code == 1 and check["ok"] is False
    assert check["fix"] == "run `ken integrate gemini --mcp` again"


def test_an_mcp_server_on_another_store_fails_and_says_which(tmp_path: Path) -> None:
    other = tmp_path / "scratch" / "memory.db"
    result = ken("integrate", "codex", "--mcp", env={"KEN_DB": str(other)})
    assert result.exit_code == 0, result.output
    registered = tomllib.loads((codex_home(os.environ) / "config.toml").read_text())
    assert registered["mcp_servers"]["ken"]["env"]["KEN_DB"] == str(other)

    code, report, _ = doctor()
    check = named(report["agents"]["codex"], "codex mcp store")
    assert code == 1 and check["ok"] is False
    assert check["detail"] == (
        f"the MCP server opens {other} (KEN_DB={other}, XDG_CONFIG_HOME="
        f"{os.environ['XDG_CONFIG_HOME']}, XDG_DATA_HOME={os.environ['XDG_DATA_HOME']}, "
        f"XDG_STATE_HOME={os.environ['XDG_STATE_HOME']}), not this store, "
        f"{config.db_path()}"
    )
    assert check["fix"].startswith("run `ken integrate codex --mcp` in the environment")
    assert doctor(env={"KEN_DB": str(other)})[0] == 0  # from that store's shell: all fine


def test_integrate_mcp_says_it_bakes_the_store_in(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch.db"
    result = ken("integrate", "gemini", "--mcp", env={"KEN_DB": str(scratch)})
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "bakes in" in line]
    assert len(notes) == 1
    assert f"KEN_DB={scratch}" in notes[0]
    assert f"always opens the store {scratch}" in notes[0]
    assert "that is a temporary folder" in notes[0]
    assert "run `ken integrate gemini --mcp` again without them" in notes[0]


def test_integrate_mcp_refuses_a_relative_ken_db_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`KEN_DB=mem.db ken integrate claude --mcp` wrote `"KEN_DB": "mem.db"` into
    ~/.claude.json and said the server "always opens the store <here>/mem.db", while the
    server opens mem.db in whatever folder Claude starts it in."""
    monkeypatch.chdir(tmp_path)
    home = Path(os.environ["HOME"])
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    result = ken("integrate", "claude", "--mcp", env={"KEN_DB": "mem.db"})
    assert result.exit_code == 1
    assert one_line_error(result.stderr).startswith(
        "ken: KEN_DB=mem.db is a relative path, which names another store in each folder"
    )
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before
    assert not (home / ".claude.json").exists()


def test_doctor_names_a_relative_ken_db_written_into_a_registration(tmp_path: Path) -> None:
    """A registration an older kenning wrote with a relative KEN_DB: doctor says so for
    that agent, rather than stopping on it."""
    other = tmp_path / "other.db"
    assert ken("integrate", "codex", "--mcp", env={"KEN_DB": str(other)}).exit_code == 0
    config_toml = codex_home(os.environ) / "config.toml"
    text = config_toml.read_text(encoding="utf-8")
    assert str(other) in text
    config_toml.write_text(text.replace(str(other), "mem.db"), encoding="utf-8")
    code, report, _ = doctor()
    check = named(report["agents"]["codex"], "codex mcp store")
    assert code == 1 and check["ok"] is False
    assert check["detail"].startswith("its registration: KEN_DB=mem.db is a relative path")
    assert check["fix"] == "run `ken integrate codex --mcp` with KEN_DB a full path, or unset"


@pytest.mark.parametrize("missing", ["mcp", "mcp_types", "anyio", "pydantic"])
def test_ken_mcp_without_the_sdk_prints_one_line_with_the_install_command(missing: str) -> None:
    # A plain `pip install kenning` has neither the SDK nor what it needs (anyio first).
    done = run_python(
        f"import sys; sys.modules[{missing!r}] = None\n"
        "from kenning.entry import main\nmain(['mcp'])\n"
    )
    assert done.returncode == 1
    line = one_line_error(done.stderr)
    assert line == (
        "ken: `ken mcp` needs the MCP SDK, which is not installed for this kenning "
        f"(no module {missing!r}): {sys.executable} -m pip install 'mcp>=2.3,<3'"
    )
    assert done.stdout == ""


def test_ken_mcp_with_a_config_that_does_not_parse_says_so_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config" / "kenning" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[memory]\nenabled = true\n[memory]\n")
    done = run_python(
        "from kenning.entry import main\nmain(['mcp'])\n",
        env={"XDG_CONFIG_HOME": str(tmp_path / "config")},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    line = one_line_error(done.stderr)
    assert line.startswith("ken: `ken mcp` cannot start: ") and "config.toml" in line
    assert done.stdout == ""


def test_the_install_hint_asks_for_the_mcp_sdk_the_package_declares() -> None:
    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert pyproject["project"]["optional-dependencies"]["mcp"] == [integrate.MCP_REQUIREMENT]


def another_install(tmp_path: Path, long_path: bool = False) -> tuple[Path, Path]:
    """A second install of kenning, version 0.0.9, in a venv of its own (an upgrade's old
    venv left behind): its site-packages and its `ken` console script, as pip writes one
    (with a `#!/bin/sh` start when the Python's path is too long for a #! line)."""
    folder = tmp_path / "old-venv"
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    shutil.copytree(Path(integrate.kenning_root()) / "kenning", site / "kenning")
    meta = site / "kenning-0.0.9.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: kenning\nVersion: 0.0.9\n")
    start = (
        f"#!/bin/sh\n'''exec' \"{python}\" \"$0\" \"$@\"\n' '''\n" if long_path else f"#!{python}\n"
    )
    ken_script = folder / "bin" / "ken"
    ken_script.write_text(start + "import sys\nfrom kenning.entry import main\nsys.exit(main())\n")
    ken_script.chmod(0o755)
    return site, ken_script


@pytest.mark.parametrize("long_path", [False, True])
def test_hooks_and_an_mcp_server_of_another_install_fail_with_the_integrate_line(
    tmp_path: Path, long_path: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an upgrade into a new venv, the agents' hooks still run the old venv's
    kenning, which cannot open the store the new one migrated: every hook fails while
    their commands are all there."""
    monkeypatch.delenv("PYTHONPATH", raising=False)  # a checkout's src would come first
    site, old_ken = another_install(tmp_path, long_path)
    integrate.install("claude", ken=str(old_ken))
    integrate.install_mcp("codex", ken=str(old_ken))
    code, report, text = doctor()
    assert code == 1
    hooks = named(report["agents"]["claude"], "claude hooks kenning")
    this = os.path.realpath(integrate.kenning_root())
    assert hooks["ok"] is False
    assert hooks["detail"] == (
        f"the hooks run the kenning in {site} (version 0.0.9), not this one (in {this}): "
        "another install, whose code may not work as this one's, nor open a store this one "
        "has migrated"
    )
    assert hooks["fix"] == f"{integrate.ken_command()} integrate claude"
    assert f"fix: {integrate.ken_command()} integrate claude" in text
    mcp = named(report["agents"]["codex"], "codex mcp kenning")
    assert mcp["ok"] is False and mcp["detail"].startswith(
        f"the MCP server runs the kenning in {site}"
    )
    assert mcp["fix"] == f"{integrate.ken_command()} integrate codex --mcp"

    integrate.install("claude")  # as `ken integrate claude` run by this kenning
    integrate.install_mcp("codex", ken=str(KEN_BIN))
    code, report, _ = doctor()
    assert code == 0, report
    names = {c["name"] for checks in report["agents"].values() for c in checks}
    assert not names & {"claude hooks kenning", "codex mcp kenning"}


# --- a store or state folder doctor cannot use as it is --------------------------------

HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode = EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("SELECT 1 FROM items").fetchall()
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.timing
def test_a_store_another_process_keeps_locked_is_named_busy_in_seconds_not_damaged(
    db_path: Path,
) -> None:
    """It took a minute, then said the store "stayed locked" with the fix "restore a
    backup or point KEN_DB elsewhere": advice that would replace a healthy store. Then it
    said so as a failed check (BAD, exit 1): a busy store is not a broken one."""
    add("Deploys go through make release")
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db_path)], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            started = time.monotonic()
            result = ken("doctor", "--json", "--deep")
            took = time.monotonic() - started
            text = ken("doctor").output
        finally:
            holder.kill()
    report = json.loads(result.stdout)
    store = named(report["store"], "store")
    assert result.exit_code == 0 and report["ok"] is True
    assert store["ok"] is False and store["busy"] is True
    assert f"  busy store: {db_path} stayed locked" in text and "BAD store" not in text
    assert took < 10, took
    assert f"{db_path} stayed locked by another process" in store["detail"]
    assert f"{holder.pid} (python" in store["detail"]
    assert "restore" not in store["fix"] and "KEN_DB" not in store["fix"]
    assert store["fix"].startswith("close that program or let it finish")
    assert named(report["deep"], "self-check")["busy"] is True
    assert ken("doctor", "--json").exit_code == 0  # free again: nothing was damaged


HOLD_WRITE_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
time.sleep(120)
"""


@pytest.mark.timing
def test_a_store_another_process_keeps_exclusive_in_wal_is_named_busy_it_still_reads(
    db_path: Path,
) -> None:
    """`BEGIN EXCLUSIVE` in WAL shuts out writers, not readers: doctor read the store and
    said "ok" while every write waited and every hook kept its writes for later."""
    add("Deploys go through make release")
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITE_LOCK, str(db_path)], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            name = Path(f"/proc/{holder.pid}/comm").read_text().strip()
            started = time.monotonic()
            result = ken("doctor", "--json")
            took = time.monotonic() - started
            # The self-check needs writes: it said the search index did not match and
            # to repair it, exit 1, where nothing was damaged.
            deep = ken("doctor", "--json", "--deep")
        finally:
            holder.kill()
    report = json.loads(result.stdout)
    store = named(report["store"], "store")
    assert result.exit_code == 0 and store["ok"] is False and store["busy"] is True
    assert took < 10, took
    assert deep.exit_code == 0, deep.stdout
    [not_run] = json.loads(deep.stdout)["deep"]
    assert not_run["name"] == "self-check" and not_run["busy"] is True
    assert "ken doctor --repair" not in deep.stdout
    assert store["detail"] == (
        f"{db_path} stayed locked by another process for 2 s (it is open in {holder.pid} "
        f"({name})), it reads (integrity ok, 1 items (0 proposed)), but nothing can be "
        "written to it: hooks keep their writes for later, and a `ken` command that writes "
        "waits; a lock is not damage"
    )
    assert store["fix"].startswith("close that program or let it finish")
    assert ken("doctor", "--json").exit_code == 0  # free again: nothing was damaged


def test_a_store_a_newer_kenning_wrote_is_fixed_by_upgrading_not_by_a_backup(
    db_path: Path,
) -> None:
    """The fix said "restore a backup or point KEN_DB elsewhere": a rollback of a
    healthy store, losing what the newer kenning wrote."""
    add("Deploys go through make release")
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO _migrations VALUES ('m0099_future', 'x')")
    conn.close()
    result = ken("doctor", "--json", "--deep")
    report = json.loads(result.stdout)
    for check in (named(report["store"], "store"), named(report["deep"], "self-check")):
        assert check["ok"] is False and "written by a newer kenning" in check["detail"]
        assert check["fix"].startswith("upgrade kenning to the version that wrote it")
        assert "pipx install --force ." in check["fix"]
        assert "restore" not in check["fix"] and "KEN_DB" not in check["fix"]


@contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """`path` this user cannot write: immutable (chattr +i), else, when not root (whom file
    modes do not stop), without its write bits; skips the test when neither can be had."""
    chattr = shutil.which("chattr")
    made = chattr is not None and (
        subprocess.run([chattr, "+i", str(path)], capture_output=True, check=False).returncode == 0
    )
    mode = path.stat().st_mode
    if not made:
        if os.geteuid() == 0:
            pytest.skip("root, on a file system without chattr +i: nothing stops root writing")
        path.chmod(mode & ~0o222)
    try:
        yield
    finally:
        if made:
            assert chattr is not None
            subprocess.run([chattr, "-i", str(path)], check=True)
        else:
            path.chmod(mode)


def test_a_store_that_cannot_be_written_is_bad_with_a_fix_line(db_path: Path) -> None:
    """It said "ok store ... integrity ok" while `ken add` failed "the store ... is
    read-only"."""
    add("Deploys go through make release")
    with unwritable(db_path):
        assert ken("add", "Must not land").exit_code == 1
        code, report, text = doctor()
    check = named(report["store"], "store writable")
    assert code == 1 and check["ok"] is False
    assert f"{db_path}, the store file, cannot be written" in check["detail"]
    assert check["fix"] in (
        f"chattr -i {db_path}, or point KEN_DB at a store you can write",
        f"chmod u+w {db_path}",
    )
    assert "BAD store writable" in text


def test_a_state_folder_that_cannot_be_written_is_bad_with_a_fix_line() -> None:
    """Hook errors were lost and no hook server could start, while doctor said "recent
    hook log: (empty)" and "hook server: not running (the next hook starts it)"."""
    folder = config.state_dir()
    folder.mkdir(parents=True)
    with unwritable(folder):
        code, report, text = doctor()
    check = named(report["store"], "state folder")
    assert code == 1 and check["ok"] is False
    assert f"{folder} cannot be written" in check["detail"]
    assert "hook errors are not logged" in check["detail"]
    assert check["fix"].startswith((f"chattr -i {folder}", f"chmod u+w {folder}"))
    assert "the next hook starts it" not in text


def test_each_config_value_out_of_range_and_each_unknown_key_is_named() -> None:
    """Only the first was named: fixing one to find the next, a round trip each."""
    path = write_config("nope = 1\n[memory]\nbudget = 5\n[recall]\nmax_tokens = -3\n")
    code, report, text = doctor()
    bad = {c["detail"]: c["fix"] for c in report["config"] if not c["ok"]}
    assert code == 1
    assert bad == {
        f"memory.budget must be from 100 to 100,000, not 5 (in {path})": (
            "ken config set memory.budget 1500"
        ),
        f"recall.max_tokens must be from 0 to 100,000, not -3 (in {path})": (
            "ken config set recall.max_tokens 800"
        ),
        "is not a kenning setting; it is ignored": (
            "remove it or fix its name (`ken config list` shows every setting)"
        ),
    }
    assert named(report["config"], "memory")["ok"] is True


def test_a_memory_switch_that_cannot_be_read_is_not_said_to_be_on() -> None:
    write_config('[memory]\nenabled = "maybe"\n')
    _, report, _ = doctor()
    memory = named(report["config"], "memory")
    assert memory["ok"] is False and memory["detail"].startswith("cannot tell: ")


@pytest.mark.parametrize(
    ("hooks_json", "said"),
    [
        ('{"SessionStart": "echo hi"}', "'hooks.SessionStart' is a string, not a list"),
        # A handler whose command is a number, or missing, was "not installed" too.
        (
            '{"SessionStart": [{"hooks": [{"type": "command", "command": 5}]}]}',
            "'hooks.SessionStart[0].hooks[0]' has a command that is a number, not text",
        ),
        (
            '{"Stop": [{"hooks": [{"type": "command"}]}]}',
            "'hooks.Stop[0].hooks[0]' has no command",
        ),
    ],
)
def test_agent_settings_whose_hooks_are_malformed_are_bad_and_say_where(
    hooks_json: str, said: str
) -> None:
    """A string where the list of SessionStart's hooks belongs was "ok claude hooks: not
    installed", with the fix `ken integrate claude`, which refuses that file."""
    hooks = integrate.settings_path("claude")
    hooks.parent.mkdir(parents=True, exist_ok=True)
    hooks.write_text('{"hooks": ' + hooks_json + "}", encoding="utf-8")
    code, report, _ = doctor()
    claude = named(report["agents"]["claude"], "claude hooks")
    assert code == 1 and claude["ok"] is False
    assert claude["detail"].startswith(f"{hooks}: its hooks are malformed: ")
    assert said in claude["detail"]
    assert claude["fix"] == f"fix {hooks} by hand"


def test_a_state_folder_that_cannot_be_made_is_a_bad_line_and_no_command_breaks(
    tmp_path: Path,
) -> None:
    """A file where the state folder (hook log, spool, kept edits, hook socket) should be
    made every command end in a traceback from the spool's replay."""
    blocker = tmp_path / "afile"
    blocker.write_text("")
    env = {"XDG_STATE_HOME": str(blocker)}

    done = ken_proc("doctor", env={**env, "KEN_HOOK_SERVER": "1"})  # it looks for a socket
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        f"BAD state folder: {blocker}/kenning cannot be made or written: {blocker} is not a "
        "folder;" in done.stdout
    )
    fix = f"fix: set XDG_STATE_HOME to a folder of your own, or move {blocker} out of the way"
    assert fix in done.stdout
    for args in (("add", "Ship on Fridays"), ("list",), ("search", "ship"), ("where",)):
        done = ken_proc(*args, env=env)
        assert (done.returncode, "Traceback" in done.stderr) == (0, False), (args, done.stderr)
    # An edit refused for its header cannot be kept there: the error says so, in one line.
    script = tmp_path / "editor.py"
    script.write_text(
        "import pathlib, sys\npath = pathlib.Path(sys.argv[1])\n"
        "path.write_text(path.read_text().replace('kind: note', 'kind: bogus'))\n"
    )
    item = ken_proc("add", "Edit me", env=env).stdout.strip()
    edited = ken_proc("edit", item, env={**env, "KEN_EDITOR": f"{sys.executable} {script}"})
    assert edited.returncode == 1
    assert one_line_error(edited.stderr).endswith(
        f"your edit could not be kept: cannot make {blocker}/kenning/edits (Not a directory): "
        "set XDG_STATE_HOME to a folder of your own"
    )
    # A project's sync locks there: refused before the project is added, in one line.
    (tmp_path / "notes").mkdir()
    added = ken_proc("project", "add", "shop", str(tmp_path / "notes"), env=env)
    assert added.returncode == 1
    assert one_line_error(added.stderr) == (
        f"ken: cannot make the state folder {blocker}/kenning (Not a directory): "
        "set XDG_STATE_HOME to a folder of your own"
    )
    assert json.loads(ken_proc("project", "list", "--json", env=env).stdout) == []
    status = ken_proc("hook-server", "status", env=env)
    assert (status.returncode, "Traceback" in status.stderr) == (0, False), status.stderr
    prompt = json.dumps({"session_id": "z", "cwd": str(tmp_path), "prompt": "ship it"})
    hook = ken_proc("hook", "UserPromptSubmit", "--agent", "claude", input=prompt, env=env)
    assert (hook.returncode, hook.stderr) == (0, "")


# --- the repo here ----------------------------------------------------------------------------

TOKEN = "ghp_" + "Ab3dEf6hIj9kLm2nOp5rSt8vWx1zYb4dEf7h"  # a made-up GitHub token


@pytest.mark.parametrize(
    ("url", "ok", "said"),
    [
        (
            f"https://github.com/acme/{TOKEN}.git",
            False,
            "the origin of this repo holds a secret (github_token), so it is not used as the "
            "repo key: memories here are kept under the repo's path, {path}, which no other "
            "clone shares",
        ),
        (
            f"https://dev:{TOKEN}@github.com/acme/shop.git",
            True,
            "the origin's URL holds a secret (github_token); the repo key "
            "(github.com/acme/shop) leaves it out, but git keeps it in plain text in its config",
        ),
    ],
)
def test_an_origin_holding_a_secret_is_named_with_its_fix_and_the_secret_is_never_shown(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, url: str, ok: bool, said: str
) -> None:
    """Doctor said nothing of it: memories went under the repo's path (or the token sat
    in the repo's git config) while every check was ok."""
    subprocess.run(["git", "remote", "set-url", "origin", url], cwd=git_repo, check=True)
    monkeypatch.chdir(git_repo)
    code, report, text = doctor()
    origin = named(report["here"], "repo origin")
    assert origin["ok"] is ok and code == (0 if ok else 1)
    assert origin["detail"] == said.format(path=git_repo.resolve())
    assert origin["fix"] == "git remote set-url origin <url without the credential>"
    assert "fix: git remote set-url origin <url without the credential>" in text
    assert TOKEN not in text and TOKEN not in json.dumps(report)


def test_a_git_file_kenning_refused_to_read_is_named_with_why(
    git_repo: Path, tmp_path: Path
) -> None:
    """A FIFO included from .git/config was taken as missing, and doctor said nothing:
    nothing told a person why the repo key was not what its config says."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with (git_repo / ".git" / "config").open("a") as file:
        file.write(f"[include]\n\tpath = {fifo}\n")
    done = ken_proc("doctor", "--json", cwd=git_repo, timeout=30)
    refused = named(json.loads(done.stdout)["here"], "file not read")
    assert refused["ok"] is False and done.returncode == 1
    assert refused["detail"] == (
        f"{fifo} was not read: it is not a regular file (a FIFO or a device); "
        "kenning took it as missing"
    )
    assert refused["fix"] == (
        f"make {fifo} a regular file of a usual size, or remove it: until then kenning "
        "reads this repo as if it were not there"
    )
    text = ken_proc("doctor", cwd=git_repo, timeout=30).stdout
    lines = [line for line in text.splitlines() if str(fifo) in line]
    assert lines[0] == f"  BAD file not read: {refused['detail']}"


def test_an_origin_without_a_secret_says_nothing_of_it(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(git_repo)
    _, report, _ = doctor()
    assert not any(c["name"] == "repo origin" for c in report["here"])


def test_hooks_of_an_install_older_than_the_store_fail_saying_it_refuses_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old venv's kenning lacks a migration this one applied: its hooks do not only
    "may not" work, they fail on every event, and say so only in the hook log."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    site, old_ken = another_install(tmp_path)
    listed = site / "kenning" / "store" / "migrations.py"
    newest = migrations.MIGRATIONS[-1].__name__
    text = listed.read_text()
    assert f"    {newest},\n)" in text
    listed.write_text(text.replace(f"    {newest},\n)", ")"))  # an older kenning's list
    integrate.install("claude", ken=str(old_ken))
    ken("add", "The store exists")
    code, report, text = doctor()
    assert code == 1
    hooks = named(report["agents"]["claude"], "claude hooks kenning")
    assert hooks["ok"] is False
    assert hooks["detail"].endswith(
        f"; that kenning is older than the store (it lacks migration {newest}), so it refuses "
        "the store: every hook it runs fails, and says so only in the hook log (`this store "
        "was written by a newer kenning`)"
    )
    assert hooks["fix"] == f"{integrate.ken_command()} integrate claude"
    listed.write_text(text)  # the same schema as the store's: the plain line only
    _, report, _ = doctor()
    assert (
        "older than the store"
        not in named(report["agents"]["claude"], "claude hooks kenning")["detail"]
    )


def test_with_no_config_file_doctor_says_the_defaults_hold_not_that_it_read_one() -> None:
    """It said "config.toml: every table and key is read" of a file that was not there."""
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    assert not path.exists()
    code, report, _ = doctor()
    [check] = [c for c in report["config"] if c["name"] == "config"]
    assert check["ok"] and check["detail"].startswith(f"no {path}: every setting is its default")
