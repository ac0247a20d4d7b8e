"""Team sync from the cli side: the host id, `team.postgres` from config.json, the sync
state file `audit` reads, and the background syncer of `capture --watch` (and of any
process that appends while `team.postgres` is set).

Promises:
- the host id is created once per home, atomically (`O_EXCL`), and never changes:
  `<hostname>-<12 hex>` in `<home>/host.json`; the hostname alone is not unique enough;
- a server that is down never blocks or fails local capture: `after_append` only wakes a
  daemon thread, which backs off after a failure (doubling, up to `MAX_BACKOFF` s) and
  records the (redacted) error in `<home>/team-sync.json` for `audit`;
- connection strings are shown only through `projections.pg.conn.describe`/`redact`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from cli.services.config import Home
from cli.services.errors import BadInput, Failure

if TYPE_CHECKING:
    from eventlog import EventLog
    from projections.pg.sync import SyncResult

STATE_FILE = "team-sync.json"
HOST_FILE = "host.json"
MAX_BACKOFF = 300.0
TICK_BATCHES = 50  # batches per background pass; the next commit wakes it again


def host_id(home: Home) -> str:
    """This home's stable host id (created on first use)."""
    path = home.root / HOST_FILE
    for _attempt in range(50):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("host"), str):
                return str(data["host"])
            raise Failure(f"{path}: no host id")
        except FileNotFoundError:
            pass
        except json.JSONDecodeError:  # another process is writing it right now
            time.sleep(0.02)
            continue
        home.root.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname().split(".")[0])[:40] or "host"
        body = json.dumps({"host": f"{name}-{secrets.token_hex(6)}",
                           "created": int(time.time() * 1000), "hostname": socket.gethostname()})
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    raise Failure(f"cannot read or create {path}")


def team_url(home: Home) -> str | None:
    """`team.postgres` of config.json, if set."""
    team = home.config.get("team")
    if isinstance(team, dict) and isinstance(team.get("postgres"), str) and team["postgres"]:
        return str(team["postgres"])
    return None


def resolve_url(home: Home, value: str | None) -> str:
    """A --to/--postgres value: a connection string, or `config` for team.postgres
    (`DriverMissing` first when psycopg, the `team` extra, is not installed)."""
    from projections.pg.conn import driver

    driver()
    if value is None or value in ("", "config"):
        url = team_url(home)
        if url is None:
            raise BadInput("no server given and team.postgres is not set in config.json")
        return url
    from projections.pg.conn import redact

    if redact(value) != value:
        print("agentlog: warning: a password on the command line is visible in process "
              "listings; put the URL in config.json (team.postgres) or the password in "
              "~/.pgpass", file=sys.stderr)
    return value


def team_search(home: Home, value: str, text: str, filters: dict[str, Any],
                limit: Any) -> dict[str, Any]:
    """`search --postgres`: the team server's answer (errors as ClickException, redacted)."""
    from projections.pg.conn import TeamError
    from projections.pg.query import search

    try:
        return search(resolve_url(home, value), text, filters, limit)
    except TeamError as exc:
        raise Failure(str(exc)) from None


def verify_postgres(home: Home, value: str, *, as_json: bool) -> int:
    """`verify --postgres`: every host's chain re-checked by the server, this home's host
    compared with the local log; prints the report, returns the exit status."""
    from cli.services.output import emit_json
    from projections.pg.conn import TeamError, connect, describe
    from projections.pg.project import compare_documents
    from projections.pg.verify import check_hosts, compare_local

    url = resolve_url(home, value)
    me = host_id(home) if (home.root / HOST_FILE).exists() else None
    docs: dict[str, Any] | None = None
    try:
        con = connect(url)
        try:
            checks = check_hosts(con)
            if me is not None and any(c.host == me for c in checks):
                docs = compare_documents(con, me, home.root / "team-projector" / f"{me}.db")
        finally:
            con.close()
    except TeamError as exc:
        raise Failure(str(exc)) from None
    except Exception as exc:  # psycopg errors: permission, missing schema
        from projections.pg.conn import explain, redact

        raise Failure(redact(f"{describe(url)}: {explain(exc)}")) from None
    hosts = []
    local: dict[str, Any] | None = None
    for c in checks:
        entry = c.to_dict()
        if c.host == me and home.has_log():
            local = compare_local(c, home.log(readonly=True))
            entry["local"] = local
        if c.host == me and docs is not None:
            entry["documents"] = docs
        hosts.append(entry)
    ok = (all(c.ok for c in checks) and (local is None or bool(local["ok"]))
          and (docs is None or bool(docs["ok"])))
    if as_json:
        emit_json({"ok": ok, "server": describe(url), "hosts": hosts})
    else:
        for h in hosts:
            status = "ok" if h["ok"] else "BAD"
            line = f"{h['host']}: {status} {h['records']} records, head {h['headSeq']}"
            if not h["ok"]:
                line += f" (record {h['firstBadSeq']}: {h['reason']})"
            if "local" in h:
                loc = h["local"]
                line += f"; this home: {loc['state']} (local head {loc['localHead']})"
                if loc["detail"]:
                    line += f", {loc['detail']}"
            if "documents" in h:
                d = h["documents"]
                if not d["checked"]:
                    line += f"; documents not compared: {d['detail']}"
                elif d["ok"]:
                    line += f"; {d['documents']} documents match the local projection"
                else:
                    line += f"; documents DIFFER from the local projection: {d['detail']}"
            print(line)
        if not hosts:
            print(f"{describe(url)}: no hosts yet")
    return 0 if ok else 1


