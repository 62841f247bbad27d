"""Validation messages write values as JSON (as Flow shows them, and as a model reads
them in a repair prompt), path first, in path order."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from flow_kernel.lang import check
from flow_kernel.runtime.validation import schema_errors
from flow_kernel.source import SourceFile

TICKET = {"type": "object", "additionalProperties": False, "required": ["id", "severity"],
          "properties": {"id": {"type": "string", "pattern": "^T[0-9]+$", "maxLength": 5},
                         "severity": {"enum": ["low", "high"]},
                         "score": {"type": "number", "minimum": 0, "maximum": 1},
                         "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
                         "kind": {"const": "ticket"}, "count": {"type": "integer", "exclusiveMinimum": 0}}}


@pytest.mark.parametrize(("value", "expected"), [
    ({"id": "T1", "severity": "urgent"}, ['severity: "urgent" is not one of "low", "high"']),
    ({"severity": "low"}, ['(root): the field "id" is required']),
    ({"id": "T1", "severity": "low", "x": 1, "y": None}, ['(root): fields "x", "y" are not allowed']),
    ({"id": 7, "severity": "low"}, ['id: 7 is not of type "string"']),
    ({"id": "X123456", "severity": "low"}, ['id: "X123456" does not match the pattern "^T[0-9]+$"',
                                            'id: "X123456" is longer than 5 characters']),
    ({"id": "T1", "severity": "low", "score": 1.5, "count": 0},
     ["count: 0 is not greater than 0", "score: 1.5 is greater than the maximum of 1"]),
    ({"id": "T1", "severity": "low", "tags": []}, ["tags: 0 items, fewer than the minimum of 1"]),
    ({"id": "T1", "severity": "low", "tags": ["a", True, "c"]},
     ["tags: 3 items, more than the maximum of 2", 'tags/1: true is not of type "string"']),
    ({"id": "T1", "severity": "low", "kind": "bug"}, ['kind: "ticket" was expected, not "bug"']),
    (None, ['(root): null is not of type "object"']),
])
def test_messages_quote_values_as_json(value: object, expected: list[str]) -> None:
    assert sorted(schema_errors(TICKET, value)) == sorted(expected)


def test_a_valid_value_has_no_errors_and_unknown_keywords_keep_jsonschemas_words() -> None:
    assert schema_errors(TICKET, {"id": "T1", "severity": "high", "tags": ["billing"]}) == []
    assert schema_errors({"uniqueItems": True}, [1, 1]) == ["(root): [1, 1] has non-unique elements"]


# -- the host's validator: regex keywords on RE2, references only inside the schema ------------

PARITY_SCHEMAS: list[dict[str, object]] = [
    {"type": "string", "pattern": "^[a-z]+[0-9]*$"},
    {"type": "object", "patternProperties": {"^x-": {"type": "integer"}, "id$": {"type": "string"}}},
    {"type": "object", "properties": {"a": {}}, "patternProperties": {"^x-": {}}, "additionalProperties": False},
    {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
    {"type": "object", "patternProperties": {"^x-": {}}, "unevaluatedProperties": False},
    {"type": "object", "allOf": [{"properties": {"a": {}}}, {"patternProperties": {"^b": {}}}],
     "unevaluatedProperties": {"type": "integer"}},
    {"$defs": {"base": {"patternProperties": {"^k": {"type": "string"}}}}, "$ref": "#/$defs/base",
     "if": {"required": ["mode"]}, "then": {"properties": {"mode": {}}}, "unevaluatedProperties": False},
]
PARITY_VALUES: list[object] = ["abc", "abc12", "Abc", 3, {}, {"a": 1}, {"x-1": 2}, {"x-1": "no"}, {"id": "i", "bid": 2},
                               {"b1": 1, "c": 2}, {"c": "s"}, {"kx": "s", "mode": 1}, {"kx": 1}, {"z": 1, "mode": 2}]


@pytest.mark.parametrize("schema", PARITY_SCHEMAS)
def test_the_re2_keywords_judge_as_jsonschemas_own(schema: dict[str, object]) -> None:
    # re2_keywords.py is jsonschema's code with RE2 for `re`: on patterns both engines
    # read alike, every value is valid or invalid exactly as the stock validator says.
    stock = Draft202012Validator(schema)
    for value in PARITY_VALUES:
        assert (schema_errors(schema, value) == []) == stock.is_valid(value), value


def test_a_catastrophic_pattern_is_linear_in_every_regex_keyword() -> None:
    attack = "a" * 5000 + "!"
    slow = "^(a+)+$"
    assert schema_errors({"pattern": slow}, attack) == [f'(root): "{"a" * 118}… does not match the pattern "{slow}"']
    assert schema_errors({"patternProperties": {slow: False}, "additionalProperties": False}, {attack: 1})
    assert schema_errors({"patternProperties": {slow: True}, "unevaluatedProperties": False}, {attack: 1})


def test_a_pattern_re2_cannot_run_is_an_error_not_a_fallback() -> None:
    assert schema_errors({"pattern": "(a)\\1"}, "aa")[0].startswith("(root): the pattern '(a)\\\\1' cannot be used: back-references")


def test_a_reference_outside_the_schema_is_an_error_not_a_fetch() -> None:
    assert schema_errors({"$ref": "http://127.0.0.1:9/x.json"}, 1) == [
        "(root): the schema's reference 'http://127.0.0.1:9/x.json' is not in the schema, and nothing is fetched"]


def test_a_nested_raw_schema_keeps_its_local_references() -> None:
    # `#/$defs/name` means the raw schema's own root; once nested in a bigger document, the
    # schema sits under `$defs` and its references move with it (lang/schema.py).
    source = ('type Names = schema { "type": "array", "items": { "$ref": "#/$defs/name" },\n'
              '  "$defs": { "name": { "type": "string", "minLength": 2 } } }\n'
              'type Team = { names: Names, lead: Names }\n')
    result = check(SourceFile("t.flow", source))
    assert result.ok, result.diagnostics
    schema = result.schema_for("Team")
    assert schema is not None
    Draft202012Validator.check_schema(schema)
    assert schema_errors(schema, {"names": ["ab", "cd"], "lead": ["ef"]}) == []
    assert schema_errors(schema, {"names": ["ab", "c"], "lead": [1]}) == [
        'lead/0: 1 is not of type "string"', 'names/1: "c" is shorter than 2 characters']
