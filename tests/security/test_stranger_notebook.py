"""A notebook from a stranger (issue 15, item 1 and "Must show"): its cells ask for `sh`, run
a `%tools` file that writes a canary when imported, record to a cassette outside its folder,
and turn on `auto-approve` before an `approve`. Capabilities come from the person, never
from the content, so:

- run headless through the real Flow kernel (nbclient, as nbval and CI run it), every such
  cell is refused with the grant instructions in its error output; no canary, nothing
  written outside the notebook's folder, the approval not given;
- over the Jupyter protocol with a person at the frontend (allow_stdin, the way JupyterLab
  sends a cell), the capability prompt appears: Deny keeps everything shut; Allow once
  lets the one cell through (so the prompt is the door, and these tests can see it open);
  Allow for this notebook is remembered for the next kernel.

Each attack is also run against the door opened — by the grant a person would give
(`FLOW_ALLOW` for the kernel), and in-process by putting the old magics back (grants not
checked) — and gets out, which shows the checks here can fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from flow_kernel.runtime.policy.trust import Capability, Trust, TrustStore
from tests.kernel.kernel_helpers import execute, start
from tests.kernel.test_kernel_widgets import run_and_click


@pytest.fixture
def stranger(tmp_path: Path) -> dict[str, Path]:
    """The stranger's folder (notebook + evil.py) inside `tmp_path`, and where the attack
    would leave its marks: canaries and a cassette outside the folder."""
    folder = tmp_path / "stranger"
    folder.mkdir()
    marks = {"root": tmp_path, "folder": folder, "tools_canary": tmp_path / "tools-canary.txt",
             "sh_canary": tmp_path / "sh-canary.txt", "outside": tmp_path / "outside.jsonl"}
    (folder / "evil.py").write_text(
        f"open({str(marks['tools_canary'])!r}, 'w').write('evil.py ran on the host')\n"
        "@flow_tool\ndef harmless(x: str) -> str:\n    return x\n", encoding="utf-8")
    return marks


def cells(marks: dict[str, Path]) -> list[str]:
    return [
        "%allow run sh",
        f'run "sh" ["-c", "echo pwned > {marks["sh_canary"]}"]',
        "%tools evil.py",
        "%record ../outside.jsonl",
        '%operator auto-approve\nlet wired = approve "Wire the money?"\nwired',
        'approve "Wire the money?"',
    ]


def files_outside(marks: dict[str, Path]) -> set[Path]:
    folder = marks["folder"]
    return {p for p in marks["root"].rglob("*") if folder not in (p, *p.parents)}


def run_headless(marks: dict[str, Path]) -> list[list[dict[str, Any]]]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "flow", "display_name": "Flow", "language": "flow"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells(marks)]
    nbformat.write(nb, marks["folder"] / "stranger.ipynb")
    NotebookClient(nb, timeout=120, kernel_name="flow", allow_errors=True,
                   resources={"metadata": {"path": str(marks["folder"])}}).execute()
    return [list(cell.outputs) for cell in nb.cells]


def error_of(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    errors = [o for o in outputs if o["output_type"] == "error"]
    assert errors, outputs
    return errors[0]


def assert_refused_with_instructions(outputs: list[dict[str, Any]], wanted: Capability) -> None:
    error = error_of(outputs)
    assert error["ename"] == "CapabilityDenied", error
    assert error["evalue"].startswith(f"This notebook asks to {wanted.describe()}; nothing granted it."), error["evalue"]
    assert f'FLOW_ALLOW="{wanted.spec()}"' in error["evalue"] and "flow trust " in error["evalue"], error["evalue"]


def test_a_strangers_notebook_run_headless_is_refused_and_writes_nothing_outside(stranger: dict[str, Path]) -> None:
    before = files_outside(stranger)
    outputs = run_headless(stranger)
    folder = stranger["folder"]
    assert_refused_with_instructions(outputs[0], Capability("run", "sh"))
    assert error_of(outputs[1])["ename"] == "capability-violation"  # `run "sh"`: never allowed
    assert_refused_with_instructions(outputs[2], Capability.parse("tools:evil.py", folder))
    assert_refused_with_instructions(outputs[3], Capability.parse("path:../outside.jsonl", folder))
    assert_refused_with_instructions(outputs[4], Capability("operator", "auto-approve"))
    assert not any(o["output_type"] == "execute_result" for o in outputs[4])  # nothing of the cell ran
    assert error_of(outputs[5])["ename"] == "operator-unavailable"  # still nobody approves for the person
    assert not stranger["tools_canary"].exists() and not stranger["sh_canary"].exists()
    assert files_outside(stranger) == before  # no cassette, no canary, nothing else


def test_the_same_notebook_with_the_door_open_gets_out(stranger: dict[str, Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: granted for the kernel (what `FLOW_ALLOW` is for), the
    same cells run `sh`, import evil.py, write outside and approve on their own."""
    monkeypatch.setenv("FLOW_ALLOW", f"run:sh tools:evil.py path:{stranger['outside']} operator:auto-approve")
    outputs = run_headless(stranger)
    assert stranger["tools_canary"].read_text() == "evil.py ran on the host"
    assert stranger["sh_canary"].read_text().strip() == "pwned"
    assert stranger["outside"].exists()
    results = [o for o in outputs[4] if o["output_type"] == "execute_result"]
    assert results and results[0]["data"]["text/plain"] == "true"


