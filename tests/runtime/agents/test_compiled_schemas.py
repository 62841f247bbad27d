"""calls.py `CompiledSchemas`: a request's `schema` names a compiled schema only by its JSON
text (the order of keys aside), whether the sorted text or the agent's last schema answers;
a value Python calls equal but JSON writes otherwise (`true` for `1`, `0` for `false`) names
none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flow_kernel.lang.check import check
from flow_kernel.runtime.agents import calls
from flow_kernel.runtime.agents.calls import CompiledSchemas, sorted_json
from flow_kernel.source import SourceFile

SOURCE = """type Review = { score: int, summary: string, ok: bool }
agent a { model: "scripted", output: Review, script: [{score: 1, summary: "x", ok: true}] }
agent b { model: "scripted", script: ["x"] }
let r = a("x")
let s = b("y")
[r, s]
"""


@pytest.fixture
def schemas() -> CompiledSchemas:
    result = check(SourceFile("a.flow", SOURCE))
    assert not [d for d in result.diagnostics if d.severity.value == "error"]
    return CompiledSchemas(result)


def review(schemas: CompiledSchemas) -> dict[str, Any]:
    return next(s for s in schemas.by_text.values() if "$defs" in s)


def test_the_sent_schema_names_the_compiled_one_with_its_sorted_text(schemas: CompiledSchemas) -> None:
    compiled = review(schemas)
    sent = json.loads(json.dumps(compiled))  # as a request carries it
    assert schemas.find("a", sent) == (compiled, sorted_json(compiled))
    assert schemas.find("a", sent) == (compiled, sorted_json(compiled))  # the agent's last one


def test_an_agents_next_calls_skip_the_sorted_text(schemas: CompiledSchemas, monkeypatch: pytest.MonkeyPatch) -> None:
    texts: list[object] = []
    monkeypatch.setattr(calls, "sorted_json", lambda value: texts.append(value) or sorted_json(value))
    sent = json.loads(json.dumps(review(schemas)))
    for _ in range(3):
        assert schemas.find("a", json.loads(json.dumps(sent))) is not None
    assert len(texts) == 1


def test_the_order_of_keys_does_not_matter(schemas: CompiledSchemas) -> None:
    compiled = review(schemas)
    schemas.find("a", json.loads(json.dumps(compiled)))
    reordered = dict(reversed(list(json.loads(json.dumps(compiled)).items())))
    assert schemas.find("a", reordered) == (compiled, sorted_json(compiled))


@pytest.mark.parametrize("forged", [0, None, "false"])
def test_a_value_python_calls_equal_names_no_schema(schemas: CompiledSchemas, forged: object) -> None:
    compiled = review(schemas)
    schemas.find("a", json.loads(json.dumps(compiled)))  # the agent's last schema, tried first next
    sent = json.loads(json.dumps(compiled))
    sent["$defs"]["Review"]["additionalProperties"] = forged  # `0 == False` in Python
    assert schemas.find("a", sent) is None


def test_anything_else_names_no_schema(schemas: CompiledSchemas) -> None:
    assert schemas.find("b", ["not", "an", "object"]) is None
    assert schemas.find("b", {"$ref": "file:///etc/passwd"}) is None
