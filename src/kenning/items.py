"""Items: adding, changing, finding and forgetting memories.

This is the library API that every face calls. It enforces what DESIGN promises:
secrets are redacted before anything is stored, an item stays under 4 KB, every
change makes a version, agents' writes to shared scopes wait as proposals, and only
`forget` deletes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from kenning import (
    config,
    drafts,
    git,
    hooklog,
    ids,
    origins,
    policy,
    printable,
    projects,
    rank,
    spool,
    templates,
    tombstones,
)
from kenning.errors import AmbiguousId, InvalidInput, NotFound, RevisionConflict, StoreBusy
from kenning.ids import short_id
from kenning.model import (
    KINDS,
    MAX_EVIDENCE_BYTES,
    MAX_ITEM_BYTES,
    MAX_LINK_CHARS,
    MAX_LINKS,
    MAX_TAGS,
    DismissReason,
    Item,
    Kind,
    Link,
    NeverApplies,
    Provenance,
    Scope,
    ScopeType,
    Status,
)
from kenning.redact import count_markers, redact, redact_lines
from kenning.store import ItemQuery, Store, Words, now_iso
from kenning.team import state as team_state

TAG = re.compile(r"^[\w][\w.:/-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Found:
    """One search hit: `every_word` when the memory holds every word searched for, not
    only some of them."""

    item: Item
    score: float
    every_word: bool = True


def parse_kind(text: str | None) -> Kind | None:
    if text is None:
        return None
    try:
        return Kind(text.strip().lower())
    except ValueError:
        raise InvalidInput(
            f"unknown kind '{text}': use {', '.join(k.value for k in Kind)}"
        ) from None


_scopes: dict[str, Scope] = {}  # scopes read before: an import names a few, many times


def parse_scope(text: str, *, to_find: bool = False, as_key: bool = False) -> Scope:
    """A scope as a person or an agent writes it (`--scope`, an MCP argument, a plan).

    A name that holds a secret is refused rather than redacted: a scope is a key, and
    redacting two different names to one marker would merge their scopes. Nothing the
    refusal or any other error says holds the secret. A scope that never applies
    (`session:claude`) is refused too, unless it is only looked for (`to_find`: a
    filter, an import of what was stored): memories an older kenning stored there stay
    within reach. `as_key`: the key as kenning stored it (an export), read as text alone,
    never through the git files here, which would move a repo keyed by its checkout's path
    to the origin that checkout has since been given."""
    found = None if as_key else _scopes.get(text)
    if found is not None:
        return found
    try:
        found = Scope.parse(text) if as_key else _repo_resolved(Scope.parse(text), text)
    except NeverApplies as exc:
        if not to_find:
            raise InvalidInput(redact(str(exc)).text) from None
        return exc.scope  # not kept: the next writer is refused it
    except ValueError as exc:
        raise InvalidInput(redact(str(exc)).text) from None
    secret = redact(str(found))
    if secret.kinds:
        raise InvalidInput(
            f"bad scope '{secret.text}': its name holds a secret ({', '.join(secret.kinds)}); "
            "a scope's name is a key, never redacted, so name the scope without it"
        )
    typed_path = text.strip().partition(":")[2].strip().startswith(("/", "~"))
    if as_key or (typed_path and found.type in (ScopeType.REPO, ScopeType.WORKSTREAM)):
        return found  # a key as stored, or a repo named by its path: checkouts change
    if len(_scopes) >= 1024:
        _scopes.clear()
    _scopes[text] = found
    return found


def _repo_resolved(scope: Scope, text: str) -> Scope:
    """A typed repo (or a workstream's repo) keyed as detection keys it (git.repo_key): a
    path to a checkout, through a symlink, `..` or from a subfolder, is that repo's key,
    its origin when it has one; an ssh alias or an insteadOf shorthand is the origin it
    stands for."""
    if scope.type not in (ScopeType.REPO, ScopeType.WORKSTREAM):
        return scope
    value = text.strip().partition(":")[2]
    if scope.type is ScopeType.REPO:
        return Scope.of(ScopeType.REPO, git.repo_key(value))
    repo, sep, branch = value.strip().partition("#")
    if not (sep and repo.strip()):
        return scope
    return Scope.of(ScopeType.WORKSTREAM, f"{git.repo_key(repo)}#{branch}")


def parse_status(text: str) -> Status:
    try:
        return Status(text.strip().lower())
    except ValueError:
        raise InvalidInput(
            f"unknown status '{text}': use {', '.join(s.value for s in Status)}"
        ) from None


def parse_links(texts: Iterable[str]) -> tuple[Link, ...]:
    texts = list(texts)
    if len(texts) > MAX_LINKS:
        raise InvalidInput(f"{len(texts)} links, over {MAX_LINKS}: link a folder or a doc instead")
    links = []
    for text in texts:
        if len(text) > MAX_LINK_CHARS:
            raise InvalidInput(f"a link of {len(text):,} characters, over {MAX_LINK_CHARS:,}")
        try:
            link = Link.parse(text)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        # No path or URL holds one; in a link it would print a line of its own in `ken show`.
        if (shown := printable.clean(str(link), one_line=True)) != str(link):
            raise InvalidInput(f"bad link '{shown}': it holds a line break or control character")
        links.append(link)
    return tuple(links)


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Tags as stored: lower case, each once.  A tag is redacted before it is lower-cased
    (AKIA... lower-cased is no longer an access key id to the redactor, but still one),
    a secret in it becoming ``redacted:<kind>``; and a bad tag is quoted redacted."""
    tags = list(tags)
    given = sum(raw.count(",") + 1 for raw in tags)
    if given > MAX_TAGS:
        raise InvalidInput(f"{given} tags, over {MAX_TAGS}: keep the few that find it")
    out: list[str] = []
    for raw in tags:
        for part in raw.split(","):
            part = redact(part).text
            if "[redacted:" in part:
                part = _MARKER_BRACKETS.sub(r"redacted:\1", part)
            tag = part.strip().lstrip("#").lower()
            if not tag:
                continue
            if not TAG.match(tag):
                raise InvalidInput(
                    f"bad tag '{part.strip()}': use letters, digits and . : / - _ (64 at most)"
                )
            if tag not in out:
                out.append(tag)
    return tuple(out)


_MARKER_BRACKETS = re.compile(r"\[redacted:([a-z0-9_]+)\]")
_TAG_MARKER = re.compile(r"(?<!\[)redacted:([a-z0-9_]+)")


# What `str.splitlines` breaks a line at, but the newline that ends a title.
_LINE_BREAKS = re.compile("[\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def split_text(text: str) -> tuple[str, str]:
    """The first non-empty line is the title; the rest, trimmed, is the body. A NUL is
    dropped: it means nothing in a memory, and packs would give it to agents raw. A
    title is one line wherever it is read: any other line break in it (a carriage
    return, U+2028, ...) is a space."""
    lines = text.replace("\x00", "").replace("\r\n", "\n").strip().split("\n")
    title = _LINE_BREAKS.sub(" ", lines[0]).strip().lstrip("#").strip() if lines else ""
    body = "\n".join(lines[1:]).strip("\n").rstrip()
    if not title:
        raise InvalidInput("the memory is empty: give a title on its first line")
    return title, body


def _redact_text(
    title: str, body: str, evidence: str, tags: tuple[str, ...]
) -> tuple[str, str, str, tuple[str, ...]]:
    # The size is checked first: redacting megabytes only to refuse them wastes seconds.
    check_size(title, body, evidence)
    title, body, mostly = redact_lines(title, body)
    if mostly:
        raise InvalidInput(
            "this looks like a secret, and kenning does not store secrets: store where to "
            "find it instead (e.g. 'the staging DB password is in the team vault under db/')"
        )
    red_tags = tuple(redact(t).text for t in tags)
    return title, body, redact(evidence).text if evidence else evidence, red_tags


def redact_provenance(provenance: Provenance) -> Provenance:
    """Provenance with every field redacted, and on one line with its control characters
    escaped (`printable.clean`): a model name, a folder or a host given by an agent, an
    imported file or a team push is text that reaches the store like any other, and a
    line break in it would print a line of its own (`status    active`) where a person
    reviews the memory."""
    changed = {
        name: clean
        for name in Provenance.__slots__
        if isinstance(value := getattr(provenance, name), str)
        and (clean := printable.clean(redact(value).text, one_line=True)) != value
    }
    return replace(provenance, **changed) if changed else provenance


def redactions(
    item: Item,
    given: Iterable[str],
    *,
    provenance: Provenance | None = None,
    title: bool = True,
) -> dict[str, int]:
    """What redaction took out of ``given`` (the text, evidence, tags and links a caller
    passed) to make ``item``: each kind and how many, never a value.

    With ``provenance`` (the one the caller wrote with, before redaction: an agent's
    model name is its own text) its fields count too. Without ``title`` the title is left
    out, for an item whose title repeats the start of its body (a handoff), so that one
    secret is not counted twice."""
    tags = [_TAG_MARKER.sub(r"[redacted:\1]", tag) for tag in item.tags]
    stored = [item.title if title else "", item.body, item.evidence, *tags]
    stored += [str(x) for x in item.links]
    given = list(given)
    if provenance is not None:
        stored += _provenance_texts(item.provenance)
        given += _provenance_texts(provenance)
    found = count_markers("\n".join(stored)) - count_markers("\n".join(given))
    return dict(found)


def _provenance_texts(provenance: Provenance) -> list[str]:
    values = (getattr(provenance, name) for name in Provenance.__slots__)
    return [value for value in values if isinstance(value, str)]


def describe_redactions(counts: dict[str, int]) -> str:
    """``redacted 1 secret: github_token``, ``redacted 3 secrets: jwt (2), password``;
    empty when nothing was redacted."""
    total = sum(counts.values())
    if not total:
        return ""
    kinds = ", ".join(k if n == 1 else f"{k} ({n})" for k, n in counts.items())
    return f"redacted {total} secret{'s' if total > 1 else ''}: {kinds}"


class TooLong(InvalidInput):
    """A memory's text over the 4 KB limit. Its message advises what the CLI can do
    (`--link`); `advised` words it with what another face can do instead (an MCP tool
    that takes no links)."""

    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__(self.advised("link the details (--link file:PATH or --link url:URL)"))

    def advised(self, advice: str) -> str:
        return (
            f"the memory is {self.size:,} bytes, over the 4 KB limit: keep the point short "
            f"and {advice}"
        )


def check_size(title: str, body: str, evidence: str = "") -> None:
    """Refuse a memory over 4 KB (title, and the newline and body when there is one: the
    memory as stored and shown), or evidence over 8 KB."""
    size = len((f"{title}\n{body}" if body else title).encode())
    if size > MAX_ITEM_BYTES:
        raise TooLong(size)
    ev = len(evidence.encode())
    if ev > MAX_EVIDENCE_BYTES:
        raise InvalidInput(
            f"the evidence is {ev:,} bytes, over the 8 KB limit: quote the part that matters"
        )


def task_expiry(kind: Kind, updated_at: str, ttl_days: int | None = None) -> str | None:
    """When a memory of `kind` changed at `updated_at` expires: `ttl_days` on (the
    `tasks.ttl_days` setting when not given) for a kind that expires, else never. Every
    write that sets a task's expiry (add, update, a change of kind, restore, a plan,
    MCP) comes here, so each reads the one setting."""
    if not KINDS[kind].expires:
        return None
    days = config.Config().tasks_ttl_days if ttl_days is None else ttl_days
    when = datetime.fromisoformat(updated_at)  # 3.11 reads the trailing Z as UTC
    return (when + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def default_scope(repo: str | None) -> Scope:
    """Where a person's `ken add` goes without --scope: this repo, else global."""
    return Scope(ScopeType.REPO, repo) if repo else Scope(ScopeType.GLOBAL)


def new_item(
    text: str,
    *,
    scope: Scope,
    kind: Kind | None = None,
    tags: Iterable[str] = (),
    links: Iterable[str] = (),
    pinned: bool = False,
    status: Status = Status.ACTIVE,
    evidence: str = "",
    template: str | None = None,
    provenance: Provenance | None = None,
    item_id: str | None = None,
    created_at: str | None = None,
    source: str | None = None,
    ttl_days: int | None = None,
) -> Item:
    """Build a checked, redacted item (not yet stored)."""
    title, body = split_text(text)
    chosen = template or templates.detect(body)
    if chosen:
        title, body = templates.apply(chosen, title, body)
        implied = templates.TEMPLATES[chosen].kind
        if kind is None and implied:
            kind = Kind(implied)
    kind = kind or Kind.NOTE
    clean = clean_tags(tags)
    title, body, evidence, clean = _redact_text(title, body, evidence, clean)
    links = [redact(link).text for link in links]
    check_size(title, body, evidence)  # again: a marker can be longer than its secret
    now = now_iso()
    return Item(
        id=item_id or ids.new_ulid(),
        title=title,
        body=body,
        kind=kind,
        scope=scope,
        status=status,
        pinned=pinned,
        tags=clean,
        links=parse_links(links),
        evidence=evidence,
        provenance=redact_provenance(provenance or Provenance()),
        created_at=created_at or now,
        updated_at=now,
        expires_at=task_expiry(kind, now, ttl_days),
        revision=ids.new_ulid(),
        source=source,
    )


def clean_copy(item: Item) -> Item:
    """A memory that came from elsewhere (a team server) checked and redacted as a write
    here would be: InvalidInput when it may not be stored (too long, mostly a secret)."""
    title, body, evidence, tags = _redact_text(item.title, item.body, item.evidence, item.tags)
    check_size(title, body, evidence)
    return replace(
        item,
        title=title,
        body=body,
        evidence=evidence,
        tags=clean_tags(tags),
        links=parse_links(redact(str(link)).text for link in item.links),
        provenance=redact_provenance(item.provenance),
    )


def add(
    store: Store,
    text: str,
    *,
    scope: Scope,
    kind: Kind | None = None,
    status: Status | None = None,
    propose: bool = False,
    evidence: str = "",
    actor: policy.Actor | None = None,
    archived: list[Item] | None = None,
    **options: object,
) -> Item:
    """Check, redact and store a new memory. Options as for `new_item`.

    Without `status`, the policy chooses it for `actor` (from the environment when not
    given): active for a person, proposed for an agent's rules and shared memories. A
    statement a person dismissed, proposed again, is set aside (see `file_proposal`).
    What the scope's cap archived to make room goes into `archived` (see `enforce_cap`).
    """
    who = policy.resolve(actor)
    item = new_item(text, scope=scope, kind=kind, evidence=evidence, **options)  # type: ignore[arg-type]
    projects.check_registered(store, scope, who)
    chosen = status or policy.status_for_new(who, scope, item.kind, propose)
    policy.check_new(who, scope, item.kind, chosen, evidence, item.pinned)
    item = replace(item, status=chosen)
    if chosen is Status.PROPOSED and item.provenance.who not in policy.PEOPLE:
        return file_proposal(store, item, who=who)
    stored = store.insert_item(item)
    if stored.status is Status.ACTIVE:
        by = stored.provenance.who
        writer = who.agent or (None if by in policy.PEOPLE else by)
        aside = enforce_cap(store, stored.scope, keep=(stored.id,), writer=writer)
        if archived is not None:
            archived += aside
    return stored


# --- the cap of active memories per scope ---------------------------------------------

CAP = "cap"  # the archive reason (and the change) when the cap sets an item aside
MAX_ARCHIVE_REASON = 200


def enforce_cap(
    store: Store,
    scope: Scope,
    *,
    cap: int | None = None,
    keep: Sequence[str] = (),
    writer: str | None = None,
) -> list[Item]:
    """Archive, with the reason `cap`, the lowest-ranked active memories of `scope` over
    `cap` (`memory.max_active_per_scope` when not given; 0 is off). Pinned memories,
    memories kept in sync from a file and `keep` (what was just written or approved:
    a memory is never set aside the moment it is made) are never archived. When the
    write is an agent's (`writer`), only that agent's own memories are set aside: only
    a person's write or decision archives a person's memory (or another agent's), so
    the scope may stay over the cap. Nothing is deleted: `ken restore` brings one back.
    Returns what was archived."""
    limit = config.Config().memory_max_active_per_scope if cap is None else cap
    if limit <= 0:
        return []
    active = store.list_items(ItemQuery(scopes=(str(scope),)))
    over = len(active) - limit
    if over <= 0:
        return []
    movable = [
        i
        for i in active
        if cap_may_archive(i) and i.id not in keep and writer in (None, i.provenance.who)
    ]
    archived = []
    now = now_iso()
    for item in rank.ranked(movable)[::-1][:over]:
        aside = replace(
            item,
            status=Status.ARCHIVED,
            archive_reason=CAP,
            updated_at=now,
            revision=ids.new_ulid(),
        )
        archived.append(store.replace_item(aside, CAP))
    return archived


def cap_may_archive(item: Item) -> bool:
    """Whether the cap may ever set this memory aside: not pinned, not kept in sync from a
    file or a team (those it counts, and leaves alone)."""
    return not item.pinned and not item.source


def cap_said(archived: Sequence[Item]) -> list[str]:
    """What the cap archived, one line each, in a person's words: which, where and why."""
    return [
        f"archived {short_id(i.id)} ({i.scope}): {i.title}: {CAP_WHY} "
        f"(`ken restore {short_id(i.id)}` brings it back)"
        for i in archived
    ]


CAP_WHY = "the lowest-ranked active memory there, over memory.max_active_per_scope"


# --- statements a person dismissed, proposed again ------------------------------------

REPEAT = "repeat"  # the change that sets aside a dismissed statement proposed again
SESSIONS_TO_PROPOSE_AGAIN = 3  # the first repeat, then two more sessions
_NOT_WORD = re.compile(r"[\W_]+")


def statement_key(text: str) -> str:
    """The same statement, as this test sees it: the text lowercased, punctuation and
    runs of whitespace read as one space."""
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


UNTOLD = (Status.PROPOSED, Status.DISMISSED, Status.REJECTED)


def may_know(
    who: policy.Actor, twin: Item, blocked: set[str] | frozenset[str] | None = None
) -> bool:
    """Whether `who` may be told of `twin`: the one rule for what an agent reads by id,
    lists or counts (`get_known`, `ken list` and `ken doctor` in its shell) and for the
    same statement held already that stops or changes its write. A person may, of
    anything: the store is theirs. An agent may not of a memory that belongs to a repo
    whose memory is not delivered (`origins.withheld`; `blocked`, read from the config
    when not given), nor of a proposal, or a statement a person dismissed or rejected,
    that is not its own: no session is told a proposal until a person approves it, nor
    what a person turned down of someone else's. Its write goes ahead as if there were
    no such twin, and nothing of it is said: a second proposal a person dismisses is the
    price of not telling what exists."""
    if who.is_person:
        return True
    if blocked is None:
        blocked = config.Config().repos_not_delivered()
    if origins.withheld(twin, blocked):
        return False
    if twin.status in UNTOLD:
        return who.agent != policy.UNKNOWN_AGENT and twin.provenance.who == who.agent
    return True


def _twins(
    store: Store, item: Item, query: ItemQuery, who: policy.Actor | None = None
) -> list[Item]:
    """Other items of `query` that are the same statement as `item`, of those `who`
    (from the environment when not given) may know of (`may_know`): every title word
    must match (the index finds the few candidates), the statement key decides."""
    try:
        found = store.search(Words(typed=item.title), query)
    except InvalidInput:  # a title with nothing to search for
        return []
    key = statement_key(item.text)
    writer = policy.resolve(who)
    return [
        f
        for f, _ in found
        if f.id != item.id and statement_key(f.text) == key and may_know(writer, f)
    ]


def _dismissed_twins(
    store: Store,
    item: Item,
    who: policy.Actor | None = None,
    turned_down: tuple[Status, ...] = (Status.DISMISSED,),
) -> list[Item]:
    statuses = tuple(s.value for s in turned_down)
    query = ItemQuery(statuses=statuses, include_expired=True, limit=500)
    return _twins(store, item, query, who)


def waiting_twin(store: Store, item: Item, who: policy.Actor | None = None) -> Item | None:
    """The proposal in `item`'s scope that is the same statement, waiting for review."""
    return next(
        (t for t in held_twins(store, item, who) if t.status is Status.PROPOSED),
        None,
    )


def held_twins(store: Store, item: Item, who: policy.Actor | None = None) -> list[Item]:
    """The memories active or waiting in `item`'s scope that are the same statement, of
    those `who` may know of (`may_know`)."""
    return [
        t
        for t in same_text(store, item, limit=20, who=who)
        if t.scope == item.scope and t.status in (Status.ACTIVE, Status.PROPOSED)
    ]


def file_proposal(
    store: Store,
    item: Item,
    change: str = "add",
    who: policy.Actor | None = None,
    *,
    turned_down: tuple[Status, ...] = (Status.DISMISSED,),
) -> Item:
    """Store an agent's proposal (as the version `change`), unless the same statement
    waits for review in its scope already (then that one is returned, and nothing is
    stored: a person is asked once), or a person dismissed the same statement before.

    Then it is set aside (stored dismissed, with the same reason, linked to the one the
    person dismissed) until three sessions other than the first one's have proposed it
    since that dismissal: the third is proposed again, its evidence saying how many
    sessions asked. Nothing is lost, and a person is not asked the same thing twice
    because an agent keeps repeating it. Only what `who` (the writer) may know of counts
    (`may_know`). `turned_down`: the statuses that are a person's no (`ken collect`
    counts a rejected proposal too: the same file's words, filed again).

    The look for a twin and the write it decides are one transaction, one statement at a
    time: two agents (or two MCP servers of one) proposing the same thing at once file
    it once. A hook's store makes its writes one at a time instead, so that one the lock
    holds up waits in the hook's spool with the others, not lost (`Store.spooling`): a
    lesson a Stop hook proposes under a held lock is filed when the spool is replayed.
    """
    if store.spooling():
        return _file_proposal(store, item, change, who, turned_down)
    with store.together(key=f"proposal:{statement_key(item.text)}"):
        return _file_proposal(store, item, change, who, turned_down)


def _file_proposal(
    store: Store,
    item: Item,
    change: str,
    who: policy.Actor | None,
    turned_down: tuple[Status, ...],
) -> Item:
    waiting = waiting_twin(store, item, who)
    if waiting is not None:
        return waiting
    twins = _dismissed_twins(store, item, who, turned_down)
    repeats = [t for t in twins if store.revisions(t.id)[0].change == REPEAT]
    decided = [t for t in twins if t not in repeats]
    if not decided:
        return store.insert_item(item, change=change)
    last = max(decided, key=lambda t: t.updated_at)
    since = [t for t in repeats if t.created_at > last.updated_at]

    def session_of(one: Item) -> str:
        # An agent whose session is not known counts as one session, however many times
        # it asks: one MCP connection proposing thrice is not three sessions.
        return one.provenance.session or f"agent:{one.provenance.who}"

    asked = {session_of(t) for t in since} | {session_of(item)}
    asked.discard(session_of(last))
    reason = last.dismiss_reason or "other"
    if len(asked) >= SESSIONS_TO_PROPOSE_AGAIN:
        note = (
            f"Proposed again by {len(asked)} sessions after a person dismissed it "
            f"({reason}, item {short_id(last.id)})."
        )
        evidence = f"{note}\n{item.evidence}".strip().encode()[:MAX_EVIDENCE_BYTES]
        return store.insert_item(
            replace(item, evidence=evidence.decode(errors="ignore")), change=change
        )
    aside = replace(
        item,
        status=Status.DISMISSED,
        dismiss_reason=reason,
        links=(*item.links, Link("item", last.id)),
    )
    return store.insert_item(aside, change=REPEAT)


def same_text(
    store: Store, item: Item, limit: int = 200, who: policy.Actor | None = None
) -> list[Item]:
    """Other memories, in any scope and status, that are the same statement as `item`, of
    those `who` may know of (`may_know`)."""
    query = ItemQuery(statuses=(), include_expired=True, limit=limit)
    return _twins(store, item, query, who)


def held_there(store: Store, item: Item, who: policy.Actor | None = None) -> Item | None:
    """The memory, active or waiting in `item`'s scope, that is the same statement: what
    flows in again (a second /remember, a lesson or summary said again) is not kept
    twice. Only one `who` may know of counts (`may_know`)."""
    return next(iter(held_twins(store, item, who)), None)


def resolve(store: Store, ref: str, known: Callable[[Item], bool] | None = None) -> str:
    """The full id for a short id: any unique start or end of 4+ characters, or the
    start of the six characters people see; among the memories `known` keeps, when
    given (`get_known`)."""
    if not ids.is_valid_ref(ref):
        raise InvalidInput(
            f"'{ref}' is not an item id: give 4 to 26 of its characters (the last 6 are shown)"
        )
    key = ids.normalize_ref(ref)
    found = store.find_ids(key)
    if known is not None:
        found = [i for i in found if known(store.get_item(i))]
    if not found:
        raise NotFound(f"no item matches '{ref}'; `ken list --all` shows every item")
    if len(found) > 1:
        raise AmbiguousId(ref, [f"{short_id(i)} ({i})" for i in found])
    return found[0]


def get(store: Store, ref: str, known: Callable[[Item], bool] | None = None) -> Item:
    return store.get_item(resolve(store, ref, known))


def get_known(
    store: Store,
    ref: str,
    who: policy.Actor,
    blocked: set[str] | frozenset[str] | None = None,
    *,
    proposals: bool = True,
    own: Collection[str] = (),
) -> Item:
    """The memory `ref` names, resolved among those `who` may know of (`may_know`): for
    an agent, a short id matches no other memory, and an ambiguous one lists no other's
    id (an id tells when its memory was made). A person resolves among all. The full id
    of a memory withheld from the agent is refused saying why, and nothing of it but its
    id. `proposals` False keeps every proposal in reach but the withheld (an update that
    files a replacement of one not its own: the policy decides that, not this). `own`:
    ids the asker filed itself, in reach whoever it is (an MCP client kenning cannot name
    reads back what it proposed through the same connection), but the withheld."""
    if who.is_person:
        return get(store, ref)
    shut = config.Config().repos_not_delivered() if blocked is None else blocked
    try:
        return get(store, ref, known_to(who, shut, proposals=proposals, own=own))
    except NotFound:
        full = ids.normalize_ref(ref)
        named = store.find_ids(full) if len(full) == 26 else []
        if named and origins.withheld(store.get_item(named[0]), shut):
            raise InvalidInput(
                f"memory {short_id(named[0])} belongs to {origins.NOT_DELIVERED}"
            ) from None
        raise


def known_to(
    who: policy.Actor,
    blocked: set[str] | frozenset[str] | None = None,
    *,
    proposals: bool = True,
    own: Collection[str] = (),
) -> Callable[[Item], bool] | None:
    """Which memories an id `who` gives resolves among (`get_known`, a plan's ids):
    None for a person, who may name any."""
    if who.is_person:
        return None
    shut = config.Config().repos_not_delivered() if blocked is None else blocked

    def known(item: Item) -> bool:
        if not proposals or item.id in own:
            return not origins.withheld(item, shut)
        return may_know(who, item, shut)

    return known


WRITE_ATTEMPTS = 8  # reads of an item another process keeps changing before giving up


def _rewrite(
    store: Store,
    ref: str,
    build: Callable[[Item], Item],
    change: str,
    *,
    expected_revision: str | None = None,
    new_version: bool = True,
) -> Item:
    """Write `build(item)` over the item `ref` names, made from the item as stored when
    it is written: when another process wrote it between this read and this write, it
    is read and built again (unless the caller gave `expected_revision`: then that is a
    conflict). `build` returning the item itself changes nothing."""
    for attempt in range(WRITE_ATTEMPTS):
        item = get(store, ref)
        if expected_revision is not None and item.revision != expected_revision:
            # A conflict even when nothing would change: the caller's view is stale.
            raise RevisionConflict(item.id, expected_revision, item.revision)
        updated = build(item)
        if updated is item:
            return item  # nothing changed: no new version
        try:
            return store.replace_item(
                updated,
                change,
                expected_revision=expected_revision or item.revision,
                new_version=new_version,
            )
        except RevisionConflict:
            if expected_revision is not None or attempt == WRITE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def change(
    store: Store,
    ref: str,
    *,
    text: str | None = None,
    kind: Kind | None = None,
    scope: Scope | None = None,
    add_tags: Iterable[str] = (),
    remove_tags: Iterable[str] = (),
    add_links: Iterable[str] = (),
    remove_links: Iterable[str] = (),
    evidence: str | None = None,
    in_place: bool = False,
    expected_revision: str | None = None,
    provenance: Provenance | None = None,
    what: str = "edit",
    ttl_days: int | None = None,
    actor: policy.Actor | None = None,
) -> Item:
    """Change an item's text or fields; a new version unless `in_place`. An agent changes
    only its own active working notes without a person (see `policy.check_change`).

    The change is made to the item as stored when it is written (see `_rewrite`)."""

    who = policy.resolve(actor)

    def build(item: Item) -> Item:
        policy.check_local_change(item, what)
        policy.check_change(who, item, what, scope, kind)
        if scope is not None and scope != item.scope:
            projects.check_registered(store, scope, who)
        new = revised(
            item,
            text=text,
            kind=kind,
            scope=scope,
            add_tags=add_tags,
            remove_tags=remove_tags,
            add_links=add_links,
            remove_links=remove_links,
            evidence=evidence,
            provenance=provenance,
            ttl_days=ttl_days,
        )
        if in_place:
            _check_typo_fix(item, new)
        return new

    return _rewrite(
        store, ref, build, what, expected_revision=expected_revision, new_version=not in_place
    )


def move_to(store: Store, ref: str, scope: Scope, *, actor: policy.Actor | None = None) -> Item:
    """Put an item in another scope, a new version with nothing else changed: a task
    keeps its expiry, where a change of its text would renew it (a repo's memories
    moving to the key it has now are the same memories)."""

    def build(item: Item) -> Item:
        policy.check_local_change(item, "move")
        policy.check_change(policy.resolve(actor), item, "move", scope)
        if item.scope == scope:
            return item
        return replace(item, scope=scope, updated_at=now_iso(), revision=ids.new_ulid())

    return _rewrite(store, ref, build, "move")


def check_not_synced(item: Item) -> None:
    """Refuse to rewrite a memory a file keeps in sync (a project's decisions.md): the
    next sync would bring the file's words back, so the file is where to change it."""
    if item.source:
        raise InvalidInput(
            f"item {short_id(item.id)} is kept in sync from {item.source}: edit that file"
        )


IN_PLACE_SIMILARITY = 0.8  # how alike a text changed without a version must stay


def _check_typo_fix(old: Item, new: Item) -> None:
    """A change without a new version is for a typo: the text alike, nothing else moved.
    Anything more is a change, and every change makes a version (nothing is lost)."""
    import difflib

    if (new.kind, new.scope, new.tags, new.links) != (old.kind, old.scope, old.tags, old.links):
        raise InvalidInput("--in-place fixes a typo in the text only: drop it to change more")
    alike = difflib.SequenceMatcher(None, old.text, new.text, autojunk=False).ratio()
    if alike < IN_PLACE_SIMILARITY:
        raise InvalidInput(
            "--in-place is for a typo, and this rewrites the text: drop it to make a version"
        )


def revised(
    item: Item,
    *,
    text: str | None = None,
    kind: Kind | None = None,
    scope: Scope | None = None,
    add_tags: Iterable[str] = (),
    remove_tags: Iterable[str] = (),
    add_links: Iterable[str] = (),
    remove_links: Iterable[str] = (),
    evidence: str | None = None,
    provenance: Provenance | None = None,
    ttl_days: int | None = None,
) -> Item:
    """`item` changed as asked, checked and redacted, with a new revision id (not yet
    stored); `item` itself when nothing changes."""
    if text is not None:
        check_not_synced(item)
    title, body = (item.title, item.body) if text is None else split_text(text)
    tags = list(item.tags)
    tags += [t for t in clean_tags(add_tags) if t not in tags]
    drop = set(clean_tags(remove_tags))
    tags = [t for t in tags if t not in drop]
    links = list(item.links)
    links += [link for link in parse_links(redact(x).text for x in add_links) if link not in links]
    gone = set(parse_links(remove_links))
    links = [link for link in links if link not in gone]
    new_evidence = item.evidence if evidence is None else evidence
    title, body, new_evidence, new_tags = _redact_text(title, body, new_evidence, tuple(tags))
    check_size(title, body, new_evidence)
    now = now_iso()
    new_kind = kind or item.kind
    updated = replace(
        item,
        title=title,
        body=body,
        kind=new_kind,
        scope=scope or item.scope,
        tags=new_tags,
        links=tuple(links),
        evidence=new_evidence,
        updated_at=now,
        expires_at=task_expiry(new_kind, now, ttl_days),
        provenance=redact_provenance(provenance) if provenance else item.provenance,
        revision=ids.new_ulid(),
    )
    if updated == replace(
        item, updated_at=now, revision=updated.revision, expires_at=updated.expires_at
    ):
        return item
    return updated


_ALLOWED_FROM: dict[str, tuple[Status, ...]] = {
    "approve": (Status.PROPOSED,),
    "reject": (Status.PROPOSED,),
    "archive": (Status.ACTIVE, Status.PROPOSED),
    "dismiss": (Status.ACTIVE, Status.PROPOSED, Status.ARCHIVED),
    "restore": (Status.ARCHIVED, Status.REJECTED, Status.DISMISSED, Status.SUPERSEDED),
}
_TARGET = {
    "approve": Status.ACTIVE,
    "reject": Status.REJECTED,
    "archive": Status.ARCHIVED,
    "dismiss": Status.DISMISSED,
}


REPLACES = "replace"  # the change that files a proposed replacement of another item


def replacement_links(links: Iterable[str | Link], replaced: str) -> list[str]:
    """The links of a proposed replacement of memory `replaced`: `links` (the original's)
    and, last, `item:<replaced>`, which is how `replaced_by` knows what it replaces."""
    mine = f"item:{replaced}"
    return [*(str(x) for x in links if str(x) != mine), mine]


def replaced_by(store: Store, item: Item) -> Item | None:
    """The memory a proposed replacement was filed for, or None for any other memory.

    Only kenning files a replacement (an agent's `memory_update` of a memory not its own,
    `ken collect` revising an approved one): its first version is a `REPLACES` change
    whose last link kenning put there (`replacement_links`). Any other `item:` link, one
    an agent wrote in its proposal and the replacement kept, is a reference and replaces
    nothing, so approving never retires a memory the person was not shown."""
    history = store.revisions(item.id)
    if not history or history[0].change != REPLACES or not history[0].links:
        return None
    try:
        link = Link.parse(history[0].links[-1])
    except ValueError:
        return None
    if link.type != "item" or link.target == item.id:
        return None
    try:
        return store.get_item(link.target)
    except NotFound:
        return None


# What approving a replacement retires: the memory it was filed for, told (active) or
# still waiting (proposed: the replacement is its newer words, and it waits no more).
RETIRED_BY_REPLACEMENT = (Status.ACTIVE, Status.PROPOSED)


def to_supersede(store: Store, item: Item) -> Item | None:
    """The memory approving `item` would supersede: the active or waiting one a proposed
    replacement was filed for; None when approving it retires nothing."""
    if item.status is not Status.PROPOSED:
        return None
    old = replaced_by(store, item)
    return old if old is not None and old.status in RETIRED_BY_REPLACEMENT else None


def _supersede_replaced(store: Store, item: Item) -> Item | None:
    """Approving a proposed replacement supersedes the memory it was filed for (and no
    other), active or still waiting; returns that memory as superseded, or None."""
    old = replaced_by(store, item)
    if old is None or old.status not in RETIRED_BY_REPLACEMENT:
        return None
    return store.replace_item(
        replace(
            old,
            status=Status.SUPERSEDED,
            updated_at=now_iso(),
            links=(*old.links, Link("item", item.id)),
            revision=ids.new_ulid(),
        ),
        "supersede",
    )


def told_twin(store: Store, item: Item) -> Item | None:
    """The active memory in `item`'s scope that is the same statement, other than the one
    approving `item` would retire: approving `item` too would tell it twice."""
    retiring = to_supersede(store, item)
    return next(
        (
            t
            for t in held_twins(store, item)
            if t.status is Status.ACTIVE and (retiring is None or t.id != retiring.id)
        ),
        None,
    )


# A batch this long is checked against every active memory of its scopes, read once,
# rather than by a search per memory: each search reads the index's matches of its
# words, which grow with the store, and `ken approve --all` of thousands was quadratic.
BATCH_CHECK = 50


def check_approvable(store: Store, chosen: Sequence[Item]) -> None:
    """Refuse, before any is approved, a batch in which one would tell again what is told
    already: the same statement active in its scope (a replacement whose original was
    superseded by another copy of it), or approved earlier in the same batch."""
    for item, twin in _told_twice(store, chosen):
        raise ToldAlready(item, twin)


def _told_twice(store: Store, chosen: Sequence[Item]) -> Iterator[tuple[Item, Item]]:
    """Each of `chosen` that approving would tell twice (`check_approvable`), with the
    memory that tells it already."""
    told = _told_in(store, chosen) if len(chosen) >= BATCH_CHECK else None
    seen: dict[tuple[str, str], Item] = {}
    for item in chosen:
        key = (str(item.scope), statement_key(item.text))
        twin = (told_twin(store, item) if told is None else _told_of(store, item, told)) or (
            seen.get(key)
        )
        if twin is not None:
            yield item, twin
        else:
            seen[key] = item


def _told_in(store: Store, chosen: Sequence[Item]) -> dict[tuple[str, str], list[Item]]:
    """The active memories of the scopes of `chosen`, by scope and statement key."""
    told: dict[tuple[str, str], list[Item]] = {}
    scopes = sorted({str(item.scope) for item in chosen})
    # A read per few hundred scopes, not per scope: a batch of agents' proposals spans
    # many workstreams and sessions.
    for start in range(0, len(scopes), SCOPES_READ):
        query = ItemQuery(scopes=tuple(scopes[start : start + SCOPES_READ]), include_expired=True)
        for found in store.list_items(query):
            told.setdefault((str(found.scope), statement_key(found.text)), []).append(found)
    return told


SCOPES_READ = 500  # scopes read together by `_told_in`, well under SQLite's bound parameters


def _told_of(store: Store, item: Item, told: dict[tuple[str, str], list[Item]]) -> Item | None:
    """`told_twin`, looked up in `told` (`_told_in`)."""
    twins = [
        t
        for t in told.get((str(item.scope), statement_key(item.text)), ())
        if t.id != item.id and may_know(policy.resolve(None), t)
    ]
    if not twins:
        return None
    retiring = to_supersede(store, item)
    return next((t for t in twins if retiring is None or t.id != retiring.id), None)


APPROVE_CHUNK = 500  # decisions written in one transaction by `approve_all`, `reject_all`


@dataclass(frozen=True, slots=True)
class Skipped:
    """A memory of a batch left as it is, and why (`approve_all`, `reject_all`)."""

    item: Item  # as the batch was checked
    why: str


def approve_all(
    store: Store,
    chosen: Sequence[Item],
    *,
    actor: policy.Actor | None = None,
    archived: list[Item] | None = None,
    progress: Callable[[int, int], None] | None = None,
    skipped: list[Skipped] | None = None,
    covered: bool = False,
) -> list[Item]:
    """Approve a batch a person chose (`ken approve --all`): checked as one before any
    is approved (`check_approvable`), then approved as `set_status` approves one (the
    person check, the replacement it supersedes, the cap), a chunk per transaction;
    `progress` hears (handled, total) after each chunk. With `covered` (every waiting
    memory, not ids the person named), one whose statement is told already is left as
    it is and put in `skipped`, and the rest approved, rather than the batch refused.

    Another connection may change the store between the read and a chunk: a memory
    changed since `chosen` was read (before the person said yes, however long that
    took), or told meanwhile by another, is left as it is and put in `skipped`, with
    why. Each chunk is checked against the revisions read inside its own transaction
    (`_unchanged`: a read by id of each); whether another memory tells one already is
    asked again (`_still_approvable`, which searches) only where something else wrote
    since the check (the store's `data_version` is not as it was)."""
    version = store.data_version()
    if covered:
        twice = {item.id: ToldAlready(item, twin) for item, twin in _told_twice(store, chosen)}
        if skipped is not None:
            skipped += [twice[i.id].skipped() for i in chosen if i.id in twice]
        chosen = [i for i in chosen if i.id not in twice]
    else:
        check_approvable(store, chosen)
    done: list[Item] = []
    for start in range(0, len(chosen), APPROVE_CHUNK):
        chunk = chosen[start : start + APPROVE_CHUNK]
        with store.together():
            if store.data_version() != version:
                chunk = _still_approvable(store, chunk, skipped)
            else:
                chunk = _unchanged(store, chunk, skipped)
            done += [
                set_status(store, i.id, "approve", actor=actor, archived=archived, checked=True)
                for i in chunk
            ]
        if progress:
            progress(min(start + APPROVE_CHUNK, len(chosen)), len(chosen))
    return done


def reject_all(
    store: Store,
    chosen: Sequence[Item],
    *,
    actor: policy.Actor | None = None,
    progress: Callable[[int, int], None] | None = None,
    skipped: list[Skipped] | None = None,
) -> list[Item]:
    """Reject a batch a person chose (`ken reject --all`) as `approve_all` approves one: a
    chunk per transaction, `progress` told after each. A memory another connection
    changed since `chosen` was read (decided it, revised its proposal, forgot it) is left
    as it is and put in `skipped`, with why: what was shown is what is rejected. Each
    chunk is checked (a read by id of each memory, no search): `chosen` was read before
    the person said yes, however long that took."""
    done: list[Item] = []
    for start in range(0, len(chosen), APPROVE_CHUNK):
        with store.together():
            chunk = _unchanged(store, chosen[start : start + APPROVE_CHUNK], skipped)
            done += [set_status(store, i.id, "reject", actor=actor) for i in chunk]
        if progress:
            progress(min(start + APPROVE_CHUNK, len(chosen)), len(chosen))
    return done


def _still_approvable(
    store: Store, chunk: Sequence[Item], skipped: list[Skipped] | None
) -> list[Item]:
    """Those of `chunk` that are as they were read (`_unchanged`) and that no memory
    active now tells already; the others go into `skipped`."""
    same = _unchanged(store, chunk, skipped)
    told = {item.id: twin for item, twin in _told_twice(store, same)}
    if skipped is not None:
        skipped += [
            Skipped(i, f"told since the batch was read by {short_id(told[i.id].id)}")
            for i in same
            if i.id in told
        ]
    return [i for i in same if i.id not in told]


def _unchanged(store: Store, chunk: Sequence[Item], skipped: list[Skipped] | None) -> list[Item]:
    """Those of `chunk` that are as they were read (the same revision: the status, the
    text and the scope the person was shown), as stored; the others go into `skipped`."""
    same: list[Item] = []
    for item in chunk:
        try:
            now = store.get_item(item.id)
        except NotFound:
            why = "deleted since the batch was read"
        else:
            if now.revision == item.revision:
                same.append(now)
                continue
            why = f"changed since the batch was read, now {now.status.value}"
        if skipped is not None:
            skipped.append(Skipped(item, why))
    return same


class ToldAlready(InvalidInput):
    """Approving `item` would tell again what `twin`, active in its scope, tells. A face
    may say how it dismisses one (`hint`); the message names the command."""

    def __init__(self, item: Item, twin: Item) -> None:
        self.item, self.twin = item, twin
        super().__init__(self.said(f"`ken dismiss {short_id(item.id)} --reason covered`"))

    def said(self, dismiss: str) -> str:
        return (
            f"cannot approve {short_id(self.item.id)}: it says what {short_id(self.twin.id)} "
            f"says in {self.item.scope}, and agents would be told it twice; dismiss it as "
            f"covered ({dismiss}); nothing changed"
        )

    def skipped(self) -> Skipped:
        """The same refusal as one memory of a batch left as it is (`approve --all`)."""
        return Skipped(
            self.item,
            f"it says what {short_id(self.twin.id)} says in {self.item.scope} already; "
            f"`ken dismiss {short_id(self.item.id)} --reason covered` sets it aside",
        )


def allowed_from(action: str) -> tuple[Status, ...]:
    """The statuses an item must be in for `action` (approve, reject, ...)."""
    return _ALLOWED_FROM[action]


def check_status_change(item: Item, action: str) -> None:
    policy.check_local_change(item, action)
    if item.status not in _ALLOWED_FROM[action]:
        allowed = " or ".join(s.value for s in _ALLOWED_FROM[action])
        raise InvalidInput(
            f"cannot {action} item {short_id(item.id)}: it is {item.status.value}, "
            f"and only {allowed} items can be {action.removesuffix('e')}ed"
        )


def restored_status(store: Store, item: Item) -> Status:
    """Where `restore` sends an item: back to the status it left, so a proposal a person
    rejected or dismissed waits for review again and never becomes active on its own."""
    history = store.revisions(item.id)
    for before, after in reversed(list(zip(history, history[1:], strict=False))):
        if after.status == item.status.value and before.status != item.status.value:
            return Status.PROPOSED if before.status == Status.PROPOSED.value else Status.ACTIVE
    # No record of where it came from: what was rejected or dismissed was not approved.
    if item.status in (Status.REJECTED, Status.DISMISSED):
        return Status.PROPOSED
    return Status.ACTIVE


def set_status(
    store: Store,
    ref: str,
    action: str,
    *,
    reason: str | None = None,
    actor: policy.Actor | None = None,
    archived: list[Item] | None = None,
    checked: bool = False,
    shown: str | None = None,
) -> Item:
    """approve, reject, archive (with an optional reason in the person's words), dismiss
    (with a reason: covered, wrong, one_off, or other when none is given) or restore one
    item: a person's decision (see `policy.require_person`). What the scope's cap
    archived to make room for an approved or restored memory goes into `archived`.
    `checked`: the caller checked the approval with its batch (`approve_all`). `shown`:
    the revision the person was shown (`ken review`, the panel): one changed since (an
    agent revised its proposal) is a RevisionConflict, never decided unseen."""

    def build(item: Item) -> Item:
        check_status_change(item, action)
        policy.require_person(policy.resolve(actor), f"{action} {short_id(item.id)}")
        if action == "approve" and not checked:
            check_approvable(store, [item])
        now = now_iso()
        target = restored_status(store, item) if action == "restore" else _TARGET[action]
        return replace(
            item,
            status=target,
            dismiss_reason=dismiss_reason_of(reason) if action == "dismiss" else None,
            archive_reason=archive_reason_of(reason) if action == "archive" else None,
            updated_at=now,
            reviewed_at=now if target is Status.ACTIVE else item.reviewed_at,
            expires_at=task_expiry(item.kind, now) if action == "restore" else item.expires_at,
            revision=ids.new_ulid(),
        )

    # on the item as stored when written (as shown, when the person was shown one)
    stored = _rewrite(store, ref, build, action, expected_revision=shown)
    if action == "approve":
        _supersede_replaced(store, stored)
    if stored.status is Status.ACTIVE:
        aside = enforce_cap(store, stored.scope, keep=(stored.id,))
        if archived is not None:
            archived += aside
    return stored


UNDO = "undo"  # the change that puts a status back as it was before a person's decision


def undo_status(
    store: Store,
    before: Item,
    *,
    expected_revision: str,
    actor: policy.Actor | None = None,
) -> Item:
    """Undo a status change (approve, reject, archive, dismiss, restore): the memory goes
    back to the status, reasons and review time it had in `before`, as a new version.

    Only while nothing else changed it: `expected_revision` is the revision the change
    made, else RevisionConflict (nothing undone; no revision to retry with, since the
    change to undo is no longer the last). What the change did to other memories (an approved
    replacement superseding the one it replaces, the cap archiving) stays as it is."""
    item = store.get_item(before.id)
    policy.check_local_change(item, "undo the change to")
    policy.require_person(policy.resolve(actor), f"undo the change to {short_id(item.id)}")
    updated = replace(
        item,
        status=before.status,
        dismiss_reason=before.dismiss_reason,
        archive_reason=before.archive_reason,
        reviewed_at=before.reviewed_at,
        expires_at=before.expires_at,
        updated_at=now_iso(),
        revision=ids.new_ulid(),
    )
    try:
        return store.replace_item(updated, UNDO, expected_revision=expected_revision)
    except RevisionConflict as exc:
        raise RevisionConflict(
            item.id,
            expected_revision,
            exc.current,
            f"nothing undone: {short_id(item.id)} has been changed since, elsewhere",
        ) from None


def dismiss_reason_of(reason: str | None) -> str:
    """A dismiss reason as typed: covered, wrong, one_off or other; other when none."""
    text = (reason or "").strip().lower() or DismissReason.OTHER.value
    try:
        return DismissReason(text).value
    except ValueError:
        raise InvalidInput(
            f"unknown dismiss reason '{reason}': use {', '.join(r.value for r in DismissReason)}"
        ) from None


def archive_reason_of(reason: str | None, what: str = "archive reason") -> str | None:
    """An archive reason (or another `what` in the person's words): one line, redacted,
    200 characters at most; None when none is given."""
    text = " ".join((reason or "").split())
    if not text:
        return None
    if len(text) > MAX_ARCHIVE_REASON:
        raise InvalidInput(
            f"the {what} is {len(text)} characters, over {MAX_ARCHIVE_REASON}: say it in a line"
        )
    return redact(text).text


def set_pinned(store: Store, ref: str, pinned: bool, *, actor: policy.Actor | None = None) -> Item:
    """Pin (always in packs) or unpin; an agent only its own working notes."""
    item = get(store, ref)
    policy.check_local_change(item, "pin" if pinned else "unpin")
    policy.check_change(policy.resolve(actor), item, "pin" if pinned else "unpin")
    if item.pinned == pinned:
        return item
    updated = replace(item, pinned=pinned, updated_at=now_iso(), revision=ids.new_ulid())
    return store.replace_item(updated, "pin" if pinned else "unpin")


def search(
    store: Store,
    text: str,
    *,
    scopes: Sequence[str] = (),
    kinds: Sequence[str] = (),
    statuses: Sequence[str] = ("active",),
    tags: Sequence[str] = (),
    include_expired: bool = False,
    limit: int = 20,
    fill: bool = True,
    exclude_repos: Iterable[str] = (),
) -> list[Found]:
    """Full-text search, best first. Words match their stems; the last word is a prefix
    of the words as typed (`deploy` finds "Deployment") as well as of their stems.

    The memories that hold every word come first. When fewer than `limit` do and
    `fill` is on, the rest are those recall ranks best for the words among the same
    memories (every threshold off): a question asked in a person's own words
    rarely has all of them in one memory, and recall weighs the rare ones, knows a
    word's other forms and a few synonyms, and leaves out "when", "we" and "the". Their
    score is recall's, not bm25's: a score orders one search's results only. What
    belongs to `exclude_repos` (`ItemQuery.exclude_repos`) is never among them."""
    if not text.strip():  # as a text of punctuation alone, which the store refuses
        raise InvalidInput("the search has no words in it: give at least one word")
    query = ItemQuery(
        scopes=tuple(scopes),
        kinds=tuple(kinds),
        statuses=tuple(statuses),
        tags=tuple(tags),
        include_expired=include_expired,
        limit=limit,
        exclude_repos=tuple(sorted(exclude_repos)),  # withheld: they take no place of the limit
    )
    found = [Found(item, score) for item, score in store.search(Words(typed=text), query)]
    if fill and len(found) < limit:
        found += _some_words(store, text, query, {f.item.id for f in found})
    return found[:limit]


def _some_words(store: Store, text: str, query: ItemQuery, seen: set[str]) -> list[Found]:
    from kenning.recall import RecallSettings, recall

    # What shares no word with the search (a note only for the one it follows) is
    # recall's to give, not a search's.
    settings = RecallSettings(limit=FILL_POOL, max_tokens=10**9, min_score=0.0, min_shared=1)
    ranked = recall(
        store,
        text,
        query.scopes,
        settings=settings,
        kinds=query.kinds,
        tags=query.tags,
        statuses=query.statuses,
        include_expired=query.include_expired,
        exclude_repos=query.exclude_repos,
    ).kept
    return [Found(c.item, c.score, every_word=False) for c in ranked if c.item.id not in seen]


FILL_POOL = 50  # memories recall ranks to fill a search


def list_items(
    store: Store,
    *,
    scopes: Sequence[str] = (),
    kinds: Sequence[str] = (),
    statuses: Sequence[str] = ("active",),
    tags: Sequence[str] = (),
    include_expired: bool = False,
    limit: int | None = None,
) -> list[Item]:
    """Newest first, pinned on top."""
    return store.list_items(
        ItemQuery(
            scopes=tuple(scopes),
            kinds=tuple(kinds),
            statuses=tuple(statuses),
            tags=tuple(tags),
            include_expired=include_expired,
            limit=limit,
        )
    )


def select_for_forget(
    store: Store,
    *,
    refs: Sequence[str] = (),
    scope: Scope | str | None = None,
    since: str | None = None,
    session: str | None = None,
) -> list[Item]:
    """The items a `forget` would delete: by id, or every item matching all filters."""
    if refs:
        return [get(store, ref) for ref in refs]
    if not (scope or since or session):
        raise InvalidInput("say what to forget: item ids, or --scope, --since or --session")
    if since and not _is_date(since):
        raise InvalidInput(f"--since takes a date as YYYY-MM-DD, not '{since}'")
    query = ItemQuery(
        scopes=(str(parse_scope(scope, to_find=True) if isinstance(scope, str) else scope),)
        if scope
        else (),
        statuses=(),
        include_expired=True,
        since=since,
        session_id=session,
    )
    return store.list_items(query)


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:  # 2026-13-01, 2026-02-30
        return False
    return True


QUOTE_MIN_CHARS = 12  # a shorter line of a memory is too common to look for elsewhere


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def quotable(store: Store, items: Sequence[Item]) -> list[str]:
    """What of `items`, in any of their versions, another place could quote: each title
    and body line, and each sentence of a longer line, of at least QUOTE_MIN_CHARS
    characters, whitespace collapsed. An earlier version is often the very text a
    person edited out and then wants gone."""
    texts = {(i.title, i.body) for i in items}
    texts |= {(r.title, r.body) for i in items for r in store.revisions(i.id)}
    lines = [" ".join(x.split()) for t, b in sorted(texts) for x in (t, *b.splitlines())]
    parts = [*lines, *(part for line in lines for part in _SENTENCE_END.split(line))]
    return list(dict.fromkeys(part for part in parts if len(part) >= QUOTE_MIN_CHARS))


@dataclass(frozen=True, slots=True)
class ForgetPlan:
    """What a `forget` deletes: the memories asked for, the proposed copies that would
    replace them, and, `everywhere`, every other memory that quotes them."""

    chosen: tuple[Item, ...]
    copies: tuple[Item, ...] = ()
    quoting: tuple[Item, ...] = ()
    everywhere: bool = False

    @property
    def items(self) -> tuple[Item, ...]:
        return (*self.chosen, *self.copies, *self.quoting)


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What a `forget` did: memories deleted, session prompts and recall queries
    blanked, hook log lines dropped, entries taken out of the team outbox (never sent),
    kept edits and drafted plans removed, and the copies of the store kept from before
    an upgrade that held them, removed (their paths)."""

    memories: int
    quotes: int = 0
    log_lines: int = 0
    unsent: int = 0
    drafts: int = 0
    kept_copies: tuple[str, ...] = ()


def write_spooled(store: Store) -> bool:
    """Make the writes hooks kept in the spool for this store (`kenning.spool`) before
    forgetting, so that forget treats a prompt, a record of what was told or a handoff
    waiting there as it treats the store's own: left there, it would be written after
    the forget, the forgotten text with it. Whether there was any; StoreBusy when the
    store stays locked past the wait, and nothing is forgotten."""
    if not spool.pending(store.path):
        return False
    if spool.replay(store):
        raise StoreBusy(
            f"the store {store.path} stayed locked by another process, with writes of "
            "hooks still waiting to be made; nothing forgotten; try again"
        )
    return True


def plan_forget(store: Store, chosen: Sequence[Item], *, everywhere: bool = False) -> ForgetPlan:
    """The whole of what forgetting `chosen` deletes, to show a person before it does:
    its proposed replacement copies always, and with `everywhere` the memories (a
    summary, a handoff, any other) whose text quotes it, in any version."""
    ids_ = [item.id for item in chosen]
    copies = [
        copy
        for copy in store.replacement_copies(ids_)
        if copy.id not in ids_ and (h := store.revisions(copy.id)) and h[0].change == REPLACES
    ]
    quoting: list[Item] = []
    if everywhere:
        taken = [*ids_, *(c.id for c in copies)]
        quoting = store.items_quoting(quotable(store, [*chosen, *copies]), exclude_ids=taken)
    return ForgetPlan(tuple(chosen), tuple(copies), tuple(quoting), everywhere)


def forget(
    store: Store,
    items: Sequence[Item] | ForgetPlan,
    session_id: str | Sequence[str] | None = None,
    *,
    actor: policy.Actor | None = None,
) -> Forgotten:
    """Delete items and every version of them (and a session's own record, prompts and
    deliveries, when named); their text is gone from disk afterwards: from the hook log,
    the team outbox (it is never sent), and the edits and plans kept in the state folder
    (`kenning.drafts`), and the copies of the store kept from before an upgrade that
    hold them are removed (`Store.drop_kept_copies`). The writes waiting in the spool
    are made first (`write_spooled`) and forgotten as the store's own. A plain list of
    items is planned first (their replacement copies go too); a plan made `everywhere`
    also blanks the session prompts and recall queries that quote them. `session_id` may
    name several sessions (an agent's session that went on in several places). A memory
    kept in sync from a file leaves a digest that keeps the same entry from coming back
    (`kenning.tombstones`). Only a person forgets."""
    plan = items if isinstance(items, ForgetPlan) else plan_forget(store, items)
    policy.require_person(policy.resolve(actor), f"forget {len(plan.items)} memories")
    needles = quotable(store, [*plan.chosen, *plan.copies])
    gone = [item.id for item in plan.items]
    if write_spooled(store) and plan.everywhere:
        # A hook's handoff quoting it, written from the spool since the plan, goes too.
        gone += [item.id for item in store.items_quoting(needles, exclude_ids=gone)]
    # Out of the outbox first: a sync between the two would push what is being forgotten.
    unsent = team_state.forget(store.path, gone)
    # A memory kept in sync from a file would come back from it at the next sync or
    # collection: a digest of its source and text (no text) keeps it out.
    store.add_forgotten(tombstones.of(plan.items))
    named = [session_id] if isinstance(session_id, str) else list(session_id or ())
    first = named[0] if named else None
    deleted = store.delete_items(gone, session_id=first)
    for other in named[1:]:
        store.delete_items([], session_id=other)
    quotes = store.scrub_quotes(needles) if plan.everywhere else 0
    # The copies kept from before an upgrade hold it in full: they go (not only a copy
    # with a version of it, also one with a quote --everywhere blanks in the store).
    copies = store.drop_kept_copies(gone, first, needles if plan.everywhere else ())
    for other in named[1:]:
        copies += [c for c in store.drop_kept_copies([], other, ()) if c not in copies]
    return Forgotten(
        deleted,
        quotes,
        hooklog.scrub(needles),
        unsent,
        drafts.forget(gone, needles),
        tuple(copies),
    )
