"""The budgets of a run's workflow frames (runtime.md §4): `agent_runs` and the concurrency
gate, and `cost`, which every attempt reserves before it is sent and settles when it ends.

A limit nests: an attempt charges the frame it was made in and every frame enclosing it.
`agent_runs` is a count, known before the attempt (its worst case is its value), so it is
charged at once (`charge_agent_run`). A cost is known only from the reply, so an attempt
first reserves its worst case — its prompt, and `max_tokens` of output, at the model's price
— on every enclosing `cost` limit, and its reply's cost replaces the reservation when it
ends. On every limit, what finished attempts cost plus the worst cases of those in flight
never exceeds the limit.

Deterministic decisions. Reservations are decided one at a time, in the order they are
asked (for a fan-out, the order its calls reach the host: program order). One that fits
beside what is in flight goes at once. One that does not fit waits — and every reservation
asked after it waits behind it — until the attempts in flight on the limits it does not fit
have ended; it is then decided on what they actually cost. Amounts in flight only ever
shrink as attempts end (a reply costs at most its worst case), so going at once means it
would also have fitted once everything before it had ended: each decision is the one the
settled costs of the attempts before it give, whatever the timing of the replies. The same
run with the same answers refuses the same call. A refusal is `limit-exceeded`.

An attempt that ends without a reply settles at nothing when nothing reached the provider or
the provider answered with an error status (nothing is billed), and at its worst case
otherwise (timed out, cut off, cancelled: the provider may have done, and billed, the work).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flow_kernel.errors import CapabilityViolationError, LimitExceededError


@dataclass(slots=True)
class FrameBudget:
    """One workflow frame's `agent_runs`, concurrency gate and `cost` limit; calls charge the whole chain."""

    parent: str | None
    agent_runs: int
    used: int = 0
    name: str = ""
    gate: asyncio.Semaphore | None = None
    cost: float | None = None  # `limits { cost: … }`, in the currency of the price table
    spent: float = 0.0  # what the attempts that ended have cost (settled reservations)
    reserved: float = 0.0  # the worst cases of the attempts in flight
    in_flight: int = 0  # attempts holding a reservation on this frame

    def fits(self, worst: float) -> bool:
        """Whether an attempt of worst case `worst` fits beside what is spent and in flight."""
        return self.cost is None or self.spent + self.reserved + worst <= self.cost


@dataclass
class Reservation:
    """One attempt's worst case, held on the budgets of its limited frames until `settle`."""

    budgets: list[FrameBudget]
    worst: float
    settled: bool = False


class Gate(asyncio.Semaphore):
    """A frame's concurrency gate: an asyncio semaphore whose free slot can be taken without
    a coroutine (`take`), as `acquire` takes it when none is waiting."""

    def take(self) -> bool:
        """Take a slot now if `acquire` would (a free one, no one waiting for one): True.
        False: nothing taken, `await acquire()`."""
        if self._value == 0:  # `locked()`, without its generator over no waiters
            return False
        waiters = self._waiters
        if waiters and any(not waiter.cancelled() for waiter in waiters):
            return False
        self._value -= 1  # what `acquire` does first, without its coroutine
        return True


class Frames(dict[str, FrameBudget]):
    """A run's frame budgets by frame id (host.py adds each frame as it starts), with each
    frame's chain (`enclosing`) worked out once and kept until the frames change: adding,
    replacing or removing a frame forgets every chain."""

    __slots__ = ("_chains",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # frame -> its chain and the part of it with a `cost` limit (shared lists: read only)
        self._chains: dict[str, tuple[list[FrameBudget], list[FrameBudget]]] = {}

    def chains(self, frame: str) -> tuple[list[FrameBudget], list[FrameBudget]]:
        """`enclosing(self, frame)`, and those of its budgets with a `cost` limit."""
        found = self._chains.get(frame)
        if found is None:
            chain = _walk(self, frame)
            found = self._chains[frame] = (chain, [budget for budget in chain if budget.cost is not None])
        return found

    def __setitem__(self, key: str, value: FrameBudget) -> None:
        self._chains.clear()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._chains.clear()
        super().__delitem__(key)

    def __ior__(self, other: Any) -> Frames:  # type: ignore[override,misc]
        self._chains.clear()
        return super().__ior__(other)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._chains.clear()
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: FrameBudget) -> FrameBudget:
        self._chains.clear()
        return super().setdefault(key, default)

    def pop(self, *args: Any) -> Any:
        self._chains.clear()
        return super().pop(*args)

    def popitem(self) -> tuple[str, FrameBudget]:
        self._chains.clear()
        return super().popitem()

    def clear(self) -> None:
        self._chains.clear()
        super().clear()


