"""`agentlog record`: the JSON Lines contract, bad input, idempotency keys, extras, times.

Every test runs the real CLI in a child process against a temporary home and reads the
log back with EventLog.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from eventlog import EventLog
from eventlog.events import (
    AliasBound,
    AnswerGiven,
    DecisionRevised,
    MessageSent,
    QuestionAsked,
    RunStarted,
    WriterStarted,
)
from tests.conftest import run_cli

AT = "2026-11-01T10:00:00+00:00"
AT_MS = 1_793_527_200_000

GOOD: dict[str, dict[str, Any]] = {
    "message": {"type": "message", "id": "m1", "from": "lead", "to": ["h1", "h2"],
                "kind": "approval", "body": "ship it", "at": AT, "project": "p",
                "session": "s", "job": "j", "thread": "t"},
    "question": {"type": "question", "id": "q1", "from": "lead", "body": "which?", "at": AT},
    "answer": {"type": "answer", "question": "q1", "body": "this one", "by": "owner", "at": AT},
    "decision": {"type": "decision", "topic": "storage", "revision": 2, "body": "LMDB",
                 "author": "lead", "at": AT},
    "run": {"type": "run", "job": "j1", "run": "r1", "started_at": AT, "agent": "codex",
            "metadata": {"model": "x", "n": 3}},
    "alias": {"type": "alias", "alias": "helper-2", "session": "sess-9", "agent": "claude",
              "at": AT},
}


def jsonl(*facts: dict[str, Any] | str) -> bytes:
    return b"".join(
        (f if isinstance(f, str) else json.dumps(f, ensure_ascii=False)).encode() + b"\n"
        for f in facts
    )


def record(home: Path, data: bytes) -> tuple[int, dict[str, Any] | None, str]:
    res = run_cli(home, "record", input=data)
    err = res.stderr.decode(errors="replace")
    assert "Traceback" not in err, err
    out = json.loads(res.stdout) if res.returncode == 0 else None
    return res.returncode, out, err


def events(home: Path) -> list[Any]:
    with EventLog(home / "log", readonly=True) as log:
        return list(log.iter_events())


def facts(home: Path) -> list[Any]:
    return [e for e in events(home) if not isinstance(e.event, WriterStarted)]


# --- the good path -------------------------------------------------------------------


def test_every_fact_type_becomes_its_event(home: Path) -> None:
    code, out, _ = record(home, jsonl(*GOOD.values()))
    assert code == 0
    assert out == {"appended": 6, "duplicates": 0, "head": 7}
    got = {type(e.event): e for e in facts(home)}
    m = got[MessageSent].event
    assert (m.id, m.sender, m.to, m.kind, m.body, m.at) == (
        "m1", "lead", ["h1", "h2"], "approval", "ship it", AT_MS
    )
    assert (m.project, m.session, m.job, m.thread, m.extra) == ("p", "s", "j", "t", {})
    assert got[QuestionAsked].event == QuestionAsked(id="q1", sender="lead", body="which?",
                                                     at=AT_MS)
    assert got[AnswerGiven].event == AnswerGiven(question="q1", body="this one", by="owner",
                                                 at=AT_MS)
    assert got[DecisionRevised].event == DecisionRevised(topic="storage", revision=2,
                                                         body="LMDB", author="lead", at=AT_MS)
    assert got[RunStarted].event == RunStarted(job="j1", run="r1", started_at=AT_MS,
                                               agent="codex", metadata={"model": "x", "n": 3})
    assert got[AliasBound].event == AliasBound(alias="helper-2", session="sess-9",
                                               agent="claude", at=AT_MS)
    writers = [e for e in events(home) if isinstance(e.event, WriterStarted)]
    assert len(writers) == 1 and writers[0].seq == 1
    assert writers[0].event.command == "agentlog record"


def test_idempotency_keys(home: Path) -> None:
    data = jsonl(*GOOD.values())
    assert record(home, data)[1] == {"appended": 6, "duplicates": 0, "head": 7}
    # the same input again adds nothing
    assert record(home, data)[1] == {"appended": 0, "duplicates": 6, "head": 7}
    body_sha = hashlib.sha256(b"this one").hexdigest()
    want = {
        b"message\x1fm1", b"question\x1fq1", b"decision\x1fstorage\x1f2", b"run\x1fr1",
        b"alias\x1fhelper-2\x1fsess-9", b"answer\x1fq1\x1fowner\x1f" + body_sha.encode(),
    }
    assert {e.key for e in facts(home)} == want
    # what each key is made of: the rest of a fact may change and still be a duplicate
    same_key = [
        dict(GOOD["message"], body="edited", at=1),
        dict(GOOD["question"], body="edited"),
        dict(GOOD["decision"], body="edited", author="other"),
        dict(GOOD["run"], job="other-job", started_at=5),
        dict(GOOD["alias"], agent="codex", at=9),
        dict(GOOD["answer"], at=12345),
    ]
    assert record(home, jsonl(*same_key))[1] == {"appended": 0, "duplicates": 6, "head": 7}
    new_key = [
        dict(GOOD["message"], id="m2"),
        dict(GOOD["answer"], body="another answer"),
        dict(GOOD["answer"], by="someone else"),
        dict(GOOD["decision"], revision=3),
        dict(GOOD["alias"], session="sess-10"),
    ]
    # 7 + a writer event (each process that appends something records one) + 5
    assert record(home, jsonl(*new_key))[1] == {"appended": 5, "duplicates": 0, "head": 13}
    # within one input, the second of two equal keys is a duplicate
    assert record(home, jsonl(dict(GOOD["run"], run="r9"), dict(GOOD["run"], run="r9")))[1] == {
        "appended": 1, "duplicates": 1, "head": 15  # + this process's writer event
    }
    with EventLog(home / "log", readonly=True) as log:
        assert log.duplicates() == 6 + 6 + 1


def test_extra_fields_are_kept(home: Path) -> None:
    msg = dict(GOOD["message"], priority="high", labels=["a", "b"], nested={"x": [1, None]})
    run = dict(GOOD["run"], host="box")
    code, _, _ = record(home, jsonl(msg, run))
    assert code == 0
    got = {type(e.event): e.event for e in facts(home)}
    assert got[MessageSent].extra == {"priority": "high", "labels": ["a", "b"],
                                      "nested": {"x": [1, None]}}
    assert got[RunStarted].extra == {"host": "box"}


TIMES: list[tuple[object, int]] = [
    ("2026-11-01T10:00:00+00:00", AT_MS),
    ("2026-11-01T10:00:00Z", AT_MS),
    ("2026-11-01T11:00:00.123+01:00", AT_MS + 123),
    ("2026-11-01T10:00:00.001Z", AT_MS + 1),
    ("2026-11-01T05:00:00-05:00", AT_MS),
    (AT_MS + 7, AT_MS + 7),
    (float(AT_MS + 8), AT_MS + 8),
    (str(AT_MS), AT_MS),
    (0, 0),
]


def test_times_iso_with_timezone_or_epoch_ms(home: Path) -> None:
    lines = [dict(GOOD["question"], id=f"q{i}", at=at) for i, (at, _) in enumerate(TIMES)]
    code, _, err = record(home, jsonl(*lines))
    assert code == 0, err
    got = {e.event.id: e.event.at for e in facts(home)}
    assert got == {f"q{i}": ms for i, (_, ms) in enumerate(TIMES)}


# --- bad input -----------------------------------------------------------------------


def assert_rejected(home: Path, data: bytes, *expected: tuple[int, str]) -> str:
    """Exit 2, each (line, text) reported, and no log written."""
    code, _, err = record(home, data)
    assert code == 2, err
    for line, text in expected:
        hits = [ln for ln in err.splitlines() if ln.startswith(f"line {line}: ")]
        assert hits and text in hits[0], (line, text, err)
    assert f"{len(expected)} bad line(s); nothing appended" in err
    assert not (home / "log" / "data.mdb").exists()
    return err


BAD_LINES: list[tuple[str, str]] = [
    ('{"type": "message", "id": ', "invalid JSON"),
    ("not json at all", "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('"a string"', "expected a JSON object"),
    ('{"id": "m1"}', "unknown or missing type None"),
    ('{"type": "memo", "id": "m1"}', "unknown or missing type 'memo'"),
    (json.dumps(dict(GOOD["message"], to="h1")), "message.to: Input should be a valid list"),
    (json.dumps(dict(GOOD["message"], kind="shout")), "message.kind"),
    (json.dumps(dict(GOOD["message"], id=7)), "message.id: Input should be a valid string"),
    (json.dumps(dict(GOOD["message"], id="")), "message.id"),
    (json.dumps(dict(GOOD["decision"], revision="2")), "decision.revision"),
    (json.dumps(dict(GOOD["decision"], revision=True)), "decision.revision"),
    (json.dumps(dict(GOOD["run"], metadata=[1])), "run.metadata"),
    (json.dumps({k: v for k, v in GOOD["answer"].items() if k != "by"}),
     "answer.by: Field required"),
    (json.dumps({k: v for k, v in GOOD["alias"].items() if k != "at"}),
     "alias.at: Field required"),
    (json.dumps(dict(GOOD["question"], at="2026-11-01T10:00:00")), "needs a timezone"),
    (json.dumps(dict(GOOD["question"], at="yesterday")), "not ISO-8601"),
    (json.dumps(dict(GOOD["question"], at=1.5)), "whole number"),
    (json.dumps(dict(GOOD["question"], at=-1)), "epoch milliseconds must be in"),
    (json.dumps(dict(GOOD["question"], at=True)), "expected epoch milliseconds"),
    (json.dumps(dict(GOOD["question"], extra_n=10**30)), "does not fit in 64 bits"),
    ('{"type": "question", "id": "q", "from": "a", "body": "x", "at": 1, "n": "\\ud800"}',
     "lone surrogate"),
]


def test_each_bad_line_is_rejected_with_its_reason(home: Path) -> None:
    # one input: a good line, then every bad case; each is reported by its own number
    data = jsonl(GOOD["message"], *(line for line, _ in BAD_LINES))
    assert_rejected(home, data, *((n, text) for n, (_, text) in enumerate(BAD_LINES, start=2)))


@pytest.mark.parametrize("line,text", BAD_LINES[:3])
def test_a_single_bad_line_is_enough(home: Path, line: str, text: str) -> None:
    assert_rejected(home, jsonl(GOOD["message"], line), (2, text))


def test_invalid_utf8(home: Path) -> None:
    bad = json.dumps(GOOD["question"]).encode().replace(b"which?", b"wh\xff\xfeich?")
    assert_rejected(home, jsonl(GOOD["message"]) + bad + b"\n", (2, "invalid UTF-8 at byte"))


def test_ten_megabyte_body_is_refused_clearly(home: Path) -> None:
    big = dict(GOOD["message"], id="big", body="x" * (10 * 1024 * 1024))
    err = assert_rejected(home, jsonl(GOOD["question"], big), (2, "exceeds the 4 MiB limit"))
    assert len(err) < 2000  # the body is not echoed back


def test_a_three_megabyte_body_is_fine(home: Path) -> None:
    big = dict(GOOD["message"], id="big", body="é" * (1536 * 1024))
    code, out, _ = record(home, jsonl(big))
    assert code == 0 and out is not None and out["appended"] == 1
    assert facts(home)[0].event.body == big["body"]
    assert run_cli(home, "verify").returncode == 0


@pytest.mark.parametrize("data", [b"", b"\n", b"  \n\n\t\n"])
def test_empty_stdin_appends_nothing(home: Path, data: bytes) -> None:
    code, out, _ = record(home, data)
    assert code == 0 and out == {"appended": 0, "duplicates": 0, "head": 0}
    assert not (home / "log").exists()


def test_empty_stdin_reports_the_existing_head(home: Path) -> None:
    record(home, jsonl(GOOD["question"]))
    assert record(home, b"")[1] == {"appended": 0, "duplicates": 0, "head": 2}


def test_mixed_good_and_bad_lines_append_nothing_and_number_every_bad_line(home: Path) -> None:
    data = jsonl(
        GOOD["message"],                                  # 1 good
        "{oops",                                          # 2 bad JSON
        GOOD["question"],                                 # 3 good
        dict(GOOD["decision"], revision="two"),           # 4 wrong type
        "",                                               # 5 blank: ignored
        {"type": "alias", "alias": "a"},                  # 6 missing fields
        GOOD["run"],                                      # 7 good
    ) + b"\xc3\x28\n"                                     # 8 invalid UTF-8
    err = assert_rejected(
        home, data,
        (2, "invalid JSON"), (4, "decision.revision"), (6, "Field required"), (8, "UTF-8"),
    )
    for good in (1, 3, 5, 7):
        assert f"line {good}:" not in err


def test_crlf_and_bom_are_accepted(home: Path) -> None:
    data = b"\xef\xbb\xbf" + json.dumps(GOOD["question"]).encode() + b"\r\n"
    data += json.dumps(GOOD["alias"]).encode() + b"\r\n"
    code, out, err = record(home, data)
    assert code == 0, err
    assert out == {"appended": 2, "duplicates": 0, "head": 3}


def test_help(home: Path) -> None:
    res = run_cli(home, "record", "--help")
    assert res.returncode == 0 and b"JSON" in res.stdout
