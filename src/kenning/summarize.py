"""Session summaries (opt-in): a command the user chooses turns a session's
conversation into a summary and up to five proposed memories.

`[memory.summarize]` in config.toml: `enabled`, `command` (an array such as
`["claude", "-p"]` or `["ollama", "run", "llama3"]`; a string is split as a shell
would), `repos` (repos or globs such as `github.com/acme/*`; empty: every repo),
`max_input_tokens`, `timeout_secs`.

Each run sends only the part of the conversation not summarized before (a PreCompact
hook summarizes the part before a compaction as "part N"; SessionEnd the rest), cut
from the front to the token limit so the latest turns are kept. The command gets a
prompt on stdin and answers JSON on stdout. The summary is stored in the session's
workstream or project (else proposed for the repo); the items are proposed in the repo.
A command that fails, hangs or prints garbage changes nothing. Runs for one session
are serialized by a lock file, so nothing is summarized twice.
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import re
import select
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from kenning import agents, child, items, paths, policy
from kenning.config import Config, made_state_dir
from kenning.errors import InvalidInput, KenningError
from kenning.ids import short_id
from kenning.model import MAX_ITEM_BYTES, Item, Kind, Scope, ScopeType, Session, Status
from kenning.pack import cut_to, one_line
from kenning.redact import redact
from kenning.store import Store
from kenning.tokens import estimate_tokens
from kenning.transcripts import Turn, conversation, unreadable

MAX_ITEMS = 5
PROMPT = """You are summarizing part of a coding session between a person and a coding agent.
Answer with JSON only, no prose around it, in this shape:
{"summary": "what was done, decided and left open, in a few sentences",
 "items": [{"text": "a memory: title line, then detail",
            "kind": "correction|preference|decision|fact|lesson",
            "evidence": "the person's words that taught it"}]}
Give at most 5 items, only things the repository itself cannot tell a future agent:
corrections, refusals, preferences and decisions the person stated. Give none if there
are none.

The conversation (oldest first):
"""


class SummarizeError(KenningError):
    """The summarizer command failed, hung or answered something unusable."""


@dataclass
class SummaryResult:
    session_id: str
    part: int
    turns_sent: int
    chars_sent: int
    tokens_sent: int
    summary: Item | None = None
    items: list[Item] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "part": self.part,
            "turns_sent": self.turns_sent,
            "chars_sent": self.chars_sent,
            "tokens_sent": self.tokens_sent,
            "summary": self.summary.to_dict() if self.summary else None,
            "items": [i.to_dict() for i in self.items],
        }


def start_later(
    session: Session,
    *,
    final: bool = True,
    spawn: Callable[[list[str], str | None], None] | None = None,
) -> None:
    """Summarize `session` in a detached process (`ken summarize ID --from-hook`, with
    `--part` unless `final`), in its folder when that is still there: whoever closes a
    session, a hook or `ken pack`, does not wait for a model."""
    args = ["summarize", session.id, "--from-hook"] + ([] if final else ["--part"])
    cwd = paths.os_path(session.cwd) if session.cwd else None
    (spawn or child.start_detached)(args, cwd if cwd and os.path.isdir(cwd) else None)


def enabled_for(config: Config, session: Session) -> bool:
    """Whether hooks summarize `session`: summaries are on, for its repo, and kenning
    reads its agent's transcripts (a Gemini CLI session has none to read: starting a
    summary only to log that would fill the hook log)."""
    if not config.memory_summarize_enabled or not config.memory_summarize_command:
        return False
    known = agents.AGENTS.get(session.agent)
    if known is None or known.transcript is None:
        return False
    patterns = config.memory_summarize_repos
    return not patterns or repo_matches(session.repo, patterns)


def repo_matches(repo: str | None, patterns: list[str]) -> bool:
    """Whether `repo` is one of `patterns`: repo keys or globs (`github.com/acme/*`).

    An origin is kept lowercase, so a pattern for one matches whatever its case; a repo
    keyed by its path keeps its case, and so does a pattern for it.
    """
    if not repo:
        return False
    for pattern in patterns:
        candidates = {pattern} if pattern.startswith(("/", "~")) else {pattern, pattern.lower()}
        if any(fnmatch.fnmatchcase(repo, p) for p in candidates):
            return True
    return False


def render_turns(turns: list[Turn], max_tokens: int) -> tuple[str, int]:
    """The conversation as text, dropping the oldest turns to fit; (text, turns kept)."""
    blocks = [f"{t.role.upper()}: {t.text}" for t in turns]
    kept: list[str] = []
    used = 0
    for block in reversed(blocks):
        cost = estimate_tokens(block) + 2
        if used + cost > max_tokens:
            if not kept:  # one huge turn: keep its end
                room = max(0, max_tokens * 3)
                kept.append("… " + block[-room:])
            break
        kept.append(block)
        used += cost
    return "\n\n".join(reversed(kept)), len(kept)


def _parse_answer(text: str) -> dict[str, Any]:
    stripped = text.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", stripped, re.DOTALL)
    if fenced:
        stripped = fenced.group(1)
    elif not stripped.startswith("{"):
        start, end = stripped.find("{"), stripped.rfind("}")
        stripped = stripped[start : end + 1] if 0 <= start < end else stripped
    try:
        data = json.loads(stripped)
    except ValueError:
        # what the summarizer printed is redacted before it is cut, and before any log
        shown = one_line(redact(text[:4096]).text)[:120]
        raise SummarizeError(f"the summarizer did not print JSON: {shown}") from None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), str):
        raise SummarizeError('the summarizer\'s JSON has no "summary" text')
    found = data.get("items") or []  # null and a missing list both mean no items
    data["items"] = found
    if not isinstance(found, list):
        raise SummarizeError('the summarizer\'s "items" is not a list')
    return data


def _fit(title: str, text: str) -> str:
    """`text` cut so that title and text stay within an item's 4 KB."""
    room = MAX_ITEM_BYTES - len(title.encode()) - 1
    if len(text.encode()) <= room:
        return text
    return text.encode()[: max(0, room - 4)].decode("utf-8", "ignore").rstrip() + " …"


