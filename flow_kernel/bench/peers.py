"""`flow bench --peers`: Flow beside two peers on the same work, never part of the default
bench or of CI (it needs bench/peers/.venv, which `bench/peers/setup.sh` makes with the
pinned inspect-ai and dbos; without it the section says so and is skipped).

- **Evals**: `flow eval` against Inspect AI's `eval()` on one dataset of 1,000 items
  (`{"id", "input": {"question"}, "expected": "ok"}`), each tool with its offline mock
  model answering "ok" (Flow's `scripted` model, Inspect's `mockllm/model`) and an
  exact-match scorer, at concurrency 1 and 8. Items/s over the eval itself (Flow's
  summary `wall_s`, Inspect's `eval()` call), and the whole command's wall time and CPU
  (the command and its children: Flow's sandboxes are Node processes). Both write their
  results (Flow `--out` and its run journals, Inspect its log).
- **Journaled steps**: µs per step over a process's first 200 steps and the steady state
  after, each in a fresh process: a DBOS workflow of N steps on SQLite (each step's result
  committed before the next), Flow's journal doing what a `flow run` journals for one agent
  call (an event, the sealed `effect` record on the disk, an event: `RunCheckpoint.effect`),
  and a whole `flow run` of N scripted agent calls in a `for` loop (sandbox, bridge,
  pipeline and journal), its steps read from the journal's `agent.completed` times.
  CPU per step: the process's CPU over the steps (DBOS, the journal), the whole command's
  (host, sandbox and start-up: the `flow run`).

Each command runs `repeat` times, Flow and its peer alternated; the figures are the
median (min–max). The ratios are Flow's figure over the peer's, better when > 1 for
items/s and < 1 for µs per step."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from flow_kernel.bench.measure import Figures, Row, Stats, Target, stats

NAME = "peers"
PEERS = Path(__file__).resolve().parents[2] / "bench" / "peers"  # the repository's bench/peers
CONCURRENCY = (1, 8)

EVAL_PROGRAM = """agent answerer { model: "scripted", script: ["ok"] }
workflow answer(question: string) -> string {
  return answerer(question)
}
"""

STEPS_PROGRAM = """limits {{ agent_runs: {limit}, steps: 1000000, duration: 10m }}
agent answerer {{ model: "scripted", script: ["ok"] }}
workflow many(n: int) -> int {{
  limits {{ agent_runs: {limit}, steps: 1000000, duration: 10m }}
  var done = 0
  for i in range(n) {{
    let answer = answerer("item ${{i}}")
    done = done + len(answer) - 1
  }}
  return done
}}
many({steps})
"""


def setup_problem(folder: Path | None = None) -> str | None:
    """Why the peers cannot be measured here (their venv or harness is missing), or None."""
    folder = PEERS if folder is None else folder
    missing = [name for name in (".venv/bin/python", "inspect_eval.py", "dbos_steps.py") if not (folder / name).exists()]
    if not missing:
        return None
    return (f"bench/peers is not set up ({', '.join(missing)} missing in {folder}): run `bench/peers/setup.sh` "
            "(it makes bench/peers/.venv with the pinned inspect-ai and dbos), then `flow bench --peers`")


def measure(quick: bool) -> Figures:
    problem = setup_problem()
    if problem is not None:
        return {"skipped": problem}
    repeat, items, steps = (1, 100, 300) if quick else (3, 1000, 1200)
    figures: Figures = {"repeat": repeat, "items": items, "steps": steps, "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        write_cases(folder / "cases.jsonl", items)
        (folder / "echo.flow").write_text(EVAL_PROGRAM, encoding="utf-8")
        (folder / "steps.flow").write_text(STEPS_PROGRAM.format(limit=steps + 10, steps=steps), encoding="utf-8")
        runs: dict[str, list[dict[str, float]]] = {}
        for _ in range(repeat):  # Flow and its peer alternated, so that the load moves both alike
            for conc in CONCURRENCY:
                runs.setdefault(f"flow_eval_c{conc}", []).append(_flow_eval(folder, conc, items))
                runs.setdefault(f"inspect_eval_c{conc}", []).append(_inspect_eval(folder, conc, items))
            runs.setdefault("dbos_step", []).append(_dbos_steps(folder, steps))
            runs.setdefault("flow_journal_step", []).append(_journal_steps_process(folder, steps))
            runs.setdefault("flow_run_step", []).append(_flow_run_steps(folder, steps))
    for key, samples in runs.items():
        for figure in samples[0]:
            figures[f"{key}_{figure}"] = stats([sample[figure] for sample in samples])
    figures["versions"] = _versions()
    figures["load_after"] = os.getloadavg()[0]
    return figures


def write_cases(path: Path, items: int) -> None:
    """The shared dataset: one JSON line per item, read by `flow eval` and by the Inspect harness."""
    path.write_text("".join(json.dumps({"id": f"q{i}", "input": {"question": f"Item {i}: answer ok."},
                                        "expected": "ok"}) + "\n" for i in range(items)), encoding="utf-8")


def _command(argv: Sequence[str], cwd: Path) -> tuple[float, float, str]:
    """Run a command to its end: its wall seconds, the CPU seconds of it and its children,
    its stdout. A command that fails stops the bench with its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"peers bench: {' '.join(argv[:4])} … failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def _flow_eval(folder: Path, concurrency: int, items: int) -> dict[str, float]:
    wall, cpu, out = _command([sys.executable, "-m", "flow_kernel.cli", "eval", "echo.flow", "answer",
                               "--data", "cases.jsonl", "--concurrency", str(concurrency),
                               "--out", f"results-{concurrency}.jsonl", "--format", "json"], folder)
    (folder / f"results-{concurrency}.jsonl").unlink()
    summary = json.loads(out)["summary"]
    if summary["completed"] != items or not summary["passed"]:
        raise SystemExit(f"peers bench: the Flow eval did not pass: {json.dumps(summary)[:500]}")
    return {"items_per_s": items / summary["wall_s"], "command_s": wall, "cpu_s": cpu}


