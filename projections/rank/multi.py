"""Exact ranking of an AND query of several common words from their champion lists.

FTS5's bm25 of a query of phrases t_1..t_m (each one word) in a document d of D tokens is
-sum_i idf_i * g(f_i, D) (`projections.rank.champions`); the ranking orders by s = bm25 x
w(d), best (most negative) first, ties newest first. With v_i = w * g(f_i, D),
-s = sum_i idf_i * v_i, and a document absent from word i's champion list has
v_i <= T_i = tau_i * max(1, avgdl_now / avgdl_list) (the one-word certificate's bound). So
(Fagin's threshold algorithm):

- every match that is in no list of the query's words (and neither new nor changed since
  the lists' watermark `wm`) has -s <= U = sum_i idf_i * T_i;
- the candidates are the union of the words' lists (minus changed documents) plus the new
  and changed documents; each is scored exactly — from the lists when it is in all of them,
  else from its text tokenized by FTS5 itself (`fts_tokens.frequencies`) — after an upper bound
  (T_i for the words whose list lacks it) shows it can beat U at all;
- hits are taken from the candidates only while they beat U strictly (`rank.certify`), so
  the answer is the full ranking's, or None and the caller ranks every match.

With deep lists (projections.rank.deep) the lists are walked best first (Fagin's TA bound);
with their cross columns a member's other f are read, not tokenized, and entries lacking a
query word are never visited.

With arrays (`use_arrays`: long-lived processes, which pay numpy's import once) and every
word's deep list crossed, the walk is not taken: every entry of every list is scored at
once from its f, D and weight (`bm25.tf` on arrays: the same formula, the same operation
order, so the same doubles), and the scored are released to `accept` best first in
growing batches, the best of the held ones bounding the rest; entries with an f a cross
column does not keep and the adds are visited one by one as in the walk.

Promises: scores are FTS5's formula in its operation order (bit-identical doubles); idf
needs each word's exact document count now: `rank_terms.df` is the count as of `wm`
(build/refresh keep it so) plus the new and changed documents' hits minus the hits of their
texts as of `wm` (`rank_was`, filled by the rank_dirty triggers). Files without `rank_was`
(made before it), words without a list, tokens that are not one indexed term, more than
`champions.FRESH_MAX` new/changed documents: None (full ranking). Read-only on the query side.
"""

from __future__ import annotations

import bisect
import heapq
import math
import operator
import re
import sqlite3
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from projections.cancel import check as stop_point
from projections.rank import bm25, champions, deep
from projections.rank import tokens as fts_tokens

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MAX_TOKENIZE = 1_000  # candidates a query tokenizes at most; beyond: rank every match
MAX_VISITS = 20_000  # list members a query bounds one by one at most; beyond: the same
MAX_VISITS_CROSSED = 100_000  # ... when the words' deep lists carry each other's f
FULL_BELOW = 5_000  # fewer matches expected (words independent): ranking them all is cheaper
PER_MATCH = 32  # expected matches per candidate a query may tokenize (ranking one is ~30x cheaper)

ARRAYS = False  # crossed deep lists scored as arrays (`use_arrays`), not walked one by one
RELEASE = 64  # scored entries of the arrays handed to the walk first (doubling)

Accept = Callable[[list[tuple[float, int]], float], list[tuple[Any, ...]] | None]


def _score(fs: list[int], dl: int, w: float, idfs: list[float], avgdl: float) -> float:
    """-s: FTS5's bm25 sum in its phrase order, times the weight as SQL does."""
    score = 0.0
    for f, i in zip(fs, idfs, strict=True):
        score += i * bm25.tf(float(f), float(dl), avgdl)
    return -((-1.0 * score) * w)


def use_arrays() -> None:
    """Score crossed deep lists as arrays from now on, in this process (numpy imported
    now: ~70-100 ms once, more than a one-shot command's whole walk; `agentlog browse`'s
    search thread calls it at start, `mcp` and `serve` after an answer:
    `cli.services.search.many_searches_soon`)."""
    global ARRAYS
    import numpy  # noqa: F401

    ARRAYS = True


