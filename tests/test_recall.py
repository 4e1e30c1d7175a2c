"""Per-prompt recall: the rules in recall.py's docstring, one by one, and `ken recall`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conftest import ken
from helpers import opened
from kenning import ids, items
from kenning.model import Item, Status
from kenning.pack import render_item
from kenning.recall import HEADER, Recall, RecallSettings, recall
from kenning.tokens import estimate_tokens

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SCOPES = ["global"]


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@pytest.fixture
def store() -> Iterator[object]:
    with opened() as opened_store:
        yield opened_store


def put(
    store,
    text: str,
    *,
    kind: str = "note",
    days_old: float = 0.0,
    reviewed_days_old: float | None = None,
    scope: str = "global",
    status: Status = Status.ACTIVE,
) -> Item:
    """An item last changed `days_old` days before NOW (and reviewed, if given)."""
    item = items.new_item(
        text, scope=items.parse_scope(scope), kind=items.parse_kind(kind), status=status
    )
    changed = iso(NOW - timedelta(days=days_old))
    reviewed = (
        iso(NOW - timedelta(days=reviewed_days_old)) if reviewed_days_old is not None else None
    )
    return store.insert_item(
        replace(item, created_at=changed, updated_at=changed, reviewed_at=reviewed)
    )


def ask(store, prompt: str, **options) -> Recall:
    settings = options.pop("settings", None) or RecallSettings()
    return recall(
        store, prompt, options.pop("scopes", SCOPES), settings=settings, now=NOW, **options
    )


def kept_ids(result: Recall) -> list[str]:
    return [c.item.id for c in result.kept]


def by_id(result: Recall) -> dict[str, object]:
    return {c.item.id: c for c in result.candidates}


# ----------------------------------------------------------------------------- words


def test_filler_and_stop_words_are_not_content(store) -> None:
    put(store, "Help with this thing\nPlease look at the stuff you want to know")
    result = ask(store, "hey, can you please help me with this thing? thanks!")
    assert result.query_terms == ()
    assert result.candidates == () and result.text == ""


def test_both_sides_are_stemmed_alike(store) -> None:
    rotate = put(store, "Rotate staging credentials monthly")
    result = ask(store, "when are we rotating the staging credential?")
    assert kept_ids(result) == [rotate.id]
    assert set(by_id(result)[rotate.id].shared) == {"rotating", "staging", "credential"}


def test_words_in_no_item_do_not_find_anything(store) -> None:
    put(store, "Rotate staging credentials monthly")
    result = ask(store, "xylophone quokka")
    assert result.candidates == ()
    assert result.text == ""


def test_synonyms_abbreviations_and_irregular_forms_match(store) -> None:
    hand = put(store, "Never run migrations against the production database by hand")
    laptop = put(store, "Ines bought the team laptops in March")
    assert kept_ids(ask(store, "ok to migrate the prod db manually?")) == [hand.id]
    assert set(by_id(ask(store, "ok to migrate the prod db manually?"))[hand.id].shared) == {
        "migrate",
        "prod",
        "db",
    }
    assert kept_ids(ask(store, "who buys the team laptops?")) == [laptop.id]


def test_a_typo_matches_the_stored_word_one_letter_away(store) -> None:
    rotate = put(store, "Rotate staging credentials monthly")
    result = ask(store, "how often do we roatte the staging credentials")
    assert kept_ids(result) == [rotate.id]
    assert "roatte" in by_id(result)[rotate.id].shared


def test_a_pasted_run_of_letters_is_not_looked_up_as_a_typo(store, monkeypatch) -> None:
    """A word's edits grow with its length squared: 'abc' * 1000 in a prompt took the hook
    5 s, and a run of 5,000 letters passed the agent's hook timeout."""
    import kenning.recall as recall_module

    put(store, "Rotate staging credentials monthly")
    looked: list[str] = []
    real = recall_module.edits

    def counted(stem: str) -> frozenset[str]:
        looked.append(stem)
        return real(stem)

    monkeypatch.setattr(recall_module, "edits", counted)
    ask(store, "roatte " + "abc" * 1000 + " " + "x" * 3000)
    assert looked and max(len(s) for s in looked) <= recall_module.MAX_TYPO


def test_a_typo_that_breaks_the_ending_the_stemmer_cuts_still_matches(store) -> None:
    deploys = put(store, "Deploys to staging go through Kamal")
    result = ask(store, "how do I deploy to stagng")
    assert kept_ids(result) == [deploys.id]
    assert "stagng" in by_id(result)[deploys.id].shared


def test_a_word_matches_a_longer_or_shorter_word_it_starts(store) -> None:
    suite = put(store, "Integration tests need the Postgres container from docker compose")
    config = put(store, "Configuration lives in config/settings.toml, one file per environment")
    assert kept_ids(ask(store, "the integ tests can't reach postgres")) == [suite.id]
    assert kept_ids(ask(store, "where does the configuration for each env live")) == [config.id]


