"""`ken mcp`: the stdio MCP server through which agents search and write memory.

Tools: memory_context, memory_search, memory_get, memory_propose, memory_update,
memory_handoff, session_history, record_reflection, memory_plan_draft. There is no
delete tool, and no tool applies a plan. The
write policy lives in `kenning.proposals`; this module only maps tools onto the
library and library errors onto tool errors, which the SDK returns to the model as
error results while the server keeps serving. It reads stdin through `_Wire`, so that a
line the SDK cannot read is answered with an error rather than dropped.

The server reads its process tree once and, at every call, finds the open session whose
agent process is one of its ancestors (see `kenning.identity`): a `/clear` or a resume
opens a new session under the same server. When nothing there names the agent, the name
the client gave itself in `initialize` (`clientInfo.name`) does. Every write records
agent, model, session and how=mcp.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import signal
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, cast

import anyio
import mcp_types
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import BeforeValidator, Field, ValidationError

from kenning import (
    __version__,
    agents,
    deliver,
    handoff,
    items,
    plans,
    policy,
    printable,
    proposals,
)
from kenning import lessons as run_lessons
from kenning import where as where_mod
from kenning.config import Config, find
from kenning.errors import InvalidInput, KenningError
from kenning.hooklog import log
from kenning.identity import Identity, identify
from kenning.ids import short_id
from kenning.locate import here
from kenning.model import MAX_NAME, Item, Status
from kenning.pack import MIN_BUDGET
from kenning.redact import count_markers, redact
from kenning.sessions import process_chain
from kenning.store import SessionQuery, Store, open_store, report_migrations_to

INSTRUCTIONS = (
    "kenning is the memory the person's coding agents share. Search it before you ask "
    "the person something they may have told an agent already. Save only what the repo "
    "cannot tell: a correction, refusal, preference or decision, in the person's words, "
    "with the evidence that prompted it. Saves to repo, workspace or global scope wait "
    "for the person's approval."
)
# With memory turned off the tools stay listed: an agent asked to remember something
# calls one and can tell the person the reason it answers with. The instructions say it
# up front, so the agent does not search or save for nothing.
OFF_INSTRUCTIONS = (
    "kenning, the memory the person's coding agents share, is turned off here ({why}): "
    "it tells you nothing and keeps nothing, and its tools answer only that. Do not "
    "search or save memory. If the person asks you to remember or recall something, tell "
    "them memory is off, and that {how}."
)


def instructions(config: Config) -> str:
    """What the model is told when it connects, decided when the server starts (it reads
    its settings once)."""
    if config.memory_enabled:
        return INSTRUCTIONS
    setting = find("memory.enabled")
    if config.source(setting).startswith("env") and setting.env:
        why = f"{setting.env}={config.env[setting.env]} where the agent runs"
        how = f"an agent started without {setting.env} set so has it again"
    else:
        why = "memory.enabled = false in kenning's config.toml"
        how = "`ken config set memory.enabled true` turns it on for the sessions started after"
    return OFF_INSTRUCTIONS.format(why=why, how=how)


class Memory:
    """The server's state: one store connection (serialized) and who we serve.

    `ken mcp` reads where it runs from its own process: the folder, the environment and
    the process tree (itself and its ancestors). A server in another process's hands (the
    tests' in-memory client) passes them instead; nothing else differs.
    """

    def __init__(
        self,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        chain: list[tuple[int, str]] | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self._store: Store | None = None
        self._identity: Identity | None = None
        self._cwd = None if cwd is None else os.fspath(cwd)
        self._env = None if env is None else dict(env)
        self._chain = chain
        self.client: str | None = None  # the client's own name (`clientInfo.name`)
        self.config = Config()
        # What this connection filed (proposals, replacements): its client reads them
        # back by the ids it was given, even when kenning cannot name it.
        self.filed: set[str] = set()

    @property
    def store(self) -> Store:
        if self._store is None:
            from kenning import spool

            self._store = open_store()
            spool.replay(self._store, wait=1.0)  # what hooks could not write, first
        return self._store

    @property
    def identity(self) -> Identity:
        """Who we serve, looked up once per call (`run` forgets it)."""
        if self._identity is None:
            if self._chain is None:
                self._chain = process_chain(os.getpid())
            self._identity = identify(
                self.store, self._chain, cwd=self._cwd, env=self._env, client=self.client
            )
        return self._identity

    def close(self) -> None:
        """Close the store connection, if one was opened (`ken mcp` leaves it to its exit)."""
        with self.lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def where(self) -> where_mod.Where:
        ident = self.identity
        session = ident.session
        return here(
            self.store,
            self.config,
            ident.cwd,
            env=self._env,
            agent=ident.agent or ident.client,
            session=(
                f"{session.agent}:{session.agent_session_id}"
                if session and session.agent_session_id
                else None
            ),
        )

    def context(self, model: str | None) -> proposals.AgentContext:
        if model and len(model) > MAX_NAME:
            raise InvalidInput(f"'model' is {len(model):,} characters, over {MAX_NAME}")
        ident = self.identity
        session = ident.session
        return proposals.AgentContext(
            agent=ident.writer,
            where=self.where(),
            model=model or (session.model if session else None),
            session_id=session.id if session else None,
            agent_session_id=session.agent_session_id if session else None,
        )

    def visible(self, ref: str) -> Item:
        """The memory `ref` names, among those this agent may know of (`items.get_known`:
        none of a repo whose memory is not delivered to agents, no other's proposal), for
        every tool that takes an id: what `memory_get` says does not exist, no other tool
        may read, change or tell the revision of."""
        who = policy.Actor(self.identity.writer)
        blocked = deliver.blocked_repos(self.config)
        return items.get_known(self.store, ref, who, blocked, own=frozenset(self.filed))

    def known(self, blocked: set[str]) -> Callable[[Item], bool] | None:
        """Which memories an id this agent gives resolves among, as `visible` resolves
        it (a plan's ids)."""
        who = policy.Actor(self.identity.writer)
        return items.known_to(who, blocked, own=frozenset(self.filed))

    def run(self, fn: Any, *, too_long: str | None = None) -> Any:
        """`fn()`'s answer as the model is given it (`_shown`), a library error as a tool
        error; `too_long`: what the tool can do with a memory over the size limit (the
        library's advice is the CLI's `--link`)."""
        with self.lock:
            self._identity = None  # the agent's session may have changed since the last call
            try:
                self.config = Config()  # the person may have flipped a switch meanwhile
                return _shown(fn())
            except items.TooLong as exc:
                raise ToolError(exc.advised(too_long) if too_long else str(exc)) from None
            except KenningError as exc:
                raise ToolError(str(exc)) from None


def _as_stored(given: str, stored: str) -> str:
    """An agent's new text for a memory, each line it sent back as it was shown (`_shown`:
    a context tag defused, a control character escaped) and did not change read as the
    memory holds it, so that resending what it read changes nothing it did not touch."""
    held = {shown: line for line in stored.split("\n") if (shown := _shown(line)) != line}
    if not held:
        return given
    return "\n".join(held.get(line, line) for line in given.split("\n"))


def _shown(value: Any) -> Any:
    """A tool's answer (parsed JSON) with every text in it as `ken show` shows it
    (`printable.clean`): a memory's carriage return, U+2028 or other line break but the
    newline, and its control characters, escaped. JSON escapes a carriage return but not
    U+2028 or U+0085, and the model reads the answer's text: a title must not start a
    line of its own there. Nor any agent's context tag (`agents.defused`): Gemini CLI
    hands the answer to its model inside `<untrusted_context>`."""
    if isinstance(value, str):
        return agents.defused(printable.clean(value))
    if isinstance(value, list | tuple):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    return value


def _redacted(
    answer: dict[str, Any],
    item: Item,
    given: list[str],
    ctx: proposals.AgentContext,
    *,
    title: bool = True,
) -> dict[str, Any]:
    """Say in an answer what was redacted (`given`, and the provenance `ctx` wrote with:
    the model name is the agent's text too): kinds and counts, never the values."""
    counts = items.redactions(item, given, provenance=ctx.provenance(), title=title)
    return _say_redacted(answer, counts)


def _say_redacted(answer: dict[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    answer["redacted"] = counts
    if counts and "note" in answer:
        answer["note"] = f"{answer['note']}; {items.describe_redactions(counts)}"
    return answer


def _item_brief(item: Item) -> dict[str, Any]:
    return {
        "id": item.id,
        "short_id": short_id(item.id),
        "title": item.title,
        "body": item.body,
        "kind": item.kind.value,
        "scope": str(item.scope),
        "status": item.status.value,
        "revision": item.revision,
    }


@dataclass(frozen=True)
class _Told:
    """Who is told a memory once it stands, when the switches keep it from some agents:
    `nobody` says why no agent is, `only` names the agents memory.deliver_to lets be
    (the writer not among them)."""

    nobody: str = ""
    only: str = ""


def _told(config: Config, agent: str | None, item: Item) -> _Told:
    if deliver.withheld(item, deliver.blocked_repos(config)):
        return _Told(nobody=f"it belongs to {deliver.NOT_DELIVERED}")
    if config.delivers_to(agent):
        return _Told()
    if not config.memory_deliver_to:
        return _Told(nobody="memory.deliver_to names no agent")
    return _Told(only=", ".join(config.memory_deliver_to))


def _saved_note(item: Item, told: _Told | None = None) -> str:
    told = told or _Told()
    match item.status.value:
        case "active" if told.nobody:
            return f"saved, but no agent is told it: {told.nobody}"
        case "active" if told.only:
            return (
                f"saved: the agents memory.deliver_to names ({told.only}) see it as yours, "
                "unreviewed; you are not among them"
            )
        case "active":
            return "saved: other agents see it as yours, unreviewed"
        case "dismissed":
            return (
                f"set aside: a person dismissed the same statement before "
                f"({item.dismiss_reason}); it is proposed again once "
                f"{items.SESSIONS_TO_PROPOSE_AGAIN} sessions have repeated it"
            )
        case _ if told.nobody:
            return (
                f"proposed: a person will review it, but no agent is told it even then: "
                f"{told.nobody}"
            )
        case _ if told.only:
            return (
                f"proposed: a person will review it before the agents memory.deliver_to "
                f"names ({told.only}) see it; you are not among them"
            )
        case _:
            return "proposed: a person will review it before other sessions see it"


def _updated_note(item: Item, outcome: proposals.Updated) -> str:
    match outcome:
        case "updated" if item.status is Status.PROPOSED:
            return "updated: your proposal, as a new version; it still waits for a person's review"
        case "updated":
            return "updated"
        case "waiting":
            return _waiting_note(item)
        case "told":
            return (
                f"not filed: the same statement is active there already ({short_id(item.id)}); "
                "there is nothing to replace"
            )
        case _ if item.status is Status.DISMISSED:
            return _saved_note(item)
        case _:
            return "proposed as a replacement"


def _waiting_note(item: Item) -> str:
    return (
        f"not filed again: the same statement waits for review already ({short_id(item.id)}); "
        "a person is asked once"
    )


WRITING_TOOLS = frozenset(
    {"memory_propose", "memory_update", "memory_handoff", "record_reflection", "memory_plan_draft"}
)


# A JSON string escape of a UTF-16 surrogate: paired, it is one character; alone (Node's
# JSON.stringify writes one for an emoji cut in half) the SDK cannot read the message.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]", re.ASCII)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _no_lone_surrogates(value: Any) -> Any:
    """`value` (parsed JSON) with each lone surrogate replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_no_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_lone_surrogates(k): _no_lone_surrogates(v) for k, v in value.items()}
    return value


def _wire_error(line: str) -> mcp_types.JSONRPCError | None:
    """The JSON-RPC error to answer a line the SDK cannot read with (it would drop the
    line, and the client would wait for its answer until it timed out); None for a line
    it reads."""
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError:
        pass
    try:
        raw = json.loads(line)
    except ValueError as exc:
        code, message, request_id = mcp_types.PARSE_ERROR, f"Parse error: {exc}", None
    else:
        found = raw.get("id") if isinstance(raw, dict) else None
        request_id = found if isinstance(found, str | int) and not isinstance(found, bool) else None
        code, message = mcp_types.INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
    return mcp_types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message)
    )


class _Wire:
    """The lines of stdin, as the SDK's stdio transport reads them, made readable first.

    A lone surrogate escape is replaced (U+FFFD) and the call goes on; a line that is
    not JSON, or not a JSON-RPC message, is answered here with a parse (or invalid
    request) error and logged, rather than dropped without a word. The SDK points fd 0
    at the null device while it serves, so that children read no protocol bytes; given
    its own stream it does not, so this does it (and puts fd 0 back at the end).
    """

    def __init__(self) -> None:
        self.replies: Any = None  # the transport's write stream, once it is open
        self.ready = anyio.Event()
        self._wire = os.dup(0)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)

    def close(self) -> None:
        # The wire stays open: the thread reading it may still be blocked there.
        os.dup2(self._wire, 0)

    async def lines(self) -> AsyncIterator[str]:
        binary = os.fdopen(self._wire, "rb", closefd=False)
        text = anyio.wrap_file(io.TextIOWrapper(binary, encoding="utf-8", errors="replace"))
        async for line in text:
            if _SURROGATE_ESCAPE.search(line):
                with contextlib.suppress(ValueError):  # not JSON: answered below
                    line = json.dumps(_no_lone_surrogates(json.loads(line))) + "\n"
            error = _wire_error(line) if line.strip() else None
            if error is None:
                yield line
                continue
            logging.getLogger(__name__).warning(
                "ken mcp: %s (line of %d characters)", error.error.message, len(line)
            )
            await self.ready.wait()
            try:
                await self.replies.send(SessionMessage(error))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


class _Server(MCPServer):
    """The SDK's server, with arguments that fail their schema answered in one line
    (the SDK gives pydantic's report: a line per error, and a link to its docs), and an
    argument a writing tool does not take refused, not ignored: a mistyped "Scope" would
    save the memory to the default scope without a word. A read ignores one, harmlessly.
    """

    _takes: dict[str, tuple[str, ...]] | None = None
    memory: Memory | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], *rest: Any) -> Any:
        if self.memory is not None and rest:
            self.memory.client = _client_name(rest[0])
        if self._takes is None:
            self._takes = {
                t.name: tuple(t.input_schema.get("properties", {})) for t in await self.list_tools()
            }
        known = self._takes.get(name, ()) if name in WRITING_TOOLS else arguments
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            takes = ", ".join(self._takes[name]) or "nothing"
            raise ToolError(
                f"{name} takes no argument {', '.join(map(repr, unknown))}: it takes {takes}"
            )
        try:
            return await super().call_tool(name, arguments, *rest)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                # An error may echo what it was given (an id, a revision, a scope, a tag):
                # a secret in it redacted, a control character escaped, as in an answer.
                raise ToolError(_said(str(exc))) from cause
            wrong = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in cause.errors()
            )
            raise ToolError(_said(f"bad arguments to {name}: {wrong}")) from cause

    async def run_stdio_async(self) -> None:
        """As the SDK's, reading stdin through `_Wire`."""
        wire = _Wire()
        try:
            stdin = cast("anyio.AsyncFile[str]", wire.lines())  # the SDK only iterates it
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                wire.replies = write_stream
                wire.ready.set()
                await self._lowlevel_server.run(
                    read_stream, write_stream, self._lowlevel_server.create_initialization_options()
                )
        finally:
            wire.close()


def _said(error: str) -> str:
    """An error's text as the model is given it: any secret it echoes redacted, and on
    one line with control characters escaped (`_shown`)."""
    return cast("str", _shown(printable.clean(redact(error).text, one_line=True)))


def _client_name(context: Any) -> str | None:
    """The name the client gave itself (`clientInfo` of `initialize`, or of the request's
    own envelope under the 2026 protocol), if any."""
    try:
        params = context.session.client_params
    except (AttributeError, ValueError):  # a call from outside a request
        return None
    return params.client_info.name if params is not None else None


def _not_a_flag(value: object) -> object:
    if isinstance(value, bool):  # JSON true is no count: pydantic would read it as 1
        raise ValueError("must be a whole number, not true or false")
    return value


# On a count an agent gives, after its Field (so the schema keeps the Field's bounds): a
# whole number (or one written as text), never true or false.
NOT_A_FLAG = BeforeValidator(_not_a_flag)

LESSON_KEYS = ("lesson", "evidence", "kind")  # what one lesson of record_reflection holds

# What a tool can do with a memory over the size limit: only memory_propose takes links.
TOO_LONG_PROPOSE = 'link the details (links: ["file:PATH"] or ["url:URL"])'
TOO_LONG_UPDATE = (
    "leave the details in a file or page that a memory links to (memory_propose takes links)"
)
TOO_LONG_HANDOFF = (
    "say where the details are (a file, a commit, a pull request) instead of copying them"
)
TOO_LONG_LESSON = "write each lesson as the rule it taught, in a sentence or two"


def build_server(memory: Memory | None = None) -> MCPServer:
    mem = memory or Memory()
    server = _Server(
        "ken", version=__version__, instructions=instructions(mem.config), log_level="WARNING"
    )
    server.memory = mem

    @server.tool()
    def memory_context(
        budget: Annotated[
            int | None,
            Field(
                ge=MIN_BUDGET,
                le=20000,
                description="Token budget (default: memory.budget, as the SessionStart pack)",
            ),
            NOT_A_FLAG,
        ] = None,
    ) -> dict[str, Any]:
        """The context pack for where you run: pinned memories, preferences and
        corrections, decisions and facts, tasks, handoffs and recent sessions."""

        def work() -> dict[str, Any]:
            ident = mem.identity
            if not deliver.may_deliver(mem.config, ident.agent, mem.where()):
                off = deliver.delivery_off(mem.config, ident.agent)  # which switch did it
                return {"text": f"{off[:1].upper()}{off[1:]}.", "items": [], "omitted": 0}
            if mem.config.memory_enabled:
                # As `ken pack`: a session whose agent is gone is wrapped up first, so the
                # pack shows the handoff it left.
                handoff.close_left(mem.store, mem.config)
            # It is calling kenning's tools: the pack names them as its client shows them.
            tools = deliver.tools_of(ident.agent, mem.config, connected=True)
            pack = deliver.pack_for(
                mem.store,
                mem.config,
                mem.where(),
                session=ident.session,
                budget=budget,
                tools=tools,
            )
            return {
                "text": pack.text,
                "items": [_item_brief(i) for i in pack.items],
                "omitted": pack.omitted,
            }

        result: dict[str, Any] = mem.run(work)
        return result

    @server.tool()
    def memory_search(
        query: Annotated[
            str, Field(min_length=1, max_length=2000, description="Words to search for")
        ],
        scopes: Annotated[
            list[str] | None,
            Field(
                description="Only these scopes: repo, workspace, workstream, project, session "
                "or agent for the one here, global, or type:name (repo:github.com/org/app); "
                "default: every scope here"
            ),
        ] = None,
        kinds: Annotated[list[str] | None, Field(description="Only these kinds")] = None,
        limit: Annotated[int, Field(ge=1, le=50), NOT_A_FLAG] = 10,
    ) -> dict[str, Any]:
        """Full-text search over active memories, best first. Memories that hold every
        word come first (every_word true), then, to fill the limit, those that hold some
        of its words; words match their stems; the last word matches as a prefix of the
        words as written and of their stems (deploy finds "Deployment")."""

        def work() -> dict[str, Any]:
            here = mem.where()
            if not deliver.may_deliver(mem.config, mem.identity.agent, here):
                off = deliver.delivery_off(mem.config, mem.identity.agent)
                raise ToolError(f"{off}; nothing to search")
            blocked = deliver.blocked_repos(mem.config)
            chosen = deliver.deliverable_scopes(
                [here.scope(s, to_find=True) for s in scopes] if scopes else here.scopes,
                blocked,
                here.repo,
            )
            if not chosen:
                return {"results": []}  # every scope asked for is private
            found = items.search(
                mem.store,
                query,
                scopes=chosen,
                kinds=[k.value for k in map(items.parse_kind, kinds or []) if k],
                limit=limit,
                exclude_repos=sorted(blocked),
            )
            kept = [f for f in found if not deliver.withheld(f.item, blocked)]
            return {
                "results": [
                    {**_item_brief(f.item), "score": round(f.score, 3), "every_word": f.every_word}
                    for f in kept
                ]
            }

        result: dict[str, Any] = mem.run(work)
        return result

    @server.tool()
    def memory_get(
        id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=40,
                description="Item id, 4+ characters of its start or end, or the start of "
                "its 6-character short id",
            ),
        ],
    ) -> dict[str, Any]:
        """One memory in full, with provenance, its current revision and every version."""

        def work() -> dict[str, Any]:
            if not deliver.may_deliver(mem.config, mem.identity.agent, mem.where()):
                raise ToolError(deliver.delivery_off(mem.config, mem.identity.agent))
            item = mem.visible(id)
            # What it was filed to replace, as `ken show --json` says, when the agent may
            # know of that one too.
            old = items.replaced_by(mem.store, item)
            known = mem.known(deliver.blocked_repos(mem.config))
            if old is not None and known is not None and not known(old):
                old = None
            data = {**item.to_dict(), "replaces": old.id if old else None}
            data["history"] = [r.to_dict() for r in mem.store.revisions(item.id)]
            return data

        result: dict[str, Any] = mem.run(work)
        return result

    @server.tool()
    def memory_propose(
        text: Annotated[
            str,
            Field(min_length=1, description="Title on the first line, then the body; 4 KB at most"),
        ],
        kind: Annotated[
            str,
            Field(
                description="fact, decision, preference, correction, "
                "task, handoff, summary, lesson or note"
            ),
        ] = "note",
        scope: Annotated[
            str | None,
            Field(
                description="workstream, project, session, repo, workspace or agent (the one "
                "here), global, or type:name. Default: your workstream. Notes, tasks, "
                "handoffs and summaries there are saved at once; rules (preference, "
                "correction, decision, fact, lesson), and anything in repo, workspace, "
                "agent or global, wait for the person"
            ),
        ] = None,
        tags: list[str] | None = None,
        links: Annotated[
            list[str] | None,
            Field(description="file:PATH, url:URL, item:ID, commit:SHA or session:ID"),
        ] = None,
        evidence: Annotated[
            str, Field(description="The excerpt that prompted it (required for shared scopes)")
        ] = "",
        model: Annotated[str | None, Field(description="Your model name")] = None,
    ) -> dict[str, Any]:
        """Save a memory. Only what the repo cannot tell: a correction, refusal,
        preference or decision, in the person's words, with the evidence."""

        def work() -> dict[str, Any]:
            ctx = mem.context(model)
            # "" is a scope written badly, refused as a read refuses it, not the default.
            target = ctx.where.scope(scope) if scope is not None else None
            deliver.check_write(
                mem.config,
                ctx.where,
                [target] if target else [],
                projects=mem.store.projects(),
            )
            capped: list[Item] = []
            item, filed = proposals.propose_once(
                mem.store,
                ctx,
                text,
                kind=kind,
                scope=scope,
                tags=tags or [],
                links=links or [],
                evidence=evidence,
                archived=capped,
            )
            mem.filed.add(item.id)
            given = [text, evidence, *(tags or []), *(links or [])]
            told = _told(mem.config, mem.identity.agent, item)
            if filed:
                brief = {**_item_brief(item), "note": _saved_note(item, told)}
                answer = _redacted(brief, item, given, ctx)
            else:  # nothing of this call was stored, so nothing of it was redacted
                answer = {**_item_brief(item), "note": _waiting_note(item), "redacted": {}}
            if capped:
                answer["archived"] = [
                    {"id": i.id, "short_id": short_id(i.id), "title": i.title, "why": items.CAP_WHY}
                    for i in capped
                ]
            return answer

        result: dict[str, Any] = mem.run(work, too_long=TOO_LONG_PROPOSE)
        return result

    @server.tool()
    def memory_update(
        id: Annotated[str, Field(min_length=1, max_length=40)],
        text: Annotated[str, Field(min_length=1, description="The new text")],
        expected_revision: Annotated[
            str, Field(min_length=1, description="The revision you read (memory_get)")
        ],
        evidence: str = "",
        model: str | None = None,
    ) -> dict[str, Any]:
        """Replace your own working note (session, workstream or project scope); for a
        shared memory this files a proposed replacement linked to the original."""

        def work() -> dict[str, Any]:
            ctx = mem.context(model)
            # What it cannot read, it cannot change: the error is memory_get's, word for
            # word, and says nothing of the memory (not its revision, tags or links).
            target = mem.visible(id)
            deliver.check_write(
                mem.config, ctx.where, [target.scope], projects=mem.store.projects()
            )
            item, outcome = proposals.update_once(
                mem.store,
                ctx,
                target.id,  # resolved among what it may read: no other id is said
                _as_stored(text, target.text),
                expected_revision=expected_revision,
                evidence=evidence,
            )
            mem.filed.add(item.id)
            answer = {**_item_brief(item), "note": _updated_note(item, outcome)}
            # what it kept from before (evidence, tags, links) was redacted before
            kept = [evidence or item.evidence, *item.tags, *(str(x) for x in item.links)]
            return _redacted(answer, item, [text, *kept], ctx)

        result: dict[str, Any] = mem.run(work, too_long=TOO_LONG_UPDATE)
        return result

    @server.tool()
    def memory_handoff(
        done: Annotated[str, Field(min_length=1, description="What was done")],
        state: Annotated[str, Field(min_length=1, description="Where things stand")],
        next: Annotated[str, Field(min_length=1, description="What comes next")],
        open_questions: str = "",
        model: str | None = None,
    ) -> dict[str, Any]:
        """Leave a handoff for the next agent in this line of work (workstream or project)."""

        def work() -> dict[str, Any]:
            ctx = mem.context(model)
            # A handoff in a registered project is appended to its log.md, in its folder.
            written = [ctx.where.scope("project")] if ctx.where.project else []
            deliver.check_write(mem.config, ctx.where, written, projects=mem.store.projects())
            item = proposals.handoff(
                mem.store,
                ctx,
                done=done,
                state=state,
                next_steps=next,
                questions=open_questions,
            )
            # Its title repeats the start of Done, so the body alone says what was redacted.
            given = [done, state, next, open_questions]
            return _redacted(_item_brief(item), item, given, ctx, title=False)

        result: dict[str, Any] = mem.run(work, too_long=TOO_LONG_HANDOFF)
        return result

    @server.tool()
    def session_history(
        where: Annotated[str, Field(pattern="^(repo|project|workstream)$")] = "repo",
        limit: Annotated[int, Field(ge=1, le=50), NOT_A_FLAG] = 5,
    ) -> dict[str, Any]:
        """Recent agent sessions in this repo, project or workstream, newest first."""

        def work() -> dict[str, Any]:
            here = mem.where()
            if not deliver.may_deliver(mem.config, mem.identity.agent, here):
                off = deliver.delivery_off(mem.config, mem.identity.agent)
                raise ToolError(f"{off}; no sessions to show")
            value = {"repo": here.repo, "project": here.project, "workstream": here.workstream}[
                where
            ]
            if not value:
                raise ToolError(f"there is no {where} here")
            blocked = deliver.blocked_repos(mem.config)
            query = SessionQuery(
                repo=value if where == "repo" else None,
                project=value if where == "project" else None,
                workstream=value if where == "workstream" else None,
                limit=limit,
            )
            found = mem.store.list_sessions(query)
            kept = [s for s in found if not deliver.session_withheld(s, blocked)]
            return {"sessions": [s.to_dict() for s in kept]}

        result: dict[str, Any] = mem.run(work)
        return result

    @server.tool()
    def record_reflection(
        lessons: Annotated[
            # Any value, so that an unknown key is refused by name below whatever it holds,
            # not as "Input should be a valid string"; the known ones are checked there.
            list[dict[str, Any]],
            Field(
                min_length=1,
                max_length=3,
                description='Up to three {"lesson": ..., "evidence": ..., "kind": ...}, '
                "three per session in all: "
                "something the person taught; the person's own words that taught it, quoted "
                "exactly from their prompt (a lesson whose quote is in none of this "
                "session's prompts is dropped); kind lesson (default), correction, "
                "preference or decision",
            ),
        ],
        model: str | None = None,
    ) -> dict[str, Any]:
        """Record up to three lessons from this run (three per session in all) as
        proposals for the person: what they corrected, or a preference, convention or
        decision they stated."""

        def work() -> dict[str, Any]:
            entries = []
            for n, entry in enumerate(lessons):
                unknown = sorted(set(entry) - set(LESSON_KEYS))
                if unknown:  # as a writing tool refuses an argument it does not take
                    raise ToolError(
                        f"a lesson takes no key {', '.join(map(repr, unknown))}: it takes "
                        f"{', '.join(LESSON_KEYS)}; nothing was saved"
                    )
                if not entry.get("lesson"):
                    raise ToolError('each lesson is {"lesson": "...", "evidence": "..."}')
                for key in LESSON_KEYS:
                    if not isinstance(entry.get(key, ""), str):
                        raise ToolError(f"lessons.{n}.{key} is text; nothing was saved")
                kind = str(entry.get("kind") or "lesson").strip().lower()
                entries.append((str(entry["lesson"]), str(entry.get("evidence", "")), kind))
            ctx = mem.context(model)
            deliver.check_write(mem.config, ctx.where, projects=mem.store.projects())
            kept: list[tuple[str, str, str]] = entries
            dropped: list[tuple[str, str, str]] = []
            if ctx.session_id:
                # The hooks kept this session's prompts: a quote must come from one.
                if any(not evidence.strip() for _, evidence, _ in entries):
                    raise ToolError(
                        "each lesson needs the evidence that taught it: quote the "
                        "person's prompt; nothing was saved"
                    )
                kept, dropped = run_lessons.check_quotes(mem.store, ctx.session_id, entries)
                # What is not saved is still said, in the log and the answer: redacted.
                dropped = [(redact(text).text, quote, kind) for text, quote, kind in dropped]
                for text, _, _ in dropped:
                    log(
                        ctx.agent,
                        "record_reflection",
                        f"dropped the lesson {' '.join(text.split())[:80]!r} of session "
                        f"{ctx.session_id}: its quote is in none of the session's prompts",
                    )
            held: list[tuple[str, Item]] = []
            saved = proposals.reflect(mem.store, ctx, kept, held) if kept else []
            if ctx.session_id:
                # Only once it stands: a reflection refused (too long, all secret) leaves
                # the session to be asked again at its next stop.
                run_lessons.reflected(mem.store, ctx.session_id)
            given = [text for lesson, evidence, _ in kept for text in (lesson, evidence)]
            answer: dict[str, Any] = {
                "saved": [_redacted(_item_brief(i), i, given, ctx) for i in saved]
            }
            total: Counter[str] = Counter()
            for brief in answer["saved"]:
                total.update(brief["redacted"])
            _say_redacted(answer, dict(total))
            if dropped or held:
                answer["dropped"] = [
                    {"lesson": text, "why": run_lessons.why_dropped(evidence)}
                    for text, evidence, _ in dropped
                ] + [
                    {
                        "lesson": printable.clean(text, one_line=True),
                        "why": f"the same statement is {there.status.value} already "
                        f"as {short_id(there.id)}",
                    }
                    for text, there in held
                ]
            return answer

        result: dict[str, Any] = mem.run(work, too_long=TOO_LONG_LESSON)
        return result

    @server.tool()
    def memory_plan_draft(
        plan: Annotated[
            dict[str, Any],
            Field(
                description='A maintenance plan: {"schema": 1, "id": "...", "owner": "...", '
                '"operations": [...]}, 1 to 100 operations: revise (id, expected_revision, '
                "text/kind/scope/tags/sources), create (text, kind, scope, evidence, tags, "
                "sources), retire (id, expected_revision, reason), retire_into (ids, "
                "expected_revisions, into: an id or a new record)"
            ),
        ],
    ) -> dict[str, Any]:
        """Draft a plan to change many memories at once: it is validated and previewed
        (before and after per operation, its digest, the conflicts that would block it)
        and saved for the person, who applies it with `ken plan apply`. Agents never
        apply plans."""

        def work() -> dict[str, Any]:
            here = mem.where()
            if not deliver.may_deliver(mem.config, mem.identity.agent, here):
                raise ToolError(
                    f"{deliver.delivery_off(mem.config, mem.identity.agent)}; no plan was drafted"
                )
            # Secrets out first, so the file a person reviews holds none, and its digest
            # is the digest of what is saved.
            clean = plans.redacted(plan)
            checked = plans.parse_plan(clean, "the plan")
            # Where the agent may not save a memory, its plan may not write one either.
            plans.check_scopes(mem.store, checked, mem.context(None).actor)
            blocked = deliver.blocked_repos(mem.config)
            # Its ids name only what memory_get would give it.
            known = mem.known(blocked)
            touched = plans.scopes_written(checked) + [
                item.scope for item in plans.visible_targets(mem.store, checked, blocked, known)
            ]
            deliver.check_write(mem.config, here, touched, projects=mem.store.projects())
            seen = plans.preview(mem.store, checked, known=known)
            path = plans.save_draft(checked)
            answer = {
                **seen.to_dict(),
                "saved_to": str(path),
                "next": f"ask the person to run: ken plan preview {path}, then "
                f"ken plan apply {path}",
            }
            # What redaction took out of the plan: the markers it holds now, less those given.
            found = count_markers(json.dumps(clean)) - count_markers(json.dumps(plan))
            return _say_redacted(answer, dict(found))

        result: dict[str, Any] = mem.run(work)
        return result

    return server


def main() -> int:
    # On SIGINT the event loop would be cancelled and then wait forever for the thread
    # blocked reading stdin, so the server never exits (clients such as Claude Code send
    # SIGINT first). Leave at once instead: SQLite's journal makes that safe.
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    report_migrations_to(lambda line: logging.getLogger(__name__).warning("ken mcp: %s", line))
    build_server().run()
    return 0


__all__ = ["Memory", "build_server", "main"]
