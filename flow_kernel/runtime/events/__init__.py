"""Run events: the vocabulary, the one tree they form, and what reads it (the failure
report, the terminal view, OpenTelemetry).
"""
