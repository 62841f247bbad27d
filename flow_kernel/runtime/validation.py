"""JSON Schema validation on the host (jsonschema, draft 2020-12), with errors as short
path-first messages that write values the way Flow does — as JSON (`"urgent"`, `true`,
`null`), not as Python reprs — since they are read by people and sent back to models in
repair prompts."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flow_kernel.errors import FlowError
from flow_kernel.short_text import shorten

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.exceptions import ValidationError

# jsonschema and referencing are imported when the first validator is built, not with this
# module: a run that validates nothing (most `flow run`s of a small program) does not pay
# their ~0.1 s of imports (jsonschema's format checkers import isoduration, arrow, …).


@functools.cache
def _validator_class() -> Any:
    """Draft 2020-12 with the regex keywords on RE2 (linear time, re2_keywords.py)."""
    import jsonschema

    from flow_kernel.runtime.re2_keywords import KEYWORDS

    return jsonschema.validators.extend(jsonschema.Draft202012Validator, KEYWORDS)  # type: ignore[no-untyped-call]


@functools.cache
def _nothing_remote() -> Any:
    """A registry that retrieves nothing: its default `retrieve` raises, so only references
    inside the schema itself resolve (and the draft's own meta-schemas, which jsonschema
    holds in memory). Without `registry=`, jsonschema falls back to its deprecated remote
    retrieval: any `http://` or `file://` reference would be fetched on the host."""
    import referencing

    registry: referencing.Registry[Any] = referencing.Registry()
    return registry


def schema_validator(schema: Any) -> jsonschema.protocols.Validator:
    """The one way the host builds a validator for a schema: fetches nothing, backtracks never."""
    validator: jsonschema.protocols.Validator = _validator_class()(schema, registry=_nothing_remote())
    return validator


def schema_errors(schema: Any, value: Any, validator: jsonschema.protocols.Validator | None = None) -> list[str]:
    """`"path/to/field: message"` for every way `value` fails `schema`, in path order."""
    import referencing.exceptions

    checker = validator or schema_validator(schema)
    try:
        errors = sorted(checker.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    except referencing.exceptions.Unresolvable as err:
        # The checker refuses a reference that leaves the schema (F3016); one that got past
        # it is an error here, and its target is named, never fetched.
        return [f"(root): the schema's reference {str(getattr(err, 'ref', '') or err)!r} is not in the schema, "
                "and nothing is fetched"]
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {describe(e)}" for e in errors]


def require_valid(schema: Any, value: Any, error: type[FlowError], what: str,
                  validator: jsonschema.protocols.Validator | None = None) -> None:
    """Raise `error` ("<what> does not match its schema: <first problem>", every problem in
    `details.errors`) unless `value` fits `schema`: workflow input and output, entry or nested."""
    described = schema_errors(schema, value, validator)
    if described:
        raise error(f"{what} does not match its schema: {described[0]}", details={"errors": described})


def _j(value: Any) -> str:  # a value in a schema error message: JSON, so `"1"` and `1` differ
    return shorten(value, 120, as_json=True)


def _names(values: list[Any]) -> str:
    return ", ".join(_j(v) for v in values)


# validator -> message from (the value, what the schema asked for)
_MESSAGES: dict[str, Callable[[Any, Any], str]] = {
    "type": lambda v, want: f"{_j(v)} is not of type {_names(want) if isinstance(want, list) else _j(want)}",
    "enum": lambda v, want: f"{_j(v)} is not one of {_names(want)}",
    "const": lambda v, want: f"{_j(want)} was expected, not {_j(v)}",
    "minimum": lambda v, want: f"{_j(v)} is less than the minimum of {_j(want)}",
    "maximum": lambda v, want: f"{_j(v)} is greater than the maximum of {_j(want)}",
    "exclusiveMinimum": lambda v, want: f"{_j(v)} is not greater than {_j(want)}",
    "exclusiveMaximum": lambda v, want: f"{_j(v)} is not less than {_j(want)}",
    "minLength": lambda v, want: f"{_j(v)} is shorter than {want} characters",
    "maxLength": lambda v, want: f"{_j(v)} is longer than {want} characters",
    "minItems": lambda v, want: f"{len(v)} items, fewer than the minimum of {want}",
    "maxItems": lambda v, want: f"{len(v)} items, more than the maximum of {want}",
    "pattern": lambda v, want: f"{_j(v)} does not match the pattern {_j(want)}",
}


def describe(error: ValidationError) -> str:
    """One validation error in words, values as JSON; jsonschema's own message where no
    rewording is known (it quotes values the Python way)."""
    validator = str(error.validator)
    value: Any = error.instance
    wanted: Any = error.validator_value
    if validator == "required" and isinstance(value, dict) and isinstance(wanted, list):
        missing = [k for k in wanted if k not in value]
        if missing:
            return f"the field {_j(missing[0])} is required"
    if validator == "additionalProperties" and isinstance(value, dict) and isinstance(error.schema, dict):
        known = set(error.schema.get("properties", {}))
        extra = [k for k in value if k not in known]
        if extra:
            return f"{'fields' if len(extra) > 1 else 'field'} {_names(extra)} {'are' if len(extra) > 1 else 'is'} not allowed"
    format_message = _MESSAGES.get(validator)
    if validator in ("pattern", "patternProperties") and str(error.message).startswith("the pattern "):
        return str(error.message)  # a pattern RE2 cannot run (re2_keywords.py), not a mismatch
    if format_message is not None:
        try:
            return format_message(value, wanted)
        except (TypeError, ValueError):
            pass
    return str(error.message)
