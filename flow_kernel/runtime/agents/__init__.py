"""The host-side agent pipeline (runtime.md §4): one agent call from the sandbox's request
to its answer.

A call (`AgentPipeline.call`) goes, in this order: cancellation/deadline (a call that
arrives past the run's deadline is `workflow-timeout`; the sandbox stops waiting at the
deadline and the host drops the call's task when the run ends) → the `agent_runs` budget
(the first attempt is charged here, before any wait: a call over budget never takes a
concurrency slot) → the concurrency gate → target resolution → tools narrowing → the write
policy → the output contract → the attempt loop (`_contract`: validation, `expect`, repair,
retry; each later attempt charged before it starts) → events and a trace.

Each attempt is one `invoke(attempt) -> reply` through a chain of layers, outermost first
(attempt.py; each layer in its own module):

- `CostLayer` (cost.py): counts the reply's usage and cost; reserves the attempt's worst
  case on the `cost` limits before, settles it after (runtime/budgets.py).
- `JournalLayer` (journal.py, a durable run): answers from the run's journal; journals a
  live answer.
- `ReplayLayer` / `RecordLayer` (cassette.py): answers from a cassette, or records.
- `RequestLayer` (request.py): from here the attempt is live: its provider (from the one
  provider table) and its request, with the call's tools (approvals, journaled results).
- `StreamingLayer` (streaming.py): the provider's streamed pieces as `agent.delta` events.
- `GuardLayer`, `TimeoutLayer` (guard.py): a remote provider's rate limits, Retry-After,
  breaker and bulkhead; the agent's own `timeout`.

An attempt of one of the pipeline's own (local) providers skips `StreamingLayer` and
`GuardLayer`, which would pass it through untouched (they never stream, they have no
guard): `AgentPipeline.invoke_own`. An embedder's provider under a local name keeps the
whole chain.

A new layer is a class with `async def __call__(self, attempt, invoke)` in a module of its
own, placed in `AgentPipeline._layers`. The order matters for behaviour the tests pin down:
the journal answers before a cassette; only live answers are journaled or recorded;
streaming flushes after the guard's re-sends; the timeout runs inside the guard.

The loop and the layers were one 844-line module (`runtime/agents.py`) until the pipeline
was split into layers; the event sequence of every call stayed the same.
"""

from flow_kernel.runtime.agents.attempt import Attempt, AttemptLayer, CallRefused, Invoke
from flow_kernel.runtime.agents.calls import AgentCall, AgentSpec, prompt_files_identity
from flow_kernel.runtime.agents.pipeline import (
    AgentPipeline,
    EmitKept,
    HostCalls,
    SandboxCall,
    Trace,
)
from flow_kernel.runtime.agents.request import OperatorAsk, ToolApprover
from flow_kernel.runtime.context import TraceSink

__all__ = [
    "AgentCall",
    "AgentPipeline",
    "AgentSpec",
    "Attempt",
    "AttemptLayer",
    "CallRefused",
    "EmitKept",
    "HostCalls",
    "Invoke",
    "OperatorAsk",
    "SandboxCall",
    "ToolApprover",
    "Trace",
    "TraceSink",
    "prompt_files_identity",
]
