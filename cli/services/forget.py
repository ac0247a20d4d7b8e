"""`agentlog forget`: take a session, a project or a string back, from every file of the home.

A plan first (what `--apply` would do, nothing written), then, with `--apply`:
1. one LMDB transaction replaces the chosen records by their forgotten or amended form,
   appends the forget event, deletes the forgotten sources' capture cursors and their
   names from the capture caches, and marks the sources and sessions (by digest) so
   capture never takes them again (`eventlog.forget`, `readers.capture`);
2. the log's free pages are overwritten (`eventlog.forget.scrub_free_pages`);
3. history.db is rebuilt from the log into a new file and swapped in (a projection built
   before a forget event is rebuilt by whoever catches it up next, so a crash here only
   delays this);
4. archive files of the forgotten sessions are removed (with `--text`, the string is
   replaced in them), backups agentlog made are replaced by one new backup, and lines of
   the operations journal that name what was forgotten are dropped.
A crash after 1 leaves the log forgotten; `forget --finish` (or the next forget) redoes
2-4, and `audit` says when one is due.

What is forgotten:
- `--session S`: every record of S's sources when no other session shares them (the whole
  transcript file, its chunks and snapshots); in a source other sessions share, the lines
  (chunks) or rows (snapshots) that carry S's id; and broker facts, imported turns and
  archive events of S.
- `--project P`: every session whose project is P, and facts filed under P.
- `--text T`: every record holding T is amended: T (as written, and as JSON escapes it) is
  replaced by as many `*` in captured bytes (offsets and sizes stay: restore keeps its
  shape) and by `[forgotten]` in the fields of other events. Nothing else changes.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.services.config import Home
from cli.services.errors import BadInput, NotFound

FORGOTTEN_TEXT = "[forgotten]"


@dataclass
class Plan:
    kind: str
    sessions: list[str] = field(default_factory=list)
    project: str | None = None
    text: str | None = None
    targets: dict[int, bytes | None] = field(default_factory=dict)
    owned_sources: dict[str, str] = field(default_factory=dict)  # source id -> path on disk
    shared_sources: set[str] = field(default_factory=set)
    bytes: int = 0

    @property
    def forgotten(self) -> int:
        return sum(1 for v in self.targets.values() if v is None)

    @property
    def amended(self) -> int:
        return sum(1 for v in self.targets.values() if v is not None)

    def markers(self) -> list[str]:
        """Strings whose presence in a side file (a journal line, an archive) ties it to
        what is forgotten."""
        out = [*self.sessions, *self.owned_sources, *self.owned_sources.values()]
        if self.project:
            out.append(self.project)
        if self.text:
            out.append(self.text)
        return [m for m in out if m]

    def to_dict(self, home: Home) -> dict[str, Any]:
        left = sorted(p for p in self.owned_sources.values() if os.path.lexists(p))
        return {
            "kind": self.kind,
            "sessions": len(self.sessions),
            "records": len(self.targets),
            "forgotten": self.forgotten,
            "amended": self.amended,
            "bytes": self.bytes,
            "sources": len(self.owned_sources),
            "sharedSources": len(self.shared_sources),
            "sourceFilesOnDisk": left,
            "archiveFiles": [str(p) for p in archive_files(home, self)],
            "backups": [str(p) for p in backups(home)],
        }


# --- planning ------------------------------------------------------------------------------


def plan(home: Home, *, session: str | None = None, project: str | None = None,
         text: str | None = None) -> Plan:
    """What forgetting would take (nothing written; history.db caught up first)."""
    chosen = [x for x in (session, project, text) if x is not None]
    if len(chosen) != 1:
        raise BadInput("say what to forget: exactly one of --session, --project, --text")
    if not home.has_log():
        raise NotFound(f"no history at {home.root}: nothing to forget")
    from cli.services.catchup import ensure_current

    ensure_current(home)
    if text is not None:
        if len(text) < 4:
            raise BadInput("--text must be at least 4 characters (a shorter string would "
                           "rewrite most of the history)")
        p = Plan("text", text=text)
        _scan(home, p)
        return p
    from projections import forgetting

    db = home.history_db
    if project is not None:
        sessions = forgetting.sessions_of_project(db, project)
        p = Plan("project", sessions=sessions, project=project)
        if not sessions and not forgetting.project_known(db, project):
            raise NotFound(f"no project {project!r} in the history (`agentlog history` "
                           "lists them)")
    else:
        assert session is not None
        found = forgetting.session_id(db, session)
        if found is None:
            raise NotFound(f"no session {session!r} in the history (`agentlog search` shows "
                           "ids)")
        p = Plan("session", sessions=[found])
    p.owned_sources, p.shared_sources = forgetting.sources_of(db, p.sessions)
    _scan(home, p)
    return p


def _scan(home: Home, p: Plan) -> None:
    """One pass over the log: each record this forget takes, and its new form."""
    from eventlog import codec
    from eventlog.events import Forgotten, RecordsForgotten, UnknownEvent
    from eventlog.records import decode_record

    log = home.log(readonly=True)
    sessions = set(p.sessions)
    needles = [s.encode() for s in p.sessions]
    for raw in log.iter_raw(1, 1000, check=True):
        st = decode_record(raw)
        ev = st.event
        if isinstance(ev, RecordsForgotten | Forgotten | UnknownEvent):
            continue
        new: bytes | bool | None = False  # False: untouched
        if p.kind == "text":
            assert p.text is not None
            new = _amend_text(st, p.text)
        else:
            source = getattr(ev, "source", None)
            if isinstance(source, str) and source in p.owned_sources:
                new = None
            elif isinstance(source, str) and source in p.shared_sources:
                new = _amend_shared(st, needles)
            elif getattr(ev, "session", None) in sessions or (
                    p.project is not None and getattr(ev, "project", None) == p.project):
                new = None
        if new is not False and new is not True:
            p.targets[st.seq] = new
            p.bytes += len(raw.value) - codec.HEADER


def _payload(ev: Any) -> bytes:
    from eventlog import zstd

    return zstd.payload(getattr(ev, "codec", ""), ev.data)


def _with_payload(st: Any, data: bytes) -> bytes:
    """The stored bytes of `st` with its captured payload replaced (same codec family)."""
    import msgspec

    from eventlog import codec
    from readers.capture_files import pack

    ev = st.event
    packed, used = pack(data)
    new = msgspec.structs.replace(ev, data=packed, codec=used)
    return codec.encode_stored(st.at, st.key, codec.encode_event(new))


def _amend_shared(st: Any, needles: list[bytes]) -> bytes | bool | None:
    """In a source other sessions share: a chunk keeps its size with the lines that carry a
    forgotten session's id blanked; a snapshot or row carrying the id is forgotten."""
    ev = st.event
    if not hasattr(ev, "data"):
        return False
    data = _payload(ev)
    if not any(n in data for n in needles):
        return False
    if type(ev).__name__ != "ChunkCaptured":
        return None
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if any(n in line for n in needles):
            lines[i] = b" " * len(line)
    return _with_payload(st, b"\n".join(lines))


