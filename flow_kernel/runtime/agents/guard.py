"""The provider's guard and the agent's own timeout, the innermost layers of the chain.

A remote provider's attempt passes its guard (runtime/providers/resilience.py: the breaker,
Retry-After, the rate limits and the bulkhead) before each request, and reports its
outcome after. A `429` is sent again after its Retry-After, up to `rate_limit_retries`
times, while no tool ran in the attempt and the wait ends before the run's deadline; those
re-sends are the same attempt (not charged again). Inside the guard, an attempt runs
within the agent's own `timeout` (`agent-invocation` when it runs out).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from flow_kernel.errors import AgentInvocationError, FlowError
from flow_kernel.runtime.agents.attempt import Attempt, Invoke
from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.providers.base import ProviderReply
from flow_kernel.runtime.providers.resilience import (
    Notify,
    ProviderGuard,
    Resilience,
    Ticket,
    estimate_tokens,
)
from flow_kernel.runtime.providers.table import is_remote


class GuardLayer:
    """Passes a remote provider's attempts through its guard in `resilience` (the local
    providers need none). `remaining()` is the time left before the run's deadline, None
    without one; the guard's waits and breaker changes are events of the call (`emit`)."""

    def __init__(self, resilience: Resilience, remaining: Callable[[], float | None],
                 emit: Callable[[Event], None]) -> None:
        self.resilience = resilience
        self.remaining = remaining
        self.emit = emit

    async def __call__(self, attempt: Attempt, invoke: Invoke) -> ProviderReply:
        call = attempt.call
        if not is_remote(call.provider):
            return await invoke(attempt)
        guard = self.resilience.guard(call.provider)
        notify = self._notifier(call.payload)
        estimate = estimate_tokens(call.system, call.prompt)
        tools_before = len(call.tool_calls)
        tried = 0
        while True:
            ticket = await guard.enter(estimate, self.remaining(), notify)
            if attempt.request is not None:  # a tool loop's later rounds wait for the rate limits too
                attempt.request.before_request = functools.partial(self._pace, guard, ticket, estimate, notify)
            try:
                reply = await invoke(attempt)
            except FlowError as exc:
                guard.failure(ticket, exc, notify)
                details = exc.details if isinstance(exc.details, dict) else {}
                if details.get("status") != 429 or tried >= guard.limits.rate_limit_retries \
                        or len(call.tool_calls) > tools_before:
                    raise
                given = details.get("retry_after")
                wait = float(given) if isinstance(given, int | float) else min(30.0, 2.0 ** tried)
                remaining = self.remaining()
                if remaining is not None and wait > remaining:
                    raise AgentInvocationError(
                        f"{exc.message}; its Retry-After ({wait:.1f} s) ends after the run's deadline "
                        f"({max(0.0, remaining):.1f} s left)", details={**details, "rate_limited": "retry-after"}) from None
                guard.hold_off(wait)
                tried += 1
                continue
            except BaseException:  # cancelled (the run ended): leave without a verdict on the provider
                guard.release(ticket)
                raise
            guard.success(ticket, reply.usage, notify)
            return reply

    async def _pace(self, guard: ProviderGuard, ticket: Ticket, estimate: float, notify: Notify) -> None:
        await guard.pace(ticket, estimate, self.remaining(), notify)  # the time left when the round starts

    def _notifier(self, payload: dict[str, Any]) -> Notify:
        """The call's provider events (waits, breaker changes): timing kinds, out of the
        canonical sequence, so they take no order key from the call (events/vocabulary.py)."""

        def notify(kind: str, data: dict[str, Any]) -> None:
            self.emit({"type": kind, "span": {"id": payload.get("call"), "parent": payload.get("span")},
                       "stage": payload.get("stage"), "data": data})

        return notify


class TimeoutLayer:
    """An attempt within its agent's own `timeout` (`agent-invocation` when it runs out)."""

    def __call__(self, attempt: Attempt, invoke: Invoke) -> Awaitable[ProviderReply]:
        timeout_ms = attempt.timeout_ms
        if isinstance(timeout_ms, int) and timeout_ms > 0:
            return self._within(attempt, invoke, timeout_ms)
        return invoke(attempt)

    @staticmethod
    async def _within(attempt: Attempt, invoke: Invoke, timeout_ms: int) -> ProviderReply:
        try:
            return await asyncio.wait_for(invoke(attempt), timeout_ms / 1000)
        except TimeoutError:
            raise AgentInvocationError(f"`{attempt.call.spec.name}` timed out after {timeout_ms} ms") from None