def test_camel_case_words_and_words_typed_apart_match(store) -> None:
    snapshots = put(store, "No snapshot tests for React components\nAssert on visible text.")
    account = put(store, "The session callback adds accountId to every request")
    assert kept_ids(ask(store, "should I use toMatchSnapshot for the card component?")) == [
        snapshots.id
    ]
    assert kept_ids(ask(store, "how do I get the account id in the session callback")) == [
        account.id
    ]


def test_a_broad_word_and_the_kinds_of_it_match_each_other_but_two_kinds_do_not(store) -> None:
    suite = put(store, "Integration tests run against a real Postgres, started by compose")
    result = ask(store, "which database do the integration tests talk to?")
    assert kept_ids(result) == [suite.id]
    assert "database" in by_id(result)[suite.id].shared
    other = ask(store, "which mysql do the integration tests talk to?")
    assert "mysql" not in by_id(other)[suite.id].shared


def test_a_phrase_matches_the_word_it_stands_for_even_around_a_short_word(store) -> None:
    worker = put(store, "Start the billing worker with `just worker`\nIt needs Redis.")
    for prompt in ("how do I kick off the billing worker", "kick it off, the billing worker"):
        result = ask(store, prompt)
        assert kept_ids(result) == [worker.id], prompt
        assert "kick" in by_id(result)[worker.id].shared, prompt


def test_british_and_american_spellings_match(store) -> None:
    colors = put(store, "Brand colors live in tokens.css\nNever hard-code a hex value.")
    put(store, "The office walls: colours are up for a vote")  # so "colours" is no typo
    result = ask(store, "where are the brand colours defined")
    assert "colours" in by_id(result)[colors.id].shared
    assert kept_ids(result) == [colors.id]


def test_a_word_of_the_memory_counts_for_one_prompt_word_only(store) -> None:
    mocks = put(store, "Never mock the database in integration tests")
    # "fake" and "stub" both stand for mock: the memory's one "mock" matches one of them.
    shared = by_id(ask(store, "can I fake or stub the db in integration tests?"))[mocks.id].shared
    assert len({"fake", "stub"} & set(shared)) == 1
    assert {"db", "integration", "tests"} <= set(shared)


def test_a_word_the_stemmer_cuts_to_a_stop_word_is_still_content(store) -> None:
    from kenning.recall import content_words

    words = content_words(store, "why is staging down every evening")
    assert "evening" in words.values()
    assert "every" not in words.values()


def test_the_repo_a_prompt_names_says_where_not_what(store) -> None:
    scopes = ["repo:github.com/acme/relay", "global"]
    slog = put(store, "Log with slog and the JSON handler", scope=scopes[0])
    elsewhere = put(store, "Log lines carry a request id", scope="repo:github.com/acme/shop")
    result = ask(store, "how should logs in relay look", scopes=[*scopes, str(elsewhere.scope)])
    found = by_id(result)
    # The memory in relay counts "relay" as matched, though its text does not say it.
    assert "relay" in found[slog.id].shared
    assert kept_ids(result)[0] == slog.id


def test_a_match_in_the_title_or_tags_counts_for_more_than_one_in_the_body(store) -> None:
    title = put(store, "Snapshot tests use insta\nReview them with cargo insta review.")
    body = put(store, "Rendering checks\nThe HTML output is compared with insta in CI.")
    found = by_id(ask(store, "insta", settings=RecallSettings(min_score=0, min_shared=0)))
    assert found[title.id].relevance > found[body.id].relevance


def test_words_of_a_request_weigh_less_than_its_topic(store) -> None:
    helper = put(store, "Explain what the retry function in the webhook handler does")
    assert kept_ids(ask(store, "explain this function")) == []
    assert kept_ids(ask(store, "explain the webhook retry")) == [helper.id]


# ----------------------------------------------------------------------------- gates


def stock_filler(store, count: int = 150) -> None:
    """Unrelated memories, so that word weights are those of a lived-in store."""
    topics = ["lunch menu", "office plants", "parking rota", "holiday calendar", "desk booking"]
    for n in range(count):
        put(store, f"Note {n} about the {topics[n % len(topics)]}\nNothing about code here.")


def test_one_common_word_is_not_enough(store) -> None:
    stock_filler(store)
    strong = put(store, "Rotate staging credentials monthly")
    weak = put(store, "Office credentials for the printer are on the fridge")
    result = ask(store, "when do we rotate the staging credentials")
    assert kept_ids(result) == [strong.id]
    dropped = by_id(result)[weak.id]
    assert not dropped.kept
    assert dropped.shared == ("credentials",)
    assert dropped.reason.startswith("relevance ")


def test_a_prompt_that_needs_no_memory_gets_nothing(store) -> None:
    stock_filler(store)
    put(store, "Invoice numbers are gapless per account\nThey come from invoice_sequences.")
    result = ask(store, "rename the variable inv to invoice in this function")
    assert result.candidates  # it shares a word with the memory...
    assert result.kept == () and result.text == ""  # ...and is told nothing


