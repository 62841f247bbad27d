"""What the kernel parses besides Flow itself — completion, inspection, is_complete and
the magic lines — fuzzed with random and Flow-shaped text at random cursors. The public
entry points swallow exceptions (so a frontend always gets a reply); this calls the inner
functions, so that a swallowed bug is seen, and guards each call against a hang."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flow_kernel import Session
from flow_kernel.frontend.magics import MAGICS, MagicError, plan_cell
from flow_kernel.kernel import assist, assist_inspect
from flow_kernel.lang import SessionScope
from tests.lang.test_fuzz import flow_programs, flowish_text, mutated_programs, no_hang, token_soup

SCALE = 20 if os.environ.get("FLOW_FUZZ_LONG") == "1" else 1
SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TEXTS = st.one_of(flowish_text, token_soup, flow_programs(), mutated_programs())


def _scope() -> SessionScope:
    session = Session(sandbox=False, journal_dir=None)
    session.run('type P = { name: string, tags: string[] }\nagent a { model: "mock", output: P }\n'
                'let people: P[] = [{ name: "Ada", tags: [] }]\nvar n = 1')
    return session.scope


SCOPE = _scope()


@settings(max_examples=100 * SCALE, **SETTINGS)
@given(text=TEXTS, where=st.floats(0, 1), detail=st.integers(0, 1))
def test_completion_inspection_and_is_complete_never_raise(text: str, where: float, detail: int) -> None:
    cursor = int(len(text) * where)
    magics = [m.lstrip("%") for m in MAGICS]
    with no_hang(10):
        reply = assist._complete(text, cursor, SCOPE, magics)
        assert 0 <= reply["cursor_start"] <= reply["cursor_end"] <= len(text)
        assert all(isinstance(m, str) for m in reply["matches"])
        inspected = assist_inspect._inspect(text, cursor, SCOPE, detail)
        assert isinstance(inspected["found"], bool)
        assert assist._is_complete(text)["status"] in ("complete", "incomplete", "invalid")


SAFE_MAGICS = sorted(m for m in MAGICS if m.lstrip("%") not in ("record", "replay", "load", "reset"))
magic_lines = st.lists(st.builds(lambda m, a: f"{m} {a}".rstrip(), st.sampled_from(SAFE_MAGICS),
                                 st.text(alphabet="abcdefgh =:{}[]\"'0123456789-_./%", max_size=30)), max_size=3)


@settings(max_examples=100 * SCALE, **SETTINGS)
@given(lines=magic_lines, rest=TEXTS)
def test_magic_lines_are_applied_or_refused_clearly(lines: list[str], rest: str) -> None:
    session = Session(directory=Path(os.environ.get("TMPDIR", "/tmp")), sandbox=False, journal_dir=None)
    with no_hang(10):
        try:
            plan = plan_cell("\n".join([*lines, rest]), session)
        except MagicError as exc:
            assert str(exc).strip()
            return
    assert isinstance(plan.code, str)
