"""Resilience per provider: rate limits, `Retry-After`, a circuit breaker and a
bulkhead, shared by every run of a session.

Each remote provider (providers/table.py) gets one `ProviderGuard`, configured under its
`[providers.NAME]` table in `flow.toml` (defaults in `Limits`):

```toml
[providers.openai]
requests_per_minute = 500     # a token bucket of requests (burst: a tenth of a minute's worth)
tokens_per_minute = 200000    # a token bucket of tokens: estimated before, settled after a call
max_in_flight = 16            # the bulkhead: calls in flight at once, across the session's runs
breaker_failures = 5          # consecutive failures that open the circuit breaker…
breaker_pause = 30            # …seconds it stays open before one probe may go through
rate_limit_retries = 3        # times a `429` is sent again after its Retry-After
```

A call passes the guard before each request (`enter`), in this order: the **breaker**
(open: fail fast with `agent-invocation` naming it; after the pause one call is the
half-open probe, and others fail fast until it ends) → **Retry-After** (a `429` holds
every call of the provider until the time it gave) → the **buckets** (a reservation:
first come, first served, never more than the bucket holds) → the **bulkhead**. Every
wait counts against the run's deadline and never goes past it: a wait that would end
after the deadline fails the call at once (`agent-invocation`, `details.rate_limited`).
Each wait and each state change of a breaker is an event of the call that saw it
(`provider.waiting` / `provider.resumed`, `provider.breaker`: events/vocabulary.py, timing kinds).

The clock is injected (`Clock`): tests run minutes of rate limiting in milliseconds.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from flow_kernel.errors import AgentInvocationError, FlowError

Notify = Callable[[str, dict[str, Any]], None]  # (event kind, data) for the call that is passing


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class Limits:
    """A provider's resilience settings; None for a limit means none is applied."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_in_flight: int = 16
    breaker_failures: int = 5
    breaker_pause: float = 30.0
    rate_limit_retries: int = 3

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Limits:
        known = {k: options[k] for k in cls.__dataclass_fields__ if options.get(k) is not None}
        return cls(**known)


class TokenBucket:
    """`rate` per minute, holding at most `capacity`. `reserve` takes tokens now and says how
    long to wait until they were there: reservations queue first come, first served, and
    the tokens taken by time t never exceed capacity + rate × t."""

    def __init__(self, per_minute: float, now: float, capacity: float | None = None) -> None:
        self.rate = per_minute / 60.0
        self.capacity = capacity if capacity is not None else max(1.0, per_minute / 10)
        self.tokens = self.capacity
        self.at = now

    def _refill(self, now: float) -> None:
        if now > self.at:
            self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
            self.at = now

    def reserve(self, amount: float, now: float) -> float:
        self._refill(now)
        self.tokens -= amount
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate

    def give_back(self, amount: float, now: float) -> None:
        """Return (or, negative, take more of) what a reservation took: a call that did not
        go, or a token estimate settled against the usage the provider reported."""
        self._refill(now)
        self.tokens = min(self.capacity, self.tokens + amount)


@dataclass
class Ticket:
    """One request through the guard, until `success` or `failure`."""

    tokens: float
    probe: bool = False
    done: bool = False


