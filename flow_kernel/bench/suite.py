"""`flow bench [--quick] [--json FILE] [--only SECTION]` (also `python -m flow_kernel.bench`):
every benchmark section in one process, one report. `--compare BEFORE.json` then prints
the change per figure from an earlier `--json` file; `--from AFTER.json` reports a saved
run instead of measuring. `--peers` measures Flow beside Inspect AI and DBOS (peers.py; an
optional extra that needs bench/peers set up, never in the default run).

Each section times its measurements several times after a warm-up and keeps the
median, min and max; the report prints the targets (met or not, with the figure each
is compared with in the same run), the tighter goals beside them (docs/performance.md) and
then every section's details.
`--quick` uses fewer repeats and smaller inputs: a smoke run for CI, whose times mean
little. Nothing here fails because of a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `flow`'s parser imports this module for its arguments: measure.py's imports wait for a run
    from flow_kernel.bench.measure import Figures, Row, Target

SECTIONS = ("kernel", "frontend", "sandbox", "agents", "memory", "view", "evals", "evals_ray", "models")  # the order of the targets table


@dataclass(frozen=True)
class Section:
    name: str
    measure: Callable[[bool], Figures]
    rows: Callable[[Figures], list[Row]]
    targets: list[Target]


def _section(module: ModuleType) -> Section:
    return Section(module.NAME, module.measure, module.rows, module.TARGETS)


def load(name: str) -> Section:
    from importlib import import_module

    return _section(import_module(f"flow_kernel.bench.{name}"))


def run(quick: bool, only: Sequence[str] = (), progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Measure the sections (all, or `only`) and return what `--json` writes."""
    started = time.perf_counter()
    sections: dict[str, Figures] = {}
    for name in only or SECTIONS:
        if progress:
            progress(f"measuring {name} …")
        t0 = time.perf_counter()
        sections[name] = load(name).measure(quick)
        sections[name]["section_s"] = time.perf_counter() - t0
    targets = []
    for name, figures in sections.items():
        for target in load(name).targets:
            entry: dict[str, Any] = {"section": name, "figure": target.figure, "bound": target.bound,
                                     "at_least": target.at_least, "unit": target.unit, "target": target.bound_text(),
                                     "goal": target.goal, "goal_text": target.goal_text()}
            if "skipped" in figures:
                entry.update(value=None, shown="—", met=None, goal_met=None, measured="skipped",
                             compared=figures["skipped"])
            else:
                value = target.value(figures)
                entry.update(value=value, shown=target.shown(value), met=target.met(figures),
                             goal_met=target.goal_met(figures),
                             measured=target.measured(figures), compared=target.compared(figures))
            targets.append(entry)
    return {
        "quick": quick,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": _machine(),
        "seconds": time.perf_counter() - started,
        "targets": targets,
        "sections": sections,
    }


