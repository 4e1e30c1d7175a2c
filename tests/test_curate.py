"""`ken curate`: what waits, best first, and what to fold, supersede and retire, as a
plan a person previews and applies."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from conftest import ken
from helpers import add, opened
from kenning import curate, items, plans
from kenning.model import Kind, Scope, ScopeType, Status
from kenning.policy import PERSON, Actor

SHOP = "repo:github.com/acme/shop"
MILL = "repo:github.com/acme/mill"
LONG_AGO = "2001-01-01T00:00:00.000Z"


def proposals(**options):  # type: ignore[no-untyped-def]
    with opened() as store:
        return curate.curate(store, **options)


def by_action(found: curate.Curation, action: str) -> list[curate.Proposal]:
    return [p for p in found.proposals if p.action == action]


def apply_plan(tmp_path: Path, *args: str) -> dict:  # type: ignore[type-arg]
    path = tmp_path / "curate.json"
    result = ken("curate", "--plan", str(path), *args)
    assert result.exit_code == 0, result.stderr
    plan = json.loads(path.read_text())
    digest = plans.parse_plan(plan).digest
    applied = ken("plan", "apply", str(path), "--yes", "--digest", digest)
    assert applied.exit_code == 0, applied.stderr
    return plan


def test_what_waits_is_ranked_rules_first_status_notes_last_then_uses():
    task = add("Finish the refund export", kind="task", status=Status.PROPOSED, scope=SHOP)
    fact = add("The shop runs on Postgres 15", kind="fact", status=Status.PROPOSED, scope=SHOP)
    used = add("The shop's CI is Buildkite", kind="fact", status=Status.PROPOSED, scope=SHOP)
    rule = add("Prefer small pull requests", kind="preference", status=Status.PROPOSED)
    with opened() as store:
        store.record_uses([used.id], None, "test")
    found = proposals()
    assert [i.id for i in found.waiting] == [rule.id, used.id, fact.id, task.id]
    shown = ken("curate").stdout
    assert shown.index(rule.id[-6:].lower()) < shown.index(task.id[-6:].lower())


def test_copies_in_other_words_fold_into_the_best_ranked_one_which_cites_them(tmp_path):
    keep = add("Deploys go through make release", kind="decision", scope=SHOP)
    with opened() as store:
        store.record_uses([keep.id], None, "test")
    other = add("Deploy by running make release", kind="decision", scope=SHOP)
    branch = add(
        "Releases are deployed with make release",
        kind="decision",
        scope="workstream:github.com/acme/shop#csv-export",
    )
    add("Run the smoke tests after a deploy", kind="decision", scope=SHOP)  # look-alike
    [fold] = by_action(proposals(), "fold")
    assert fold.keep is not None and fold.keep.id == keep.id
    assert {i.id for i in fold.items} == {other.id, branch.id}
    plan = apply_plan(tmp_path)
    assert [op["op"] for op in plan["operations"]] == ["retire_into"]
    with opened() as store:
        kept = store.get_item(keep.id)
        assert {x.target for x in kept.links if x.type == "item"} == {other.id, branch.id}
        for gone in (other, branch):
            item = store.get_item(gone.id)
            assert item.status is Status.SUPERSEDED
            assert str(item.links[-1]) == f"item:{keep.id}"
    assert by_action(proposals(), "fold") == []  # folded: nothing more to fold


def test_the_same_statement_in_unrelated_repos_folds_into_one_record_in_global(tmp_path):
    shop = add("Never commit directly to main", kind="preference", scope=SHOP)
    mill = add("Don't push commits straight to the main branch", kind="preference", scope=MILL)
    [fold] = by_action(proposals(), "fold")
    assert fold.keep is None and fold.into_scope == Scope(ScopeType.GLOBAL)
    apply_plan(tmp_path)
    with opened() as store:
        gone = [store.get_item(i.id) for i in (shop, mill)]
        assert {i.status for i in gone} == {Status.SUPERSEDED}
        record = store.get_item(gone[0].links[-1].target)
    assert (record.scope, record.kind, record.status) == (
        Scope(ScopeType.GLOBAL),
        Kind.PREFERENCE,
        Status.ACTIVE,
    )
    assert {x.target for x in record.links} == {shop.id, mill.id}


def test_copies_with_one_in_global_fold_into_that_copy_not_a_new_global_record(tmp_path):
    linked = add("Run the linter with ruff check", kind="fact", scope=SHOP, links=["file:x.py"])
    everywhere = add("Run the linter with ruff check", kind="fact", scope="global")
    short = add("Lint with ruff check", kind="fact", scope=SHOP)
    last = add("lint with Ruff check.", kind="fact", scope=SHOP)
    shown = ken("curate").stdout
    assert f"into {everywhere.id[-6:].lower()}" in shown, shown
    assert "unrelated places" not in shown
    apply_plan(tmp_path)
    with opened() as store:
        assert store.get_item(everywhere.id).status is Status.ACTIVE
        copies = [store.get_item(i.id) for i in (linked, short, last)]
        assert {i.status for i in copies} == {Status.SUPERSEDED}
        assert [i.id for i in store.list_items(items.ItemQuery())] == [everywhere.id]
        assert "file:x.py" in {str(x) for x in copies[0].links}


def test_copies_in_unrelated_repos_fold_into_a_new_global_record_that_keeps_their_sources(
    tmp_path,
):
    shop = add("Run the linter with ruff check", kind="fact", scope=SHOP, links=["file:x.py"])
    mill = add("Lint with ruff check", kind="fact", scope=MILL)
    [fold] = by_action(proposals(), "fold")
    assert fold.keep is None and "unrelated places" in fold.why
    apply_plan(tmp_path)
    with opened() as store:
        record = store.get_item(store.get_item(shop.id).links[-1].target)
        assert record.scope == Scope(ScopeType.GLOBAL) and store.get_item(mill.id).links
        assert {str(x) for x in record.links} >= {"file:x.py", f"item:{shop.id}"}


def added(*args: str, env: dict[str, str] | None = None) -> str:
    """The id `ken add ARGS` gives."""
    return str(json.loads(ken("add", *args, "--json", env=env).stdout)["id"])


def test_the_newer_of_a_reversal_is_what_a_person_stood_behind_last_not_what_was_stored_last():
    """A proposal stored first, a rule added after it, then the proposal approved: the
    card names the change approving it makes, and curation keeps what was approved."""
    claude = {"CLAUDECODE": "1"}
    buildkite = added("Use Buildkite for CI pipelines", "-k", "decision", "-e", "x", env=claude)
    circleci = added("Use CircleCI for CI pipelines", "--kind", "decision")
    card = ken("review", input="q").output
    assert "Use CircleCI for CI pipelines  [this reverses it: CircleCI becomes Buildkite]" in card
    assert ken("approve", buildkite).exit_code == 0
    shown = ken("curate").stdout
    assert f"supersede {circleci[-6:].lower()} by {buildkite[-6:].lower()}" in shown
    assert "CircleCI becomes Buildkite" in shown


def test_a_newer_rule_that_reverses_an_older_one_supersedes_it_once_applied(tmp_path):
    old = add("Use npm for installs", kind="preference", scope=SHOP)
    new = add("Use pnpm, never npm", kind="preference", scope=SHOP)
    [supersede] = by_action(proposals(), "supersede")
    assert supersede.items == (old,) and supersede.keep == new
    assert "npm is rejected now" in supersede.why
    shown = ken("curate").stdout
    assert f"supersede {old.id[-6:].lower()} by {new.id[-6:].lower()}" in shown
    apply_plan(tmp_path)
    with opened() as store:
        gone = store.get_item(old.id)
        assert gone.status is Status.SUPERSEDED and str(gone.links[-1]) == f"item:{new.id}"
        assert store.get_item(new.id).status is Status.ACTIVE


def test_a_reversal_waits_for_review_or_applies_only_where_it_is_said():
    add("Use npm for installs", kind="preference", scope=SHOP)
    proposal = add("Use pnpm, never npm", kind="preference", scope=SHOP, status=Status.PROPOSED)
    branch = add(
        "Use yarn, never npm", kind="preference", scope="workstream:github.com/acme/shop#yarn"
    )
    found = proposals()
    assert by_action(found, "supersede") == []  # the branch's rule holds on its branch only
    assert any(proposal.id[-6:].lower() in note for note in found.notes)
    assert branch.status is Status.ACTIVE
    assert "note: proposal" in ken("curate").stderr


def test_expired_tasks_and_memories_unused_for_the_lint_days_are_retired(tmp_path):
    with opened() as store:
        expired = store.insert_item(
            replace(
                items.new_item("Stale task", scope=Scope(ScopeType.GLOBAL), kind=Kind.TASK),
                expires_at=LONG_AGO,
            )
        )
    unused = add("Old and never used", created_at=LONG_AGO)
    pinned = add("Old but pinned", created_at=LONG_AGO, pinned=True)
    fresh = add("Written today")
    found = proposals()
    retired = {p.items[0].id: p.why for p in by_action(found, "retire")}
    assert set(retired) == {expired.id, unused.id}
    assert retired[expired.id] == "expired task (on 2001-01-01)"
    assert retired[unused.id] == "unused for 90 days (never used)"
    assert {p.items[0].id for p in by_action(proposals(unused_days=100_000), "retire")} == {
        expired.id
    }
    apply_plan(tmp_path)
    with opened() as store:
        gone = store.get_item(unused.id)
        assert (gone.status, gone.archive_reason) == (
            Status.ARCHIVED,
            "unused for 90 days (never used)",
        )
        assert store.get_item(pinned.id).status is Status.ACTIVE
        assert store.get_item(fresh.id).status is Status.ACTIVE


def test_look_alikes_that_say_something_else_are_left_alone():
    add("Use pnpm for the frontend", kind="preference", scope=SHOP)
    add("Use poetry for the backend", kind="preference", scope=SHOP)
    add("Never push directly to main", kind="preference", scope=SHOP)
    add("Never push secrets to the repo", kind="preference", scope=SHOP)
    found = proposals()
    assert found.proposals == ()
    result = ken("curate", "--plan", "nothing.json")
    assert "nothing to fold, supersede or retire" in result.stdout
    assert "no plan written" in result.stderr and not Path("nothing.json").exists()


def test_a_plan_says_which_proposals_it_left_out(tmp_path):
    """It wrote one operation for two proposals and said nothing of the other."""
    add("Use pnpm, never npm", kind="preference", scope=Scope(ScopeType.GLOBAL))
    add("Use npm for installs", kind="preference", scope=SHOP)
    add("Use pnpm for installs, never npm", kind="preference", scope=SHOP)
    listed = proposals().proposals
    left: list[tuple[curate.Proposal, str]] = []
    plan = curate.plan_for(proposals(), left=left)
    assert len(plan["operations"]) + len(left) == len(listed) > len(plan["operations"])
    result = ken("curate", "--plan", str(tmp_path / "p.json"))
    [note] = [line for line in result.stderr.splitlines() if "left out of the plan" in line]
    assert "a memory of it is in an operation before it" in note


def test_a_plan_names_each_memory_once_and_json_gives_the_same_proposals(tmp_path):
    old = add("Use npm for installs", kind="preference", scope=SHOP)
    add("Use pnpm, never npm", kind="preference", scope=SHOP)
    add("Install packages with npm", kind="preference", scope=SHOP, created_at=LONG_AGO)
    data = json.loads(ken("curate", "--json").stdout)
    assert {p["action"] for p in data["proposals"]} >= {"supersede"}
    plan = curate.plan_for(proposals())
    named = [i for op in plan["operations"] for i in (op.get("ids") or [op.get("id")])] + [
        op["into"] for op in plan["operations"] if isinstance(op.get("into"), str)
    ]
    assert len(named) == len(set(named)) and old.id in named
    assert plans.parse_plan(plan).operations  # a valid plan
    with opened() as store:
        done = plans.apply(
            store, plans.parse_plan(plan), digest=plans.parse_plan(plan).digest, actor=PERSON
        )
    assert not done.replayed


def test_agents_proposals_in_unrelated_repos_are_never_folded_into_an_active_global_rule(
    tmp_path,
):
    """Two of codex's proposals saying the same in two repos became, once the plan was
    applied, an active global preference written by "you": a rule no person approved,
    told to every agent everywhere. They wait for review; active copies still fold."""
    codex = Actor("codex")
    shop = add(
        "Always run the linter before pushing",
        kind="preference",
        scope=SHOP,
        status=Status.PROPOSED,
        actor=codex,
        evidence="the person said so",
    )
    mill = add(
        "Run the linter before every push",
        kind="preference",
        scope=MILL,
        status=Status.PROPOSED,
        actor=codex,
        evidence="the person said so",
    )
    found = proposals()
    assert by_action(found, "fold") == []
    assert {i.id for i in found.waiting} == {shop.id, mill.id}
    # One of them approved, the other still waiting: nothing becomes a global rule yet.
    ken("approve", shop.id)
    assert by_action(proposals(), "fold") == []
    ken("approve", mill.id)
    [fold] = by_action(proposals(), "fold")
    assert fold.keep is None and fold.into_scope == Scope(ScopeType.GLOBAL)


def test_an_active_copy_is_never_folded_into_a_proposal():
    add("Deploys go through make release", kind="decision", scope=SHOP)
    add("Deploy by running make release", kind="decision", scope="global", status=Status.PROPOSED)
    # The active repo rule does not cover the global proposal, which waits for review.
    assert by_action(proposals(), "fold") == []


def test_a_proposal_an_active_copy_covers_folds_into_it():
    rule = add("Deploys go through make release", kind="decision", scope=SHOP)
    narrower = add("Deploy with make release", kind="decision", scope=SHOP, status=Status.PROPOSED)
    [fold] = by_action(proposals(), "fold")
    assert fold.keep is not None and fold.keep.id == rule.id
    assert [i.id for i in fold.items] == [narrower.id]


def test_a_pinned_copy_is_the_one_that_stays(tmp_path):
    """A pinned rule was folded away into an unpinned copy, and so left the top of every
    pack: a pin is a person's choice, which only they undo."""
    copy = add("Every review needs two approvals before merging", kind="decision", scope=SHOP)
    with opened() as store:
        store.record_uses([copy.id], None, "test")  # ranked above the pinned one
    pinned = add(
        "Reviews need two approvals before merge", kind="decision", scope=SHOP, pinned=True
    )
    [fold] = by_action(proposals(), "fold")
    assert fold.keep is not None and fold.keep.id == pinned.id
    assert [i.id for i in fold.items] == [copy.id]
    apply_plan(tmp_path)
    with opened() as store:
        assert store.get_item(pinned.id).status is Status.ACTIVE
        assert store.get_item(copy.id).status is Status.SUPERSEDED