def _variants(text: str) -> list[bytes]:
    """`text` as captured bytes may hold it: as written, and as JSON escapes it."""
    out = {text.encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode(),
           json.dumps(text)[1:-1].encode()}
    return sorted(out, key=len, reverse=True)


def _amend_text(st: Any, text: str) -> bytes | bool | None:
    import msgspec

    from eventlog import codec

    ev = st.event
    if hasattr(ev, "data") and isinstance(ev.data, bytes):
        data = _payload(ev)
        new = data
        for v in _variants(text):
            new = new.replace(v, b"*" * len(v))
        if new != data:
            return _with_payload(st, new)
        return False
    obj = msgspec.to_builtins(ev)
    changed, new_obj = _replace_in(obj, text)
    if not changed:
        return False
    rebuilt = msgspec.convert(new_obj, type(ev))
    return codec.encode_stored(st.at, st.key, codec.encode_event(rebuilt))


def _replace_in(obj: Any, text: str) -> tuple[bool, Any]:
    if isinstance(obj, str):
        return (text in obj, obj.replace(text, FORGOTTEN_TEXT))
    if isinstance(obj, list):
        pairs = [_replace_in(x, text) for x in obj]
        return any(c for c, _ in pairs), [v for _, v in pairs]
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        changed = False
        for k, v in obj.items():
            c1, nk = _replace_in(k, text) if isinstance(k, str) else (False, k)
            c2, nv = _replace_in(v, text)
            changed = changed or c1 or c2
            out[nk] = nv
        return changed, out
    return False, obj


# --- applying ------------------------------------------------------------------------------


def apply(home: Home, p: Plan, *, delete_sources: bool = False) -> dict[str, Any]:
    """Carry out `p` (see the module docstring); returns what was done."""
    from eventlog.forget import forget
    from readers import cursor as cur

    log = home.log()
    state: dict[bytes, bytes | None] = {cur.EPOCH_KEY: os.urandom(8)}
    for source in p.owned_sources:
        state[cur.cursor_key(source)] = None
        state[cur.forgot_key(b"src", source)] = b"1"
        for k, _ in log.iter_state(cur.ROWS_PREFIX):
            if k.endswith(b"\0" + source.encode()):
                state[k] = None
    for s in p.sessions:
        state[cur.forgot_key(b"ses", s)] = b"1"
    for prefix in (cur.STATCACHE_PREFIX, cur.DIRCACHE_PREFIX):  # they hold file names
        for k, _ in log.iter_state(prefix):
            state[k] = None
    who = f"{getpass.getuser()}@{os.uname().nodename}"
    done = forget(log, p.targets, kind=p.kind, by=who, sources=len(p.owned_sources),
                  state=state)
    out = p.to_dict(home)
    out.update({"event": done.event_seq, "alreadyForgotten": done.skipped})
    out.update(finish(home, p))
    if delete_sources:
        removed = []
        for path in out["sourceFilesOnDisk"]:
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
        out["sourceFilesDeleted"] = removed
    from cli.services.audit.archive import note_operation

    note_operation(home, "forget.applied", {"kind": p.kind, "event": done.event_seq,
                                            "records": len(p.targets)})
    return out


