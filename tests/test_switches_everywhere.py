"""The privacy switches on every face: what belongs to a repo with `deliver = false` (its
scopes, and whatever was written in it, in any scope) reaches no agent by any road, and
nothing is taken where `capture = false` or `memory.enabled = false` says no.

The repos: shop (no switch), payroll (`deliver = false`) and hr (`capture = false`). An
agent's shell is `CLAUDECODE=1`; a person's has no marker."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import test_handoff
from conftest import ken
from helpers import add, opened
from kenning import where as where_mod
from kenning.hooks import run as hook_run
from kenning.ids import short_id
from kenning.store import ItemQuery, SessionQuery
from test_handoff import codex_session, fake_agents
from test_handoff import plan_json as handoff_plan
from test_mcp import Server, drive

handoff_scene = test_handoff.scene  # the fixture: a Claude session in shop, ended

SHOP, PAYROLL, HR = "github.com/acme/shop", "github.com/acme/payroll", "github.com/acme/hr"
AGENT = {"CLAUDECODE": "1"}
SECRET = "SALARY-LEAK-TOKEN"


def write_config(text: str) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "kenning" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


SWITCHES = (
    f'[memory.repos."{PAYROLL}"]\ndeliver = false\n\n[memory.repos."{HR}"]\ncapture = false\n'
)


def make_repo(folder: Path, origin: str) -> Path:
    folder.mkdir(parents=True)
    for args in (
        ["init", "-q", "-b", "main"],
        ["remote", "add", "origin", origin],
        ["-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q"]
        + ["--allow-empty", "-m", "first"],
    ):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)
    return folder


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Path]:
    write_config(SWITCHES)
    return {
        name: make_repo(tmp_path / name, f"git@github.com:acme/{name}.git")
        for name in ("shop", "payroll", "hr")
    }


def hook(event: str, cwd: Path, session: str, **fields: Any) -> str:
    """`ken hook EVENT --agent claude` in this process, run from `cwd`: its stdout."""
    data = {"session_id": session, "cwd": str(cwd), "hook_event_name": event, **fields}
    out = io.StringIO()
    saved, here = sys.stdin, os.getcwd()
    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(data).encode()), encoding="utf-8")
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):
            assert hook_run.main([event, "--agent", "claude"]) == 0
    finally:
        sys.stdin = saved
        os.chdir(here)
    return out.getvalue()


def a_session(cwd: Path, session: str, prompt: str) -> None:
    """A whole session: start, one prompt, end (which leaves the automatic handoff)."""
    hook("SessionStart", cwd, session, source="startup")
    hook("UserPromptSubmit", cwd, session, prompt=prompt)
    hook("SessionEnd", cwd, session, reason="exit")


def handoffs() -> list[Any]:
    with opened() as store:
        return store.list_items(ItemQuery(kinds=("handoff",), statuses=()))


def in_(folder: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    monkeypatch.chdir(folder)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


# --- G1: a handoff belongs to the repo its session ran in, whatever scope it sits in ---


def test_a_handoff_left_in_a_named_workstream_of_a_private_repo_reaches_no_agent(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEN_WORKSTREAM", "payroll-q4")
    a_session(repos["payroll"], "s1", f"Raise the CFO salary {SECRET}")
    [left] = handoffs()
    assert str(left.scope) == "workstream:payroll-q4" and SECRET in left.body
    # The next session there is not told it, nor is a shop session in the same workstream.
    for folder in (repos["payroll"], repos["shop"]):
        told = hook("SessionStart", folder, f"next-{folder.name}", source="startup")
        assert SECRET not in told, folder
    in_(repos["shop"], monkeypatch)
    assert SECRET not in ken("pack").stdout
    assert SECRET not in ken("pack", "--for", "claude").stdout

    async def reads(server: Server) -> None:
        text = await server.error("memory_get", {"id": left.id})
        assert "deliver = false" in text and SECRET not in text
        for scopes in (None, ["workstream:payroll-q4"], ["workstream"]):
            args: dict[str, Any] = {"query": "CFO salary", "limit": 50}
            if scopes:
                args["scopes"] = scopes
            found = await server.ok("memory_search", args)
            assert left.id not in json.dumps(found), scopes
        assert SECRET not in (await server.ok("memory_context"))["text"]

    drive(repos["shop"], reads, extra_env={"KEN_WORKSTREAM": "payroll-q4"})
    drive(repos["payroll"], reads, extra_env={"KEN_WORKSTREAM": "payroll-q4"})


def test_a_handoff_left_in_a_project_on_a_detached_head_of_a_private_repo_reaches_no_agent(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    in_(repos["payroll"], monkeypatch)
    assert ken("project", "add", "payproj", str(repos["payroll"])).exit_code == 0
    subprocess.run(["git", "checkout", "-q", "--detach"], cwd=repos["payroll"], check=True)
    monkeypatch.setenv("KEN_PROJECT", "payproj")
    a_session(repos["payroll"], "s1", f"Raise the CFO salary {SECRET}")
    [left] = handoffs()
    assert str(left.scope) == "project:payproj"

    async def reads(server: Server) -> None:
        assert "deliver = false" in await server.error("memory_get", {"id": left.id})
        found = await server.ok("memory_search", {"query": "CFO salary", "scopes": ["project"]})
        assert found["results"] == []

    drive(repos["shop"], reads, extra_env={"KEN_PROJECT": "payproj"})


def test_an_agents_handoff_in_a_private_repos_project_log_reaches_no_agent(
    repos: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The handoff is written to the project's log.md and indexed from there: the memory
    # the sync makes of it is still the one written in payroll, and withheld as such.
    notes = tmp_path / "notes" / "payproj"
    notes.mkdir(parents=True)
    in_(repos["payroll"], monkeypatch)
    assert ken("project", "add", "payproj", str(notes)).exit_code == 0
    handoff = {"done": f"Raised the CFO salary {SECRET}", "state": "s", "next": "n"}

    async def leave(server: Server) -> None:
        await server.ok("memory_handoff", handoff)

    drive(repos["payroll"], leave, client="codex-mcp-client")
    [left] = handoffs()
    assert SECRET in left.title and (left.source or "").startswith("project:payproj:log.md#")
    made = left.provenance
    assert (made.who, made.how, made.repo, made.project) == ("codex", "sync", PAYROLL, "payproj")
    for folder in (repos["shop"], notes):
        monkeypatch.setenv("KEN_PROJECT", "payproj")
        told = hook("SessionStart", folder, f"next-{folder.name}", source="startup")
        assert told and SECRET not in told, folder
        in_(folder, monkeypatch)
        for args in (("list", "--all"), ("export",)):
            assert SECRET in ken(*args).stdout, args  # the person's shell sees it all
            done = ken(*args, env=AGENT)
            assert done.exit_code == 0 and SECRET not in done.output, (args, folder)
        assert SECRET not in ken("pack", "--for", "codex").stdout

    async def reads(server: Server) -> None:
        assert SECRET not in (await server.ok("memory_context"))["text"]
        assert "deliver = false" in await server.error("memory_get", {"id": left.id})

    drive(repos["shop"], reads, extra_env={"KEN_PROJECT": "payproj"})


def test_a_log_md_entry_an_agent_wrote_itself_in_a_private_repos_session_reaches_no_agent(
    repos: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Headed as memory_handoff heads one, within a session of that agent in the project:
    # the entry is that session's (as `ken handoff` counts it), so it was written in payroll.
    notes = tmp_path / "notes" / "payproj"
    notes.mkdir(parents=True)
    in_(repos["payroll"], monkeypatch)
    assert ken("project", "add", "payproj", str(notes)).exit_code == 0
    hook("SessionStart", repos["payroll"], "s1", source="startup")
    minute = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    entry = f"# Log\n\n## {minute} claude: CFO salary raised {SECRET}\n\nBy hand.\n"
    (notes / "log.md").write_text(entry, encoding="utf-8")
    in_(repos["shop"], monkeypatch, KEN_PROJECT="payproj")
    told = ken("pack", "--for", "codex").stdout  # syncs the project first, as a start does
    assert "CFO salary" not in told

    async def reads(server: Server) -> None:
        assert "CFO salary" not in (await server.ok("memory_context"))["text"]

    drive(repos["shop"], reads, extra_env={"KEN_PROJECT": "payproj"}, client="codex-mcp-client")
    [left] = [i for i in handoffs() if SECRET in i.title]
    with opened() as store:
        [session] = store.list_sessions(SessionQuery(repo=PAYROLL))
    made = left.provenance
    assert (made.who, made.session, made.repo) == ("claude", session.id, PAYROLL)
    in_(notes, monkeypatch)
    assert SECRET in ken("list").stdout
    assert SECRET not in ken("list", env=AGENT).stdout


def test_a_log_md_entry_that_fits_a_private_and_a_public_session_is_withheld_as_private(
    repos: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The heading names claude and a minute two of its sessions in the project cover: one
    # in payroll, then a later one in shop. It may have been written in either, so it is
    # delivered no more widely than the most private of them.
    notes = tmp_path / "notes" / "payproj"
    notes.mkdir(parents=True)
    in_(repos["payroll"], monkeypatch, KEN_PROJECT="payproj")
    assert ken("project", "add", "payproj", str(notes)).exit_code == 0
    hook("SessionStart", repos["payroll"], "pv1", source="startup")
    hook("SessionStart", repos["shop"], "sh1", source="startup")
    minute = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    entry = f"# Log\n\n## {minute} claude: PAYROLL salary table {SECRET}\n\nBy hand.\n"
    (notes / "log.md").write_text(entry, encoding="utf-8")
    in_(repos["shop"], monkeypatch)
    told = ken("pack", "--for", "codex").stdout  # syncs the project first, as a start does
    assert SECRET not in told and "PAYROLL salary" not in told
    [left] = [i for i in handoffs() if SECRET in i.title]
    with opened() as store:
        [private] = store.list_sessions(SessionQuery(repo=PAYROLL))
    assert (left.provenance.session, left.provenance.repo) == (private.id, PAYROLL)
    assert SECRET not in ken("list", "--all", env=AGENT).stdout

    async def reads(server: Server) -> None:
        assert SECRET not in (await server.ok("memory_context"))["text"]

    drive(repos["shop"], reads, extra_env={"KEN_PROJECT": "payproj"}, client="codex-mcp-client")


def test_a_private_repos_memory_in_a_shared_scope_is_withheld_as_its_repo_scope_is(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with opened() as store:
        written = where_mod.detect(repos["payroll"], env={}).provenance("user", "cli")
        private = add("Bonus plan PAYROLL-GLOBAL-NOTE", store, provenance=written)
        public = add("Answer in British English", store)
    in_(repos["shop"], monkeypatch)
    pack = ken("pack").stdout
    assert public.title in pack and private.title not in pack
    recalled = ken("recall", "--min-score", "0", "--min-shared", "0", "bonus plan note").stdout
    assert private.title not in recalled


# --- G2: `ken handoff` obeys memory.enabled, deliver_to and deliver = false ---------


def test_ken_handoff_hands_nothing_of_a_private_repo_over_from_any_shell(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a_session(repos["payroll"], "s1", f"Fix the payroll bonus {SECRET}")
    for env in ({}, AGENT):
        in_(repos["payroll"], monkeypatch)
        done = ken("handoff", "--to", "codex", "--print", env=env)
        assert done.exit_code == 1, done.output
        assert SECRET not in done.output
        assert done.stderr.strip().splitlines() == [
            f"ken: {PAYROLL} is a repo whose memory is not delivered to agents "
            "(deliver = false in config.toml): nothing was handed over"
        ]
    # Nor from a shop folder that names the same line of work.
    monkeypatch.setenv("KEN_WORKSTREAM", "payroll-q4")
    a_session(repos["payroll"], "s2", f"More on the bonus {SECRET}")
    in_(repos["shop"], monkeypatch)
    done = ken("handoff", "--to", "codex", "--print")
    assert done.exit_code == 1 and SECRET not in done.output
    assert "no earlier agent session here" in done.stderr


@pytest.mark.parametrize(
    ("config", "env", "said"),
    [
        ("[memory]\nenabled = false\n", {}, "memory is turned off"),
        ("", {"KEN_ENABLED": "0"}, "memory is turned off"),
        ('[memory]\ndeliver_to = ["claude"]\n', {}, "gemini is not in memory.deliver_to"),
    ],
)
def test_ken_handoff_hands_nothing_over_when_memory_may_not_reach_the_agent(
    repos: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    env: dict[str, str],
    said: str,
) -> None:
    a_session(repos["shop"], "s1", "Fix the CSV export SHOP-TOKEN")
    in_(repos["shop"], monkeypatch)
    assert "SHOP-TOKEN" in ken("handoff", "--to", "gemini", "--print").stdout  # switches on
    write_config(SWITCHES + config)
    done = ken("handoff", "--to", "gemini", "--print", env=env)
    assert done.exit_code == 1 and "SHOP-TOKEN" not in done.output
    [line] = done.stderr.strip().splitlines()
    assert said in line and "nothing was handed over" in line
    if "deliver_to" in config:  # an agent it lists is still handed the work
        assert "SHOP-TOKEN" in ken("handoff", "--to", "claude", "--print").stdout


# --- G4 and G8: an agent's shell reads nothing of a private repo --------------------


@pytest.fixture
def private(repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A memory in payroll's repo scope, one in its branch, and a session of payroll."""
    with opened() as store:
        made = {
            "repo": add(
                f"Payroll plan PRIVATE-REPO about bonuses {SECRET}", store, scope=f"repo:{PAYROLL}"
            ),
            "branch": add(
                f"Payroll branch note PRIVATE-BRANCH about bonuses {SECRET}",
                store,
                scope=f"workstream:{PAYROLL}#main",
            ),
            "public": add("Shop note PUBLIC about bonuses", store, scope=f"repo:{SHOP}"),
        }
    a_session(repos["payroll"], "s-pay", f"Payroll bonuses {SECRET}")
    with opened() as store:
        made["session"] = store.find_session("claude", "s-pay")
    in_(repos["shop"], monkeypatch)
    return made


