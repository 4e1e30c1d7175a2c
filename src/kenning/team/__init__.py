"""Team memory: `ken serve` (the server, on PostgreSQL) and `ken team` (each host's side).

Nothing here imports the server's packages at import time: `kenning.team.client` and
`kenning.team.sync` run in the SessionStart hook, whose path stays on the standard
library.
"""