def finish(home: Home, p: Plan | None = None) -> dict[str, Any]:
    """Steps 2-4 (safe to repeat): the free pages, history.db, archives, backups, journal."""
    from eventlog.forget import scrub_free_pages
    from projections.rebuild import rebuild

    if not home.has_log():
        raise NotFound(f"no history at {home.root}: nothing to finish")
    log = home.log()
    pages = scrub_free_pages(log)
    for leftover in home.root.glob("history.db.reindex-*"):
        leftover.unlink(missing_ok=True)
    rebuild(home.history_db, log)
    (home.root / "history.db.stale").unlink(missing_ok=True)
    out: dict[str, Any] = {"scrubbedPages": pages}
    if p is not None:
        out["archiveFilesRemoved"] = _archives(home, p)
        out["journalLinesDropped"] = _journal(home, p)
    out["backupsReplaced"] = _backups(home)
    out["teamScratchRemoved"] = _team_scratch(home)
    # embeddings are derived from the forgotten text too: dropped, made again in the
    # background from what history.db still holds (docs/search.md "By meaning")
    from projections.meaning import drop

    out["embeddingsDropped"] = drop(home.meaning_dir)
    return out


def _team_scratch(home: Home) -> list[str]:
    """The team projector's scratch copy of this host's projection (`team-projector/`) holds
    what was forgotten: removed (the next projection replays the host; the next `sync`
    replaces the server's copies, `projections.pg.sync.push_forgotten`)."""
    folder = home.root / "team-projector"
    if not folder.is_dir():
        return []
    from cli.services.team_sync import host_id

    gone = []
    for suffix in ("", "-journal", "-wal", "-shm"):
        f = folder / f"{host_id(home)}.db{suffix}"
        if f.exists():
            f.unlink()
            gone.append(str(f))
    return gone


def pending(home: Home) -> bool:
    """A forget whose steps 2-4 did not finish (a crash): `forget --finish` does them."""
    from eventlog.forget import pending_scrub

    return home.has_log() and pending_scrub(home.log(readonly=True))


def archive_files(home: Home, p: Plan) -> Iterator[Path]:
    root = home.archive_dir
    if not root.is_dir():
        return
    for f in sorted(root.rglob("*.json")):
        try:
            body = f.read_bytes()
        except OSError:
            continue
        if p.kind == "text":
            assert p.text is not None
            if any(v in body for v in _variants(p.text)):
                yield f
        elif _envelope_sessions(body) & set(p.sessions):
            yield f  # an archive file is one session's envelope: its turns name it


def _envelope_sessions(body: bytes) -> set[str]:
    """The session ids an export envelope's turns carry (none when it is not one)."""
    try:
        turns = json.loads(body).get("turns")
    except (ValueError, AttributeError):
        return set()
    if not isinstance(turns, list):
        return set()
    return {t["sessionId"] for t in turns
            if isinstance(t, dict) and isinstance(t.get("sessionId"), str)}


def _archives(home: Home, p: Plan) -> list[str]:
    from eventlog.files import write_atomic

    done = []
    for f in list(archive_files(home, p)):
        if p.kind == "text":
            assert p.text is not None
            body = f.read_bytes()
            for v in _variants(p.text):
                body = body.replace(v, FORGOTTEN_TEXT.encode())
            write_atomic(f, body)
        else:
            f.unlink()
        done.append(str(f))
    return done


def _journal(home: Home, p: Plan) -> int:
    from cli.services.audit.archive import journal_path
    from eventlog.files import write_atomic

    path = journal_path(home)
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except OSError:
        return 0
    marks = [m.encode() for m in p.markers()] + [json.dumps(m)[1:-1].encode()
                                                 for m in p.markers()]
    kept = [ln for ln in lines if not any(m in ln for m in marks)]
    if len(kept) != len(lines):
        write_atomic(path, b"".join(kept))
    return len(lines) - len(kept)


def backups(home: Home) -> list[Path]:
    d = home.backups_dir
    return sorted(x for x in d.iterdir() if x.is_dir()) if d.is_dir() else []


def _backups(home: Home) -> list[str]:
    """Old backups hold what was forgotten: one new backup replaces them (none if none)."""
    old = backups(home)
    if not old:
        return []
    from eventlog.backup import backup

    backup(home.log(), home.backups_dir)
    for d in old:
        shutil.rmtree(d, ignore_errors=True)
    return [str(d) for d in old]
