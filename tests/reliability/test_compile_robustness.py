"""The whole compiler, not only `check()`, on hostile sources: every fuzz-corpus entry
and hypothesis-generated (and mutated) programs go through check → generate → write →
verify without an exception — a source the compiler cannot handle is a diagnostic.

Found here: operator chains ~250 long (`1 + 1 + …`, `- - … 1`, `not not …`, `r.a.a…`)
check fine but nested the generated Python past its parser's 200 brackets; the
compiler raised SyntaxError (or RecursionError), which the kernel showed as an
InternalError and `flow run` as a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.source import SourceFile
from tests.lang.test_fuzz import _SETTINGS, CORPUS, flow_programs, mutated_programs, no_hang

SCALE = 20 if os.environ.get("FLOW_FUZZ_LONG") == "1" else 1


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.flow")), ids=lambda p: p.stem)
def test_every_corpus_entry_compiles_or_reports(path: Path) -> None:
    text = path.read_bytes().decode("utf-8")
    with no_hang(20):
        compiled = compile_source(SourceFile(path.name, text))
        cell = compile_source(SourceFile("<cell 1>", text), session=SessionScope(), cell=True)
    for result in (compiled, cell):
        assert result.ok or result.check.errors, path.name  # nothing is refused without saying why


CHAINS = {
    "sum": lambda n: "let x = " + " + ".join(["1"] * n),
    "neg": lambda n: "let x = " + "-" * n + "1",
    "not": lambda n: "let x = " + "not " * n + "true",
    "member": lambda n: "let r: any = {}\nlet x = r" + ".a" * n,
    "interpolation": lambda n: "let x = " + '"${' * n + "1" + '}"' * n,
    "index": lambda n: "let r: any = []\nlet x = r" + "[0]" * n,
    "call": lambda n: "let x = " + "len(" * n + "[]" + ")" * n,
}


@pytest.mark.parametrize("depth", [50, 250, 1000, 5000])
@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_long_chains_compile_or_are_f1006(kind: str, depth: int) -> None:
    with no_hang(20):
        compiled = compile_source(SourceFile("chain.flow", CHAINS[kind](depth)))
    codes = {d.code for d in compiled.check.errors}
    assert compiled.ok or codes == {"F1006"}, (kind, depth, codes)
    if depth == 50:
        assert compiled.ok, (kind, codes)


@settings(max_examples=60 * SCALE, **_SETTINGS)
@given(program=st.one_of(flow_programs(), mutated_programs()), cell=st.booleans())
def test_generated_programs_compile_without_raising(program: str, cell: bool) -> None:
    with no_hang(20):
        if cell:
            compile_source(SourceFile("<cell 1>", program), session=SessionScope(), cell=True)
        else:
            compile_source(SourceFile("gen.flow", program))
