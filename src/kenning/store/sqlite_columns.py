"""The `items` table's columns as SQLite stores them.

The columns are described once, for every backend, in `store.columns`; here is how
SQLite stores their shapes (a flag as 0 or 1, lists and objects as JSON text) and the
statements made from them: the SELECT list, the INSERT and the UPDATE of an item, the
row-to-`Item` conversion and a version's row. A version reuses the JSON its item's row
was given rather than encoding it twice.
"""

from __future__ import annotations

import json
from typing import Any

from kenning.store.columns import ITEM_COLUMNS, NAMES, REVISION_NAMES, Column, reader, writer
from kenning.store.columns import revision_values as revision_values

__all__ = ["ITEM_COLUMNS", "NAMES", "Column", "item_values", "row_to_item", "update_values"]


def _object(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


SELECT = ", ".join(NAMES)  # `SELECT {SELECT} FROM items`: the order `row_to_item` reads
SELECT_QUALIFIED = ", ".join(f"items.{n}" for n in NAMES)  # the same, next to a join
INSERT = f"INSERT INTO items ({SELECT}) VALUES ({', '.join('?' * len(NAMES))})"
# Every column but the id, then the id: `update_values` gives them in that order.
UPDATE = f"UPDATE items SET {', '.join(f'{n} = ?' for n in NAMES[1:])} WHERE id = ?"
INSERT_REVISION = (
    f"INSERT INTO revisions ({', '.join(REVISION_NAMES)}) "
    f"VALUES ({', '.join('?' * len(REVISION_NAMES))})"
)

item_values = writer({"flag": int, "list": json.dumps, "object": _object})
item_values.__doc__ = "An item's row, in `SELECT`'s order (what `INSERT` takes)."
row_to_item = reader({"list": json.loads, "object": json.loads}, by_name=False)


def update_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """What `UPDATE` takes, from an item's row."""
    return (*values[1:], values[0])