def test_ken_recall_with_scope_gives_an_agent_nothing_of_a_private_repo(
    private: dict[str, Any],
) -> None:
    for env in ({}, AGENT):
        for scope in (f"repo:{PAYROLL}", f"workstream:{PAYROLL}#main"):
            done = ken(
                "recall", "-s", scope, "--min-score", "0", "--min-shared", "0", "--json",
                "payroll plan bonuses", env=env,
            )  # fmt: skip
            assert done.exit_code == 0 and json.loads(done.stdout)["items"] == [], (env, scope)
    mixed = ken(
        "recall", "-s", f"repo:{PAYROLL}", "-s", f"repo:{SHOP}", "--min-score", "0",
        "--min-shared", "0", "note about bonuses", env=AGENT,
    )  # fmt: skip
    assert "PUBLIC" in mixed.stdout and SECRET not in mixed.stdout


def test_the_read_commands_in_an_agents_shell_withhold_a_private_repo_as_mcp_does(
    private: dict[str, Any],
) -> None:
    session = private["session"]
    reads = [
        ("search", "bonuses"),
        ("search", "bonuses", "--scope", f"repo:{PAYROLL}"),
        ("list",),
        ("list", "--all", "--scope", f"workstream:{PAYROLL}#main"),
        ("export",),
        ("sessions", "--all"),
        ("sessions", "--all", "--json"),
    ]
    for args in reads:
        mine = ken(*args)  # the person's own shell sees their whole store
        assert mine.exit_code == 0 and SECRET in mine.output, args
        agents = ken(*args, env=AGENT)
        assert agents.exit_code == 0 and SECRET not in agents.output, (args, agents.output)
    assert "PUBLIC" in ken("search", "bonuses", env=AGENT).stdout
    for hidden in (private["repo"], private["branch"]):
        assert SECRET in ken("show", hidden.id).stdout
        done = ken("show", hidden.id, env=AGENT)
        assert done.exit_code == 1 and SECRET not in done.output
        assert "deliver = false" in done.stderr
    assert ken("told", session.id).exit_code == 0
    # Named as no session is (it said "ran in a repo whose memory is not delivered",
    # which told the agent it was there), and an ambiguous start lists none of it.
    for ref in (session.id, session.id[-6:], "zzzzzz"):
        done = ken("told", ref, env=AGENT)
        assert done.exit_code == 1 and "no session matches" in done.stderr, ref


