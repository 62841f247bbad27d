"""Deadlines on the person: `approve … timeout T else V` and `ask … timeout T else V`.

The program computes the default V before it asks and sends it with the request, with T in
milliseconds (`timeout_ms`). When the operator has not answered after T, the host stops
waiting and answers V itself, marked `by: "timeout"` in `approval.resolved` (and so in the
journal). A policy that answers at once (`auto-approve`, `auto-deny`, `answers:`) answers as
before; one that cannot answer at all (`none`, a headless `interactive`) still fails closed
with `operator-unavailable` at once: a default stands in for a person who could have
answered and did not, never for a missing operator.

A run that stops while it waits (the `defer` policy) keeps the deadline as a wall-clock time
(`due`, ISO 8601 UTC) in its pending record (checkpoint.py); the deadline is checked when the
run is resumed (`expired`): an answer given before it stands, one given after it, or none
at all, gives the default, `by: "timeout"`. Before the deadline, with no answer, the run
waits again. A person at a front end that resumes the run (`%resume`) is asked only the
requests still open (`still_open`), and only until their deadline (`before_due`): a request
past its deadline is the default's, never a question a click could no longer answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from flow_kernel.errors import CapabilityViolationError

# The longest deadline a request may carry (a year): a forged `timeout_ms` cannot make the
# host compute a date past what `datetime` holds.
MAX_TIMEOUT_MS = 366 * 24 * 3_600_000

_Answer = TypeVar("_Answer")


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True)
class PromptDeadline:
    timeout_ms: int
    default: Any

    @staticmethod
    def of(payload: dict[str, Any], kind: str, choice: list[str] | None = None) -> PromptDeadline | None:
        """The deadline a request from the sandbox carries, if any. The bootstrap sends a
        positive `timeout_ms` and a default of the answer's type (the checker saw to it);
        anything else came from a bypassed sandbox and is refused, never answered."""
        if "timeout_ms" not in payload:
            return None
        timeout, default = payload.get("timeout_ms"), payload.get("default")
        if not isinstance(timeout, int) or isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT_MS:
            raise CapabilityViolationError(f"`{kind}`: a malformed `timeout` ({str(timeout)[:40]!r})")
        if kind == "approve" and not isinstance(default, bool):
            raise CapabilityViolationError("`approve`: the default after a `timeout` must be true or false")
        if kind == "ask" and (not isinstance(default, str) or (choice is not None and default not in choice)):
            raise CapabilityViolationError("`ask`: the default after a `timeout` must be a string among its choices")
        return PromptDeadline(timeout, default)

    def event_data(self) -> dict[str, Any]:
        """What `approval.requested` says about the deadline (the view shows it)."""
        return {"timeout_ms": self.timeout_ms, "default": self.default}

    def due(self, asked: datetime.datetime) -> str:
        """The wall-clock deadline of a request asked at `asked` (for a waiting run's record)."""
        return (asked + datetime.timedelta(milliseconds=self.timeout_ms)).isoformat(timespec="milliseconds")

    def describe(self) -> str:
        """`no answer in 2m: no` — for a prompt, next to the question."""
        default = "yes" if self.default is True else "no" if self.default is False else repr(self.default)
        return f"no answer in {duration_text(self.timeout_ms)}: {default}"

    async def wait(self, asking: Awaitable[tuple[Any, str]]) -> tuple[Any, str]:
        """The operator's answer if it comes within the deadline, else the default by
        `timeout`. An operator that fails (unavailable, cancelled) fails the same way as
        without a deadline; a late answer is dropped (the prompt is cancelled)."""
        answered = await _within(self.timeout_ms / 1000, asking)
        return answered if answered is not None else (self.default, "timeout")


async def _within(seconds: float, asking: Awaitable[_Answer]) -> _Answer | None:
    """`asking`'s result if it comes within `seconds`, else None, with `asking` cancelled and
    awaited (the prompt closes, the widget removes its buttons, before the caller goes on)."""
    task = asyncio.ensure_future(asking)
    done, _ = await asyncio.wait({task}, timeout=max(seconds, 0.0))
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    return None


def expired(due: str | None, now: datetime.datetime | str | None = None) -> bool:
    """Whether a waiting request's deadline (`due`) had passed at `now` (a time, an ISO
    text such as an answer's `at`, or the present): checked when the request is answered
    or its run resumed. A request without one never expires."""
    when, at = _time(due), _time(now) if now is not None else utc_now()
    return when is not None and at is not None and at >= when


def still_open(requests: list[dict[str, Any]], now: datetime.datetime | None = None) -> list[dict[str, Any]]:
    """The waiting requests a person may still answer: those whose deadline (`due`) has not
    passed. The others are not asked: resuming the run answers them with their default."""
    return [r for r in requests if not expired(r.get("due"), now)]


async def before_due(due: str | None, asking: Awaitable[_Answer]) -> _Answer | None:
    """A person's answer to a waiting request, if it comes before the request's deadline
    (`due`; without one, whenever it comes); None when the deadline passes first: the prompt
    is cancelled, and resuming the run answers with the default."""
    when = _time(due)
    if when is None:
        return await asking
    return await _within((when - utc_now()).total_seconds(), asking)


def _time(value: datetime.datetime | str | None) -> datetime.datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError:
            return None
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)


async def answer_by(deadline: PromptDeadline | None, asking: Awaitable[tuple[Any, str]]) -> tuple[Any, str]:
    """`asking` (an operator's answer and how it was decided), bounded by `deadline` if any."""
    if deadline is None:
        return await asking
    return await deadline.wait(asking)


def duration_text(ms: int) -> str:
    """A duration as the language writes it: `2h`, `90s`, `250ms`."""
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
