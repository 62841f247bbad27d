"""The output cap a request carries (provider_base.output_cap): a cost-limited attempt sends the
output its reservation assumed, a configured `max_tokens` is always sent, and a request with
neither names no cap, as before. A reply stopped at the cap is a typed failure. The official
`openai` and `anthropic` clients against loopback servers that stream as the real APIs do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.errors import LimitExceededError
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.prices import DEFAULT_MAX_OUTPUT_TOKENS, Price
from flow_kernel.runtime.budgets import CostReservations, FrameBudget
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.providers.anthropic import AnthropicProvider
from flow_kernel.runtime.providers.openai import cap_fields
from flow_kernel.runtime.providers.table import ProviderSettings
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from tests.runtime.sse_servers import SSEServer, anthropic_text, openai_text

# One output token costs exactly 1 and input nothing: an attempt's reserved worst case is
# the number of output tokens it reserved.
PER_OUTPUT_TOKEN = Price(0.0, 1_000_000.0)
CAP_NAMES = ("max_completion_tokens", "max_tokens")


@pytest.fixture(name="server")
def server_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[SSEServer]:
    server = SSEServer()
    for provider in ("OPENAI", "ANTHROPIC"):
        monkeypatch.setenv(f"{provider}_BASE_URL", f"http://127.0.0.1:{server.port}" + ("/v1" if provider == "OPENAI" else ""))
        monkeypatch.setenv(f"{provider}_API_KEY", "sk-output-cap-test")
    yield server
    server.close()


@pytest.fixture(name="reserved")
def reserved_fixture(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every worst case the run's reservations were asked for (the real ones, watched)."""
    asked: list[float] = []
    reserve = CostReservations.reserve

    async def watched(self: CostReservations, budgets: list[FrameBudget], worst: float, refuse: Any) -> Any:
        asked.append(worst)
        return await reserve(self, budgets, worst, refuse)

    monkeypatch.setattr(CostReservations, "reserve", watched)
    return asked


def program(provider: str, limit: float | None) -> str:
    limits = f"\n  limits {{ cost: {limit:g} }}" if limit is not None else ""
    return f'''agent a {{ model: "{provider}/m" }}
workflow w() -> string {{{limits}
  return a("hello")
}}'''


def config(provider: str, max_tokens: int | None = None) -> FlowConfig:
    options = {"max_tokens": max_tokens} if max_tokens is not None else {}
    return FlowConfig(providers={provider: ProviderSettings(options=options)}, prices={f"{provider}/m": PER_OUTPUT_TOKEN})


def run(source: str, flow_config: FlowConfig, **settings: Any) -> RunOutcome:
    compiled = compile_source(SourceFile("cap.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(config=flow_config, **settings),
                                    workflow="w"))


# -- openai ------------------------------------------------------------------------------------
def test_a_cost_limited_openai_request_carries_the_output_it_reserved(server: SSEServer, reserved: list[float]) -> None:
    server.replies.append(openai_text(["hi"]))
    outcome = run(program("openai", 1e9), config("openai"))
    assert outcome.error is None, outcome.to_json()
    (body,) = server.requests
    assert reserved == [DEFAULT_MAX_OUTPUT_TOKENS]
    assert body["max_completion_tokens"] == body["max_tokens"] == DEFAULT_MAX_OUTPUT_TOKENS


def test_a_configured_openai_max_tokens_is_sent_with_or_without_a_limit(server: SSEServer, reserved: list[float]) -> None:
    server.replies += [openai_text(["hi"]), openai_text(["hi"])]
    assert run(program("openai", None), config("openai", 300)).error is None
    assert run(program("openai", 1e9), config("openai", 300)).error is None
    assert [(b["max_completion_tokens"], b["max_tokens"]) for b in server.requests] == [(300, 300), (300, 300)]
    assert reserved == [300]  # only the limited run reserved, and what it sent


def test_without_a_limit_or_a_configured_cap_the_request_names_none(server: SSEServer) -> None:
    """The request as it was before caps: the same fields, so recorded request shapes hold."""
    server.replies.append(openai_text(["hi"]))
    assert run(program("openai", None), config("openai")).error is None
    (body,) = server.requests
    assert sorted(body) == ["messages", "model", "stream", "stream_options"]


def test_openai_s_own_api_gets_the_cap_by_its_new_name_only() -> None:
    """OpenAI refuses `max_tokens` for its reasoning models; compatible servers that only know
    `max_tokens` (Ollama, LM Studio, older llama.cpp) would ignore the new name alone."""
    assert cap_fields("api.openai.com", 300) == {"max_completion_tokens": 300}
    assert cap_fields("127.0.0.1", 300) == {"max_completion_tokens": 300, "max_tokens": 300}


