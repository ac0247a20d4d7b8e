"""`historyAnswer` in <home>/config.json: provider order and the model each may use.

Promises:
- Defaults are the seed's: preference codex, claude, opencode; codexModel "gpt-6-luna";
  claudeModel "haiku"; opencodeModel null (the first zero-priced model of the catalog).
- Only this key is read; the ordinary model defaults of delegation stay untouched.
- A malformed value is an `AnswerConfigError` naming the key and the value, never a
  silent fallback to a default model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cli.services.answers.base import AnswerError

PROVIDERS = ("codex", "claude", "opencode")

DEFAULTS: dict[str, Any] = {
    "preference": ["codex", "claude", "opencode"],
    "codexModel": "gpt-6-luna",
    "claudeModel": "haiku",
    "opencodeModel": None,
}


class AnswerConfigError(AnswerError):
    """config.json historyAnswer holds a value that cannot be used."""


@dataclass(frozen=True)
class AnswerConfig:
    preference: tuple[str, ...] = tuple(DEFAULTS["preference"])
    models: dict[str, str | None] = field(
        default_factory=lambda: {
            "codex": DEFAULTS["codexModel"],
            "claude": DEFAULTS["claudeModel"],
            "opencode": DEFAULTS["opencodeModel"],
        }
    )


def _model(raw: dict[str, Any], key: str, nullable: bool) -> str | None:
    if key not in raw:
        value: Any = DEFAULTS[key]
    else:
        value = raw[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        allowed = "a model id string" + (" or null" if nullable else "")
        raise AnswerConfigError(f"historyAnswer.{key}: expected {allowed}, got {value!r}")
    return value


def parse(config: dict[str, Any]) -> AnswerConfig:
    """The answer settings of a loaded config.json object."""
    raw = config.get("historyAnswer", {})
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise AnswerConfigError(f"historyAnswer: expected an object, got {raw!r}")
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise AnswerConfigError(f"historyAnswer: unknown key {unknown[0]!r}")
    pref = raw.get("preference", DEFAULTS["preference"])
    if not isinstance(pref, list) or not all(isinstance(p, str) for p in pref):
        raise AnswerConfigError(f"historyAnswer.preference: expected a list of names, got {pref!r}")
    for name in pref:
        if name not in PROVIDERS:
            raise AnswerConfigError(
                f"historyAnswer.preference: unknown provider {name!r} "
                f"(known: {', '.join(PROVIDERS)})"
            )
    if len(set(pref)) != len(pref):
        raise AnswerConfigError(f"historyAnswer.preference: duplicate provider in {pref!r}")
    return AnswerConfig(
        preference=tuple(pref),
        models={
            "codex": _model(raw, "codexModel", nullable=False),
            "claude": _model(raw, "claudeModel", nullable=False),
            "opencode": _model(raw, "opencodeModel", nullable=True),
        },
    )
