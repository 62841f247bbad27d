"""The Flow kernel over the real Jupyter protocol: jupyter_kernel_test's conformance
suite, then cells that build on each other, errors, interrupts and a sandbox crash —
with the kernel answering the next request after each."""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import jupyter_kernel_test
import psutil
import pytest

from tests.kernel.kernel_helpers import execute, start


class FlowKernelConformance(jupyter_kernel_test.KernelTests):
    kernel_name = "flow"
    language_name = "flow"
    file_extension = ".flow"
    code_hello_world = 'print "hello, world"'
    code_stderr = 'let same = 1 == "a"'  # F3015, a warning: shown on stderr above the run
    completion_samples = [{"text": "le", "matches": ["len", "let"]}]
    complete_code_samples = ['let x = 1', 'print "a"', "", "%who"]
    incomplete_code_samples = ["let x = [1,", 'let s = """abc', "let y = {"]
    invalid_code_samples = ["let x = )"]
    code_inspect_sample = "len"
    code_generate_error = "[1][5]"
    code_execute_result = [{"code": "6 * 7", "result": "42"}, {"code": '"a" + "b"', "result": "ab"}]
    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "6 [*] ?"

    @classmethod
    def setUpClass(cls) -> None:
        cls._dir = tempfile.TemporaryDirectory()
        # jupyter_kernel_test validates every iopub message and knows no comm messages:
        # the live run view (a widget) is off here; the other tests below have it on.
        cls.km, cls.kc = start(Path(cls._dir.name), live_view=False, history=Path(cls._dir.name) / "history.sqlite")

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls._dir.cleanup()


CORRUPT = b"not a database" * 64


@pytest.fixture(scope="module")
def kernel_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kernel")


@pytest.fixture(scope="module")
def kernel(kernel_folder: Path) -> Iterator[tuple[object, object]]:
    folder = kernel_folder
    (folder / "history.sqlite").write_bytes(CORRUPT)  # every test here runs with its history in memory
    km, kc = start(folder, history=folder / "history.sqlite")
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def test_kernel_info_has_flow_and_no_debugger(kernel: tuple[object, object]) -> None:
    _, kc = kernel
    info = kc.kernel_info(reply=True)["content"]  # type: ignore[attr-defined]
    assert info["language_info"]["name"] == "flow" and info["language_info"]["mimetype"] == "text/x-flow"
    assert "debugger" not in info["supported_features"]


def test_cells_build_on_each_other(kernel: tuple[object, object]) -> None:
    _, kc = kernel
    first = execute(kc, 'type P = { name: string }\nlet people: P[] = [{ name: "Ada" }]\nvar seen = 1\nprint "one"')
    assert first.status == "ok", first.outputs
    assert first.stdout == "one\n" and first.result is None
    second = execute(kc, 'seen = seen + len(people)\npeople[0].name')
    assert second.status == "ok" and second.result == "Ada"
    third = execute(kc, "seen")
    assert third.result == "2"
    fourth = execute(kc, 'workflow hello(p: P) -> string { return "hi ${p.name}" }\nhello(p: people[0])')
    assert fourth.result == "hi Ada"


def test_a_cells_outputs_come_in_order_before_its_idle(kernel: tuple[object, object]) -> None:
    """The reply does not wait for the IOPub thread (kernel/iopub.py); on iopub a cell's
    messages keep their order, its printed line and its result before its `idle`."""
    _, kc = kernel
    for n in range(5):
        msg_id = kc.execute(f'print "line {n}"\n{n} + 1')  # type: ignore[attr-defined]
        reply = kc.get_shell_msg(timeout=60)  # type: ignore[attr-defined]
        while reply["parent_header"].get("msg_id") != msg_id:  # an earlier request's reply
            reply = kc.get_shell_msg(timeout=60)  # type: ignore[attr-defined]
        assert reply["content"]["status"] == "ok"
        seen = []
        while not seen or seen[-1] != "idle":
            msg = kc.get_iopub_msg(timeout=60)  # type: ignore[attr-defined]
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] != "comm_msg":
                content = msg["content"]
                seen.append(content.get("execution_state") or content.get("text")
                            or content.get("data", {}).get("text/plain") or msg["msg_type"])
        assert [s for s in seen if s != "display_data"] == ["busy", "execute_input", f"line {n}\n", str(n + 1), "idle"]


def test_a_runtime_error_is_an_error_message_with_the_flow_line(kernel: tuple[object, object]) -> None:
    _, kc = kernel
    failed = execute(kc, 'let xs = [1, 2]\nlet a = 1\nlet b = xs[a + 5]')
    assert failed.status == "error" and failed.content["ename"] == "evaluation"
    error = failed.error
    assert error is not None and error["ename"] == "evaluation"
    assert error["traceback"][0].startswith("error[evaluation]:")
    assert any(":3:" in line for line in error["traceback"]) and "   | let b = xs[a + 5]" in error["traceback"]
    assert execute(kc, "a + 1").result == "2"  # bound before the failure: kept


def test_compile_errors_show_diagnostics_and_run_nothing(kernel: tuple[object, object]) -> None:
    _, kc = kernel
    broken = execute(kc, 'print "never"\nlet z = nope')
    assert broken.status == "error" and broken.content["ename"] == "CompileError"
    (shown,) = broken.of("display_data")
    assert "[F2001] error: undefined name `nope`" in shown["data"]["text/plain"]
    assert broken.stdout == ""


