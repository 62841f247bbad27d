"""Streamed replies in the attempt chain: the pieces a provider reports while the model
writes become the call's `agent.delta` events (merging and throttling:
runtime/providers/streaming.py).

A provider with `stream = false` in its `[providers.NAME]` table is asked for whole
replies. `agent.delta` events are live only and carry no order key, so they never move
the call's other events. A stream cut mid-way leaves what it wrote in the call's trace
(`partial`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flow_kernel.errors import FlowError
from flow_kernel.runtime.agents.attempt import Attempt, Invoke
from flow_kernel.runtime.agents.calls import AgentCall
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.providers.base import ProviderReply, is_plain_text
from flow_kernel.runtime.providers.streaming import INTERVAL, Delta, DeltaMerger, DeltaSink


class StreamingLayer:
    """Gives a live attempt's request its delta sink (when its provider streams), flushes
    what is held back when the attempt ends, and keeps a failed attempt's streamed text.
    `interval`: seconds between two `agent.delta` events of a call."""

    def __init__(self, emit: Callable[[Event], None], config: FlowConfig, interval: float = INTERVAL) -> None:
        self.emit = emit
        self.config = config
        self.interval = interval
        self._streams: dict[str, bool] = {}  # provider -> its `stream` option, read once per run

    async def __call__(self, attempt: Attempt, invoke: Invoke) -> ProviderReply:
        call = attempt.call
        if attempt.request is not None and self.streams(call.provider):
            attempt.request.on_delta = self._sink(call, attempt.number)
        try:
            return await invoke(attempt)
        except FlowError:
            if call.merger is not None and call.merger.text:  # cut (or timed out) mid-way: what it wrote
                call.partial = call.merger.text
            raise
        finally:
            if call.merger is not None:
                call.merger.flush()

    def streams(self, provider: str) -> bool:
        """Whether the provider's replies are asked for as a stream (its `stream` option, the
        same for the whole run: the configuration does not change while it runs)."""
        streams = self._streams.get(provider)
        if streams is None:
            streams = self._streams[provider] = bool(self.config.provider(provider).options.get("stream", True))
        return streams

    def _sink(self, call: AgentCall, attempt: int) -> DeltaSink:
        """Where the attempt's streamed pieces go: the call's merger, started on this attempt.
        A call whose provider never streams (the local ones) never makes one: it is made on
        the first piece."""
        if call.merger is not None:
            call.merger.start_attempt(attempt)
            return call.merger

        def first(delta: Delta) -> None:
            if call.merger is None:
                call.merger = self._merger(call)
                call.merger.start_attempt(attempt)
            call.merger(delta)

        return first

    def _merger(self, call: AgentCall) -> DeltaMerger:
        payload, base = call.payload, {"agent": call.spec.name, "label": call.label}

        def emit(data: dict[str, Any]) -> None:
            self.emit({"type": "agent.delta", "span": {"id": payload.get("call"), "parent": payload.get("span")},
                       "stage": payload.get("stage"), "data": {**base, **data}})

        return DeltaMerger(emit, structured=not is_plain_text(call.schema), interval=self.interval)
