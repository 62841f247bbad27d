"""The calls the code generator writes (lang/codegen_calls.py): each kind of callee becomes
its own `rt` call, and only the options a call gives are passed."""

from __future__ import annotations

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source

PROGRAM = '''agent helper { model: "scripted", script: ["ok"] }
team crew { main: helper, members: [helper] }
rubric fit { criteria: [{ id: "ok", description: "Is it fine?" }] }
panel check_it { experts: [{ agent: helper, domain: "all" }], rubric: fit }
workflow double(n: int) -> int { return n * 2 }
let a = helper("hi", label: "greet") expect it != "" : "not empty"
let b = crew.main("hi")
let c = double(2)
let d = parallelMap([1, 2], x => x + 1, concurrency: 2)
let e = len("abc")
let f = now()
let g = check_it("a candidate")
'''


def python_of(source: str) -> str:
    compiled = compile_source(SourceFile("calls.flow", source))
    assert compiled.ok and compiled.python is not None, [d.message for d in compiled.check.errors]
    return compiled.python


def test_each_callee_is_its_own_runtime_call() -> None:
    python = python_of(PROGRAM)
    assert "await rt.agent('helper', 'hi', {'schema': " in python
    assert "'label': 'greet'" in python and "x_" in python  # the expect clause: a check function
    assert "await rt.team('crew', 'main', None, 'hi', {'schema': " in python
    assert "await rt.workflow('double', w_" in python
    assert "await rt.parallel_map([1, 2], l_" in python and ", 2)" in python
    assert "rt.fn_len('abc')" in python and "await rt.fn_len" not in python  # no lambda: not awaited
    assert "await rt.now()" in python
    assert "await rt.panel('check_it', 'a candidate', {'experts': [{'agent': 'helper', 'domain': 'all'}]" in python


def test_an_agent_call_without_a_label_is_labelled_where_it_stands() -> None:
    python = python_of('agent helper { model: "scripted", script: ["ok"] }\nlet a = helper("hi")\n')
    assert "'label': 'helper@2:9'" in python and "'context'" not in python
