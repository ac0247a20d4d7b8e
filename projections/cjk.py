"""CJK bigrams: a side index so 2-character CJK substrings match.

unicode61 keeps a run of CJK characters (no spaces between words) as one token, so the
main FTS index cannot find "中文" inside "我们使用中文搜索". For every document that
contains CJK text we also index the overlapping bigrams of each CJK run ("中文 文搜 搜索");
a CJK query run of n >= 2 characters becomes the phrase of its n-1 bigrams, which matches
exactly where the run occurs as a substring. Single CJK characters are matched by literal
substring on the candidates (see `projections.search`).
"""

from __future__ import annotations

import re

_CJK_CLASS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002ffff"  # CJK extensions B..
)
_compiled: list[re.Pattern[str]] = []


def _run_re() -> re.Pattern[str]:
    if not _compiled:  # compiled on first use: it costs milliseconds at import time
        _compiled.append(re.compile(f"[{_CJK_CLASS}]+"))
    return _compiled[0]


def has_cjk(text: str) -> bool:
    # ASCII first: the class's compiled pattern costs milliseconds, most queries never need it
    return not text.isascii() and _run_re().search(text) is not None


def runs(text: str) -> list[str]:
    """The maximal CJK runs of `text`, in order."""
    return _run_re().findall(text)


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of one run; a 1-character run is its own gram."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def grams_text(text: str, cap: int = 200_000) -> str:
    """The space-separated grams of every CJK run in `text` (what the side index holds)."""
    out: list[str] = []
    total = 0
    for run in runs(text):
        for g in bigrams(run):
            out.append(g)
            total += 3
            if total >= cap:
                return " ".join(out)
    return " ".join(out)


def split_token(token: str) -> tuple[list[str], list[str]]:
    """(CJK runs, non-CJK parts) of one query token."""
    cjk = runs(token)
    rest = [p for p in _run_re().split(token) if p]
    return cjk, rest
