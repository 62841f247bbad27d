"""How an eval scores an item (docs/eval.md): the built-in scorers, a Flow workflow as a
scorer, and an LLM judge written in Flow.

A scorer is named on the command line as `KIND[:ARG][,pass=X][,min=Y]`:

| kind              | score                                                                  |
| ----------------- | ---------------------------------------------------------------------- |
| `exact`           | 1 when the output equals `expected` (as JSON), else 0                   |
| `field:PATH`      | 1 when `output.PATH` equals `expected.PATH` (PATH dotted: `a.b`)        |
| `schema:FILE`     | 1 when the output is valid against the JSON Schema in FILE              |
| `contains[:TEXT]` | 1 when the output's text contains TEXT (default: `expected`'s text)     |
| `numeric[:TOL]`   | 1 when the output is within TOL (default 1e-6) of `expected`            |
| `workflow:NAME`   | the `score` of workflow NAME(input, output, expected) -> {score, ...}   |
| `judge:AGENT`     | the `score` the agent AGENT gives (its instructions are the rubric)     |

An item passes a scorer when its score is at least `pass` (1 for the built-ins, 0.5 for
workflows and judges, unless the workflow returns `passed`); the eval passes when every
scorer's pass rate is at least `min` (default 1: every item). An item whose run failed
scores 0 on every scorer. A scorer that cannot score (no `expected` to compare with, a
scorer workflow that failed) scores 0 with an error code, and the item counts as failed —
`--resume` runs it again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flow_kernel.runtime.eval.data import Case
from flow_kernel.runtime.validation import schema_errors, schema_validator

KINDS = ("exact", "field", "schema", "contains", "numeric", "workflow", "judge")
JUDGE_PREFIX = "__eval_judge_"  # the generated workflow that asks a judge agent (judge_source)


class ScorerError(ValueError):
    """A scorer spec that cannot be used: a usage error, before anything runs."""


@dataclass
class Score:
    score: float
    passed: bool
    error: str | None = None  # a code when the scorer could not score
    detail: Any = None  # what the scorer said beside the score (a reason, the schema errors)
    run: str | None = None  # the scorer's own run (workflow, judge)
    cost: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"score": self.score, "passed": self.passed}
        for key in ("error", "detail", "run"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.cost:
            out["cost"] = self.cost
        return out


# How a workflow scorer runs a workflow: (workflow, input) -> (result, error code, message, run id, cost)
RunScorer = Callable[[str, dict[str, Any]], Awaitable["ScorerRun"]]


@dataclass
class ScorerRun:
    result: Any = None
    error: str | None = None
    message: str = ""
    run: str | None = None
    cost: float = 0.0


@dataclass
class Scorer:
    spec: str  # as written: also its name in results and the summary
    kind: str
    arg: str | None = None
    pass_at: float = 1.0
    min_rate: float = 1.0
    schema: dict[str, Any] | None = field(default=None, repr=False)  # `schema:FILE`, read once
    params: tuple[str, ...] = ()  # a workflow scorer's parameters (input, output, expected)

    @property
    def name(self) -> str:
        return self.spec.split(",", 1)[0]

    @property
    def workflow(self) -> str | None:
        """The workflow this scorer runs, if it runs one."""
        if self.kind == "workflow":
            return self.arg
        if self.kind == "judge":
            return JUDGE_PREFIX + str(self.arg)
        return None

    async def score(self, case: Case, output: Any, run: RunScorer) -> Score:
        if self.kind in ("workflow", "judge"):
            return await self._by_workflow(case, output, run)
        compares = self.kind in ("exact", "field", "numeric") or (self.kind == "contains" and self.arg is None)
        if compares and not case.has_expected:
            return Score(0.0, False, error="no-expected", detail="this case has no `expected` to compare with")
        value = self._builtin(case, output)
        return Score(value, value >= self.pass_at, detail=self._detail(output))

    def _builtin(self, case: Case, output: Any) -> float:
        expected = case.expected
        if self.kind == "exact":
            return float(_same(output, expected))
        if self.kind == "field":
            path = str(self.arg)
            return float(_same(_at(output, path), _at(expected, path)) and _at(output, path) is not _MISSING)
        if self.kind == "contains":
            needle = self.arg if self.arg is not None else _text(expected)
            return float(needle in _text(output))
        if self.kind == "numeric":
            tolerance = float(self.arg) if self.arg is not None else 1e-6
            if not _number(output) or not _number(expected):
                return 0.0
            assert isinstance(output, int | float) and isinstance(expected, int | float)
            return float(abs(float(output) - float(expected)) <= tolerance)
        assert self.kind == "schema" and self.schema is not None
        return float(not schema_errors(self.schema, output, schema_validator(self.schema)))

    def _detail(self, output: Any) -> Any:
        if self.kind == "schema" and self.schema is not None:
            errors = schema_errors(self.schema, output, schema_validator(self.schema))
            return errors[:5] or None
        return None

    async def _by_workflow(self, case: Case, output: Any, run: RunScorer) -> Score:
        workflow = self.workflow
        assert workflow is not None
        given = {"input": case.input, "output": output, "expected": case.expected}
        done = await run(workflow, {k: v for k, v in given.items() if k in self.params})
        if done.error is not None:
            return Score(0.0, False, error=done.error, detail=done.message, run=done.run, cost=done.cost)
        result = done.result
        score = result.get("score") if isinstance(result, dict) else None
        if not _number(score):
            return Score(0.0, False, error="scorer-output", run=done.run, cost=done.cost,
                         detail=f"`{workflow}` must return an object with a numeric `score`")
        assert isinstance(result, dict) and isinstance(score, int | float)
        passed = result.get("passed")
        detail = {k: v for k, v in result.items() if k not in ("score", "passed")} or None
        return Score(float(score), passed if isinstance(passed, bool) else float(score) >= self.pass_at,
                     detail=detail, run=done.run, cost=done.cost)


_MISSING = object()


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: 1 and 1.0 are one number, true is not 1, key order does not count."""
    return _canonical(a) == _canonical(b)


