"""JSON Schema validation on the host (jsonschema, draft 2020-12), with errors as short
path-first messages that write values the way Flow does — as JSON (`"urgent"`, `true`,
`null`), not as Python reprs — since they are read by people and sent back to models in
repair prompts."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError


def schema_errors(schema: Any, value: Any, validator: jsonschema.protocols.Validator | None = None) -> list[str]:
    """`"path/to/field: message"` for every way `value` fails `schema`, in path order."""
    checker = validator or jsonschema.Draft202012Validator(schema)
    errors = sorted(checker.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {describe(e)}" for e in errors]


def _j(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:119] + "…"


def _names(values: list[Any]) -> str:
    return ", ".join(_j(v) for v in values)


_MESSAGES: dict[str, Callable[[ValidationError], str]] = {
    "type": lambda e: f"{_j(e.instance)} is not of type "
                      f"{_names(e.validator_value) if isinstance(e.validator_value, list) else _j(e.validator_value)}",
    "enum": lambda e: f"{_j(e.instance)} is not one of {_names(e.validator_value)}",
    "const": lambda e: f"{_j(e.validator_value)} was expected, not {_j(e.instance)}",
    "minimum": lambda e: f"{_j(e.instance)} is less than the minimum of {_j(e.validator_value)}",
    "maximum": lambda e: f"{_j(e.instance)} is greater than the maximum of {_j(e.validator_value)}",
    "exclusiveMinimum": lambda e: f"{_j(e.instance)} is not greater than {_j(e.validator_value)}",
    "exclusiveMaximum": lambda e: f"{_j(e.instance)} is not less than {_j(e.validator_value)}",
    "minLength": lambda e: f"{_j(e.instance)} is shorter than {e.validator_value} characters",
    "maxLength": lambda e: f"{_j(e.instance)} is longer than {e.validator_value} characters",
    "minItems": lambda e: f"{len(e.instance)} items, fewer than the minimum of {e.validator_value}",
    "maxItems": lambda e: f"{len(e.instance)} items, more than the maximum of {e.validator_value}",
    "pattern": lambda e: f"{_j(e.instance)} does not match the pattern {_j(e.validator_value)}",
}


def describe(error: ValidationError) -> str:
    """One validation error in words, values as JSON; jsonschema's own message where no
    rewording is known (it quotes values the Python way)."""
    validator = str(error.validator)
    if validator == "required" and isinstance(error.instance, dict) and isinstance(error.validator_value, list):
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:
            return f"the field {_j(missing[0])} is required"
    if validator == "additionalProperties" and isinstance(error.instance, dict) and isinstance(error.schema, dict):
        known = set(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in known]
        if extra:
            return f"{'fields' if len(extra) > 1 else 'field'} {_names(extra)} {'are' if len(extra) > 1 else 'is'} not allowed"
    format_message = _MESSAGES.get(validator)
    if format_message is not None:
        try:
            return format_message(error)
        except (TypeError, ValueError):
            pass
    return str(error.message)
