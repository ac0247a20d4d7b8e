"""Safe edits of other programs' settings files (Claude Code, Codex, opencode, Goose).

Promises:
- an edit never writes a file whose content would not change (install twice = one write);
- before a file is changed its current bytes are copied to `<name>.agentlog.bak`, and the
  new content replaces it atomically (temp file + rename, mode kept);
- JSON is re-emitted with the indentation, key order, ASCII escaping and final newline it
  had; TOML is edited with tomlkit and YAML with ruamel.yaml's round trip, which keep
  comments and layout;
- the first edit of a file that holds nothing of agentlog's also keeps its bytes in
  `<name>.agentlog.orig`; when a later edit only removes what agentlog added and the result
  means exactly what that copy held, its bytes are written back (and the copy and the
  `.bak` removed): install then uninstall leaves the file byte-identical and nothing beside
  it; a file the install created (`<name>.agentlog.new` remembers it) is removed again when
  the uninstall leaves it empty;
- a file that does not parse is an error naming the file; it is never overwritten;
- a settings file that is a symbolic link (into a dotfiles folder, say; dangling too) is
  edited through the link: the file it points to gets the new content, the link stays.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.services.errors import Failure

BACKUP_SUFFIX = ".agentlog.bak"
ORIG_SUFFIX = ".agentlog.orig"


class SettingsError(Failure):
    """A settings file that cannot be read or edited safely."""


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def orig_path(path: Path) -> Path:
    return path.with_name(path.name + ORIG_SUFFIX)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read ({exc})") from exc


def write_text(path: Path, old: str | None, new: str) -> bool:
    """Back up `old` and write `new` atomically; False (nothing written) when equal."""
    if old == new:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    if old is not None:
        mode = path.stat().st_mode & 0o7777
        _atomic(backup_path(path), old, mode)
    _atomic(path, new, mode)
    return True


def _atomic(path: Path, text: str, mode: int | None) -> None:
    """`text` to `path` atomically and durably (`eventlog.files`), keeping the old mode; a
    symbolic link is written through (its target is replaced, the link kept)."""
    import os

    from eventlog.files import write_atomic

    if path.is_symlink():
        path = Path(os.path.realpath(path))
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"), mode=0o644 if mode is None else mode)


# --- JSON ---------------------------------------------------------------------------------


def load_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); "
                            "fix it or edit it by hand") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a JSON object")
    return data


def dump_json_like(data: dict[str, Any], original: str | None) -> str:
    """`data` as JSON in the style of `original` (indent, escaping, final newline)."""
    indent: int | str = 2
    ascii_only = False
    newline = True
    if original:
        m = re.search(r"\n([ \t]+)\S", original)
        if m:
            ws = m.group(1)
            indent = "\t" if ws.startswith("\t") else len(ws)
        ascii_only = "\\u" in original and original.isascii()
        newline = original.endswith("\n")
    out = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    return out + "\n" if newline else out


def new_path(path: Path) -> Path:
    return path.with_name(path.name + ".agentlog.new")


def keep_orig(path: Path, old: str | None, clean: bool = True) -> None:
    """Remember the bytes of a file agentlog has not edited yet (see the module doc)."""
    orig = orig_path(path)
    if old is not None and clean:
        _atomic(orig, old, path.stat().st_mode & 0o7777)
    elif old is None and clean:
        if orig.exists():
            orig.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic(new_path(path), "", None)  # the install creates this file


def remove_created(path: Path) -> None:
    """Remove a file the install created; through a symbolic link (a dangling one before the
    install) the target goes and the link stays, as it was."""
    (path.resolve() if path.is_symlink() else path).unlink(missing_ok=True)


def _after_clean_removal(path: Path, text: str, empty: bool) -> bool:
    """After an uninstall that left the file as agentlog found it: no `.bak` beside it, and
    a file the install created and the uninstall emptied is removed; True when removed."""
    created = new_path(path)
    if empty and created.exists():
        remove_created(path)
        created.unlink()
        backup_path(path).unlink(missing_ok=True)
        return True
    if orig_path(path).exists():
        return False  # not back to the original yet
    if not created.exists() or not empty:
        backup_path(path).unlink(missing_ok=True)
    return False


def restored(path: Path, new: str, same: Callable[[str], bool]) -> str:
    """The original bytes when `new` means the same as them, else `new`."""
    orig = orig_path(path)
    pristine = read_text(orig)
    if pristine is None:
        return new
    try:
        if same(pristine):
            orig.unlink()
            return pristine
    except Exception:  # an unreadable copy is simply not used
        pass
    return new


def edit_json(path: Path, change: Callable[[dict[str, Any]], None], *,
              removing: bool = False,
              clean: Callable[[dict[str, Any]], bool] | None = None) -> bool:
    """Apply `change` to the JSON object in `path`; True when the file changed.

    `clean(data)` says whether the file holds nothing of agentlog's yet."""
    old = read_text(path)
    if removing and old is None:
        return False
    data = load_json(path, old)
    before = copy.deepcopy(data)
    was_clean = clean is not None and clean(copy.deepcopy(data))
    change(data)
    if data == before and old is not None:
        return False  # the same meaning: never re-format the user's file
    new = dump_json_like(data, old)
    if removing:
        had_orig = orig_path(path).exists()
        new = restored(path, new,  # an empty file meant {}
                       lambda text: bool((json.loads(text) if text.strip() else {}) == data))
        changed = write_text(path, old, new)
        if had_orig or new_path(path).exists():
            changed = _after_clean_removal(path, new, data == {}) or changed
        return changed
    if new != old:
        keep_orig(path, old, was_clean)
    return write_text(path, old, new)