def test_relevance_is_the_matched_share_of_the_prompt_capped_for_long_prompts(store) -> None:
    stock_filler(store)
    pool = put(store, "QueuePool limit reached\nRaise pool_size for the sqlalchemy workers.")
    log = "sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached " + " ".join(
        f"frame{n} at 0x{n:04x}" for n in range(40)
    )
    result = ask(store, log)
    # Eighty words of the log match nothing, yet the few rare ones that match are enough.
    assert kept_ids(result) == [pool.id]
    assert by_id(result)[pool.id].relevance > 0.6


def test_memories_far_below_the_best_are_left_out(store) -> None:
    stock_filler(store)
    best = put(store, "Payments webhook retries are disabled\nStripe retries for us.")
    weaker = put(
        store,
        "Runbook for payment drills\nDuring drills the webhook retries are switched off, "
        "along with the queue consumers, the cron jobs and the nightly exports.",
    )
    result = ask(store, "why are payments webhook retries disabled?")
    assert kept_ids(result) == [best.id]
    assert by_id(result)[weaker.id].reason.startswith("score 0.")
    everything = ask(
        store,
        "why are payments webhook retries disabled?",
        settings=RecallSettings(min_score=0.0, min_shared=0),
    )
    assert kept_ids(everything) == [best.id, weaker.id]


def test_min_shared_counts_the_prompt_words_a_memory_matches(store) -> None:
    stock_filler(store)
    rotate = put(store, "Rotate staging credentials monthly")
    result = ask(
        store, "when do we rotate the staging credentials", settings=RecallSettings(min_shared=4)
    )
    assert kept_ids(result) == []
    assert by_id(result)[rotate.id].reason == "shares 3 content word(s), needs 4"


def test_excluded_other_scopes_and_inactive_items_are_never_candidates(store) -> None:
    told = put(store, "Rotate staging credentials monthly")
    elsewhere = put(store, "Rotate staging credentials weekly", scope="repo:github.com/a/b")
    proposed = put(store, "Rotate staging credentials daily", status=Status.PROPOSED)
    fresh = put(store, "Rotate staging credentials yearly")
    result = ask(store, "rotate the staging credentials", exclude={told.id})
    ids = set(by_id(result))
    assert ids == {fresh.id}
    assert not ids & {told.id, elsewhere.id, proposed.id}


def test_told_memories_never_hide_untold_ones_among_the_candidates(store) -> None:
    # 45 told memories match better than the untold one; they would fill the candidates
    # if the told ones were left out only after choosing.
    for n in range(400):
        put(store, f"Lunch order {n}\nSoup on Mondays, noodles otherwise")
    told = [put(store, f"Rotate staging credentials {n}", kind="fact") for n in range(45)]
    untold = put(store, "Rotate the vendor's staging credentials before the audit")
    prompt = "rotate the staging credentials"
    assert untold.id not in {c.item.id for c in ask(store, prompt).candidates}
    result = ask(store, prompt, exclude={item.id for item in told})
    assert kept_ids(result) == [untold.id]


# ----------------------------------------------------------------------------- rank


def test_a_title_match_ranks_above_the_same_word_in_a_body(store) -> None:
    body = put(store, "Release checklist\nRun the smoke tests, then tag the release.")
    title = put(store, "Smoke tests run against staging\nThey take four minutes.")
    result = ask(store, "the smoke tests", settings=RecallSettings(min_score=0, min_shared=0))
    assert kept_ids(result) == [title.id, body.id]


def test_a_specific_scope_ranks_above_a_global_memory_of_the_same_words(store) -> None:
    mine = put(store, "Vendor the protobuf schemas", scope="workstream:github.com/a/b#feat")
    repo = put(store, "Vendor the protobuf schemas", scope="repo:github.com/a/b")
    everywhere = put(store, "Vendor the protobuf schemas")
    scopes = ["workstream:github.com/a/b#feat", "repo:github.com/a/b", "global"]
    result = ask(store, "should we vendor protobuf schemas?", scopes=scopes)
    assert kept_ids(result) == [mine.id, repo.id, everywhere.id]
    found = by_id(result)
    assert found[mine.id].weight == pytest.approx(1.1)
    assert found[repo.id].weight == pytest.approx(1.0)
    assert found[everywhere.id].weight == pytest.approx(0.9)


def test_rule_weight_scales_preferences_and_corrections(store) -> None:
    note = put(store, "Vendor the protobuf schemas", kind="note")
    correction = put(store, "Vendor the protobuf schemas", kind="correction")
    plain = by_id(ask(store, "should we vendor protobuf schemas?"))
    assert plain[note.id].weight == plain[correction.id].weight == pytest.approx(0.9)
    weighted = by_id(
        ask(store, "should we vendor protobuf schemas?", settings=RecallSettings(rule_weight=1.25))
    )
    assert weighted[correction.id].score == pytest.approx(weighted[note.id].score * 1.25)