def read_state(home: Home) -> dict[str, Any]:
    try:
        data = json.loads((home.root / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(home: Home, update: dict[str, Any]) -> None:
    state = read_state(home)
    state.update(update)
    from eventlog.files import write_atomic

    write_atomic(home.root / STATE_FILE, (json.dumps(state, indent=1) + "\n").encode(),
                 fsync=False)


def run_sync(home: Home, log: EventLog, url: str, *, max_batches: int | None = None,
             project: bool = True, all_hosts: bool = False,
             rebuild: bool = False) -> tuple[SyncResult, dict[str, Any] | None]:
    """Ship, then (unless `project` is false) project this home's host (or every host);
    the state file records the outcome."""
    from projections.pg.conn import TeamError, describe, redact
    from projections.pg.sync import sync

    now = int(time.time() * 1000)
    host = host_id(home)
    base = {"server": describe(url), "host": host, "lastAttemptAt": now}
    try:
        result = sync(log, url, host, label=socket.gethostname(), max_batches=max_batches)
        projected = None
        if project:
            from projections.pg.project import project as run_project

            projected = run_project(url, home.root / "team-projector",
                                    hosts=None if all_hosts else [host],
                                    max_batches=max_batches, rebuild=rebuild).to_dict()
    except (TeamError, OSError) as exc:
        _write_state(home, {**base, "lastError": redact(str(exc)), "lastErrorAt": now,
                            "localHead": log.head().seq})
        raise
    _write_state(home, {**base, "lastError": None, "lastSuccessAt": now,
                        "serverHead": result.server_head, "localHead": result.local_head})
    return result, projected


class _Syncer:
    """One daemon thread per process: woken after each commit, syncs, backs off on failure."""

    def __init__(self, home: Home, url: str) -> None:
        self.home, self.url = home, url
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="agentlog-team-sync", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        from projections.pg.conn import TeamError, redact

        backoff = 0.0
        while True:
            self.wake.wait()
            self.wake.clear()
            try:
                result, _ = run_sync(self.home, self.home.log(readonly=True), self.url,
                                     max_batches=TICK_BATCHES)
                backoff = 0.0
                if result.behind:
                    self.wake.set()  # more to ship: go on after this bounded pass
            except Exception as exc:  # never let the thread die silently
                backoff = min(max(backoff * 2, 5.0), MAX_BACKOFF)
                known = isinstance(exc, TeamError | OSError)
                why = redact(str(exc) if known else repr(exc))
                now = int(time.time() * 1000)
                _write_state(self.home, {"lastError": why, "lastErrorAt": now,
                                         "nextRetryAt": now + int(backoff * 1000)})
                print(f"agentlog: team sync failed, retrying in {backoff:.0f} s: {why}",
                      file=sys.stderr)
                time.sleep(backoff)
                self.wake.set()


_syncers: dict[str, _Syncer] = {}
_lock = threading.Lock()


def after_append(home: Home) -> None:
    """Wake the background syncer when `team.postgres` is set (never waits for the server)."""
    url = team_url(home)
    if url is None:
        return
    with _lock:
        syncer = _syncers.get(str(home.root))
        if syncer is None:
            syncer = _syncers[str(home.root)] = _Syncer(home, url)
    syncer.wake.set()


def audit_section(home: Home, log: EventLog) -> dict[str, Any]:
    """How far behind the team server this home's log is (from the last sync attempt)."""
    state = read_state(home)
    url = team_url(home)
    if not state and url is None:
        return {}
    from projections.pg.conn import describe

    head = log.head().seq
    server_head = state.get("serverHead")
    return {"team": {
        "server": describe(url) if url else state.get("server"),
        "host": state.get("host"),
        "localHead": head,
        "serverHead": server_head,
        "behind": head - int(server_head) if isinstance(server_head, int) else None,
        "lastSuccessAt": state.get("lastSuccessAt"),
        "lastAttemptAt": state.get("lastAttemptAt"),
        "lastError": state.get("lastError"),
        "nextRetryAt": state.get("nextRetryAt") if state.get("lastError") else None,
    }}