class ProviderGuard:
    def __init__(self, name: str, limits: Limits, clock: Clock) -> None:
        self.name = name
        self.limits = limits
        self.clock = clock
        now = clock.now()
        self.requests = TokenBucket(limits.requests_per_minute, now) if limits.requests_per_minute else None
        self.tokens = TokenBucket(limits.tokens_per_minute, now, capacity=limits.tokens_per_minute / 10) \
            if limits.tokens_per_minute else None
        self.blocked_until = float("-inf")  # a 429's Retry-After, for every call of the provider
        self.in_flight = 0
        self._slots: collections.deque[asyncio.Future[None]] = collections.deque()
        self.state = "closed"  # closed | open | half-open
        self.failures = 0  # consecutive
        self.opened_at = 0.0
        self.probing = False

    # -- before a request ----------------------------------------------------------------------
    async def enter(self, tokens: float, remaining: float | None, notify: Notify) -> Ticket:
        ticket = Ticket(tokens)
        self._breaker(ticket, notify)
        try:
            await self._rate(ticket, remaining, notify)
            await self._bulkhead(remaining, notify)
        except BaseException:
            if ticket.probe:
                self.probing = False
            raise
        return ticket

    async def pace(self, ticket: Ticket, tokens: float, remaining: float | None, notify: Notify) -> None:
        """A later request within an attempt already inside the guard (a tool loop's next
        round): it waits for the rate limits like any request and keeps the slot it has; its
        token estimate joins the ticket's, which the usage settles at the end."""
        await self._rate(Ticket(tokens), remaining, notify)
        ticket.tokens += tokens

    def _breaker(self, ticket: Ticket, notify: Notify) -> None:
        if self.state == "closed":
            return
        now = self.clock.now()
        if self.state == "open":
            left = self.opened_at + self.limits.breaker_pause - now
            if left > 0:
                raise self._open_error(f"open after {self.failures} consecutive failures; the next call may try "
                                       f"again in {left:.1f} s")
            self._set_state("half-open", notify)
        if self.probing:
            raise self._open_error("half-open: one probe call is finding out whether the provider is back")
        self.probing = ticket.probe = True

    def _open_error(self, why: str) -> AgentInvocationError:
        return AgentInvocationError(f"the circuit breaker of provider `{self.name}` is {why}",
                                    details={"breaker": self.name, "state": self.state})

    async def _rate(self, ticket: Ticket, remaining: float | None, notify: Notify) -> None:
        now = self.clock.now()
        waits = {"retry-after": self.blocked_until - now}
        if self.requests is not None:
            waits["rpm"] = self.requests.reserve(1, now)
        if self.tokens is not None:
            waits["tpm"] = self.tokens.reserve(ticket.tokens, now)
        reason = max(waits, key=lambda k: waits[k])
        wait = waits[reason]
        if wait <= 0:
            return
        if remaining is not None and wait > remaining:
            self._give_back(ticket)
            raise AgentInvocationError(
                f"provider `{self.name}` cannot take this call before the run's deadline: its "
                f"{_REASONS[reason]} asks for a wait of {wait:.1f} s, and {max(0.0, remaining):.1f} s are left",
                details={"rate_limited": reason, "wait_ms": round(wait * 1000)})
        notify("provider.waiting", {"provider": self.name, "reason": reason, "wait_ms": round(wait * 1000)})
        started = self.clock.now()
        await self.clock.sleep(wait)
        notify("provider.resumed", {"provider": self.name, "reason": reason,
                                    "waited_ms": round((self.clock.now() - started) * 1000)})

    def _give_back(self, ticket: Ticket) -> None:
        now = self.clock.now()
        if self.requests is not None:
            self.requests.give_back(1, now)
        if self.tokens is not None:
            self.tokens.give_back(ticket.tokens, now)

    async def _bulkhead(self, remaining: float | None, notify: Notify) -> None:
        if self.in_flight < self.limits.max_in_flight:
            self.in_flight += 1
            return
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._slots.append(slot)
        notify("provider.waiting", {"provider": self.name, "reason": "bulkhead"})
        started = time.monotonic()
        try:
            if remaining is None:
                await asyncio.shield(slot)
            else:
                await asyncio.wait_for(asyncio.shield(slot), remaining)
        except BaseException as exc:
            if slot.done() and not slot.cancelled():  # the slot came as this call gave up: pass it on
                self._leave()
            else:
                slot.cancel()
                with contextlib.suppress(ValueError):
                    self._slots.remove(slot)
            if isinstance(exc, TimeoutError):
                raise AgentInvocationError(
                    f"provider `{self.name}` had no free slot before the run's deadline ({self.limits.max_in_flight} "
                    "calls in flight: `max_in_flight`)", details={"rate_limited": "bulkhead"}) from None
            raise
        notify("provider.resumed", {"provider": self.name, "reason": "bulkhead",
                                    "waited_ms": round((time.monotonic() - started) * 1000)})

    # -- after it ------------------------------------------------------------------------------
    def success(self, ticket: Ticket, usage: Mapping[str, int], notify: Notify) -> None:
        if ticket.done:
            return
        ticket.done = True
        self._leave()
        if self.tokens is not None:  # settle the estimate against what was used
            used = sum(int(v) for v in usage.values() if isinstance(v, int))
            self.tokens.give_back(ticket.tokens - used, self.clock.now())
        self.failures = 0
        if ticket.probe:
            self.probing = False
        if self.state != "closed":
            self._set_state("closed", notify)

    def failure(self, ticket: Ticket, error: FlowError, notify: Notify) -> None:
        if ticket.done:
            return
        ticket.done = True
        self._leave()
        if ticket.probe:
            self.probing = False
        if not counts_against_breaker(error):
            if ticket.probe and self.state == "half-open":  # the provider answered: it is up
                self.failures = 0
                self._set_state("closed", notify)
            return
        self.failures += 1
        if self.state == "half-open" or (self.state == "closed" and self.failures >= self.limits.breaker_failures):
            self.opened_at = self.clock.now()
            self._set_state("open", notify)

    def release(self, ticket: Ticket) -> None:
        """A request that ended without an outcome (the run was cancelled): its slot back."""
        if ticket.done:
            return
        ticket.done = True
        self._leave()
        if ticket.probe:
            self.probing = False

    def hold_off(self, seconds: float) -> None:
        """A `429`'s Retry-After: every call of the provider waits until then."""
        self.blocked_until = max(self.blocked_until, self.clock.now() + seconds)

    def _leave(self) -> None:
        while self._slots:  # hand the slot to the first waiter still waiting
            slot = self._slots.popleft()
            if not slot.done():
                slot.set_result(None)
                return
        self.in_flight -= 1

    def _set_state(self, state: str, notify: Notify) -> None:
        self.state = state
        data: dict[str, Any] = {"provider": self.name, "state": state}
        if state == "open":
            data.update(failures=self.failures, pause_ms=round(self.limits.breaker_pause * 1000))
        notify("provider.breaker", data)


