"""What a one-shot `agentlog capture` of one new session spends before its work, held down:
no annotation compiled into a `typing.ForwardRef` (named tuples and msgspec structs on the
+1 path have real annotations), no OpenSSL (`eventlog.digest`) and no cyclic collection
while the process starts. They run the console's way (`main()` reading `sys.argv`) in a
child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import ROOT

# ForwardRefs made for a class's string annotations: typing.NamedTuple's field check
# (`_type_check`) and msgspec's struct/type info (`get_class_annotations`); msgspec's own
# probe at import (`ForwardRef("Foo")`, module level) is not one of them, nor are click's
# for its own TypedDicts (click's import, the same for every command; not agentlog's)
FORWARD_REFS = """
import sys, typing
made = []
real_init = typing.ForwardRef.__init__
def init(self, arg, *a, **k):
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name in ('_type_check', 'get_class_annotations'):
            m = f
            while m is not None and m.f_code.co_name != '<module>':
                m = m.f_back
            if m is None or m.f_globals.get('__name__', '').split('.')[0] != 'click':
                made.append(arg)
            break
        f = f.f_back
    real_init(self, arg, *a, **k)
typing.ForwardRef.__init__ = init
"""

# collections that start before the capture engine exists (the process's start-up: the
# imports of the command line, roots, config, msgspec, the log and the engine's modules)
COLLECTIONS = """
import gc, sys
started = []
gc.callbacks.append(lambda phase, info: phase == 'start' and started.append(
    ENGINE[0] if 'ENGINE' in globals() else None))
ENGINE = [False]
"""

# modules a +1 capture and its catch-up do without (imported where they are used)
UNNEEDED = {"projections.rebuild", "projections.envelope", "readers.capture_watch",
            "hashlib", "_hashlib"}

AFTER = {
    "forward": "sys.stderr.write(' openssl: %r' % ('_hashlib' in sys.modules))\n"
               "sys.stderr.write(' unneeded: %r' % sorted(set(sys.modules) & UNNEEDED))\n"
               "sys.stderr.write(' forwardrefs: %r' % made)\n",
    "gc": "sys.stderr.write(' collections: %r' % started)\n",
}


def _session(claude: Path, name: str, word: str) -> None:
    path = claude / "projects" / "-w-p" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "user", "sessionId": name, "uuid": f"u-{name}",
                                "cwd": "/w/p",
                                "message": {"role": "user", "content": word}}) + "\n")


def _console(prelude: str, probe: str, args: list[str], env: dict[str, str]
             ) -> subprocess.CompletedProcess[str]:
    """`agentlog ARGS` as the console script of a plain install runs it, with `prelude`
    before and `probe` after; `ENGINE[0]` turns True once `readers.capture.Capturer` has
    made its engine. Started with `-S` and the packages' folders on sys.path: an editable
    install's finder (a .pth file, `make test`'s venv) would import pathlib and more
    before agentlog starts."""
    paths = sysconfig.get_paths()
    site = f"import sys\nsys.path[:0] = {[str(ROOT), paths['purelib'], paths['platlib']]!r}\n"
    engine = ("import readers.capture as _rc\n_init = _rc.Capturer.__init__\n"
              "def _made(self, *a, **k):\n    _init(self, *a, **k)\n    ENGINE[0] = True\n"
              "_rc.Capturer.__init__ = _made\n") if "ENGINE" in prelude else ""
    code = (site + f"UNNEEDED = {UNNEEDED!r}\n" + prelude + engine
            + "if 'ENGINE' in globals(): ENGINE[0] = False\n"
            + "from cli.main import main\n"
            # collections from here on: main() holds the collector off from its first line
            # (one may run while the console script imports cli.main, before it can)
            + "del started[:]\n" * ("started" in prelude)
            + "sys.argv[0] = 'agentlog'\ntry:\n    main()\n"
            "finally:\n" + "".join(f"    {line}\n" for line in probe.splitlines()))
    return subprocess.run([sys.executable, "-S", "-c", code, *args], capture_output=True,
                          text=True,
                          cwd=ROOT, env=env, timeout=120)


def _home(tmp_path: Path) -> tuple[list[str], dict[str, str], Path]:
    # the first run writes bytecode for the +1 (a stale .pyc would be compiled in its start-up)
    env = {k: v for k, v in os.environ.items()
           if k not in ("AGENTLOG_HOME", "PYTHONDONTWRITEBYTECODE")}
    env["HOME"] = str(tmp_path / "user")
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    (codex / "sessions").mkdir(parents=True)
    _session(claude, "s1", "first")
    args = ["--home", str(tmp_path / "home"), "capture", "--json", "--claude-dir",
            str(claude), "--codex-dir", str(codex)]
    first = subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True,
                           text=True, cwd=ROOT, env=env, timeout=120)
    assert first.returncode == 0, first.stderr  # history.db made, bytecode written
    return args, env, claude


def _plus_one(tmp_path: Path, word: str, prelude: str, probe: str
              ) -> tuple[str, list[str], dict[str, str]]:
    """(stderr, args, env) of a +1 capture (a second session holding `word`) run by `_console`
    with `prelude` and `AFTER[probe]`; the session was captured."""
    args, env, claude = _home(tmp_path)
    _session(claude, "s2", word)
    proc = _console(prelude, AFTER[probe], args, env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["appended"] > 0
    return proc.stderr, args, env


def test_a_plus_one_capture_compiles_no_annotation_and_loads_no_openssl(tmp_path: Path
                                                                        ) -> None:
    """The +1 capture and its catch-up resolve no string annotation: each was a
    `typing.ForwardRef` compile (~200 per process before, ~4 % of its instructions); and
    they hash (the chain, cursors, root ids) without OpenSSL's `_hashlib` (~3 %)."""
    err, _, _ = _plus_one(tmp_path, "second", FORWARD_REFS, "forward")
    made = err.rsplit("forwardrefs: ", 1)[1]
    assert made == "[]", made
    assert "openssl: False" in err, err
    assert "unneeded: []" in err, err


