"""`RunContext`: everything a run needs from its host, in one frozen object.

A session builds one from its constructor and configuration and derives one per run
(`for_run`: the run's id, its resume checkpoint, its extra sinks); the run path
(`run_compiled`, `HostServices`, the agent pipeline) and an eval's items read their
settings from it instead of from parameter lists threaded through each layer. A new run
setting is a field here, read where it is used.

The shape follows Temporal's `WorkflowInstanceDetails`: a frozen value that carries what
one instance needs, derived with `dataclasses.replace`, never mutated. The objects it
holds may themselves be live and shared on purpose: the session's tool registry, its
provider guards (`resilience`), the cassette it records into, and its `sources`, to which
later cells add their text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.policy.ceilings import Ceilings
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.tools import ToolRegistry

if TYPE_CHECKING:
    from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
    from flow_kernel.runtime.durable.journal import Checkpoint
    from flow_kernel.runtime.providers.base import Provider
    from flow_kernel.runtime.providers.resilience import Resilience

EventSink = Callable[[Event], None]
TraceSink = Callable[[dict[str, Any]], None]


def _no_operator() -> Operator:
    return Operator("none")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """What a run needs besides its program and input.

    The person's grants: `operator` (who answers `approve`/`ask`), `allow_run` (the
    executables `run` may start), `ceilings` (the maxima of every limit; default: the
    `FLOW_MAX_*` variables). The host's services: `config` (flow.toml), `tools` (the Python
    tools), `providers` (providers replaced by name: tests, embedding), `resilience` (the
    remote providers' rate limits and breakers, shared by a session's runs; None: each run
    its own). The cassette: `recorder` or `player`, and `cassette_scope` (the key scope of a
    run's calls; None: the program and workflow). Durability: `journal_dir` (None: no
    journal), `resume` (the verified journal of an earlier execution of `run_id`). Where
    the run is seen: `sinks` (every event), `trace_sinks` (one trace per agent call, with
    the compiled prompt and raw output when `debug`). `sources` (file name -> text) are
    more sources the run's spans can point into. `run_id` None: a new id per run.
    `sandbox_group`: the run may share a sandbox process with other runs of the same group
    while they all wait on the host (an eval's items: one program, one person's grants;
    sandbox/pool.py); None: a process of its own."""

    operator: Operator = dataclasses.field(default_factory=_no_operator)
    allow_run: frozenset[str] = frozenset()
    ceilings: Ceilings = dataclasses.field(default_factory=Ceilings.from_env)
    config: FlowConfig = dataclasses.field(default_factory=FlowConfig)
    tools: ToolRegistry = dataclasses.field(default_factory=ToolRegistry)
    providers: Mapping[str, Provider] = dataclasses.field(default_factory=dict)
    resilience: Resilience | None = None
    recorder: CassetteRecorder | None = None
    player: CassettePlayer | None = None
    cassette_scope: str | None = None
    journal_dir: Path | None = None
    resume: Checkpoint | None = None
    run_id: str | None = None
    sinks: Sequence[EventSink] = ()  # kept as a tuple
    trace_sinks: Sequence[TraceSink] = ()  # kept as a tuple
    debug: bool = False
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    sandbox_group: str | None = None

    def __post_init__(self) -> None:
        # Lists, sets and dicts given by a caller are copied: changing them later changes no run.
        # (Copies, not read-only views: a context travels pickled to Ray workers.)
        object.__setattr__(self, "allow_run", frozenset(self.allow_run))
        object.__setattr__(self, "sinks", tuple(self.sinks))
        object.__setattr__(self, "trace_sinks", tuple(self.trace_sinks))
        object.__setattr__(self, "providers", dict(self.providers))
        if self.journal_dir is not None and not isinstance(self.journal_dir, Path):
            object.__setattr__(self, "journal_dir", Path(self.journal_dir))
        if self.recorder is not None and self.player is not None:
            raise ValueError("a run records into a cassette or replays one, not both")

    def replace(self, **changes: Any) -> RunContext:
        """This context with `changes` (field name -> value); this one is unchanged."""
        return dataclasses.replace(self, **changes)

    def for_run(self, *, run_id: str | None = None, resume: Checkpoint | None = None,
                sinks: Iterable[EventSink] = (), cassette_scope: str | None = None) -> RunContext:
        """The context of one run: this one, with the run's id and resume checkpoint, its
        `sinks` after the context's own, and its cassette scope when one is given."""
        return dataclasses.replace(self, run_id=run_id, resume=resume, sinks=(*self.sinks, *sinks),
                                   cassette_scope=cassette_scope if cassette_scope is not None else self.cassette_scope)


__all__ = ["EventSink", "RunContext", "TraceSink"]