# How long the pipes are read once the command itself has exited: a child it left in the
# background (`sleep 30 &`) may hold its stdout open for ever, and what the command printed
# is there already.
AFTER_EXIT_SECS = 0.5
_POLL_SECS = 0.1  # how often a command still running is looked at while its pipes are quiet


def run_command(command: list[str], prompt: str, timeout: float) -> str:
    """Run the summarizer with `prompt` on stdin; its stdout.

    It runs in its own process group, so that a timeout stops whatever it started too,
    and with KEN_ENABLED=0, so that an agent CLI used as the summarizer (`claude -p`)
    records no session of its own, whose end would be summarized in turn. Its answer is
    what it printed by the time it exited: what it left running is stopped then, not
    waited for (a child holding the pipe would keep `communicate` waiting until the
    timeout, and a good answer would be lost as "too slow").
    """
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "KEN_ENABLED": "0"},
            start_new_session=True,
        )
    except OSError as exc:
        raise SummarizeError(
            f"cannot run the summarizer '{shlex.join(command)}': {exc.strerror}"
        ) from None
    with proc:
        try:
            out, err = _exchange(proc, prompt.encode("utf-8"), timeout)
        finally:
            with suppress(OSError):  # what it started, and itself on a timeout
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if out is None:
            raise SummarizeError(f"the summarizer took over {timeout:g} s and was stopped")
    stdout = out.decode("utf-8", "replace")
    stderr = (err or b"").decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = stderr[-8192:]
        if len(stderr) > len(tail):  # cut inside a word, maybe a secret: start after it
            tail = tail.split(None, 1)[-1] if tail[:1].strip() else tail
        said = one_line(redact(tail).text)[:200] or "it wrote nothing on stderr"
        raise SummarizeError(f"the summarizer exited with {proc.returncode}: {said}")
    return stdout


