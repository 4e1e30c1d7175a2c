"""The errors the library raises. Each message says what went wrong and what to do next.

Faces translate them once: the CLI prints one line and exits 1, the MCP server returns
an error result, a hook logs and stays silent.
"""

from __future__ import annotations

from kenning.ids import short_id


class KenningError(Exception):
    """Base of every error kenning raises on purpose."""

    exit_code = 1


class NotFound(KenningError):
    """No item, session or project matches."""


class AmbiguousId(KenningError):
    """A short id matches more than one item (or session: `what`)."""

    def __init__(
        self,
        given: str,
        candidates: list[str],
        what: str = "items",
        advice: str = "give more characters",
    ) -> None:
        self.candidates = candidates
        shown = ", ".join(candidates[:10])
        more = f" (and {len(candidates) - 10} more)" if len(candidates) > 10 else ""
        super().__init__(f"id '{given}' matches {len(candidates)} {what}: {shown}{more}; {advice}")


class RevisionConflict(KenningError):
    """The item changed since the revision the caller expected."""

    def __init__(
        self, item_id: str, expected: str, current: str, message: str | None = None
    ) -> None:
        self.current = current
        super().__init__(
            message
            or f"item {short_id(item_id)} is at revision {current}, not {expected}; "
            "read it again and retry with the current revision"
        )


class NeedsPerson(KenningError):
    """Only a person at a terminal may do this."""


class InvalidInput(KenningError):
    """The input is malformed, too long or otherwise refused."""


class StoreError(KenningError):
    """The store cannot be opened, read or written."""


class NewerStore(StoreError):
    """The store was written by a newer kenning: the store is fine, this kenning is old."""


class StoreBusy(StoreError):
    """Another process held the store's write lock longer than this call could wait."""


class PlanConflict(KenningError):
    """A maintenance plan's targets changed since it was written: nothing was applied."""

    def __init__(self, conflicts: list[object], first: str) -> None:
        self.conflicts = conflicts
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        super().__init__(
            f"the plan conflicts with the store: {first}{more}; nothing was applied "
            "(`ken plan preview` lists every conflict; write the plan again from what "
            "is stored now)"
        )
