"""The results widget (views/eval_table.py) on a real eval: sorting, filtering by status and
text, opening an item's run from its journal; every value escaped."""

from __future__ import annotations

from pathlib import Path

from flow_kernel.runtime.session import Session
from flow_kernel.views.eval_table import EvalTable, select
from tests.eval.cases import PROGRAM, write_cases


def test_table_sorts_filters_and_opens_a_run(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl", 40, bad=False)
    session = Session(directory=tmp_path, sandbox=False)
    program = PROGRAM.replace('    { label: "even" },\n  ]', '    { label: "<img src=x onerror=alert(1)>" },\n  ]')  # n9, n19…
    report = session.eval("classify", "cases.jsonl", program=program, scorers=["field:parity", "judge:grader"])
    assert [r.id for r in select(report, "not passed first", "errors", "")] == ["n36"]
    assert [r.id for r in select(report, "id", "not passed", "n2")] == ["n29"]  # the judge passes 0.6 (pass=0.5)
    assert [r.id for r in select(report, "id", "all", "n2")][:3] == ["n2", "n20", "n21"]
    lowest = select(report, "field:parity (lowest first)", "all", "")
    assert lowest[0].id == "n36" and {r.id for r in lowest[1:5]} == {"n9", "n19", "n29", "n39"}
    table = EvalTable(report, session.journal_dir)
    table.status.value = "not passed"
    table.text.value = "n3"
    assert "of 40 items" in table.table.value and "n36" in table.table.value and "n32" not in table.table.value
    table.run.value = report.results[3].run
    assert "classify" in table.run_view.value
    bundle = table.mimebundle()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "text/html" in bundle
    assert "<img" not in bundle["text/html"] and "&lt;img" in bundle["text/html"]
    assert "<img" not in table.table.value