def test_recency_takes_off_at_most_a_fifth_halving_every_thirty_days(store) -> None:
    new = put(store, "Pin the terraform provider versions")
    month = put(store, "Pin the terraform provider versions", days_old=30)
    old = put(store, "Pin the terraform provider versions", days_old=3000)
    reviewed = put(store, "Pin the terraform provider versions", days_old=300, reviewed_days_old=30)
    result = ask(store, "which terraform provider versions do we pin?")
    found = by_id(result)
    assert found[new.id].decay == pytest.approx(1.0)
    assert found[month.id].decay == pytest.approx(0.9)
    assert found[old.id].decay == pytest.approx(0.8, abs=1e-6)
    assert found[reviewed.id].decay == pytest.approx(0.9)  # reviewed, not changed, counts
    assert kept_ids(result)[0] == new.id and kept_ids(result)[-1] == old.id
    for cand in result.candidates:
        assert cand.score == pytest.approx(found[new.id].score * cand.decay)
    slower = ask(
        store,
        "which terraform provider versions do we pin?",
        settings=RecallSettings(half_life_days=60),
    )
    assert by_id(slower)[month.id].decay == pytest.approx(0.8 + 0.2 * 0.5**0.5)


def test_a_change_to_the_store_shows_in_the_next_recall_of_the_same_process(store) -> None:
    # A warm hook server recalls prompt after prompt with one store: what it keeps of
    # the store between prompts (word counts, items read, fields) must follow it.
    prompt = "where do the quokkas sleep at night"
    assert ask(store, prompt).candidates == ()
    shade = put(store, "Quokkas sleep in the shade by day")  # this process's own write
    assert kept_ids(ask(store, prompt)) == [shade.id]
    with opened() as other:  # another process's: a `ken add`, an edit
        burrow = put(other, "Quokkas sleep in burrows at night")
        other.replace_item(
            replace(shade, title="Quokkas nap in the shade", revision=ids.new_ulid()), "edit"
        )
    again = ask(store, prompt)
    with opened() as fresh:  # a new connection reads everything afresh
        expected = ask(fresh, prompt)
    assert {c.item.id for c in again.candidates} == {shade.id, burrow.id}
    assert [(c.item, c.score, c.relevance, c.shared) for c in again.candidates] == [
        (c.item, c.score, c.relevance, c.shared) for c in expected.candidates
    ]
    assert by_id(again)[shade.id].item.title == "Quokkas nap in the shade"


# ----------------------------------------------------------------------------- budget


def test_at_most_five_items(store) -> None:
    made = [
        put(
            store,
            f"Flaky checkout test number {n}\nQuarantine the flaky checkout test.",
            days_old=n,
        )
        for n in range(7)
    ]
    result = ask(store, "the flaky checkout test again")
    assert kept_ids(result) == [m.id for m in made[:5]]
    dropped = [c for c in result.candidates if not c.kept]
    assert {c.item.id for c in dropped} == {made[5].id, made[6].id}
    assert {c.reason for c in dropped} == {"over the limit of 5 items"}
    assert kept_ids(
        ask(store, "the flaky checkout test again", settings=RecallSettings(limit=2))
    ) == [m.id for m in made[:2]]


def recall_text(*found: Item) -> str:
    return "\n".join([HEADER, *(render_item(i, max_chars=2000) for i in found)])


def test_at_most_800_tokens(store) -> None:
    # Items sized so that two fit in 800 tokens and three do not, whatever the estimator.
    def runbook(n: int, steps: int) -> Item:
        body = "Check the standby, then the primary. " * steps
        return items.new_item(
            f"Payments failover drill runbook {n}\n{body}", scope=items.parse_scope("global")
        )

    # The ids (random) render as a few tokens more or less: keep a margin either side.
    steps = next(
        k
        for k in range(1, 60)
        if estimate_tokens(recall_text(runbook(0, k), runbook(1, k), runbook(2, k))) > 830
    )
    assert estimate_tokens(recall_text(runbook(0, steps), runbook(1, steps))) < 770
    made = [put(store, runbook(n, steps).text, days_old=n) for n in range(3)]
    assert estimate_tokens(recall_text(made[0], made[1])) <= 800
    result = ask(store, "the payments failover drill runbook")
    assert kept_ids(result) == [made[0].id, made[1].id]
    assert by_id(result)[made[2].id].reason == "over the 800-token budget"
    assert result.text == recall_text(made[0], made[1])
    assert result.tokens == estimate_tokens(result.text) <= 800
    smaller = ask(
        store,
        "the payments failover drill runbook",
        settings=RecallSettings(max_tokens=estimate_tokens(recall_text(made[0]))),
    )
    assert kept_ids(smaller) == [made[0].id]


