"""Option stacks that several `ken` commands share, as decorators: the same flags, the
same help, the same completion wherever they stand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kenning import config
from kenning.cli import complete
from kenning.model import Status

F = TypeVar("F", bound=Callable[..., Any])


def unused_days(help: str) -> Callable[[F], F]:
    """`--days N`: days without use, in the range `lint.unused_days` takes."""
    setting = config.BY_KEY["lint.unused_days"]
    low, high = int(setting.low or 1), int(setting.high or 36_500)
    return click.option("--days", default=None, type=click.IntRange(low, high), help=help)


def scopes(fn: F) -> F:
    """`--scope/-s`, repeatable: only these scopes."""
    return click.option(
        "--scope",
        "-s",
        multiple=True,
        shell_complete=complete.scopes,
        help="Only these scopes (repeatable).",
    )(fn)


def scopes_here(fn: F) -> F:
    """`--scope/-s` and `--here`: the scopes a command looks in."""
    fn = click.option("--here", is_flag=True, help="Only the scopes that apply in this folder.")(fn)
    return scopes(fn)


def item_filters(*, default_active: bool) -> Callable[[F], F]:
    """`--kind/-k`, `--status`, `--tag/-t`, `--all`: which memories. With
    `default_active`, `--status` defaults to active (and shows it); without, the command
    reads no `--status` as active itself."""

    def decorate(fn: F) -> F:
        fn = click.option("--all", "show_all", is_flag=True, help="Any status, expired tasks too.")(
            fn
        )
        fn = click.option("--tag", "-t", multiple=True, help="Only items with this tag.")(fn)
        if default_active:
            fn = click.option(
                "--status",
                multiple=True,
                default=[Status.ACTIVE.value],
                show_default=True,
                shell_complete=complete.statuses,
                help="Only these statuses.",
            )(fn)
        else:
            fn = click.option(
                "--status",
                multiple=True,
                shell_complete=complete.statuses,
                help="Only these statuses (default: active).",
            )(fn)
        return click.option(
            "--kind", "-k", multiple=True, shell_complete=complete.kinds, help="Only these kinds."
        )(fn)

    return decorate
