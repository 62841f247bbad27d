"""Every host path that shows a value takes the deepest a run may send (values.MAX_DEPTH,
256 levels) under the host's own recursion limit: the run's text and HTML views, the
widget's wire records, an artifact's output, the cell's result, `render_value`, and the
journal. (A result nested ~600 levels deep once ended `flow run` with a RecursionError
traceback from the host's rendering; the sandbox now refuses anything deeper than 256.)"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.frontend.outputs import result_bundle
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.run import run_compiled
from flow_kernel.runtime.value_text import render_value
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.artifacts import artifact_bundle
from flow_kernel.views.run_html import render_html, summary_bundle
from flow_kernel.views.run_model import RunModel
from flow_kernel.views.run_stream import Compactor
from tests.sandbox.bootstrap_import import values

MAX_DEPTH: int = values.MAX_DEPTH

# `x`: MAX_DEPTH levels of arrays; `r`: objects as deep, holding markup-like text.
PROGRAM = f"""limits {{ steps: 100000 }}
agent a {{ model: "scripted", output: any, script: [1] }}
var x: any = []
var r: any = "<b>deep</b>"
var n = 0
while n < {MAX_DEPTH - 1} {{
  x = [x]
  n = n + 1
}}
n = 0
while n < {MAX_DEPTH - 1} {{
  r = {{ k: r }}
  n = n + 1
}}
publish "deep.json" x
print(r)
let y = a("hi", context: r)
x
"""


def test_the_deepest_value_a_run_sends_is_shown_everywhere(tmp_path: Path) -> None:
    compiled = compile_source(SourceFile("deep.flow", PROGRAM))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(journal_dir=tmp_path)))
    assert outcome.error is None, outcome.error
    assert values.nests_deeper(outcome.result, MAX_DEPTH - 1) and not values.nests_deeper(outcome.result, MAX_DEPTH)
    assert sys.getrecursionlimit() <= 1000  # the host's default: nothing here raised it

    model = RunModel.from_events(outcome.events)
    model.finish(result=outcome.result)
    html, text, bundle = render_html(model), model.text(result=True), summary_bundle(model)
    assert "result: [[[" in text and "deep.json" in html and bundle["text/html"] == html
    assert "<b>deep" not in html
    compact = Compactor()
    records = [compact(event) for event in outcome.events]
    json.dumps(records)  # what the widget's comm sends
    published = [artifact_bundle(e["data"]) for e in outcome.events if e["type"] == "artifact.published"]
    assert len(published) == 1 and published[0] is not None
    assert published[0]["text/plain"].count("[") == MAX_DEPTH
    shown: dict[str, Any] = result_bundle(outcome.result)
    assert shown["application/json"] == outcome.result and shown["text/plain"].count("[") == MAX_DEPTH
    assert render_value(outcome.result) == "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert render_value({"k": 1}) == '{"k": 1}'
    journal = outcome.journal
    assert journal is not None
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    assert any(line.get("type") == "artifact.published" for line in lines)
