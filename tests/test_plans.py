"""Maintenance plans: every limit refused with the operation's index, previews with a
digest and conflicts, and an apply that a person confirms and that writes everything or
nothing, once.

Concurrency and crashes are real: another `ken` process changes an item between the
plan's check and its transaction, and a process is killed with SIGKILL inside it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from conftest import KEN_BIN, ken, ken_proc
from helpers import add, one_line_error, opened, snapshot
from kenning import items, plans
from kenning.errors import InvalidInput, NeedsPerson, PlanConflict
from kenning.model import Status
from kenning.policy import PERSON, Actor

REPO = "repo:github.com/acme/shop"


def write(tmp_path: Path, plan: dict[str, Any], name: str = "plan.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(plan, indent=2))
    return str(path)


def plan_of(*operations: dict[str, Any], plan_id: str = "cleanup-1") -> dict[str, Any]:
    return {"schema": 1, "id": plan_id, "owner": "dana", "operations": list(operations)}


def stock() -> dict[str, Any]:
    return {
        "npm": add("Use npm for installs", scope=REPO, kind="preference"),
        "task": add("Finish the checkout refactor", scope=REPO, kind="task"),
        "copy1": add("Deploys go through make release", scope=REPO, kind="decision"),
        "copy2": add("Deploy with make release, never by hand", scope=REPO, kind="decision"),
    }


def full_plan(m: dict[str, Any]) -> dict[str, Any]:
    return plan_of(
        {
            "op": "revise",
            "id": m["npm"].id[-6:],
            "expected_revision": m["npm"].revision,
            "text": "Use pnpm for installs, never npm",
            "tags": ["js"],
            "sources": ["src/package.json:3", "https://pnpm.io"],
        },
        {
            "op": "retire",
            "id": m["task"].id,
            "expected_revision": m["task"].revision,
            "reason": "done in March",
        },
        {
            "op": "retire_into",
            "ids": [m["copy1"].id, m["copy2"].id],
            "expected_revisions": {
                m["copy1"].id: m["copy1"].revision,
                m["copy2"].id: m["copy2"].revision,
            },
            "into": {
                "text": "Deploys go through make release, never by hand",
                "kind": "decision",
                "scope": REPO,
            },
        },
        {
            "op": "create",
            "text": "The shop's CI runs on Buildkite",
            "kind": "fact",
            "scope": REPO,
            "evidence": "the person said so",
            "sources": ["item:" + m["npm"].id],
        },
    )


def refused(tmp_path: Path, plan: Any, *, raw: bytes | None = None) -> str:
    """The one line `ken plan validate` refuses `plan` with (nothing is written)."""
    path = tmp_path / "bad.json"
    path.write_bytes(raw if raw is not None else json.dumps(plan).encode())
    result = ken("plan", "validate", str(path))
    assert result.exit_code == 1, result.stdout
    return one_line_error(result.stderr)


# --- validation: one test per limit -------------------------------------------------------


def test_a_well_formed_plan_validates_without_a_store(tmp_path):
    m = stock()
    path = write(tmp_path, full_plan(m))
    os.environ["KEN_DB"] = str(tmp_path / "nowhere" / "absent.db")  # no store is read
    result = ken("plan", "validate", path)
    assert result.exit_code == 0
    assert "valid: plan cleanup-1 by dana, 4 operations" in result.stdout
    assert "1 revise, 1 retire, 1 retire_into, 1 create" in result.stdout
    assert not (tmp_path / "nowhere").exists()


def test_a_plan_over_one_mib_is_refused(tmp_path):
    big = json.dumps(plan_of({"op": "create", "text": "x", "kind": "note", "scope": "global"}))
    line = refused(tmp_path, None, raw=big.encode() + b" " * (1024 * 1024))
    assert "over the 1 MiB limit" in line


def test_text_that_is_not_json_is_refused_with_where(tmp_path):
    line = refused(tmp_path, None, raw=b'{"schema": 1,\n "id": }')
    assert "is not JSON: Expecting value at line 2, column 8" in line


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"schema": 2}, "'schema' must be 1, not 2"),
        ({"id": ""}, "'id' must be a non-empty string"),
        ({"owner": None}, "'owner' must be a non-empty string"),
        ({"owner": "a\nb"}, "'owner' must be one line"),
        ({"extra": 1}, "unknown field 'extra'"),
        ({"operations": []}, "'operations' must be a list of 1 to 100 operations, not 0"),
        ({"operations": "x"}, "'operations' must be a list of 1 to 100 operations, not 'x'"),
    ],
)
def test_the_plan_itself_is_checked(tmp_path, change, said):
    plan = {**plan_of({"op": "create", "text": "x", "kind": "note", "scope": "global"}), **change}
    assert said in refused(tmp_path, plan)


def test_more_than_a_hundred_operations_are_refused(tmp_path):
    op = {"op": "create", "text": "x", "kind": "note", "scope": "global"}
    line = refused(tmp_path, plan_of(*[op] * 101))
    assert "not 101" in line


REV = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
ID = "01ARZ3NDEKTSV4RRFFQ69G5FAW"


@pytest.mark.parametrize(
    ("op", "said"),
    [
        ({"op": "delete", "id": ID}, "operations[1]: 'op' must be one of revise, create"),
        (
            {"op": "retire", "id": ID, "expected_revision": REV, "reason": "x", "why": 1},
            "operations[1] (retire): unknown field 'why'",
        ),
        (
            {"op": "revise", "id": ID, "text": "x"},
            "operations[1] (revise): 'expected_revision' must be the 26-character revision",
        ),
        (
            {"op": "revise", "id": ID, "expected_revision": "abc", "text": "x"},
            "'expected_revision' must be the 26-character revision",
        ),
        (
            {"op": "revise", "id": "zz", "expected_revision": REV, "text": "x"},
            "operations[1] (revise): 'id' must be an item id",
        ),
        (
            {"op": "revise", "id": ID, "expected_revision": REV},
            "a revise changes at least one of text, kind, scope, tags, sources",
        ),
        (
            {"op": "create", "text": "x" * 4097, "kind": "note", "scope": "global"},
            "operations[1] (create): the memory is 4,097 bytes, over the 4 KB limit",
        ),
        (
            {
                "op": "create",
                "text": "x",
                "kind": "note",
                "scope": "global",
                "evidence": "e" * 8193,
            },
            "operations[1] (create): the evidence is 8,193 bytes, over the 8 KB limit",
        ),
        (
            {"op": "create", "text": "x", "kind": "rumour", "scope": "global"},
            "operations[1] (create): unknown kind 'rumour'",
        ),
        (
            {"op": "create", "text": "x", "kind": "note", "scope": "repo"},
            "'scope' must be written out",
        ),
        ({"op": "create", "text": "x", "kind": "note"}, "a create needs scope"),
        (
            {
                "op": "create",
                "text": "x",
                "kind": "note",
                "scope": "global",
                "sources": ["a.py:1"] * 65,
            },
            "'sources' holds 65 locators, over 64",
        ),
        (
            {
                "op": "create",
                "text": "x",
                "kind": "note",
                "scope": "global",
                "sources": ["https://x.io/" + "a" * 4090],
            },
            "sources[0] is 4,103 characters, over 4,096",
        ),
        (
            {
                "op": "create",
                "text": "x",
                "kind": "note",
                "scope": "global",
                "sources": ["somewhere"],
            },
            "sources[0] 'somewhere' is no locator",
        ),
        (
            {
                "op": "create",
                "text": "x",
                "kind": "note",
                "scope": "global",
                "sources": ["item:nope!"],
            },
            "sources[0]: item:nope! does not name a kenning id",
        ),
        (
            {"op": "retire", "id": ID, "expected_revision": REV},
            "operations[1] (retire): a retire needs a 'reason'",
        ),
        (
            {"op": "retire", "id": ID, "expected_revision": REV, "reason": "r" * 201},
            "the archive reason is 201 characters, over 200",
        ),
        (
            {
                "op": "retire_into",
                "ids": [ID],
                "expected_revisions": {},
                "into": {"text": "x", "kind": "note", "scope": "global"},
            },
            "'expected_revisions' has no revision for",
        ),
        (
            {"op": "retire_into", "ids": [ID], "expected_revisions": {ID: REV}, "into": REV},
            "'expected_revisions' needs the revision of 'into'",
        ),
        (
            {"op": "retire_into", "ids": [ID], "expected_revisions": {ID: REV}, "into": ID},
            "'into' is one of the ids it retires",
        ),
        (
            {"op": "retire_into", "ids": [ID], "expected_revisions": {ID: REV}, "into": 7},
            "'into' must be an existing item's id or a new record",
        ),
        (
            {
                "op": "retire_into",
                "ids": [ID, ID.lower()],
                "expected_revisions": {ID: REV},
                "into": {"text": "x", "kind": "note", "scope": "global"},
            },
            "'ids' names an item twice",
        ),
    ],
)
def test_every_operation_limit_is_refused_with_the_operations_index(tmp_path, op, said):
    first = {"op": "create", "text": "A fine memory", "kind": "note", "scope": "global"}
    line = refused(tmp_path, plan_of(first, op))
    assert said in line, line


def test_an_id_in_two_operations_is_refused_as_written_and_as_resolved(tmp_path):
    m = stock()
    npm = m["npm"]
    twice = plan_of(
        {"op": "retire", "id": npm.id, "expected_revision": npm.revision, "reason": "x"},
        {"op": "revise", "id": npm.id.lower(), "expected_revision": npm.revision, "text": "y"},
    )
    assert "operations[1] (revise) names item" in refused(tmp_path, twice)
    assert "operations[0] names too: an id may be in one operation only" in refused(tmp_path, twice)
    # The full id and the short one name the same item: found once the store resolves them.
    short_and_full = plan_of(
        {"op": "retire", "id": npm.id, "expected_revision": npm.revision, "reason": "x"},
        {"op": "revise", "id": npm.id[-6:], "expected_revision": npm.revision, "text": "y"},
    )
    path = write(tmp_path, short_and_full)
    assert ken("plan", "validate", path).exit_code == 0
    result = ken_proc("plan", "preview", path)
    assert result.returncode == 1
    assert "operations[1] (revise): it names item" in one_line_error(result.stderr)


# --- preview: before and after, digest, conflicts -----------------------------------------


def test_preview_shows_before_and_after_and_a_canonical_digest(tmp_path):
    m = stock()
    plan = full_plan(m)
    path = write(tmp_path, plan)
    before = snapshot()
    result = ken("plan", "preview", path)
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "[0] revise" in text and "before: " in text and "Use npm for installs" in text
    assert "after:  " in text and "Use pnpm for installs, never npm" in text
    assert "reason: done in March" in text
    data = json.loads(ken("plan", "preview", path, "--json").stdout)
    assert data["digest"].startswith("sha256:") and len(data["digest"]) == 71
    assert data["conflicts"] == [] and data["applied"] is False
    assert [op["op"] for op in data["operations"]] == ["revise", "retire", "retire_into", "create"]
    assert data["operations"][2]["after"][0]["text"].startswith("Deploys go through make")
    assert [v["status"] for v in data["operations"][2]["after"][1:]] == ["superseded"] * 2
    # What the plan creates has no id until applied: the preview named one apply never used.
    made = [data["operations"][2]["after"][0], data["operations"][3]["after"][0]]
    assert [(v["id"], v["short_id"]) for v in made] == [(None, "new")] * 2
    assert all("item:new" in v["links"] for v in data["operations"][2]["after"][1:])
    # Same plan, other layout and key order: same digest. Another expected revision: not.
    shuffled = json.loads(json.dumps(plan), object_pairs_hook=lambda kv: dict(reversed(kv)))
    (tmp_path / "same.json").write_text(json.dumps(shuffled, separators=(",", ":")))
    again = json.loads(ken("plan", "preview", str(tmp_path / "same.json"), "--json").stdout)
    assert again["digest"] == data["digest"]
    plan["operations"][0]["expected_revision"] = m["task"].revision
    other = plans.parse_plan(plan)
    assert other.digest != data["digest"]
    assert snapshot() == before  # a preview writes nothing


def test_each_conflict_blocks_apply_and_nothing_is_written(tmp_path):
    m = stock()
    path = write(tmp_path, full_plan(m))
    digest = plans.read_plan(Path(path).read_bytes()).digest
    assert ken("update", m["npm"].id[-6:], "--text", "Use yarn for installs").exit_code == 0
    assert ken("archive", m["task"].id[-6:]).exit_code == 0
    with opened() as store:
        items.forget(store, [store.get_item(m["copy1"].id)])
    before = snapshot()

    result = ken_proc("plan", "preview", path)
    assert result.returncode == 1
    assert "3 conflicts block applying this plan" in result.stderr
    data = json.loads(ken_proc("plan", "preview", path, "--json").stdout)
    assert [(c["index"], c["code"]) for c in data["conflicts"]] == [
        (0, "revision_changed"),
        (1, "revision_changed"),  # archiving made a version too
        (2, "target_missing"),
    ]
    result = ken_proc("plan", "apply", path, "--yes", "--digest", digest[7:19])
    line = one_line_error(result.stderr)
    assert result.returncode == 1 and "the plan conflicts with the store" in line
    assert "CONFLICT target_missing" in result.stdout  # what blocks it, per operation
    assert "nothing was applied" in line
    assert snapshot() == before


def test_retiring_what_is_retired_already_is_a_conflict(tmp_path):
    old = add("An archived memory", status=Status.ARCHIVED)
    path = write(
        tmp_path,
        plan_of({"op": "retire", "id": old.id, "expected_revision": old.revision, "reason": "x"}),
    )
    data = json.loads(ken_proc("plan", "preview", path, "--json").stdout)
    assert [c["code"] for c in data["conflicts"]] == ["already_retired"]


# --- apply ----------------------------------------------------------------------------------


def applied(path: str, digest: str) -> subprocess.CompletedProcess[str]:
    return ken_proc("plan", "apply", path, "--yes", "--digest", digest.removeprefix("sha256:")[:12])


def test_apply_writes_every_operation_and_a_receipt_and_a_replay_writes_nothing(tmp_path):
    m = stock()
    path = write(tmp_path, full_plan(m))
    digest = plans.read_plan(Path(path).read_bytes()).digest
    assert ken_proc("plan", "receipt", path).returncode == 1  # not applied yet

    result = applied(path, digest)
    assert result.returncode == 0, result.stderr
    assert "applied plan cleanup-1: 4 operations, 6 items written" in result.stderr
    with opened() as store:
        npm = store.get_item(m["npm"].id)
        assert npm.title == "Use pnpm for installs, never npm" and npm.tags == ("js",)
        assert {str(x) for x in npm.links} == {"file:src/package.json:3", "https://pnpm.io"}
        task = store.get_item(m["task"].id)
        assert (task.status, task.archive_reason) == (Status.ARCHIVED, "done in March")
        folded = [store.get_item(m[k].id) for k in ("copy1", "copy2")]
        assert {i.status for i in folded} == {Status.SUPERSEDED}
        into = {x.target for i in folded for x in i.links if x.type == "item"}
        assert len(into) == 1
        record = store.get_item(into.pop())
        assert record.status is Status.ACTIVE and record.provenance.how == "plan"
        assert {x.target for x in record.links} == {m["copy1"].id, m["copy2"].id}
        assert store.revisions(m["npm"].id)[-1].change == "plan:revise"
    receipt = ken_proc("plan", "receipt", path)
    assert receipt.returncode == 0 and receipt.stdout.startswith("applied: plan cleanup-1")
    after = snapshot()

    again = applied(path, digest)
    assert again.returncode == 0 and "nothing written now" in again.stderr
    assert snapshot() == after
    # Its preview now says it was applied, not that its own writes conflict with it.
    shown = ken_proc("plan", "preview", path)
    assert shown.returncode == 0 and "was applied at" in shown.stderr
    assert "CONFLICT" not in shown.stdout + shown.stderr
    first = json.loads(ken_proc("plan", "receipt", path, "--json").stdout)["receipt"]
    replay = json.loads(
        ken_proc("plan", "apply", path, "--yes", "--digest", digest, "--json").stdout
    )
    assert replay["replayed"] is True and replay["applied_at"] == first["applied_at"]


def test_a_plans_id_and_owner_are_redacted_where_they_are_shown_and_kept(tmp_path, db_path):
    token = "ghp_y1QmbnwZSkNeid6s84wLpoSQUqsjhygVumj0"
    plan = plan_of(
        {"op": "create", "text": "CI runs on Buildkite", "kind": "fact", "scope": REPO},
        plan_id=f"cleanup-{token}",
    )
    plan["owner"] = "dana AKIASSMD03KI4THVY39R"
    path = write(tmp_path, plan)
    digest = plans.read_plan(Path(path).read_bytes()).digest
    shown = ken_proc("plan", "preview", path)
    assert shown.returncode == 0
    result = applied(path, digest)
    assert result.returncode == 0, result.stderr
    said = shown.stdout + shown.stderr + result.stdout + result.stderr
    assert "cleanup-[redacted:github_token]" in said
    for secret in (token, "AKIASSMD03KI4THVY39R"):
        assert secret not in said
        with opened() as store:
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert secret.encode() not in db_path.read_bytes()


def test_apply_needs_a_person_and_the_digest_they_saw(tmp_path):
    m = stock()
    path = write(tmp_path, full_plan(m))
    digest = plans.read_plan(Path(path).read_bytes()).digest
    before = snapshot()
    # Piped, with no --yes: no person to ask.
    line = one_line_error(ken_proc("plan", "apply", path).stderr)
    assert "applying a plan needs a person" in line
    assert ken_proc("plan", "apply", path, "--yes").returncode == 2  # --yes needs --digest
    wrong = ken_proc("plan", "apply", path, "--yes", "--digest", "0" * 12)
    assert "does not match" in one_line_error(wrong.stderr)
    short = ken_proc("plan", "apply", path, "--yes", "--digest", digest[7:15])
    assert "at least 12 characters" in one_line_error(short.stderr)
    # An agent's shell: refused even with --yes and the right digest (no terminal to ask).
    agent = ken_proc("plan", "apply", path, "--yes", "--digest", digest, env={"KEN_AGENT": "codex"})
    assert agent.returncode == 1 and "needs a person" in agent.stderr
    with opened() as store, pytest.raises(NeedsPerson):
        plans.apply(
            store,
            plans.read_plan(Path(path).read_bytes()),
            digest=digest,
            actor=Actor(agent="claude"),
        )
    assert snapshot() == before
    # A person applies it, with the digest they saw.
    with opened() as store:
        done = plans.apply(
            store, plans.read_plan(Path(path).read_bytes()), digest=digest, actor=PERSON
        )
    assert not done.replayed and snapshot() != before


def test_a_plan_id_applied_with_other_contents_is_refused(tmp_path):
    m = stock()
    plan = plan_of({"op": "create", "text": "First", "kind": "note", "scope": "global"})
    path = write(tmp_path, plan)
    assert applied(path, plans.parse_plan(plan).digest).returncode == 0
    plan["operations"][0]["text"] = "Second"
    path = write(tmp_path, plan)
    # The preview says so, as apply does (it previewed clean, exit 0).
    shown = ken_proc("plan", "preview", path)
    assert shown.returncode == 1, shown.stdout
    assert "CONFLICT id_applied: plan 'cleanup-1' was applied already" in shown.stdout
    assert "1 conflict block applying this plan" in shown.stderr
    as_json = json.loads(ken_proc("plan", "preview", path, "--json").stdout)
    assert [(c["index"], c["code"]) for c in as_json["conflicts"]] == [(-1, "id_applied")]
    result = applied(path, plans.parse_plan(plan).digest)
    assert "was applied already with other contents" in one_line_error(result.stderr)
    receipt = ken_proc("plan", "receipt", path)
    assert receipt.returncode == 1 and "other contents under the id cleanup-1" in receipt.stderr
    assert m  # the store still holds the stock


def test_the_store_rechecks_revisions_inside_the_transaction(tmp_path):
    """The library's own check passes; the item moves on before the transaction; the store
    refuses the whole plan."""
    m = stock()
    plan = plans.parse_plan(full_plan(m))
    with opened() as store:
        seen = plans.preview(store, plan)
        changes = [c for s in seen.steps for c in s.changes]
        items.change(store, m["copy2"].id, text="Deploys use make release", actor=PERSON)
        before = snapshot()
        with pytest.raises(PlanConflict) as caught:
            store.apply_plan(plan.digest, plan.id, plan.owner, changes, [])
        assert [(c.index, c.code) for c in caught.value.conflicts] == [(2, "revision_changed")]
        assert store.plan_receipt(plan.digest) is None
    assert snapshot() == before


# --- processes racing and dying -------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kenning import plans
    from kenning.errors import PlanConflict
    from kenning.policy import PERSON
    from kenning.store import open_store

    path, pause_on = sys.argv[1], sys.argv[2]
    store = open_store()
    plan = plans.read_plan(Path(path).read_bytes())

    def trace(statement):
        # Stop once at the first statement that starts with `pause_on`, say so, and wait
        # for the parent (which may change the store, or kill this process).
        if pause_on != "after" and statement.lstrip().startswith(pause_on) and trace.armed:
            trace.armed = False
            print("paused", flush=True)
            sys.stdin.readline()

    trace.armed = True
    store.conn.set_trace_callback(trace)
    try:
        done = plans.apply(store, plan, digest=plan.digest, actor=PERSON)
    except PlanConflict as exc:
        print("conflict", [c.code for c in exc.conflicts], flush=True)
        sys.exit(3)
    print("applied", flush=True)
    if pause_on == "after":
        sys.stdin.readline()
    """
)


