"""Surgical edits of one member of a JSONC object (opencode.jsonc), comments kept.

json-five parses the file into a model whose nodes carry their source offsets; an edit
replaces, inserts or deletes only the text of one member, so comments, trailing commas,
quoting and layout elsewhere stay byte for byte. Promises: `set_member` and
`remove_member` return text that json-five parses to the expected value (checked before
returning; `JsoncError` otherwise); nothing else in the text changes.
"""

from __future__ import annotations

import json
from typing import Any

from cli.services.errors import Failure


class JsoncError(Failure):
    """The text is not JSONC, or the edit cannot be made safely."""


def parse(text: str) -> Any:
    import json5

    try:
        return json5.loads(text)
    except Exception as exc:  # json-five raises several error types
        raise JsoncError(f"not valid JSONC ({exc})") from exc


def _model(text: str) -> Any:
    import json5
    from json5.loader import ModelLoader

    try:
        return json5.loads(text, loader=ModelLoader()).value
    except Exception as exc:
        raise JsoncError(f"not valid JSONC ({exc})") from exc


def _key(node: Any) -> str:
    return str(getattr(node, "characters", getattr(node, "name", "")))


def _find(obj: Any, key: str) -> int | None:
    for i, k in enumerate(obj.keys):
        if _key(k) == key:
            return i
    return None


def _skip(text: str, i: int) -> int:
    """The index of the next character that is not whitespace or inside a comment."""
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise JsoncError("unterminated comment")
            i = j + 2
        else:
            return i
    return i


def _indent_of(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip())]


def _dump(value: Any, indent: str, step: str) -> str:
    out = json.dumps(value, indent=len(step) if step.strip(" ") == "" and step else 2,
                     ensure_ascii=False)
    return out.replace("\n", "\n" + indent)


def _step(text: str) -> str:
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and line != stripped:
            return line[: len(line) - len(stripped)]
    return "  "


def _obj_at(root: Any, path: list[str]) -> tuple[Any, list[str]]:
    """The deepest existing object along `path`, and the keys still missing below it."""
    from json5.model import JSONObject

    node = root
    for depth, key in enumerate(path):
        i = _find(node, key)
        if i is None:
            return node, path[depth:]
        child = node.values[i]
        if not isinstance(child, JSONObject):
            raise JsoncError(f"'{key}' is not an object")
        node = child
    return node, []


def set_member(text: str, path: list[str], value: Any) -> str:
    """Set the member at `path` (objects along it are created) to `value`."""
    from json5.model import JSONObject

    root = _model(text)
    if not isinstance(root, JSONObject):
        raise JsoncError("the top level is not an object")
    obj, missing = _obj_at(root, path[:-1])
    missing = [*missing, path[-1]]
    step = _step(text)
    new_value: Any = value
    for key in reversed(missing[1:]):
        new_value = {key: new_value}
    key = missing[0]
    i = _find(obj, key)
    if i is not None:  # replace the value only
        node = obj.values[i]
        start, end = node._tok.index, node._end_tok.end
        out = text[:start] + _dump(new_value, _indent_of(text, start), step) + text[end:]
    else:
        out = _insert(text, obj, key, new_value, step)
    got = parse(out)
    for k in path:
        got = got[k]
    if got != value:
        raise JsoncError("the edit did not produce the expected value")
    return out


def _insert(text: str, obj: Any, key: str, value: Any, step: str) -> str:
    close = obj._end_tok.index
    if not obj.keys:  # "{}" or "{ // comment\n}"
        indent = _indent_of(text, obj._tok.index)
        member = f"{indent}{step}{json.dumps(key)}: {_dump(value, indent + step, step)}"
        return text[:close].rstrip(" \t") + "\n" + member + "\n" + indent + text[close:]
    last_end = obj.values[-1]._end_tok.end
    comma = _skip(text, last_end)
    has_comma = comma < len(text) and text[comma] == ","
    line_start = text.rfind("\n", 0, close) + 1
    member_indent = _indent_of(text, obj.keys[-1]._tok.index)
    dumped = _dump(value, member_indent, step)
    if text[line_start:close].strip() == "":  # "}" on its own line: our member before it
        member = f"{member_indent}{json.dumps(key)}: {dumped}{',' if has_comma else ''}\n"
        head = text[:line_start] if has_comma else text[:last_end] + "," + text[last_end:
                                                                                 line_start]
        return head + member + text[line_start:]
    sep = "" if has_comma else ","
    return text[:close].rstrip() + f"{sep} {json.dumps(key)}: {dumped} " + text[close:]


def remove_member(text: str, path: list[str]) -> str:
    """Remove the member at `path` (no change when it is absent)."""
    from json5.model import JSONObject

    root = _model(text)
    if not isinstance(root, JSONObject):
        raise JsoncError("the top level is not an object")
    obj, missing = _obj_at(root, path[:-1])
    if missing:
        return text
    i = _find(obj, path[-1])
    if i is None:
        return text
    start, end = obj.keys[i]._tok.index, obj.values[i]._end_tok.end
    after = _skip(text, end)
    if after < len(text) and text[after] == ",":
        end = after + 1
    elif i > 0:  # the last member without a trailing comma: drop the comma before it
        prev_end = obj.values[i - 1]._end_tok.end
        comma = _skip(text, prev_end)
        if comma < len(text) and text[comma] == ",":
            text = text[:comma] + text[comma + 1:]  # before `start`: both shift by one
            start, end = start - 1, end - 1
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:start].strip() == "" and text[end:line_end].strip() == "":
        start, end = line_start, min(line_end + 1, len(text))
    out = text[:start] + text[end:]
    got = parse(out)
    node = got
    for k in path[:-1]:
        node = node.get(k, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict) and path[-1] in node:
        raise JsoncError("the edit did not remove the member")
    return out
