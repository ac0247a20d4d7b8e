"""search, show, conversation, reindex: thin commands over `projections.query`.

Each command catches history.db up first (a no-op when current), calls one query function,
and prints either the JSON of its result (--json, the documented contract) or a readable
view. Bad input exits 2 naming the parameter; an unknown id exits 1. The search path
imports no pydantic, rich, mcp or starlette (start-up time is part of the product).
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import time
from typing import Any, NoReturn

import click

from cli.services.config import Home, get_home
from cli.services.dates import HELP as DATE_HELP
from readers.registry import search_agents as _search_agents

_OPTION = {"query": "QUERY", "id": "ID", "after": "--after", "limit": "--limit",
           "include_archived": "--include-archived", "per_conversation": "--per-conversation"}


def _bad(ctx: click.Context, exc: Exception) -> NoReturn:
    from cli.services.errors import BadInput

    param = getattr(exc, "param", "")
    name = _OPTION.get(param, f"--{param}" if param else "")
    msg = getattr(exc, "message", str(exc))
    hint = f"see `agentlog {ctx.info_name} --help`"
    if param == "project" and "; " in msg:  # "unknown project 'x'; known projects: …"
        msg, hint = msg.split("; ", 1)
    raise BadInput(f"{name}: {msg}" if name else str(exc), hint)


def _prepare(home: Home) -> None:
    from cli.services.catchup import ensure_current
    from cli.services.search import ensure_current_quietly

    ensure_current_quietly(home, ensure_current)


def _when(ms: Any) -> str:
    if not isinstance(ms, int):
        return "?"
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def _emit(obj: Any) -> None:
    from cli.services.output import emit_json

    emit_json(obj)


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--project", default=None, help="Canonical project path.")
@click.option("--session", default=None, help="CLI session id or peer identity (aliases).")
@click.option("--job", default=None, help="Exact job name.")
@click.option("--agent", default=None,
              help=f"One of {', '.join(_search_agents())}.")
@click.option("--kind", default=None,
              help="message, run, decision, transcript, approval, progress or report.")
@click.option("--since", default=None, help=DATE_HELP)
@click.option("--until", default=None, help=DATE_HELP)
@click.option("--limit", type=int, default=None, help="1..50 (default 10).")
@click.option("--include-archived/--exclude-archived", default=True, show_default=True,
              help="Archived sessions are searched too (each hit says `archived`); "
                   "--exclude-archived skips them.")
@click.option("--mode", type=click.Choice(["words", "meaning", "hybrid"]), default=None,
              help="words: every word, literally; meaning: nearest by meaning (any language);"
                   " hybrid: both, fused (default; config.json search.mode).")
@click.option("--per-conversation", "per_conversation", is_flag=True,
              help="At most one hit (the best) per conversation.")
@click.option("--json", "as_json", is_flag=True, help="Print the search_history JSON.")
@click.option("--answer", "want_answer", is_flag=True,
              help="Also answer from the top hits with one cheap model (docs/answers.md).")
@click.option("--postgres", "postgres", default=None, metavar="URL",
              help="Search the team server instead (`config` = team.postgres; docs/team.md).")
@click.option("--host", "host", default=None, help="With --postgres: only this host's history.")
@click.pass_context
def search(ctx: click.Context, query: tuple[str, ...], project: str | None,
           session: str | None, job: str | None, agent: str | None, kind: str | None,
           since: str | None, until: str | None, limit: int | None, include_archived: bool,
           mode: str | None, as_json: bool, want_answer: bool = False,
           postgres: str | None = None, host: str | None = None,
           per_conversation: bool = False) -> None:
    """Search the history for QUERY: by its words (`word*`: words starting with "word") and by
    meaning (--mode)."""
    from cli.services.search import find
    from projections.errors import QueryError

    home = get_home(ctx)
    options = {k: v for k, v in {
        "project": project, "session": session, "job": job, "agent": agent, "kind": kind,
        "since": since, "until": until}.items() if v is not None}
    text = " ".join(query)
    try:
        if postgres is not None:
            from projections.text import query_tokens

            query_tokens(text)  # validate before touching the team server
            if mode not in (None, "words"):
                raise QueryError("mode", "the team server searches by words only"
                                         " (docs/team.md)")
            if per_conversation:
                raise QueryError("per_conversation", "searches a local history only")
            from cli.services.team_sync import team_search

            filters: dict[str, Any] = dict(options)
            if not include_archived:
                filters["include_archived"] = False
            result = team_search(home, postgres, text, {**filters, "host": host}, limit)
        else:
            if host is not None:
                raise QueryError("host", "needs --postgres (a local history has one host)")
            result = find(home, text, options, limit, include_archived=include_archived,
                          mode=mode, prefix=True,
                          group="conversation" if per_conversation else None)
    except QueryError as exc:
        _bad(ctx, exc)
    if want_answer:
        from cli.services.answers import answer as make_answer

        result["answer"] = make_answer(home, text, list(result["hits"]))
    if as_json:
        _emit(result)
        return
    if want_answer:
        from cli.commands.answer_render import echo_answer

        echo_answer(result["answer"])
    _print_hits(result, text)


def _quote(value: str) -> str:
    import shlex

    return shlex.quote(value)


def _resume_line(item: dict[str, Any]) -> str | None:
    """`  → resume: cd <project> && <agent's resume command>` of a transcript hit."""
    if item.get("kind") != "transcript":
        return None
    from cli.services.resume import of_items, shell_line

    found = of_items([item])
    return f"  → resume: {shell_line(found)}" if found else None


def _print_hits(result: dict[str, Any], text: str) -> None:
    from projections.text import query_tokens

    color = sys.stdout.isatty()
    tokens = query_tokens(text)
    # whole words (a query's "a" is no highlight inside "cache"); CJK and other scripts
    # without spaces: the substring, as the CJK index matches it
    parts = [rf"\b{re.escape(t)}\b" if t.isascii() else re.escape(t) for t in tokens]
    pattern = re.compile("|".join(parts), re.I) if tokens else None
    for hit in result["hits"]:
        head = f"{_when(hit['at'])}  {hit['agent']:<8} {hit.get('project') or '-'}"
        if hit.get("archived"):
            head += "  (archived)"
        if hit.get("host"):
            head += f"  @{hit['host']}"
        click.echo(click.style(head, dim=True) if color else head)
        snip = hit["snippet"]
        if pattern is not None:
            mark = (lambda m: click.style(m.group(0), fg="yellow", bold=True)) if color else (
                lambda m: f"[{m.group(0)}]")
            snip = pattern.sub(mark, snip)
        click.echo(f"  {snip}")
        click.echo(click.style(f"  {hit['id']}", fg="cyan") if color else f"  {hit['id']}")
        if hit.get("conversation"):
            conv = f"  → agentlog conversation {_quote(hit['conversation'])}"
            click.echo(click.style(conv, dim=True) if color else conv)
        again = _resume_line(hit)
        if again:
            click.echo(click.style(again, dim=True) if color else again)
    near = [" or ".join(words) for words in (result.get("suggestions") or {}).values()]
    if not result["hits"] and near:  # one word's nearest words, then the next word's
        click.echo(f"no hits — did you mean: {'; '.join(near)}?")
    cov = result["coverage"]
    last = _when(cov.get("lastCaptureAt")) if cov.get("lastCaptureAt") else "never"
    pending = (f" ({cov['sourcesPending']} with bytes not yet indexed)"
               if cov["sourcesPending"] else "")
    how = result["engine"] + (f" · {result['mode']}" if result.get("mode") else "")
    summary = (f"{len(result['hits'])} hit(s) [{how}] · {cov['events']} events"
               f" indexed · {cov['sources']} sources{pending}"
               f" · last capture {last}")
    by_meaning = cov.get("meaning")
    if by_meaning is not None and by_meaning["pendingDocuments"]:
        summary += (f" · {by_meaning['pendingDocuments']} document(s) not embedded yet"
                    " (`agentlog embed`)")
    if cov.get("capturing"):
        summary += " · capturing" + ("" if cov.get("caughtUp") else
                                     f" ({cov.get('pendingFiles') or 0} files pending)")
    unknown = sum(cov.get("unknownRecordTypes", {}).values())
    if unknown:
        summary += (f" · {unknown} record(s) of a type no parser reads yet (kept in the log)")
    if unknown or cov["sourcesPending"]:
        summary += " · `agentlog audit` names them"
    click.echo(summary)
    if cov.get("stale"):
        click.echo("warning: `agentlog verify` found history.db differs from the log; "
                   "`agentlog reindex` rebuilds it", err=True)


@click.command()
@click.argument("hit_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the document JSON.")
@click.pass_context
def show(ctx: click.Context, hit_id: str, as_json: bool) -> None:
    """Show the indexed source document of a hit ID."""
    from projections.errors import QueryError
    from projections.query import get_document

    home = get_home(ctx)
    try:
        from projections.query import check_id

        check_id(hit_id)
        _prepare(home)
        doc = get_document(home.history_db, hit_id)
    except QueryError as exc:
        _bad(ctx, exc)
    if doc is None:
        from cli.services.errors import Failure

        raise Failure(f"ID: not found: {hit_id!r}",
                      "use an `id` printed by `agentlog search`")
    if as_json:
        _emit(doc)
        return
    click.echo(f"{doc['id']}  ({doc['kind']}, {doc['agent']}, {_when(doc['at'])})")
    for key in ("session", "job", "run", "message", "cursor"):
        if doc.get(key):
            click.echo(f"{key}: {doc[key]}")
    click.echo(f"link: {doc['link']}")
    click.echo("")
    click.echo(doc["body"])


@click.command()
@click.argument("conversation_id", metavar="ID")
@click.option("--after", default=None, help="The `next` cursor of the previous page.")
@click.option("--limit", type=int, default=None, help="1..100 items (default 20).")
@click.option("--json", "as_json", is_flag=True, help="Print the page JSON.")
@click.pass_context
def conversation(ctx: click.Context, conversation_id: str, after: str | None,
                 limit: int | None, as_json: bool) -> None:
    """Page through a conversation (a hit's `conversation`, or a session id)."""
    from projections.errors import NotFound, QueryError
    from projections.query import get_conversation

    home = get_home(ctx)
    try:
        _prepare(home)
        page = get_conversation(home.history_db, conversation_id, after,
                                20 if limit is None else limit)
        from cli.services.resume import of_items

        page["resume"] = of_items(page["items"])  # as MCP's get_conversation
    except QueryError as exc:
        _bad(ctx, exc)
    except NotFound as exc:
        from cli.services.errors import Failure

        raise Failure(f"ID: {exc}", "use a hit's conversation id (shown by `agentlog "
                      "search`) or a session id") from None
    if as_json:
        _emit(page)
        return
    click.echo(f"conversation {page['id']}")
    for item in page["items"]:
        who = item.get("role") or item["kind"]
        if item.get("subagent"):
            who += f" [{item.get('subagent_name') or item['subagent']}]"
        click.echo(click.style(f"— {_when(item['at'])} {item['agent']} {who}", dim=True))
        click.echo(item["text"])
    if page["next"]:
        click.echo(f"(more: --after {page['next']})")
    if page["resume"]:
        from cli.services.resume import shell_line

        click.echo(f"resume: {shell_line(page['resume'])}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--engine", type=click.Choice(["fts5", "plain"]), default=None,
              help="Change the search engine (default: keep the one history.db has).")
@click.pass_context
def reindex(ctx: click.Context, as_json: bool, engine: str | None) -> None:
    """Rebuild history.db from the log (a new file, swapped in atomically)."""
    from projections.catchup import make_lists
    from projections.rebuild import rebuild

    home = get_home(ctx)
    if not home.has_log():
        from cli.services.errors import Failure

        raise Failure(f"no event log in {home.root} (nothing captured yet)",
                      "run `agentlog capture` first")
    log = home.log(readonly=True)
    bar = _Progress() if sys.stderr.isatty() and not as_json else None
    try:
        result = rebuild(home.history_db, log, progress=bar, engine=engine)
        started = time.monotonic()  # searchable now; the rest of the ranking lists follow
        lists = make_lists(home.history_db)
    finally:
        if bar is not None:
            bar.close()
    out = {"path": str(result.path), "events": result.events, "lastSeq": result.last_seq,
           "documents": result.documents, "seconds": round(result.seconds, 3),
           "engine": result.engine, "rankLists": lists,
           "rankListSeconds": round(time.monotonic() - started, 3)}
    if as_json:
        _emit(out)
    else:
        click.echo(f"rebuilt {out['path']}: {out['events']} events, {out['documents']} documents"
                   f" in {out['seconds']} s [{out['engine']}]")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--seconds", type=float, default=None,
              help="Stop after this long (the rest later); default: until done.")
