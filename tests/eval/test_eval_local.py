"""`Session.eval` with the local executor, in the real sandbox: 200 scripted cases scored by
built-in, workflow and judge scorers; bad data lines; the results file; cassettes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flow_kernel.runtime.eval.data import load_cases
from flow_kernel.runtime.eval.runner import EvalUsageError
from flow_kernel.runtime.eval.scorers import ScorerError, parse_scorer
from flow_kernel.runtime.session import CompileError, Session
from tests.eval.cases import BAD_LINES, FAILING, PROGRAM, SCORERS, N, expected_passes, write_cases


def test_200_scripted_cases_with_builtin_workflow_and_judge_scorers(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl")
    session = Session(directory=tmp_path)
    report = session.eval("classify", "cases.jsonl", program=PROGRAM, scorers=SCORERS, concurrency=4,
                          out="results.jsonl")
    s = report.summary
    assert (s.items, s.completed, s.failures) == (N, N - len(FAILING), {"assertion": len(FAILING)})
    passes = {name: round(sc.pass_rate * sc.n) for name, sc in s.scorers.items()}
    assert passes == expected_passes()
    assert not report.passed  # every scorer needs min=1 by default
    assert [p.line for p in report.plan.problems] == sorted(BAD_LINES)
    for problem in report.plan.problems:
        assert BAD_LINES[problem.line] in problem.message
    # every item once, in data order; a failed run scores 0 everywhere and keeps its code
    assert [r.id for r in report.results] == [f"n{i}" for i in range(N)]
    failed = report.results[36]
    assert failed.error is not None and failed.error["code"] == "assertion" and failed.scores == {}
    judged = report.results[3].scores["judge:grader"]
    assert (judged.score, judged.passed, judged.detail) == (0.8, True, {"reason": "odd looks right"})
    assert report.results[3].scores["workflow:same_parity"].detail == {"why": "parity odd vs odd"}
    # the results file: a header, then one line per item, each with its run id
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert lines[0]["kind"] == "eval" and lines[0]["scorers"] == SCORERS
    assert sorted(line["id"] for line in lines[1:]) == sorted(f"n{i}" for i in range(N))
    # every run journaled: the item's own, plus a workflow and a judge run per item that ran
    journals = list((tmp_path / ".flow" / "runs").glob("*.jsonl"))
    assert len(journals) == N + 2 * (N - len(FAILING))
    run = report.results[3].run
    assert (tmp_path / ".flow" / "runs" / f"{run}.jsonl").exists()


def test_thresholds_decide_passed(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl", 40, bad=False)
    session = Session(directory=tmp_path, journal_dir=None, sandbox=False)  # the scoring, not the sandbox
    # 40 items: n36 fails, n9/n19/n29/n39 misclassified -> 35/40 = 87.5%
    report = session.eval("classify", "cases.jsonl", program=PROGRAM, scorers=["field:parity,min=0.85"])
    assert report.passed and report.summary.scorers["field:parity"].pass_rate == 35 / 40
    report = session.eval("classify", "cases.jsonl", program=PROGRAM, scorers=["field:parity,min=0.9"])
    assert not report.passed


def test_cassette_makes_the_eval_repeatable_offline(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl", 12, bad=False)
    recorded = Session(directory=tmp_path, journal_dir=None, record="eval.cassette")
    first = recorded.eval("classify", "cases.jsonl", program=PROGRAM, scorers=SCORERS)
    entries = [json.loads(line) for line in (tmp_path / "eval.cassette").read_text().splitlines()]
    scopes = {e["scope"] for e in entries}
    assert len(entries) == 2 * 12 and len(scopes) == 2 * 12  # each item's calls in a scope of its own
    # replayed with the scripts changed: the answers come from the cassette, not the scripts
    changed = PROGRAM.replace('{ label: "odd" }', '{ label: "ODD" }').replace("score: 0.8", "score: 0.1")
    replayed = Session(directory=tmp_path, journal_dir=None, replay="eval.cassette")
    again = replayed.eval("classify", "cases.jsonl", program=changed, scorers=SCORERS)
    assert [r.output for r in again.results] == [r.output for r in first.results]
    assert again.summary.to_json()["scorers"] == first.summary.to_json()["scorers"]


def test_usage_errors_before_anything_runs(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl", 3, bad=False)
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None)
    with pytest.raises(EvalUsageError, match="`nope` is not a workflow; there are classify, same_parity"):
        session.eval("nope", "cases.jsonl", program=PROGRAM)
    with pytest.raises(EvalUsageError, match="no agent `nobody`"):
        session.eval("classify", "cases.jsonl", program=PROGRAM, scorers=["judge:nobody"])
    with pytest.raises(EvalUsageError, match="no workflow `missing`"):
        session.eval("classify", "cases.jsonl", program=PROGRAM, scorers=["workflow:missing"])
    with pytest.raises(EvalUsageError, match="cannot read the data"):
        session.eval("classify", "absent.jsonl", program=PROGRAM)
    with pytest.raises(EvalUsageError, match="--resume needs --out"):
        session.eval("classify", "cases.jsonl", program=PROGRAM, resume=True)
    with pytest.raises(CompileError):
        session.eval("classify", "cases.jsonl", program="workflow classify(n: int) -> int { return nope }")


def test_bad_lines_are_reported_with_their_numbers_and_skipped(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "name": {"type": "string"}},
              "required": ["n"]}
    data = tmp_path / "cases.jsonl"
    data.write_text('{"n": 1, "expected": 2}\n\n{"n": \n"text"\n{"input": {"n": 3}, "id": "x"}\n'
                    '{"input": {"n": 4}, "id": "x"}\n{"n": "four"}\n{"n": 5, "metadata": 7}\n', encoding="utf-8")
    cases, problems = load_cases(data, schema)
    assert [(c.id, c.line, c.input, c.expected) for c in cases] == [("L1", 1, {"n": 1}, 2), ("x", 5, {"n": 3}, None)]
    assert [(p.line, p.message.split(" (")[0].split(":")[0]) for p in problems] == [
        (3, "not JSON"), (4, "a case is a JSON object, not str"), (6, "the id 'x' is used by an earlier line"),
        (7, "the input does not fit the workflow"), (8, "`metadata` must be an object")]
    csv = tmp_path / "cases.csv"
    csv.write_text('id,n,name,expected,meta.tag\na,1,007,2,"x"\nb,2\nc,three,x,4,y\nd,4,"4",8,z\n', encoding="utf-8")
    cases, problems = load_cases(csv, schema)
    assert [(c.id, c.input, c.expected, c.metadata) for c in cases] == [
        ("a", {"n": 1, "name": "007"}, 2, {"tag": "x"}), ("d", {"n": 4, "name": "4"}, 8, {"tag": "z"})]
    assert [p.line for p in problems] == [3, 4]
    assert "2 cells, the header has 5" in problems[0].message


@pytest.mark.parametrize(("spec", "output", "expected", "score"), [
    ("exact", {"a": 1, "b": [1.0]}, {"b": [1], "a": 1}, 1.0),
    ("exact", True, 1, 0.0),
    ("field:a.b", {"a": {"b": 2}}, {"a": {"b": 2.0}}, 1.0),
    ("field:a.c", {"a": {"b": 2}}, {"a": {"b": 2}}, 0.0),
    ("contains", "the answer is 42.", 42, 1.0),
    ("contains:refund", "no", None, 0.0),
    ("numeric:0.1", 3.14, 3.1, 1.0),
    ("numeric", 3.14, 3.1, 0.0),
    ("numeric", "3", 3, 0.0),
])
def test_builtin_scorers(spec: str, output: object, expected: object, score: float) -> None:
    import asyncio

    from flow_kernel.runtime.eval.data import Case

    scorer = parse_scorer(spec)
    result = asyncio.run(scorer.score(Case("a", 1, {}, expected, True), output, _no_runs))
    assert (result.score, result.passed) == (score, score == 1.0)


async def _no_runs(workflow: str, data: dict[str, object]) -> object:
    raise AssertionError("a built-in scorer runs nothing")


def test_schema_scorer_and_scorer_spec_errors(tmp_path: Path) -> None:
    import asyncio

    from flow_kernel.runtime.eval.data import Case

    (tmp_path / "s.json").write_text('{"type": "object", "required": ["id"]}')
    scorer = parse_scorer("schema:s.json", directory=tmp_path)
    good = asyncio.run(scorer.score(Case("a", 1, {}), {"id": 1}, _no_runs))
    bad = asyncio.run(scorer.score(Case("a", 1, {}), {"x": 1}, _no_runs))
    assert (good.score, bad.score) == (1.0, 0.0) and 'the field "id" is required' in str(bad.detail)
    missing = asyncio.run(parse_scorer("exact").score(Case("a", 1, {}), 1, _no_runs))
    assert (missing.score, missing.error) == (0.0, "no-expected")
    for spec, message in [("fuzzy", "unknown scorer 'fuzzy'"), ("field", "needs an argument"),
                          ("exact,pass=x", "is not a number"), ("exact,min=2", "out of range"),
                          ("exact,limit=1", "the options are"), ("numeric:-1", "must be a number ≥ 0"),
                          ("schema:nope.json", "cannot read it")]:
        with pytest.raises(ScorerError, match=message):
            parse_scorer(spec, directory=tmp_path)


def test_epochs_and_a_batch(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl", 5, bad=False)
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None)
    report = session.eval("classify", "cases.jsonl", program=PROGRAM, scorers=["field:parity"], epochs=3)
    assert [(r.id, r.epoch) for r in report.results] == [(f"n{i}", e) for i in range(5) for e in (1, 2, 3)]
    assert report.summary.items == 15 and report.summary.scorers["field:parity"].n == 15
    batch = session.eval("classify", "cases.jsonl", program=PROGRAM)  # no scorers: every item ran
    assert batch.passed and batch.summary.scorers == {} and batch.results[4].output["square"] == 16
