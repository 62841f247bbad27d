"""Host ceilings: maximums for what a program's `limits` may ask, that content cannot raise.

A program picks its own `limits` (`steps`, `duration`, `agent_runs`, `concurrency`); the
host applies min(program's, ceiling) on its side of the trust boundary: the deadline it
enforces, the agent budgets it keeps, the step caps it hands the sandbox. Beside those,
a per-run output budget (bytes of every event: prints, logs, artifacts, the rest) and a
cap on sandbox processes per session.

Only the person sets ceilings — environment variables (`FLOW_MAX_STEPS`, …) or
`Session(ceilings=Ceilings(...))` — never a notebook, a `.flow` file or a `flow.toml`.
The defaults fit a laptop (docs/security.md, "Host ceilings"):

| ceiling      | default  | variable              | why this size                                       |
|--------------|----------|-----------------------|-----------------------------------------------------|
| steps        | 100 M    | FLOW_MAX_STEPS        | ~50 s of a busy loop at the measured ~2 M steps/s     |
| duration     | 24 h     | FLOW_MAX_DURATION     | a day-long workflow; well under Node's 2^31 ms timer  |
| agent_runs   | 10 000   | FLOW_MAX_AGENT_RUNS   | a big evaluation batch; bounds spending by a loop     |
| concurrency  | 64       | FLOW_MAX_CONCURRENCY  | provider rate limits stop far earlier                 |
| output       | 64 MiB   | FLOW_MAX_OUTPUT       | the run's events stay in memory and in its journal    |
| sandboxes    | 4        | FLOW_MAX_SANDBOXES    | 160-200 MB resident each, 2 cores on a small laptop   |
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flow_kernel.errors import FlowError, LimitExceededError
from flow_kernel.runtime.config import ConfigError

MIB = 1024 * 1024


class CeilingError(ConfigError):
    """A ceiling setting that cannot be used (the message names the variable)."""


@dataclass(frozen=True)
class Ceilings:
    steps: int = 100_000_000
    duration_ms: int = 24 * 3600 * 1000
    agent_runs: int = 10_000
    concurrency: int = 64
    output_bytes: int = 64 * MIB
    sandboxes: int = 4

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Ceilings:
        """The defaults, with what the person set in `FLOW_MAX_*` variables."""
        env = os.environ if environ is None else environ
        values: dict[str, int] = {}
        for field, (variable, parse) in _SETTINGS.items():
            text = env.get(variable)
            if text is not None and text.strip():
                values[field] = parse(variable, text.strip())
        return cls(**values)

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CeilingError(f"the ceiling `{field.name}` must be a positive integer, not {value!r}")

    def clamp(self, limits: Mapping[str, Any]) -> dict[str, Any]:
        """A workflow's limits with each one at most its ceiling."""
        out = dict(limits)
        for key, top in self.for_limits().items():
            value = out.get(key)
            if isinstance(value, int | float) and value > top:
                out[key] = top
        return out

    def for_limits(self) -> dict[str, int]:
        """The ceilings by the name of the `limits` entry they bound (what the sandbox gets)."""
        return {"steps": self.steps, "duration": self.duration_ms, "agent_runs": self.agent_runs,
                "concurrency": self.concurrency}

    def exceeded(self, limit: str, asked: object | None = None) -> LimitExceededError:
        """The error for a run the ceiling on `limit` stopped, saying how the person raises it."""
        field = _FIELD_OF_LIMIT.get(limit, limit)
        variable = _SETTINGS[field][0]
        value = getattr(self, field)
        how = (f"the person running it can raise it with the environment variable {variable} "
               f"or Session(ceilings=Ceilings({field}=...))")
        if field == "output_bytes":
            return LimitExceededError(
                f"the run's output (prints, logs, artifacts and events) passed the host ceiling of "
                f"{value / MIB:g} MiB, so it was stopped; {how}", details={"limit": limit, "value": value, "ceiling": variable})
        shown = _duration_text(value) if field == "duration_ms" else f"{value:,}"
        wanted = f" (the program asks for {_duration_text(asked) if field == 'duration_ms' else f'{asked:,}'})" \
            if isinstance(asked, int | float) else ""
        return LimitExceededError(f"the host ceiling on `{limit}` ({shown}) stopped the run{wanted}; {how}",
                                  details={"limit": limit, "value": value, "ceiling": variable})


