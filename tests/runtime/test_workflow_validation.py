"""A workflow called from Flow code has its input and output checked against its schemas
at run time (language.md §3.2): values that came through `any`, and constraints the
static types cannot see. In the real sandbox."""

from __future__ import annotations

import pytest

from flow_kernel import Session

INNER = '''workflow inner(n: int(minimum: 0), label?: string) -> string(maxLength: 4) {
  return "${label ?? "n"}${n}"
}
'''


@pytest.fixture(scope="module")
def session() -> Session:
    return Session(operator="none", journal_dir=None)  # `run` stops its sandbox after each run


@pytest.mark.parametrize(("call", "code", "message"), [
    ('inner(parseJson("-5"))', "workflow-input-validation", "the input of `inner` does not match its schema: n: -5 is less than the minimum of 0"),
    ('inner(parseJson("\\"five\\""))', "workflow-input-validation", 'n: "five" is not of type "integer"'),
    ('inner(12345)', "output-validation", 'the result of `inner` does not match its schema: (root): "n12345" is longer than 4 characters'),
])
def test_a_nested_call_that_breaks_the_schema_fails_at_the_call(session: Session, call: str, code: str, message: str) -> None:
    outcome = session.run(INNER + call)
    assert outcome.error is not None and outcome.error.code == code
    assert message in outcome.error.message
    assert outcome.error.span is not None and outcome.error.span["line"] == 4  # the call, in Flow


def test_valid_calls_and_omitted_optionals_pass(session: Session) -> None:
    outcome = session.run(INNER + '[inner(1), inner(parseJson("2"), label: "k")]')
    assert outcome.error is None and outcome.result == ["n1", "k2"]
