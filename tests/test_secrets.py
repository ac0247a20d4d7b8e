"""Redaction (issue 26): secrets never reach a reader, by any front end.

A real home: Claude and Codex transcripts holding planted FAKE secrets of every kind (built
here by concatenation, so the repository holds no credential) in user prompts, a tool result
(`cat .env`) and assistant text, captured by the real CLI; then every front end is asked.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections import redact
from projections.redact_rules import AGENTS, LIBRARY
from tests.conftest import run_cli

# kind -> a fake value of it (no literal credential in the file)
FAKE: dict[str, str] = {
    "aws-access-key": "AK" + "IA" + "Q3EGTZ7YB2XN5K4M",
    "github-token": "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "anthropic-key": "sk-" + "ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "openai-key": "sk-" + "proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
    "google-api-key": "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "slack-token": "xo" + "xb-" + "1234567890-0987654321-" + "abcdefghijklmnop",
    "stripe-key": "sk" + "_live_" + "a1B2c3D4e5F6g7H8i9J0k1L2",
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0In0." + "Sf1KxwRJSMeKKF2QT4fwpM",
    "env-secret": "Hunter" + "2Zebra7Quill",
    "connection-string": "Pg" + "Pass9Word4Db",
    "authorization": "Bear" + "erTok3nXyZ98765qwerty",
    "private-key": "MIIEow" + "IBAAKCAQEA7fakeKeyMaterialLine0123456789",
}
KEY_BLOCK = ("-----BEGIN RSA " + "PRIVATE KEY-----\n" + FAKE["private-key"] + "\n"
             + "abcdefghijklmnopqrstuvwxyz0123456789+/==\n-----END RSA " + "PRIVATE KEY-----")
# the text that carries each (with a unique word beside it, which must stay searchable)
CARRIER: dict[str, str] = {
    "aws-access-key": f"wombat aws id {FAKE['aws-access-key']} here",
    "github-token": f"narwhal token {FAKE['github-token']} pushed",
    "anthropic-key": f"axolotl uses {FAKE['anthropic-key']} today",
    "openai-key": f"pangolin OPENAI={FAKE['openai-key']}",
    "google-api-key": f"quetzal gemini {FAKE['google-api-key']} set",
    "slack-token": f"capybara slack {FAKE['slack-token']} bot",
    "stripe-key": f"okapi billing {FAKE['stripe-key']} live",
    "jwt": f"tapir session {FAKE['jwt']} cookie",
    "env-secret": f"$ cat .env\nLOG_LEVEL=debug\nDATABASE_PASSWORD={FAKE['env-secret']}\n"
                  "marmoset done",
    "connection-string": f"ibis db postgres://app:{FAKE['connection-string']}@db.local/app",
    "authorization": f"curl -H 'Authorization: Bearer {FAKE['authorization']}' tamarin",
    "private-key": f"kinkajou key\n{KEY_BLOCK}\nafter",
}
WORDS = {k: v.split()[0] if not v.startswith("$") else "marmoset" for k, v in CARRIER.items()}
WORDS["authorization"] = "tamarin"
WORDS["private-key"] = "kinkajou"


def test_every_kind_is_redacted_and_its_words_stay() -> None:
    for kind, text in CARRIER.items():
        out, found = redact.redact(text)
        assert FAKE[kind] not in out, kind
        assert found is not None and kind in found, (kind, found)
        assert f"[redacted:{kind}]" in out
        assert WORDS[kind] in out


def test_ordinary_text_is_left_alone() -> None:
    for text in ("git show e6f4c7f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7", "PASSWORD=$DB_PASSWORD",
                 # code and UI strings of the real corpora that only name a secret
                 "    46→            this._onKeyDown = this.onKeyDown.bind(this);",
                 '13\texport GOPRIVATE="github.com/acme/*"',
                 '        "cli.enter_password": "Enter password",',
                 "            password = getpass.getpass(\"Enter password\")",
                 "        self.private_key_path = os.path.expanduser(path)",
                 "            csrf_token = match.group(1)", "API_URL=https://example.com/v1",
                 'api_key = "<your key here>"', "see https://example.com/a/b?x=1",
                 "uuid 123e4567-e89b-12d3-a456-426614174000", "just words and more words"):
        assert redact.redact(text) == (text, None), text


def test_config_rules_patterns_and_allow() -> None:
    try:
        redact.configure({"ticket": r"TCK-[0-9]{6}"}, [FAKE["github-token"]])
        v = redact.version()
        assert v.startswith(f"{redact.VERSION}.")
        out, found = redact.redact(f"see TCK-123456 and {FAKE['github-token']}")
        assert out == f"see [redacted:ticket] and {FAKE['github-token']}"
        assert found == {"ticket": 1}
        with pytest.raises(redact.RulesError, match="bad"):
            redact.configure({"bad": "("}, [])
    finally:
        redact.configure()
    assert redact.version() == str(redact.VERSION)


_ALPHABET = st.sampled_from([
    *"abcxyzAKIJGPBT_-@=:\"' \n\t0123456789./+", FAKE["aws-access-key"],
    FAKE["github-token"], "sk-", "postgres://u:", "@h", "password", "Authorization: Bearer ",
    "export API_KEY=", "-----BEGIN RSA PRIVATE KEY-----", "eyJ", "xoxb-1-", "AIza",
    # what Python's IGNORECASE and `\s` match beyond ASCII (the hints must too), a lone
    # surrogate (RE2 takes UTF-8 only), the other rules' starts
    "\u0131", "\u0130", "\u017f", "\u212a", "\xa0", "\u2028", "\x1c", "\ud800", "AWS_KEY='",
    "AUTHOR\u0130ZAT\u0130ON=", "aw\u017f pa\u017f\u017f ", "mysql://a:b@c", "DB_PASSWORD",
    '"k": "', "glpat-", "sk_live_", "hooks.slack.com/services/T1/B2/x", "AccountKey=", "SG."])


@settings(max_examples=500, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_the_gate_changes_nothing(text: str) -> None:
    r = redact.redactor()
    assert r.redact(text) == r.redact(text, gated=False)


def test_the_hints_find_what_the_rules_find() -> None:
    """Each rule's hint matches every text its rule matches a line of, in RE2's one pass and
    in Python's `re` alike (the hints mean the same to both)."""
    r = redact.redactor()
    texts = [*CARRIER.values(), KEY_BLOCK, "x" * 50, "AUTHOR\u0130ZAT\u0130ON: Bearer " + "a1" * 8,
             f"aw\u017f_secret_key = '{'A1b2' * 10}'", "narwhal\n" * 20 + FAKE["github-token"]]
    for text in texts:
        hinted = set(r.hinted(text))
        for i, (kind, _hint, pattern, flags, _group) in enumerate(r.rules):
            python = re.compile(r.hints[i]).search(text) is not None
            assert (i in hinted) == python, (kind, text)
            if any(any(True for _ in re.compile(pattern, flags).finditer(text, a, b))
                   for a, b in redact._lines(text)):
                assert python and r.lines(i, text), (kind, text)


