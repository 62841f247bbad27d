"""Benchmarks: `flow bench` (suite.py) runs the sections frontend, sandbox, agents, kernel
and memory in one process; measure.py holds what they share."""
