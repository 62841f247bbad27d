"""`%eval` in the real Flow kernel over the Jupyter protocol: the results as a table (text and
escaped HTML), `--compare` with an earlier eval, bad arguments as a MagicError, and a data
file outside the notebook's folder refused when no person can grant it (nbclient-like)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.eval.cases import PROGRAM, write_cases
from tests.kernel.kernel_helpers import execute, start


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, object, Path]]:
    folder = tmp_path_factory.mktemp("notebook")
    write_cases(folder / "cases.jsonl", 12, bad=True)
    km, kc = start(folder, live_view=False)
    try:
        yield km, kc, folder
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_eval_magic_shows_the_results_and_compares(kernel: tuple[object, object, Path]) -> None:
    _, kc, folder = kernel
    declared = execute(kc, PROGRAM.replace('"Is ${n} even or odd?', '"<b>Is</b> ${n} even or odd?'))
    assert declared.status == "ok", declared.error
    first = execute(kc, "%eval classify --data cases.jsonl --scorer field:parity --scorer judge:grader,pass=0.7 "
                        "--out first.jsonl")
    assert first.status == "ok", first.error
    shown = first.of("display_data")[0]["data"]
    assert "eval of classify on cases.jsonl: 12 items, 12 ran, 0 failed" in shown["text/plain"]
    assert "NOT PASSED" in shown["text/plain"]  # n9 is misclassified
    html = shown["text/html"]
    assert "<table" in html and "n9" in html and "<script" not in html
    assert (folder / "first.jsonl").exists()
    again = execute(kc, "%eval classify --data cases.jsonl --scorer field:parity,min=0.9 --compare first.jsonl")
    assert again.status == "ok", again.error
    compared = again.of("display_data")[1]["data"]
    assert "field:parity" in compared["text/plain"] and "0 items fixed, 0 broken" in compared["text/plain"]
    bad = execute(kc, "%eval classify --scorer exact")
    assert bad.status == "error" and bad.error is not None and "--data" in bad.error["evalue"]
    outside = execute(kc, "%eval classify --data /etc/passwd.jsonl")
    assert outside.status == "error" and outside.error is not None
    assert outside.error["ename"] == "CapabilityDenied" or "CapabilityDenied" in str(outside.error)
