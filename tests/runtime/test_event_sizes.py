"""The output ceiling counts the length of each event's data text (runtime/host.py
`emit_kept`, `vocabulary.data_text`). The agent pipeline adds up its calls' event sizes from
a template per agent and the text of each call's values (agents/pipeline.py
`_template_sizes`) instead of encoding every event: each size it gives must be the length
`json.dumps` gives, whatever the label, prompt, output, attempts and `of`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.vocabulary import data_text, text_size
from flow_kernel.runtime.host import HostServices
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

PROGRAMS = {
    "fan-out with escapes": '''agent a { model: "scripted", script: ["ok", "é \\"q\\"\\n\\t x", ""] }
workflow many() -> int {
  limits { concurrency: 3, agent_runs: 12 }
  return len(parallelMap(range(12), i => a("item ${i} ✓ \\"quoted\\" \\\\ tab\\t"), concurrency: 3))
}
many()''',
    "typed output and repair": '''type Out = { n: int, s: string, f: number, b: bool, l: int[] }
agent bot { model: "scripted", output: Out, repair: 1,
  script: [{ n: "wrong" }, { n: 2, s: "x\\u0001y", f: 1.5, b: false, l: [1, 2, 3] }] }
bot("go").n''',
    "numbers and a long label": '''agent f { model: "scripted", output: number, script: [1e300, -0.0, 2.5] }
agent i { model: "scripted", output: int, script: [12345678901234567890, -7] }
[f("a"), f("b"), f("c"), i("d"), i("e")]''',
    "expect feeds repair": '''agent bot { model: "scripted", output: int, script: [1, 2] }
let v = bot("go") expect it == 2 : "must be two"
v''',
    "retry and failure": '''agent bot { model: "scripted", retry: { on: ["agent-invocation"], attempts: 2 },
  script: [fail("agent-invocation", "flaky"), "ok", fail("agent-invocation", "down"), fail("agent-invocation", "down")] }
let x = bot("go")
try { let _r = bot("again") } catch "agent-invocation" as e { print e.message }
x''',
    "mock with a record": '''type P = { name: string, tags: string[] }
agent m { model: "mock", output: P }
m("who ☃")''',
    "team member and choice": '''agent a { model: "scripted", script: ["maybe", "yes"] }
agent b { model: "scripted", script: ["from b"] }
team t { main: a, members: [b] }
[a("pick", choice: ["yes", "no"], fallback: "no"), t.b("é"), t.main("x")]''',
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_pipeline_s_event_sizes_are_their_data_text_lengths(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[tuple[str, Any, int]] = []
    emit_kept = HostServices.emit_kept

    def watched(self: HostServices, kind: Any, span: Any, stage: Any, data: Any, order: Any, size: int | None = None,
                last: bool = False) -> None:
        if size is not None:
            given.append((kind, data, size))
        emit_kept(self, kind, span, stage, data, order, size, last)

    monkeypatch.setattr(HostServices, "emit_kept", watched)
    compiled = compile_source(SourceFile("f.flow", PROGRAMS[name]))
    assert compiled.python is not None, [d.message for d in compiled.check.diagnostics]
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext()))
    assert outcome.error is None, outcome.error
    assert given, "no event size was added up"
    for kind, data, size in given:
        assert size == len(json.dumps(data, ensure_ascii=False, default=str)), (kind, data)


@pytest.mark.parametrize("value", ["", "é \"q\" \\ \n\t\u0001\u2028", None, True, False, 0, -12, 10**30,
                                   1.5, -0.0, float("nan"), [1, "a"], (), {"k": [None]}, {1: 2}, object()])
def test_a_value_s_text_size_is_its_json_length(value: Any) -> None:
    assert text_size(value) == len(json.dumps(value, ensure_ascii=False, default=str)) == len(data_text(value))


def test_a_cycle_fails_as_json_dumps_fails() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference detected"):
        data_text({"a": cycle})


@pytest.mark.parametrize("usage", [{"input_tokens": 0, "output_tokens": 0}, {"input_tokens": 123, "output_tokens": -4},
                                   {"output_tokens": 5, "input_tokens": 70}, {"input_tokens": 1.5, "output_tokens": 2},
                                   {"input_tokens": True, "output_tokens": 2}, {"input_tokens": 1, "cached": 2}, {}])
def test_a_usage_s_size_is_its_json_length(usage: dict[str, Any]) -> None:
    from flow_kernel.runtime.agents.pipeline import _usage_size
    assert _usage_size(usage) == len(json.dumps(usage, ensure_ascii=False))


@pytest.mark.parametrize("log", [[{"kind": "attempt", "attempt": 1, "ok": True}], [],
                                 [{"kind": "attempt", "attempt": 1, "invalid": True, "errors": ["é"], "output": 1},
                                  {"kind": "repair", "attempt": 1, "ok": True}],
                                 [{"kind": "attempt", "attempt": 2, "ok": True}]])
def test_an_attempts_log_s_size_is_its_json_length(log: list[dict[str, Any]]) -> None:
    from flow_kernel.runtime.agents.pipeline import _attempts_size
    assert _attempts_size(log) == len(json.dumps(log, ensure_ascii=False))
