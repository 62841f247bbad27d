"""JSON Schema validation on the host (jsonschema, draft 2020-12), with errors as
short path-first messages."""

from __future__ import annotations

from typing import Any

import jsonschema


def schema_errors(schema: Any, value: Any, validator: jsonschema.protocols.Validator | None = None) -> list[str]:
    """`"path/to/field: message"` for every way `value` fails `schema`, in path order."""
    checker = validator or jsonschema.Draft202012Validator(schema)
    errors = sorted(checker.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors]
