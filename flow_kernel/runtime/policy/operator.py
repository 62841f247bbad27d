"""Operator policies (runtime.md §6): who answers `approve` and `ask`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flow_kernel.errors import OperatorUnavailableError
from flow_kernel.runtime.durable.deadlines import PromptDeadline

POLICIES = ("interactive", "auto-approve", "auto-deny", "none", "defer")
# `defer`: the run records the request and stops `waiting`; `flow answer` / `%answer` / the
# widget answers later and `flow resume` goes on (runtime/durable/checkpoint.py, docs/durability.md).

# What an interactive frontend is asked: {"kind": "approve" | "ask", "question", "details",
# "choice", "run"}; it answers True/False for `approve`, a string for `ask` (or a `Decided`).
OperatorCallback = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Decided:
    """A callback's answer that someone other than the person at the frontend decided: `how`
    is what `approval.resolved` and the journal say (`by`), e.g. a policy's name or `timeout`."""

    answer: Any
    how: str


def _decided(reply: Any, cast: Callable[[Any], Any]) -> tuple[Any, str]:
    if isinstance(reply, Decided):
        return cast(reply.answer), reply.how
    return cast(reply), "interactive"


@dataclass
class Operator:
    """`interactive` asks `callback` (the kernel's widget, the CLI's terminal prompt when
    none is given)."""

    policy: str = "none"
    answers: dict[str, Any] = field(default_factory=dict)
    callback: OperatorCallback | None = None

    @staticmethod
    def parse(text: str) -> Operator:
        """`interactive`, `auto-approve`, `auto-deny`, `answers:PATH` or `none`."""
        if text.startswith("answers:"):
            path = Path(text[len("answers:"):])
            try:
                answers = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ValueError(f"cannot read the answers file {path}: {exc}") from None
            if not isinstance(answers, dict):
                raise ValueError(f"the answers file {path} must hold a JSON object")
            return Operator("answers", answers)
        if text not in POLICIES:
            raise ValueError(f"unknown operator policy {text!r}: use interactive, auto-approve, auto-deny, answers:PATH, "
                             "defer or none")
        return Operator(text)

    @staticmethod
    def default() -> Operator:
        """Interactive in a terminal, `none` when headless (CI, nbval, pipes)."""
        return Operator("interactive" if sys.stdin.isatty() and sys.stderr.isatty() else "none")

    async def approve(self, question: str, details: Any, context: dict[str, Any] | None = None) -> tuple[bool, str]:
        """The answer and how it was decided."""
        self._not_deferred()
        if self.policy == "auto-approve":
            return True, "auto-approve"
        if self.policy == "auto-deny":
            return False, "auto-deny"
        if self.policy == "answers":
            answer = self.answers.get(question)
            if isinstance(answer, bool):
                return answer, "answers"
            raise OperatorUnavailableError(f"the answers file has no yes/no answer for {question!r}")
        if self.policy == "interactive" and self.callback is not None:
            return _decided(await self.callback({**(context or {}), "kind": "approve", "question": question,
                                                 "details": details, "choice": None}), bool)
        if self.policy == "interactive":
            text = await self._prompt(f"{question} [y/n]{_deadline_hint(context)} ")
            return text.strip().lower() in ("y", "yes"), "terminal"
        raise OperatorUnavailableError(f"no operator to answer {question!r} (policy `none`)")

    async def ask(self, question: str, choice: list[str] | None,
                  context: dict[str, Any] | None = None) -> tuple[str, str]:
        self._not_deferred()
        if self.policy in ("auto-approve", "auto-deny"):
            if choice:
                return choice[0], self.policy
            raise OperatorUnavailableError(f"policy `{self.policy}` cannot answer the open question {question!r}")
        if self.policy == "answers":
            answer = self.answers.get(question)
            if isinstance(answer, str):
                return answer, "answers"
            raise OperatorUnavailableError(f"the answers file has no answer for {question!r}")
        if self.policy == "interactive" and self.callback is not None:
            return _decided(await self.callback({**(context or {}), "kind": "ask", "question": question,
                                                 "details": None, "choice": choice}), str)
        if self.policy == "interactive":
            hint = f" ({'/'.join(choice)})" if choice else ""
            return (await self._prompt(f"{question}{hint}{_deadline_hint(context)} ")).strip(), "terminal"
        raise OperatorUnavailableError(f"no operator to answer {question!r} (policy `none`)")

    def _not_deferred(self) -> None:
        """`defer` is the host's (its checkpoint stops the run); reached here, no journal is kept."""
        if self.policy == "defer":
            from flow_kernel.runtime.durable.checkpoint import no_journal_for_defer

            raise no_journal_for_defer()

    @staticmethod
    async def _prompt(text: str) -> str:
        """A line from the terminal. A prompt given up on (its deadline passed) leaves its
        read pending, and the next prompt waits on that same read: one reader of stdin, so
        a line typed later answers the question then shown, never a stale one."""
        global _pending_line
        sys.stderr.write(text)
        sys.stderr.flush()
        if _pending_line is None or _pending_line.done():
            _pending_line = _stdin_reader.submit(sys.stdin.readline)
        return await asyncio.wrap_future(_pending_line)


# One thread reads the terminal for every prompt (see `Operator._prompt`).
_stdin_reader = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="flow-operator-stdin")
_pending_line: concurrent.futures.Future[str] | None = None


def _deadline_hint(context: dict[str, Any] | None) -> str:
    """` (no answer in 2m: no)` for a prompt with `timeout T else V`."""
    timeout = (context or {}).get("timeout_ms")
    if not isinstance(timeout, int):
        return ""
    return f" ({PromptDeadline(timeout, (context or {}).get('default')).describe()})"