def enclosing(frames: Mapping[str, FrameBudget], frame: object) -> list[FrameBudget]:
    """The budget of the frame a call was made in, then of every frame enclosing it; empty
    for a frame the run does not know. From `Frames`, a list it keeps: read only."""
    if isinstance(frames, Frames) and isinstance(frame, str):
        return frames.chains(frame)[0]
    return _walk(frames, frame)


def cost_limited(frames: Mapping[str, FrameBudget], frame: object) -> list[FrameBudget]:
    """The budgets of `enclosing(frames, frame)` that have a `cost` limit, innermost first
    (from `Frames`, a list it keeps: read only)."""
    if isinstance(frames, Frames) and isinstance(frame, str):
        return frames.chains(frame)[1]
    return [budget for budget in _walk(frames, frame) if budget.cost is not None]


def _walk(frames: Mapping[str, FrameBudget], frame: object) -> list[FrameBudget]:
    chain: list[FrameBudget] = []
    while isinstance(frame, str) and frame in frames:
        chain.append(frames[frame])
        frame = frames[frame].parent
    return chain


def charge_agent_run(frames: Mapping[str, FrameBudget], frame: str | None, agent: str) -> None:
    """Charge one attempt of `agent` to the `agent_runs` of `frame` and every frame around
    it: all of them or none. `limit-exceeded` when one has no run left; a
    `capability-violation` for a frame the run never announced (it would charge nothing)."""
    if frame not in frames:
        raise CapabilityViolationError(f"`{agent}` was called from an unknown workflow frame {frame!r}",
                                       details={"frame": frame})
    chain = enclosing(frames, frame)
    for budget in chain:
        if budget.used + 1 > budget.agent_runs:
            raise LimitExceededError(f"the `agent_runs` limit of {budget.agent_runs} of `{budget.name}` is exceeded "
                                     f"(calling `{agent}`)", details={"limit": "agent_runs", "value": budget.agent_runs,
                                                                      "workflow": budget.name})
    for budget in chain:
        budget.used += 1


# Builds the refusal for the budget a reservation does not fit (its details: agents/cost.py).
Refusal = Callable[[FrameBudget, float], LimitExceededError]
_Waiting = tuple[list[FrameBudget], float, Refusal, "asyncio.Future[Reservation]"]


class CostReservations:
    """A run's cost reservations, decided in the order they are asked (module docstring)."""

    def __init__(self) -> None:
        self._waiting: deque[_Waiting] = deque()

    async def reserve(self, budgets: list[FrameBudget], worst: float, refuse: Refusal) -> Reservation:
        """Hold `worst` on every budget, once it fits on all of them; `refuse(budget, worst)`
        is raised when it cannot fit on one with nothing left in flight there."""
        if not self._waiting:
            decided = self._decide(budgets, worst)
            if isinstance(decided, Reservation):
                return decided
            if decided is not None:
                raise refuse(decided, worst)
        waiting: asyncio.Future[Reservation] = asyncio.get_running_loop().create_future()
        entry: _Waiting = (budgets, worst, refuse, waiting)
        self._waiting.append(entry)
        try:
            return await waiting
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
                self._decide_waiting()
            elif waiting.done() and not waiting.cancelled() and waiting.exception() is None:
                self.settle(waiting.result(), 0.0)  # granted, then cancelled before it was sent
            raise

    def settle(self, reservation: Reservation, cost: float) -> None:
        """The attempt ended and cost `cost`: it replaces the reservation (once)."""
        if reservation.settled:
            return
        reservation.settled = True
        for budget in reservation.budgets:
            budget.in_flight -= 1
            budget.reserved = budget.reserved - reservation.worst if budget.in_flight else 0.0
            budget.spent += cost
        if self._waiting:
            self._decide_waiting()

    @staticmethod
    def _decide(budgets: list[FrameBudget], worst: float) -> Reservation | FrameBudget | None:
        """The reservation, made; or the budget it can never fit (nothing in flight there to
        wait for); or None: wait for attempts in flight."""
        short = [budget for budget in budgets if not budget.fits(worst)]
        if not short:
            for budget in budgets:
                budget.reserved += worst
                budget.in_flight += 1
            return Reservation(budgets, worst)
        settled = [budget for budget in short if budget.in_flight == 0]
        return settled[0] if len(settled) == len(short) else None

    def _decide_waiting(self) -> None:
        """Decide the waiting reservations from the first, up to one that must wait on."""
        while self._waiting:
            budgets, worst, refuse, waiting = self._waiting[0]
            decided = self._decide(budgets, worst)
            if decided is None:
                return
            self._waiting.popleft()
            if isinstance(decided, Reservation):
                waiting.set_result(decided)
            else:
                waiting.set_exception(refuse(decided, worst))