def test_a_long_item_is_cut_at_2000_characters_with_a_marker(store) -> None:
    long = put(store, "Payments failover drill runbook\n" + "Call the on-call lead. " * 150)
    assert len(long.title) + len(long.body) > 2000
    result = ask(store, "the payments failover drill runbook")
    short = long.id[-6:].lower()
    line = result.text.splitlines()[1]
    assert line.endswith(f"… [cut: ken show {short}] [m:{short}]")
    assert len(line.split("… [cut:")[0]) == len("- (note) ") + 1999

    shorter = ask(
        store, "the payments failover drill runbook", settings=RecallSettings(max_item_chars=300)
    )
    assert len(shorter.text.splitlines()[1].split("… [cut:")[0]) == len("- (note) ") + 299


def test_the_text_is_the_header_and_one_line_per_item(store) -> None:
    one = put(store, "Rotate staging credentials monthly", kind="correction")
    result = ask(store, "rotate the staging credentials")
    assert result.text == f"{HEADER}\n{render_item(one)}"
    assert result.text.endswith(f"[m:{one.id[-6:].lower()}]")


def test_conversation_words_help_at_half_weight(store) -> None:
    decision = put(store, "Webhook retries are disabled in the payments service", kind="decision")
    alone = ask(store, "why are the retries so slow?")
    assert kept_ids(alone) == []
    helped = ask(
        store, "why are the retries so slow?", context=["look at the payments webhook handler"]
    )
    assert kept_ids(helped) == [decision.id]
    assert set(by_id(helped)[decision.id].shared) == {"payments", "retries", "webhook"}
    # The conversation's words alone, without the prompt's, find nothing.
    assert ask(store, "thanks", context=["payments webhook retries"]).candidates == ()


# ----------------------------------------------------------------------------- ken recall


@pytest.fixture
def stocked() -> dict[str, Item]:
    with opened() as store:
        return {
            "rotate": put(
                store, "Rotate staging credentials monthly", kind="correction", days_old=-1
            ),
            "vault": put(store, "The vault keeps every credential", days_old=-1),
            "flaky": put(store, "Quarantine the flaky checkout test", days_old=-1),
        }


def test_ken_recall_prints_what_an_agent_gets(stocked: dict[str, Item]) -> None:
    result = ken("recall", "how", "do", "we", "rotate", "staging", "credentials")
    assert result.exit_code == 0
    assert result.output.startswith(HEADER)
    assert "Rotate staging credentials monthly" in result.output
    assert "flaky" not in result.output


def test_ken_recall_reads_the_prompt_from_stdin(stocked: dict[str, Item]) -> None:
    result = ken("recall", input="rotate staging credentials\n")
    assert "Rotate staging credentials monthly" in result.output
    dash = ken("recall", "-", input="rotate staging credentials\n")
    assert "Rotate staging credentials monthly" in dash.output


def test_ken_recall_says_when_nothing_fits(stocked: dict[str, Item]) -> None:
    result = ken("recall", "xylophone", "quokka")
    assert result.exit_code == 0
    assert HEADER not in result.output
    assert "nothing here fits" in result.output


@pytest.mark.parametrize(
    ("args", "stdin"),
    [((), ""), (("",), "rotate staging credentials"), (("  ",), None), (("-",), " \n")],
)
def test_ken_recall_of_an_empty_prompt_is_refused_in_one_line(
    stocked: dict[str, Item], args: tuple[str, ...], stdin: str | None
) -> None:
    # It said "nothing here fits that prompt" and exited 0, as if it had looked.
    result = ken("recall", *args, input=stdin)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (
        "ken: the prompt is empty: give a PROMPT (or one on stdin), or --queries FILE; "
        "nothing was recalled\n"
    )


def test_ken_recall_of_punctuation_alone_is_refused_as_search_refuses_it(
    stocked: dict[str, Item],
) -> None:
    result = ken("recall", "?!")
    assert result.exit_code == 1 and "the prompt has no words in it" in result.stderr


def test_ken_recall_json(stocked: dict[str, Item]) -> None:
    data = json.loads(ken("recall", "rotate the staging credentials", "--json").output)
    assert set(data) == {"terms", "items", "tokens", "text"}
    [item] = data["items"]
    assert item["id"] == stocked["rotate"].id
    assert item["kept"] is True and item["reason"] == ""
    assert item["body"] == ""
    assert data["tokens"] == estimate_tokens(data["text"])


