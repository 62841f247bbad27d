"""One provider attempt of an agent call, and the layers it passes through.

An attempt is `invoke(attempt) -> reply`. Each layer wraps the next one's `invoke` (the
shape of Temporal's interceptors): it may answer the attempt itself (the journal, a
cassette), act before and after the rest (cost, recording, streaming, the provider's
guard), or refuse the whole call (`CallRefused`: a budget it would exceed). The innermost
`send` gives the attempt's request to its provider. `chain` builds the chain once per run,
from the layers that apply to it (the package docstring lists them in order).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from flow_kernel.errors import FlowError
from flow_kernel.runtime.agents.calls import AgentCall
from flow_kernel.runtime.providers.base import Provider, ProviderReply, ProviderRequest


@dataclass(slots=True)
class Attempt:
    """One attempt of `call`: the first, a repair (`repair_of`: the last output and its
    errors) or a retry. `number` counts the call's attempts from 1, repairs and retries
    included (the journal's and the cassette's keys). `provider` and `request` are set once
    the attempt goes past the recorded answers to a provider (`live`)."""

    call: AgentCall
    number: int
    repair_of: dict[str, Any] | None = None
    timeout_ms: Any = None  # the agent's own `timeout`, as the program gave it
    live: bool = False
    provider: Provider | None = None
    request: ProviderRequest | None = None


Invoke = Callable[[Attempt], Awaitable[ProviderReply]]


class AttemptLayer(Protocol):
    """A wrapper around the rest of the chain: `invoke` is the next layer's. An `async def`,
    or a plain one that hands the attempt on (returns what `invoke` returns: one coroutine
    frame less per attempt) when it has nothing to do after the rest."""

    def __call__(self, attempt: Attempt, invoke: Invoke) -> Awaitable[ProviderReply]: ...


class CallRefused(Exception):
    """A layer refuses the call, not just this attempt: `error` ends the call as it is, with
    no log entry, no repair and no retry."""

    def __init__(self, error: FlowError) -> None:
        super().__init__(error.message)
        self.error = error


def send(attempt: Attempt) -> Awaitable[ProviderReply]:
    """The innermost step: the attempt's request to its provider, the call marked as sent
    the moment the request is made (what a reply-less attempt may have cost: cost.py)."""
    assert attempt.provider is not None and attempt.request is not None, "the request layer runs first"
    attempt.call.sent = True
    return attempt.provider.attempt(attempt.request)


def chain(layers: Sequence[AttemptLayer], last: Invoke = send) -> Invoke:
    """`layers[0]` around `layers[1]` … around `last`: one `invoke` for the whole chain."""
    invoke = last
    for layer in reversed(layers):
        invoke = functools.partial(layer, invoke=invoke)
    return invoke
