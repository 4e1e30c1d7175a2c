"""An item's stored columns, described once for every backend.

`ITEM_COLUMNS` is the one list of what an item is stored as: each column's name, its
value made from an `Item` (a str, int, bool, list of str or dict), which `Item` field it
reads back into and how, whether each version's row in `revisions` keeps a copy, and its
`shape`. A backend says how it stores each shape (SQLite: flags as 0/1, lists and objects
as JSON text; PostgreSQL: booleans, text arrays and jsonb) and makes its SELECT list,
INSERT, UPDATE, row-to-`Item` conversion and version rows from this table, so a new
column is one line here (and a migration in each backend).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kenning.model import Item, Kind, Link, Provenance, Scope, Status

Shape = Literal["plain", "flag", "list", "object"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    value: Callable[[Item], Any]  # the value for an item, before the backend stores it
    field: str | None  # the Item field it reads back into; None: derived, never read
    read: Callable[[Any], Any] | None = None  # value -> field value; None: as it is
    versioned: bool = False  # each version's row in `revisions` keeps a copy
    shape: Shape = "plain"  # how a backend stores it: flag, list (of str), object


def _links(values: Sequence[str]) -> tuple[Link, ...]:
    return tuple(Link.parse(x) for x in values)


ITEM_COLUMNS: tuple[Column, ...] = (
    Column("id", lambda i: i.id, "id"),
    Column("kind", lambda i: i.kind.value, "kind", Kind, versioned=True),
    Column("scope", lambda i: str(i.scope), "scope", Scope.from_stored, versioned=True),
    Column("status", lambda i: i.status.value, "status", Status, versioned=True),
    Column("pinned", lambda i: bool(i.pinned), "pinned", bool, versioned=True, shape="flag"),
    Column("title", lambda i: i.title, "title", versioned=True),
    Column("body", lambda i: i.body, "body", versioned=True),
    Column("tags", lambda i: list(i.tags), "tags", tuple, versioned=True, shape="list"),
    Column(
        "links",
        lambda i: [str(x) for x in i.links],
        "links",
        _links,
        versioned=True,
        shape="list",
    ),
    Column("evidence", lambda i: i.evidence, "evidence", versioned=True),
    Column(
        "provenance",
        lambda i: i.provenance.to_dict(),
        "provenance",
        Provenance.from_dict,
        versioned=True,
        shape="object",
    ),
    Column("session_id", lambda i: i.provenance.session, None),  # for the session index
    Column("created_at", lambda i: i.created_at, "created_at"),
    Column("updated_at", lambda i: i.updated_at, "updated_at"),
    Column("reviewed_at", lambda i: i.reviewed_at, "reviewed_at"),
    Column("expires_at", lambda i: i.expires_at, "expires_at"),
    Column("use_count", lambda i: i.use_count, "use_count"),
    Column("last_used_at", lambda i: i.last_used_at, "last_used_at"),
    Column("revision", lambda i: i.revision, "revision"),
    Column("dismiss_reason", lambda i: i.dismiss_reason, "dismiss_reason"),
    Column("source", lambda i: i.source, "source"),
    Column("archive_reason", lambda i: i.archive_reason, "archive_reason"),
)

NAMES = tuple(c.name for c in ITEM_COLUMNS)
VERSIONED = tuple(n for n, c in enumerate(ITEM_COLUMNS) if c.versioned)  # their positions
# A version's row: its own id, the item's, when, the item's versioned columns, the change.
REVISION_NAMES = ("id", "item_id", "created_at", *(NAMES[n] for n in VERSIONED), "change")

Encode = Callable[[Any], Any]
Decode = Callable[[Any], Any]


def writer(encode: Mapping[Shape, Encode]) -> Callable[[Item], tuple[Any, ...]]:
    """An item's row in `NAMES`' order, each shape stored as `encode` says (a shape not
    named is stored as its value is). Written out from the table once, as `reader` is:
    every item of an import goes through it."""
    scope: dict[str, Any] = {}
    cells = []
    for n, column in enumerate(ITEM_COLUMNS):
        scope[f"value_{n}"] = column.value
        cell = f"value_{n}(item)"
        store = encode.get(column.shape)
        if store is not None:
            scope[f"store_{n}"] = store
            cell = f"store_{n}({cell})"
        cells.append(cell)
    exec(f"def item_values(item):\n    return ({', '.join(cells)},)\n", scope)
    made: Callable[[Item], tuple[Any, ...]] = scope["item_values"]
    return made


def reader(decode: Mapping[Shape, Decode], *, by_name: bool) -> Callable[[Any], Item]:
    """`row_to_item` for a backend's rows (read by position in `NAMES`' order, or by
    column name), each shape read back as `decode` says. It is written out from the table
    once, as `dataclasses` writes an `__init__`: a loop over the columns would cost a
    third more per row, and recall and packs read hundreds of rows on every prompt."""
    scope: dict[str, Any] = {"Item": Item}
    args = []
    for n, column in enumerate(ITEM_COLUMNS):
        if column.field is None:
            continue
        value = f"row[{column.name!r}]" if by_name else f"row[{n}]"
        loads = decode.get(column.shape)
        if loads is not None:
            scope[f"decode_{n}"] = loads
            value = f"decode_{n}({value})"
        if column.read is not None:
            scope[f"read_{n}"] = column.read
            value = f"read_{n}({value})"
        args.append(f"{column.field}={value}")
    exec(f"def row_to_item(row):\n    return Item({', '.join(args)})\n", scope)
    made: Callable[[Any], Item] = scope["row_to_item"]
    made.__doc__ = "An `Item` from a row of the item's columns."
    return made


def revision_values(item: Item, change: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A version's row, in `REVISION_NAMES`' order, from its item's row `values`."""
    return (item.revision, item.id, item.updated_at, *(values[n] for n in VERSIONED), change)
