"""`%load_ext flow_kernel` in a real IPython kernel, over the Jupyter protocol: `%%flow`
reads Python values, `@flow_tool` functions are tools, `--out` lands in Python,
failures are Python errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kernel.kernel_helpers import execute, start


@pytest.fixture(scope="module")
def python_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # `--operator auto-approve` answers for the person: granted to this kernel as a person
    # would grant a headless run (test_operator_auto_approve_asks_the_person: without it).
    km, kc = start(tmp_path_factory.mktemp("ipython"), kernel_name="python3", allow="operator:auto-approve")
    assert execute(kc, "%load_ext flow_kernel").status == "ok"
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def test_operator_auto_approve_asks_the_person(tmp_path: Path) -> None:
    """Without a grant, `%%flow --operator auto-approve` is refused headless (with how to
    grant it), Deny at the capability prompt refuses it, Allow once lets it through."""
    from tests.kernel.test_kernel_widgets import run_and_click

    km, kc = start(tmp_path, kernel_name="python3")
    try:
        assert execute(kc, "%load_ext flow_kernel").status == "ok"
        cell = '%%flow --operator auto-approve\napprove "ship?"'
        refused = execute(kc, cell)
        assert refused.content["ename"] == "FlowCapabilityError", refused.outputs
        assert refused.error is not None and 'FLOW_ALLOW="operator:auto-approve"' in refused.error["traceback"][0]
        denied = run_and_click(kc, cell, "Deny")
        assert denied.content["ename"] == "FlowCapabilityError" and "you denied" in denied.content["evalue"]
        allowed = run_and_click(kc, cell, "Allow once")
        assert allowed.status == "ok" and allowed.result == "true", allowed.outputs
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_flow_reads_python_values_and_the_result_lands_in_python(python_kernel: Any) -> None:
    kc = python_kernel
    execute(kc, "tickets = [{'id': 'T1', 'title': 'refund'}, {'id': 'T2', 'title': 'login'}]")
    cell = execute(kc, '%%flow --out ids\nprint "tickets: ${len(tickets)}"\ntickets[*].id')
    assert cell.status == "ok", cell.outputs
    assert cell.stdout == "tickets: 2\n" and cell.result == '["T1", "T2"]'
    assert execute(kc, "ids").result == "['T1', 'T2']"


def test_declarations_and_bindings_persist_across_flow_cells(python_kernel: Any) -> None:
    kc = python_kernel
    assert execute(kc, "%%flow\ntype P = { name: string }\nlet who: P = { name: \"Ada\" }").status == "ok"
    assert execute(kc, '%%flow\n"hello ${who.name}"').result == "hello Ada"


def test_flow_tool_functions_are_tools(python_kernel: Any) -> None:
    kc = python_kernel
    execute(kc, "calls = []\n@flow_tool\ndef lookup(order_id):\n    calls.append(order_id)\n    return {'status': 'shipped'}")
    cell = execute(kc, '%%flow --out answer\ntool lookup(order_id: string) -> { status: string }\n'
                       'agent helper { model: "mock", tools: [lookup], output: { done: bool } }\nhelper("Where is my order?")')
    assert cell.status == "ok", cell.outputs
    assert execute(kc, "len(calls), sorted(answer)").result == "(1, ['done'])"


def test_operator_option_and_failures_as_python_errors(python_kernel: Any) -> None:
    kc = python_kernel
    approved = execute(kc, '%%flow --operator auto-approve\napprove "ship?"')
    assert approved.result == "true"
    failed = execute(kc, "%%flow\nlet xs = [1]\nxs[4]")
    assert failed.status == "error" and failed.content["ename"] == "FlowRunError"
    assert failed.error is not None and failed.error["traceback"][0].startswith("error[evaluation]")
    assert "   | xs[4]" in failed.error["traceback"]
    broken = execute(kc, "%%flow\nlet z = not_a_name_anywhere")
    assert broken.content["ename"] == "FlowCompileError"
    assert "[F2001]" in broken.error["traceback"][0]  # type: ignore[index]
    bad = execute(kc, "%%flow --out 9x\n1")
    assert bad.status == "error" and "not a Python name" in bad.content["evalue"]
    assert execute(kc, "%%flow\n1 + 1").result == "2"  # still working


def test_non_json_python_values_stay_unknown_to_flow(python_kernel: Any) -> None:
    kc = python_kernel
    execute(kc, "thing = object()")
    cell = execute(kc, "%%flow\nthing")
    assert cell.content["ename"] == "FlowCompileError" and "undefined name `thing`" in cell.content["evalue"]



def test_a_flow_cell_is_checked_once(python_kernel: Any) -> None:
    """Checked once, then run as checked; again only when it took Python values (their
    types change the check). It used to be probed, then compiled again, every time. The
    spy counts the compiles the session's compile cache really does (runtime/compile_cache.py)."""
    kc = python_kernel
    spy = ("checks = []\nimport flow_kernel.runtime.compile_cache as flow_cache\nreal_check = flow_cache.compile_source\n"
           "def counting_check(source, **options):\n    checks.append(source.name)\n"
           "    return real_check(source, **options)\n"
           "flow_cache.compile_source = counting_check")
    assert execute(kc, spy).status == "ok"
    assert execute(kc, "%%flow\nlet once = 20 + 1\nonce * 2").result == "42"
    assert execute(kc, "len(checks)").result == "1"
    execute(kc, "from_python = 5")
    assert execute(kc, "%%flow\nfrom_python + 1").result == "6"
    assert execute(kc, "len(checks), len(set(checks))").result == "(3, 2)"
    bad = execute(kc, "%%flow\nlet = 1")
    assert bad.content["ename"] == "FlowCompileError"
    assert execute(kc, "len(checks); flow_cache.compile_source = real_check; len(checks)").result == "4"


def test_flow_cells_get_the_run_view_and_its_summary(python_kernel: Any) -> None:
    kc = python_kernel
    cell = execute(kc, '%%flow --operator auto-approve\nagent a { model: "scripted", script: ["hi"] }\n'
                       'stage "greet" { let said = a("hello") }\nlet ok = approve "Done?"\nok')
    assert cell.status == "ok", cell.outputs
    shown = [c["data"] for c in cell.of("display_data")]
    # Headless (no allow_stdin): no live view, only the summary (issue 18).
    assert not [d for d in shown if "application/vnd.jupyter.widget-view+json" in d]
    text = shown[-1]["text/plain"].splitlines()
    assert text[0].startswith("Flow run: completed") and '  ✓ stage "greet"' in text
    assert '  approve "Done?" → yes (auto-approve)' in text
    assert "text/html" in shown[-1] and cell.result == "true"


def test_a_prompt_in_a_flow_cell_is_clicked(python_kernel: Any) -> None:
    from tests.kernel.test_kernel_widgets import run_and_click, summary

    kc = python_kernel
    reply = run_and_click(kc, '%%flow --operator interactive\nlet ok = approve "Ship?"\nok', "Approve")
    assert reply.status == "ok" and reply.result == "true"
    assert 'approve "Ship?" → yes (interactive)' in summary(reply)  # replacing the live view, named by its ids


def test_prints_belong_to_their_own_cell(python_kernel: Any) -> None:
    kc = python_kernel
    for word in ("one", "two", "three"):
        cell = execute(kc, f'%%flow\nprint "{word}"')
        assert cell.stdout == f"{word}\n"
