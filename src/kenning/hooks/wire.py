"""How the hook client and the hook server talk: a few netstrings, no JSON.

The client must start faster than `python -c "import sqlite3, json"`, so it imports
nothing it can do without: a request is three netstrings (`<length>:<bytes>`): the
arguments and the environment, each NUL-separated, then stdin as it came. The answer
is one byte, `O` followed by what to print, or `S` when the server steps aside, or `R`
followed by netstrings: what to print, then for each `ken` command the client is to
start detached (a summarizer), its folder and its NUL-separated arguments. An answer
may open with `P` and a netstring of the answering server's pid (the client shows it
with `KEN_HOOK_TRACE=1`, which is how tests see which process answered).

Only the environment a hook's handling reads is sent (`HOOK_ENV`): an agent's shell
holds API keys and tokens that are none of the server's business. Each side checks who
is at the other end of the socket (`peer`) and talks only to its own user.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Mapping

OK = b"O"
PID = b"P"
STEP_ASIDE = b"S"
AND_START = b"R"
STARTABLE = frozenset({"summarize"})  # the `ken` commands a server may ask a client to start
STOP = "--stop-server"
ACCEPTED = b"A"  # sent at once by a server that has read a request whole: it lives
ACCEPT_SECONDS = 0.5  # a server that has not said ACCEPTED by then is stopped or stuck
# How long a client waits for the server's answer before it answers its hook itself: the
# timeout `ken integrate` gives the event (agents.agent.HOOK_TIMEOUTS), less the longest
# the hook waits for the store in its own process (hooks.run.BUSY_BUDGET) and
# COLD_SECONDS to start Python and do the rest, and at most ANSWER_SECONDS. So a server
# that answers late still leaves its client time to answer within the agent's timeout.
# The client cannot afford to import those tables; a test holds this one to them. An
# event not named here (none on the command line) gets the shortest.
COLD_SECONDS = 1.0
ANSWER_SECONDS = 5.0
_WAITS = {
    "sessionstart": 5.0,
    "userpromptsubmit": 5.0,
    "userpromptsubmitted": 5.0,
    "beforeagent": 5.0,
    "prompt": 5.0,
    "posttooluse": 3.0,
    "posttoolusefailure": 3.0,
    "permissiondenied": 3.0,
    "aftertool": 3.0,
    "tool": 3.0,
    "stop": 5.0,
    "agentstop": 5.0,
    "afteragent": 5.0,
    "precompact": 5.0,
    "sessionend": 1.0,
}
# The client sends when it gives up (its time.monotonic_ns(), a clock every process of
# the machine shares) among the environment's variables: a server never starts a hook
# whose client has given up on it (and answered it itself), and ends its store waits
# ANSWER_MARGIN before that.
DEADLINE = "KEN_HOOK_DEADLINE"
ANSWER_MARGIN = 0.2
MAX_STDIN_BYTES = 8 * 1024 * 1024  # a hook's payload; a longer one is refused, and logged
MAX_REQUEST_BYTES = MAX_STDIN_BYTES + 1024 * 1024  # with its arguments and environment

# Every environment variable a hook reads (a name, or a prefix ending in `*`): where the
# store, config and state are (KEN_*, XDG_*, HOME), the agent markers (each agent
# module's `env_markers`; the client cannot afford to import them), Codex's and
# Copilot's homes, what decides the repo as git and git-remote-codecommit read it (GIT_DIR,
# which config files, an AWS profile's region: names, never credentials), and what the
# programs a hook starts need to run (git, the summarizer): PATH, locale, time zone, temp
# folder. Nothing else leaves the agent's shell; a test checks that every variable
# kenning's code reads is here.
HOOK_ENV = (
    "KEN_*",
    "XDG_*",
    "HOME",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_CODE_EXECPATH",
    "GEMINI_PROJECT_DIR",
    "CODEX_TOOL_CALL_ID",
    "COPILOT_HOOK_DIR",
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CODEX_THREAD_ID",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "CODEX_CI",
    "GEMINI_CLI",
    "OPENCODE",
    "OPENCODE_PID",
    "COPILOT_HOME",
    "COPILOT_CLI",
    "COPILOT_AGENT_SESSION_ID",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_CONFIG_FILE",
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
)
_NAMES = frozenset(name for name in HOOK_ENV if not name.endswith("*"))
_PREFIXES = tuple(name[:-1] for name in HOOK_ENV if name.endswith("*"))


def answer_seconds(event: str | None) -> float:
    """How long a client waits for the server's answer to `event` (`_WAITS`)."""
    key = (event or "").replace("_", "").replace("-", "").replace(".", "").lower()
    return _WAITS.get(key, min(_WAITS.values()))


def hook_args(argv: list[str]) -> tuple[str | None, str | None, bool]:
    """(event, agent, debug) of `ken hook EVENT [--agent NAME] [--debug]`: read by the
    client, the server and the wrapper alike, so each log line names the same agent."""
    event = agent = None
    debug = False
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--agent" and rest:
            agent = rest.pop(0).lower()
        elif arg.startswith("--agent="):
            agent = arg.split("=", 1)[1].lower()
        elif arg == "--debug":
            debug = True
        elif event is None and not arg.startswith("-"):
            event = arg
    return event, agent, debug