def test_ken_recall_flags_change_the_rules(stocked: dict[str, Item]) -> None:
    prompt = "rotate the staging credentials in the vault"

    def kept(*flags: str) -> set[str]:
        out = ken("recall", prompt, "--json", *flags).output
        return {i["id"] for i in json.loads(out)["items"]}

    # rotate shares three words and is a correction; vault shares two, and is less close.
    both = {stocked["rotate"].id, stocked["vault"].id}
    assert kept() == both
    assert kept("--limit", "1") == {stocked["rotate"].id}
    assert kept("--min-shared", "3") == {stocked["rotate"].id}
    assert kept("--min-shared", "4") == set()
    assert kept("--min-score", "0.9") == {stocked["rotate"].id}
    assert kept("--min-score", "1") <= {stocked["rotate"].id}
    # a flag takes the range of the setting it overrides (recall.min_score: 0 to 1)
    assert ken("recall", prompt, "--min-score", "9").exit_code == 2
    just_rotate = estimate_tokens(f"{HEADER}\n{render_item(stocked['rotate'])}")
    assert kept("--max-tokens", str(just_rotate)) == {stocked["rotate"].id}
    assert stocked["rotate"].id not in kept("--max-tokens", str(just_rotate - 1))
    assert kept("--max-tokens", "10") == set()  # not even the header fits
    said = ken("recall", prompt, "--max-tokens", "10").stderr
    assert "2 memories fit that prompt, but none within the token budget" in said
    assert kept("--limit", "0") == set()  # as recall.limit = 0 gives nothing
    # and says so, rather than that nothing fits
    said = ken("recall", prompt, "--limit", "0").stderr
    assert "2 memories fit that prompt, but the limit is 0 items" in said
    # a batch and a prompt at once: the prompt was ignored, silently
    both_given = ken("recall", prompt, "--queries", "-", input="a question\n")
    assert both_given.exit_code == 2 and "not both" in both_given.output
    assert ken("recall", prompt, "--limit", "51").exit_code == 2


def test_ken_recall_explain_shows_kept_and_dropped_with_reasons(stocked: dict[str, Item]) -> None:
    prompt = "rotate the staging credentials in the vault"
    data = json.loads(ken("recall", prompt, "--explain", "--min-shared", "3", "--json").output)
    reasons = {c["id"]: (c["kept"], c["reason"]) for c in data["candidates"]}
    assert reasons[stocked["rotate"].id] == (True, "")
    assert reasons[stocked["vault"].id] == (False, "shares 2 content word(s), needs 3")
    for cand in data["candidates"]:
        assert {"shared", "matched", "relevance", "normalized", "weight", "decay"} <= set(cand)
    matched = {c["id"]: c["matched"] for c in data["candidates"]}
    assert set(matched[stocked["rotate"].id]) == {"rotate", "staging", "credentials"}

    text = ken("recall", prompt, "--explain", "--min-shared", "3").output
    assert text.splitlines()[0].startswith("query words: ")
    rows = {line.split()[0]: line for line in text.splitlines() if line[:6].isalnum()}
    assert " yes " in rows[stocked["rotate"].id[-6:].lower()]
    assert "rotate, staging, credentials" in rows[stocked["rotate"].id[-6:].lower()]
    assert " no " in rows[stocked["vault"].id[-6:].lower()]
    assert "needs 3" in text


def test_ken_recall_answers_a_file_of_queries_as_json_lines(
    stocked: dict[str, Item], tmp_path: Path
) -> None:
    queries = tmp_path / "queries.txt"
    queries.write_text(
        "rotate the staging credentials\n\nis the checkout test still flaky?\nxylophone quokka\n",
        encoding="utf-8",
    )
    out = ken("recall", "--queries", str(queries)).output
    answers = [json.loads(line) for line in out.splitlines()]
    assert [a["query"] for a in answers] == [
        "rotate the staging credentials",
        "is the checkout test still flaky?",
        "xylophone quokka",
    ]
    assert [[i["id"] for i in a["items"]] for a in answers] == [
        [stocked["rotate"].id],
        [stocked["flaky"].id],
        [],
    ]
    assert answers[2]["text"] == ""


def test_ken_recall_counts_no_use_and_tells_no_session(stocked: dict[str, Item]) -> None:
    ken("recall", "rotate the staging credentials")
    with opened() as store:
        assert store.get_item(stocked["rotate"].id).use_count == 0


