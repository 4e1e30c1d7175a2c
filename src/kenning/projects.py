"""Projects: a folder whose notes are indexed one way into `project:<slug>`.

In a project folder, `decisions.md` holds a decision per `##` section (titled by its
heading), `plan.md` a task per `- [ ]` item, and `log.md` a handoff per `##` entry
(entries inside HTML comments are skipped, as are comments anywhere; one left open runs
to the end of the file, as Markdown hides it). The file is the
truth: an edited section updates its item in place (no new version), a removed one
archives it, a ticked task is archived, a section over 4 KB is cut with a pointer to
the file. An entry whose memory a person forgot (`ken forget`) is left out while its
text stays as it was (`kenning.tombstones`). Files are read only when their size or
mtime changed, so the hooks can sync before every pack and no daemon is needed. Tasks
from `plan.md` do not expire: the plan says whether they are current.

A project file is read only when it is a regular file of at most 1 MB: a FIFO would
block every SessionStart in the folder, and a link to `/dev/zero` would read until
memory runs out. A file refused is skipped (its items stay as they were) and said so.
A file deleted archives its items; but when none of the files is there any more (and
some were), the folder was moved or emptied, not every entry deleted: nothing is
archived, and the sync says so, as it does for a folder that is gone.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from kenning import handoffs, ids, paths, policy, tombstones
from kenning.config import Config, made_state_dir
from kenning.errors import InvalidInput, NotFound
from kenning.model import (
    MAX_ITEM_BYTES,
    Item,
    Kind,
    Provenance,
    Scope,
    ScopeType,
    Status,
    normalize_name,
)
from kenning.redact import redact
from kenning.store import ItemQuery, Project, SessionQuery, Store, now_iso

FILES = ("decisions.md", "plan.md", "log.md")
MAX_FILE_BYTES = 1024 * 1024
READ_SESSIONS = 50  # an agent's latest sessions in a project, to find who wrote an entry
# A comment left open runs to the end of the file, as Markdown shows it: nothing after
# it is seen, so nothing after it is indexed.
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_TASK = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$")
# Where a line ends, for the reader and the writer alike: at every boundary
# `str.splitlines()` knows (CR LF as one), so an editor that breaks at U+2028 or a
# Markdown view that breaks at a lone CR sees no line kenning does not. The writer
# (`literal`) turns each into a line feed, so an agent's text has no line kenning reads
# otherwise than it was written.
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_FENCES = ("```", "~~~")


@dataclass(frozen=True, slots=True)
class Entry:
    key: str
    title: str
    body: str
    kind: Kind
    status: Status


@dataclass
class SyncReport:
    slug: str
    read: list[str]
    added: int = 0
    updated: int = 0
    archived: int = 0
    forgotten: int = 0  # entries a person forgot (`ken forget`), left out
    skipped: list[str] = field(default_factory=list)  # why a file was not read
    missing: list[str] = field(default_factory=list)  # gone since the last sync

    def to_dict(self) -> dict[str, object]:
        return {
            "project": self.slug,
            "read": self.read,
            "added": self.added,
            "updated": self.updated,
            "archived": self.archived,
            "forgotten": self.forgotten,
            "skipped": self.skipped,
            "missing": self.missing,
        }


def entry_key(text: str) -> str:
    # The key is stored (in the item's source): made from the heading as redacted.
    return re.sub(r"[^a-z0-9]+", "-", redact(text).text.lower()).strip("-")[:80] or "untitled"


def lines(text: str) -> list[str]:
    """A project file's lines, as every reader of one in kenning splits them."""
    return _LINE_BREAK.split(text)


def _fence(line: str, fence: str | None) -> str | None:
    """The fence open after `line`, given the one open before it (None: none)."""
    marker = line.lstrip()[:3]
    if marker in _FENCES:
        return None if fence == marker else (fence or marker)
    return fence


def _sections(text: str) -> list[tuple[str, str]]:
    """`## ` sections as (heading, body); text before the first heading is ignored, and
    so is a `## ` line inside a fenced code block."""
    found: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in lines(_COMMENT.sub("", text)):
        fence = _fence(line, fence)
        if line.startswith("## ") and fence is None:
            found.append((line[3:].strip(), []))
        elif found:
            found[-1][1].append(line)
    return [(h, "\n".join(b).strip()) for h, b in found if h]