def _exited(pid: int) -> bool:
    """Whether the process has exited, leaving it unreaped: its process group's id stays
    its own until the group is killed, so no new process can take that id first."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _exchange(
    proc: subprocess.Popen[bytes], data: bytes, timeout: float
) -> tuple[bytes | None, bytes | None]:
    """Write `data` to the command's stdin and read its stdout and stderr until it has
    exited and its pipes are closed, or AFTER_EXIT_SECS after it exited; (None, None)
    when it is still running after `timeout` seconds."""
    assert proc.stdin and proc.stdout and proc.stderr
    got: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    deadline = time.monotonic() + timeout
    ended: float | None = None
    written = 0
    with selectors.DefaultSelector() as selector:
        if data:
            selector.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        for pipe in (proc.stdout, proc.stderr):
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if ended is None and _exited(proc.pid):
                ended = now
            left = (ended + AFTER_EXIT_SECS if ended is not None else deadline) - now
            if left <= 0:
                break
            for key, _ in selector.select(min(left, _POLL_SECS) if ended is None else left):
                if key.fileobj is proc.stdin:
                    try:
                        written += os.write(key.fd, data[written : written + select.PIPE_BUF])
                    except BrokenPipeError:  # it stopped reading: its answer is what counts
                        written = len(data)
                    if written >= len(data):
                        selector.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    got[key.fd].append(chunk)
                else:
                    selector.unregister(key.fileobj)
    if ended is None and not _exited(proc.pid):
        if time.monotonic() < deadline:  # every pipe closed, and it is still running
            with suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, deadline - time.monotonic()))
        if proc.poll() is None:
            return None, None
    out, err = (b"".join(got[pipe.fileno()]) for pipe in (proc.stdout, proc.stderr))
    return out, err


@contextmanager
def _session_lock(session_id: str) -> Iterator[None]:
    folder = made_state_dir()
    with open(folder / f"summarize-{session_id}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _summary_scope(session: Session) -> tuple[Scope, Status]:
    if session.workstream:
        return Scope(ScopeType.WORKSTREAM, session.workstream), Status.ACTIVE
    if session.project:
        return Scope(ScopeType.PROJECT, session.project), Status.ACTIVE
    if session.repo:
        return Scope(ScopeType.REPO, session.repo), Status.PROPOSED
    return Scope(ScopeType.GLOBAL), Status.PROPOSED


def summarize(
    store: Store,
    config: Config,
    session: Session,
    *,
    final: bool = True,
    force: bool = False,
) -> SummaryResult | None:
    """Summarize the part of `session` not summarized yet; None when there is none.
    Raises SummarizeError when its transcript cannot be read (gone, or never given):
    that is not "nothing new"."""
    if not force and not enabled_for(config, session):
        return None
    command = list(config.memory_summarize_command)
    if not command:
        raise InvalidInput(
            "set memory.summarize.command first (e.g. `ken config set memory.summarize.command "
            "'claude -p'`)"
        )
    why = unreadable(session.agent, session.transcript_path)
    if why is not None:
        raise SummarizeError(
            f"cannot read the transcript of session {short_id(session.id)}: {why}; "
            "nothing was summarized"
        )
    with _session_lock(session.id):
        parts, done = store.summary_progress(session.id)
        turns = conversation(session.agent, session.transcript_path, session.agent_session_id)
        new = turns[done:]
        if not new:
            return None
        text, kept = render_turns(new, int(config.memory_summarize_max_input_tokens))
        prompt = PROMPT + text
        answer = _parse_answer(
            run_command(command, prompt, float(config.memory_summarize_timeout_secs))
        )
        part = parts + 1
        result = SummaryResult(session.id, part, kept, len(text), estimate_tokens(text))
        first = cut_to(one_line(session.first_prompt or ""), 70)
        label = "Session summary" if final and parts == 0 else f"Session summary, part {part}"
        scope, status = _summary_scope(session)
        provenance = session.provenance("summarizer")
        title = f"{label}: {first or session.agent}"
        # redacted before it is cut to fit, so that no secret is cut in half and missed
        summary = redact(answer["summary"].strip()).text
        summary_text = _fit(title, summary or "(empty summary)")
        # One transaction: a summarizer stopped half way leaves no summary whose turns
        # are not counted as summarized (to be summarized again), and readers see the
        # summary, its proposed items and the progress at once.
        with store.together():
            result.summary = items.add(
                store,
                f"{title}\n{summary_text}",
                scope=scope,
                kind=Kind.SUMMARY,
                status=status,
                provenance=provenance,
                actor=policy.KENNING,
            )
            target = (
                Scope(ScopeType.REPO, session.repo) if session.repo else Scope(ScopeType.GLOBAL)
            )
            for entry in answer.get("items", [])[:MAX_ITEMS]:
                if not isinstance(entry, dict) or not str(entry.get("text", "")).strip():
                    continue
                kind = str(entry.get("kind") or "note").lower()
                try:
                    parsed = items.parse_kind(kind)
                except InvalidInput:
                    parsed = Kind.NOTE
                try:
                    text = str(entry["text"])
                    if items.held_there(store, items.new_item(text, scope=target)):
                        continue  # said again (a compaction's summary, then the end's)
                    result.items.append(
                        items.add(
                            store,
                            text,
                            scope=target,
                            kind=parsed,
                            status=Status.PROPOSED,
                            evidence=str(entry.get("evidence") or ""),
                            provenance=provenance,
                            actor=policy.KENNING,
                        )
                    )
                except InvalidInput:
                    continue  # one bad item (too long, a secret) does not sink the rest
            store.set_summary_progress(session.id, part, done + len(new))
        return result