def test_a_reply_stopped_at_the_cap_is_a_typed_failure(server: SSEServer) -> None:
    server.replies.append(openai_text(['{"half": "an ans'], usage=(5, 300), finish="length"))
    outcome = run(program("openai", 1e9), config("openai", 300))
    assert outcome.error is not None and outcome.error.code == "agent-invocation", outcome.to_json()
    assert "cut off at max_tokens (300)" in outcome.error.message
    assert "raise `max_tokens` under [providers.openai]" in outcome.error.message
    assert outcome.error.details == {"finish_reason": "length", "max_tokens": 300}


def test_a_reply_stopped_by_the_server_s_own_limit_is_a_typed_failure_too(server: SSEServer) -> None:
    """No cap was sent, but the server stopped the reply at its own: a cut answer is no answer."""
    server.replies.append(openai_text(["Once upon a"], finish="length"))
    outcome = run(program("openai", None), config("openai"))
    assert outcome.error is not None and outcome.error.code == "agent-invocation", outcome.to_json()
    assert "cut off by the provider's own output limit" in outcome.error.message
    assert "max_completion_tokens" not in server.requests[0]


# -- anthropic ---------------------------------------------------------------------------------
@pytest.mark.parametrize("configured", [None, 300])
def test_anthropic_reserves_exactly_the_max_tokens_it_sends(server: SSEServer, reserved: list[float],
                                                             configured: int | None) -> None:
    server.replies.append(anthropic_text(["hi"]))
    outcome = run(program("anthropic", 1e9), config("anthropic", configured))
    assert outcome.error is None, outcome.to_json()
    (body,) = server.requests
    assert body["max_tokens"] == reserved[0] == (configured or DEFAULT_MAX_OUTPUT_TOKENS)


def test_an_anthropic_provider_with_a_larger_cap_sends_what_was_reserved(server: SSEServer,
                                                                         reserved: list[float]) -> None:
    """A provider built with its own cap (not from the configuration) still sends no more
    than the reservation assumed; without a limit its own cap."""
    server.replies += [anthropic_text(["hi"]), anthropic_text(["hi"])]
    for limit in (1e9, None):  # a provider for each run: its client's connections belong to the run's loop
        provider = AnthropicProvider(max_tokens=8000)
        assert run(program("anthropic", limit), config("anthropic"), providers={"anthropic": provider}).error is None
    assert [b["max_tokens"] for b in server.requests] == [reserved[0], 8000] == [DEFAULT_MAX_OUTPUT_TOKENS, 8000]


# -- a reply that costs more than its worst case ------------------------------------------------
def test_a_reply_past_its_worst_case_is_counted_and_the_next_reservation_sees_it(server: SSEServer) -> None:
    """A provider that ignores the cap: 100 output tokens reserved (~0.1 each attempt with the
    prompt), 600 written (0.6). The overrun is spent in full: the second attempt still fits
    beside 0.6, the third does not beside 1.2 and is refused naming it."""
    price = Price(1000, 1000)
    flow_config = FlowConfig(providers={"openai": ProviderSettings(options={"max_tokens": 100})},
                             prices={"openai/m": price})
    server.replies += [openai_text(["hi"], usage=(20, 600)) for _ in range(3)]
    source = '''agent a { model: "openai/m" }
workflow w() -> string[] {
  limits { cost: 1 }
  return [a("one"), a("two"), a("three")]
}'''
    outcome = run(source, flow_config)
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
    assert len(server.requests) == 2
    assert outcome.error.details["spent"] == pytest.approx(2 * price.cost(20, 600))
    assert outcome.cost == pytest.approx(2 * price.cost(20, 600))


def test_settling_above_the_worst_case_counts_all_of_it() -> None:
    async def main() -> None:
        budget = FrameBudget(None, 100, name="w", cost=1.0)
        book = CostReservations()
        first = await book.reserve([budget], 0.2, refuse)
        book.settle(first, 0.9)  # the reply cost more than its worst case
        assert (budget.spent, budget.reserved, budget.in_flight) == (0.9, 0.0, 0)
        with pytest.raises(LimitExceededError, match="refused on w"):
            await book.reserve([budget], 0.2, refuse)  # 0.9 + 0.2 > 1: decided on what was spent
        assert (await book.reserve([budget], 0.1, refuse)).worst == 0.1

    asyncio.run(main())


def refuse(budget: FrameBudget, worst: float) -> LimitExceededError:
    return LimitExceededError(f"refused on {budget.name}")
