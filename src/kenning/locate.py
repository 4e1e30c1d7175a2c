"""Where am I, with everything the store and config know: registered projects,
configured workspaces and the team this host joined (its workspace applies in the repos
it covers) on top of what `where.detect` reads from git and the env."""

from __future__ import annotations

import os
from collections.abc import Mapping

from kenning import paths
from kenning import where as where_mod
from kenning.config import Config
from kenning.store import Store


def here(
    store: Store | None,
    config: Config,
    cwd: str | os.PathLike[str] | None = None,
    *,
    agent: str | None = None,
    session: str | None = None,
    env: Mapping[str, str] | None = None,
) -> where_mod.Where:
    from kenning.team import state as team_state  # the standard library only

    workspaces = config.file.get("workspaces")
    projects = store.projects() if store is not None else []
    env = dict(paths.environ() if env is None else env)
    return where_mod.detect(
        cwd,
        env,
        agent=agent,
        session=session,
        workspaces=workspaces if isinstance(workspaces, dict) else None,
        projects={p.slug: p.folder for p in projects},
        project_repos={p.slug: p.repo for p in projects if p.repo},
        workspace_setting=config.workspace,
        team=team_state.team_here(store.path) if store is not None else None,
    )
