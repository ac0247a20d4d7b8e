"""Consistent, compacted, verified copies of the log.

A backup is written into a temporary directory beside its final place, verified in a
child process, given a manifest with its head, and only then renamed into place.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

from eventlog.errors import EventLogError
from eventlog.files import fsync_file
from eventlog.store import EventLog
from eventlog.verify import verify_isolated


def backup(log: EventLog, backups_dir: Path) -> dict[str, Any]:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    final = backups_dir / stamp
    tmp = backups_dir / f".{stamp}.tmp"
    tmp.mkdir(parents=True)
    try:
        with log.exclusive():
            head = log.head()
            log.copy_to(tmp, compact=True)
        report = verify_isolated(tmp)
        if not report.ok or report.head_seq != head.seq:
            raise EventLogError(f"backup copy failed verification: {report.reason}")
        manifest = {
            "created_at": stamp,
            "head_seq": head.seq,
            "head_hash": head.hex,
            "source": str(log.path),
            "bytes": (tmp / "data.mdb").stat().st_size,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        for f in tmp.iterdir():
            fsync_file(f)
        os.replace(tmp, final)
        manifest["path"] = str(final)
        return manifest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
