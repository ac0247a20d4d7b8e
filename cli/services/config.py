"""The agentlog home: where it is, what is inside, and its config.json.

Resolution: `--home DIR`, else env AGENTLOG_HOME, else the platform data dir.
Only `cli` reads the environment and config files; libraries get paths passed in.

The home holds transcripts, which hold secrets: it is private. Whenever a command opens
the log (`Home.log`), the process's umask becomes 077 (every file it creates afterwards —
log, history.db, backups, archives — is 0600 in 0700 folders), and a home found readable
by others (the home folder, `log/data.mdb` or `history.db`) is tightened: group and
other permission bits are removed from everything under it, saying so once on stderr when
the log or history.db was among them (a home being created now is tightened quietly).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the log loads only where used (start-up time)
    from eventlog import EventLog


class Home:
    """A home directory (a plain class: `dataclasses` costs the search path start-up)."""

    def __init__(self, root: Path, command: str = "agentlog",
                 postgres: str | None = None) -> None:
        self.root = root
        self.command = command
        # set by `mcp/serve --postgres`: answer search/conversation calls from the team server
        self.postgres = postgres
        self._config: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"Home(root={self.root!r}, command={self.command!r}, postgres={self.postgres!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Home) and (self.root, self.command, self.postgres) == (
            other.root, other.command, other.postgres)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    @property
    def history_db(self) -> Path:
        return self.root / "history.db"

    @property
    def meaning_dir(self) -> Path:
        return self.root / "meaning"

    @property
    def archive_dir(self) -> Path:
        return self.root / "archive"

    @property
    def backups_dir(self) -> Path:
        return self.root / "backups"

    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config

    def has_log(self) -> bool:
        return (self.log_dir / "data.mdb").exists()

    def log(self, *, readonly: bool = False) -> EventLog:
        """The process-wide log of this home (created on first write)."""
        os.umask(0o077)
        if not readonly:
            self.root.mkdir(parents=True, exist_ok=True)
        self.make_private()
        from eventlog import open_log

        return open_log(self.log_dir, readonly=readonly, command=self.command)


    def make_private(self) -> int:
        """Remove group/other bits under an existing home that has any (see the module
        docstring); returns how many entries were changed."""
        written = (self.log_dir / "data.mdb", self.history_db)
        try:
            if not any(_loose(p) for p in (self.root, *written)):
                return 0
            # a home agentlog wrote before (a log or history.db readable by others) is news;
            # a home being made now (say `demo`'s sources written first) is tightened quietly
            announce = any(_loose(p) for p in written)
        except OSError:
            return 0
        changed = _tighten(self.root)
        for folder, dirs, files in os.walk(self.root):
            for name in dirs + files:
                changed += _tighten(Path(folder) / name)
        if changed > 1 and announce:
            import sys

            sys.stderr.write(f"agentlog: made {self.root} private (removed group and other "
                             "permissions: it holds transcripts)\n")
        return changed


def _loose(path: Path) -> bool:
    """Readable by others: the file itself (history.db is a link to its generation)."""
    try:
        return bool(os.stat(path).st_mode & 0o077)
    except FileNotFoundError:
        return False


def _tighten(path: Path) -> int:
    import stat

    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
            return 0
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
    except OSError:
        return 0
    return 1


def load_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        from cli.services.errors import Failure

        raise Failure(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        from cli.services.errors import Failure

        raise Failure(f"{path}: expected a JSON object")
    return data


def resolve_home(option: str | None) -> Home:
    """The home of `--home`, AGENTLOG_HOME or the platform's data dir, its config.json's
    `secrets` rules handed to the redaction (`use_secret_rules`)."""
    if option:
        home = Home(Path(option).expanduser().absolute())
    else:
        env = os.environ.get("AGENTLOG_HOME")
        if env:
            home = Home(Path(env).expanduser().absolute())
        else:
            import platformdirs

            home = Home(Path(platformdirs.user_data_dir("agentlog", appauthor=False)))
    use_secret_rules(home)
    return home


def use_secret_rules(home: Home) -> None:
    """Hand config.json's `secrets.patterns` (kind -> regex) and `secrets.allow` (exact
    strings or regexes never redacted) to `projections.redact` for this process: every
    projection it writes, and the version history.db records, follow them (docs/secrets.md).
    Nothing is read or imported when config.json does not exist."""
    if not home.config_path.exists():
        return
    rules = home.config.get("secrets")
    if rules is None:
        return
    from cli.services.errors import Failure

    if not isinstance(rules, dict):
        raise Failure(f"{home.config_path}: secrets must be an object with \"patterns\" "
                      "and/or \"allow\"")
    patterns = rules.get("patterns") or {}
    allow = rules.get("allow") or []
    if not isinstance(patterns, dict) or not isinstance(allow, list):
        raise Failure(f"{home.config_path}: secrets.patterns must be an object (name -> "
                      "regex), secrets.allow a list of strings")
    from projections.redact import RulesError, configure

    try:
        configure(patterns, allow)
    except RulesError as exc:
        raise Failure(f"{home.config_path}: {exc}") from exc


def get_home(ctx: Any) -> Home:
    """The home a front end's click context holds (`cli.group` resolves it)."""
    home = ctx.find_object(Home)
    if home is None:
        raise RuntimeError("internal error: no home resolved")
    assert isinstance(home, Home)
    return home