def _inspect_eval(folder: Path, concurrency: int, items: int) -> dict[str, float]:
    wall, cpu, out = _command([str(PEERS / ".venv/bin/python"), str(PEERS / "inspect_eval.py"), "cases.jsonl",
                               "--concurrency", str(concurrency)], folder)
    result = json.loads(out)
    if result["items"] != items or result["accuracy"] != 1.0:
        raise SystemExit(f"peers bench: the Inspect eval did not pass: {out[:500]}")
    return {"items_per_s": items / result["eval_s"], "command_s": wall, "cpu_s": cpu}


def _step_figures(first: float, rest: float, cpu: float, steps: int) -> dict[str, float]:
    """µs per step over the first 200 and over the rest (the steady state), CPU µs per step
    (`cpu`: seconds over all the steps)."""
    return {"first_200_us": first / 200 * 1e6, "steady_us": rest / (steps - 200) * 1e6, "cpu_us": cpu / steps * 1e6}


def _dbos_steps(folder: Path, steps: int) -> dict[str, float]:
    out = _command([str(PEERS / ".venv/bin/python"), str(PEERS / "dbos_steps.py"), "--steps", str(steps)], folder)[2]
    result = json.loads(out)
    step_us = result["step_us"]
    return _step_figures(sum(step_us[:200]) / 1e6, sum(step_us[200:]) / 1e6, result["cpu_s"], steps)


def _journal_steps_process(folder: Path, steps: int) -> dict[str, float]:
    out = _command([sys.executable, "-m", "flow_kernel.bench.peers", "journal", str(steps)], folder)[2]
    result = json.loads(out)
    step_s = result["step_s"]
    return _step_figures(sum(step_s[:200]), sum(step_s[200:]), result["cpu_s"], steps)


def _flow_run_steps(folder: Path, steps: int) -> dict[str, float]:
    _wall, cpu, out = _command([sys.executable, "-m", "flow_kernel.cli", "run", "steps.flow", "--format", "json"],
                               folder)
    ran = json.loads(out)
    if ran.get("result") != steps:
        raise SystemExit(f"peers bench: the Flow run did not complete: {out[:500]}")
    journal = folder / ".flow" / "runs" / f"{ran['run']}.jsonl"
    times = event_times(journal, "agent.completed")
    started = event_times(journal, "workflow.started")[0]
    if len(times) != steps:
        raise SystemExit(f"peers bench: {journal} holds {len(times)} agent calls, not {steps}")
    return _step_figures(times[199] - started, times[-1] - times[199], cpu, steps)


def event_times(journal: Path, kind: str) -> list[float]:
    """The times (epoch seconds, ms resolution) of a journal's events of one type, in order."""
    from flow_kernel.runtime.durable.journal import read_journal

    return [datetime.fromisoformat(event["ts"]).timestamp() for event in read_journal(journal) if event.get("type") == kind]


