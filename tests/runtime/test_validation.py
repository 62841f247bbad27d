"""Validation messages write values as JSON (as Flow shows them, and as a model reads
them in a repair prompt), path first, in path order."""

from __future__ import annotations

import pytest

from flow_kernel.runtime.validation import schema_errors

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
