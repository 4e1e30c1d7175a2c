"""`ken config list|get|set`: the settings, through the table in `kenning.config`."""

from __future__ import annotations

import shlex
from typing import Any

import click

from kenning import config, policy
from kenning.cli import output
from kenning.cli.output import Result, say
from kenning.cli.state import KenGroup, State, example, pass_state, renders


@click.group("config", cls=KenGroup, epilog=example("ken config set memory.budget 2000"))
def config_group() -> None:
    """Read and change settings (config.toml)."""


@config_group.command("list", epilog=example("ken config list --json"))
@renders
@pass_state
def config_list(state: State) -> Result:
    """List every setting with its value and where it comes from."""
    rows = [
        {
            "key": s.key,
            "value": state.config.value_of(s),
            "default": s.default,
            "source": state.config.source(s),
            "env": s.env,
            "help": s.help,
        }
        for s in config.SETTINGS
    ] + [
        {
            "key": f'memory.repos."{repo}".{name}',
            "value": on,
            "default": True,
            "source": "file",
            "env": None,
            "help": "capture: record sessions and writes there"
            if name == "capture"
            else "deliver: tell agents its memory",
        }
        # an agent's shell is told none: which repos are kept from agents is a person's
        for repo, switches in sorted(
            state.config.repo_switches().items() if state.actor().agent is None else ()
        )
        for name, on in sorted(switches.items())
    ]
    return Result(
        before=[
            f"note: {problem.key} in {config.config_path()} {problem.detail}; {problem.fix}"
            for problem in config.file_problems(
                state.config.file, for_agent=state.actor().agent is not None
            )
        ],
        data=rows,
        text=lambda: output.table(
            ["key", "value", "source", "help"],
            [
                [r["key"], _fmt(r["value"], r["key"]), str(r["source"]), str(r["help"])]
                for r in rows
            ],
        ),
    )


def _fmt(value: Any, key: str = "") -> str:
    setting = config.BY_KEY.get(key)
    if isinstance(value, list) and setting and setting.type is config.Command:
        return shlex.join(value)
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@config_group.command("get", epilog=example("ken config get memory.budget"))
@click.argument("key")
@renders
@pass_state
def config_get(state: State, key: str) -> Result:
    """Print one setting's value."""
    switch = config.repo_switch(key)
    if switch is not None:
        # which repos are kept from agents is a person's to know, as to set
        policy.require_person(state.actor(), f"read {key}")
        repo, name = switch
        read = state.config.repo_capture if name == "capture" else state.config.repo_deliver
        on = read(repo)
        return Result(
            data={"key": key, "repo": repo, "value": on},
            text=lambda: output.echo(_fmt(on)),
        )
    setting = config.find(key)
    value = state.config.value_of(setting)
    return Result(
        data={"key": key, "value": value, "source": state.config.source(setting)},
        text=lambda: output.echo(_fmt(value, key)),
    )


@config_group.command(
    "set",
    epilog=example("ken config set recall.limit 3"),
    # a value may start with '-' (a negative number): it is the value, not an option
    context_settings={"ignore_unknown_options": True},
)
@click.argument("key")
@click.argument("value")
def config_set(key: str, value: str) -> None:
    """Change a setting in config.toml (refused inside an agent's shell).

    A repo's privacy switches are set the same way:
    `ken config set 'memory.repos."github.com/acme/payroll".deliver' false`."""
    switch = config.repo_switch(key)
    if switch is not None:
        repo, name = switch
        policy.require_person(policy.Actor.from_env(), f"set {key} to {value}")
        on, table = config.set_switch(repo, name, value)
        say(f'[memory.repos."{table}"] {name} = {_fmt(on)} in {config.config_path()}')
        return
    config.find(key)  # an unknown key is refused before the person check
    policy.require_person(policy.Actor.from_env(), f"set {key} to {value}")
    stored = config.set_value(key, value)
    say(f"{key} = {_fmt(stored, key)} in {config.config_path()}")
    if key == "memory.deliver_to" and not stored:
        say(
            "note: no agent is told memory now (an empty list names none); "
            f"`ken config set memory.deliver_to '{config.EVERY_AGENT}'` tells every agent"
        )
