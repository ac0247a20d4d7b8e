"""Secrets out of every projected text: text in, redacted text and what was found out.

Promises:
- `redact(text)` returns the text with every secret the detectors find replaced by a typed
  marker, `[redacted:<kind>]` (the words around it stay as they were, so they stay
  searchable), and the kinds found with their counts (None when nothing was found: the
  common case costs no allocation). Pure: no I/O, no clock; the same text and rules give the
  same answer in every process (the parse process of a rebuild, a catch-up, the team
  projector);
- the detectors are detect-secrets' plugins and the agents' own patterns
  (`projections.redact_rules`), plus the `config.json` rules a front end passes in
  (`configure`: `secrets.patterns`, name -> regex; `secrets.allow`, values never redacted,
  each an exact string or a regex the whole value matches);
- a cheap gate first: a built-in detector can only match a text holding one of `GATE`'s
  characters (a C-speed test); then one RE2 pass (`google-re2`'s `Set`) over the text finds
  which rules' hints it holds (`projections.redact_rules`), and only those rules' regexes run
  (Python's `re`, the detect-secrets semantics); the gated answer equals the ungated one
  (tests/test_secrets.py);
- `version()` names the detectors and the configured rules: history.db records it with the
  parser version (`projections.db.parser_version`), so a change of either is a projection
  change that catch-up turns into a rebuild.

Imports nothing heavy: the search path asks `version()`; the hints compile on first use, and
a rule's regex the first time its hint is found.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# 1: detect-secrets 1.5.0's plugins + the agents' patterns (projections/redact_rules.py)
# 2: without the keyword plugin; .env lines need an upper-case dotenv name
VERSION = 2
MARK = "[redacted:{}]"
# Every built-in rule's match holds one of these characters (so does every match of its
# hint; tests/test_secrets.py holds the gated answer equal to the plain one): a text with
# none of them holds no secret a built-in rule finds.
GATE = "ABGJP_-@=:\"'"

Found = dict[str, int]
_rules: dict[str, Any] = {"patterns": {}, "allow": []}
_active: list[Redactor] = []


class RulesError(ValueError):
    """A `secrets` rule of config.json that cannot be used (names the rule)."""


def configure(patterns: Mapping[str, str] | None = None,
              allow: Iterable[str] | None = None) -> None:
    """Use these extra patterns (kind -> regex) and allowlist from now on in this process;
    raises `RulesError` naming a rule that is not a valid regex."""
    pats = dict(patterns or {})
    allowed = list(allow or [])
    for name, pattern in pats.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", name):
            raise RulesError(f"secrets.patterns: {name!r} is not a name (letters, digits, "
                             "'-', '_', '.')")
        _compile(pattern, f"secrets.patterns.{name}")
    for value in allowed:
        if not isinstance(value, str):
            raise RulesError(f"secrets.allow: {value!r} is not a string")
    _rules.update(patterns=pats, allow=allowed)
    _active.clear()


def rules() -> dict[str, Any]:
    """The configured rules (JSON-ready: a rebuild's parse process gets them this way)."""
    return {"patterns": dict(_rules["patterns"]), "allow": list(_rules["allow"])}


def version() -> str:
    """The detectors' version, with a digest of the configured rules when there are any."""
    if not _rules["patterns"] and not _rules["allow"]:
        return str(VERSION)
    from eventlog.digest import sha256  # no OpenSSL for a +1 (eventlog/digest.py)

    blob = json.dumps(_rules, sort_keys=True, ensure_ascii=False).encode("utf-8", "replace")
    return f"{VERSION}.{sha256(blob).hexdigest()[:12]}"


def redactor() -> Redactor:
    """The redactor of the configured rules (made once per configuration)."""
    if not _active:
        _active.append(Redactor(_rules["patterns"], _rules["allow"]))
    return _active[0]


def redact(text: str) -> tuple[str, Found | None]:
    """`redactor().redact(text)`."""
    return redactor().redact(text)


def _compile(pattern: object, where: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise RulesError(f"{where}: {pattern!r} is not a string")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RulesError(f"{where}: {pattern!r} is not a valid regex ({exc})") from exc


# Python's IGNORECASE classes of the ASCII letters that have more than two members
# (tests/test_secrets.py checks them against every code point)
FOLD = {"i": "iI\u0130\u0131", "k": "kK\u212a", "s": "sS\u017f"}


def fold(hint: str) -> str:
    """An IGNORECASE rule's hint (plain words and punctuation) as RE2 matches it where
    Python's IGNORECASE would: each letter becomes the class of its cases."""
    out = []
    for c in hint:
        low = c.lower()
        if c.isascii() and c.isalpha():
            out.append(f"[{FOLD.get(low, low + low.upper())}]")
        else:
            out.append(c)
    return "".join(out)


def _hint_set(hints: Iterable[str]) -> Any:
    """One RE2 set of the hints (a hint's index is its rule's)."""
    import re2  # google-re2: C++, one pass for every hint

    options = re2.Options()
    options.max_mem = 64 << 20  # room for the DFA: a set whose DFA fails finds nothing
    found = re2.Set.SearchSet(options)
    for hint in hints:
        found.Add(hint)
    found.Compile()
    return found


_Check = Callable[[str], bool]


class Redactor:
    """The compiled rules: built-in (gated by their hints) and configured (always run)."""

    def __init__(self, patterns: Mapping[str, str] | None = None,
                 allow: Iterable[str] | None = None) -> None:
        from projections.redact_rules import AGENTS, LIBRARY

        # private keys first (their block holds lines other rules would cut), then the
        # agents' rules: where two rules find the same span, the more specific kind
        # (anthropic-key before the library's generic ones) names it
        keys = tuple(r for r in LIBRARY if r[0] == "private-key")
        rest = tuple(r for r in LIBRARY if r[0] != "private-key")
        self.rules = (*keys, *AGENTS, *rest)
        # the hints (IGNORECASE ones folded), their RE2 set (one pass for all) and each in
        # Python's re (the lines it matches in), compiled when first needed
        self.hints = [fold(hint) if flags & re.IGNORECASE else hint
                      for _, hint, _, flags, _ in self.rules]
        self._set: Any = None
        self._hint_res: dict[int, re.Pattern[str]] = {}
        self._regexes: dict[int, re.Pattern[str]] = {}
        self.extra = [(name, _compile(p, f"secrets.patterns.{name}"))
                      for name, p in (patterns or {}).items()]
        allowed = list(allow or [])
        self.allow_exact = frozenset(allowed)
        self.allow_re: list[re.Pattern[str]] = []
        for value in allowed:
            try:
                self.allow_re.append(re.compile(value))
            except re.error:
                pass  # an exact string only
        self.gate = tuple(GATE)

    def redact(self, text: str, *, gated: bool = True) -> tuple[str, Found | None]:
        """(text with every found secret replaced by its marker, kinds found -> counts)."""
        if gated and not self.extra:
            for c in self.gate:
                if c in text:
                    break
            else:
                return text, None
        spans = self.find(text, gated=gated)
        if not spans:
            return text, None
        out: list[str] = []
        found: Found = {}
        at = 0
        for start, end, kind in spans:
            out.append(text[at:start])
            out.append(MARK.format(kind))
            found[kind] = found.get(kind, 0) + 1
            at = end
        out.append(text[at:])
        return "".join(out), found

    def hinted(self, text: str) -> list[int]:
        """The rules whose hint the text holds (one RE2 pass), in order: the only ones that
        can match it."""
        if self._set is None:
            self._set = _hint_set(self.hints)
        try:
            hits = self._set.Match(text)
        except UnicodeEncodeError:  # a lone surrogate: RE2 takes UTF-8 only
            return list(range(len(self.rules)))
        return sorted(hits) if hits else []

    def regex(self, i: int) -> re.Pattern[str]:
        """Rule i's regex (compiled the first time it is needed)."""
        regex = self._regexes.get(i)
        if regex is None:
            _, _, pattern, flags, _ = self.rules[i]
            regex = self._regexes[i] = re.compile(pattern, flags)
        return regex

    def lines(self, i: int, text: str) -> list[tuple[int, int]]:
        """(start, end) of the lines of `text` rule i's hint matches in."""
        hint = self._hint_res.get(i)
        if hint is None:
            hint = self._hint_res[i] = re.compile(self.hints[i])
        out: list[tuple[int, int]] = []
        end = -1
        for m in hint.finditer(text):
            if m.start() > end:  # not on the line taken last
                end = text.find("\n", m.end())
                end = len(text) if end < 0 else end
                out.append((text.rfind("\n", 0, m.start()) + 1, end))
        return out

    def find(self, text: str, *, gated: bool = True) -> list[tuple[int, int, str]]:
        """The secrets' spans (start, end, kind), in order, none overlapping. Every rule
        finds what it finds line by line, as detect-secrets scans (a private key's block then
        grows over the lines of its key); gated, only on the lines its hint matches in."""
        taken: list[tuple[int, int, str]] = []
        for i in self.hinted(text) if gated else range(len(self.rules)):
            kind, _, _, _, group = self.rules[i]
            regex = self.regex(i)
            matches = [m for a, b in (self.lines(i, text) if gated else _lines(text))
                       for m in regex.finditer(text, a, b)]
            for m in matches:
                for start, end in _groups(m, group):
                    if not self._secret(kind, text[start:end]):
                        continue
                    if kind == "private-key":
                        start, end = _key_block(text, start, end)
                    elif kind == "jwt":  # the library's lazy match stops before the
                        tail = re.compile(_JWT_TAIL).match(text, end)  # signature: all of it
                        end = tail.end() if tail else end
                    _take(taken, start, end, kind)
        for name, regex in self.extra:
            for m in regex.finditer(text):
                start, end = m.span(1) if regex.groups else m.span()
                if end > start and not self._allowed(text[start:end]):
                    _take(taken, start, end, name)
        taken.sort()
        return taken

    def _allowed(self, value: str) -> bool:
        return value in self.allow_exact or any(r.fullmatch(value) for r in self.allow_re)

    def _secret(self, kind: str, value: str) -> bool:
        """Whether a match is a secret: not allowed, not a placeholder, and past the checks
        of its kind."""
        if not value or self._allowed(value):
            return False
        check = _CHECKS.get(kind)
        if check is not None and not check(value):
            return False
        return kind == "private-key" or not _placeholder(value)


def _groups(m: re.Match[str], group: int) -> Iterable[tuple[int, int]]:
    if group >= 0:
        span = m.span(group)
        return (span,) if span[0] >= 0 else ()
    # every non-empty group (RegexBasedDetector.analyze_string), else the whole match
    spans = [m.span(i) for i in range(1, (m.re.groups or 0) + 1) if m.span(i)[1] > m.span(i)[0]]
    return spans if spans else (m.span(),)


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line of `text` (split at "\\n")."""
    out = []
    a = 0
    for line in text.split("\n"):
        out.append((a, a + len(line)))
        a += len(line) + 1
    return out


# patterns compiled when first used (`re` keeps them): a +1 that finds nothing compiles none
_JWT_TAIL = r"[A-Za-z0-9\-_.+/=]*"

def _take(taken: list[tuple[int, int, str]], start: int, end: int, kind: str) -> None:
    """Add a span unless it overlaps one taken before (earlier rules win)."""
    for s, e, _ in taken:
        if start < e and s < end:
            return
    taken.append((start, end, kind))


_KEY_END = r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|---- END SSH2[^\n]*"
_KEY_LINES = r"(?:-----)?[^\n]*(?:\\n|\n)?(?:[ \t]*[A-Za-z0-9+/=:,\- ]*(?:\\n|\n))*"


def _key_block(text: str, start: int, end: int) -> tuple[int, int]:
    """A private key's marker -> the whole key: from the dashes before it to its END line,
    or, with none, to the end of the lines of key material after it."""
    while start > 0 and text[start - 1] == "-":
        start -= 1
    close = re.compile(_KEY_END).search(text, end, end + 100_000)
    if close is not None:
        return start, close.end()
    m = re.compile(_KEY_LINES).match(text, end)
    return start, (m.end() if m else end)


def _placeholder(value: str) -> bool:
    """A value that names a secret rather than holding one ($VAR, ${VAR}, <key>, {{x}},
    a run of one character, your-key-here)."""
    v = value.strip("'\"`")
    if not v or v[0] in "$<{%[(" or v.startswith(("process.env", "os.environ", "env.")):
        return True
    low = v.lower()
    if low in _WORDS or len(set(v)) <= 2:
        return True
    return any(w in low for w in ("your_", "your-", "xxxx", "****", "<", "...", "redacted"))


_WORDS = frozenset(("true", "false", "none", "null", "undefined", "changeme", "password",
                    "secret", "example", "placeholder", "required", "optional", "string"))


def _mixed(value: str) -> bool:
    """A random token: letters and digits both (a word or a name is not a key)."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def shannon_entropy(data: str, charset: str) -> float:
    """detect-secrets' `HighEntropyStringsPlugin.calculate_shannon_entropy`."""
    if not data:
        return 0
    entropy = 0.0
    for x in charset:
        p_x = float(data.count(x)) / len(data)
        if p_x > 0:
            entropy += - p_x * math.log(p_x, 2)
    return entropy


BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/\\-_="
HEX = "0123456789abcdefABCDEF"
_HEX_ONLY = r"[0-9a-fA-F]+"


def _high_entropy(value: str) -> bool:
    """Base64HighEntropyString's test (limit 4.5) of a value that is not hex (hashes and
    commit ids are not secrets), nor a digest tag (sha512-…), nor a path."""
    if re.fullmatch(_HEX_ONLY, value) or value.startswith(("sha1-", "sha256-", "sha384-",
                                                       "sha512-", "/")):
        return False
    return _mixed(value) and shannon_entropy(value, BASE64) > 4.5


def jwt_valid(token: str) -> bool:
    """detect-secrets' `JwtTokenDetector.is_formally_valid`."""
    import base64

    parts = token.split(".")
    for idx, part_str in enumerate(parts):
        try:
            part = part_str.encode("ascii")
            m = len(part) % 4
            if m == 1:
                raise TypeError("Incorrect padding")
            elif m == 2:
                part += b"=="
            elif m == 3:
                part += b"==="
            b64_decoded = base64.urlsafe_b64decode(part)
            if idx < 2:
                _ = json.loads(b64_decoded.decode("utf-8"))
        except (TypeError, ValueError, UnicodeDecodeError):
            return False
    return True


_CHECKS: dict[str, _Check] = {
    "jwt": jwt_valid,
    "openai-key": _mixed,
    "anthropic-key": _mixed,
    "authorization": lambda v: len(v) >= 8 and _mixed(v),
    "high-entropy": _high_entropy,
}