def child(path: str, pause_on: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, path, pause_on],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def wait_for(proc: subprocess.Popen[str], word: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()  # bounded: the child either prints or exits
    assert line.strip() == word, (line, proc.stderr.read() if proc.stderr else "")


def test_an_apply_racing_a_concurrent_update_rolls_back_whole(tmp_path):
    m = stock()
    path = write(tmp_path, full_plan(m))
    with child(path, "BEGIN IMMEDIATE") as proc:
        wait_for(proc, "paused")  # checked, and about to take the write lock
        update = ken_proc("update", m["copy1"].id[-6:], "--text", "Deploys use the release job")
        assert update.returncode == 0, update.stderr
        before = snapshot()
        out, err = proc.communicate("\n", timeout=60)
    assert proc.returncode == 3, err
    assert "conflict ['revision_changed']" in out
    assert snapshot() == before
    assert ken_proc("plan", "receipt", path).returncode == 1


@pytest.mark.parametrize("where", ["UPDATE items", "INSERT INTO plan_receipts", "after"])
def test_a_plan_killed_mid_apply_leaves_all_or_nothing_and_receipt_says_which(tmp_path, where):
    m = stock()
    path = write(tmp_path, full_plan(m))
    before = snapshot()
    with child(path, where) as proc:
        wait_for(proc, "applied" if where == "after" else "paused")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    receipt = ken_proc("plan", "receipt", path, "--json")
    after = snapshot()
    if where == "after":
        assert receipt.returncode == 0 and json.loads(receipt.stdout)["applied"] is True
        with opened() as store:
            assert store.get_item(m["npm"].id).title == "Use pnpm for installs, never npm"
            assert store.get_item(m["task"].id).status is Status.ARCHIVED
        assert len(after) == len(before) + 2  # the folded record and the created fact
    else:
        assert receipt.returncode == 1 and json.loads(receipt.stdout)["applied"] is False
        assert after == before
        # Nothing of it stuck: applying it now works, whole.
        assert applied(path, plans.read_plan(Path(path).read_bytes()).digest).returncode == 0
        assert ken_proc("plan", "receipt", path).returncode == 0


def test_the_library_refuses_a_plan_with_a_conflict_before_the_store_is_asked(tmp_path):
    m = stock()
    plan = plans.parse_plan(full_plan(m))
    with opened() as store:
        items.set_status(store, m["task"].id, "archive", actor=PERSON)
        with pytest.raises(PlanConflict, match="operations\\[1\\] revision_changed"):
            plans.apply(store, plan, digest=plan.digest, actor=PERSON)
        with pytest.raises(InvalidInput, match="does not match"):
            plans.apply(store, plan, digest="sha256:" + "f" * 12, actor=PERSON)


def test_a_true_digest_prefix_too_short_to_confirm_is_said_to_be_too_short():
    """`--digest 64ff3dbc`, the start of the digest, was said not to match it."""
    m = stock()
    plan = plans.parse_plan(full_plan(m))
    short = plan.digest.removeprefix("sha256:")[:8]
    with opened() as store, pytest.raises(InvalidInput) as refused:
        plans.apply(store, plan, digest=short, actor=PERSON)
    assert str(refused.value).startswith(f"--digest {short} is too short to confirm the plan")
    assert "at least 12 characters" in str(refused.value)


@pytest.mark.parametrize("answer", ["y", "n"])
def test_at_a_terminal_apply_shows_owner_count_and_digest_and_asks(tmp_path, answer):
    m = stock()
    path = write(tmp_path, full_plan(m))
    digest = plans.read_plan(Path(path).read_bytes()).digest
    before = snapshot()
    primary, secondary = os.openpty()
    try:
        os.write(primary, f"{answer}\n".encode())  # typed ahead: the terminal holds it
        done = subprocess.run(
            [str(KEN_BIN), "plan", "apply", path],
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )
    finally:
        os.close(secondary)
        os.close(primary)
    question = f"Apply plan cleanup-1 by dana: 4 operations, digest {digest[7:19]}? [y/N]"
    assert question in done.stderr
    # What each operation changes is shown before the question, from the plan applied:
    # a file rewritten after `ken plan preview` was asked about by its count alone.
    shown = done.stderr.split(question)[0]
    assert "[0] " in shown and "before: " in shown and "after: " in shown
    if answer == "y":
        assert done.returncode == 0 and "applied plan cleanup-1" in done.stderr
        assert ken_proc("plan", "receipt", path).returncode == 0
    else:
        assert done.returncode == 1 and "nothing applied" in done.stderr
        assert snapshot() == before


def test_a_plan_writing_to_a_project_no_one_registered_is_refused_at_preview_and_apply(
    tmp_path,
):
    # The tester's repro: a drafted plan's `create` into project:nope, applied with --yes
    # --digest, wrote an active memory in a project that does not exist. As `ken add`
    # refuses it, so does a plan, wherever it is applied from.
    plan = plan_of(
        {"op": "create", "text": "Cart rule", "kind": "note", "scope": "project:nope"},
        {"op": "create", "text": "Shop rule", "kind": "note", "scope": REPO},
    )
    path = write(tmp_path, plan)
    digest = plans.read_plan(Path(path).read_bytes()).digest
    said = "operations[0]: there is no project 'nope' (`ken project list` shows them)"

    shown = ken_proc("plan", "preview", path)
    done = applied(path, digest)

    assert shown.returncode == 1 and said in one_line_error(shown.stderr)
    assert done.returncode == 1 and said in one_line_error(done.stderr)
    nope = r"operations\[0\]: there is no project 'nope'"
    with opened() as store, pytest.raises(InvalidInput, match=nope):
        plans.apply(store, plans.parse_plan(plan), digest=digest, actor=PERSON)
    with opened() as store:
        assert store.count_items() == 0  # nothing written, not even operations[1]
        store.add_project("nope", str(tmp_path), None)
    assert applied(path, digest).returncode == 0


def test_a_preview_names_every_operation_refused_a_secret_included(tmp_path):
    """A secret was refused with no operation named, and only the first refusal said."""
    secret = "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 is the key"
    plan = {
        "schema": 1,
        "id": "p6",
        "owner": "me",
        "operations": [
            {"op": "create", "text": secret, "kind": "fact", "scope": "global"},
            {"op": "create", "text": "A fact", "kind": "fact", "scope": "global"},
            {"op": "create", "text": secret + " again", "kind": "fact", "scope": "global"},
        ],
    }
    result = ken_proc("plan", "preview", write(tmp_path, plan))
    said = one_line_error(result.stderr)
    assert result.returncode == 1
    assert "operations[0] (create): this looks like a secret" in said
    assert "operations[2] (create): this looks like a secret" in said
    assert "operations[1]" not in said and "ghp_" not in said