_REASONS = {"retry-after": "Retry-After", "rpm": "requests-per-minute limit", "tpm": "tokens-per-minute limit"}


def counts_against_breaker(error: FlowError) -> bool:
    """A failure of the provider itself: unreachable, a 5xx, a stream cut, no answer in
    time. Not a 4xx (the request's fault, a rate limit), not an answer that broke the
    contract, not the breaker's own fast failure."""
    if error.code != "agent-invocation" or not isinstance(error.details, dict):
        return False
    details = error.details
    if "breaker" in details or "rate_limited" in details:
        return False
    status = details.get("status")
    return not isinstance(status, int) or status >= 500


class Resilience:
    """Every provider's guard, for one session (all its runs share them)."""

    def __init__(self, settings: Callable[[str], Mapping[str, Any]], clock: Clock | None = None) -> None:
        self.settings = settings  # provider name -> its `[providers.NAME]` options
        self.clock: Clock = clock or RealClock()
        self.guards: dict[str, ProviderGuard] = {}

    def guard(self, provider: str) -> ProviderGuard:
        found = self.guards.get(provider)
        if found is None:
            found = self.guards[provider] = ProviderGuard(provider, Limits.from_options(self.settings(provider)),
                                                          self.clock)
        return found


def estimate_tokens(*texts: str) -> int:
    """A request's tokens before it is sent, for the tokens-per-minute bucket (about four
    characters a token); the usage the provider reports settles it after."""
    return max(1, sum(len(t) for t in texts) // 4)
