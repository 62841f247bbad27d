"""The runs `flow serve --mcp` started, served as MCP resources `flow://runs/{id}`
(docs/protocols.md, "Runs as resources").

A run is its caller's: the principal whose bearer token started it (door.py; one anonymous
principal with `--no-auth`, the person at the other end of stdio). `resources/list` shows a
caller their own runs, and `resources/read` of another's run, or of any run this server did
not start, is "not found", the same answer as for a run that does not exist. Nothing is read
from the journal folder: a run is served from what this process kept when it ended, at most
`MAX_RUNS` of them (the oldest dropped first), so no file path ever comes from a URI.

A run's contents: its summary (views/run_model.py's deterministic text), its primary artifact
when it published one (`publish primary`, `RunOutcome.primary`), its result as JSON, then the
other artifacts it published, each under its own URI below the run's.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.runtime.run import RunOutcome
from flow_kernel.views.run_model import RunModel

RUN_TEMPLATE = "flow://runs/{id}"
MAX_RUNS = 500
_RUN_URI = re.compile(r"flow://runs/(r[0-9a-f]{12})")


@dataclass(frozen=True)
class Content:
    """One item of a resource's contents."""

    uri: str
    mime_type: str
    text: str


@dataclass(frozen=True)
class ServedRun:
    run_id: str
    principal: str
    workflow: str
    status: str
    contents: list[Content] = field(default_factory=list)

    @property
    def uri(self) -> str:
        return RUN_TEMPLATE.format(id=self.run_id)


def run_contents(run_id: str, workflow: str, outcome: RunOutcome) -> list[Content]:
    """What `resources/read` answers for a run: summary, primary artifact, result, artifacts."""
    uri = RUN_TEMPLATE.format(id=run_id)
    model = RunModel.from_events(outcome.events, title=workflow)
    model.finish(outcome.result, outcome.error_json(), outcome.steps, waiting=bool(outcome.pending))
    contents = [Content(uri, "text/plain", model.text())]
    primary = outcome.primary
    if primary is not None:
        contents.append(_artifact(uri, primary))
    if outcome.error is None and not outcome.pending:
        contents.append(Content(f"{uri}/result", "application/json", json.dumps(outcome.result, ensure_ascii=False)))
    for event in outcome.events:
        data = event.get("data") or {}
        if event.get("type") == "artifact.published" and data.get("primary") is not True:
            contents.append(_artifact(uri, data))
    return contents


def _artifact(run_uri: str, data: dict[str, Any]) -> Content:
    name = str(data.get("name", "artifact"))
    where = f"{run_uri}/artifacts/{name}"
    if isinstance(data.get("text"), str):
        mime = "text/markdown" if name.endswith(".md") else "text/plain"
        return Content(where, mime, data["text"])
    return Content(where, "application/json", json.dumps(data.get("json"), ensure_ascii=False))


def run_id_of(uri: str) -> str | None:
    """The run id of a `flow://runs/{id}` URI; None for any other URI."""
    match = _RUN_URI.fullmatch(uri)
    return match.group(1) if match else None


class ServedRuns:
    """The runs this server started, each its principal's, the newest `limit` kept."""

    def __init__(self, limit: int = MAX_RUNS) -> None:
        self.limit = limit
        self._runs: OrderedDict[str, ServedRun] = OrderedDict()

    def add(self, principal: str, workflow: str, outcome: RunOutcome) -> None:
        """Keep a run that started (one refused before its journal opened is no run)."""
        if outcome.journal is None:
            return
        self._runs[outcome.run_id] = ServedRun(outcome.run_id, principal, workflow, outcome.status,
                                               run_contents(outcome.run_id, workflow, outcome))
        self._runs.move_to_end(outcome.run_id)
        while len(self._runs) > self.limit:
            self._runs.popitem(last=False)

    def of(self, principal: str) -> list[ServedRun]:
        """`principal`'s runs, newest first."""
        return [run for run in reversed(self._runs.values()) if run.principal == principal]

    def get(self, principal: str, uri: str) -> ServedRun | None:
        """The run `uri` names when it is `principal`'s, else None."""
        run_id = run_id_of(uri)
        run = self._runs.get(run_id) if run_id is not None else None
        return run if run is not None and run.principal == principal else None