def test_magics(kernel: tuple[object, object]) -> None:
    _, kc = kernel
    from tests.kernel.test_kernel_widgets import run_and_click

    refused = execute(kc, "%operator auto-approve")  # headless: nobody granted it
    assert refused.content["ename"] == "CapabilityDenied" and 'FLOW_ALLOW="operator:auto-approve"' in refused.content["evalue"]
    assert execute(kc, "%operator").of("display_data")[-1]["data"]["text/plain"] == "operator: interactive"
    assert run_and_click(kc, "%operator auto-approve", "Allow once").status == "ok"  # a person at the prompt
    approved = execute(kc, 'approve "ship?"')
    assert approved.result == "true"
    bad = execute(kc, "%operator sometimes")
    assert bad.status == "error" and "unknown operator policy" in bad.content["evalue"]
    who = execute(kc, "%input limit = 3\n%who")
    texts = [c["data"]["text/plain"] for c in who.of("display_data")]
    assert texts[0] == "limit: int" and any("let       limit: int = 3" in t for t in texts)
    assert execute(kc, "limit * 2").result == "6"
    python = execute(kc, "%python\nlet q = limit + 1")
    assert "async def main(rt, args)" in python.of("display_data")[0]["data"]["text/plain"]
    checked = execute(kc, "%check\nlet q = limit + 1")
    assert checked.of("display_data")[0]["data"]["text/plain"] == "no diagnostics"
    assert execute(kc, "q").status == "error"  # %check ran nothing
    schema = execute(kc, "type Ticket = { id: string }\n%schema Ticket")
    assert schema.status == "error"  # magics come first in a cell
    execute(kc, "type Ticket = { id: string }")
    schema = execute(kc, "%schema Ticket")
    assert schema.of("display_data")[0]["data"]["application/json"]["$defs"]["Ticket"]["type"] == "object"
    explained = execute(kc, "%explain F2001")
    assert "F2001" in explained.of("display_data")[0]["data"]["text/plain"]
    runs = execute(kc, "%runs")
    assert "completed" in runs.of("display_data")[0]["data"]["text/plain"]


def test_interrupt_during_a_slow_agent_call(kernel: tuple[object, object]) -> None:
    km, kc = kernel
    msg_id = kc.execute('agent slowpoke { model: "scripted", script: [slow(20000ms, "late")] }\n'  # type: ignore[attr-defined]
                        'print "asking"\nslowpoke("hurry")')
    started = time.perf_counter()
    _wait_for_stdout(kc, msg_id, "asking")
    km.interrupt_kernel()  # type: ignore[attr-defined]
    from tests.kernel.kernel_helpers import collect

    reply = collect(kc, msg_id, started)
    assert reply.status == "error" and reply.content["ename"] == "cancelled"
    assert reply.seconds < 15  # interrupted, not waited out (the agent would take 20 s)
    assert execute(kc, "1 + 1").result == "2"


def test_a_sandbox_crash_mid_cell_is_an_error_and_the_next_cell_runs(kernel: tuple[object, object]) -> None:
    km, kc = kernel
    msg_id = kc.execute('agent slowpoke { model: "scripted", script: [slow(20000ms, "late")] }\n'  # type: ignore[attr-defined]
                        'print "asking"\nslowpoke("hurry")')
    started = time.perf_counter()
    _wait_for_stdout(kc, msg_id, "asking")
    kernel_process = psutil.Process(km.provisioner.pid)  # type: ignore[attr-defined]
    from tests.reliability.fault_helpers import is_sandbox

    nodes = [p for p in kernel_process.children(recursive=True) if is_sandbox(p)]
    assert nodes, "the kernel should have a sandbox process"
    for node in nodes:
        os.kill(node.pid, signal.SIGKILL)
    from tests.kernel.kernel_helpers import collect

    reply = collect(kc, msg_id, started)
    assert reply.status == "error" and reply.content["ename"] == "worker-crashed"
    assert execute(kc, '"still here"').result == "still here"


def _wait_for_stdout(kc: object, msg_id: str, text: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)  # type: ignore[attr-defined]
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream" and text in msg["content"]["text"]:
            return
    raise AssertionError(f"no {text!r} on stdout")


del threading


def test_a_malformed_setting_of_the_person_fails_each_cell_not_the_kernel(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.kernel.kernel_helpers import execute, start

    monkeypatch.setenv("FLOW_MAX_STEPS", "lots")
    km, kc = start(tmp_path)
    try:
        for _ in range(2):
            reply = execute(kc, "print 1")
            assert reply.status == "error" and reply.error is not None
            assert "FLOW_MAX_STEPS" in reply.error["evalue"] and "restart the kernel" in reply.error["evalue"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_corrupt_history_file_leaves_the_kernel_answering(kernel: tuple[object, object], kernel_folder: Path) -> None:
    _, kc = kernel
    assert execute(kc, "6 * 7").result == "42"
    msg_id = kc.history(hist_access_type="tail", n=1, output=True, raw=True)  # type: ignore[attr-defined]
    reply = kc.get_shell_msg(timeout=30)  # type: ignore[attr-defined]
    assert reply["parent_header"]["msg_id"] == msg_id
    ((session, line, (source, output)),) = reply["content"]["history"]
    assert (session, source, output) == (1, "6 * 7", "42") and line > 0
    assert (kernel_folder / "history.sqlite").read_bytes() == CORRUPT  # the person's file is left as it was
