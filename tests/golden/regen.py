"""Regenerate the golden data of tests/golden (see tests/golden/__init__.py).

    .venv/bin/python -m tests.golden.regen --root /tmp/golden-base           # outputs, from frozen inputs
    .venv/bin/python -m tests.golden.regen --root /tmp/golden-base --collect # inputs too (keeps the fuzz programs)
    .venv/bin/python -m tests.golden.regen --root DIR --out /tmp/g --only diagnostics   # elsewhere, to compare

`--root` is the checkout whose flow_kernel computes the golden (and, with --collect, whose
tests, examples, catalogue and notebooks are collected): take it from a `git worktree add`
of the commit that is the reference, so that work in progress cannot leak into it.
Regenerate only for a difference that is not a change of behaviour, and say which in the
commit. `--new-fuzz N` draws a new fixed-seed fuzz corpus from tests/lang/test_fuzz.py's
strategies (N programs); without it the saved one (data/fuzz_programs.json) is kept."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
REPO = HERE.parents[1]


def dump(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def load(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


def _draw(strategy: SearchStrategy[str], wanted: int, seed: int, taken: list[str]) -> list[str]:
    """`wanted` distinct texts from `strategy`, in a fixed-seed run of hypothesis, none in `taken`."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    got: list[str] = []

    @hseed(seed)
    @settings(max_examples=wanted * 3, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(text=strategy)
    def collect(text: str) -> None:
        if len(got) < wanted and text not in got and text not in taken:
            got.append(text)

    collect()
    return got


def draw_fuzz(count: int, seed: int = 23) -> list[str]:
    """`count` programs from the fuzz strategies, in fixed-seed draws: 40 % generated
    programs, 40 % mutated ones, 10 % token soup, 10 % random Flow-ish text."""
    from tests.lang import test_fuzz as fz

    out: list[str] = []
    plan: list[tuple[SearchStrategy[str], float]] = [(fz.flow_programs(), 0.4), (fz.mutated_programs(), 0.4), (fz.token_soup, 0.1), (fz.flowish_text, 0.1)]
    for index, (strategy, share) in enumerate(plan):
        out.extend(_draw(strategy, int(count * share), seed + index, out))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout to take the golden from")
    parser.add_argument("--collect", action="store_true", help="collect the inputs again from --root")
    parser.add_argument("--new-fuzz", type=int, metavar="N", help="draw a new fuzz corpus of N programs")
    parser.add_argument("--only", choices=("diagnostics", "runs"))
    parser.add_argument("--out", type=Path, default=DATA, help="where to write the outputs (default: data/)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    os.environ.setdefault("FLOW_CONFIG_HOME", tempfile.mkdtemp(prefix="golden-config-"))  # never the user's
    sys.path.insert(0, str(root))  # flow_kernel from the reference checkout
    import flow_kernel

    if not Path(flow_kernel.__file__).resolve().is_relative_to(root):
        raise SystemExit(f"flow_kernel came from {flow_kernel.__file__}, not {root}")
    from tests.golden import corpus, record

    args.out.mkdir(parents=True, exist_ok=True)
    if args.new_fuzz:
        dump(DATA / "fuzz_programs.json", draw_fuzz(args.new_fuzz))
    if args.collect:
        from flow_kernel.bench.frontend import flow_program

        fuzz = load(DATA / "fuzz_programs.json")
        assert isinstance(fuzz, list)
        dump(DATA / "inputs.json", corpus.diagnostics_inputs(root, fuzz, flow_program(5022)))
        dump(DATA / "run_inputs.json", corpus.run_inputs(root))
    if args.only in (None, "diagnostics"):
        started = time.perf_counter()
        inputs = load(DATA / "inputs.json")
        assert isinstance(inputs, dict)
        dump(args.out / "diagnostics.json", record.check_all(inputs))
        print(f"diagnostics: {len(inputs)} inputs in {time.perf_counter() - started:.1f} s")
    if args.only in (None, "runs"):
        started = time.perf_counter()
        runs = load(DATA / "run_inputs.json")
        assert isinstance(runs, dict)
        dump(args.out / "runs.json", record.run_all(runs, root / "notebooks"))
        print(f"runs: {len(runs)} inputs in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
