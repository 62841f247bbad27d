"""The cost limit against a model that writes long (docs/security.md, "Cost"): an attempt
reserves its prompt and `max_tokens` of output, so a reply longer than that would cost more
than was reserved and carry the run past its limit. Tried for real: the Pyodide sandbox, the
official `openai` client, and a loopback model that writes as many tokens as the request
allows (1,000 when it names no cap). With the reserved output sent as the request's cap the
provider bills at most the limit; with the cap switched off (the reopened door) a fan-out
spends several times the limit."""

from __future__ import annotations

from typing import Any

import pytest

from flow_kernel.runtime.providers import openai as provider_openai
from tests.runtime.fan_out import (  # noqa: F401 - fixtures
    MAX_OUTPUT,
    PRICE,
    Provider,
    Sandbox,
    provider_fixture,
    sandbox_fixture,
)
from tests.runtime.sse_servers import Reply, SSEServer, openai_text

LIMIT = 0.5  # room for four worst cases (~0.1 each, MAX_OUTPUT tokens of output) at once
LONG = 1000  # what the model writes when nothing stops it: 1.0 a reply, twice the limit
SIXTEEN = f'''agent a {{ model: "openai/m" }}
workflow w() -> string[] {{
  limits {{ cost: {LIMIT}, concurrency: 16 }}
  return parallelMap(range(16), i => a("call ${{i}}"), concurrency: 16)
}}'''


def long_writer(server: SSEServer) -> list[float]:
    """The server answers every request with as much output as it allows; the list fills
    with what each reply billed."""
    billed: list[float] = []

    def answer(body: dict[str, Any]) -> Reply:
        caps = [body[name] for name in ("max_completion_tokens", "max_tokens") if isinstance(body.get(name), int)]
        written = min([LONG, *caps])
        billed.append(PRICE.cost(20, written))
        return openai_text(["ok"], usage=(20, written), delay=0.005)

    server.answer = answer
    return billed


def test_a_long_writing_model_spends_no_more_than_the_cost_limit(sandbox: Sandbox, provider: Provider) -> None:
    billed = long_writer(provider.fresh(0))
    outcome = sandbox.run(SIXTEEN)
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
    assert all(body["max_completion_tokens"] == MAX_OUTPUT for body in provider.server.requests)  # type: ignore[union-attr]
    assert 1 < len(billed) < 16 and sum(billed) <= LIMIT
    assert outcome.cost == pytest.approx(sum(billed))


def test_reopened_door_without_the_cap_a_long_writing_model_spends_past_the_limit(
        sandbox: Sandbox, provider: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request names no cap (neither the configured nor the reserved one): each reply
    costs ten times its worst case, and the replies in flight together spend past the limit."""
    monkeypatch.setattr(provider_openai, "output_cap", lambda configured, reserved: None)
    billed = long_writer(provider.fresh(0))
    outcome = sandbox.run(SIXTEEN)
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
    assert all("max_completion_tokens" not in body for body in provider.server.requests)  # type: ignore[union-attr]
    assert sum(billed) > 2 * LIMIT