def search(
    con: sqlite3.Connection, tokens: list[str], accept: Accept,
    text_of: fts_tokens.TextOf = fts_tokens.texts_of,
) -> list[tuple[Any, ...]] | None:
    """The hits `accept(scored, threshold)` makes of the certified candidates, or None when
    the lists cannot answer (the caller ranks every match). `scored` is best first as
    (-s, rowid); every match not in it has -s <= threshold; `accept` returns None when it
    needs more (fewer hits beat the threshold than it wants after filters and dedupe).
    The threshold falls as the lists are walked (documents in some of the lists get an
    upper bound from the others' bounds) and as the best-bounded of them are tokenized
    (growing batches), until `accept` is satisfied or it is U."""
    st = _prepare(con, tokens, text_of)
    if st is None:
        return None
    done = 0
    batch = 50
    tried = -1
    while True:
        stop_point(con)  # a caller's Cancel stops the walk here (not SQLite's interrupt)
        threshold = st.threshold()
        n = bisect.bisect_left(st.scored, (-threshold, -math.inf))
        if n > tried:  # (accept fetches rows: ask again only when more are certain)
            hits = accept([(-s, -r) for s, r in st.scored[:n]], threshold)
            if hits is not None:
                return hits
            tried = n
        if threshold <= st.bound:
            return None
        if st.holding() and st.held_next() >= max(st.walk_bound, st.best_unsure()):
            st.release()
            continue
        if st.walk_bound >= st.best_unsure():
            if st.visits > st.max_visits:  # ranking every match is likely cheaper
                return None
            st.walk()
            continue
        if done + batch > st.budget:  # ranking every match is likely cheaper
            return None
        chunk = st.pop_unsure(batch, max(st.bound, st.walk_bound))
        done += len(chunk)
        st.tokenized = done
        batch *= 2
        docs = text_of(con, chunk)
        freq, sizes = fts_tokens.counts(((r, t) for r, t, _, _ in docs), st.words)
        for r, _, role, kind in docs:
            fs = [freq.get((t, r), 0) for t in st.phrases]
            if all(fs):
                st.add(_score(fs, sizes[r], bm25.weight(role, kind), st.idfs, st.a_now), r)


class Columns:
    """A crossed deep list's entries holding every query word, as arrays in walk order:
    docs, each query word's f (the list's own and crossed), D, weights, and whether every
    crossed f is kept (below `deep.UNKNOWN`). (A plain class: a NamedTuple would compile
    its annotations when this module loads, on the +1's path.)"""

    __slots__ = ("dl", "docs", "f", "known", "w")

    def __init__(self, docs: NDArray[np.int64], f: dict[str, NDArray[np.float64]],
                 dl: NDArray[np.float64], w: NDArray[np.float64],
                 known: NDArray[np.bool_]) -> None:
        self.docs, self.f, self.dl, self.w, self.known = docs, f, dl, w, known


_ADDED = (0, 0, 0.0, -1)  # (f, D, w, entry) of no entry of the list


class _List:
    """One word's list as the query sees it: members (doc -> (f, D, w)), the order to walk
    them in (best first at `a_ref`), and T, the bound of every other document's v."""

    def __init__(self, top: float, a_ref: float, a_now: float) -> None:
        self.top = top
        self.ratio = max(1.0, a_now / a_ref) * (1 + champions.MARGIN)
        self.a_ref = a_ref
        # (f, D, w, entry): entry is the deep list's index (its cross columns' too), 0 for
        # a champion, -1 for an add (rank_deep_add: not in the walk order's bound)
        self.members: dict[int, tuple[int, int, float, int]] = {}
        self.cross: dict[str, bytes] = {}  # other word -> its f per entry (rank_deep)
        self.order: list[int] = []  # members in walk order (best first at a_ref) ...
        self.extra: list[int] = []  # ... and the members not in it (visited first)
        self.at = 0
        self.columns: Columns | None = None  # the order's entries as arrays (ARRAYS)
        self.dropped: set[int] = set()  # docs whose blob entry is no member now (columns)

    def head(self) -> float:
        """A bound of v (now) of every member from the walk's position on. Only the
        list's own entries bound what follows them: a member that replaced its stale
        entry (an add: entry -1) may be worth less now than the entries after it."""
        while self.at < len(self.order) and self.members.get(
                self.order[self.at], _ADDED)[3] < 0:
            self.at += 1
        if self.at >= len(self.order):
            return 0.0
        f, dl, w, _ = self.members[self.order[self.at]]
        return w * bm25.tf(float(f), float(dl), self.a_ref) * self.ratio