def _unique(entries: list[Entry]) -> list[Entry]:
    seen: dict[str, int] = {}
    out = []
    for entry in entries:
        n = seen.get(entry.key, 0) + 1
        seen[entry.key] = n
        out.append(entry if n == 1 else replace(entry, key=f"{entry.key}-{n}"))
    return out


def parse(name: str, text: str) -> list[Entry]:
    """The entries a project file holds."""
    if name == "plan.md":
        entries = []
        for line in lines(_COMMENT.sub("", text)):
            match = _TASK.match(line)
            if match:
                done = match.group(1) != " "
                title = match.group(2)
                entries.append(
                    Entry(
                        entry_key(title),
                        title,
                        "",
                        Kind.TASK,
                        Status.ARCHIVED if done else Status.ACTIVE,
                    )
                )
        return _unique(entries)
    kind = Kind.DECISION if name == "decisions.md" else Kind.HANDOFF
    return _unique([Entry(entry_key(h), h, b, kind, Status.ACTIVE) for h, b in _sections(text)])


def _fit(title: str, body: str, path: Path) -> str:
    """Cut a body so that title and body stay under 4 KB, pointing to the file."""
    marker = f"\n\n… (cut; the rest is in {path})"
    room = MAX_ITEM_BYTES - len(title.encode()) - 1
    if len(body.encode()) <= room:
        return body
    keep = body.encode()[: max(0, room - len(marker.encode()))].decode("utf-8", "ignore")
    return keep.rstrip() + marker


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_file(path: Path) -> str | None:
    """A project file's text; None when there is none. Raises InvalidInput for anything
    but a regular file of at most MAX_FILE_BYTES.

    The type is checked before opening (opening some devices does something), and again
    on the open descriptor, which O_NONBLOCK keeps a FIFO from blocking on.
    """
    try:
        before = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    refuse = f"{path} is {{}}; kenning reads only a regular file there"
    if not stat.S_ISREG(before.st_mode):
        raise InvalidInput(refuse.format(_file_kind(before.st_mode)))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(refuse.format(_file_kind(info.st_mode)))
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_FILE_BYTES and (chunk := os.read(fd, MAX_FILE_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES or info.st_size > MAX_FILE_BYTES:
        raise InvalidInput(
            f"{path} is over {MAX_FILE_BYTES // (1024 * 1024)} MB, more than kenning reads; "
            "move old entries to another file"
        )
    return b"".join(chunks).decode("utf-8", "replace")


def _source(slug: str, name: str, key: str = "") -> str:
    return f"project:{slug}:{name}#{key}"


def get_project(store: Store, slug: str) -> Project:
    slug = normalize_name(slug)
    for project in store.projects():
        if project.slug == slug:
            return project
    raise NotFound(f"no project '{slug}'; `ken project list` shows them")


def repos_of(project: Project) -> list[str]:
    """The repos a project belongs to: the one it was added from (`ken project add` run
    there), and the one its folder is in, when that is another (a project added in shop
    for a folder inside payroll is payroll's too: its log.md is written there). The
    folder is found by reading git's files, as `ken where` finds a repo."""
    from kenning.git import find_git

    found = [project.repo] if project.repo else []
    git = find_git(project.folder)
    if git is not None and git.key not in found:
        found.append(git.key)
    return found


def check_registered(store: Store, scope: Scope, actor: policy.Actor) -> None:
    """Refuse a write to a project that is not registered (mistyped, or removed since):
    it would make a project no one is ever told. The project the writer works in counts
    (`KEN_PROJECT` puts you in one wherever you are), and so does any when where it
    works is not known (kenning recording a session). Reading, searching and forgetting
    a removed project's memories are not writes."""
    if scope.type is not ScopeType.PROJECT or actor.here is None or scope in actor.here:
        return
    if any(project.slug == scope.value for project in store.projects()):
        return
    raise InvalidInput(
        f"there is no project '{scope.value}' (`ken project list` shows them): a person "
        f"registers it with `ken project add {scope.value} FOLDER`; nothing was saved"
    )


def add_project(
    store: Store,
    slug: str,
    folder: str,
    repo: str | None,
    *,
    actor: policy.Actor | None = None,
) -> SyncReport:
    """Register `folder` as project `slug` and index it. Its decisions become active
    memory told to every session there, so only a person registers a project."""
    policy.require_person(policy.resolve(actor), f"register project {slug}")
    typed, slug = slug, normalize_name(slug)  # as in project:NAME: `Shop` is project:shop
    try:
        Scope.of(ScopeType.PROJECT, typed)  # the one rule of project names
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    if (secret := redact(typed)).kinds:  # refused, not redacted, as --scope is
        raise InvalidInput(
            f"bad project name '{secret.text}': it holds a secret ({', '.join(secret.kinds)}); "
            "a project's name is a key, never redacted, so name it without"
        )
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise InvalidInput(f"{folder} is not a folder")
    known = next((p for p in store.projects() if p.slug == slug), None)
    if known is not None and Path(paths.os_path(known.folder)) != path:
        raise InvalidInput(
            f"project {slug} is {known.folder} already: `ken project remove {slug}` first "
            "to point it elsewhere (its memories stay), or choose another name"
        )
    # One folder, one project: two would index each file twice, and which applies in
    # the folder would be a coin toss.
    twin = next(
        (p for p in store.projects() if p.slug != slug and Path(paths.os_path(p.folder)) == path),
        None,
    )
    if twin is not None:
        raise InvalidInput(
            f"{path} is project {twin.slug} already: `ken project remove {twin.slug}` first "
            "to give the folder another name (its memories stay)"
        )
    for name in FILES:
        read_file(path / name)  # a file kenning cannot read refuses the project
    made_state_dir()  # where its sync takes a lock: refused now, not after it was added
    store.add_project(slug, paths.as_text(str(path)), repo)
    return sync(store, slug)


def links(folder: str) -> dict[str, tuple[str, bool]]:
    """The project files in `folder` that are links, each with where it points and
    whether that is outside the folder: kenning reads through either, but writes an
    agent's handoff only through one that stays inside (`append_log`)."""
    here = Path(paths.os_path(folder))
    return {
        name: (os.path.realpath(here / name), paths.outside(here / name, here) is not None)
        for name in FILES
        if (here / name).is_symlink()
    }


def link_notes(folder: str) -> list[str]:
    """A line for each project file in `folder` that is a link: where it points."""
    return [
        f"note: {name} is a link to {target}"
        + (
            ", outside the project's folder: kenning reads it, but writes no agent's "
            "handoff there (move the file into the folder for that)"
            if out
            else ""
        )
        for name, (target, out) in links(folder).items()
    ]


def remove_project(store: Store, slug: str, *, actor: policy.Actor | None = None) -> None:
    """Stop indexing project `slug` (its memories stay). Only a person does."""
    policy.require_person(policy.resolve(actor), f"remove project {slug}")
    if not store.remove_project(normalize_name(slug)):
        raise NotFound(f"no project '{slug}'; `ken project list` shows them")


def _sync_file(
    store: Store,
    slug: str,
    folder: Path,
    name: str,
    report: SyncReport,
    written: dict[str, Provenance] | None = None,
) -> None:
    """Index one file. `written`: entries kenning wrote into it for someone (an agent's
    handoff in log.md), by key, with the provenance of who wrote them and where: the
    memory of such an entry is theirs, not the folder's (a repo's `deliver = false`
    withholds what was written in it, `kenning.deliver.origin_repos`)."""
    written = written or {}
    path = folder / name
    try:
        info = path.stat()
        stamp: tuple[int, int] | None = (info.st_size, info.st_mtime_ns)
    except FileNotFoundError:
        stamp = None
    if stamp == store.file_stamp(slug, name):
        return
    try:
        text = read_file(path)
    except InvalidInput as exc:
        report.skipped.append(str(exc))  # its items stay as they are until it is readable
        return
    (report.read if text is not None else report.missing).append(name)
    entries = parse(name, text) if text is not None else []
    existing = {
        (item.source or "").split("#", 1)[1]: item
        for item in store.list_items(
            ItemQuery(statuses=(), include_expired=True, source_prefix=_source(slug, name))
        )
    }
    scope = Scope(ScopeType.PROJECT, slug)
    for entry in entries:
        title = redact(entry.title).text
        body = _fit(title, redact(entry.body).text, path)
        current = existing.pop(entry.key, None)
        made = written.get(entry.key)
        if current is None and made is None and name == "log.md":
            made = _session_entry(store, slug, title)
        if current is None and store.is_forgotten(
            tombstones.digest(_source(slug, name, entry.key), title, body)
        ):
            report.forgotten += 1  # a person forgot this very entry: it stays out
            continue
        if current is None:
            # Stored as the file has it: no template reshapes the body and no '#' is taken
            # off the title, so the next read compares like with like (and the body, cut
            # to fit, cannot outgrow 4 KB).
            now = now_iso()
            item = Item(
                id=ids.new_ulid(),
                title=title,
                body=body,
                kind=entry.kind,
                scope=scope,
                status=entry.status,
                provenance=made or Provenance(who="ken", how="sync", project=slug, cwd=str(folder)),
                created_at=now,
                updated_at=now,
                revision=ids.new_ulid(),
                source=_source(slug, name, entry.key),
            )
            store.insert_item(item, change="sync")
            report.added += 1
            continue
        # An entry written again under the heading of one removed before is the new
        # writer's: its memory takes their provenance.
        provenance = made or current.provenance
        if (current.title, current.body, current.status, current.provenance) == (
            title,
            body,
            entry.status,
            provenance,
        ):
            continue
        if entry.status is Status.ARCHIVED and current.status is not Status.ARCHIVED:
            report.archived += 1
        else:
            report.updated += 1
        store.replace_item(
            replace(
                current,
                title=title,
                body=body,
                status=entry.status,
                provenance=provenance,
                updated_at=now_iso(),
                expires_at=None,
            ),
            "sync",
            new_version=False,
        )
    for item in existing.values():
        if item.status is not Status.ARCHIVED:
            store.replace_item(
                replace(item, status=Status.ARCHIVED, updated_at=now_iso()),
                "sync",
                new_version=False,
            )
            report.archived += 1
    store.set_file_stamp(slug, name, stamp)


def _session_entry(store: Store, slug: str, title: str) -> Provenance | None:
    """Who wrote a new log.md entry headed as memory_handoff heads one, by hand: a
    session of the agent it names, in this project, that the time falls in (as
    `kenning.handoffs` counts the entry as that session's handoff). Its memory was
    written where that session ran, so a repo's switches hold for it. When the time
    falls in more than one, it may have been written in any of them: one that ran in a
    repo whose memory is not delivered (`deliver = false`) is chosen before the latest,
    so the entry reaches no agent more widely than the most private of them would."""
    agent = handoffs.heading_agent(title)
    if agent is None:
        return None
    found = store.list_sessions(SessionQuery(agent=agent, project=slug, limit=READ_SESSIONS))
    fits = [s for s in found if handoffs.headed_in(title, s)]
    if not fits:
        return None
    private = Config().repos_not_delivered() if len(fits) > 1 else set()
    session = next((s for s in fits if s.repo in private), fits[0])
    return replace(session.provenance("sync"), project=slug)


@contextmanager
def _project_lock(slug: str) -> Iterator[None]:
    """One sync (or log append) of a project at a time: hooks of agents starting
    together would otherwise each add the same new sections, and two handoffs written
    at once would each rewrite log.md without the other's entry."""
    folder = made_state_dir()
    with open(folder / f"project-{slug}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def _sync(
    store: Store, slug: str, written: dict[str, dict[str, Provenance]] | None = None
) -> SyncReport:
    project = get_project(store, slug)
    folder = Path(paths.os_path(project.folder))
    report = SyncReport(slug, [])
    if not folder.is_dir():  # moved or unmounted: its files are not gone, only out of reach
        report.skipped.append(f"{folder} is not there: its memories stay as they are")
        return report
    had = [name for name in FILES if store.file_stamp(slug, name) is not None]
    if had and not any((folder / name).exists() for name in FILES):
        # Every file gone at once: a folder moved or emptied (an empty one made where
        # it was), not a person deleting every entry.
        report.skipped.append(
            f"{folder} holds none of {', '.join(FILES)} (it had {', '.join(had)}): its "
            f"memories stay as they are; put the files back, or `ken project remove {slug}`"
        )
        return report
    for name in FILES:
        _sync_file(store, slug, folder, name, report, (written or {}).get(name))
    return report


def sync(store: Store, slug: str) -> SyncReport:
    """Index a project's files that changed since the last sync."""
    slug = get_project(store, slug).slug
    with _project_lock(slug):
        return _sync(store, slug)


def sync_all(store: Store) -> list[SyncReport]:
    return [sync(store, p.slug) for p in store.projects()]


def append_log(
    store: Store, slug: str, heading: str, body: str, provenance: Provenance | None = None
) -> Item | None:
    """Add an entry to a project's log.md (the file stays the truth), then sync it: the
    entry's memory, made in the same lock, has `provenance` (who wrote it, where; by
    default kenning's, as for any entry of the file), so it is never anyone else's, not
    even for a moment. The text is written only when the file reads back with exactly
    one entry more, headed `heading` and holding `body` (made `literal` by the caller):
    otherwise nothing is written and None is returned, so no one's words end up in
    another entry, or in one that reads as nobody's. A log.md that is a link out of the
    project's folder is refused (InvalidInput, nothing written): see `links`."""
    project = get_project(store, slug)
    folder = Path(paths.os_path(project.folder))
    path = folder / "log.md"
    title = " ".join(redact(heading).text.split())  # one line, whatever it held
    said = "\n".join(lines(redact(body.strip()).text)).strip()
    with _project_lock(slug):
        if (target := paths.outside(path, folder)) is not None:
            # A link inside the folder is a person's own layout; one out of it would put an
            # agent's words in a file kenning does not own (a `~/.bashrc`).
            raise InvalidInput(
                f"nothing was saved: {path} is a link to {target}, outside project {slug}'s "
                "folder, and kenning writes an agent's handoff only into a file in the folder; "
                "move the file into the folder to keep writing handoffs there"
            )
        existing = (read_file(path) or "# Log\n").rstrip("\n")
        before = parse("log.md", existing)
        fence: str | None = None
        for line in lines(_COMMENT.sub("", existing)):
            fence = _fence(line, fence)
        # A comment or a fence left open above would swallow the entry: closed first, as
        # Markdown closes them at the end of the file anyway.
        comments = [m.group() for m in _COMMENT.finditer(existing)]
        close = "\n-->\n" if comments and not comments[-1].endswith("-->") else ""
        close += f"\n{fence}\n" if fence else ""
        text = f"{existing}\n{close}\n## {title}\n\n{said}\n"
        after = parse("log.md", text)
        if len(after) != len(before) + 1 or (after[-1].title, after[-1].body) != (title, said):
            return None
        key = after[-1].key  # as the sync numbers it (`key-2` when a heading repeats)
        _write_through(path, text)
        _sync(store, slug, {"log.md": {key: provenance}} if provenance else None)
    return find_synced(store, slug, "log.md", key)


def _write_through(path: Path, text: str) -> None:
    """Replace a file's text in one step (a reader sees the old text or the new), where
    the text is: a link's target is rewritten, not the link (a log.md linked to another
    file in the project's folder keeps getting handoffs; `append_log` refuses one out of
    it), and the file keeps its mode."""
    target = path.resolve()
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{ids.new_ulid()[-6:]}")
    try:
        tmp.write_text(text, encoding="utf-8")
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def literal(text: str) -> str:
    """An agent's text made to read as text in a project file: its line breaks are all
    line feeds (see `lines`), none of its lines starts a section (`#`) or opens or closes a
    fence, even after spaces of any kind, and no comment opens or closes in it, so its
    entry stays one entry, and the file's other entries stay as they were written.
    Markdown shows it as it was (a backslash before punctuation is an escape)."""
    text = text.replace("<!--", "<\\!--").replace("-->", "--\\>")
    out = []
    for line in lines(text):
        rest = line.lstrip()  # as `_fence` strips it
        if rest.startswith(("#", *_FENCES)):
            line = f"{line[: len(line) - len(rest)]}\\{rest}"
        out.append(line)
    return "\n".join(out)


def log_heading(agent: str, title: str) -> str:
    return f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} {agent}: {title}"


def find_synced(store: Store, slug: str, name: str, key: str) -> Item | None:
    found = store.list_items(
        ItemQuery(statuses=(), include_expired=True, source_prefix=_source(slug, name, key))
    )
    return next((i for i in found if i.source == _source(slug, name, key)), None)
