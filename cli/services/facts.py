"""Validation of broker facts given to `agentlog record` (JSON Lines), with pydantic.

Each line is one fact. The whole input is validated before anything is appended; every
bad line is reported with its number and reason. Fields not named here are kept in the
event's `extra`. Times are ISO-8601 with a timezone, or epoch milliseconds.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Annotated, Any, Literal

import msgspec
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)

from eventlog.events import (
    AliasBound,
    AnswerGiven,
    DecisionRevised,
    Event,
    MessageSent,
    QuestionAsked,
    RunStarted,
)

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_KEY_BYTES = 400
MAX_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
_check_encoder = msgspec.msgpack.Encoder()
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def parse_time(value: Any) -> int:
    """Epoch milliseconds from epoch ms (int or decimal string) or ISO-8601 with timezone."""
    if isinstance(value, bool):
        raise ValueError("expected epoch milliseconds or ISO-8601 with timezone")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int):
        if not 0 <= value <= MAX_EPOCH_MS:
            raise ValueError(f"epoch milliseconds must be in 0..{MAX_EPOCH_MS}, got {value}")
        return value
    if isinstance(value, str):
        s = value.strip()
        try:
            parsed = dt.datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
        except ValueError:
            raise ValueError(f"not ISO-8601 or epoch milliseconds: {value!r}") from None
        if parsed.tzinfo is None:
            raise ValueError(f"ISO-8601 time needs a timezone: {value!r}")
        ms = (parsed - _EPOCH) // dt.timedelta(milliseconds=1)  # exact, no float rounding
        if not 0 <= ms <= MAX_EPOCH_MS:
            raise ValueError(f"time before 1970 or after 9999: {value!r}")
        return ms
    if isinstance(value, float):
        raise ValueError(f"epoch milliseconds must be a whole number, got {value}")
    raise ValueError("expected epoch milliseconds or ISO-8601 with timezone")


Time = Annotated[int, BeforeValidator(parse_time)]
NonEmpty = Annotated[str, Field(min_length=1)]
MAX_DEPTH = 64  # nesting of one fact (objects and arrays); deeper is bad input


def _no_control(value: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("an id must not contain control characters")
    return value


# ids become search hit ids and links (`message:<id>`): printable text only
Ident = Annotated[str, Field(min_length=1), AfterValidator(_no_control)]


_DEEP = object()


def _too_deep(obj: Any) -> bool:
    stack = [(obj, 1)]
    while stack:
        cur, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(cur, dict):
            stack.extend((v, depth + 1) for v in cur.values())
        elif isinstance(cur, list):
            stack.extend((v, depth + 1) for v in cur)
    return False


class _Fact(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    def extras(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class MessageFact(_Fact):
    type: Literal["message"]
    id: Ident
    from_: NonEmpty = Field(alias="from")
    to: list[str]
    kind: Literal["message", "approval", "progress", "report"]
    body: str
    at: Time
    project: str | None = None
    session: str | None = None
    job: str | None = None
    thread: str | None = None


class QuestionFact(_Fact):
    type: Literal["question"]
    id: Ident
    from_: NonEmpty = Field(alias="from")
    body: str
    at: Time
    project: str | None = None


class AnswerFact(_Fact):
    type: Literal["answer"]
    question: Ident
    body: str
    by: NonEmpty
    at: Time


class DecisionFact(_Fact):
    type: Literal["decision"]
    topic: Ident
    revision: Annotated[int, Field(ge=0)]
    body: str
    author: NonEmpty
    at: Time


class RunFact(_Fact):
    type: Literal["run"]
    job: Ident
    run: Ident
    started_at: Time
    agent: str | None = None
    session: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class AliasFact(_Fact):
    type: Literal["alias"]
    alias: Ident
    session: Ident
    agent: NonEmpty
    at: Time


Fact = Annotated[
    MessageFact | QuestionFact | AnswerFact | DecisionFact | RunFact | AliasFact,
    Field(discriminator="type"),
]
_adapter: TypeAdapter[Any] = TypeAdapter(Fact)


def _key(*parts: str) -> bytes:
    raw = "\x1f".join(parts).encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_KEY_BYTES:
        return raw
    return parts[0].encode() + b"#" + hashlib.sha256(raw).hexdigest().encode()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def to_event(fact: Any) -> tuple[bytes, Event]:
    """The idempotency key and event of a validated fact."""
    x = fact.extras()
    if isinstance(fact, MessageFact):
        return _key("message", fact.id), MessageSent(
            id=fact.id, sender=fact.from_, to=fact.to, kind=fact.kind, body=fact.body,
            at=fact.at, project=fact.project, session=fact.session, job=fact.job,
            thread=fact.thread, extra=x,
        )
    if isinstance(fact, QuestionFact):
        return _key("question", fact.id), QuestionAsked(
            id=fact.id, sender=fact.from_, body=fact.body, at=fact.at, project=fact.project,
            extra=x,
        )
    if isinstance(fact, AnswerFact):
        return _key("answer", fact.question, fact.by, _sha(fact.body)), AnswerGiven(
            question=fact.question, body=fact.body, by=fact.by, at=fact.at, extra=x
        )
    if isinstance(fact, DecisionFact):
        return _key("decision", fact.topic, str(fact.revision)), DecisionRevised(
            topic=fact.topic, revision=fact.revision, body=fact.body, author=fact.author,
            at=fact.at, extra=x,
        )
    if isinstance(fact, RunFact):
        return _key("run", fact.run), RunStarted(
            job=fact.job, run=fact.run, started_at=fact.started_at, agent=fact.agent,
            session=fact.session, metadata=fact.metadata, extra=x,
        )
    assert isinstance(fact, AliasFact)
    return _key("alias", fact.alias, fact.session), AliasBound(
        alias=fact.alias, session=fact.session, agent=fact.agent, at=fact.at, extra=x
    )


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"] if not str(p).endswith("Fact"))
        loc = loc.replace("from_", "from")
        parts.append(f"{loc or 'line'}: {err['msg']}")
    return "; ".join(parts)


def parse_lines(data: bytes) -> tuple[list[tuple[bytes, Event]], list[dict[str, Any]]]:
    """Validate JSON Lines: (events, errors). Blank lines are ignored."""
    events: list[tuple[bytes, Event]] = []
    errors: list[dict[str, Any]] = []
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            errors.append({"line": lineno, "error": f"{len(line)} bytes exceeds the "
                           f"{MAX_LINE_BYTES // (1024 * 1024)} MiB limit of one fact"})
            continue
        if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
            line = line[3:]  # a UTF-8 byte order mark
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append({"line": lineno, "error": f"invalid UTF-8 at byte {exc.start}"})
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            msg = f"invalid JSON: {exc.msg} at column {exc.colno}"
            errors.append({"line": lineno, "error": msg})
            continue
        except RecursionError:
            obj = _DEEP
        if obj is _DEEP or _too_deep(obj):
            errors.append({"line": lineno, "error": f"nested deeper than {MAX_DEPTH} levels"})
            continue
        if not isinstance(obj, dict):
            errors.append({"line": lineno, "error": "expected a JSON object"})
            continue
        if obj.get("type") not in ("message", "question", "answer", "decision", "run", "alias"):
            errors.append({"line": lineno, "error": f"unknown or missing type {obj.get('type')!r}"
                           " (message, question, answer, decision, run, alias)"})
            continue
        try:
            fact = _adapter.validate_python(obj)
            key, event = to_event(fact)
            _check_encoder.encode(event)  # what the log will store must encode
            events.append((key, event))
        except ValidationError as exc:
            errors.append({"line": lineno, "error": _describe(exc)})
        except UnicodeEncodeError as exc:
            errors.append({"line": lineno, "error": f"invalid text: a string holds a lone "
                           f"surrogate ({exc.object[exc.start:exc.end]!a}), not UTF-8 text"})
        except OverflowError:
            errors.append({"line": lineno, "error": "a number does not fit in 64 bits"})
        except (msgspec.EncodeError, TypeError, ValueError) as exc:
            errors.append({"line": lineno, "error": f"cannot be stored: {exc}"})
    return events, errors
