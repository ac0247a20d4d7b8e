"""The calls both front ends make: MCP tools and HTTP routes go through here.

Promises:
- Thin: arguments are checked for shape (types, known names); values are checked by
  `projections.query`, whose `QueryError` names the parameter. No SQL here.
- One response shape: `search` returns exactly what `projections.query.search` returns,
  with the capture loop's fields in `coverage` (`cli.services.capture.status.coverage_fields`), plus
  `answer` when asked, so MCP and HTTP answer alike.
- A search on a home whose first capture pass is running (`agentlog mcp` or `serve` just
  started on a never-captured home) waits for it up to ~3 s, then answers; if it still
  runs, `coverage.reading` says how far it got, in one line.
- The answer step runs only when asked, and only through `cli.services.answers` when that module
  exists; otherwise `answer.error` says so while hits and sources are kept.
- A damaged history.db (any failure to open or read it) is `Damaged` (HTTP 503, an MCP
  error) naming the cure, and starts one rebuild from the log in a background thread;
  calls answer again once it is swapped in.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from cli.services.capture.status import first_pass, with_capture
from cli.services.config import Home
from cli.services.errors import BadInput, Damaged, Failure, NotFound, from_exception
from projections import query as q
from projections.errors import ProjectionDamaged, ProjectionError
from readers import registry

AGENTS = registry.search_agents()  # readers/registry.py, then "other"
KINDS = ("message", "run", "decision", "transcript", "approval", "progress", "report")
FILTER_KEYS = ("project", "session", "job", "agent", "kind", "since", "until", "host")
ANSWER_SOURCES = 8


DAMAGED_HINT = "`agentlog reindex` (or any `agentlog search`) rebuilds it from the log"
_rebuilding: set[Path] = set()
_rebuild_lock = threading.Lock()


def _rebuild_in_background(db_path: Path) -> bool:
    """Start rebuilding a damaged history.db from its home's log (once at a time)."""
    log_dir = db_path.parent / "log"
    if not (log_dir / "data.mdb").exists():
        return False
    with _rebuild_lock:
        if db_path in _rebuilding:
            return True
        _rebuilding.add(db_path)

    def run() -> None:
        try:
            from eventlog import open_log
            from projections.rebuild import rebuild

            rebuild(db_path, open_log(log_dir, readonly=True))
        except Exception as exc:
            logging.getLogger("agentlog").warning("rebuilding history.db failed: %s",
                                                  type(exc).__name__)
        finally:
            with _rebuild_lock:
                _rebuilding.discard(db_path)

    threading.Thread(target=run, name="agentlog-rebuild", daemon=True).start()
    return True