def test_no_collection_while_a_capture_starts(tmp_path: Path) -> None:
    """The console's process runs no cyclic collection before the capture engine exists
    (`cli.services.startup.quiet_startup`); the collector runs again for the work after it, and the
    new session is captured and searchable."""
    err, args, env = _plus_one(tmp_path, "sesquipedalian", COLLECTIONS, "gc")
    started = err.rsplit("collections: ", 1)[1]
    assert "False" not in started, started  # none during the start-up
    on = subprocess.run([sys.executable, "-c", "import gc, sys\nfrom cli.services import startup\n"
                         "startup.quiet_startup()\nassert not gc.isenabled()\n"
                         "startup.startup_done()\n"
                         "print(gc.isenabled(), gc.get_freeze_count() > 0)"],
                        capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert on.stdout.split() == ["True", "True"], on.stderr  # back on, start-up frozen
    found = subprocess.run([sys.executable, "-m", "cli.main", "--home", args[1], "search",
                            "--json", "sesquipedalian"], capture_output=True, text=True,
                           cwd=ROOT, env=env, timeout=120)
    assert json.loads(found.stdout)["hits"], found.stderr


def test_digests_are_hashlibs_on_both_sides_of_the_switch() -> None:
    """`eventlog.digest` hashes with CPython's own SHA-256 for the first MiB a process asks
    for, then with OpenSSL's: the digests, and so the chain links, are hashlib's either way."""
    code = """
import hashlib, struct
from eventlog import chain, digest
prev, out = chain.GENESIS, []
for i, size in enumerate([10, 70000, 700000, 500000, 3, 65536, 65536]):
    stored = bytes((i * 7 + j) % 251 for j in range(size))
    own = digest.sha256_for(0) is not hashlib.sha256
    link = chain.link(prev, i + 1, stored)
    want = hashlib.sha256(prev + struct.pack(">Q", i + 1) + stored).digest()
    out.append((own, link == want))
    prev = link
assert digest.sha256(b"abc").hexdigest() == hashlib.sha256(b"abc").hexdigest()
b2 = digest.blake2b(b"x", digest_size=16).digest()
assert b2 == hashlib.blake2b(b"x", digest_size=16).digest()
print(out)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = eval(proc.stdout)  # [(CPython's own in use before this link, link == hashlib's)]
    assert all(same for _, same in out), out
    # the fourth link passes the first MiB: OpenSSL's from there on
    assert [own for own, _ in out] == [True, True, True, True, False, False, False], out