def _machine() -> dict[str, Any]:
    from flow_kernel.sandbox.node import NodeNotFound, find_node

    try:
        node_version = ".".join(map(str, find_node().version))
    except NodeNotFound as exc:  # the report still says what it could
        node_version = f"unavailable ({exc})"
    return {"python": platform.python_version(), "node": node_version, "cpus": os.cpu_count(),
            "platform": platform.platform(terse=True)}


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    kind = "quick run (smoke test: times mean little)" if result["quick"] else "full run"
    lines = [
        f"flow bench — {kind}, {result['date']}, {result['seconds']:.0f} s",
        f"Python {m['python']}, Node {m['node']}, {m['cpus']} CPUs, {m['platform']}",
        "",
        "| figure | measured | compared with, same run | value | target | met | goal | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in result["targets"]:
        goal_met = "—" if t.get("goal") is None else _met(t.get("goal_met"))
        lines.append(f"| {t['figure']} | {t['measured']} | {t['compared']} | {t['shown']} | {t['target']} | "
                     f"{_met(t['met'])} | {t.get('goal_text', '—')} | {goal_met} |")
    lines += ["", "Details: median (min–max) of the repeats after a warm-up"]
    for name, figures in result["sections"].items():
        lines.append(f"{name} ({figures.get('repeat', '-')} repeats, {figures['section_s']:.0f} s)")
        lines += [row.text() for row in load(name).rows(figures)]
    return "\n".join(lines)


def _met(met: bool | None) -> str:
    return "skipped" if met is None else "yes" if met else "**no**"


def compare(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The change per figure from `before` to `after` (two `--json` results): every target's
    value, then every median of the details that both runs measured; "better"/"worse" by the
    target's direction (for the details: times down and rates up are better)."""
    lines = [f"Change from {before.get('date', '?')} to {after.get('date', '?')}", "",
             "| figure | before | after | change | |", "|---|---|---|---|---|"]
    earlier = {(t["section"], t["figure"]): t for t in before.get("targets", [])}
    for t in after["targets"]:
        b = earlier.get((t["section"], t["figure"]))
        if b is None or b.get("value") is None or t.get("value") is None:
            lines.append(f"| {t['figure']} | {'—' if b is None else b['shown']} | {t['shown']} | — | |")
            continue
        lines.append(f"| {t['figure']} | {b['shown']} | {t['shown']} | {_change(b['value'], t['value'])} | "
                     f"{_verdict(b['value'], t['value'], higher_is_better=t['at_least'])} |")
    lines += ["", "Details (medians):"]
    for name, figures in after["sections"].items():
        old = before.get("sections", {}).get(name, {})
        for key, value in figures.items():
            b, a = _median(old.get(key)), _median(value)
            if b is None or a is None or key in ("section_s", "repeat") or b == a == 0:
                continue
            higher = key.endswith(("per_s", "_per_s_in_process")) or f"{name}.{key}" in _HIGHER_IS_BETTER
            lines.append(f"  {name}.{key:<44} {b:>12,.4g} → {a:<12,.4g} {_change(b, a):>8}  "
                         f"{_verdict(b, a, higher_is_better=higher)}")
    return "\n".join(lines)


# Details that are not rates but still better when higher (the rest: times, sizes and
# time ratios, better when lower).
_HIGHER_IS_BETTER = frozenset({
    "agents.ratio_pipeline_to_bridge",  # calls/s over calls/s
    "evals.ratio_to_ideal",  # items/s over the ideal items/s
    "evals_ray.ratio_ray_to_local", "evals_ray.ratio_end_to_end",  # speed-ups
    "evals_ray.machine_two_process_ratio",  # what the machine gives two processes
})


def _median(value: Any) -> float | None:
    if isinstance(value, dict) and isinstance(value.get("median"), int | float):
        return float(value["median"])
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _change(before: float, after: float) -> str:
    return "—" if before == 0 else f"{(after - before) / abs(before) * 100:+.1f} %"


def _verdict(before: float, after: float, higher_is_better: bool) -> str:
    if before == after or abs(after - before) <= abs(before) * 0.005:  # within half a percent
        return "same"
    return "better" if (after > before) == higher_is_better else "worse"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller inputs (a smoke run)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    parser.add_argument("--only", action="append", choices=SECTIONS, metavar="SECTION", default=[],
                        help=f"measure only this section (repeatable): {', '.join(SECTIONS)}")
    parser.add_argument("--peers", action="store_true",
                        help="measure Flow beside Inspect AI and DBOS (needs bench/peers/setup.sh; never in the "
                             "default run): alone, only that; with --only, after those sections")
    parser.add_argument("--compare", metavar="BEFORE.json",
                        help="after the report, print the change per figure from an earlier --json file")
    parser.add_argument("--from", dest="from_json", metavar="AFTER.json",
                        help="do not measure: report (and --compare) the figures of an earlier --json file")


def command(args: argparse.Namespace) -> int:
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as saved:
            result = json.load(saved)
    else:
        only = [*args.only, "peers"] if args.peers else args.only
        result = run(args.quick, only, progress=lambda text: print(text, file=sys.stderr, flush=True))
    print(render(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
            out.write("\n")
    if args.compare:
        with open(args.compare, encoding="utf-8") as saved:
            print("\n" + compare(json.load(saved), result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flow_kernel.bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return command(parser.parse_args(argv))