class _State:
    def __init__(self, lists: dict[str, _List], words: list[str], phrases: list[str],
                 idfs: list[float], a_now: float, bound: float, budget: int) -> None:
        self.lists, self.words, self.phrases = lists, words, phrases
        self.idfs, self.a_now, self.bound, self.budget = idfs, a_now, bound, budget
        self.weight_of = {t: sum(i for i, p in zip(idfs, phrases, strict=True) if p == t)
                          for t in words}
        self.scored: list[tuple[float, int]] = []  # (s, -rowid) of the scored: best first
        self.unsure: list[tuple[float, int]] = []  # heap of (-upper bound, -doc)
        self.seen: set[int] = set()
        self.walk_bound = 0.0
        self.visits = self.tokenized = 0
        self.max_visits = MAX_VISITS
        # (-s, docs) of the entries scored as arrays and not released yet, in no order
        self.held: tuple[NDArray[np.float64], NDArray[np.int64]] | None = None
        self.release_n = RELEASE

    def add(self, score: float, d: int) -> None:
        bisect.insort(self.scored, (-score, -d))

    def visit(self, d: int) -> None:
        """Score `d` when every word's f in it is known — from the lists holding it, or
        from a deep list's cross columns — else queue its upper bound (T_j for the words
        whose f is unknown); a document a cross column shows lacks a word is no match."""
        if d in self.seen:
            return
        self.seen.add(d)
        self.visits += 1
        known: dict[str, int] = {}
        got = None
        crossing = []
        for t, li in self.lists.items():
            hit = li.members.get(d)
            if hit is not None:
                known[t] = hit[0]
                got = hit
                if hit[3] >= 0 and li.cross:
                    crossing.append((li.cross, hit[3]))
        if got is None:
            return
        for cross, i in crossing:
            for u, column in cross.items():
                if u not in known:
                    f = column[i]
                    if f == 0:
                        return  # it lacks word u: not a match
                    if f < deep.UNKNOWN:
                        known[u] = f
        _, dl, w, _ = got
        if len(known) == len(self.lists):
            self.add(_score([known[t] for t in self.phrases], dl, w, self.idfs, self.a_now), d)
            return
        upper = 0.0
        for t, li in self.lists.items():
            have = known.get(t)
            if have is None:
                upper += self.weight_of[t] * li.top
            else:
                upper += self.weight_of[t] * w * bm25.tf(float(have), float(dl), self.a_now)
        upper = upper * (1 + champions.MARGIN) + self.bound * champions.MARGIN
        if upper > self.bound:  # it might beat U: its exact score decides
            heapq.heappush(self.unsure, (-upper, -d))

    def update_walk(self) -> None:
        """Every document not visited yet (in any list) has -s <= walk_bound."""
        if all(li.head() == 0.0 for li in self.lists.values()):
            self.walk_bound = float("-inf")  # every member visited
            return
        w = sum(self.weight_of[t] * max(li.top, li.head()) for t, li in self.lists.items())
        self.walk_bound = w * (1 + champions.MARGIN) + self.bound * champions.MARGIN

    def walk(self, step: int = 256) -> None:
        """Visit the next `step` members of the list whose head keeps the bound highest,
        among the lists not walked to their end (a list walked to its end but chosen again
        would stop the walk for good: its head, 0, can outrank another list's head that
        has fallen below that list's T)."""
        live = []
        for u, lu in self.lists.items():
            lu.head()  # (moves past the adds at the walk's position)
            if lu.at < len(lu.order):
                live.append(u)
        if not live:
            self.update_walk()
            return
        t = max(live, key=lambda u: self.weight_of[u] * (
            self.lists[u].head() - self.lists[u].top))
        li = self.lists[t]
        end = min(len(li.order), li.at + step)
        for d in li.order[li.at : end]:
            if d in li.members:
                self.visit(d)
        li.at = end
        self.update_walk()

    def best_unsure(self) -> float:
        return -self.unsure[0][0] if self.unsure else float("-inf")

    def holding(self) -> bool:
        return self.held is not None and len(self.held[0]) > 0

    def held_next(self) -> float:
        """Every scored entry not released yet has -s <= this."""
        if self.held is None or not len(self.held[0]):
            return float("-inf")
        return -float(self.held[0].min())

    def release(self) -> None:
        """Hand the best `release_n` of the held (and any tied with the last of them) to
        `scored`; the next batch twice as large. A partition, not a sort of them all: a
        query mostly needs the first batch or two."""
        import numpy as np

        assert self.held is not None
        keys, docs = self.held
        if self.release_n < len(keys):
            cut = np.partition(keys, self.release_n - 1)[self.release_n - 1]
            out = keys <= cut  # (an entry of several lists has one key: all on one side)
            self.held = (keys[~out], docs[~out])
            keys, docs = keys[out], docs[out]
        else:
            self.held = None
        for key, d in set(zip(keys.tolist(), docs.tolist(), strict=True)):
            bisect.insort(self.scored, (key, -d))
        self.release_n *= 2

    def score_all(self, wm: int) -> None:
        """Score every entry of the lists' columns at once (every list is crossed) and
        hold them; the few whose crossed f is not kept are visited. (Their lists have no
        walk order: nothing is left to walk.)"""
        import numpy as np

        keys, docs, unknown = [], [], []
        for li in self.lists.values():
            c = li.columns
            assert c is not None
            live = c.docs <= wm
            if li.dropped:  # (a table: the dropped are few, the entries 20,000)
                live &= ~np.isin(c.docs, np.fromiter(li.dropped, np.int64, len(li.dropped)),
                                 kind="table")
            unknown.extend(c.docs[live & ~c.known].tolist())
            ok = live & c.known
            dl = c.dl[ok]
            total: NDArray[np.float64] | float = 0.0
            for t, i in zip(self.phrases, self.idfs, strict=True):
                total = total + i * bm25.tf(c.f[t][ok], dl, self.a_now)
            keys.append((-1.0 * total) * c.w[ok])  # -(-s): `_score`'s operations
            docs.append(c.docs[ok])
        self.held = (np.concatenate(keys), np.concatenate(docs))
        # the documents a visit may meet (members: entries a column does not fully know,
        # adds) are seen if scored here: visits never score them again
        met = {d for li in self.lists.values() for d in li.members}
        if met:
            held = self.held[1]
            self.seen.update(held[np.isin(held, np.fromiter(met, np.int64, len(met)),
                                          kind="table")].tolist())
        for d in unknown:
            self.visit(d)

    def threshold(self) -> float:
        return max(self.bound, self.walk_bound, self.best_unsure(), self.held_next())

    def pop_unsure(self, n: int, floor: float) -> list[int]:
        out: list[int] = []
        while self.unsure and len(out) < n and -self.unsure[0][0] > floor:
            out.append(-heapq.heappop(self.unsure)[1])
        return out


