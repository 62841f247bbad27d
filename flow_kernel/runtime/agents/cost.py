"""What an attempt costs: the outermost layer of the attempt chain.

Every reply's usage, raw text and cost are counted on the call, wherever the reply came
from (the journal, a cassette, a provider). Under `limits { cost: … }` each attempt first
reserves its worst case on every enclosing limit and settles it when it ends
(runtime/budgets.py says how reservations are decided).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from flow_kernel.errors import FlowError, LimitExceededError
from flow_kernel.lang.prices import DEFAULT_MAX_OUTPUT_TOKENS, FREE
from flow_kernel.runtime.agents.attempt import Attempt, CallRefused, Invoke
from flow_kernel.runtime.agents.calls import AgentCall
from flow_kernel.runtime.budgets import CostReservations, FrameBudget, Reservation, cost_limited
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.providers.base import ProviderReply
from flow_kernel.runtime.providers.resilience import estimate_tokens


def account(call: AgentCall, reply: ProviderReply) -> None:
    """Count one reply on its call: its usage, its raw text (traces), and at the model's
    price what it cost."""
    usage = reply.usage
    for k, v in usage.items():
        call.usage[k] = call.usage.get(k, 0) + int(v)
    call.raw.append(reply.raw)
    price = call.price
    if price is not None and price is not FREE:  # FREE (the local providers) adds nothing, whatever the usage
        call.cost += price.cost(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))


class CostLayer:
    """Counts each reply on its call (`account`); reserves and settles an attempt's worst
    case on the `cost` limits of the frames around it (`frames`: the run's, by name)."""

    def __init__(self, frames: Mapping[str, FrameBudget], config: FlowConfig,
                 reservations: CostReservations | None = None) -> None:
        self.frames = frames
        self.config = config
        self.reservations = reservations or CostReservations()

    async def __call__(self, attempt: Attempt, invoke: Invoke) -> ProviderReply:
        call = attempt.call
        limited = self._limited(call)
        if not limited:
            reply = await invoke(attempt)
            account(call, reply)
            return reply
        try:
            reservation = await self.reserve(call, attempt.repair_of, limited)
        except LimitExceededError as exc:
            raise CallRefused(exc) from None
        return await self._settled(attempt, invoke, reservation)

    def _limited(self, call: AgentCall) -> list[FrameBudget]:
        """The frames around the call that have a `cost` limit, innermost first."""
        return cost_limited(self.frames, call.payload.get("frame"))

    async def reserve(self, call: AgentCall, repair_of: dict[str, object] | None,
                      limited: list[FrameBudget]) -> Reservation:
        """Before an attempt: its worst case (its prompt, and `max_tokens` of output) reserved
        on every enclosing `cost` limit, beside what ended and what is in flight, waiting for
        attempts in flight when it does not fit yet; `limit-exceeded` when it cannot fit.
        The request then carries that output as its cap (`call.output_cap`), so its reply
        cannot cost more output. Without a price for the model no limit can be checked, so
        the call does not go (the price table: lang/prices.py, `[prices]` in flow.toml).
        `limited`: the enclosing frames with a `cost` limit (`_limited`), at least one."""
        if call.price is None:
            raise LimitExceededError(
                f"`{call.spec.name}` uses {call.provider}/{call.model}, which has no price, so the `cost` limit of "
                f"`{limited[0].name}` cannot be checked: add it under [prices] in flow.toml",
                details={"limit": "cost", "value": limited[0].cost, "workflow": limited[0].name})
        output = call.output_cap = self.config.provider(call.provider).max_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        sent = call.system + call.prompt + (json.dumps(repair_of, ensure_ascii=False, default=str) if repair_of else "")
        worst = call.price.cost(estimate_tokens(sent), output)
        agent = call.spec.name

        def refuse(budget: FrameBudget, worst: float) -> LimitExceededError:
            return LimitExceededError(
                f"the `cost` limit of {budget.cost:g} of `{budget.name}` would be exceeded by the next attempt of "
                f"`{agent}`: {budget.spent:.4f} spent, and it may cost up to {worst:.4f}",
                details={"limit": "cost", "value": budget.cost, "workflow": budget.name,
                         "spent": round(budget.spent, 6), "worst_case": round(worst, 6)})

        return await self.reservations.reserve(limited, worst, refuse)

    async def _settled(self, attempt: Attempt, invoke: Invoke, reservation: Reservation) -> ProviderReply:
        """The attempt, its reservation settled when it ends: at what its reply cost; without
        a reply, at nothing when nothing was sent or the provider answered with an error
        status (not billed), else at its worst case (budgets.py)."""
        call = attempt.call
        before = call.cost
        call.sent = False
        try:
            reply = await invoke(attempt)
            account(call, reply)
        except BaseException as exc:
            answered = isinstance(exc, FlowError) and isinstance(exc.details, dict) and "status" in exc.details
            unbilled = call.cost > before or not call.sent or answered
            self.reservations.settle(reservation, call.cost - before if unbilled else reservation.worst)
            raise
        self.reservations.settle(reservation, call.cost - before)
        return reply
