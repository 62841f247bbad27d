"""Golden cases: `tests/lang/cases/*.flow` with inline markers such as
`# error: [F2001]` on the line where each diagnostic starts. The set of
(line, severity, code) must match exactly: nothing missing, nothing extra."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lang.flowcases import actual_markers, expected_markers, run_example

CASES = sorted((Path(__file__).parent / "cases").glob("*.flow"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert actual_markers(run_example(text)) == expected_markers(text)
