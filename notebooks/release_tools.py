"""The tool of lesson 15 (15-durable-runs.ipynb), loaded with `%tools release_tools.py`.

`fetch_changes` stands for a call that costs something (an API, a model, a slow query) and
says how often the host has run it: every time it runs, `fetched` goes up by one. A run
resumed from its journal answers the calls it already made from the journal, so a
journaled call shows the number it had, and only calls made after the resume raise it.
"""

from flow_kernel import flow_tool

CHANGES = [
    "Exports to CSV are three times faster",
    "New API endpoint /v2/search with pagination",
]
_fetched = 0  # how many times the host ran fetch_changes in this kernel


@flow_tool
def fetch_changes() -> dict:
    """The changes since the last release, and how many times this tool has run."""
    global _fetched
    _fetched += 1
    return {"fetched": _fetched, "entries": CHANGES}
