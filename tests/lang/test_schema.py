"""JSON Schema generation (language.md §3.1): the mapping table, metaschema validity,
and sample values accepted or rejected exactly as the Flow types say."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from flow_kernel.lang import check
from flow_kernel.source import SourceFile

TYPES = """
type Severity = "low" | "medium" | "high"
type Ticket = { id: string, title: string(minLength: 1), body?: string }
type Open = { id: int, ... }
type Mixed = string | int[] | null
type Maybe = number?
type Counted = int(minimum: 0, maximum: 10)
type Tags = string[](minItems: 1, uniqueItems: true)
type Wait = duration
type Anything = any
type Outside = external
type Raw = schema { "type": "string", "format": "email" }
type One = "only"
type Nested = { tickets: Ticket[], severity: Severity }
workflow handle(tickets: Ticket[], strict?: bool) -> Nested {
  return { tickets: tickets, severity: "low" }
}
"""


@pytest.fixture(scope="module")
def result() -> Any:
    r = check(SourceFile("types.flow", TYPES))
    assert r.ok, r.diagnostics
    return r


def schema(result: Any, name: str) -> dict[str, Any]:
    s = result.schema_for(name)
    assert s is not None
    Draft202012Validator.check_schema(s)
    return s  # type: ignore[no-any-return]


def valid(s: dict[str, Any], value: object) -> bool:
    return Draft202012Validator(s).is_valid(value)


def test_mapping_table(result: Any) -> None:
    defs = schema(result, "Nested")["$defs"]
    assert defs["Severity"] == {"type": "string", "enum": ["low", "medium", "high"]}
    assert defs["Ticket"] == {
        "type": "object",
        "properties": {"id": {"type": "string"}, "title": {"type": "string", "minLength": 1}, "body": {"type": "string"}},
        "required": ["id", "title"],
        "additionalProperties": False,
    }
    assert schema(result, "Wait")["$defs"]["Wait"] == {"type": "integer", "minimum": 0}
    assert schema(result, "Anything")["$defs"]["Anything"] == {}
    assert schema(result, "Outside")["$defs"]["Outside"] == {}
    assert schema(result, "One")["$defs"]["One"] == {"const": "only"}
    assert schema(result, "Open")["$defs"]["Open"]["additionalProperties"] is True
    assert schema(result, "Mixed")["$defs"]["Mixed"] == {
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}, {"type": "null"}]
    }


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("Severity", ["low", "high"], ["urgent", 1, None]),
        ("Ticket", [{"id": "T1", "title": "x"}, {"id": "T1", "title": "x", "body": "b"}],
         [{"id": "T1"}, {"id": "T1", "title": ""}, {"id": "T1", "title": "x", "extra": 1}, {"id": 1, "title": "x"}]),
        ("Open", [{"id": 1}, {"id": 1, "more": [1]}], [{"id": 1.5}, {}]),
        ("Mixed", ["s", [1, 2], None], [[1.5], {"a": 1}, True]),
        ("Maybe", [1, 2.5, None], ["1"]),
        ("Counted", [0, 10], [-1, 11, 2.5]),
        ("Tags", [["a"], ["a", "b"]], [[], ["a", "a"], [1]]),
        ("Wait", [0, 250], [-1, 1.5, "1s"]),
        ("Anything", [None, 1, "x", [1], {"a": {}}], []),
        ("Raw", ["a@b.c"], [1]),
        ("One", ["only"], ["other"]),
    ],
)
def test_values_validate_as_the_type_says(result: Any, name: str, good: list[object], bad: list[object]) -> None:
    s = schema(result, name)
    for value in good:
        assert valid(s, value), value
    for value in bad:
        assert not valid(s, value), value


def test_workflow_input_and_output(result: Any) -> None:
    s = result.schema_for("handle")
    assert set(s) == {"input", "output"}
    for part in s.values():
        Draft202012Validator.check_schema(part)
    inp = s["input"]
    assert inp["required"] == ["tickets"] and inp["additionalProperties"] is False
    assert valid(inp, {"tickets": [{"id": "a", "title": "t"}]})
    assert valid(inp, {"tickets": [], "strict": True})
    assert not valid(inp, {"strict": True})
    assert not valid(inp, {"tickets": [], "other": 1})
    assert valid(s["output"], {"tickets": [], "severity": "medium"})
    assert not valid(s["output"], {"tickets": [], "severity": "none"})


def test_unknown_name_has_no_schema(result: Any) -> None:
    assert result.schema_for("Nope") is None
