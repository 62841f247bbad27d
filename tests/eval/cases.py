"""The scripted eval the tests share: `parity.flow`'s `classify` over n = 0..199, with three
bad lines. What must come out is known exactly: 5 runs fail (`require`, n % 37 == 36),
20 items are misclassified (n ending in 9: the script says even), the judge passes the
98 items whose output or expected value says odd."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
PROGRAM = (HERE / "parity.flow").read_text(encoding="utf-8")
N = 200
FAILING = [n for n in range(N) if n % 37 == 36]  # 36, 73, 110, 147, 184
MISCLASSIFIED = [n for n in range(N) if n % 10 == 9]
BAD_LINES = {51: "not JSON", 121: "a case is a JSON object", 171: "the input does not fit the workflow"}
SCORERS = ["field:parity", "exact", "workflow:same_parity", "judge:grader,pass=0.7"]


def write_cases(path: Path, n: int = N, *, bad: bool = True) -> Path:
    lines = [json.dumps({"id": f"n{i}", "input": {"n": i},
                         "expected": {"n": i, "parity": "even" if i % 2 == 0 else "odd", "square": i * i},
                         "metadata": {"digit": i % 10}}) for i in range(n)]
    if bad:
        lines.insert(50, "not json at all")
        lines.insert(120, "[1, 2]")
        lines.insert(170, json.dumps({"input": {"n": "seven"}}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def expected_passes(n: int = N) -> dict[str, int]:
    ran = [i for i in range(n) if i not in FAILING]
    right = [i for i in ran if i not in MISCLASSIFIED]
    judged = [i for i in ran if i % 2 == 1]  # odd: the expected (or the output) says odd
    return {"field:parity": len(right), "exact": len(right), "workflow:same_parity": len(right),
            "judge:grader": len(judged)}
