"""A failed run names where it got to (issue 17 item 5, runtime.md §5): the `parallelMap`
item, the `parallel` branch or the task the error escaped, nested frames outermost first
in `details.where`, through the real sandbox and `flow run` (text and `--format json`)
and the run view."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from flow_kernel.errors import FlowError
from flow_kernel.runtime.events.failure_report import describe_error
from flow_kernel.views.run_html import render_html
from flow_kernel.views.run_model import RunModel

ROOT = Path(__file__).resolve().parents[2]


def flow_run(tmp_path: Path, source: str, *extra: str) -> subprocess.CompletedProcess[str]:
    file = tmp_path / "prog.flow"
    file.write_text(source)
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", "run", str(file), *extra],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)


def failure(tmp_path: Path, source: str) -> dict[str, object]:
    out = flow_run(tmp_path, source, "--format", "json")
    assert out.returncode == 1, out.stderr
    error = json.loads(out.stdout)["error"]
    assert isinstance(error, dict)
    return error


def test_a_failing_parallel_map_item_is_named_with_its_line(tmp_path: Path) -> None:
    source = 'let xs = [1, 2, 0, 4]\n\nlet r = parallelMap(xs, x => 12 / x)\nr\n'
    error = failure(tmp_path, source)
    assert error["details"] == {"where": [{"item": 3, "of": "parallelMap"}]}  # counted from 1
    text = flow_run(tmp_path, source)
    assert text.returncode == 1
    assert "   = failed in item 3 of parallelMap at line 3\n" in text.stderr


def test_nested_parallel_maps_give_the_path(tmp_path: Path) -> None:
    source = 'parallelMap([7, 2], x => parallelMap([1, 2, 3], y => 10 / (x + y - 4)))\n'
    error = failure(tmp_path, source)
    assert error["details"] == {"where": [{"item": 2, "of": "parallelMap"}, {"item": 2, "of": "parallelMap"}]}
    source = 'parallelMap([5, 1], x => parallelMap([1, 2, 3], y => 10 / (x + y - 4)))\n'
    error = failure(tmp_path, source)
    assert error["details"] == {"where": [{"item": 2, "of": "parallelMap"}, {"item": 3, "of": "parallelMap"}]}
    assert "failed in item 3 of parallelMap in item 2 of parallelMap at line 1" in flow_run(tmp_path, source).stderr


def test_a_failing_task_is_named(tmp_path: Path) -> None:
    source = 'async frontend { let v = 1 }\nasync backend {\n  let v = parseJson("{")\n}\nawait frontend\nawait backend\n1\n'
    error = failure(tmp_path, source)
    assert error["code"] == "evaluation"
    assert error["details"]["where"] == [{"task": "backend"}]  # type: ignore[index]
    assert "   = failed in task backend at line 3\n" in flow_run(tmp_path, source).stderr


def test_an_unawaited_failing_task_is_named(tmp_path: Path) -> None:
    error = failure(tmp_path, 'async t { let v = parseJson("{") }\n1\n')
    assert error["details"]["where"] == [{"task": "t"}]  # type: ignore[index]


def test_a_failing_parallel_branch_is_named_inside_an_item(tmp_path: Path) -> None:
    source = 'parallelMap(["{}", "{"], s => parallel { ok: 1, parsed: parseJson(s) })\n'
    error = failure(tmp_path, source)
    assert error["details"]["where"] == [{"item": 2, "of": "parallelMap"}, {"branch": "parsed", "of": "parallel"}]  # type: ignore[index]
    assert "failed in branch parsed of parallel in item 2 of parallelMap at line 1" in flow_run(tmp_path, source).stderr


def test_an_error_caught_inside_the_item_has_no_where(tmp_path: Path) -> None:
    """`where` says what an error escaped: one caught within the item escaped nothing."""
    source = ('parallelMap([1], x => { try { let v = parseJson("{") } catch "evaluation" as e { print e.details }\n'
              '  x })\nrequire false\n')
    out = flow_run(tmp_path, source)
    assert out.returncode == 1
    assert "failed in" not in out.stderr


def test_the_error_output_shows_the_place_and_the_summary_does_not(tmp_path: Path) -> None:
    error = failure(tmp_path, 'parallelMap([1, 0], x => 1 / x)\n')
    model = RunModel()
    model.finish(error=error)
    # The place is the cell's error output's (describe_error), said once: not the summary's.
    assert "failed in" not in model.text() and "failed in" not in render_html(model, live=False)
    flow_error = FlowError.from_dto({"code": "evaluation", "message": "m", **error})
    assert flow_error.details == error["details"]
    assert "   = failed in item 2 of parallelMap at line 1" in describe_error(flow_error, lambda file, line: None)