def _prepare(con: sqlite3.Connection, tokens: list[str],
             text_of: fts_tokens.TextOf) -> _State | None:
    """The query's lists, candidates and bounds, or None when the lists cannot answer."""
    terms = [fts_tokens.index_term(t) for t in tokens]
    if len(terms) < 2 or not champions.has_lists(con) or not fts_tokens.has_was(con):
        return None
    words = sorted({t for t in terms if t is not None})
    if len(words) < len(set(terms)):  # a token that is not one indexed term
        return None
    phrases = [t for t in terms if t is not None]
    marks = ",".join("?" * len(words))
    rows = {str(t): (float(tau), float(a), int(df)) for t, tau, a, df in con.execute(
        f"SELECT term, tau, avgdl, df FROM rank_terms WHERE term IN ({marks})"
        " AND tau IS NOT NULL", words)}
    meta = con.execute("SELECT wm FROM rank_meta WHERE id = 1").fetchone()
    if len(rows) < len(words) or meta is None:
        return None
    wm = int(meta[0])
    pending = int(con.execute(
        "SELECT count(*) FROM (SELECT 1 FROM documents WHERE rowid > ? LIMIT ?)",
        (wm, champions.FRESH_MAX + 1)).fetchone()[0])
    dirty = {int(r[0]) for r in con.execute("SELECT doc FROM rank_dirty")}
    if pending + len(dirty) > champions.FRESH_MAX:
        return None
    nrow, ntok = fts_tokens.totals(con)
    if not nrow:
        return None
    a_now = ntok / nrow
    expect = float(nrow)
    for _, _, df in rows.values():
        expect *= df / nrow
    crossed = deep.crossed(con, words)
    if expect < FULL_BELOW and not crossed:  # (df as of wm: close enough to decide)
        return None
    fresh = fts_tokens.fresh_docs(con, wm)
    docs = text_of(con, fresh) if fresh else []
    freq, sizes = fts_tokens.counts(((r, t) for r, t, _, _ in docs), words)
    now = Counter(t for t, _ in freq)
    gone = fts_tokens.was_hits(con, wm, words)
    hits = {t: df + now[t] - gone[t] for t, (_, _, df) in rows.items()}
    idf = {t: bm25.idf(nrow, n) for t, n in hits.items()}
    idfs = [idf[t] for t in phrases]
    skip = dirty | set(fresh)
    stop_point(con)
    lists = _lists(con, words, rows, wm, skip, a_now)
    stop_point(con)
    bound = sum(i * lists[t].top for i, t in zip(idfs, phrases, strict=True)) * (
        1 + champions.MARGIN)
    st = _State(lists, words, phrases, idfs, a_now, bound,
                min(MAX_TOKENIZE, int(expect / PER_MATCH)))
    st.max_visits = MAX_VISITS_CROSSED if crossed else MAX_VISITS
    for r, _, role, kind in docs:
        fs = [freq.get((t, r), 0) for t in phrases]
        if all(fs):
            st.add(_score(fs, sizes[r], bm25.weight(role, kind), idfs, a_now), r)
    st.seen.update(skip)
    if all(li.columns is not None for li in lists.values()):
        st.score_all(wm)  # (ARRAYS and every list crossed)
    first, *rest = sorted(lists.values(), key=lambda li: len(li.members))
    for d in set(first.members).intersection(*(li.members.keys() for li in rest)):
        st.visit(d)  # in every list: scored from them
    for li in lists.values():  # members outside the walk order (deep lists' adds)
        for d in li.extra:
            if d in li.members:
                st.visit(d)
    st.update_walk()
    return st