@click.option("--again", is_flag=True, help="Drop the embeddings and embed everything anew.")
@click.option("--serve", "serve", is_flag=True,
              help="Instead: answer searches by meaning from one loaded model until idle"
                   " (`agentlog search` starts it).")
@click.option("--idle", type=float, default=900.0, show_default=True,
              help="With --serve: exit after this many seconds without a question.")
@click.pass_context
def embed(ctx: click.Context, as_json: bool, seconds: float | None, again: bool,
          serve: bool, idle: float) -> None:
    """Embed history.db's documents for search by meaning (the capture loop of `mcp`,
    `serve` and `capture --watch` does it in the background)."""
    from cli.services.search import embed as run_embed

    home = get_home(ctx)
    if serve:
        from cli.services.search import meaning_spec
        from projections.meaning.serve import serve as run_server

        answered = run_server(home.meaning_dir, idle, meaning_spec(home))
        if as_json:
            _emit({"answered": answered})
        return
    bar = _Progress("embed", "documents") if sys.stderr.isatty() and not as_json else None
    try:
        out = run_embed(home, seconds=seconds, again=again, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if as_json:
        _emit(out)
    elif out["busy"]:
        click.echo("another process is embedding this home; its progress shows in"
                   " `agentlog search --json` (coverage.meaning)")
    else:
        left = f", {out['pendingDocuments']} documents left" if out["pendingDocuments"] else ""
        click.echo(f"embedded {out['chunks']} chunk(s) of {out['documents']} document(s) in"
                   f" {out['seconds']} s; {out['total']} chunks in all{left} [{out['model']}]")


class _Progress:
    """A one-line progress bar on stderr (TTY only)."""

    def __init__(self, what: str = "reindex", unit: str = "events") -> None:
        self._last = -1
        self._what, self._unit = what, unit

    def __call__(self, done: int, total: int) -> None:
        pct = int(done * 100 / total) if total else 100
        if pct == self._last:
            return
        self._last = pct
        filled = pct * 30 // 100
        sys.stderr.write(f"\r{self._what} [{'#' * filled}{'.' * (30 - filled)}] {pct:3d}% "
                         f"{done}/{total} {self._unit}")
        sys.stderr.flush()

    def close(self) -> None:
        if self._last >= 0:
            sys.stderr.write("\n")
