"""Option stacks that several `ken` commands share, as decorators: the same flags, the
same help, the same completion wherever they stand."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from kenning import config, items
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


def _tags(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """An empty `--tag ''` filtered nothing, silently: it is a usage error."""
    if any(not tag.strip() for tag in value):
        raise click.BadParameter("a tag to filter by is a word, not empty")
    return value


def statuses(status: Sequence[str], show_all: bool) -> tuple[str, ...]:
    """The statuses `item_filters`' flags ask for: those given; else any with `--all`
    (an empty tuple), else active."""
    asked = tuple(items.parse_status(s).value for s in status)
    if asked or not show_all:
        return asked or (Status.ACTIVE.value,)
    return ()


def item_filters(fn: F) -> F:
    """`--kind/-k`, `--status`, `--tag/-t`, `--all`: which memories. No `--status` is
    active, or any status with `--all`; `--all` with `--status` is those statuses,
    expired tasks too."""
    fn = click.option("--all", "show_all", is_flag=True, help="Any status, expired tasks too.")(fn)
    fn = click.option(
        "--tag", "-t", multiple=True, callback=_tags, help="Only items with this tag."
    )(fn)
    fn = click.option(
        "--status",
        multiple=True,
        shell_complete=complete.statuses,
        help="Only these statuses (default: active).",
    )(fn)
    return click.option(
        "--kind", "-k", multiple=True, shell_complete=complete.kinds, help="Only these kinds."
    )(fn)
