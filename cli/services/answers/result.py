"""The answer object returned beside the hits, and the checks a model's text must pass.

Shape (fields are only ever added): `{text, agent, model, sources: [{id, link}], error?}`.

Promises:
- `text` is at most `MAX_TEXT` characters; a longer answer is cut at a word boundary and
  marked with an ellipsis before its citations are checked.
- A successful answer cites at least one hit as `[<hit.id>]` and cites no id outside the
  hits it was given; its `sources` are the cited hits, in order of first citation, each
  with the hit's authenticated `sourceLink`.
- On any failure `text` is empty, `error` says why, and `sources` list every hit that was
  (or would have been) sent, so the caller keeps working links.
"""

from __future__ import annotations

import re
from typing import Any

MAX_TEXT = 4000

NO_HITS_TEXT = "No matching history was found, so there is nothing to answer from."

_BRACKET = re.compile(r"\[([^\[\]\n]{1,300})\]")


def sources_of(hits: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    return [{"id": h.get("id"), "link": h.get("sourceLink")} for h in hits]


def no_hits() -> dict[str, Any]:
    """The fixed answer of a search with no hits (nothing probed, nothing run)."""
    return {"text": NO_HITS_TEXT, "agent": None, "model": None, "sources": []}


def failed(
    error: str,
    hits: list[dict[str, Any]] | tuple[dict[str, Any], ...],
    agent: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    return {"text": "", "agent": agent, "model": model, "sources": sources_of(hits), "error": error}


def _truncate(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    cut = text[: MAX_TEXT - 1]
    space = cut.rfind(" ")
    if space > MAX_TEXT // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


def citations(text: str, known: set[str]) -> list[str]:
    """Every id-like token cited in square brackets, in order of appearance.

    A bracket may hold one id or several separated by commas or semicolons. Tokens that are
    neither known ids nor id-shaped (`kind:rest`) are ignored, so prose like "[sic]" or a
    Markdown link text does not count as a citation.
    """
    found: list[str] = []
    for m in _BRACKET.finditer(text):
        whole = m.group(1).strip().strip("`'\"")
        if whole in known:  # an id may itself hold a comma or semicolon
            found.append(whole)
            continue
        for part in re.split(r"[,;]", m.group(1)):
            token = part.strip().strip("`'\"")
            if not token:
                continue
            if token in known or re.fullmatch(r"[A-Za-z][\w-]*:\S+", token):
                found.append(token)
    return found


def validate(
    text: str,
    hits: list[dict[str, Any]] | tuple[dict[str, Any], ...],
    agent: str,
    model: str | None,
) -> dict[str, Any]:
    """The answer object for a model's raw text, or an error answer explaining the fault."""
    body = _truncate(text.strip())
    if not body:
        return failed(f"{agent} returned an empty answer", hits, agent, model)
    by_id = {str(h.get("id")): h for h in hits}
    cited = citations(body, set(by_id))
    if not cited:
        return failed(f"{agent}'s answer cites no hit as [<hit.id>]", hits, agent, model)
    unknown = [c for c in cited if c not in by_id]
    if unknown:
        shown = ", ".join(dict.fromkeys(unknown[:3]))
        return failed(f"{agent}'s answer cites unknown ids: {shown}", hits, agent, model)
    order = list(dict.fromkeys(cited))
    return {
        "text": body,
        "agent": agent,
        "model": model,
        "sources": sources_of([by_id[i] for i in order]),
    }