def name_the_ceiling(error: FlowError, ceilings: Ceilings, asked: Mapping[str, Mapping[str, Any]],
                     elapsed_ms: float) -> FlowError:
    """When a ceiling (not the program's own limit) is what stopped the run, say so.

    `asked` maps a workflow name to the limits its source asks for; `elapsed_ms` is the
    run's time so far. A `steps` or `agent_runs` error whose value is the ceiling, for a
    workflow that asked for more, and a timeout at the duration ceiling, become
    `limit-exceeded` naming the ceiling and how to raise it."""
    details = error.details if isinstance(error.details, dict) else {}
    if error.code == "limit-exceeded" and details.get("limit") in ("steps", "agent_runs"):
        limit = str(details["limit"])
        top = ceilings.for_limits().get(limit)
        wanted = asked.get(str(details.get("workflow")), {}).get(limit)
        if top is not None and details.get("value") == top and isinstance(wanted, int | float) and wanted > top:
            return _keep_place(ceilings.exceeded(limit, wanted), error)
    if error.code == "workflow-timeout" and elapsed_ms >= ceilings.duration_ms * 0.99:
        wanted = max((a.get("duration", 0) for a in asked.values()), default=0)
        if wanted > ceilings.duration_ms:
            return _keep_place(ceilings.exceeded("duration", wanted), error)
    return error


def _keep_place(new: FlowError, old: FlowError) -> FlowError:
    new.stage, new.span, new.dto = old.stage, old.span, old.dto
    new.details = {**old.details, **new.details}
    return new


_DURATION = re.compile(r"^(\d+)\s*(ms|s|m|h|d)?$")
_SIZE = re.compile(r"^(\d+)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?$", re.IGNORECASE)
_DURATION_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_SIZE_BYTES = {None: 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": MIB, "mb": MIB, "mib": MIB,
               "g": 1024 * MIB, "gb": 1024 * MIB, "gib": 1024 * MIB}


def _int(variable: str, text: str) -> int:
    cleaned = text.replace("_", "")
    if not cleaned.isdigit() or int(cleaned) < 1:
        raise CeilingError(f"{variable}={text!r}: a positive integer is expected")
    return int(cleaned)


def _duration(variable: str, text: str) -> int:
    match = _DURATION.match(text.replace("_", ""))
    if match is None or int(match.group(1)) < 1:
        raise CeilingError(f"{variable}={text!r}: a duration is expected, e.g. 90m, 24h, 2d (a bare number is ms)")
    return int(match.group(1)) * _DURATION_MS[match.group(2)]


def _size(variable: str, text: str) -> int:
    match = _SIZE.match(text.replace("_", ""))
    if match is None or int(match.group(1)) < 1:
        raise CeilingError(f"{variable}={text!r}: a size is expected, e.g. 64MB, 512k (a bare number is bytes)")
    unit = match.group(2).lower() if match.group(2) else None
    return int(match.group(1)) * _SIZE_BYTES[unit]


_SETTINGS = {
    "steps": ("FLOW_MAX_STEPS", _int),
    "duration_ms": ("FLOW_MAX_DURATION", _duration),
    "agent_runs": ("FLOW_MAX_AGENT_RUNS", _int),
    "concurrency": ("FLOW_MAX_CONCURRENCY", _int),
    "output_bytes": ("FLOW_MAX_OUTPUT", _size),
    "sandboxes": ("FLOW_MAX_SANDBOXES", _int),
}
_FIELD_OF_LIMIT = {"duration": "duration_ms", "output": "output_bytes"}


def _duration_text(ms: object) -> str:
    if not isinstance(ms, int | float):
        return str(ms)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{int(ms // size)}{unit}"
    return f"{int(ms)}ms"


__all__ = ["CeilingError", "Ceilings", "name_the_ceiling"]
