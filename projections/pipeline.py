"""The parallel load of a rebuild: the log is read and parsed in a second process.

`load(con, log, stop, table)` is what `projections.rebuild.build` runs instead of its
sequential loop on a log large enough to pay for a second process. The work splits where
the appliers split (`projections.assemble` is the pure half, `projections.transcripts` the
SQL half):

- the parse process (a fresh interpreter: nothing of the caller's threads or handles)
  reads the log in exactly the sequential build's batches, checks every record against
  its chain hash, decodes it, decompresses and assembles captured chunks and runs the
  parsers, holding each source's assembly cursor and the parser states itself; it sends
  per batch a list of operations: parsed chunks and whole-content events (their bytes
  dropped), the parser states the batch changed (as the JSON text `parser_state` stores)
  and, for every other event, the stored record itself. The records' stored bodies
  (`transcripts.record_bodies`, zstd) are packed by whichever process has time to spare,
  decided per part from how full the pipe is after its send (`Parser._send`); either way
  by the same function, so the stored bytes do not depend on it;
- this process applies the operations in seq order inside the build's one transaction
  (the SQL half of the same appliers), so the rows, their rowids and the checkpoint are the
  ones the sequential build writes; the full-text index is built after the load as before.

Promises:
- the same rows as the sequential build (tests compare every table and search answers):
  the parse process starts from an empty file, so the assembly cursors and parser states it
  keeps are the ones the sequential build would read back from its own rows, and it hands
  parser states on through the same JSON round trip at the same batch boundaries;
- bounded memory: a log batch (at most `BATCH_BYTES` of stored events) goes over the pipe
  in parts of about `PART_BYTES` of payload, the records msgpack-encoded; in flight are
  what the pipe holds (`PIPE_BYTES`, kernel memory: about two parts), the part being
  applied and the part being parsed (a send blocks while the pipe is full); a log batch
  whose records touch
  more than `STATE_BYTES` of parser state (each touched state is held decoded until the
  batch ends, and re-sent whole) is ended early and the rest goes on as the next batch --
  batch boundaries change no row (tests build with one event per batch); the parse process
  hands its freed heap back to the system after every batch (`projections.heap.trim`), and
  drops the log's mapped pages right after each read of `RELEASE_BYTES` or more, before it
  parses what it read (the records are copies), so they are never resident at its peak;
- the parse process writes nothing but its stdout; it only reads the log (read-only);
- a damaged record raises `CorruptRecord` here (the build stops, nothing is swapped in); a
  parse process that dies raises `ProjectionError`; when this process dies (even kill -9)
  the parse process's next send fails (EPIPE) and it exits.

With `pipestats.PATH` set (`AGENTLOG_PIPE_STATS`), both processes add up where their
load's time went (`projections.pipestats`: on a CPU, waiting for one, blocked in a send or
a receive).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import msgspec

from eventlog import EventLog, zstd
from eventlog.errors import CorruptRecord
from eventlog.events import (
    ChunkCaptured,
    FileSnapshotted,
    RowSnapshotted,
    SourceRewound,
    SourceSeen,
)
from eventlog.records import RawRecord, StoredEvent, decode_record
from projections import assemble, frames, pipestats, transcripts
from projections.apply import apply_event
from projections.errors import ProjectionError
from projections.rows import Applier
from projections.runlogs import is_run_log
from projections.transcripts import record_bodies
from readers.records import ParseResult, SourceInfo

Op = tuple[Any, ...]
PART_BYTES = 512 << 10  # payload bytes parsed per message on the pipe (bounds both sides)
# the pipe's capacity (Linux F_SETPIPE_SZ; unprivileged at most /proc/sys/fs/pipe-max-size,
# 1 MiB by default): a part's frame is ~PART_BYTES, so two wait in the pipe while one is
# applied and one parsed. With the default 64 KiB every part crossed in ~30 turns of both
# processes (lock-step), and the parse process waited a whole part for each send
PIPE_BYTES = 1 << 20
# parser state (JSON bytes, as loaded) a log batch may touch before it is ended early: one
# batch of the 1 GB bench home touched ~1,000 Codex states (~9 KB each): +51 MiB decoded
STATE_BYTES = 1 << 20
# The pipe still holding more than this share of its capacity after a send means the
# building process is the slower one: this process then packs the next part's bodies.
PACK_FILL = 0.5
# log bytes read after which the parse process drops the log's mapped pages (right after the
# read); at 8 MiB, released after parsing, a cold capture's parse process held 10-15 MiB
RELEASE_BYTES = 1 << 20
PARSED_TAGS = frozenset(("chunk.captured", "file.snapshotted", "row.snapshotted"))
last_peak = 0  # the last parse process's peak RSS in bytes (for benches and tests)
_ENCODE = msgspec.msgpack.Encoder().encode
_DECODE = msgspec.msgpack.Decoder(list[ParseResult]).decode
_BODIES = msgspec.msgpack.Decoder().decode  # untyped: str stays str, bin becomes bytes
_NONE = _ENCODE([])


def spawn(log_dir: Path, stop: int, *, batch: int, batch_bytes: int,
          part_bytes: int | None = None, follow: bool = False, stdin: Any = None,
          stats: str | None = None) -> subprocess.Popen[bytes]:
    """The parse process of seq 1..`stop` of the log at `log_dir`, its frames on its stdout
    (a pipe). `follow`: the log is still being written; it reads on as the log grows until
    `stdin` (a pipe of the caller's; None: the caller's own stdin) reaches its end, then up
    to the head of that moment (`stop` is ignored). `stats`: its `pipestats` file."""
    from projections import redact
    from projections.child import argv

    # frames on its stdout, its stderr is ours
    proc = subprocess.Popen(argv("projections.pipeline:produce", str(log_dir),
                                 -1 if follow else stop, batch, batch_bytes, RELEASE_BYTES,
                                 part_bytes or PART_BYTES, PACK_FILL, STATE_BYTES, stats,
                                 redact.rules()),
                            stdin=stdin if follow else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, close_fds=True)
    assert proc.stdout is not None
    frames.widen(proc.stdout.fileno(), PIPE_BYTES)
    return proc


def load(
    con: Any, log: EventLog, stop: int, table: Mapping[str, Applier], *,
    batch: int, batch_bytes: int, part_bytes: int | None = None,
    progress: Callable[[int, int], None] | None = None, follow: bool = False,
    source: IO[bytes] | None = None,
) -> tuple[int, str, int]:
    """Apply seq 1..`stop` into `con` (inside its open transaction) with a parse process;
    returns (last seq, its chain hash hex, events read).

    `follow`: the log is still being written; the parse process reads on as it grows until
    this process's stdin (which it inherits) reaches its end, then up to the head of that
    moment (`stop` is ignored). `source`: the frames of a parse process already started
    (`spawn`, by whoever started this process: `projections.follow`), read instead of
    starting one; closed at the end."""
    proc = None
    if source is None:
        proc = spawn(log.path, stop, batch=batch, batch_bytes=batch_bytes,
                     part_bytes=part_bytes, follow=follow, stats=pipestats.PATH)
        assert proc.stdout is not None
        source = proc.stdout
    last_seq, last_hash, events = 0, "", 0
    open_batch = False
    pipestats.start()
    try:
        while True:
            ops = frames.read(source)
            # blocked: waiting for the parse process (its start-up and first part apart)
            pipestats.mark("recv" if events or open_batch else "recv_first")
            if ops is None:
                code = ""
                if proc is not None:
                    proc.wait(5)
                    code = f" (exit code {proc.returncode})"
                raise ProjectionError(f"the parse process of the rebuild ended early{code}")
            head = ops[0]
            if head[0] == "done":
                global last_peak
                last_peak = int(head[1])
                break
            if head[0] == "corrupt":
                raise CorruptRecord(head[1], head[2])
            if head[0] == "error":
                raise ProjectionError(f"the parse process of the rebuild failed: {head[1]}")
            if not open_batch:
                transcripts.begin_batch(con)
                open_batch = True
            end = apply_ops(con, ops, table)
            pipestats.mark("apply")
            if end is not None:  # the log batch is complete: as `apply_records` ends one
                transcripts.flush_batch(con)
                transcripts.end_batch(con)
                pipestats.mark("batch_end")
                open_batch = False
                last_seq, last_hash, n = end
                events += n
                if progress is not None:
                    progress(last_seq, stop)
    finally:
        pipestats.dump("builder")
        if open_batch:
            transcripts.end_batch(con)
        source.close()  # a parse process still sending gets EPIPE and exits
        if proc is not None:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return last_seq, last_hash, events


def apply_ops(
    con: Any, ops: list[Op], table: Mapping[str, Applier]
) -> tuple[int, str, int] | None:
    """Operations of one part of a log batch, in order (the other half of
    `projections.apply.apply_records`); (last seq, hash, events) when the part ends the
    batch."""
    end: tuple[int, str, int] | None = None
    gc.freeze()
    collecting = gc.isenabled()
    gc.disable()  # a part makes ~1,000 short-lived rows and no cycle: nothing to collect
    try:
        ops.reverse()
        while ops:
            op = ops.pop()
            kind = op[0]
            if kind == "chunk":
                st, step, nlines, results, bodies = op[1:]
                info, _ = transcripts.chunk_head(con, st)
                transcripts.chunk_rows(con, st, info, step, nlines, _DECODE(results),
                                       None if bodies is None else _BODIES(bodies))
            elif kind == "whole":
                st, counter, nbytes, res, bodies = op[1:]
                ev = st.event
                info = transcripts.whole_head(con, st, ev.source, ev.at or st.at, nbytes,
                                              counter)
                transcripts.whole_rows(con, st, info, _DECODE(res)[0],
                                       None if bodies is None else _BODIES(bodies)[0])
            elif kind == "raw":
                apply_event(con, decode_record(RawRecord(op[1], op[2])), table)
            elif kind == "states":
                for scope, text in op[1]:
                    transcripts.write_state_text(con, scope, text)
            elif kind == "end":
                end = (int(op[1]), str(op[2]), int(op[3]))
    finally:
        if collecting:
            gc.enable()
        gc.unfreeze()
    return end


def produce(log_dir: str, stop: int, batch: int, batch_bytes: int, release_bytes: int,
            part_bytes: int, pack_fill: float = PACK_FILL,
            state_bytes: int = STATE_BYTES, stats: str | None = None,
            secret_rules: dict[str, Any] | None = None) -> None:
    """The parse process: read, check, decode and parse seq 1..`stop` (`stop` < 0: follow
    the log until stdin ends, then to its head), redacting with the building process's
    `secret_rules` (`redact.rules()`); batches to stdout."""
    out = sys.stdout.buffer
    pipestats.PATH = stats
    try:
        if secret_rules:
            from projections import redact

            redact.configure(secret_rules.get("patterns"), secret_rules.get("allow"))
        from eventlog.records import ChainCheck
        from projections import heap, pages

        log = EventLog(Path(log_dir), readonly=True)
        parser = Parser(part_bytes, pack_fill, state_bytes, _backlog(out.fileno()))
        check = ChainCheck()
        seq, unreleased = 1, 0
        follow = stop < 0
        pipestats.start()
        while follow or seq <= stop:
            limit = batch if follow else min(batch, stop - seq + 1)
            records = log.read_raw(seq, limit, max_bytes=batch_bytes)
            pipestats.mark("read_log")
            if not records:
                if not follow:
                    break
                if _writer_done(0.05):  # the capture ended: read to the head it left
                    follow, stop = False, log.head().seq
                pipestats.mark("follow_wait")
                continue
            check.all(records)
            pipestats.mark("check")
            unreleased += sum(len(r.value) for r in records)
            if unreleased >= release_bytes:  # before parsing: the records are copies
                pages.release(log.path)
                unreleased = 0
                pipestats.mark("release")
            seq = records[-1].seq + 1
            parser.batch(records, lambda ops: _send(out, ops))
            pipestats.mark("prepare")
            heap.trim()  # the batch's decoded states and parts: back to the system
            pipestats.mark("trim")
        log.close()
        pipestats.dump("parse")
        frames.write(out, [("done", peak_rss())])
    except CorruptRecord as exc:
        frames.write(out, [("corrupt", exc.seq, exc.reason)])
    except (BrokenPipeError, ConnectionResetError):
        os._exit(1)  # the building process is gone: so is the reason to go on
    except Exception as exc:
        frames.write(out, [("error", f"{type(exc).__name__}: {exc}")])


def peak_rss() -> int:
    """This process's peak resident set (VmHWM) in bytes; 0 where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _send(out: Any, ops: list[Op]) -> None:
    pipestats.mark("prepare")
    frames.write(out, ops)
    pipestats.mark("send")  # blocked: the pipe is full, the building process is behind