def test_a_pinned_copy_a_wider_one_covers_is_left_alone():
    add("Reviews need two approvals before merge", kind="decision", scope=MILL, pinned=True)
    add("Every review needs two approvals before merging", kind="decision", scope="global")
    assert by_action(proposals(), "fold") == []


def test_a_memory_approved_after_a_long_wait_is_not_unused_from_its_creation():
    """A proposal written months ago and approved a moment ago was "never used in 90
    days": lint listed it and curate retired it, undoing the approval."""
    waited = add("Invoices are numbered without gaps", status=Status.PROPOSED, created_at=LONG_AGO)
    assert ken("approve", waited.id).exit_code == 0
    assert by_action(proposals(), "retire") == []
    assert "never used" not in ken("lint").stdout
    old = add("Old and never used", created_at=LONG_AGO)
    assert [p.items[0].id for p in by_action(proposals(), "retire")] == [old.id]


def test_an_agents_revision_of_a_memory_is_left_for_review_and_said_to_supersede_it(git_repo):
    """Curate said of an agent's revision "approving it supersedes nothing by itself"
    (review and `ken show` rightly say it supersedes the original), and offered to fold
    a revision into its original, which would have thrown the new words away unseen."""
    from kenning import proposals as agent_proposals
    from kenning import where as where_mod

    with opened() as store:
        ctx = agent_proposals.AgentContext("codex", where_mod.detect(git_repo, env={}))
        limit = add("Uploads are capped at 10 MB", store, kind="fact", scope="global")
        wider, _ = agent_proposals.update(
            store,
            ctx,
            limit.id,
            "Uploads are capped at 10 MB on the pro plan",
            expected_revision=limit.revision,
            evidence="the person said the pro plan differs",
        )
        tool = add("Use npm for installs", store, kind="preference", scope="global")
        flipped, _ = agent_proposals.update(
            store,
            ctx,
            tool.id,
            "Use pnpm, never npm, for installs",
            expected_revision=tool.revision,
            evidence="the person switched",
        )
    found = proposals()
    assert by_action(found, "fold") == [] and by_action(found, "supersede") == []
    [note] = [n for n in found.notes if flipped.id[-6:].lower() in n]
    assert f"approving it supersedes {tool.id[-6:].lower()}" in note
    assert not any(wider.id[-6:].lower() in n and "nothing" in n for n in found.notes)