def hook_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of `env` a hook reads (HOOK_ENV, and the git config it gives)."""
    found = {k: v for k, v in env.items() if k in _NAMES or k.startswith(_PREFIXES)}
    found.update(git_config_env(env))
    return found


# Git config given in the environment (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_<n>,
# GIT_CONFIG_VALUE_<n>): only the entries that decide the repo as kenning reads it
# (kenning.git) are sent, numbered anew; any other value may be a credential (an
# `http.extraHeader`).
_GIT_KEYS = ("remote.", "url.", "include.path", "includeif.", "extensions.")


def git_config_env(env: Mapping[str, str]) -> dict[str, str]:
    """The git config entries in `env` that a hook reads. A count or a pair git would
    refuse is sent as it is, so that a hook refuses it as git does."""
    count = env.get("GIT_CONFIG_COUNT")
    if count is None:
        return {}
    try:
        number = int(count)
        pairs = [(env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"]) for n in range(number)]
    except (KeyError, ValueError):
        return {"GIT_CONFIG_COUNT": count}
    if number < 0:
        return {"GIT_CONFIG_COUNT": count}
    kept = [(k, v) for k, v in pairs if k.lower().startswith(_GIT_KEYS)]
    found = {"GIT_CONFIG_COUNT": str(len(kept))}
    for n, (name, value) in enumerate(kept):
        found[f"GIT_CONFIG_KEY_{n}"] = name
        found[f"GIT_CONFIG_VALUE_{n}"] = value
    return found


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a process a hook starts (the server, a summarizer): what a
    hook reads, and Python's own variables, so that it runs the same kenning."""
    found = hook_env(env)
    found.update((k, v) for k, v in env.items() if k.startswith("PYTHON"))
    return found


def peer(conn: _socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a connected Unix socket, from the
    kernel (SO_PEERCRED); None where the system does not tell (then the socket file's
    owner, in a folder checked to be this user's, stands for it)."""
    import _socket  # the C module, as the client imports it, when it connects

    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = conn.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(creds[0:4], sys.byteorder), int.from_bytes(creds[4:8], sys.byteorder)


def _text(value: str) -> bytes:
    return value.encode("utf-8", "surrogateescape")


def _netstring(data: bytes) -> bytes:
    return str(len(data)).encode() + b":" + data


def pack_request(argv: list[str], env: dict[str, str], stdin: bytes) -> bytes:
    args = b"\0".join(_text(a) for a in argv)
    pairs = b"\0".join(_text(f"{k}={v}") for k, v in env.items())
    return _netstring(args) + _netstring(pairs) + _netstring(stdin)


def _split(blob: bytes) -> list[str]:
    return [part.decode("utf-8", "surrogateescape") for part in blob.split(b"\0")] if blob else []


def _netstrings(data: bytes, count: int | None = None) -> list[bytes]:
    """`count` netstrings (or as many as there are) that make up all of `data`; raises
    ValueError when they do not."""
    fields: list[bytes] = []
    at = 0
    while at < len(data) and (count is None or len(fields) < count):
        colon = data.index(b":", at)
        size = int(data[at:colon])
        field = data[colon + 1 : colon + 1 + size]
        if len(field) != size:
            raise ValueError("a cut-off hook message")
        fields.append(field)
        at = colon + 1 + size
    if at != len(data) or (count is not None and len(fields) != count):
        raise ValueError("not a hook message")
    return fields


def unpack_request(data: bytes) -> tuple[list[str], dict[str, str], bytes]:
    """The request's parts; raises ValueError when it is not a whole request."""
    fields = _netstrings(data, 3)
    env = dict(pair.partition("=")[::2] for pair in _split(fields[1]) if "=" in pair)
    return _split(fields[0]), env, fields[2]


def pack_answer(
    text: str, starts: list[tuple[list[str], str | None]], pid: int | None = None
) -> bytes:
    """The answer: what to print, and the `ken` commands to start (args, folder), from
    the server with `pid`."""
    head = PID + _netstring(str(pid).encode()) if pid is not None else b""
    if not starts:
        return head + OK + text.encode("utf-8")
    parts = [_netstring(text.encode("utf-8"))]
    for args, cwd in starts:
        parts += [_netstring(_text(cwd or "")), _netstring(b"\0".join(_text(a) for a in args))]
    return head + AND_START + b"".join(parts)


def answer_pid(data: bytes) -> tuple[int | None, bytes]:
    """The answering server's pid (None when the answer does not say) and the rest."""
    if not data.startswith(PID):
        return None, data
    colon = data.find(b":", 1)
    size = int(data[1:colon]) if colon > 1 and data[1:colon].isdigit() else -1
    field = data[colon + 1 : colon + 1 + size]
    if size < 0 or len(field) != size or not field.isdigit():
        return None, b""
    return int(field), data[colon + 1 + size :]


def unpack_answer(data: bytes) -> tuple[str, list[tuple[list[str], str | None]]] | None:
    """What to print and what to start, or None when the server did not answer (it
    stepped aside, or said something else). A pid in front is read by `answer_pid`."""
    data = answer_pid(data)[1]
    if data.startswith(OK):
        return data[1:].decode("utf-8", "replace"), []
    if not data.startswith(AND_START):
        return None
    try:
        fields = _netstrings(data[1:])
    except ValueError:
        return None
    if len(fields) % 2 != 1:
        return None
    starts = [
        (_split(fields[n + 1]), fields[n].decode("utf-8", "surrogateescape") or None)
        for n in range(1, len(fields), 2)
    ]
    return fields[0].decode("utf-8", "replace"), starts