def journal_steps(steps: int, folder: Path) -> tuple[list[float], float]:
    """Seconds per step of `steps` journaled steps on a new journal in `folder`/.flow/runs,
    each what a `flow run` journals for one agent call: `agent.started`, the effect through
    `RunCheckpoint.effect` (sealed, `fdatasync`ed), `agent.completed`; and the process's
    CPU seconds over them all."""
    from flow_kernel.runtime.durable.checkpoint import RunCheckpoint
    from flow_kernel.runtime.durable.journal import Journal, digest, now_text
    from flow_kernel.runtime.run import new_run_id

    run_id = new_run_id()
    journal = Journal(folder / ".flow" / "runs", run_id)
    checkpoint = RunCheckpoint(journal)
    answer = {"output": "ok", "usage": {}, "tool_calls": []}

    async def live() -> dict[str, Any]:
        return answer

    async def run() -> list[float]:
        times = []
        for i in range(steps):
            started = time.perf_counter()
            prompt = f"item {i}"
            journal({"type": "agent.started", "run": run_id, "seq": 2 * i + 1, "ts": now_text(),
                     "data": {"agent": "answerer", "prompt": prompt, "provider": "scripted"}})
            result = await checkpoint.effect(f"agent:[[3],[{i}]]:1", digest(prompt), live)
            journal({"type": "agent.completed", "run": run_id, "seq": 2 * i + 2, "ts": now_text(),
                     "data": {"agent": "answerer", "output": result["output"]}})
            times.append(time.perf_counter() - started)
        return times

    cpu = time.process_time()
    try:
        times = asyncio.run(run())
    finally:
        journal.close()
    return times, time.process_time() - cpu


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    _wall, _cpu, out = _command([str(PEERS / ".venv/bin/python"), "-c",
                                 "from importlib.metadata import version as v; import json; "
                                 "print(json.dumps({'inspect-ai': v('inspect-ai'), 'dbos': v('dbos')}))"], PEERS)
    return {"flow-kernel": version("flow-kernel"), **json.loads(out)}


def rows(f: Figures) -> list[Row]:
    if "skipped" in f:
        return [Row("peers", f"skipped: {f['skipped']}")]
    versions = ", ".join(f"{name} {number}" for name, number in f["versions"].items())
    out = [Row("versions", versions), Row("load average (1 min) before, after", f"{f['load_before']:.1f}, {f['load_after']:.1f}")]
    for conc in CONCURRENCY:
        flow, peer = f[f"flow_eval_c{conc}_items_per_s"], f[f"inspect_eval_c{conc}_items_per_s"]
        out += [Row(f"eval items/s, concurrency {conc} ({f['items']} items): flow eval", flow, "items/s", "{:,.1f}"),
                Row("  Inspect AI eval()", peer, "items/s", "{:,.1f}"),
                Row("  Flow / Inspect", _ratio(flow, peer)),
                Row("  whole command, flow eval", f[f"flow_eval_c{conc}_command_s"], "s"),
                Row("  whole command, Inspect", f[f"inspect_eval_c{conc}_command_s"], "s"),
                Row("  CPU of the command and its children, flow eval", f[f"flow_eval_c{conc}_cpu_s"], "s"),
                Row("  CPU of the command and its children, Inspect", f[f"inspect_eval_c{conc}_cpu_s"], "s")]
    for part, label in (("first_200_us", "first 200"), ("steady_us", f"steady, steps 200–{f['steps']}")):
        dbos = f[f"dbos_step_{part}"]
        out += [Row(f"journaled step, {label}: DBOS step on SQLite", dbos, "µs", "{:,.0f}"),
                Row("  Flow journal (RunCheckpoint.effect)", f[f"flow_journal_step_{part}"], "µs", "{:,.0f}"),
                Row("  Flow journal / DBOS", _ratio(f[f"flow_journal_step_{part}"], dbos)),
                Row("  flow run, one scripted agent call, journaled", f[f"flow_run_step_{part}"], "µs", "{:,.0f}"),
                Row("  flow run / DBOS", _ratio(f[f"flow_run_step_{part}"], dbos))]
    out += [Row("CPU µs per step, the steps only: DBOS", f["dbos_step_cpu_us"], "µs", "{:,.0f}"),
            Row("  Flow journal", f["flow_journal_step_cpu_us"], "µs", "{:,.0f}"),
            Row("  flow run, the whole command (host, sandbox, start-up)", f["flow_run_step_cpu_us"], "µs", "{:,.0f}")]
    return out


def _ratio(flow: Stats, peer: Stats) -> str:
    return f"{flow['median'] / peer['median']:.2f}×"


TARGETS: list[Target] = []  # a comparison, reported, never a target


def _main(argv: Sequence[str]) -> int:
    """`python -m flow_kernel.bench.peers journal N`: `journal_steps` in a fresh process
    (what the section runs), its step times printed as JSON."""
    if len(argv) != 2 or argv[0] != "journal" or not argv[1].isdigit() or int(argv[1]) <= 200:
        print("usage: python -m flow_kernel.bench.peers journal STEPS (more than 200)", file=sys.stderr)
        return 2
    times, cpu = journal_steps(int(argv[1]), Path.cwd())
    print(json.dumps({"step_s": times, "cpu_s": cpu}))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
