"""`ken lint`: what in the store may no longer be true or useful."""

from __future__ import annotations

import json
from dataclasses import replace

from conftest import ken
from helpers import add, opened
from kenning import items, lint
from kenning.model import Kind, Provenance, Scope, ScopeType, Status

LONG_AGO = "2001-01-01T00:00:00.000Z"


def rules(findings) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in findings:
        out.setdefault(f.rule, set()).add(f.title)
    return out


def test_a_clean_store_has_nothing_to_report():
    add("Fresh and linked", links=["https://example.com"])
    result = ken("lint")
    assert result.exit_code == 0
    assert "nothing to report" in result.stderr
    assert json.loads(ken("lint", "--json").stdout) == []


def test_a_link_to_a_missing_file_is_reported_relative_to_where_it_was_written(tmp_path):
    (tmp_path / "exists.md").write_text("x")
    add("Links a real file", links=[f"file:{tmp_path / 'exists.md'}"])
    add("Links a relative file", links=["file:exists.md"], provenance=Provenance(cwd=str(tmp_path)))
    add("Links a gone file", links=[f"file:{tmp_path / 'gone.md'}"])
    add(
        "Links a relative gone file",
        links=["file:gone.md"],
        provenance=Provenance(cwd=str(tmp_path)),
    )
    with opened() as store:
        found = rules(lint.lint(store))
    assert found["missing_file"] == {"Links a gone file", "Links a relative gone file"}


def test_an_expired_task_is_reported_and_a_live_one_is_not():
    with opened() as store:
        store.insert_item(
            replace(
                items.new_item("Stale task", scope=Scope(ScopeType.GLOBAL), kind=Kind.TASK),
                expires_at=LONG_AGO,
            )
        )
        items.add(store, "Live task", scope=Scope(ScopeType.GLOBAL), kind=Kind.TASK)
        found = rules(lint.lint(store))
    assert found["expired_task"] == {"Stale task"}


def test_an_item_unused_for_the_given_days_is_reported():
    add("Old and never used", created_at=LONG_AGO)
    used = add("Old but used", created_at=LONG_AGO)
    add("Brand new")
    add("Old proposal", created_at=LONG_AGO, status=Status.PROPOSED)
    with opened() as store:
        store.record_uses([used.id], "s1", "pack")
        assert rules(lint.lint(store, unused_days=30))["unused"] == {"Old and never used"}
    data = json.loads(ken("lint", "--days", "30", "--json").stdout)
    unused = [f for f in data if f["rule"] == "unused"]
    assert [f["title"] for f in unused] == ["Old and never used"]
    assert unused[0]["detail"] == "never used in 30 days"


def test_days_comes_from_config_when_not_given():
    add("Created a while ago", created_at="2020-06-01T00:00:00.000Z")
    assert ken("config", "set", "lint.unused_days", "36500").exit_code == 0
    assert json.loads(ken("lint", "--json").stdout) == []
    assert ken("lint", "--days", "0").exit_code == 2


def test_duplicates_in_one_scope_are_reported_and_across_scopes_are_not():
    first = add("Use pnpm, not npm!")
    add("use PNPM not npm")
    add("Use pnpm, not npm", scope="project:other")
    with opened() as store:
        found = [f for f in lint.lint(store) if f.rule == "duplicate"]
    assert len(found) == 1
    assert first.id[-6:].lower() in found[0].detail


def test_lint_prints_a_table_and_lint_here_narrows_to_this_folder(git_repo, monkeypatch):
    add("Gone file in repo", links=["file:/nonexistent/a"], scope="repo:github.com/acme/shop")
    add("Gone file elsewhere", links=["file:/nonexistent/b"], scope="project:zzz")
    table = ken("lint").stdout.splitlines()
    assert table[0].split() == ["id", "rule", "title", "detail"]
    assert len(table) == 3
    monkeypatch.chdir(git_repo)
    here = json.loads(ken("lint", "--here", "--json").stdout)
    assert [f["title"] for f in here] == ["Gone file in repo"]


def test_near_duplicates_and_contradictions_are_reported_where_both_apply():
    """DESIGN: lint reports near-duplicates and the contradictions it can see. It found
    only exact copies, while `ken curate` saw both of these."""
    shop, mill = "repo:github.com/acme/shop", "repo:github.com/acme/mill"
    tabs = add("Always use tabs in Go code", kind="preference", scope=shop)
    no_tabs = add("Never use tabs in Go code", kind="preference", scope=shop)
    pnpm = add("Use pnpm, never npm, for installs", kind="preference", scope="global")
    again = add("Use pnpm and never npm for installing", kind="preference", scope=shop)
    add("Never use tabs in Go code", kind="preference", scope=mill)  # another repo's rule
    with opened() as store:
        found = {(f.rule, f.item_id): f.detail for f in lint.lint(store)}
    assert found.pop(("contradiction", no_tabs.id)).startswith(
        f"contradicts {tabs.id[-6:].lower()} in {shop}"
    )
    assert found.pop(("near_duplicate", again.id)).startswith(
        f"says what {pnpm.id[-6:].lower()} says (global)"
    )
    assert not [key for key in found if key[0] in ("contradiction", "near_duplicate")]
