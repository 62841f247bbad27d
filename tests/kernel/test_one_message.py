"""One message per failure, over the real Jupyter protocol: a failed cell's message appears
once in each place a front end draws — the run view's records (the widget), the summary's
`text/plain`, its `text/html`, the error output's traceback (what a notebook draws in red)
— and once in `evalue` (what nbval and automation read). A compile error's diagnostics are
the display; its traceback gives the code alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kernel.kernel_helpers import Reply, execute, start

TAGGER = """agent tagger {
  model: "scripted"
  output: string[]
  script: [["billing"], ["bug"], ["docs", "export"]]
}"""
OVER_BUDGET = """workflow tag_all(titles: string[]) -> string[][] {
  limits { agent_runs: 3, concurrency: 1 }
  return parallelMap(titles, t => tagger(t), concurrency: 1)
}
tag_all(["a", "b", "c", "d", "e"])"""
OVER_BUDGET_SAYS = "the `agent_runs` limit of 3 of `tag_all` is exceeded (calling `tagger`)"
SPIN = """workflow spin() -> int {
  limits { steps: 50 }
  var k = 0
  while k < 1000 {
    k = k + 1
  }
  return k
}
spin()"""
SPIN_SAYS = "the `steps` limit of 50 of `spin` is exceeded"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    km, kc = start(tmp_path_factory.mktemp("one-message"))
    assert execute(kc, TAGGER).status == "ok"
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def counts(reply: Reply, words: str, html: str | None = None) -> dict[str, int]:
    """How often `words` appear in each surface of the cell's outputs (`html`: as the HTML
    writes them)."""
    seen = {"text/plain": 0, "text/html": 0, "widget": 0, "evalue": 0, "traceback": 0}
    for message in reply.outputs:
        kind, content = message["msg_type"], message["content"]
        if kind in ("display_data", "update_display_data", "execute_result"):
            seen["text/plain"] += str(content["data"].get("text/plain", "")).count(words)
            seen["text/html"] += str(content["data"].get("text/html", "")).count(html or words)
        elif kind.startswith("comm_"):
            seen["widget"] += json.dumps(content, ensure_ascii=False).count(words)
        elif kind == "error":
            seen["evalue"] += content["evalue"].count(words)
            seen["traceback"] += "\n".join(content["traceback"]).count(words)
    return seen


def test_an_agent_call_over_budget_is_said_once_in_each_place(kernel: Any) -> None:
    reply = execute(kernel, OVER_BUDGET, allow_stdin=True)  # a person is there: the live view
    assert reply.status == "error" and reply.error is not None
    assert reply.error["ename"] == "limit-exceeded"
    assert counts(reply, OVER_BUDGET_SAYS) == {"text/plain": 1, "text/html": 1, "widget": 1, "evalue": 1,
                                               "traceback": 1}
    summary = [c["data"]["text/plain"] for c in reply.of("update_display_data")][-1]
    # The card of the call that failed says it; the scopes around it give the code alone.
    assert summary.splitlines()[1:3] == ["✗ workflow <cell>: limit-exceeded", "  ✗ workflow tag_all: limit-exceeded"]
    assert f'✗ agent tagger #4 "d": limit-exceeded {OVER_BUDGET_SAYS}' in summary
    assert "error[" not in summary and "-->" not in summary
    # The error output has the message with its source line, once; no host traceback.
    assert reply.error["traceback"][0] == f"error[limit-exceeded]: {OVER_BUDGET_SAYS}"
    assert not any("Traceback" in line or ".py" in line for line in reply.error["traceback"])


def test_a_workflow_over_its_steps_says_it_on_its_own_line(kernel: Any) -> None:
    reply = execute(kernel, SPIN)  # headless: the summary only
    assert counts(reply, SPIN_SAYS) == {"text/plain": 1, "text/html": 1, "widget": 0, "evalue": 1, "traceback": 1}
    summary = reply.of("display_data")[0]["data"]["text/plain"]
    assert summary.splitlines()[1:3] == ["✗ workflow <cell>: limit-exceeded",
                                         f"  ✗ workflow spin: limit-exceeded {SPIN_SAYS}"]


def test_a_compile_error_is_the_diagnostics_and_a_code_in_red(kernel: Any) -> None:
    reply = execute(kernel, "let x = nope + 1", allow_stdin=True)
    assert reply.error is not None and reply.error["ename"] == "CompileError"
    assert counts(reply, "undefined name `nope`", html="undefined name <code>nope</code>") == {
        "text/plain": 1, "text/html": 1, "widget": 0, "evalue": 1, "traceback": 0}
    assert reply.error["traceback"] == ["CompileError: 1 error(s) (F2001), shown above"]
