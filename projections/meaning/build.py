"""The embedding projection caught up with history.db: documents read in rowid order from
where the last step stopped, cut into chunks, embedded, appended (store.py).

Chunks (what retrieval needs, not every document): a user prompt; an assistant answer with
its neighbour, the session's prompt before it (so "yes, do that" still means something);
tool output and broker texts (messages, decisions, reports, runs) cut into pieces. Thinking,
tool calls and system records are left to literal search. Texts shorter than `MIN_CHARS`
(“ok”, “hi”) carry no meaning to find and are skipped.

A step on every CPU (`threads` None) encodes on one BLAS thread here and, with two CPUs and
`HELPER_DOCS` pending, each second batch in a helper process (helper.py); the rows are the
same either way.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from projections import db
from projections.meaning.model import CHUNK_CHARS, Model, load, model_id
from projections.meaning.store import Store, writer_lock

__all__ = ["Step", "chunk_rows", "chunks_of", "describe", "step"]

MIN_CHARS = 4
PROMPT_CHARS = 80    # of the prompt before an answer
PIECES = 3           # pieces of a long tool output or broker text
SKIP_ROLES = frozenset({"thinking", "tool_use", "system"})
READ_DOCS = 512      # documents read per batch


class Step(NamedTuple):
    busy: bool          # another process is embedding this home
    chunks: int         # chunks embedded by this step
    documents: int      # documents read by this step
    total: int          # chunks in the projection now
    pending: int        # documents of history.db not read yet
    reset: bool         # the projection was dropped first (model or history.db changed)


def chunks_of(role: str | None, kind: str, text: str, prompt: str | None) -> list[str]:
    """The texts one document is embedded as (possibly none)."""
    body = text.strip()
    if len(body) < MIN_CHARS or role in SKIP_ROLES:
        return []
    if kind == "transcript" and role == "user":
        return [body[:CHUNK_CHARS]]
    if kind == "transcript" and role == "assistant":
        head = f"{prompt.strip()[:PROMPT_CHARS]}\n" if prompt else ""
        return [(head + body)[:CHUNK_CHARS]]
    return [body[i:i + CHUNK_CHARS] for i in range(0, min(len(body), PIECES * CHUNK_CHARS),
                                                   CHUNK_CHARS)]


def step(db_path: Path, folder: Path, *, spec: Mapping[str, Any] | None = None,
         budget_s: float | None = None, batch: int = 128,
         progress: Callable[[int, int], None] | None = None,
         threads: int | None = 1) -> Step:
    """Embed what history.db has and the projection has not, for at most `budget_s` seconds
    (None: all of it), with the model of `spec` (model.py; None: the default) on `threads`
    BLAS threads (None: every usable CPU — one BLAS thread here and, when worth it, a helper
    process on the other: module docstring). Returns without waiting when another process
    embeds this home."""
    with writer_lock(folder) as mine:
        if not mine:
            return Step(True, 0, 0, 0, 0, False)
        return _step(db_path, folder, spec, budget_s, batch, progress, threads)


HELPER_DOCS = 2_000  # documents pending from which a step on every CPU starts a helper


def _model(spec: Mapping[str, Any] | None, threads: int | None) -> Model:
    return load(spec, threads or 1)  # None: one BLAS thread here, the other CPU a helper's


def _helper(spec: Mapping[str, Any] | None, threads: int | None, pending: int) -> Any:
    """A second encoder process (helper.py) for a step on every CPU (`threads` None) with
    two CPUs or more and at least `HELPER_DOCS` documents to read; else None."""
    from projections.cpus import usable

    if threads is not None or pending < HELPER_DOCS or usable() < 2:
        return None
    from projections.meaning import helper

    return helper.start(spec)


def _vectors(model: Model, helper: Any, texts: list[str], batch: int) -> Any:
    """(start, vectors) of each batch of `texts`, in order: with a live helper, each second
    batch is encoded there while this process encodes the one before it. A helper that fails
    is closed and its batches are encoded here; so is one left holding a batch when the
    caller stops early (its answer would be taken for the next batch's)."""
    starts = list(range(0, len(texts), batch))
    k = 0
    waiting = False
    try:
        while k < len(starts):
            mine = texts[starts[k]:starts[k] + batch]
            theirs = (texts[starts[k + 1]:starts[k + 1] + batch]
                      if helper is not None and helper.alive and k + 1 < len(starts) else None)
            waiting = theirs is not None and helper.send(theirs)
            yield starts[k], model.encode(mine)
            if theirs is not None:
                vecs = helper.receive() if waiting else None
                waiting = False
                yield starts[k + 1], model.encode(theirs) if vecs is None else vecs
                k += 1
            k += 1
    finally:
        if waiting:
            helper.close()


def _step(db_path: Path, folder: Path, spec: Mapping[str, Any] | None,
          budget_s: float | None, batch: int, progress: Callable[[int, int], None] | None,
          threads: int | None) -> Step:
    t0 = time.monotonic()
    mid = model_id(spec)
    model: Model | None = None
    if spec is not None:  # its width is known once it is loaded
        model = _model(spec, threads)
    store = Store.writable(folder, mid, model.dim if model is not None else Model.dim)
    helper: Any = None
    try:
        con = db.connect(db_path, readonly=True)
    except (sqlite3.Error, OSError):
        store.close()
        return Step(False, 0, 0, 0, 0, False)
    try:
        reset = _check_identity(con, store, mid)
        head = int(con.execute("SELECT coalesce(max(rowid), 0) FROM document_rows")
                   .fetchone()[0])
        made = read = 0
        prompts: dict[str, str] = {}
        helper = _helper(spec, threads, head - store.done)  # closed below, with con
        while store.done < head:
            if budget_s is not None and time.monotonic() - t0 > budget_s:
                break
            rows = con.execute(
                "SELECT rowid, id, kind, role, session, text FROM documents"
                " WHERE rowid > ? ORDER BY rowid LIMIT ?", (store.done, READ_DOCS)).fetchall()
            if not rows:
                break
            owners, texts = chunk_rows(con, rows, prompts)
            if not texts:  # nothing to embed in these documents: they are read
                store.append([], [], max(int(rows[-1][0]), store.done))
                if progress is not None:
                    progress(store.done, head)
            else:
                if model is None:
                    model = _model(spec, threads)
                # closed on a break: a batch the helper still holds is not the next one's
                with contextlib.closing(_vectors(model, helper, texts, batch)) as each:
                    for i, vecs in each:
                        last = (rows[-1][0] if i + batch >= len(texts)
                                else owners[i + batch - 1][0] - 1)
                        mine = owners[i:i + batch]
                        store.append(mine, vecs, max(int(last), store.done))
                        made += len(mine)
                        if progress is not None:
                            progress(store.done, head)
                        if budget_s is not None and time.monotonic() - t0 > budget_s:
                            break
            read += sum(1 for r in rows if r[0] <= store.done)
        return Step(False, made, read, store.count, _pending(con, store.done), reset)
    finally:
        if helper is not None:
            helper.close()
        con.close()
        store.close()


def chunk_rows(con: sqlite3.Connection, rows: list[Any], prompts: dict[str, str]
               ) -> tuple[list[tuple[int, str]], list[str]]:
    """The chunks of documents (rowid, id, kind, role, session, text) read in rowid order:
    their owners (rowid, id) and texts; `prompts` (session → its latest user prompt) carries
    the neighbour of an answer from one batch to the next."""
    owners: list[tuple[int, str]] = []
    texts: list[str] = []
    for rowid, ident, kind, role, session, text in rows:
        prompt = None
        if kind == "transcript" and role == "assistant" and session:
            prompt = prompts.get(session)
            if prompt is None:
                prompt = _prompt_before(con, session, rowid)
        for piece in chunks_of(role, kind, text or "", prompt):
            owners.append((int(rowid), str(ident)))
            texts.append(piece)
        if kind == "transcript" and role == "user" and session and text:
            prompts[session] = text
    return owners, texts


def _check_identity(con: sqlite3.Connection, store: Store, mid: str) -> bool:
    """Drop the projection when history.db no longer holds the document of its newest chunk
    at that rowid (a rebuild or a forget renumbered documents)."""
    last = store.last_chunk()
    if last is None:
        if store.done and not con.execute(
                "SELECT 1 FROM document_rows WHERE rowid = ?", (store.done,)).fetchone():
            store.reset(mid, store.dim)
            return True
        return False
    row = con.execute("SELECT id FROM document_rows WHERE rowid = ?", (last[0],)).fetchone()
    if row is not None and row[0] == last[1]:
        return False
    store.reset(mid, store.dim)
    return True


def _prompt_before(con: sqlite3.Connection, session: str, rowid: int) -> str | None:
    row = con.execute(
        "SELECT text FROM documents WHERE session = ? AND role = 'user' AND rowid < ?"
        " ORDER BY rowid DESC LIMIT 1", (session, rowid)).fetchone()
    return None if row is None else str(row[0])


def _pending(con: sqlite3.Connection, done: int) -> int:
    """Documents past `done`, by rowid (documents get rising rowids): a count(*) of the rest
    would walk ~1M rows."""
    head = con.execute("SELECT coalesce(max(rowid), 0) FROM document_rows").fetchone()[0]
    return max(0, int(head) - done)


def describe(store: Store | None, con: sqlite3.Connection) -> dict[str, Any]:
    """What coverage says of the projection."""
    pending = _pending(con, store.done if store else 0)
    return {"model": store.model if store else None, "chunks": store.count if store else 0,
            "pendingDocuments": pending, "current": bool(store) and pending == 0}
