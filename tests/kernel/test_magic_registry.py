"""One registry of magics (frontend/magics.py MAGICS): the parser, `%lsmagic`, completion of
names and of arguments all read it, so a magic registered once is known everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flow_kernel.frontend.magics import (
    MAGICS,
    CellPlan,
    MagicError,
    magic,
    parse_cell,
    plan_cell,
    text_output,
)
from flow_kernel.kernel import assist
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.runtime.providers.table import model_names
from flow_kernel.runtime.session import Session


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return Session(sandbox=False, journal_dir=None, operator="none", directory=tmp_path)


def _argument_matches(line: str) -> list[str]:
    return list(assist.complete(line, len(line), SessionScope())["matches"])


def test_completion_offers_the_registry() -> None:
    assert set(assist.MAGICS) == set(MAGICS)
    assert _argument_matches("%provider ") == sorted(model_names())
    for name, entry in MAGICS.items():
        for choice in entry.choices:
            assert choice in _argument_matches(f"%{name} "), (name, choice)
    assert "F3001" in _argument_matches("%explain F300")


def test_kernel_only_magics_are_registered_and_refused_outside_the_kernel(session: Session) -> None:
    kernel_only = sorted(name for name, entry in MAGICS.items() if entry.handle is not None)
    assert kernel_only == ["approve", "background", "cancel", "eval", "resume", "wait"]
    for name in kernel_only:
        with pytest.raises(MagicError, match="works in the Flow kernel"):
            plan_cell(f"%{name}\n", session)


@pytest.fixture
def greeting() -> Iterator[str]:
    """A magic registered the way every magic is, and taken out again afterwards."""
    @magic("greet", "%greet NAME", "say hello", choices=("world",))
    def _greet(session: Session, args: str, plan: CellPlan) -> None:
        plan.outputs.append(text_output(f"hello {args}"))

    yield "greet"
    del MAGICS["greet"]


def test_a_magic_registered_once_is_parsed_listed_and_completed(greeting: str, session: Session) -> None:
    assert parse_cell("%greet world\n1").magics[0][0].name == greeting
    assert plan_cell("%greet world\n", session).outputs[0]["text/plain"] == "hello world"
    listing = plan_cell("%lsmagic\n", session).outputs[0]["text/plain"]
    assert "%greet NAME" in listing and "say hello" in listing
    assert _argument_matches("%gre") == ["%greet"]
    assert _argument_matches("%greet w") == ["world"]