def test_an_agent_resolves_ids_lists_and_counts_only_what_it_may_know_of(
    private: dict[str, Any], repos: dict[str, Path]
) -> None:
    """An agent's shell and its MCP tools read by the one rule (`items.may_know`): an
    ambiguous id named the private repo's memories (an id tells when it was made), `ken
    list` and `ken show` gave another agent's proposal in full, and `ken list` and `ken
    doctor` said how many memories wait for review."""
    from kenning.model import Provenance, Status

    theirs = add(
        "Codex: rotate keys weekly THEIRS",
        scope=f"repo:{SHOP}",
        kind="decision",
        status=Status.PROPOSED,
        provenance=Provenance(who="codex", how="cli"),
    )
    prefix = private["public"].id[:4]  # ids made the same day share their first four
    assert {i.id[:4] for i in (theirs, private["repo"], private["branch"])} == {prefix}
    mine = ken("show", prefix).stderr  # a person's shell: all of them
    assert all(i.id in mine for i in (theirs, private["repo"], private["branch"])), mine
    done = ken("show", prefix, env=AGENT)
    assert done.exit_code == 0 and "PUBLIC" in done.stdout, done.output
    assert ken("show", theirs.id[-6:], env=AGENT).exit_code == 1
    assert "THEIRS" not in ken("show", theirs.id, env=AGENT).output
    assert "THEIRS" in ken("show", theirs.id).stdout
    # Nor do the commands that list, count or export: `ken export`, `ken search --all`,
    # `ken curate` and `ken lint` gave it whole, its evidence and provenance too.
    copy = add("Codex: rotate keys weekly", scope=f"repo:{SHOP}", kind="decision")
    for args in (
        ("export",),
        ("search", "--all", "--json", "rotate keys weekly"),
        ("search", "--status", "proposed", "rotate keys"),
        ("curate", "--json"),
        ("lint", "--json"),
    ):
        said = ken(*args, env=AGENT).output
        assert theirs.id not in said and "THEIRS" not in said, args
        assert "THEIRS" in ken(*args).output, args  # the person's own shell: all of it
    with opened() as store:
        store.delete_items([copy.id])
    # Every command that takes an id resolves it among what is not withheld: ken update,
    # pin and approve too (another agent's proposal stays in reach for a change, which
    # is refused saying a person decides it).
    for args in (("update", prefix, "--add-tag", "x"), ("pin", prefix), ("approve", prefix)):
        said = ken(*args, env=AGENT).output
        assert not any(i.id in said for i in (private["repo"], private["branch"])), (args, said)
    for args in (("list", "--status", "proposed"), ("list", "--all"), ("list",)):
        listed = ken(*args, env=AGENT)
        assert listed.exit_code == 0 and "THEIRS" not in listed.output, args
        assert "wait" not in listed.output, args
    assert "1 memory waits for review" in ken("list").stderr
    # Its own proposals it sees: codex's shell lists the one codex made.
    assert "THEIRS" in ken("list", "--status", "proposed", env={"CODEX_CI": "1"}).stdout
    assert "(1 proposed)" in ken("doctor").stdout
    known = len(json.loads(ken("list", "--all", "--json", env=AGENT).stdout))
    doctor = ken("doctor", env=AGENT).stdout
    assert f"integrity ok, {known} items" in doctor and "proposed" not in doctor

    async def reads(server: Server) -> None:
        got = await server.ok("memory_get", {"id": prefix})
        assert got["id"] == private["public"].id
        text = await server.error("memory_get", {"id": theirs.id})
        assert "no item" in text and "THEIRS" not in text
        for hidden in (private["repo"], private["branch"]):
            assert hidden.id not in await server.error("memory_get", {"id": hidden.id[-6:]})

    drive(repos["shop"], reads, extra_env=AGENT)


