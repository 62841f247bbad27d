"""An eval's results: one record per item and epoch, the summary, and the results file
(JSON lines, written as each item ends, so an interrupted eval keeps what it did).

The file's first line is its header (`kind: "eval"`: the program, workflow, scorers,
epochs); every later line is an item (`kind: "item"`). `--resume` reads it back: an item
whose last record ran and scored without an error is done, every other item (missing, or
failed with an error code) runs again and its new record is appended — the last record of
an item is the one that counts, so nothing is counted twice.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from flow_kernel.runtime.durable.nofollow import LinkRefused
from flow_kernel.runtime.eval.scorers import Score, Scorer

VERSION = 1


@dataclass
class ItemResult:
    id: str
    epoch: int
    line: int
    input: dict[str, Any]
    expected: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    error: dict[str, Any] | None = None  # {code, message} when the item's run failed
    scores: dict[str, Score] = field(default_factory=dict)
    cost: float = 0.0
    tokens: int = 0
    latency_ms: float = 0.0
    run: str | None = None
    worker: str | None = None  # where it ran (ray: the actor), for the record
    attempts: int = 1  # executions: more than 1 when a worker died under it

    @property
    def key(self) -> tuple[str, int]:
        return (self.id, self.epoch)

    @property
    def failed(self) -> bool:
        """An error: the run, or a scorer that could not score. (A low score is not one.)"""
        return self.error is not None or any(s.error is not None for s in self.scores.values())

    @property
    def passed(self) -> bool:
        return self.error is None and all(s.passed for s in self.scores.values())

    def error_code(self) -> str | None:
        if self.error is not None:
            return str(self.error.get("code"))
        return next((f"scorer:{s.error}" for s in self.scores.values() if s.error is not None), None)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "item", "id": self.id, "epoch": self.epoch, "line": self.line, "input": self.input,
                "expected": self.expected, "metadata": self.metadata, "output": self.output, "error": self.error,
                "scores": {name: s.to_json() for name, s in self.scores.items()}, "passed": self.passed,
                "cost": self.cost, "tokens": self.tokens, "latency_ms": round(self.latency_ms, 1), "run": self.run,
                "worker": self.worker, "attempts": self.attempts}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ItemResult:
        scores = {name: Score(float(s.get("score", 0)), bool(s.get("passed")), s.get("error"), s.get("detail"),
                              s.get("run"), float(s.get("cost", 0)))
                  for name, s in (data.get("scores") or {}).items() if isinstance(s, dict)}
        return cls(str(data["id"]), int(data["epoch"]), int(data.get("line", 0)), data.get("input") or {},
                   data.get("expected"), data.get("metadata") or {}, data.get("output"), data.get("error"), scores,
                   float(data.get("cost", 0)), int(data.get("tokens", 0)), float(data.get("latency_ms", 0)),
                   data.get("run"), data.get("worker"), int(data.get("attempts", 1)))


@dataclass
class ScorerSummary:
    name: str
    n: int
    mean: float
    stderr: float
    pass_rate: float
    min_rate: float
    errors: int

    @property
    def ok(self) -> bool:
        return self.n > 0 and self.pass_rate >= self.min_rate

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "mean": _round(self.mean), "stderr": _round(self.stderr),
                "pass_rate": _round(self.pass_rate), "min": self.min_rate, "errors": self.errors, "ok": self.ok}


@dataclass
class Summary:
    items: int  # item-epochs
    completed: int  # runs that ended without an error
    failures: dict[str, int]  # error code -> item-epochs
    scorers: dict[str, ScorerSummary]
    cost: float
    tokens: int
    latency_ms_mean: float
    latency_ms_p95: float
    skipped_lines: int = 0
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        """Exit 0: every scorer meets its `min` (an eval) or every run completed (a batch)."""
        if not self.scorers:
            return self.items > 0 and self.completed == self.items
        return all(s.ok for s in self.scorers.values())

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "completed": self.completed, "failures": dict(sorted(self.failures.items())),
                "scorers": {name: s.to_json() for name, s in self.scorers.items()}, "cost": _round(self.cost),
                "tokens": self.tokens, "latency_ms": {"mean": _round(self.latency_ms_mean),
                                                      "p95": _round(self.latency_ms_p95)},
                "skipped_lines": self.skipped_lines, "wall_s": _round(self.wall_s), "passed": self.passed}


def _round(x: float) -> float:
    return round(x, 4) if math.isfinite(x) else x


def summarize(results: list[ItemResult], scorers: list[Scorer], *, skipped_lines: int = 0,
              wall_s: float = 0.0) -> Summary:
    failures: dict[str, int] = {}
    for r in results:
        code = r.error_code()
        if code is not None:
            failures[code] = failures.get(code, 0) + 1
    by_scorer: dict[str, ScorerSummary] = {}
    for scorer in scorers:
        scores = [r.scores[scorer.name] for r in results if scorer.name in r.scores]
        # an item whose run failed scores 0 and fails every scorer
        values = [s.score for s in scores] + [0.0] * sum(1 for r in results if scorer.name not in r.scores)
        passes = sum(1 for s in scores if s.passed)
        n = len(values)
        mean = statistics.fmean(values) if values else 0.0
        stderr = statistics.stdev(values) / math.sqrt(n) if n > 1 else 0.0
        by_scorer[scorer.name] = ScorerSummary(scorer.name, n, mean, stderr, passes / n if n else 0.0,
                                               scorer.min_rate, sum(1 for s in scores if s.error is not None))
    latencies = sorted(r.latency_ms for r in results)
    p95 = latencies[min(len(latencies) - 1, math.ceil(0.95 * len(latencies)) - 1)] if latencies else 0.0
    return Summary(len(results), sum(1 for r in results if r.error is None), failures, by_scorer,
                   sum(r.cost for r in results), sum(r.tokens for r in results),
                   statistics.fmean(latencies) if latencies else 0.0, p95, skipped_lines, wall_s)


class ResultsError(ValueError):
    """The results file cannot be written or resumed from (a usage error)."""


class ResultsFile:
    """Appends one line per finished item, flushed at once. New: the header first (an
    existing file is replaced). Resumed: the header must match this eval's."""

    def __init__(self, path: Path, header: dict[str, Any], *, resume: bool) -> None:
        self.path = path
        self.done: dict[tuple[str, int], ItemResult] = {}
        if resume and path.exists():
            self.done = read_results(path, header)
            mode = "a"
        else:
            mode = "w"
        try:
            fd = _open_no_link(path, append=mode == "a")
        except OSError as exc:
            raise ResultsError(f"cannot write the results {path}: {exc}") from None
        self._file: IO[str] | None = open(fd, mode, encoding="utf-8")  # noqa: SIM115 - open for the eval
        if mode == "a":
            self._mend_torn_line()
        else:
            self._write({**header, "kind": "eval", "version": VERSION})

    def _mend_torn_line(self) -> None:
        """A killed eval may have left half a line: start the next record on a line of its own."""
        with open(self.path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
        if torn:
            assert self._file is not None
            self._file.write("\n")

    def _write(self, record: dict[str, Any]) -> None:
        assert self._file is not None
        self._file.write(json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")
        self._file.flush()

    def add(self, result: ItemResult) -> None:
        self._write(result.to_json())

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None


def _open_no_link(path: Path, *, append: bool) -> int:
    """The results file, never through a link planted there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_APPEND if append else os.O_TRUNC)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise LinkRefused(f"{path} is a symbolic link: not written through") from None
        raise OSError(exc.strerror or str(exc)) from None


MATCHING = ("program", "workflow", "scorers", "epochs")  # what a resumed eval must share with the file


def read_results(path: Path, header: dict[str, Any] | None = None) -> dict[tuple[str, int], ItemResult]:
    """The last record of each item in a results file (a torn last line skipped). With
    `header`, the file must be of the same eval (`ResultsError` otherwise)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ResultsError(f"cannot read the results {path}: {exc.strerror or exc}") from None
    records: list[dict[str, Any]] = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue  # a torn line, left by a killed eval
        if isinstance(value, dict):
            records.append(value)
    first = records[0] if records else None
    if first is None or first.get("kind") != "eval":
        raise ResultsError(f"{path} is not the results file of an eval (no header line)")
    if header is not None:
        for key in MATCHING:
            if first.get(key) != header.get(key):
                raise ResultsError(f"{path} is the results of another eval ({key}: {first.get(key)!r}, "
                                   f"now {header.get(key)!r}); choose another --out, or drop --resume")
    done: dict[tuple[str, int], ItemResult] = {}
    for record in records[1:]:
        if record.get("kind") == "item":
            try:
                item = ItemResult.from_json(record)
            except (KeyError, TypeError, ValueError):
                continue
            done[item.key] = item
    return done


__all__ = ["ItemResult", "ResultsError", "ResultsFile", "ScorerSummary", "Summary", "read_results", "summarize"]
