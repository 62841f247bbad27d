"""`flow bench [--quick] [--json FILE] [--only SECTION]` (also `python -m flow_kernel.bench`):
every benchmark section in one process, one report.

Each section times its measurements several times after a warm-up and keeps the
median, min and max; the report prints the targets of issue 8 (met or not, with the
figure each is compared with in the same run) and then every section's details.
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
from typing import Any

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
                                     "at_least": target.at_least, "unit": target.unit, "target": target.bound_text()}
            if "skipped" in figures:
                entry.update(value=None, shown="—", met=None, measured="skipped", compared=figures["skipped"])
            else:
                value = target.value(figures)
                entry.update(value=value, shown=target.shown(value), met=target.met(figures),
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
        "| figure | measured | compared with, same run | value | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for t in result["targets"]:
        met = "skipped" if t["met"] is None else "yes" if t["met"] else "**no**"
        lines.append(f"| {t['figure']} | {t['measured']} | {t['compared']} | {t['shown']} | {t['target']} | {met} |")
    lines += ["", "Details: median (min–max) of the repeats after a warm-up"]
    for name, figures in result["sections"].items():
        lines.append(f"{name} ({figures.get('repeat', '-')} repeats, {figures['section_s']:.0f} s)")
        lines += [row.text() for row in load(name).rows(figures)]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller inputs (a smoke run)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    parser.add_argument("--only", action="append", choices=SECTIONS, metavar="SECTION", default=[],
                        help=f"measure only this section (repeatable): {', '.join(SECTIONS)}")


def command(args: argparse.Namespace) -> int:
    result = run(args.quick, args.only, progress=lambda text: print(text, file=sys.stderr, flush=True))
    print(render(result))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
            out.write("\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flow_kernel.bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return command(parser.parse_args(argv))