def test_ken_lessons_in_an_agents_shell_shows_nothing_of_a_private_repo(
    private: dict[str, Any], repos: dict[str, Path]
) -> None:
    session = private["session"]  # ran in payroll
    with opened() as store:
        store.add_signal(session.id, "correction", f"no, the bonus is {SECRET}")
        mcp_there = where_mod.detect(repos["payroll"], env={}).provenance(
            "claude", "mcp", session=session.id
        )
        for scope in (f"repo:{PAYROLL}", "global"):  # what it wrote, in any scope
            add(
                f"Bonus lesson in {scope} {SECRET}",
                store,
                scope=scope,
                tags=("reflection",),
                evidence="no, the bonus is",
                provenance=mcp_there,
            )
        add("Shop lesson PUBLIC", store, scope=f"repo:{SHOP}", tags=("reflection",))
    for args in (("lessons",), ("lessons", "--json")):
        mine = ken(*args)  # the person's own shell sees every lesson
        assert mine.exit_code == 0 and SECRET in mine.output, args
        agents = ken(*args, env=AGENT)
        assert agents.exit_code == 0 and SECRET not in agents.output, (args, agents.output)
        assert "PUBLIC" in agents.output
    assert SECRET in ken("lessons", "--session", session.id).output
    done = ken("lessons", "--session", session.id, env=AGENT)
    assert done.exit_code == 1 and SECRET not in done.output
    assert "no session matches" in done.stderr  # as an id no session has


def test_curate_lint_and_review_in_an_agents_shell_show_nothing_of_a_private_repo(
    private: dict[str, Any], repos: dict[str, Path]
) -> None:
    from kenning.model import Status

    instructions = repos["shop"] / "CLAUDE.md"
    instructions.write_text("# Rules\n\n- Pay the bonuses on Fridays.\n", encoding="utf-8")
    with opened() as store:
        add(
            f"Payroll rule waiting {SECRET}", store, scope=f"repo:{PAYROLL}", status=Status.PROPOSED
        )
        add(
            f"Pay the bonuses on Fridays {SECRET}",
            store,
            scope=f"repo:{PAYROLL}",
            kind="preference",
            links=("file:/nowhere/payroll.csv",),
        )
    reads = [
        ("curate",),
        ("curate", "--json"),
        ("lint",),
        ("lint", "--json"),
        ("lint", str(instructions)),
    ]
    for args in reads:
        mine = ken(*args)  # the person's own shell sees their whole store
        assert SECRET in mine.output, args
        agents = ken(*args, env=AGENT)
        assert SECRET not in agents.output, (args, agents.output)
    # Whether something waits is the queue's too: an agent is refused before it is read.
    with opened() as store:
        for item in store.list_items(ItemQuery(statuses=("proposed",))):
            store.delete_items([item.id])
    done = ken("review", env=AGENT)
    assert done.exit_code == 1 and "needs a person" in done.stderr


