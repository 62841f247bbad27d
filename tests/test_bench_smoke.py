"""Smoke test of `flow bench --quick`: every section runs, returns its figures, and the
report and the JSON have the promised shape. Nothing is asserted about time."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.bench import suite
from flow_kernel.bench.frontend import flow_program, python_program
from flow_kernel.bench.sandbox import thread_cpu_s, threads_cpu_s
from flow_kernel.cli import main as flow_main

TIMINGS = {
    "frontend": ("check_codegen_s", "check_only_s", "cpython_compile_s"),
    "sandbox": ("cold_start_s", "trivial_run_ms", "round_trip_us", "cpu_sandbox_s", "cpu_host_cpython_s",
                "cpu_text_sandbox_s", "cpu_text_host_cpython_s", "cpu_records_sandbox_s", "cpu_records_host_cpython_s"),
    "agents": ("fanout_s", "fanout_start_ms", "fanout_per_wave_ms", "fanout_spread_ms", "fanout_end_ms",
               "pipeline_calls_per_s", "pipeline_calls_per_s_in_process", "bridge_calls_per_s",
               "pipeline_host_cpu_us", "bridge_host_cpu_us", "floor_calls_per_s", "floor_host_cpu_us"),  # the sandbox's: 10 ms ticks, may read 0 in a quick run
    "evals": ("items_per_s", "items_per_s_in_process"),
    "kernel": ("kernel_start_s", "first_cell_ms", "cold_load_pyodide_ms", "flow_cell_ms", "ipython_cell_ms",
               "flow_cell_reply_ms", "ipython_cell_reply_ms"),
}
TARGET_KEYS = {"section", "figure", "bound", "at_least", "unit", "target", "value", "shown", "met", "measured",
               "compared", "goal", "goal_text", "goal_met"}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, str]:
    """One quick run of every section through the real `flow bench` entry point."""
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert flow_main(["bench", "--quick", "--json", str(out)]) == 0
    return json.loads(out.read_text()), printed.getvalue(), str(out)


def test_every_section_returns_its_figures(quick_run: tuple[dict[str, Any], str, str]) -> None:
    result, _printed, _path = quick_run
    assert result["quick"] is True
    assert list(result["sections"]) == list(suite.SECTIONS)
    for section, keys in TIMINGS.items():
        figures = result["sections"][section]
        for key in keys:
            timing = figures[key]
            assert set(timing) == {"median", "min", "max"}, (section, key)
            assert 0 < timing["min"] <= timing["median"] <= timing["max"], (section, key)
    frontend = result["sections"]["frontend"]
    assert frontend["flow_errors"] == 0 and frontend["python_lines"] == frontend["flow_lines"]
    agents = result["sections"]["agents"]
    assert agents["fanout_s"]["min"] >= agents["fanout_ideal_s"]  # nothing beats the ideal
    kernel = result["sections"]["kernel"]
    for name in ("flow", "ipython"):  # the target's round trip waits for the reply and the idle
        assert kernel[f"{name}_cell_ms"]["min"] >= kernel[f"{name}_cell_reply_ms"]["min"]


def test_memory_figures(quick_run: tuple[dict[str, Any], str, str]) -> None:
    memory = quick_run[0]["sections"]["memory"]
    if "skipped" in memory:
        pytest.skip(memory["skipped"])
    assert memory["kernel_rss_idle_mb"] > 0
    assert memory["sandbox_processes"] >= 1 and memory["sandbox_rss_after_run_mb"] > 0
    assert memory["rss_after_last_mb"]["total"] > 0 and memory["rss_after_first_mb"]["total"] > 0
    assert isinstance(memory["rss_growth"], float)
    for key, notebooks in (("pss_one_notebook", 1), ("pss_notebooks_at_once", 2)):
        pss = memory[key]
        assert pss["notebooks"] == notebooks and pss["cells"] == 100 and pss["sandbox_processes"] >= notebooks
        assert 0 < pss["kernel_pss_mb"] < pss["per_notebook_pss_mb"] <= pss["total_pss_mb"]


def test_each_cpu_bound_program_in_cpu_time(quick_run: tuple[dict[str, Any], str, str]) -> None:
    """On Linux the three CPU-bound programs are measured in CPU time too, with a row each."""
    result, printed, _path = quick_run
    sandbox = result["sections"]["sandbox"]
    if "ratio_cpu_time_sandbox_to_cpython" not in sandbox:
        pytest.skip("no per-thread CPU time here (not Linux, or the pool held two sandboxes)")
    for prefix in ("cpu", "cpu_text", "cpu_records"):
        for side in ("sandbox_thread_cpu_s", "host_cpython_cpu_s"):
            timing = sandbox[f"{prefix}_{side}"]
            assert 0 < timing["min"] <= timing["median"] <= timing["max"], (prefix, side)
        ratio = sandbox["ratio_cpu_time" + prefix.removeprefix("cpu") + "_sandbox_to_cpython"]
        assert ratio == sandbox[f"{prefix}_sandbox_thread_cpu_s"]["median"] / sandbox[f"{prefix}_host_cpython_cpu_s"]["median"]
    assert printed.count("ratio sandbox / host CPython, CPU time") == 3
    split = sandbox["cpu_sandbox_wall_split_ms"]  # the prime counter's wall clock, taken apart
    assert split["wall"] > 0 and split["thread_cpu"] > 0 and split["waiting"] >= 0
    assert "those sandboxed runs' wall clock" in printed


def test_the_first_cpu_bound_run_after_a_sandbox_starts(quick_run: tuple[dict[str, Any], str, str]) -> None:
    """On Linux the prime counter's first run in new sandboxes is a detail row, its CPU split
    between the Node main thread and the process's other threads."""
    result, printed, _path = quick_run
    sandbox = result["sections"]["sandbox"]
    if "cpu_first_run_after_start_s" not in sandbox:
        pytest.skip("no per-thread CPU time here (not Linux)")
    timing = sandbox["cpu_first_run_after_start_s"]
    assert 0 < timing["min"] <= timing["median"] <= timing["max"]
    split = sandbox["cpu_first_run_after_start_split_ms"]
    assert split["wall"] == timing["median"] * 1000 and split["thread_cpu"] > 0
    assert "first CPU-bound run after a sandbox starts" in printed and "V8's other threads" in printed


