"""The cost limit under fan-out (docs/security.md, "Cost"): a workflow's `limits { cost: … }`
bounds what its runs may spend with the person's provider key. The attack — a `parallelMap`
that sends its calls at once, each checked only against what earlier replies had cost, so
none of them saw the others in flight — is tried for real: the Pyodide sandbox, the official
`openai` client and a slow loopback provider. With every attempt's worst case reserved before
it is sent, the provider bills at most the limit and the run fails with `limit-exceeded`;
with only settled spending counted (the reopened door) the fan-out spends past the limit and
the run succeeds."""

from __future__ import annotations

import pytest

from flow_kernel.runtime.budgets import FrameBudget
from tests.runtime.fan_out import (  # noqa: F401 - fixtures
    Provider,
    Sandbox,
    committed_peak,
    provider_fixture,
    sandbox_fixture,
    spent,
)

LIMIT = 0.3  # room for two worst cases (~0.13 each) at once; 16 replies of 0.03 would spend 0.48
SIXTEEN = f'''agent a {{ model: "openai/m" }}
workflow w() -> string[] {{
  limits {{ cost: {LIMIT}, concurrency: 16 }}
  return parallelMap(range(16), i => a("call ${{i}}"), concurrency: 16)
}}'''


def test_a_fan_out_spends_no_more_than_the_cost_limit(sandbox: Sandbox, provider: Provider) -> None:
    server = provider.fresh(16)
    outcome = sandbox.run(SIXTEEN)
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
    assert outcome.error.details["limit"] == "cost"
    assert spent(server) <= LIMIT and committed_peak(server) <= LIMIT
    assert len(server.requests) < 16


def test_reopened_door_a_fan_out_spends_past_the_limit(sandbox: Sandbox, provider: Provider,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Only settled spending counted (what is in flight ignored): every call goes at once."""
    monkeypatch.setattr(FrameBudget, "fits", lambda self, worst: self.cost is None or self.spent + worst <= self.cost)
    server = provider.fresh(16)
    outcome = sandbox.run(SIXTEEN)
    assert outcome.error is None, outcome.to_json()
    assert len(server.requests) == 16 and spent(server) > LIMIT and committed_peak(server) > LIMIT