def _backlog(fd: int) -> Callable[[], float]:
    """The share of pipe `fd`'s capacity its reader has yet to take (0.0 where the system
    does not say: the building process then packs every body)."""
    import array
    import fcntl
    import termios

    try:
        size = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) if hasattr(fcntl, "F_GETPIPE_SZ") else 65536
        held = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, held, True)
    except OSError:
        return lambda: 0.0

    def share() -> float:
        try:
            fcntl.ioctl(fd, termios.FIONREAD, held, True)
        except OSError:
            return 0.0
        return held[0] / size

    return share


def _writer_done(wait: float) -> bool:
    """Whether stdin reached its end (waiting up to `wait` seconds for news)."""
    import select

    fd = sys.stdin.fileno() if sys.stdin is not None else -1
    if fd < 0:
        return True
    ready, _, _ = select.select([fd], [], [], wait)
    return bool(ready) and not os.read(fd, 4096)


class Parser:
    """The parse half of the capture appliers over a log read from seq 1: each source's
    assembly cursor and the parser states, as the sequential build would read them back."""

    def __init__(self, part_bytes: int = PART_BYTES, pack_fill: float = PACK_FILL,
                 state_bytes: int = STATE_BYTES,
                 backlog: Callable[[], float] = lambda: 0.0) -> None:
        from projections.db import parser_module

        self.part_bytes = part_bytes
        self.state_bytes = state_bytes
        self.state_load = 0  # state JSON bytes touched in the batch being assembled
        self.parser = parser_module()
        self.sources: dict[str, list[Any]] = {}  # source -> [SourceInfo, Cursor]
        self.texts: dict[str, str] = {}  # scope -> state JSON as of the last batch
        self.states: dict[str, dict[str, Any]] = {}  # scope -> state, this batch
        self.dirty: set[str] = set()
        self.part = 0  # bytes of payload in the part being assembled
        self.pack = pack_fill < 0  # this process packs the bodies of this part
        self.pack_fill = pack_fill
        self.backlog = backlog

    def batch(self, records: list[RawRecord], send: Callable[[list[Op]], None]) -> None:
        """Send one log batch as operations, in parts of about `PART_BYTES`; its last part
        ends with the parser states it changed and its "end" (last seq and hash). Once the
        states touched pass `STATE_BYTES`, the records so far end as a batch of their own."""
        ops: list[Op] = []
        st: StoredEvent | None = None
        self.part = self.state_load = 0
        n, left = 0, len(records)
        for raw in records:
            st = decode_record(raw)
            ops.append(self.prepare(st, raw))
            n, left = n + 1, left - 1
            if self.state_load >= self.state_bytes and left:
                self._end(ops, st, n)
                self._send(send, ops)
                ops, n = [], 0
                self.part = self.state_load = 0
            elif self.part >= self.part_bytes:
                self._send(send, ops)
                ops = []
                self.part = 0
        assert st is not None
        self._end(ops, st, n)
        self._send(send, ops)

    def _end(self, ops: list[Op], st: StoredEvent, n: int) -> None:
        """Close a log batch of `n` records ending with `st`: the states it changed, "end"."""
        if self.dirty:
            items = []
            for scope in sorted(self.dirty):
                text = assemble.state_text(self.states[scope])
                self.texts[scope] = text
                items.append((scope, text))
            ops.append(("states", items))
        self.states.clear()
        self.dirty.clear()
        ops.append(("end", st.seq, st.hash.hex(), n))

    def _send(self, send: Callable[[list[Op]], None], ops: list[Op]) -> None:
        """Send a part, and decide who packs the bodies of the next one by what the pipe
        holds once it is sent (`backlog`, the share of its capacity): the building process
        is behind (it has a part or more still to take), so this one packs them; the pipe
        is nearly empty: the building process waits for this one, so it packs them itself
        (`rows.put_row`, the same `stored`). Either way the same bytes are stored; only the
        work moves to the process with time to spare."""
        send(ops)
        self.pack = self.backlog() > self.pack_fill
        pipestats.count("packed_parts", int(self.pack))

    def _bodies(self, results: list[ParseResult]) -> bytes | None:
        """The packed bodies of `results` when this process packs them (see `_send`)."""
        return _ENCODE(record_bodies(results)) if self.pack else None

    def _source(self, source: str) -> list[Any]:
        entry = self.sources.get(source)
        if entry is None:
            entry = self.sources[source] = [assemble.unannounced(source), _START]
        return entry

    def _state(self, info: Any) -> dict[str, Any]:
        scope = assemble.state_scope(self.parser, info)
        state = self.states.get(scope)
        if state is None:
            text = self.texts.get(scope)
            state = self.states[scope] = json.loads(text) if text is not None else {}
            self.state_load += 256 if text is None else len(text)
        self.dirty.add(scope)
        return state

    def prepare(self, st: StoredEvent, raw: RawRecord) -> Op:
        """One event as an operation (and its effect on the cursors and states)."""
        ev = st.event
        self.part += len(raw.value)
        plain: Op = ("raw", raw.seq, raw.value)
        if isinstance(ev, ChunkCaptured):
            entry = self._source(ev.source)
            info = entry[0]
            if is_run_log(info):
                return plain
            try:
                data = zstd.payload(ev.codec, ev.data, ev.size)
            except Exception:
                return plain  # counted by the applier, which fails the same way
            self.part += len(data)
            s = assemble.step(entry[1], ev.generation, ev.offset, data, ev.final)
            if s is None or s.old:
                return ("chunk", _shell(st), s, 0, _NONE, _NONE)
            state = self._state(info)
            nlines, results = assemble.parse_lines(self.parser, info, state, s.lines,
                                                   s.cursor.generation)
            entry[1] = s.cursor
            return ("chunk", _shell(st), s._replace(lines=[]), nlines, _ENCODE(results),
                    self._bodies(results))
        if isinstance(ev, (FileSnapshotted, RowSnapshotted)):
            info = self._source(ev.source)[0]
            size = ev.size if isinstance(ev, FileSnapshotted) else None
            try:
                data = zstd.payload(ev.codec, ev.data, size)
            except Exception:
                return plain
            self.part += len(data)
            state = self._state(info)
            if isinstance(ev, FileSnapshotted):
                res = assemble.call(self.parser.parse_snapshot, info, state, data)
                return ("whole", _shell(st), "snapshots", ev.size, _ENCODE([res]),
                        self._bodies([res]))
            res = assemble.call(self.parser.parse_row, info, state, ev.table, ev.row_id, data)
            return ("whole", _shell(st), "rows", len(ev.data), _ENCODE([res]),
                    self._bodies([res]))
        if isinstance(ev, SourceSeen):
            seen = SourceInfo(source=ev.source, agent=ev.agent, root=ev.root, path=ev.path,
                              layout=ev.layout)
            known = self.sources.get(ev.source)
            if known is None:
                self.sources[ev.source] = [seen, _START]
            else:
                known[0] = seen
        elif isinstance(ev, SourceRewound):
            self._source(ev.source)[1] = assemble.Cursor(ev.generation, 0, b"", 0)
        return plain


_START = assemble.Cursor(0, 0, b"", 0)


def _shell(st: StoredEvent) -> StoredEvent:
    """`st` without its payload bytes (the appliers' SQL half never reads them)."""
    import msgspec

    return StoredEvent(seq=st.seq, at=st.at, key=b"", hash=b"", size=st.size,
                       event=msgspec.structs.replace(st.event, data=b""))