def test_threads_cpu_counts_every_thread_of_a_process() -> None:
    """All threads' CPU is at least the main thread's; a process that is not there reads None."""
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux `schedstat` only")
    main, every = thread_cpu_s(os.getpid()), threads_cpu_s(os.getpid())
    assert main is not None and every is not None and every >= main > 0
    assert threads_cpu_s(2**22 + 1) is None  # above Linux's largest pid


def test_the_sandbox_main_thread_per_agent_call(quick_run: tuple[dict[str, Any], str, str]) -> None:
    """On Linux the agent section reads the sandbox's Node main thread per call (ns, not ticks)
    for the pipeline and the raw bridge, with a row each."""
    result, printed, _path = quick_run
    agents = result["sections"]["agents"]
    if "pipeline_sandbox_thread_cpu_us" not in agents:
        pytest.skip("no per-thread CPU time here (not Linux, or a sandbox was replaced mid-run)")
    for prefix in ("pipeline", "floor", "bridge"):
        timing = agents[f"{prefix}_sandbox_thread_cpu_us"]
        assert 0 < timing["min"] <= timing["median"] <= timing["max"], prefix
    assert printed.count("its main thread CPU per call") == 3


def test_the_pipeline_floor_is_the_same_program_answered_at_once(quick_run: tuple[dict[str, Any], str, str]) -> None:
    """The throughput program with a host that answers every agent call at once ran all its
    calls (each run is checked for its result), and its ratio is to the same raw bridge."""
    result, printed, _path = quick_run
    agents = result["sections"]["agents"]
    assert agents["ratio_floor_to_bridge"] == agents["floor_calls_per_s"]["median"] / agents["bridge_calls_per_s"]["median"]
    assert "host answering at once (sandbox alone)" in printed
    assert "the most any host pipeline reaches" in printed


def test_targets_and_report(quick_run: tuple[dict[str, Any], str, str]) -> None:
    result, printed, _path = quick_run
    figures = [t["figure"] for t in result["targets"]]
    assert len(figures) == sum(len(suite.load(section).targets) for section in suite.SECTIONS)
    for target in result["targets"]:
        assert set(target) == TARGET_KEYS
        assert target["met"] in (True, False, None)
        assert target["goal_met"] in (True, False, None)
        assert (target["goal"] is None) == (target["goal_met"] is None) or target["value"] is None
    # The printed report is a Markdown table of the targets, then the details.
    assert "| figure | measured | compared with, same run | value | target | met | goal | met |" in printed
    for figure in figures:
        assert f"| {figure} |" in printed
    for section in suite.SECTIONS:
        assert f"\n{section} (" in printed


