"""What a person's flags grant: `--allow-run`, `--allow-path` (and the cassette paths of
`--record`/`--replay`), `--operator` and `--config`, as capabilities (policy/trust.py).

The one translation every front end uses: `flow run`, `flow resume`, `flow eval`,
`flow serve`, and `Session(...)`'s own arguments. Paths are resolved against the folder
the person typed them in (the working directory for a command).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from flow_kernel.runtime.policy.trust import Capability, operator_capability, resolve_path


def flag_grants(here: Path, *, allow_run: Iterable[str] = (), paths: Iterable[str | Path | None] = (),
                operator: str | None = None, config: str | Path | None = None) -> list[Capability]:
    """The capabilities the flags grant, in a stable order: each executable (an entry with
    pinned arguments as typed), each path (None entries skipped), the operator policy when it
    answers for the person, and the folder of a configuration file named outright.
    A malformed `run` entry (a path instead of a name) raises ValueError."""
    grants = [Capability.of("run", exe, here) for exe in allow_run]
    grants += [Capability("path", str(resolve_path(raw, here))) for raw in paths if raw]
    if operator and (capability := operator_capability(operator, here)) is not None:
        grants.append(capability)
    if config:
        grants.append(Capability("config", str(resolve_path(config, here).parent)))
    return grants


__all__ = ["flag_grants"]
