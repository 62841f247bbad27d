"""The writer of generated modules (`pywriter.unparse`) gives text that parses to the
same tree as `ast.unparse`'s, for every program the tests and examples compile, for
the corners it treats on its own, and falls back to `ast.unparse` for the rest."""

from __future__ import annotations

import ast as py
from pathlib import Path

import pytest

from flow_kernel import SourceFile
from flow_kernel.bench.frontend import flow_program
from flow_kernel.lang.check import check
from flow_kernel.lang.codegen import generate
from flow_kernel.lang.pywriter import unparse
from tests.flow_sources import flow_files
from tests.runtime.programs import ALL

ROOT = Path(__file__).parents[2]


def same_tree(tree: py.Module) -> None:
    ours = unparse(tree)
    # A built tree has no positions, which `ast.unparse` reads on statements.
    assert py.dump(py.parse(ours)) == py.dump(py.parse(py.unparse(py.fix_missing_locations(tree))))


def programs() -> list[str]:
    return [source for _, source, _ in ALL] + [p.read_text() for p in flow_files(ROOT / "examples")] \
        + [flow_program(400)]


def test_generated_modules_round_trip() -> None:
    for source in programs():
        result = check(SourceFile("t.flow", source))
        assert result.ok, [d.message for d in result.errors]
        same_tree(generate(result, None).tree)


@pytest.mark.parametrize("code", [
    "x = -1\ny = -(-1)\nz = -x\nw = not (a and b)\nv = -0.0",
    "a = (b if c else d) if (e or f) else g\nh = (i := 1) is not None",
    "async def f(a, b):\n    try:\n        return await g()\n    except rt.Error as e:\n        raise\n    finally:\n        pass",
    "for (a, b) in c:\n    if d:\n        break\n    elif e:\n        continue\n    else:\n        pass\nelse:\n    x = ()",
    "with rt.stage(1), rt.pipeline(2):\n    x = y = {'k': [1, 2.5, 'é\\n', None, True], **z}\n    t = (1,)",
    "while (await f()).x:\n    f(*a, k=1, **b)",
    "x = a.b.c(1, 'é', n, *d)\ny = (f(1))(2, None)\nz = (await g)('s', 1.5)\nrt.step()",
])
def test_corners(code: str) -> None:
    same_tree(py.parse(code))


def test_what_it_does_not_know_goes_to_ast_unparse() -> None:
    tree = py.parse("import os\nx = 1e999 + b'x'[0]\nlambda: 1")
    assert unparse(tree) == py.unparse(tree) + "\n"
