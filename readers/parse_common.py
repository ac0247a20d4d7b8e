"""Small pure helpers shared by the per-agent parsers.

Promises: nothing here raises on any input. JSON decoding returns `None` for bytes that are
not a JSON object; every string that leaves a parser goes through `clean` (lone surrogates
replaced, so the text always encodes as UTF-8; a Record's strings are first checked all at
once by `checked`, which `make_record` calls, and cleaned only if one fails) and text is
capped (`cap`) so one record never carries more than `MAX_TEXT` characters. Inline base64
payloads are replaced by short placeholders (`scrub`), because they are bytes, not words, and
the raw log keeps them anyway.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import datetime
from typing import Any

import msgspec

from eventlog.digest import blake2b
from readers.records import ParseResult, Record

MAX_TEXT = 64 * 1024
MAX_TOOL_INPUT = 16 * 1024
MAX_TITLE = 512

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
# `make_record`'s check that every string encodes as UTF-8 (the encoding itself is dropped)
_check_into = msgspec.msgpack.Encoder().encode_into
_check_buffer = bytearray()

# data: URLs and long unbroken base64 runs: indexing them only bloats the index.
_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?(;[\w=.+-]+)*;base64,[A-Za-z0-9+/=\s]{16,}")
# A run is only tried where it starts (the lookbehind): without it every position inside a
# long run shorter than 2,000 was scanned again to its end (quadratic in the run's length).
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{2000,}={0,2}")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def load_json(data: bytes) -> Any:
    """Decode JSON; `None` when the bytes are not valid JSON (any encoding damage included)."""
    try:
        return _decoder.decode(data)
    except RecursionError:
        return None  # absurdly deep nesting is not a transcript record
    except (msgspec.DecodeError, ValueError, TypeError):
        pass
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None


def load_object(data: bytes) -> dict[str, Any] | None:
    try:  # `load_json`'s first step, inlined (once per line of every transcript)
        value = _decoder.decode(data)
    except (RecursionError, msgspec.DecodeError, ValueError, TypeError):
        value = load_json(data)  # fails the same way again, and takes its way out
    return value if isinstance(value, dict) else None


def row_object(agent: str, data: bytes) -> tuple[ParseResult, dict[str, Any] | None]:
    """A database row's JSON for `parse_row`: the result to fill and the row object, or `None`
    with the row counted as `<agent>:row-undecodable` in that result."""
    result = ParseResult()
    row = load_object(data)
    if row is None:
        result.count_unknown(f"{agent}:row-undecodable")
    return result, row


def load_text_json(value: Any) -> Any:
    """A column that holds JSON text (or already-decoded JSON)."""
    if isinstance(value, str):
        return load_json(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return load_json(value)
    return value


def clean(text: str) -> str:
    """The same text, guaranteed to encode as UTF-8 (lone surrogates become U+FFFD)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def scrub(text: str) -> str:
    """Replace base64 payloads and terminal escapes by placeholders."""
    if "base64," in text:
        text = _DATA_URL.sub(lambda m: f"[{(m.group(1) or 'data').split('/')[0]}]", text)
    if len(text) >= 2000 and _may_hold_run(text):
        text = _BASE64_RUN.sub("[binary]", text)
    if "\x1b" in text and "\x1b[" in text:  # one memchr for the common case: no ESC at all
        text = _ANSI.sub("", text)
    return text


def _may_hold_run(text: str) -> bool:
    """Whether `text` may hold a `_BASE64_RUN` (2,000 base64 characters in a row), decided in
    C, ~10× cheaper than the regex's scan. First on every 10th character: a run of 2,000
    holds 200 of them in a row (any 2,000 consecutive positions hold exactly 200 multiples
    of 10), so a sample without 200 base64 characters in a row rules a run out, for any
    text (a non-ASCII character is "?" there, which is not one); most text ends there. Then,
    for ASCII text, exactly: base64 characters → "a", the rest → " ", a search for 2,000
    "a"s; other text: the regex decides."""
    sample = text[::10].encode("ascii", "replace").translate(_RUN_TABLE)
    if _SAMPLE_MARK not in sample:
        return False
    if not text.isascii():
        return True
    return _RUN_MARK in text.encode("ascii").translate(_RUN_TABLE)


_RUN_TABLE = bytes(
    ord("a") if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "+/") else ord(" ")
    for c in range(256)
)
_RUN_MARK = b"a" * 2000
_SAMPLE_MARK = b"a" * 200