def _canonical(value: Any) -> str:
    if value is _MISSING:
        return "\x00missing"
    return json.dumps(_numbers_as_floats(value), sort_keys=True, ensure_ascii=False, default=str)


def _numbers_as_floats(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _numbers_as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_as_floats(v) for v in value]
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def parse_scorer(spec: str, *, directory: Path | None = None) -> Scorer:
    """`KIND[:ARG][,pass=X][,min=Y]` as a Scorer; `ScorerError` says what is wrong."""
    head, *options = [part.strip() for part in spec.split(",")]
    kind, colon, arg = head.partition(":")
    if kind not in KINDS:
        raise ScorerError(f"unknown scorer {kind!r} in {spec!r}; the kinds are {', '.join(KINDS)}")
    if kind in ("field", "schema", "workflow", "judge") and not arg:
        raise ScorerError(f"the scorer {kind!r} needs an argument: {kind}:{_ARG_NAMES[kind]}")
    if kind == "exact" and colon:
        raise ScorerError("the scorer 'exact' takes no argument")
    scorer = Scorer(spec, kind, arg if colon else None, pass_at=0.5 if kind in ("workflow", "judge") else 1.0)
    for option in options:
        key, eq, value = option.partition("=")
        if not eq or key not in ("pass", "min"):
            raise ScorerError(f"{option!r} in {spec!r}: the options are pass=X (an item's score to pass) and min=Y "
                              "(the pass rate the eval needs)")
        try:
            number = float(value)
        except ValueError:
            raise ScorerError(f"{key}={value!r} in {spec!r} is not a number") from None
        if not math.isfinite(number) or (key == "min" and not 0 <= number <= 1):
            raise ScorerError(f"{key}={value} in {spec!r} is out of range" + (" (0 to 1)" if key == "min" else ""))
        if key == "pass":
            scorer.pass_at = number
        else:
            scorer.min_rate = number
    if kind == "numeric" and scorer.arg is not None:
        try:
            if float(scorer.arg) < 0:
                raise ValueError
        except ValueError:
            raise ScorerError(f"numeric:{scorer.arg}: the tolerance must be a number ≥ 0") from None
    if kind == "schema":
        scorer.schema = _read_schema(Path(str(arg)) if directory is None else directory / str(arg))
    return scorer


_ARG_NAMES = {"field": "PATH", "schema": "FILE.json", "workflow": "NAME", "judge": "AGENT"}


def _read_schema(path: Path) -> dict[str, Any]:
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScorerError(f"schema:{path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ScorerError(f"schema:{path}: not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise ScorerError(f"schema:{path}: a JSON Schema is an object")
    return schema


def judge_source(agent: str) -> str:
    """The Flow workflow that asks the judge `agent` for a score: the agent's instructions
    hold the rubric; the item's input, output and expected value are the prompt."""
    return (f"\nworkflow {JUDGE_PREFIX}{agent}(input: any, output: any, expected: any) -> any {{\n"
            f'  return {agent}("Input:\\n${{json(input)}}\\n\\nOutput:\\n${{json(output)}}\\n\\n'
            f'Expected:\\n${{json(expected)}}")\n'
            "}\n")


__all__ = ["JUDGE_PREFIX", "KINDS", "Score", "Scorer", "ScorerError", "ScorerRun", "judge_source", "parse_scorer"]