_NONZERO = bytes([0] + [1] * 255)
_ONE = re.compile(b"\x01")


def _all_nonzero(columns: list[bytes], n: int) -> list[int]:
    """The entries whose byte is nonzero in every column (C-speed: one big integer each)."""
    acc = -1
    for column in columns:
        acc &= int.from_bytes(column.translate(_NONZERO), "big")
    return [m.start() for m in _ONE.finditer(acc.to_bytes(n, "big"))]


def _gather(values: Sequence[Any], keep: Sequence[int]) -> list[Any]:
    """values[i] for i in keep, at C speed."""
    if isinstance(values, deep.Weights):
        return list(map(values.kinds.__getitem__, _gather(values.codes, keep)))
    if isinstance(keep, range) and keep.step == 1:
        return list(values[keep.start : keep.stop])
    if len(keep) == 1:
        return [values[keep[0]]]
    return list(operator.itemgetter(*keep)(values)) if keep else []


Base = tuple[float, dict[str, bytes], list[int], dict[int, tuple[int, int, float, int]]]
BASES_KEPT = 6  # deep lists a process keeps decoded (~3.5 MB each at 20,000 entries)
_bases: OrderedDict[tuple[str, bytes, tuple[tuple[str, bytes], ...], tuple[str, ...]], Base] = (
    OrderedDict())
_bases_lock = threading.Lock()


def _deep_base(t: str, words: list[str], blob: bytes, stored: dict[str, bytes]) -> Base:
    """`t`'s deep list as a query of `words` walks it: (the blob's avgdl, the cross
    columns, the walk order, members as (f, D, w, entry)), before this query's fresh,
    stale, added and skipped documents. Decoded once per process for the same stored
    blob and columns (keyed by their bytes, so a list made again or a column added is a
    new entry): typing one query after another re-reads the rows but no longer decodes
    and gathers ~20,000 entries a word (~10 ms each on the 1 GB home). Read only."""
    key = (t, blob, tuple(sorted(stored.items())),
           tuple(sorted(set(words))))  # (which entries are walked depends on the words)
    with _bases_lock:
        got = _bases.get(key)
        if got is not None:
            _bases.move_to_end(key)
            return got
    a_blob, docs, fs, dls, ws, cross = deep.decode(blob, stored)
    others = [cross[u] for u in words if u != t and u in cross]
    if others and len(others) == len(words) - 1:  # only entries with every word
        keep: Sequence[int] = _all_nonzero(others, len(docs))
    else:
        keep = range(len(docs))
    order = _gather(docs, keep)
    members = dict(zip(order, zip(_gather(fs, keep), _gather(dls, keep), _gather(ws, keep),
                                  keep, strict=True), strict=True))
    got = (a_blob, cross, order, members)
    with _bases_lock:
        _bases[key] = got
        while len(_bases) > BASES_KEPT:
            _bases.popitem(last=False)
    return got


