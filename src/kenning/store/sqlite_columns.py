"""The `items` table's columns as SQLite stores them.

The columns are described once, for every backend, in `store.columns`; here is how
SQLite stores their shapes (a flag as 0 or 1, lists and objects as JSON text) and the
statements made from them: the SELECT list, the INSERT and the UPDATE of an item, the
row-to-`Item` conversion and a version's row. A version reuses the JSON its item's row
was given rather than encoding it twice.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from kenning.model import Item
from kenning.store.columns import ITEM_COLUMNS, NAMES, REVISION_NAMES, Column, reader, writer
from kenning.store.columns import revision_values as revision_values

__all__ = [
    "ITEM_COLUMNS",
    "NAMES",
    "Column",
    "index_text",
    "insert_of",
    "item_values",
    "row_to_item",
    "update_values",
]


# json.dumps builds a new encoder for every call with options; these are made once.
_encode_object = json.JSONEncoder(sort_keys=True).encode
_encode_list = json.JSONEncoder().encode
_objects: dict[tuple[tuple[str, Any], ...], str] = {}  # an import's few provenances


def _object(value: dict[str, Any]) -> str:
    try:
        key = tuple(value.items())
        return _objects[key]
    except KeyError:
        if len(_objects) >= 1024:
            _objects.clear()
        made = _objects[key] = _encode_object(value)
        return made
    except TypeError:  # a value that cannot be a key
        return _encode_object(value)


def _list(value: list[str]) -> str:
    return _encode_list(value) if value else "[]"


SELECT = ", ".join(NAMES)  # `SELECT {SELECT} FROM items`: the order `row_to_item` reads
SELECT_QUALIFIED = ", ".join(f"items.{n}" for n in NAMES)  # the same, next to a join
INSERT = f"INSERT INTO items ({SELECT}) VALUES ({', '.join('?' * len(NAMES))})"
# Every column but the id, then the id: `update_values` gives them in that order.
UPDATE = f"UPDATE items SET {', '.join(f'{n} = ?' for n in NAMES[1:])} WHERE id = ?"
INSERT_REVISION = (
    f"INSERT INTO revisions ({', '.join(REVISION_NAMES)}) "
    f"VALUES ({', '.join('?' * len(REVISION_NAMES))})"
)

item_values = writer({"flag": int, "list": _list, "object": _object})
item_values.__doc__ = "An item's row, in `SELECT`'s order (what `INSERT` takes)."
_read_row = reader({"list": json.loads, "object": json.loads}, by_name=False)
_WIDTH = len(NAMES)


def row_to_item(row: Sequence[Any]) -> Item:
    """An `Item` from a row of the item's columns, in `SELECT`'s order (and maybe more
    after them, such as a search's rank)."""
    return _item_of(tuple(row[:_WIDTH]))


# The Items of rows read before, by the row's item columns: an Item is a value, the
# same for the same columns, and recall reads its candidates' rows on every prompt
# (many the same, prompt after prompt), a third of a millisecond of JSON and
# dataclasses each time. Nothing to invalidate: a changed row is another key.
@functools.lru_cache(maxsize=4096)
def _item_of(values: tuple[Any, ...]) -> Item:
    return _read_row(values)


_TITLE, _BODY, _TAGS = (NAMES.index(name) for name in ("title", "body", "tags"))


def index_text(values: tuple[Any, ...]) -> str:
    """What the search index holds of an item, from its row: its title, body and tags as
    stored (the text `Terms._index_text` gives for the item)."""
    return f"{values[_TITLE]}\n{values[_BODY]}\n{values[_TAGS]}"


@functools.cache
def insert_of(insert: str, rows: int) -> str:
    """`insert` (one row's INSERT ... VALUES (?, ...)) for `rows` rows at once."""
    head, marks = insert.split(" VALUES ")
    return f"{head} VALUES {', '.join([marks] * rows)}"


def update_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """What `UPDATE` takes, from an item's row."""
    return (*values[1:], values[0])
