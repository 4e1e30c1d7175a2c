"""The review page (to come)."""

from __future__ import annotations

from starlette.routing import Route

from kenning.team.service import Team


def web_routes(team: Team) -> list[Route]:
    return []
