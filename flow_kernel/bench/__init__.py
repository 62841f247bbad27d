"""Benchmarks of the Flow front end (run them as modules, e.g. `python -m flow_kernel.bench.frontend`)."""