def test_the_lexicon_is_kept_on_disk_and_read_back_the_same(store, monkeypatch) -> None:
    """A hook in its own process reads the stemmed word lists from the state folder
    instead of building them; what it reads is what building gives."""
    import os

    from kenning.recall import lexicon

    monkeypatch.setattr(lexicon, "_lexicon", None)
    built = lexicon._build(store)
    assert lexicon.lexicon_of(store) == built
    path = lexicon._kept_path(store)
    assert path is not None and os.path.exists(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    # Patched in a context of its own: undoing the test's monkeypatch would undo the
    # temporary HOME too, and the last read would keep a lexicon in the real one.
    with monkeypatch.context() as patched:
        patched.setattr(lexicon, "_lexicon", None)
        patched.setattr(lexicon, "_build", lambda store: pytest.fail("built again"))
        assert lexicon.lexicon_of(store) == built
        os.chmod(path, 0o666)  # a file others may write is not read: marshal trusts it
        patched.setattr(lexicon, "_lexicon", None)
        again = lexicon.Lexicon(frozenset(), {}, {}, {})
        patched.setattr(lexicon, "_build", lambda store: again)
        assert lexicon.lexicon_of(store) is again
        with open(path, "wb") as fh:
            fh.write(b"not marshal")  # a damaged file is built again, not trusted
    monkeypatch.setattr(lexicon, "_lexicon", None)
    assert lexicon.lexicon_of(store) == built
    assert lexicon._kept_path(store) == path  # still in the test's own state folder


def test_conversation_words_find_no_candidates_of_their_own(store) -> None:
    """The conversation's words rank and fit what the prompt's words found; a memory that
    shares none of the prompt's words is not a candidate because of them."""
    put(store, "Webhook retries are disabled in the payments service", kind="decision")
    other = put(store, "Invoice exports run nightly from the billing worker", kind="fact")
    result = ask(
        store, "why are the retries so slow?", context=["the invoice exports from billing"]
    )
    assert other.id not in {c.item.id for c in result.candidates}


# ----------------------------------------------------------------------------- near words

OPEN = RecallSettings(min_score=0.0, min_shared=0)


def test_a_near_word_finds_a_memory_that_shares_no_word_with_the_prompt(store) -> None:
    """neighbours.tsv: "garbage" is near "trash", at a weight well under a synonym's."""
    wanted = put(store, "Trash bags are kept under the sink by the back door")
    put(store, "Invoices are numbered without gaps", kind="fact")
    put(store, "Deploys happen on Tuesdays after the standup", kind="fact")
    result = ask(store, "where is the garbage", settings=OPEN)
    assert [c.item.id for c in result.kept] == [wanted.id]
    assert result.kept[0].shared == ("garbage",)
    assert result.kept[0].matched() == ["garbage->trash"]  # what --explain shows
    # A near word alone is too little evidence for the gate at defaults.
    assert ask(store, "where is the garbage").kept == ()
    # Near forms are told apart by their weight: no other form weighs as little.
    from kenning.recall import AFFIX_WEIGHT, NEAR_WEIGHT, TYPO_WEIGHT
    from kenning.recall.lexicon import KIND_WEIGHT, SYNONYM_WEIGHT

    assert min(AFFIX_WEIGHT, TYPO_WEIGHT, KIND_WEIGHT, SYNONYM_WEIGHT) > NEAR_WEIGHT


def test_matched_names_the_memory_word_whose_stem_it_matched_not_one_that_starts_so(
    store,
) -> None:
    """ "trashy" starts with the stem `trash` but is not its word: the memory's word
    first in its text that starts with the stem was named."""
    wanted = put(store, "Trashy novels go in the trash bin by the back door")
    result = ask(store, "where is the garbage", settings=OPEN)
    [found] = [c for c in result.kept if c.item.id == wanted.id]
    assert found.matched() == ["garbage->trash"]


def test_matched_gives_no_arrow_for_a_word_the_memory_holds_itself(store) -> None:
    """errors.md: `matched` names the memory's word only when that is another word.
    "csv export" scored "Orders export is CSV, not XLSX" through its synonym xlsx (the
    rarer word, worth more) and said csv->xlsx, though the memory holds csv itself."""
    wanted = put(store, "Orders export is CSV, not XLSX")
    for text in (
        "The CSV importer skips blank lines",
        "CSV files use semicolons",
        "Parse CSV with the csv module",
        "CSV headers are lowercase",
    ):
        put(store, text)
    result = ask(store, "csv export", settings=OPEN)
    [found] = [c for c in result.candidates if c.item.id == wanted.id]
    assert found.matched() == ["csv", "export"]
    # Only what is shown changes: a memory with xlsx alone still matches through it.
    other = put(store, "Reports are emailed as XLSX on Fridays")
    again = ask(store, "csv export", settings=OPEN)
    assert [c.matched() for c in again.candidates if c.item.id == other.id] == [["csv->xlsx"]]


def test_near_words_come_from_a_sorted_file_searched_in_place() -> None:
    from kenning.recall import lexicon

    table = b"ab\tx:xx:0.70\nabc\ty:yy:0.65 z:zz:0.61\nb\t\nmid\tq:qq:0.90\nzz\tw:ww:0.80\n"
    assert lexicon._near_line(table, b"ab") == b"x:xx:0.70"
    assert lexicon._near_line(table, b"abc") == b"y:yy:0.65 z:zz:0.61"
    assert lexicon._near_line(table, b"mid") == b"q:qq:0.90"
    assert lexicon._near_line(table, b"zz") == b"w:ww:0.80"
    assert lexicon._near_line(table, b"b") == b""
    for missing in (b"a", b"abd", b"m", b"zzz", b"", b"\xff"):
        assert lexicon._near_line(table, missing) == b""
    assert lexicon._near_line(b"", b"ab") == b""
    # The shipped file is sorted bytewise, one stem a line, as the search needs.
    keys = [line.split(b"\t", 1)[0] for line in lexicon.NEIGHBOURS_FILE.read_bytes().splitlines()]
    assert keys == sorted(set(keys)) and len(keys) > 5000
    assert ("spreadsheet", "spreadsheet") in [(o, w) for o, w, _ in lexicon._near("excel")]
    # A person's name never stands for another person's.
    for name in ("nadia", "marcus", "grace"):
        assert not {"irina", "thoma", "eva"} & {o for o, _, _ in lexicon._near(name)}, name


def test_recall_works_without_the_near_words_file(store, monkeypatch, tmp_path) -> None:
    from kenning.recall import lexicon

    wanted = put(store, "Trash bags are kept under the sink by the back door")
    # Its own context: undoing the test's monkeypatch would undo the temporary HOME too.
    with monkeypatch.context() as patched:
        patched.setattr(lexicon, "NEIGHBOURS_FILE", tmp_path / "missing.tsv")
        patched.setattr(lexicon, "_near_map", None)
        lexicon._near.cache_clear()
        try:
            assert ask(store, "where is the garbage", settings=OPEN).kept == ()
            assert [c.item.id for c in ask(store, "trash bags sink").kept] == [wanted.id]
        finally:
            lexicon._near.cache_clear()
    lexicon._near_map = None


def test_a_request_word_looks_for_candidates_when_the_topic_words_are_common(store) -> None:
    """ "class" is a request word in code ("rename this class"), but in a store of
    conversations it can be what the question is about; it joins the candidate query
    after the topic words, still weighing as a request word."""
    for n in range(60):
        put(store, f"Hana: reply number {n} of the chat")
    wanted = put(
        store,
        "Hana: School starts soon. I met my class list, twenty-two children from "
        "fourteen countries, and the head says they are lovely.",
    )
    result = ask(store, "how big is Hana's class", settings=replace(OPEN, limit=5))
    assert wanted.id in [c.item.id for c in result.kept]


def test_request_words_alone_look_for_nothing(store) -> None:
    put(store, "The Invoice class keeps its lines in a list")
    put(store, "Hana: my class has twenty-two children")
    assert ask(store, "rename this class and the list", settings=OPEN).candidates == ()


OPEN = RecallSettings(min_score=0.0, min_shared=0)


def _conversation(store, kind: str = "note", gap_days: float = 0.0) -> tuple[Item, Item]:
    """Turns of one conversation, each a note; the reply names nothing the question asks."""
    for turn in range(8):
        put(store, f"Ivy: weather talk number {turn}, sunny spells", days_old=1 + gap_days)
    asked = put(store, "Ivy: Jonah must be excited about the houseboat", days_old=1 + gap_days)
    reply = put(
        store, "Marcus: He hated the smell but loved the little stove", kind=kind, days_old=1
    )
    for turn in range(2):
        put(store, f"Jonah: the houseboat mooring fees went up, turn {turn}", kind="fact")
    return asked, reply


def test_a_note_captured_right_after_a_fitting_note_ranks_by_what_it_follows(store) -> None:
    asked, reply = _conversation(store)
    prompt = "what did Jonah think of the houseboat when he first saw it?"
    ranked = [c.item.id for c in ask(store, prompt, settings=OPEN).kept]
    assert ranked[0] == asked.id and reply.id in ranked[:5]
    # The gates judge the reply on its own words: it shares none with the prompt.
    judged = ask(store, prompt)
    assert reply.id not in kept_ids(judged)
    assert by_id(judged)[reply.id].reason == (
        f"shares 0 content word(s), needs 1; follows {asked.id[-6:].lower()}"
    )


def test_a_reply_after_a_question_back_ranks_by_the_turn_two_before_it(store) -> None:
    """ "Which one?" then the answer: the answer is two turns after what named the topic,
    and ranks by it at FOLLOW_WEIGHT squared, under the turn it follows."""
    for turn in range(8):
        put(store, f"Ivy: weather talk number {turn}, sunny spells", days_old=1)
    asked = put(store, "Maya: Leo says a craft brewery hired him to redo its branding", days_old=1)
    back = put(store, "Ivy: Which one?", days_old=1)
    answer = put(store, "Maya: Hopscotch, the small place near the station", days_old=1)
    put(store, "Ivy: Nice, I walk past it every morning", days_old=1)
    prompt = "which business hired Leo to redo its branding?"
    ranked = [c.item.id for c in ask(store, prompt, settings=OPEN).kept]
    assert ranked[0] == asked.id and answer.id in ranked
    assert ranked.index(back.id) < ranked.index(answer.id)
    # Three turns on is too far: the note after the answer is no candidate.
    assert ranked == [asked.id, back.id, answer.id]


@pytest.mark.parametrize("kind, gap_days", [("fact", 0.0), ("note", 2.0)])
def test_only_a_note_of_the_same_sitting_follows_a_note(store, kind: str, gap_days: float) -> None:
    _, reply = _conversation(store, kind=kind, gap_days=gap_days)
    prompt = "what did Jonah think of the houseboat when he first saw it?"
    assert reply.id not in [c.item.id for c in ask(store, prompt, settings=OPEN).kept][:5]