# --- TOML ---------------------------------------------------------------------------------


def edit_toml(path: Path, change: Callable[[Any], None], *, removing: bool = False,
              clean: Callable[[Any], bool] | None = None) -> bool:
    """Apply `change` to the tomlkit document of `path`; True when the file changed."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    old = read_text(path)
    if removing and old is None:
        return False
    try:
        doc = tomlkit.parse(old or "")
    except TOMLKitError as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc}); fix it or edit it by hand") from exc
    before = doc.unwrap()
    was_clean = clean is not None and clean(doc.unwrap())
    change(doc)
    if doc.unwrap() == before and old is not None:
        return False
    new = tomlkit.dumps(doc)
    if removing:
        had_orig = orig_path(path).exists()
        new = restored(path, new, lambda text: _toml_same(text, doc))
        changed = write_text(path, old, new)
        if had_orig or new_path(path).exists():
            changed = _after_clean_removal(path, new, not doc.unwrap()) or changed
        return changed
    if new != old:
        keep_orig(path, old, was_clean)
    return write_text(path, old, new)


def _toml_same(text: str, doc: Any) -> bool:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        return bool(tomlkit.parse(text).unwrap() == doc.unwrap())
    except TOMLKitError:
        return False


def prune_empty(container: dict[str, Any], *keys: str) -> None:
    """Drop `container[key]` (in order, innermost first) when it became empty."""
    for key in keys:
        value = container.get(key)
        if isinstance(value, dict | list) and not value:
            del container[key]


# --- YAML ---------------------------------------------------------------------------------


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML()  # the round-trip loader and dumper: comments, order and quoting kept
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long path onto a second line
    return yaml


def plain(node: Any) -> Any:
    """A ruamel.yaml tree as plain dicts, lists and scalars (for comparing meanings)."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node


def load_yaml(path: Path, text: str | None) -> Any:
    """The round-trip document of `text` (an empty mapping for no text)."""
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError

    try:
        doc = _yaml().load(text or "")
    except YAMLError as exc:
        raise SettingsError(f"{path}: not valid YAML ({str(exc).splitlines()[0]}); "
                            "fix it or edit it by hand") from exc
    if doc is None:
        return CommentedMap()
    if not isinstance(doc, dict):
        raise SettingsError(f"{path}: expected a YAML mapping")
    return doc


def dump_yaml(doc: Any) -> str:
    import io

    out = io.StringIO()
    _yaml().dump(doc, out)
    return out.getvalue()


def edit_yaml(path: Path, change: Callable[[Any], None], *, removing: bool = False,
              clean: Callable[[Any], bool] | None = None) -> bool:
    """Apply `change` to the ruamel.yaml document of `path`; True when the file changed."""
    old = read_text(path)
    if removing and old is None:
        return False
    doc = load_yaml(path, old)
    before = plain(doc)
    was_clean = clean is not None and clean(copy.deepcopy(before))
    change(doc)
    after = plain(doc)
    if after == before and old is not None:
        return False
    new = dump_yaml(doc)
    if removing:
        had_orig = orig_path(path).exists()

        def same(text: str) -> bool:
            return bool(plain(load_yaml(path, text)) == after)

        new = restored(path, new, same)
        changed = write_text(path, old, new)
        if had_orig or new_path(path).exists():
            changed = _after_clean_removal(path, new, not after) or changed
        return changed
    if new != old:
        keep_orig(path, old, was_clean)
    return write_text(path, old, new)


def write_owned(path: Path, text: str) -> bool:
    """Write a file agentlog owns whole (no backup beside it); False when already `text`."""
    if read_text(path) == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic(path, text, None)
    return True
