"""Optional answers: one cheap model reads the top hits and answers with citations.

`answer(home, query, hits)` is the one entry point (CLI `search --answer`, MCP `answer:
true`, HTTP `answer=true`). It returns `{text, agent, model, sources: [{id, link}], error?}`.

Promises:
- No hits: the fixed no-hits answer, without probing or running anything.
- At most eight top snippets are sent (see `prompt`), to exactly one model run.
- Providers are tried in `historyAnswer.preference` order. A provider is used only when
  its binary is on PATH and its usage reader shows capacity on a plan that does not bill per
  token; exhausted, failed or unknown availability skips it. A run that reports exhausted
  capacity also moves on to the next provider; any other failure of the run is final.
- Any failure (config, no provider, timeout, garbage, empty text, missing or unknown
  citations) gives `answer.error` with empty text while hits and sources stay; this
  function does not raise for provider or config faults.
- Nothing of the run reaches the user's real agent histories (see `run` and the provider
  modules), and nothing is logged: prompts and answers hold transcript excerpts.
"""

from __future__ import annotations

import importlib
from typing import Any

from cli.services.answers import result
from cli.services.answers.base import AnswerError, Generation, Selection
from cli.services.answers.config import PROVIDERS, AnswerConfig, parse
from cli.services.answers.prompt import Prompt, build, top_hits
from cli.services.answers.result import NO_HITS_TEXT
from cli.services.answers.run import GENERATION_TIMEOUT, Workspace, workspace
from cli.services.config import Home

__all__ = ["GENERATION_TIMEOUT", "NO_HITS_TEXT", "PROVIDERS", "answer"]


def _provider(name: str) -> Any:
    return importlib.import_module(f"cli.services.answers.{name}")


def _settings(home: Home) -> AnswerConfig:
    try:
        config = home.config
    except Exception as exc:  # click.ClickException from a malformed config.json
        raise AnswerError(str(getattr(exc, "message", exc))) from None
    return parse(config)


def answer(
    home: Home,
    query: str,
    hits: list[dict[str, Any]],
    *,
    generation_timeout: float = GENERATION_TIMEOUT,
    probe_scale: float = 1.0,
) -> dict[str, Any]:
    """The answer object for `query` over the search's `hits` (best first)."""
    chosen = top_hits(hits)
    if not chosen:
        return result.no_hits()
    try:
        settings = _settings(home)
    except AnswerError as exc:
        return result.failed(f"config: {exc}", chosen)
    prompt = build(query, chosen)
    try:
        with workspace(
            generation_timeout=generation_timeout,
            probe_scale=probe_scale,
            home_state=home.root / "answers",
        ) as ws:
            return _first_answer(ws, settings, prompt)
    except OSError as exc:  # no temp dir, unwritable home, process table full
        return result.failed(f"cannot run an answer: {exc}", prompt.hits)


def _first_answer(ws: Workspace, settings: AnswerConfig, prompt: Prompt) -> dict[str, Any]:
    skipped: list[str] = []
    for name in settings.preference:
        mod = _provider(name)
        try:
            picked = mod.select(ws, settings.models.get(name))
        except Exception as exc:  # a probe must never break the search it decorates
            picked = Selection(False, reason=f"probe failed ({type(exc).__name__}: {exc})")
        if not picked.ok or not picked.model:
            skipped.append(f"{name}: {picked.reason}")
            continue
        try:
            made = mod.generate(ws, prompt.text, picked.model)
        except Exception as exc:
            made = Generation(error=f"{name}: run failed ({type(exc).__name__}: {exc})")
        if made.error is None:
            return result.validate(made.text, prompt.hits, name, made.model or picked.model)
        if made.capacity:
            skipped.append(made.error)
            continue
        return result.failed(made.error, prompt.hits, name, made.model or picked.model)
    detail = "; ".join(skipped) if skipped else "no provider configured"
    return result.failed(f"no answer provider available ({detail})", prompt.hits)