def _deep_columns(t: str, words: list[str], blob: bytes, stored: dict[str, bytes]
                  ) -> tuple[float, dict[str, bytes], Columns,
                             dict[int, tuple[int, int, float, int]]] | None:
    """`t`'s crossed deep list as arrays (ARRAYS): (the blob's avgdl, the cross columns,
    the entries holding every word of `words` as `Columns`, members as (f, D, w, entry)
    of only the entries a column does not know every f of: the ones `score_all` visits).
    None when a column is missing or of another length than the blob. Decoded at each
    query (~2-3 ms a word on the 1 GB home). Read only."""
    import numpy as np

    a_blob, docs, fs, dls, ws, cross = deep.decode(blob, stored)
    if any(u != t and u not in cross for u in words):
        return None
    n = len(docs)
    f: dict[str, NDArray[np.float64]] = {}
    raw = {u: np.frombuffer(cross[u], dtype=np.uint8) for u in words if u != t}
    keep = np.ones(n, dtype=bool)
    for column in raw.values():
        keep &= column != 0  # the entries lacking a word are no match
    known = np.ones(int(keep.sum()), dtype=bool)
    for u, column in raw.items():
        kept = column[keep]
        known &= kept < deep.UNKNOWN
        f[u] = kept.astype(np.float64)
    f[t] = np.frombuffer(fs, dtype=np.int64)[keep].astype(np.float64)
    weights = np.asarray(ws.kinds, dtype=np.float64)[np.frombuffer(ws.codes, np.uint8)[keep]]
    entry = np.flatnonzero(keep)
    columns = Columns(np.frombuffer(docs, dtype=np.int64)[keep], f,
                      np.frombuffer(dls, dtype=np.int64)[keep].astype(np.float64), weights,
                      known)
    members = {}
    for i in entry[~known].tolist():
        members[docs[i]] = (fs[i], dls[i], ws[i], i)
    return a_blob, cross, columns, members


def _lists(con: sqlite3.Connection, words: list[str],
           rows: dict[str, tuple[float, float, int]], wm: int, skip: set[int],
           a_now: float) -> dict[str, _List]:
    """Each word's deep list when it has one, else its champion list; with ARRAYS and
    every word's deep list crossed, their `Columns` (no walk order then)."""
    loaded = deep.read(con, words)
    arrayed: dict[str, tuple[float, dict[str, bytes], Columns,
                             dict[int, tuple[int, int, float, int]]]] = {}
    if ARRAYS and all(t in loaded for t in words):
        for t in words:
            _, _, blob, _, _, stored = loaded[t]
            got = _deep_columns(t, words, blob, stored)
            if got is None:
                arrayed = {}
                break
            arrayed[t] = got
    out = {}
    for t in words:
        stop_point(con)
        if t in loaded:
            tau, tavgdl, blob, stale, adds, stored = loaded[t]
            li_columns = None
            if arrayed:
                a_blob, cross, li_columns, base = arrayed[t]
                order: list[int] = []
            else:
                a_blob, cross, order, base = _deep_base(t, words, blob, stored)
            li = _List(tau * max(1.0, a_now / tavgdl) * (1 + champions.MARGIN), a_blob, a_now)
            li.cross, li.order, li.columns = cross, order, li_columns
            members = dict(base)
            for d in [d for d in members if d > wm]:  # (made after wm: those are fresh)
                del members[d]
            for d in stale:
                members.pop(d, None)
            for d, f, dl, w in adds:
                if d <= wm:
                    members[d] = (f, dl, w, -1)
                    li.extra.append(d)
            if arrayed:  # (the blob's entries that are no members as they are)
                li.dropped = stale | {d for d, _, _, _ in adds} | skip
        else:
            tau, a_ref, _ = rows[t]
            li = _List(tau * max(1.0, a_now / a_ref) * (1 + champions.MARGIN), a_ref, a_now)
            members = {int(d): (int(f), int(dl), float(w), 0) for d, f, dl, w in con.execute(
                "SELECT doc, f, dl, w FROM rank_champions WHERE term = ? AND doc <= ?",
                (t, wm))}
            li.order = sorted(members, key=lambda d: (
                -members[d][2] * bm25.tf(float(members[d][0]), float(members[d][1]), a_ref),
                -d))
        for d in skip:
            members.pop(d, None)
        li.members = members
        out[t] = li
    return out
