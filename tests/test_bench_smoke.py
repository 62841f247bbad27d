"""Smoke test of the front-end benchmark: it runs, its Flow file checks clean, and it
returns every figure. Nothing is asserted about time."""

from __future__ import annotations

from flow_kernel.bench.frontend import flow_program, main, python_program

KEYS = {
    "flow_lines", "flow_chars", "flow_workflows", "flow_errors", "flow_diagnostics", "python_lines",
    "repeat", "warmup", "flow_check_s", "cpython_compile_s", "flow_lines_per_s", "ratio_flow_to_cpython",
}


def test_benchmark_smoke() -> None:
    figures = main(["--lines", "300", "--repeat", "1", "--quiet"])
    assert set(figures) >= KEYS
    assert figures["flow_errors"] == 0
    assert figures["flow_lines"] >= 300
    assert figures["python_lines"] == figures["flow_lines"]
    assert figures["flow_workflows"] >= 5
    for key in ("flow_check_s", "cpython_compile_s"):
        timing = figures[key]
        assert isinstance(timing, dict) and set(timing) == {"median", "min", "max"}
        assert 0 <= timing["min"] <= timing["median"] <= timing["max"]
    assert isinstance(figures["flow_lines_per_s"], float) and figures["flow_lines_per_s"] > 0
    assert isinstance(figures["ratio_flow_to_cpython"], float) and figures["ratio_flow_to_cpython"] > 0


def test_generated_sources_scale_with_lines() -> None:
    for lines in (50, 1000):
        flow = flow_program(lines)
        assert flow.count("\n") >= lines
        python = python_program(flow.count("\n"))
        compile(python, "bench.py", "exec")
        assert python.count("\n") == flow.count("\n")


def test_sandbox_benchmark_smoke() -> None:
    from flow_kernel.bench.sandbox import main as sandbox_main

    figures = sandbox_main(["--quick", "--quiet"])
    for key in ("cold_start_s", "trivial_run_ms", "round_trip_us", "cpu_sandbox_s", "cpu_host_cpython_s"):
        assert 0 < figures[key]["min"] <= figures[key]["median"] <= figures[key]["max"]
    assert figures["ratio_cpu_sandbox_to_cpython"] > 0
    assert figures["sandbox_calls_per_s"]["concurrent"] > 0


def test_agent_benchmark_smoke() -> None:
    from flow_kernel.bench.agents import main as agents_main

    figures = agents_main(["--quick", "--quiet"])
    for key in ("fanout_s", "pipeline_calls_per_s", "pipeline_calls_per_s_in_process", "bridge_calls_per_s"):
        assert 0 < figures[key]["min"] <= figures[key]["median"] <= figures[key]["max"]
    assert figures["fanout_s"]["min"] >= figures["fanout_ideal_s"]  # nothing beats the ideal
    assert figures["ratio_pipeline_to_bridge"] > 0


def test_kernel_benchmark_smoke() -> None:
    from flow_kernel.bench.kernel import main as kernel_main

    figures = kernel_main(["--quick", "--quiet"])
    for key in ("kernel_start_s", "first_cell_ms", "cold_load_pyodide_ms", "flow_cell_ms", "ipython_cell_ms"):
        assert 0 < figures[key]["min"] <= figures[key]["median"] <= figures[key]["max"]
    assert figures["ratio_flow_to_ipython"] > 0 and figures["ratio_first_cell_to_cold_pyodide"] > 0
