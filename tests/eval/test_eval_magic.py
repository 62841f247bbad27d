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


def test_eval_magic_with_no_scorer_scores_exact_or_says_there_is_nothing_to_score(
        kernel: tuple[object, object, Path]) -> None:
    """Like `flow eval`: no `--scorer` compares with the data's `expected` by `exact` (n9 is
    misclassified); data with no `expected` is an error before anything runs, naming the way out."""
    _, kc, folder = kernel
    (folder / "inputs.jsonl").write_text("".join(f'{{"n": {n}}}\n' for n in range(3)), encoding="utf-8")
    declared = execute(kc, PROGRAM)
    assert declared.status == "ok", declared.error
    scored = execute(kc, "%eval classify --data cases.jsonl")
    assert scored.status == "ok", scored.error
    text = scored.of("display_data")[0]["data"]["text/plain"]
    assert "eval of classify on cases.jsonl: 12 items, 12 ran, 0 failed" in text
    assert "\n  exact " in text and "NOT PASSED" in text, text
    nothing = execute(kc, "%eval classify --data inputs.jsonl")
    assert nothing.status == "error" and nothing.error is not None
    assert nothing.error["evalue"] == (
        "%eval: nothing to score: no scorer was named and no case of inputs.jsonl has `expected`; name one "
        "(--scorer exact, field:PATH, schema:FILE, workflow:NAME, judge:AGENT, ...), or run the cases unscored "
        "with `flow batch` in a terminal")
    assert nothing.of("display_data") == []
