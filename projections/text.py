"""Text helpers shared by both engines: query tokens, folding, snippets.

Promises:
- a query becomes at most `MAX_TOKENS` literal Unicode word/number tokens; nothing the user
  types is ever interpreted as FTS5 syntax (each token is a double-quoted phrase and
  contains only letters, digits and marks);
- `fold` is the case/diacritic folding of the plain engine (NFD, combining marks dropped,
  lower case), close to FTS5's `unicode61 remove_diacritics 2`;
- snippets are plain text of at most `SNIPPET_CHARS` characters;
- `query_prefixes` names the tokens written with a trailing `*` (at least `MIN_PREFIX`
  characters): the terminal's prefix search; elsewhere `*` is ordinary punctuation.
"""

from __future__ import annotations

import re
import unicodedata

from projections.errors import QueryError

MAX_QUERY_CHARS = 1000
MAX_TOKENS = 32
SNIPPET_CHARS = 320
MIN_PREFIX = 2  # `a*` is the word "a"; `*` alone is punctuation (no word)

_TOKEN = re.compile(r"[^\W_]+")
_SPACE = re.compile(r"\s+")


def query_tokens(query: object) -> list[str]:
    """The literal tokens of a user query (validated: 1..1000 chars, <= 32 tokens)."""
    if not isinstance(query, str):
        raise QueryError("query", "must be a string")
    q = query.strip()
    if not q:
        raise QueryError("query", "must not be empty")
    if len(q) > MAX_QUERY_CHARS:
        raise QueryError("query", f"{len(q)} characters exceeds the limit of {MAX_QUERY_CHARS}")
    tokens = _TOKEN.findall(unicodedata.normalize("NFC", q))
    seen: list[str] = []
    for t in tokens:
        if t not in seen:
            seen.append(t)
    if len(seen) > MAX_TOKENS:
        raise QueryError("query", f"{len(seen)} words exceeds the limit of {MAX_TOKENS}")
    return seen


def query_prefixes(query: str) -> set[str]:
    """The tokens of `query` (as `query_tokens` gives them) written with a trailing `*` and
    at least `MIN_PREFIX` characters (`zebra*`, not `a*`, `*` or `foo*bar`): each matches
    the words starting with it. A token also written without `*` is a word (the word
    implies the prefix)."""
    q = unicodedata.normalize("NFC", query.strip())
    starred: set[str] = set()
    plain: set[str] = set()
    for m in _TOKEN.finditer(q):
        tok, end = m.group(0), m.end()
        if (q[end : end + 1] == "*" and _TOKEN.match(q, end + 1) is None
                and len(tok) >= MIN_PREFIX):
            starred.add(tok)
        else:
            plain.add(tok)
    return starred - plain


def fts_phrase(token: str) -> str:
    """One token as an FTS5 string (quoted; tokens never contain quotes, but be safe)."""
    return '"' + token.replace('"', '""') + '"'


# Combining diacritical marks (the blocks unicodedata.combining() reports for Latin,
# Greek and Cyrillic text, which is what FTS5's remove_diacritics folds).
_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")


def fold(text: str) -> str:
    """Case- and diacritic-folded text (the plain engine's comparison form)."""
    if text.isascii():
        return text.lower()
    # NFD and lower() (not NFKD/casefold) to match what unicode61 folds: "ß" stays "ß".
    return _MARKS.sub("", unicodedata.normalize("NFD", text)).lower()


def folded_with_map(text: str) -> tuple[str, list[int]]:
    """Folded text and, for each folded character, the index of its source character."""
    out: list[str] = []
    idx: list[int] = []
    for i, ch in enumerate(text):
        f = fold(ch)
        out.append(f)
        idx.extend([i] * len(f))
    return "".join(out), idx


def first_match(folded: str, tokens: list[str]) -> tuple[int, int]:
    """(position, length) in `folded` of the earliest token match: whole words first."""
    best, size = -1, 0
    for tok in tokens:
        ft = fold(tok)
        if not ft:
            continue
        m = re.search(r"(?<![^\W_])" + re.escape(ft), folded)
        pos = m.start() if m else folded.find(ft)
        if pos >= 0 and (best < 0 or pos < best):
            best, size = pos, len(ft)
    return best, size


def _source_index(window: str, folded: str, pos: int, size: int, tokens: list[str]) -> int:
    """Index in `window` of the match found at `pos` of `fold(window)`.

    Folding can change lengths (decomposition, lower-casing), so map back through a small
    region around the proportional estimate instead of a per-character map of everything.
    """
    if window.isascii():
        return pos
    guess = pos * len(window) // max(len(folded), 1)
    lo = max(0, guess - 2000)
    region = window[lo : guess + 2000 + size]
    sub_folded, sub_idx = folded_with_map(region)
    sub_pos, _ = first_match(sub_folded, tokens)
    if sub_pos >= 0:
        return lo + sub_idx[sub_pos]
    _, full_idx = folded_with_map(window)  # rare: the estimate was far off
    return full_idx[pos] if pos < len(full_idx) else 0


def snippet(text: str, tokens: list[str], width: int = SNIPPET_CHARS) -> str:
    """A plain-text window of `text` around the first match of any token."""
    window = text[:200_000]
    folded = fold(window)
    best, size = first_match(folded, tokens)
    start = _source_index(window, folded, best, size, tokens) if best >= 0 else 0
    begin = max(0, start - width // 3)
    piece = _SPACE.sub(" ", window[begin : begin + width * 2]).strip()
    prefix = "…" if begin > 0 else ""
    budget = width - len(prefix)
    if len(piece) > budget:
        piece = piece[: budget - 1].rstrip() + "…"
    return prefix + piece