def test_ken_summarize_in_an_agents_shell_refuses_a_private_repos_session(
    private: dict[str, Any], repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a summary says of a session is the session's: refused before it is read.
    write_config(SWITCHES + '[memory.summarize]\ncommand = ["true"]\n')
    session = private["session"]
    in_(repos["shop"], monkeypatch)  # named from elsewhere: as an id no session has
    done = ken("summarize", session.id, env=AGENT)
    assert done.exit_code == 1 and "no session matches" in done.stderr, done.output
    in_(repos["payroll"], monkeypatch)  # the latest here, in the repo itself: says why
    done = ken("summarize", env=AGENT)
    assert done.exit_code == 1, done.output
    assert done.stderr.strip().splitlines() == [
        f"ken: session {short_id(session.id)} ran in a repo whose memory is not "
        "delivered to agents (deliver = false in config.toml)"
    ]


def test_ken_plan_preview_in_an_agents_shell_refuses_a_plan_naming_a_private_memory(
    private: dict[str, Any], tmp_path: Path
) -> None:
    """Its full id refuses the plan saying why; its short id matches nothing the agent
    may know of, as in `ken show`: a missing target, and not a word of the repo."""
    hidden = private["repo"]
    plan, short = tmp_path / "plan.json", tmp_path / "short.json"
    for path, ref in ((plan, hidden.id), (short, short_id(hidden.id))):
        retire = {"op": "retire", "id": ref, "expected_revision": "0" * 26, "reason": "x"}
        path.write_text(
            json.dumps({"schema": 1, "id": "p1", "owner": "me", "operations": [retire]}),
            encoding="utf-8",
        )
        assert SECRET in ken("plan", "preview", str(path)).output  # the person's own
    for args in (("plan", "preview", str(plan)), ("plan", "preview", "--json", str(plan))):
        done = ken(*args, env=AGENT)
        assert done.exit_code == 1 and SECRET not in done.output, done.output
        assert "deliver = false" in done.stderr
    done = ken("plan", "preview", str(short), env=AGENT)
    assert done.exit_code == 1 and "target_missing" in done.stdout, done.output
    assert SECRET not in done.output and "deliver" not in done.output


def test_a_plan_an_agent_drafts_resolves_its_ids_only_among_what_it_may_know_of(
    private: dict[str, Any], repos: dict[str, Path], tmp_path: Path
) -> None:
    """A plan's ids resolved among all memories: in an agent's shell (`ken plan preview`)
    and over MCP (`memory_plan_draft`), a short id shared with the private repo's
    memories named them in an ambiguous-id error, and another agent's proposal was
    previewed in full, its text and all. They resolve as `ken show` does."""
    from kenning.model import Provenance, Status

    theirs = add(
        "Codex: rotate keys weekly THEIRS",
        scope=f"repo:{SHOP}",
        kind="decision",
        status=Status.PROPOSED,
        provenance=Provenance(who="codex", how="cli"),
    )
    public = private["public"]
    prefix = public.id[:4]  # ids made the same day share their first four
    assert {i.id[:4] for i in (theirs, private["repo"], private["branch"])} == {prefix}

    def plan(ref: str) -> dict[str, Any]:
        retire = {"op": "retire", "id": ref, "expected_revision": public.revision, "reason": "x"}
        return {"schema": 1, "id": "p1", "owner": "claude", "operations": [retire]}

    shared, proposal = tmp_path / "shared.json", tmp_path / "proposal.json"
    shared.write_text(json.dumps(plan(prefix)), encoding="utf-8")
    proposal.write_text(json.dumps(plan(theirs.id)), encoding="utf-8")
    hidden = (private["repo"].id, private["branch"].id, theirs.id)
    # A person resolves among all: the short id is ambiguous, the proposal is there.
    mine = ken("plan", "preview", str(shared))
    assert mine.exit_code == 1 and all(i in mine.output for i in hidden), mine.output
    assert "THEIRS" in ken("plan", "preview", str(proposal)).output

    done = ken("plan", "preview", "--json", str(shared), env=AGENT)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["operations"][0]["before"][0]["id"] == public.id
    assert not any(i in done.output for i in hidden) and SECRET not in done.output
    done = ken("plan", "preview", str(proposal), env=AGENT)
    assert done.exit_code == 1 and "target_missing" in done.stdout, done.output
    assert "THEIRS" not in done.output and "rotate keys" not in done.output

    async def drafts(server: Server) -> None:
        got = await server.ok("memory_plan_draft", {"plan": plan(prefix)})
        assert got["operations"][0]["before"][0]["id"] == public.id
        assert not any(i in json.dumps(got) for i in hidden)
        got = await server.ok("memory_plan_draft", {"plan": plan(theirs.id)})
        assert [c["code"] for c in got["conflicts"]] == ["target_missing"]
        assert "THEIRS" not in json.dumps(got) and "rotate keys" not in json.dumps(got)

    drive(repos["shop"], drafts, extra_env=AGENT)


def test_ken_promote_in_an_agents_shell_writes_nothing_of_a_private_repo(
    private: dict[str, Any], tmp_path: Path
) -> None:
    steering = make_repo(tmp_path / "steering", "git@github.com:acme/steering.git")
    for key, value in (("user.name", "Dev"), ("user.email", "dev@example.com")):
        subprocess.run(["git", "config", key, value], cwd=steering, check=True)
    done = ken("promote", "--repo", str(steering), env=AGENT)
    assert done.exit_code == 0 and "PUBLIC" in done.output, done.output
    assert SECRET not in done.output
    written = subprocess.run(
        ["git", "log", "--all", "-p"], cwd=steering, check=True, capture_output=True, text=True
    ).stdout
    assert "PUBLIC" in written and SECRET not in written


def test_the_read_commands_in_an_agents_shell_tell_nothing_when_memory_is_off(
    private: dict[str, Any],
) -> None:
    write_config(SWITCHES + "[memory]\nenabled = false\n")
    for args in (("search", "bonuses"), ("list",), ("show", private["public"].id)):
        assert ken(*args).exit_code == 0
        done = ken(*args, env=AGENT)
        assert done.exit_code == 1 and "PUBLIC" not in done.output
        assert "memory delivery is turned off" in done.stderr


# --- G7: `ken add` in an agent's shell obeys memory.enabled and capture = false -----


def test_ken_add_in_an_agents_shell_is_refused_where_capture_is_off(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    in_(repos["hr"], monkeypatch)
    for args in (
        ("agent cli note in hr", "--scope", "workstream"),
        ("A rule", "--kind", "preference", "--scope", "repo", "--evidence", "x"),
    ):
        done = ken("add", *args, env=AGENT)
        assert done.exit_code == 1, done.output
        assert (
            f"memory capture is off for {HR}" in done.stderr and "nothing was saved" in done.stderr
        )
    in_(repos["shop"], monkeypatch)
    done = ken("add", "x", "--scope", f"repo:{HR}", "--evidence", "x", env=AGENT)
    assert done.exit_code == 1 and "capture is off" in done.stderr
    with opened() as store:
        assert store.count_items() == 0
    # A person's own add is theirs.
    in_(repos["hr"], monkeypatch)
    assert ken("add", "The person's own note in hr").exit_code == 0


def test_ken_import_in_an_agents_shell_is_refused_into_a_capture_off_repos_scope(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    in_(repos["shop"], monkeypatch)
    assert ken("add", "HR rule from the person", "--scope", f"repo:{HR}").exit_code == 0
    lines = tmp_path / "hr.jsonl"
    lines.write_text(ken("export").stdout, encoding="utf-8")
    with opened() as store:
        store.delete_items([i.id for i in store.list_items(ItemQuery(statuses=()))])
    rules = tmp_path / "CLAUDE.md"
    rules.write_text("# Rules\n\n- Salaries are paid on the 25th.\n", encoding="utf-8")
    for args in (("import", str(lines)), ("import", "--from", str(rules), "--scope", f"repo:{HR}")):
        done = ken(*args, env=AGENT)
        assert done.exit_code == 1, (args, done.output)
        assert f"memory capture is off for {HR}" in done.stderr, args
    with opened() as store:
        assert store.count_items() == 0


@pytest.mark.parametrize(
    ("config", "env"), [("[memory]\nenabled = false\n", {}), ("", {"KEN_ENABLED": "0"})]
)
def test_ken_add_in_an_agents_shell_is_refused_when_memory_is_off(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch, config: str, env: dict[str, str]
) -> None:
    write_config(SWITCHES + config)
    in_(repos["shop"], monkeypatch)
    done = ken("add", "note while memory off", "--scope", "workstream", env={**AGENT, **env})
    assert done.exit_code == 1 and "memory is turned off" in done.stderr
    with opened() as store:
        assert store.count_items() == 0
    mine = ken("add", "The person's note while memory is off", env=env)
    assert mine.exit_code == 0 and "no agent is told this until it is on again" in mine.stderr


def test_an_agents_update_in_its_shell_is_refused_where_capture_is_off(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    in_(repos["shop"], monkeypatch)
    note = ken("add", "Agent note in shop", "--scope", "workstream", env=AGENT).stdout.strip()
    write_config(SWITCHES + f'[memory.repos."{SHOP}"]\ncapture = false\n')
    done = ken("update", note, "--text", "rewritten", env=AGENT)
    assert done.exit_code == 1 and "capture is off" in done.stderr


# --- G9: another repo's branch or another folder's project is a shared scope --------


def test_a_workstream_named_for_another_repo_is_a_shared_scope_for_an_agent(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    in_(repos["shop"], monkeypatch, KEN_WORKSTREAM=f"{PAYROLL}#main")
    done = ken("add", "x", "--scope", "workstream", env=AGENT)
    assert done.exit_code == 1 and "needs evidence" in done.stderr
    done = ken("add", "y", "--scope", "workstream", "--evidence", "e", "--json", env=AGENT)
    assert json.loads(done.stdout)["status"] == "proposed"
    assert "a shared scope here" in ken("where").stdout
    # Of this repo, or a name of no repo, it is the agent's own.
    for named in (f"{SHOP}#feature", "checkout-rework"):
        monkeypatch.setenv("KEN_WORKSTREAM", named)
        done = ken("add", f"own note {named}", "--scope", "workstream", "--json", env=AGENT)
        assert json.loads(done.stdout)["status"] == "active", named

    async def propose(server: Server) -> None:
        text = await server.error("memory_propose", {"text": "z"})
        assert "needs evidence" in text

    drive(repos["shop"], propose, extra_env={"KEN_WORKSTREAM": f"{PAYROLL}#main"})


def test_a_project_registered_for_another_folder_is_a_shared_scope_for_an_agent(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    in_(repos["payroll"], monkeypatch)
    assert ken("project", "add", "payproj", str(repos["payroll"])).exit_code == 0
    in_(repos["shop"], monkeypatch, KEN_PROJECT="payproj")
    done = ken("add", "x", "--scope", "project", env=AGENT)
    assert done.exit_code == 1 and "needs evidence" in done.stderr
    in_(repos["payroll"], monkeypatch)
    done = ken("add", "own project note", "--scope", "project", "--json", env=AGENT)
    assert json.loads(done.stdout)["status"] == "active"


def test_a_hook_naming_a_capture_off_repos_workstream_records_nothing(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEN_WORKSTREAM", f"{HR}#main")
    a_session(repos["shop"], "s1", "Fix the hr export")
    with opened() as store:
        assert store.list_sessions(SessionQuery(limit=10)) == []
    assert handoffs() == []
    in_(repos["shop"], monkeypatch)
    done = ken("add", "x", "--scope", "workstream", "--evidence", "e", env=AGENT)
    assert done.exit_code == 1 and f"capture is off for {HR}" in done.stderr


def test_a_write_to_a_project_of_a_capture_off_repo_is_refused_from_any_folder(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # hrproj was added from hr; mixed was added from shop for a folder inside hr, so it
    # is both repos' (its log.md is written in hr): capture off in either refuses it.
    in_(repos["hr"], monkeypatch)
    assert ken("project", "add", "hrproj", str(repos["hr"])).exit_code == 0
    (repos["hr"] / "notes").mkdir()
    in_(repos["shop"], monkeypatch)
    assert ken("project", "add", "mixed", str(repos["hr"] / "notes")).exit_code == 0
    for slug in ("hrproj", "mixed"):
        done = ken("add", "x", "--scope", f"project:{slug}", "--evidence", "e", env=AGENT)
        assert done.exit_code == 1, (slug, done.output)
        assert done.stderr.strip().splitlines() == [
            f"ken: memory capture is off for {HR}, a repo of project {slug} "
            f'([memory.repos."{HR}"] capture = false in config.toml): nothing was saved'
        ]
    with opened() as store:
        assert store.count_items() == 0

    async def writes(server: Server) -> None:
        for slug in ("hrproj", "mixed"):
            args = {"text": "y", "scope": f"project:{slug}", "evidence": "e"}
            assert f"capture is off for {HR}" in await server.error("memory_propose", args)
        handoff = {"done": "d", "state": "s", "next": "n"}
        assert f"capture is off for {HR}" in await server.error("memory_handoff", handoff)

    drive(repos["shop"], writes, extra_env={"KEN_PROJECT": "mixed"})
    assert not (repos["hr"] / "notes" / "log.md").exists()
    with opened() as store:
        assert store.count_items() == 0
    # A person's own write is theirs; shop's own project takes an agent's.
    assert ken("add", "The person's note", "--scope", "project:mixed").exit_code == 0
    assert ken("project", "add", "shopproj", str(repos["shop"])).exit_code == 0
    done = ken("add", "own note", "--scope", "project:shopproj", env=AGENT)
    assert done.exit_code == 0, done.output


def test_slash_remember_to_a_capture_off_repos_scope_stores_nothing_from_any_folder(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    in_(repos["hr"], monkeypatch)
    assert ken("project", "add", "hrproj", str(repos["hr"])).exit_code == 0
    for scope in (f"repo:{HR}", f"workstream:{HR}#main", "project:hrproj"):
        prompt = f"/remember --scope {scope} Salaries are paid on the 25th"
        said = hook("UserPromptSubmit", repos["shop"], "s1", prompt=prompt)
        told = json.loads(said)["hookSpecificOutput"]["additionalContext"]
        # The line /remember says where it is typed in such a repo: one wording, not
        # check_write's "nothing was saved" with an instruction after it.
        assert told.startswith(f"kenning: memory capture is off for {HR}"), scope
        assert told.endswith(" capture = false in config.toml): nothing was stored."), told
    with opened() as store:
        assert store.count_items() == 0


def test_slash_recall_in_an_agent_finds_nothing_of_a_private_repo(
    private: dict[str, Any], repos: dict[str, Path]
) -> None:
    with opened() as store:  # a global memory written in payroll is payroll's too
        written = where_mod.detect(repos["payroll"], env={}).provenance("user", "cli")
        add(f"Global bonuses note {SECRET}", store, provenance=written)
    for folder in (repos["payroll"], repos["shop"]):
        told = hook("UserPromptSubmit", folder, f"s-{folder.name}", prompt="/recall bonuses")
        assert "bonuses" in told and SECRET not in told, folder
    assert "PUBLIC" in told  # shop's own


def test_since_your_last_turn_tells_nothing_added_in_a_private_repo(
    handoff_scene: Any, tmp_path: Path
) -> None:
    scene = handoff_scene
    write_config(SWITCHES)
    codex_session(scene, tmp_path)
    payroll = make_repo(tmp_path / "payroll", "git@github.com:acme/payroll.git")
    with opened() as store:
        written = where_mod.detect(payroll, env={}).provenance("user", "cli")
        add(f"Bonus plan written in payroll {SECRET}", store, provenance=written)
        add("Exports must stream rows", store)
    fake_agents(tmp_path, "claude", extra="\n" + SWITCHES)
    data = handoff_plan("--to", "claude")
    assert data["mode"] == "resume"
    assert "Exports must stream rows" in data["pack"] and SECRET not in data["pack"]


def test_ken_list_in_an_agents_shell_lists_and_counts_what_it_may_see_within_its_limit(
    private: dict[str, Any], repos: dict[str, Path]
) -> None:
    with opened() as store:
        payroll = written_in(repos["payroll"])
        for n in range(10):  # newer than shop's note
            add(f"Payroll note {n} {SECRET}", store, provenance=payroll)
    done = ken("list", "--limit", "1", env=AGENT)
    assert "PUBLIC" in done.stdout and SECRET not in done.output
    # It counts what it may see: no more than the whole list it is shown.
    seen = len(json.loads(ken("list", "--limit", "0", "--json", env=AGENT).stdout))
    assert f"(showing 1 of {seen};" in done.output or seen == 1
    everything = len(json.loads(ken("list", "--limit", "0", "--json").stdout))
    assert f"(showing 1 of {everything};" in ken("list", "--limit", "1").output
    assert everything >= seen + 10


def test_ken_list_in_an_agents_shell_says_nothing_of_what_waits(
    private: dict[str, Any],
) -> None:
    from kenning.model import Status

    with opened() as store:
        add("Payroll rule waiting", store, scope=f"repo:{PAYROLL}", status=Status.PROPOSED)
        add("Shop rule waiting", store, scope=f"repo:{SHOP}", status=Status.PROPOSED)
    assert "2 memories wait for review" in ken("list").output  # the person's: all of them
    # An agent is not told whether anything waits (`ken review` is refused it), nor
    # given a proposal not its own (as over MCP).
    assert "wait" not in ken("list", env=AGENT).output


# --- recall and search choose among what they may give ------------------------------


def written_in(folder: Path) -> Any:
    """The provenance of a memory a person wrote with `ken add` in `folder`."""
    return where_mod.detect(folder, env={}).provenance("user", "cli")


def test_private_memories_never_take_the_places_of_one_recall_may_give(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 45 memories written in payroll match the prompt better than shop's one: were they
    # left out only after the candidates are chosen, they would fill every place. (The
    # lunch orders keep the prompt's words rare enough to fit.)
    with opened() as store:
        payroll = written_in(repos["payroll"])
        for n in range(45):
            add(f"Rotate staging credentials {n} {SECRET}", store, provenance=payroll)
        for n in range(400):
            add(f"Lunch order {n}\nSoup on Mondays, noodles otherwise", store)
        mine = add("Rotate the vendor's staging credentials before the audit", store)
    told = hook("UserPromptSubmit", repos["shop"], "s1", prompt="rotate the staging credentials")
    assert mine.title in told and SECRET not in told
    in_(repos["shop"], monkeypatch)
    for env in ({}, AGENT):
        done = ken("recall", "--json", "rotate the staging credentials", env=env)
        assert [i["id"] for i in json.loads(done.stdout)["items"]] == [mine.id], env


def test_a_private_note_is_not_recalled_as_the_one_that_follows_a_note_that_fits(
    repos: dict[str, Path],
) -> None:
    # A note captured right after another in its scope may continue it (a reply), and
    # is recalled with it; not when it was written in a repo whose memory is private.
    with opened() as store:
        add("Bonus rule for the checkout team", store, provenance=written_in(repos["shop"]))
        add(f"Bonus figures {SECRET}", store, provenance=written_in(repos["payroll"]))
    told = hook("UserPromptSubmit", repos["shop"], "s1", prompt="the checkout bonus figures")
    assert "Bonus rule for the checkout team" in told and SECRET not in told


def test_private_memories_never_take_the_places_of_what_a_pack_may_give(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pack reads each section's newest memories, as many as it could hold: 40 newer
    # rules written in payroll must not be those, nor be counted as "did not fit".
    with opened() as store:
        mine = add("Answer in British English", store, kind="preference")
        payroll = written_in(repos["payroll"])
        for n in range(40):
            add(f"Bonus rule {n} {SECRET}", store, kind="preference", provenance=payroll)
    told = hook("SessionStart", repos["shop"], "s1", source="startup")
    assert mine.title in told and SECRET not in told and "did not fit" not in told
    in_(repos["shop"], monkeypatch)
    pack = ken("pack", "--json").stdout
    assert json.loads(pack)["omitted"] == 0 and mine.id in pack and SECRET not in pack


def test_private_memories_never_take_the_places_of_what_a_search_may_show(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with opened() as store:
        payroll = written_in(repos["payroll"])
        for n in range(25):
            add(f"Bonus ledger export {n}\n{SECRET}", store, provenance=payroll)
        mine = add(
            "Bonus ledger export streams its rows\nThe export writes each row of the ledger "
            "as it reads it, never the whole file at once, so a year of bonuses fits.",
            store,
        )
    in_(repos["shop"], monkeypatch)
    done = ken("search", "--limit", "5", "--json", "bonus ledger export", env=AGENT)
    assert [i["id"] for i in json.loads(done.stdout)] == [mine.id]
    told = hook("UserPromptSubmit", repos["shop"], "s1", prompt="/recall bonus ledger export")
    assert mine.title in told and SECRET not in told

    async def reads(server: Server) -> None:
        found = await server.ok("memory_search", {"query": "bonus ledger export", "limit": 5})
        assert [r["id"] for r in found["results"]] == [mine.id]

    drive(repos["shop"], reads)


# --- the duplicate check on an agent's write tells nothing it may not see -----------

BOARD = "Private board minutes: CFO bonus set at 3 percent"
FORMULA = "Priv waits: the cfo bonus formula is revenue times 0.03"
RATE = "Priv fact: the payroll tax rate is 7 percent"
SPLIT = "Priv dismissed: payroll runs split across two banks"


@pytest.fixture
def held_private(repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """In payroll: a person's waiting proposal, a person's active fact, and an agent's
    proposal a person dismissed; then the shell is in shop."""
    in_(repos["payroll"], monkeypatch)
    made = {}
    for name, args, env in (
        ("waiting", (FORMULA, "--propose", "--evidence", BOARD), {}),
        ("active", (RATE,), {}),
        ("dismissed", (SPLIT, "--evidence", "the treasurer said so"), AGENT),
    ):
        done = ken("add", *args, "--kind", "decision", "--json", env=env)
        assert done.exit_code == 0, done.output
        made[name] = json.loads(done.stdout)["id"]
    assert ken("dismiss", made["dismissed"], "--reason", "wrong").exit_code == 0
    in_(repos["shop"], monkeypatch)
    return made


def test_ken_add_in_an_agents_shell_tells_nothing_of_a_private_repos_same_statement(
    held_private: dict[str, str],
) -> None:
    for text in (FORMULA, RATE, SPLIT):
        args = ("add", text, "--kind", "decision", "--scope", f"repo:{PAYROLL}", "--evidence", "x")
        said = ken(*args, env=AGENT)
        assert said.exit_code == 0, said.output
        assert "added decision" in said.stderr and "(proposed" in said.stderr, said.output
        for leak in (*held_private.values(), "already", "dismissed", "wrong", "payroll/"):
            assert leak not in said.output.replace(f"repo:{PAYROLL}", ""), (text, leak)
        data = json.loads(ken(*args, "--json", env=AGENT).stdout)
        assert data["filed"] is True and data["id"] not in held_private.values()
        assert data["status"] == "proposed" and data["evidence"] == "x"
        assert BOARD not in json.dumps(data) and "payroll" not in data["provenance"]["cwd"]
    # A person's own shell is told of them all, as before.
    mine = ken("add", FORMULA, "--kind", "decision", "--scope", f"repo:{PAYROLL}", "--propose")
    assert mine.exit_code == 0 and short_id(held_private["waiting"]) in mine.stderr


def test_an_agent_is_not_told_of_a_persons_waiting_proposal_but_of_its_own(
    repos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    in_(repos["shop"], monkeypatch)
    persons = "Shop waits: refunds over 500 need two approvals"
    first = json.loads(ken("add", persons, "--propose", "--kind", "decision", "--json").stdout)
    args = ("add", persons, "--kind", "decision", "--evidence", "x", "--json")
    agents = json.loads(ken(*args, env=AGENT).stdout)
    assert agents["filed"] is True and agents["id"] != first["id"]
    again = json.loads(ken(*args, env=AGENT).stdout)  # its own proposal: filed once
    assert again["filed"] is False and again["id"] == agents["id"]


def test_ken_import_in_an_agents_shell_skips_nothing_for_a_private_repos_statement(
    held_private: dict[str, str], tmp_path: Path
) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text(
        "".join(
            json.dumps({"title": text, "kind": "decision", "scope": f"repo:{PAYROLL}"}) + "\n"
            for text in (FORMULA, RATE, SPLIT)
        ),
        encoding="utf-8",
    )
    done = ken("import", str(lines), "--json", env=AGENT)
    assert done.exit_code == 0 and json.loads(done.stdout)["skipped"] == 0, done.output
    mine = ken("import", str(lines), "--json")  # the person's: they are all here
    assert json.loads(mine.stdout)["skipped"] == 3


def test_memory_propose_tells_nothing_of_a_private_repos_same_statement(
    held_private: dict[str, str], repos: dict[str, Path]
) -> None:
    async def proposes(server: Server) -> None:
        for text in (FORMULA, RATE, SPLIT):
            args = {"text": text, "kind": "decision", "scope": f"repo:{PAYROLL}"}
            done = await server.ok("memory_propose", {**args, "evidence": "x"})
            assert done["note"].startswith("proposed"), (text, done["note"])
            assert done["id"] not in held_private.values() and BOARD not in json.dumps(done)

    drive(repos["shop"], proposes)
