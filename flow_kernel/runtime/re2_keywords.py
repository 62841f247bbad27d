"""The JSON Schema keywords that match regexes, on RE2 (flow_kernel/lang/patterns.py).

jsonschema matches `pattern`, `patternProperties` (and, through them, `additionalProperties`
and `unevaluatedProperties`) with Python's backtracking `re`: `^(a+)+$` against 30
characters of a model's reply held the host's loop for tens of seconds, past the run's
`duration`. These are jsonschema 4.26's own keyword functions (MIT licence) with
the one change that matters: every match is `patterns.search`, linear in the text.
`validation.schema_validator` installs them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import ValidationError

from flow_kernel.lang.patterns import PatternError, pattern_problem, search

Errors = Iterator[ValidationError]
# (`validator` is a jsonschema validator instance; its `descend`/`evolve`/`_resolver` are
# not in jsonschema's typing protocol, so it is `Any` here.)


def _matches(pattern: str, text: str) -> bool:
    try:
        return search(pattern, text)
    except PatternError:
        return False  # reported by `pattern`/`patternProperties` below, never retried on `re`


def _unusable(pattern: str) -> ValidationError | None:
    # The checker refuses such a pattern (F3013, F3016), so only a schema that skipped the
    # checker gets here: an error, never a fall back to a backtracking engine.
    err = pattern_problem(pattern)
    return ValidationError(f"the pattern {pattern!r} cannot be used: {err.reason}") if err is not None else None


def pattern(validator: Any, patrn: str, instance: Any, schema: dict[str, Any]) -> Errors:
    if not validator.is_type(instance, "string"):
        return
    unusable = _unusable(patrn)
    if unusable is not None:
        yield unusable
    elif not _matches(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def patternProperties(validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Errors:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in patterns.items():
        unusable = _unusable(patrn)
        if unusable is not None:
            yield unusable
            continue
        for key, value in instance.items():
            if _matches(patrn, key):
                yield from validator.descend(value, subschema, path=key, schema_path=patrn)


def _additional(instance: dict[str, Any], schema: dict[str, Any]) -> Iterator[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    for key in instance:
        if key not in properties and not any(_matches(p, key) for p in patterns):
            yield key


def additionalProperties(validator: Any, extra_schema: Any, instance: Any, schema: dict[str, Any]) -> Errors:
    if not validator.is_type(instance, "object"):
        return
    extras = set(_additional(instance, schema))
    if validator.is_type(extra_schema, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], extra_schema, path=extra)
    elif not extra_schema and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            names = sorted(extras, key=str)
            yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, names))} "
                                  f"{'was' if len(names) == 1 else 'were'} unexpected)")


def _valid(errors: Errors) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> list[str]:
    """jsonschema's `find_evaluated_property_keys_by_schema`, patterns on RE2."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            keys.extend(_evaluated_keys(validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                                        instance, resolved.contents))
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys += (key for key, value in instance.items() if _valid(validator.descend(value, subschema)))
    if "patternProperties" in schema:
        for key in instance:
            for patrn in schema["patternProperties"]:
                if _matches(patrn, key):
                    keys.append(key)
    if "dependentSchemas" in schema:
        for key, subschema in schema["dependentSchemas"].items():
            if key in instance:
                keys += _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys += _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys += _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys += _evaluated_keys(validator, instance, schema["else"])
    return keys


def unevaluatedProperties(validator: Any, extra_schema: Any, instance: Any, schema: dict[str, Any]) -> Errors:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    unevaluated = [key for key in instance if key not in evaluated
                   for _ in validator.descend(instance[key], extra_schema, path=key, schema_path=key)]
    if unevaluated:
        names = ", ".join(map(repr, sorted(set(unevaluated), key=str)))
        if extra_schema is False:
            yield ValidationError(f"Unevaluated properties are not allowed ({names} unexpected)")
        else:
            yield ValidationError(f"Unevaluated properties are not valid under the given schema ({names} "
                                  "unevaluated and invalid)")


KEYWORDS = {
    "pattern": pattern,
    "patternProperties": patternProperties,
    "additionalProperties": additionalProperties,
    "unevaluatedProperties": unevaluatedProperties,
}