def test_the_hint_set_does_not_give_up_on_a_long_text() -> None:
    """RE2's set answers no match when its DFA runs out of memory: on a long, varied text it
    answers what each hint alone (Python's `re`) does."""
    import random

    rng = random.Random(26)
    pieces = [*"abcXYZ09_-=:\"' \n", *FAKE.values(), "://u:p@", "Authorization", "KEY="]
    r = redact.redactor()
    for _ in range(3):
        text = "".join(rng.choice(pieces) for _ in range(200_000))
        expected = {i for i, hint in enumerate(r.hints) if re.search(hint, text)}
        assert set(r.hinted(text)) == expected


def test_the_fold_and_space_classes_are_pythons() -> None:
    """`redact.fold` makes each letter the class Python's IGNORECASE matches, and `_WS` is
    Python's `\\s` but the line end: checked against every code point."""
    from projections.redact_rules import _WS

    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    letters = {c for _, hint, _, flags, _ in (*LIBRARY, *AGENTS) if flags & re.IGNORECASE
               for c in hint if c.isascii() and c.isalpha()}
    for c in sorted(letters):
        assert set(re.findall(redact.fold(c), every)) == set(re.findall(c, every, re.I)), c
    assert set(re.findall(f"[{_WS}]", every)) == set(re.findall(r"\s", every)) - {"\n"}


def test_every_rule_has_a_hint() -> None:
    for kind, hint, pattern, _flags, _group in (*AGENTS, *LIBRARY):
        assert hint and pattern and "\n" not in hint, kind


@pytest.mark.corpus
def test_the_hinted_answer_is_the_plain_one_on_the_corpus(corpus: Path) -> None:
    """On the shared corpus's text (lines of its transcripts, JSON re-indented so that one
    record spans lines), the hinted answer equals every rule on every line."""
    r = redact.redactor()
    texts: list[str] = []
    for path in sorted(corpus.rglob("*.jsonl"))[:40]:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:200]:
            try:
                texts.append(json.dumps(json.loads(line), indent=1, ensure_ascii=False))
            except ValueError:
                texts.append(line)
    assert texts
    for text in texts:
        assert r.redact(text) == r.redact(text, gated=False)