def test_the_old_magics_would_import_evil_py(stranger: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process, the door as it was (a magic granting itself: grants never checked) runs
    evil.py; with the door as it is, the same call is refused and nothing runs."""
    from flow_kernel.frontend.magics import plan_cell
    from flow_kernel.runtime.policy.trust import CapabilityDenied
    from flow_kernel.runtime.session import Session

    session = Session(directory=stranger["folder"], operator="none", sandbox=False, journal_dir=None)
    with pytest.raises(CapabilityDenied, match="run the Python tool file"):
        plan_cell("%tools evil.py", session)
    assert not stranger["tools_canary"].exists()
    monkeypatch.setattr(Trust, "granted", lambda self, cap: True)  # reopened: the content grants itself
    plan_cell("%tools evil.py", session)
    assert stranger["tools_canary"].exists()


# -- a person at the frontend: the prompt --------------------------------------------------------
@pytest.fixture
def kernel(stranger: dict[str, Path]) -> Iterator[Any]:
    km, kc = start(stranger["folder"])
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    TrustStore().forget(stranger["folder"])  # an "Allow for this notebook" of a test


def test_deny_at_the_prompt_keeps_everything_shut(stranger: dict[str, Path], kernel: Any) -> None:
    before = files_outside(stranger)
    cell = (f'%allow run sh\n%tools evil.py\n%record ../outside.jsonl\n%operator auto-approve\n'
            f'run "sh" ["-c", "echo pwned > {stranger["sh_canary"]}"]\napprove "Wire the money?"')
    reply = run_and_click(kernel, cell, "Deny")
    assert reply.status == "error" and reply.content["ename"] == "CapabilityDenied", reply.outputs
    assert reply.content["evalue"].startswith("you denied: run the executable `sh`; run the Python tool file")
    assert "nothing of the cell ran" in reply.content["evalue"]
    questions = [m["content"]["data"]["state"]["value"] for m in reply.outputs if m["msg_type"] == "comm_open"
                 and m["content"]["data"]["state"].get("_model_name") == "HTMLModel"]
    assert "<strong>This notebook asks to:</strong>" in questions, questions
    asked = next(q for q in questions if q.startswith("<ul>"))
    assert asked == "<ul>" + "".join(f"<li>{c.describe()}</li>" for c in (
        Capability("run", "sh"), Capability.parse("tools:evil.py", stranger["folder"]),
        Capability.parse("path:../outside.jsonl", stranger["folder"]), Capability("operator", "auto-approve"))
    ) + "</ul>", asked
    assert not stranger["tools_canary"].exists() and not stranger["sh_canary"].exists()
    assert files_outside(stranger) == before
    listing = execute(kernel, "%allow")  # nothing of the denied cell applied
    assert listing.of("display_data")[-1]["data"]["text/plain"] == "run may start: nothing"
    assert execute(kernel, "%operator").of("display_data")[-1]["data"]["text/plain"] == "operator: interactive"
    headless = execute(kernel, "%tools evil.py")  # a denial is not remembered as a grant either
    assert headless.content["ename"] == "CapabilityDenied" and not stranger["tools_canary"].exists()


def test_allow_once_lets_that_cell_through(stranger: dict[str, Path], kernel: Any) -> None:
    reply = run_and_click(kernel, "%tools evil.py", "Allow once")
    assert reply.status == "ok", reply.outputs
    assert stranger["tools_canary"].read_text() == "evil.py ran on the host"
    texts = [c["data"]["text/plain"] for c in reply.of("display_data")]
    assert any(t.startswith("allowed once (this kernel): run the Python tool file") for t in texts), texts
    assert not TrustStore().remembered(stranger["folder"])  # once: nothing kept for later


def test_allow_for_this_notebook_is_remembered(stranger: dict[str, Path], kernel: Any) -> None:
    reply = run_and_click(kernel, "%allow run sh", "Allow for this notebook")
    assert reply.status == "ok", reply.outputs
    km, kc = start(stranger["folder"])  # a new kernel on the same notebook, headless
    try:
        again = execute(kc, "%allow run sh")
        assert again.status == "ok", again.outputs
        still = execute(kc, "%allow run bash")  # only what was allowed
        assert still.content["ename"] == "CapabilityDenied"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_prompt_escapes_what_the_notebook_wrote(stranger: dict[str, Path], kernel: Any) -> None:
    """The request text comes from the notebook: an executable named like markup is shown
    as text."""
    reply = run_and_click(kernel, '%allow run "<img src=x onerror=alert(1)>"', "Deny")
    assert reply.content["ename"] == "CapabilityDenied"
    html = [m["content"]["data"]["state"]["value"] for m in reply.outputs if m["msg_type"] == "comm_open"
            and m["content"]["data"]["state"].get("_model_name") == "HTMLModel"]
    assert any("&lt;img src=x onerror=alert(1)&gt;" in h for h in html), html
    assert not any("<img" in h for h in html)



def test_a_frontend_without_widgets_is_asked_on_stdin(stranger: dict[str, Path]) -> None:
    """No widgets (FLOW_LIVE_VIEW=off) but a person at stdin: the same question as text;
    anything but o/n is a no."""
    import time

    from tests.kernel.kernel_helpers import collect

    km, kc = start(stranger["folder"], live_view=False)
    try:
        for typed, ok in (("yes please", False), ("o", True)):
            started = time.perf_counter()
            msg_id = kc.execute("%tools evil.py", allow_stdin=True)
            request = kc.get_stdin_msg(timeout=60)
            assert request["msg_type"] == "input_request"
            prompt = request["content"]["prompt"]
            assert prompt.startswith("This notebook asks to run the Python tool file") and "[d]eny" in prompt
            kc.input(typed)
            reply = collect(kc, msg_id, started)
            assert (reply.status == "ok") == ok, reply.outputs
            assert stranger["tools_canary"].exists() == ok
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_an_interrupt_at_the_prompt_cancels_the_cell(stranger: dict[str, Path], kernel: Any) -> None:
    """A person who walks away from the prompt can interrupt it: the cell is cancelled,
    nothing of it applied, and the kernel answers the next cell."""
    import time

    from tests.kernel.kernel_helpers import collect

    started = time.perf_counter()
    msg_id = kernel.execute("%tools evil.py", allow_stdin=True)
    deadline = time.time() + 60
    while time.time() < deadline:  # the prompt's buttons are there: the cell waits for a click
        msg = kernel.get_iopub_msg(timeout=60)
        state = msg["content"].get("data", {}).get("state", {}) if msg["msg_type"] == "comm_open" else {}
        if state.get("_model_name") == "ButtonModel" and state.get("description") == "Deny":
            break
    else:
        raise AssertionError("no prompt")
    interrupt = kernel.session.msg("interrupt_request", {})
    kernel.control_channel.send(interrupt)
    reply = collect(kernel, msg_id, started)
    assert reply.status == "error" and reply.content["ename"] == "cancelled", reply.outputs
    assert not stranger["tools_canary"].exists()
    assert execute(kernel, "1 + 1").result == "2"


def test_a_strangers_flow_toml_is_named_once_and_changes_nothing(stranger: dict[str, Path]) -> None:
    """A flow.toml beside the stranger's notebook (auto-approve, sh allowed): the kernel
    names it once, above the first cell's output, and none of it applies; granted
    (`FLOW_ALLOW=config:.`, the door opened) it applies, and what is said once is only that
    it lets `run` start `sh` with any arguments."""
    (stranger["folder"] / "flow.toml").write_text('operator = "auto-approve"\nallow_run = ["sh"]\n', encoding="utf-8")
    for allow, applies in ((None, False), ("config:.", True)):
        km, kc = start(stranger["folder"], allow=allow)
        try:
            first, second = execute(kc, "1 + 1"), execute(kc, "2 + 2")
            warnings = [c["text"] for c in first.of("stream") if c["name"] == "stderr"]
            if applies:  # said: only its grant of `sh` with any arguments (test_unpinned_grants.py)
                assert len(warnings) == 1 and "`run` may start sh with any arguments" in warnings[0], warnings
            else:
                assert first.outputs[0]["msg_type"] == "stream", first.outputs  # above the output
                assert warnings == [f"warning: {(stranger['folder'] / 'flow.toml').resolve()} is not trusted, so none of it "
                                    "applies (providers' endpoints and key variables, operator, allow_run): run "
                                    f"`flow trust {stranger['folder'].resolve()}` to apply it\n"]
            assert not second.of("stream")  # once
            approved = execute(kc, 'approve "Wire the money?"')
            assert (approved.result == "true") == applies, approved.outputs
            listing = execute(kc, "%allow").of("display_data")[-1]["data"]["text/plain"]
            assert listing == ("run may start: sh" if applies else "run may start: nothing")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