def cap(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + " …[truncated]"


def text_of(value: Any, limit: int = MAX_TEXT) -> str:
    """Clean, scrubbed, capped text of a string (anything else gives "")."""
    if not isinstance(value, str) or not value:
        return ""
    # Scrub a bounded window: a 50 MB string must not cost a 50 MB regex pass.
    text = scrub(value[: limit * 4])
    if len(text) > limit:  # `cap`, inlined (once per text of every record)
        text = text[:limit] + " …[truncated]"
    return text if text.isascii() else clean(text)


def compact_json(value: Any, limit: int = MAX_TOOL_INPUT) -> str:
    """Compact JSON text of a value, scrubbed of base64 and capped."""
    if isinstance(value, str):
        return text_of(value, limit)
    try:
        raw = _encoder.encode(value).decode("utf-8", "replace")
    except (TypeError, ValueError, OverflowError):
        raw = json.dumps(value, ensure_ascii=False, default=str)
    return text_of(raw, limit)


def str_or_none(value: Any, limit: int = 1024) -> str | None:
    if isinstance(value, str) and value:
        value = value[:limit]
        return value if value.isascii() else clean(value)
    return None


def iso_ms(value: Any) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp or an epoch number (s or ms)."""
    if value.__class__ is not str:  # the common case first: an exact str
        if not isinstance(value, str):
            return _number_ms(value)
        value = str.__str__(value)  # a str subclass, read as the str it holds
    if not 10 <= len(value) <= 40:
        return None
    if value[-1] == "Z":  # the common shape: datetime reads the "Z" itself (3.11+)
        try:
            moment = _fromiso(value)
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            try:
                return int(moment.timestamp() * 1000)
            except (OverflowError, OSError, ValueError):
                return None
    return general_ms(value)


def _number_ms(value: Any) -> int | None:
    """`iso_ms` of anything but a str: an epoch number in seconds or milliseconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value <= 0 or value > 1e15:  # NaN, zero, absurd
        return None
    return int(value * 1000) if value < 1e11 else int(value)


_fromiso = datetime.fromisoformat


def general_ms(value: str) -> int | None:
    """Epoch ms of any ISO-8601 stamp with a zone (`datetime.fromisoformat`), else None:
    what `iso_ms` gives for every stamp (its "Z" shortcut only skips the rewrite to
    "+00:00", which `datetime.fromisoformat` reads the same since Python 3.11)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    try:
        return int(moment.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return None


def digest(*parts: str) -> str:
    """A short stable hash (hex) of text parts."""
    # the bytes hashed: each part followed by a NUL (one update of them all; the joined
    # text made in one copy: an empty last part gives the last NUL)
    text = "\x00".join((*parts, "")) if parts else "\x00"
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def make_record(**fields: Any) -> Record:
    """A Record whose string fields are all clean UTF-8."""
    return checked(Record(**fields))


def checked(record: Record) -> Record:
    """`record` with its string fields all clean UTF-8: itself when they are (the parsers'
    own per-record path builds the Record and asks this; `make_record` for the rest)."""
    try:  # one C pass: msgpack encodes every str of it as UTF-8, or fails on a surrogate
        _check_into(record, _check_buffer)
        return record
    except Exception:  # anything else: field by field
        pass
    fields = {name: getattr(record, name) for name in record.__struct_fields__}
    for key, value in fields.items():
        if value.__class__ is str:
            if not value.isascii():  # ASCII is always clean: skip the call
                fields[key] = clean(value)
        elif value is not None and isinstance(value, str):
            fields[key] = clean(value)
    return Record(**fields)


def join_lines(texts: list[str]) -> str:
    """`"\n".join(t for t in texts if t)`: the texts that are not empty, one a line (one text
    is returned as it is, without a generator)."""
    if len(texts) == 1:
        return texts[0]
    return "\n".join([t for t in texts if t])


def trim_map(mapping: dict[str, Any], limit: int) -> None:
    """Keep a state map bounded: drop the oldest half when it grows past `limit`."""
    if len(mapping) > limit:
        for key in list(mapping)[: len(mapping) // 2]:
            del mapping[key]


@functools.lru_cache(maxsize=1024)
def session_from_path(path: str) -> str | None:
    """The session UUID a path names: the last UUID in the file name, else in the folders
    (memoized: asked once per record of a rollout without `session_meta`)."""
    parts = path.split("/")
    for part in reversed(parts):
        found = _UUID.findall(part)
        if found:
            return str(found[-1]).lower()
    return None