def test_the_table_is_detect_secrets_own() -> None:
    """The LIBRARY rules are the installed detect-secrets' regexes, byte for byte."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.npm import NpmDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector

    ours = {(p, f & ~re.UNICODE) for _, _, p, f, _ in LIBRARY}
    for plugin in (AWSKeyDetector, BasicAuthDetector, GitHubTokenDetector, GitLabTokenDetector,
                   JwtTokenDetector, PrivateKeyDetector, SlackDetector, StripeDetector,
                   OpenAIDetector, NpmDetector, PypiTokenDetector, SendGridDetector,
                   AzureStorageKeyDetector, SquareOAuthDetector):
        for regex in plugin.denylist:
            assert (regex.pattern, regex.flags & ~re.UNICODE) in ours, plugin.__name__
    b64 = Base64HighEntropyString()
    for s in ("abc", "Kw" + "Secret42Value", FAKE["github-token"], "aaaaBBBB1234"):
        assert redact.shannon_entropy(s, redact.BASE64) == b64.calculate_shannon_entropy(s)
    for token in (FAKE["jwt"], "eyJ.x.y", "eyJhbGciOiJIUzI1NiJ9.e30."):
        assert redact.jwt_valid(token) == JwtTokenDetector.is_formally_valid(token)


# --- a real home -----------------------------------------------------------------------

def _claude_line(uid: str, role: str, content: Any, at: str) -> str:
    return json.dumps({"type": role, "uuid": uid, "sessionId": "sec-claude", "timestamp": at,
                       "cwd": "/p/secret-proj", "message": {"role": role, "content": content}})


def _home(tmp: Path, home: Path) -> tuple[Path, Path]:
    claude = tmp / "claude" / "projects" / "-p-secret-proj"
    claude.mkdir(parents=True)
    kinds = list(CARRIER)
    lines = []
    for i, kind in enumerate(kinds[:7]):  # user prompts and assistant text
        role = "user" if i % 2 == 0 else "assistant"
        content: Any = CARRIER[kind] if role == "user" else [
            {"type": "text", "text": CARRIER[kind]}]
        lines.append(_claude_line(f"u{i}", role, content, f"2026-11-01T09:00:0{i}Z"))
    # a tool result: cat .env
    lines.append(_claude_line("t1", "user", [{"type": "tool_result", "tool_use_id": "x",
                                              "content": CARRIER["env-secret"]}],
                              "2026-11-01T09:01:00Z"))
    (claude / "sec-claude.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    codex = tmp / "codex" / "sessions" / "2026" / "11" / "01"
    codex.mkdir(parents=True)
    rows = [json.dumps({"timestamp": "2026-11-01T09:00:00Z", "type": "session_meta",
                        "payload": {"id": "sec-codex", "cwd": "/p/secret-proj"}})]
    for i, kind in enumerate(k for k in kinds[7:] if k != "env-secret"):
        rows.append(json.dumps({
            "timestamp": f"2026-11-01T09:00:{i:02d}Z", "type": "response_item",
            "payload": {"type": "message", "role": "user" if i % 2 == 0 else "assistant",
                        "content": [{"type": "input_text", "text": CARRIER[kind]}]}}))
    (codex / "rollout-sec.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    _opencode(tmp / "opencode" / "opencode.db")
    empty = tmp / "empty"
    empty.mkdir()
    proc = run_cli(home, "capture", "--claude-dir", str(tmp / "claude"), "--codex-dir",
                   str(tmp / "codex"), "--opencode-dir", str(tmp / "opencode"), "--runs-dir",
                   str(empty))
    assert proc.returncode == 0, proc.stderr.decode()
    return claude / "sec-claude.jsonl", codex / "rollout-sec.jsonl"


OPENCODE_WORD = "jackal"  # only in the opencode session, beside two secrets


def _opencode(path: Path) -> None:
    """An opencode.db (its real tables' shape) with secrets in a user part and a tool part."""
    import sqlite3

    path.parent.mkdir(parents=True)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT, directory TEXT,
                              time_created INTEGER, time_updated INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
                              time_updated INTEGER, data TEXT);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,
                           time_created INTEGER, time_updated INTEGER, data TEXT);""")
    t = 1_793_000_000_000
    con.execute("INSERT INTO session VALUES ('ses_sec', 'keys', '/p/secret-proj', ?, ?)", (t, t))
    for i, role in enumerate(("user", "assistant")):
        con.execute("INSERT INTO message VALUES (?, 'ses_sec', ?, ?, ?)",
                    (f"msg_{i}", t + i, t + i, json.dumps({"role": role})))
    con.execute("INSERT INTO part VALUES ('prt_0', 'msg_0', 'ses_sec', ?, ?, ?)", (t, t, json.dumps(
        {"type": "text", "text": f"{OPENCODE_WORD} token {FAKE['github-token']} here"})))
    con.execute("INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_sec', ?, ?, ?)",
                (t + 1, t + 1, json.dumps({"type": "text", "text": CARRIER["env-secret"]
                                           + f" {OPENCODE_WORD} {FAKE['anthropic-key']}"})))
    con.commit()
    con.close()


def _clean(blob: bytes | str, where: str) -> None:
    data = blob.encode() if isinstance(blob, str) else blob
    for kind, value in FAKE.items():
        assert value.encode() not in data, f"{kind} leaked into {where}"


@pytest.fixture
def secret_home(tmp_path: Path, home: Path) -> tuple[Path, Path, Path]:
    claude, codex = _home(tmp_path, home)
    return home, claude, codex


def test_no_front_end_of_the_terminal_shows_a_secret(
        secret_home: tuple[Path, Path, Path], tmp_path: Path) -> None:
    home, claude_file, codex_file = secret_home
    for kind, word in WORDS.items():
        out = run_cli(home, "search", word, "--json")
        assert out.returncode == 0, out.stderr.decode()
        hits = json.loads(out.stdout)["hits"]
        assert hits, f"{word} ({kind}) is no longer found"
        _clean(out.stdout, f"search {word}")
        for value in FAKE.values():  # searching for a value finds nothing
            piece = re.sub(r"[^A-Za-z0-9]+", " ", value).strip()
            got = run_cli(home, "search", piece, "--json")
            assert got.returncode in (0, 2)
            if got.returncode == 0:
                assert not json.loads(got.stdout)["hits"], piece
    found = json.loads(run_cli(home, "search", OPENCODE_WORD, "--json").stdout)["hits"]
    assert {h["agent"] for h in found} == {"opencode"}, found
    for conv in ("claude:sec-claude", "codex:sec-codex", "opencode:ses_sec"):
        out = run_cli(home, "conversation", conv, "--json", "--limit", "100")
        assert out.returncode == 0, out.stderr.decode()
        _clean(out.stdout, f"conversation {conv}")
        assert b"[redacted:" in out.stdout
    out = run_cli(home, "history", "wombat", "--json")
    assert out.returncode == 0, out.stderr.decode()
    _clean(out.stdout, "history")
    proj = json.loads(run_cli(home, "search", "wombat", "--json").stdout)["hits"][0]["project"]
    out = run_cli(home, "export", "--project", proj)
    assert out.returncode == 0, out.stderr.decode()
    _clean(out.stdout, "export --project")
    assert b"[redacted:" in out.stdout
    # agentlog secrets lists every kind, never a value
    out = run_cli(home, "secrets", "--json")
    assert out.returncode == 0, out.stderr.decode()
    _clean(out.stdout, "secrets --json")
    listed = {r["kind"] for r in json.loads(out.stdout)["secrets"]}
    assert set(FAKE) <= listed, set(FAKE) - listed
    text = run_cli(home, "secrets")
    assert text.returncode == 0 and b"aws-access-key" in text.stdout
    _clean(text.stdout, "secrets")
    # history.db's bytes, after a fresh reindex (free pages included)
    assert run_cli(home, "reindex").returncode == 0
    _clean((home / "history.db").read_bytes(), "history.db")
    # the raw log keeps the bytes: restore is byte-exact
    out_dir = tmp_path / "restored"
    res = run_cli(home, "restore", "--to", str(out_dir))
    assert res.returncode == 0, res.stderr.decode()
    restored = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in out_dir.rglob("*") if p.is_file()}
    for src in (claude_file, codex_file):
        assert restored[src.name] == hashlib.sha256(src.read_bytes()).hexdigest()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_answers_hold_no_secret(secret_home: tuple[Path, Path, Path]) -> None:
    from tests.test_mcp import ok, spawn

    home = secret_home[0]
    async with spawn(home) as client:
        for word in WORDS.values():
            res = await ok(client, "search_history", {"query": word})
            assert res["hits"], word
            _clean(json.dumps(res), f"search_history {word}")
        for conv in ("claude:sec-claude", "codex:sec-codex", "opencode:ses_sec"):
            res = await ok(client, "get_conversation", {"id": conv, "limit": 100})
            _clean(json.dumps(res), f"get_conversation {conv}")


def test_http_answers_and_dashboard_hold_no_secret(secret_home: tuple[Path, Path, Path]) -> None:
    from tests.test_http_server import start_server, stop

    home = secret_home[0]
    served = start_server(home)
    try:
        headers = {"Host": f"127.0.0.1:{served.port}",
                   "Authorization": f"Bearer {served.token}"}
        for target in [f"/api/search?q={w}" for w in WORDS.values()] + [
                "/", "/?q=wombat", "/?conversation=claude:sec-claude"]:
            conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
            conn.request("GET", target, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 200, (target, resp.status)
            _clean(body, target)
    finally:
        stop(served)