def test_python_m_entry_point_parses_the_same_options() -> None:
    parser = argparse.ArgumentParser()
    suite.add_arguments(parser)
    args = parser.parse_args(["--quick", "--json", "x.json", "--only", "frontend"])
    assert args.quick and args.json == "x.json" and args.only == ["frontend"]
    assert Path(suite.__file__).with_name("__main__.py").is_file()


def test_generated_sources_scale_with_lines() -> None:
    for lines in (50, 1000):
        flow = flow_program(lines)
        assert flow.count("\n") >= lines
        python = python_program(flow.count("\n"))
        compile(python, "bench.py", "exec")
        assert python.count("\n") == flow.count("\n")


def test_compare_prints_the_change_per_figure(quick_run: tuple[dict[str, Any], str, str],
                                              tmp_path: Path) -> None:
    result, _printed, path = quick_run
    before = json.loads(Path(path).read_text())
    ratio = next(t for t in before["targets"] if t["figure"] == "check + codegen of a 5,000-line Flow file")
    ratio["value"] *= 2  # "before" was twice as slow
    before["sections"]["frontend"]["check_only_s"]["median"] *= 2
    before_path = tmp_path / "before.json"
    before_path.write_text(json.dumps(before))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # --from: reports the saved run, measures nothing
        assert flow_main(["bench", "--from", path, "--compare", str(before_path)]) == 0
    out = printed.getvalue()
    assert "| figure | before | after | change | |" in out
    for target in result["targets"]:
        assert f"| {target['figure']} | " in out.split("Change from", 1)[1]
    ratio_line = next(line for line in out.splitlines() if line.startswith(f"| {ratio['figure']} | ")
                      and "%" in line and "better" in line)
    assert "-50.0 %" in ratio_line  # half the ratio of "before": a change of -50 %, better
    check_line = next(line for line in out.splitlines() if "frontend.check_only_s" in line)
    assert "-50.0 %" in check_line and "better" in check_line


def test_compare_reads_each_detail_by_its_direction() -> None:
    from flow_kernel.bench.suite import compare

    def run(pipeline: float, fanout: float, ray: float) -> dict[str, Any]:
        return {"targets": [], "sections": {
            "agents": {"ratio_pipeline_to_bridge": pipeline, "ratio_fanout_to_ideal": fanout},
            "evals_ray": {"ratio_ray_to_local": ray}}}

    lines = compare(run(0.5, 1.10, 1.8), run(0.6, 1.05, 1.2)).splitlines()
    verdict = {line.split()[0]: line.split()[-1] for line in lines if line.startswith("  ")}
    # a higher share of the bridge is better; a time closer to the ideal is better; a smaller speed-up is worse
    assert verdict == {"agents.ratio_pipeline_to_bridge": "better", "agents.ratio_fanout_to_ideal": "better",
                       "evals_ray.ratio_ray_to_local": "worse"}


def test_peers_not_set_up_says_how_and_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flow_kernel.bench import peers

    assert "peers" not in suite.SECTIONS  # never in the default bench (nor in CI's quick run)
    monkeypatch.setattr(peers, "PEERS", tmp_path / "peers")
    out, printed = tmp_path / "peers.json", io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert flow_main(["bench", "--peers", "--json", str(out)]) == 0
    assert list(json.loads(out.read_text())["sections"]) == ["peers"]
    assert "skipped: bench/peers is not set up" in printed.getvalue()
    assert "run `bench/peers/setup.sh`" in printed.getvalue()


def test_peers_journal_steps_write_sealed_effects(tmp_path: Path) -> None:
    from flow_kernel.bench.peers import event_times, journal_steps
    from flow_kernel.runtime.durable.journal import read_checkpoint

    times, cpu = journal_steps(3, tmp_path)
    assert len(times) == 3 and cpu >= 0
    journal = next((tmp_path / ".flow" / "runs").glob("r*.jsonl"))
    assert len(read_checkpoint(journal).effects) == 3  # sealed: every record's MAC verified
    assert len(event_times(journal, "agent.completed")) == 3
