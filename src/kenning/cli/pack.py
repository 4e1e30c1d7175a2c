"""`ken pack` and `ken recall`: what an agent is told at start and for one prompt."""

from __future__ import annotations

import json
import sys

import click

from kenning import agentenv, agents, deliver, handoff
from kenning.cli import complete
from kenning.cli.output import Result, echo_told, memories, say, table
from kenning.cli.state import State, example, in_range, pass_state, read_stdin_text, renders
from kenning.errors import InvalidInput, KenningError
from kenning.ids import short_id
from kenning.pack import MIN_BUDGET, Pack, toml_string
from kenning.recall import Recall, RecallSettings


def _agent_named(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """`--for`: an agent kenning knows, or any other by the name `KEN_AGENT` gives it
    (one a letter or two from a known name is said to be taken as another's)."""
    if value is None or value == "markdown" or value in agents.AGENTS:
        return value or "markdown"
    import difflib

    near = difflib.get_close_matches(value.lower(), list(agents.AGENTS), n=1, cutoff=0.75)
    if near:
        say(f"note: '{value}' is not {near[0]}: shown as another agent, as KEN_AGENT names it")
    name = agentenv.agent_name(value)
    if name == agentenv.UNNAMED and value.strip().lower() != agentenv.UNNAMED:
        raise click.BadParameter(
            f"'{value}' is no agent's name: give {', '.join(agents.AGENTS)}, or the name "
            "KEN_AGENT gives another (letters, digits, '.', '_' and '-')"
        )
    return name


@click.command(epilog=example('codex -c developer_instructions="$(ken pack --for codex --toml)"'))
@click.option(
    "--for",
    "target",
    metavar="AGENT",
    callback=_agent_named,
    shell_complete=complete.agents,
    help="Show exactly what this agent is told when it starts here: "
    f"{', '.join(agents.AGENTS)}, or any other by the name KEN_AGENT gives it "
    "(default: the pack as Markdown, for no agent in particular).",
)
@click.option(
    "--toml",
    "as_toml",
    is_flag=True,
    help="Print a TOML string (for codex -c developer_instructions=...).",
)
@click.option(
    "--budget",
    type=click.IntRange(MIN_BUDGET, 100_000),
    help="Token budget (default: config memory.budget).",
)
@renders
@pass_state
def pack(state: State, target: str, as_toml: bool, budget: int | None) -> Result:
    """Print the context pack for this folder: what an agent is told at start.

    With --for AGENT, exactly what that agent's SessionStart hook gives here: its own
    `agent:` memories included, nothing when memory.deliver_to leaves it out (unset, it
    names every agent).
    """
    # A session whose agent is gone is wrapped up first, as the next start would: the
    # pack shows the handoff it left (unless memory is off: then nothing is recorded).
    if state.config.memory_enabled:
        handoff.close_left(state.store, state.config)
    if target == "markdown":
        here = state.where()
        result = deliver.pack_for(state.store, state.config, here, budget=budget, record=False)
    else:
        from kenning import locate

        here = locate.here(state.store, state.config, agent=target)
        told = deliver.start_pack(
            state.store, state.config, here, target, budget=budget, record=False
        )
        if told is None:
            why = (
                "memory is off (memory.enabled)"
                if not state.config.memory_enabled
                else f"{target} is not in memory.deliver_to "
                f"({', '.join(state.config.memory_deliver_to) or 'empty'})"
            )
            return Result(
                before=[f"{target} is told nothing here: {why}"],
                data=None,
                text=(lambda: click.echo(toml_string(""))) if as_toml else None,
            )
        result = told
    return Result(data=result.to_dict(), text=lambda: _packed(result, as_toml))


def _packed(result: Pack, as_toml: bool) -> None:
    if as_toml:
        click.echo(toml_string(result.text))
    else:
        echo_told(result.text)
    if not result.items and not result.sessions:
        say("(nothing here for an agent yet: one starting here is told only that line)")


@click.command(epilog=example('ken recall "why do the integration tests need postgres?" --explain'))
@click.argument("prompt", nargs=-1)
@click.option("--limit", type=in_range("recall.limit"), help="Most items (config recall.limit).")
@click.option(
    "--min-score", type=in_range("recall.min_score"), help="Lowest normalized score; 0: off."
)
@click.option(
    "--min-shared", type=in_range("recall.min_shared"), help="Prompt words to match; 0: off."
)
@click.option("--max-tokens", type=in_range("recall.max_tokens"), help="Token cap.")
@click.option("--explain", is_flag=True, help="Show every candidate's score parts.")
@click.option(
    "--queries",
    type=click.File("r", encoding="utf-8-sig"),  # without a BOM first
    help="Answer one query per line as JSON lines.",
)
@click.option("--scope", "-s", multiple=True, help="Recall from these scopes instead of here.")
@renders
@pass_state
def recall(
    state: State,
    prompt: tuple[str, ...],
    limit: int | None,
    min_score: float | None,
    min_shared: int | None,
    max_tokens: int | None,
    explain: bool,
    queries: object,
    scope: tuple[str, ...],
) -> Result:
    """Show the memories that fit a prompt here, as an agent would get them.

    With no PROMPT, or PROMPT `-`, reads the prompt from stdin. An empty prompt is
    refused, as an empty search is: nothing fits nothing.
    """
    settings = RecallSettings.from_config(
        state.config,
        limit=limit,
        min_score=min_score,
        min_shared=min_shared,
        max_tokens=max_tokens,
    )
    state.withheld()  # in an agent's shell, refused when memory reaches no agent here
    here = state.where()
    if scope:
        from dataclasses import replace

        here = replace(here, scopes=tuple(here.scope(s, to_find=True) for s in scope), repo=None)
    if queries is not None and prompt:
        raise click.UsageError("give a PROMPT or --queries FILE, not both")
    if queries is not None:
        # A batch: each answer is printed as its query is read, as a JSON line, in
        # either form.
        try:
            for line in queries:  # type: ignore[attr-defined]
                text = line.rstrip("\n")
                if not text.strip():
                    continue
                result = deliver.recall_for(
                    state.store, state.config, here, text, settings=settings, record=False
                )
                click.echo(json.dumps({"query": text, **result.to_dict()}, ensure_ascii=False))
        except UnicodeDecodeError:
            raise KenningError("--queries: the file is not UTF-8 text") from None
        return Result()
    text = " ".join(prompt) if prompt and prompt != ("-",) else None
    if text is None:
        if sys.stdin.isatty():
            raise click.UsageError("give a PROMPT, or --queries FILE")
        text = read_stdin_text("nothing was recalled")
    if not text.strip():
        raise InvalidInput(
            "the prompt is empty: give a PROMPT (or one on stdin), or --queries FILE; "
            "nothing was recalled"
        )
    if not any(c.isalnum() for c in text):  # as `ken search '?!'` says
        raise InvalidInput("the prompt has no words in it: give at least one; nothing was recalled")
    result = deliver.recall_for(
        state.store, state.config, here, text, settings=settings, record=False
    )
    data = result.to_dict()
    if explain:
        data["candidates"] = [c.to_dict() for c in result.candidates]
    return Result(data=data, text=lambda: _recalled(result, explain))


def _recalled(result: Recall, explain: bool) -> None:
    if explain:
        say(f"query words: {', '.join(result.query_terms) or '(none)'}")
        table(
            ["id", "kept", "matched", "norm", "weight", "decay", "score", "title / why"],
            [
                [
                    short_id(c.item.id),
                    "yes" if c.kept else "no",
                    ", ".join(c.matched()) or "-",
                    f"{c.normalized:.2f}",
                    f"{c.weight:.2f}",
                    f"{c.decay:.2f}",
                    f"{c.score:.2f}",
                    c.item.title[:50] + ("" if c.kept else f"  ({c.reason})"),
                ]
                for c in result.candidates
            ],
        )
        return
    if result.text:
        echo_told(result.text)
        return
    if result.over_budget:
        say(f"{memories(result.over_budget)} fit that prompt, but none within the token budget")
    elif result.over_limit:  # a limit of 0
        say(f"{memories(result.over_limit)} fit that prompt, but the limit is 0 items")
    else:
        say("nothing here fits that prompt")
