"""`export --log` / `import --log`: the lossless copy of a whole log between homes.

Thin: `eventlog.transfer` does the work. The import first checks the whole file without
writing (gapless seqs, chain hashes, header and trailer), then appends it with
`StoredAppender` into this home's log, which must be empty (or a prefix of the file), and
rebuilds history.db from it. Both are noted in the operations journal, never in the log
(the copy must keep the source's chain head).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli.services.archive_ops import after_append, log_of
from cli.services.audit.archive import note_operation
from cli.services.config import Home
from cli.services.errors import BadInput


def export_log(home: Home, dest: Path) -> dict[str, Any]:
    from eventlog.transfer import write_jsonl

    log = log_of(home)
    from eventlog.files import open_atomic

    dest = dest.absolute()
    with open_atomic(dest) as f:
        res = write_jsonl(log, f)
    summary = {"path": str(dest), "records": res.records, "stateEntries": res.state_entries,
               "head": {"seq": res.head.seq, "hash": res.head.hex},
               "bytes": dest.stat().st_size}
    note_operation(home, "export.log", summary)
    return summary


def import_log(home: Home, src: Path, *, apply: bool = False) -> dict[str, Any]:
    """Verify a log export; with `apply`, copy it into this home's (empty) log."""
    from eventlog.transfer import (
        StoredAppender,
        TransferError,
        TransferRecord,
        check_stream,
        parse_jsonl,
    )

    def items() -> Any:
        with src.open("rb") as f:
            yield from parse_jsonl(f)

    try:
        checked = check_stream(items())
    except TransferError as exc:
        raise BadInput(f"{exc}; nothing imported") from None
    except OSError as exc:
        raise BadInput(f"cannot read {src}: {exc}") from None
    out: dict[str, Any] = {
        "source": str(src), "records": checked.records, "stateEntries": checked.state_entries,
        "head": {"seq": checked.head.seq, "hash": checked.head.hex}, "applied": False,
        "dryRun": not apply,
    }
    target = home.log(readonly=True).head() if home.has_log() else None
    out["targetHead"] = None if target is None else {"seq": target.seq, "hash": target.hex}
    if not apply:
        note_operation(home, "import.log.dry_run", {k: out[k] for k in ("source", "records")})
        return out
    log = log_of(home, create=True)
    try:
        with StoredAppender(log) as app:
            for item in items():
                if isinstance(item, tuple):
                    app.put_state(*item)
                elif isinstance(item, TransferRecord):
                    app.add(item)
        res = app.result()
    except TransferError as exc:
        raise BadInput(str(exc)) from None
    out.update(applied=True, appended=res.appended, alreadyPresent=res.already_present,
               head={"seq": res.head.seq, "hash": res.head.hex})
    note_operation(home, "import.log", {k: out[k] for k in ("source", "records", "appended")})
    after_append(home)
    return out