def _engine(home: Home) -> str | None:
    search_cfg = home.config.get("search")
    if isinstance(search_cfg, dict):
        engine = search_cfg.get("engine")
        if isinstance(engine, str) and engine:
            return engine
    return None


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a query function, its errors as the tree's (`cli.services.errors.from_exception`);
    a damaged history.db also starts its rebuild from the log."""
    try:
        return fn(*args, **kwargs)
    except ProjectionDamaged as exc:
        started = bool(args) and isinstance(args[0], Path) and _rebuild_in_background(args[0])
        now = "; rebuilding it from the log now, retry shortly" if started else ""
        raise Damaged(f"{exc}{now}: {DAMAGED_HINT}") from None
    except ProjectionError as exc:  # busy, not found, a bad parameter, the team server
        raise from_exception(exc) from None


def search(
    home: Home,
    query: str,
    filters: dict[str, Any] | None = None,
    limit: Any = None,
    answer: bool = False,
    *,
    snippet_chars: int | None = None,
    role: bool = False,
    mode: str | None = None,
    group: str | None = None,
    ref: bool = False,
) -> dict[str, Any]:
    """Search the history; with `answer`, add an answer grounded in the top hits.
    `snippet_chars`, `role` and `ref`: shorter snippets, each hit's role and its short
    reference (MCP's compact answer;
    the team server cuts its snippets instead). `mode` (words, the default, keeps the seed's
    literal hits; meaning, hybrid): in words mode fewer than `limit` hits bring `related`
    hits by meaning. `group`: "conversation" for one hit per conversation (a local
    history's). The query is literal: `*` is punctuation here."""
    if not isinstance(query, str):
        raise BadInput("query: expected a string")
    from cli.services.search import require_words

    _call(require_words, query)
    clean = {k: v for k, v in (filters or {}).items() if v is not None}
    if home.postgres is not None:
        from projections.pg import query as pg

        if mode not in (None, "words"):
            raise BadInput("mode: the team server searches by words only (docs/team.md)")
        if group is not None:
            raise BadInput("group: only on a local history (not with --postgres)")
        result: dict[str, Any] = _call(pg.search, home.postgres, query, clean or None, limit,
                                       ref=ref)
        if snippet_chars is not None:
            for hit in result.get("hits", []):
                text = str(hit.get("snippet") or "")
                if len(text) > snippet_chars:
                    hit["snippet"] = text[: snippet_chars - 1].rstrip() + "…"
    else:
        if "host" in clean:
            raise BadInput("host: only with a team server (mcp/serve --postgres)")
        reading = first_pass(home)  # a new home's first capture pass: wait up to ~3 s
        from cli.services.search import meaning_spec

        related = mode in (None, "words")  # words: related hits by meaning when short
        try:
            spec = meaning_spec(home)
        except Failure:
            if not related:
                raise
            spec, related = None, False  # a wrong meaning.model never fails a words search
        more: dict[str, Any] = {"role": role, "mode": mode or "words", "related": related,
                                "meaning_model": spec, "ref": ref}
        if group is not None:
            more["group"] = group
        if snippet_chars is not None:
            more["snippet_chars"] = snippet_chars
        result = _call(
            q.search, home.history_db, query, clean or None, limit, engine=_engine(home), **more
        )
        with_capture(home, result)
        if reading is not None:
            result["coverage"]["reading"] = reading
    if answer:
        result["answer"] = make_answer(home, query, list(result.get("hits", [])))
    return result


def make_answer(home: Home, query: str, hits: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer object of the seed, from `cli.services.answers`."""
    from cli.services import answers

    produced: dict[str, Any] = answers.answer(home, query, hits)
    return produced


def document(home: Home, hit_id: str) -> dict[str, Any]:
    """The bounded source document of a hit id."""
    if home.postgres is not None:
        from projections.pg import query as pg

        doc = _call(pg.get_document, home.postgres, hit_id)
    else:
        doc = _call(q.get_document, home.history_db, hit_id)
    if doc is None:
        raise NotFound(f"no document {hit_id!r}")
    result: dict[str, Any] = doc
    return result


def conversation(
    home: Home, conversation_id: str, after: str | None = None, limit: Any = None
) -> dict[str, Any]:
    """One page of a conversation: {id, items, next, resume} (`resume`: the command that
    reopens its session, `cli.services.resume.of_items`, or None)."""
    from cli.services.resume import of_items

    kwargs: dict[str, Any] = {"after": after or None}
    if limit is not None:
        kwargs["limit"] = limit
    if home.postgres is not None:
        from projections.pg import query as pg

        result: dict[str, Any] = _call(pg.get_conversation, home.postgres, conversation_id,
                                       **kwargs)
    else:
        result = _call(q.get_conversation, home.history_db, conversation_id, **kwargs)
    result["resume"] = of_items(result["items"])
    return result


def decision_history(home: Home, topic: str) -> dict[str, Any]:
    """Every revision of a decision topic."""
    found = _call(q.decision_history, home.history_db, topic)
    if found is None:
        raise NotFound(f"no decision {topic!r}")
    result: dict[str, Any] = found
    return result


def run_log(home: Home, basename: str, from_offset: int = 0) -> dict[str, Any]:
    """A bounded window of a run log from a byte offset."""
    found = _call(q.run_log, home.history_db, basename, from_offset)
    if found is None:
        raise NotFound(f"no run {basename!r}")
    result: dict[str, Any] = found
    return result


def coverage(home: Home) -> dict[str, Any]:
    """What is captured and how fresh, from the query API when it offers it."""
    if home.postgres is not None:
        from projections.pg import query as pg

        found: dict[str, Any] = _call(pg.coverage, home.postgres)
        return found
    result: dict[str, Any] = _call(q.coverage, home.history_db)
    return with_capture(home, {"coverage": result})["coverage"]  # type: ignore[no-any-return]
