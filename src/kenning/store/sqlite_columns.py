"""The `items` table's columns, described once.

`ITEM_COLUMNS` is the one list of what an item is stored as: each column's name, how its
value is made from an `Item`, which `Item` field it reads back into and how, and
whether each version's row in `revisions` keeps a copy. The SELECT list, the INSERT and
the UPDATE of an item, the row-to-`Item` conversion and a version's row are all made
from it, so a new column is one line here (and a migration that adds it).

Tags, links and provenance are stored as JSON text; a version reuses the JSON its item's
row was given rather than encoding it twice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kenning.model import Item, Kind, Link, Provenance, Scope, Status


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    write: Callable[[Item], Any]  # the value stored for an item
    field: str | None  # the Item field it reads back into; None: derived, never read
    read: Callable[[Any], Any] | None = None  # stored value -> field value; None: as stored
    versioned: bool = False  # each version's row in `revisions` keeps a copy


def _json_list(values: Sequence[Any]) -> str:
    return json.dumps([str(v) for v in values])


ITEM_COLUMNS: tuple[Column, ...] = (
    Column("id", lambda i: i.id, "id"),
    Column("kind", lambda i: i.kind.value, "kind", Kind, versioned=True),
    Column("scope", lambda i: str(i.scope), "scope", Scope.from_stored, versioned=True),
    Column("status", lambda i: i.status.value, "status", Status, versioned=True),
    Column("pinned", lambda i: int(i.pinned), "pinned", bool, versioned=True),
    Column("title", lambda i: i.title, "title", versioned=True),
    Column("body", lambda i: i.body, "body", versioned=True),
    Column(
        "tags",
        lambda i: json.dumps(list(i.tags)),
        "tags",
        lambda s: tuple(json.loads(s)),
        versioned=True,
    ),
    Column(
        "links",
        lambda i: _json_list(i.links),
        "links",
        lambda s: tuple(Link.parse(x) for x in json.loads(s)),
        versioned=True,
    ),
    Column("evidence", lambda i: i.evidence, "evidence", versioned=True),
    Column(
        "provenance",
        lambda i: json.dumps(i.provenance.to_dict(), sort_keys=True),
        "provenance",
        lambda s: Provenance.from_dict(json.loads(s)),
        versioned=True,
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
SELECT = ", ".join(NAMES)  # `SELECT {SELECT} FROM items`: the order `row_to_item` reads
SELECT_QUALIFIED = ", ".join(f"items.{n}" for n in NAMES)  # the same, next to a join
INSERT = f"INSERT INTO items ({SELECT}) VALUES ({', '.join('?' * len(NAMES))})"
# Every column but the id, then the id: `update_values` gives them in that order.
UPDATE = f"UPDATE items SET {', '.join(f'{n} = ?' for n in NAMES[1:])} WHERE id = ?"

_WRITES = tuple(c.write for c in ITEM_COLUMNS)
_VERSIONED = tuple(n for n, c in enumerate(ITEM_COLUMNS) if c.versioned)

# A version: its own id, the item's, when, the item's versioned columns, the change.
INSERT_REVISION = (
    "INSERT INTO revisions (id, item_id, created_at, "
    f"{', '.join(NAMES[n] for n in _VERSIONED)}, change) "
    f"VALUES ({', '.join('?' * (len(_VERSIONED) + 4))})"
)


def _reader() -> Callable[[Sequence[Any]], Item]:
    """`row_to_item`, written out from the table once, as `dataclasses` writes an
    `__init__`: a loop over the columns would cost a third more per row, and recall and
    packs read hundreds of rows on every prompt."""
    scope: dict[str, Any] = {"Item": Item}
    args = []
    for n, column in enumerate(ITEM_COLUMNS):
        if column.field is None:
            continue
        if column.read is None:
            args.append(f"{column.field}=row[{n}]")
        else:
            scope[f"read_{n}"] = column.read
            args.append(f"{column.field}=read_{n}(row[{n}])")
    exec(f"def row_to_item(row):\n    return Item({', '.join(args)})\n", scope)
    made: Callable[[Sequence[Any]], Item] = scope["row_to_item"]
    made.__doc__ = "An `Item` from a row whose first columns are `SELECT`'s, in its order."
    return made


row_to_item = _reader()


def item_values(item: Item) -> tuple[Any, ...]:
    """An item's row, in `SELECT`'s order (what `INSERT` takes)."""
    return tuple([write(item) for write in _WRITES])


def update_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """What `UPDATE` takes, from an item's row."""
    return (*values[1:], values[0])


def revision_values(item: Item, change: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A version's row (what `INSERT_REVISION` takes), from its item's row `values`."""
    return (item.revision, item.id, item.updated_at, *(values[n] for n in _VERSIONED), change)
