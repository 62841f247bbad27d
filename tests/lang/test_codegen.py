"""The code generator's output: it verifies, it maps back to Flow, and the verifier
refuses what generated code never contains."""

from __future__ import annotations

import ast as py
from pathlib import Path

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.verify import ABI_NAMES, VerificationError, verify
from flow_kernel.sandbox.inprocess import load_flowbox
from tests.flow_sources import flow_files
from tests.runtime.programs import ALL

ROOT = Path(__file__).parents[2]


def compiled(source: str):  # type: ignore[no-untyped-def]
    result = compile_source(SourceFile("t.flow", source))
    assert result.ok, [d.message for d in result.check.errors]
    return result


@pytest.mark.parametrize("path", flow_files(ROOT / "examples"), ids=lambda p: p.name)
def test_examples_compile_and_verify(path: Path) -> None:
    result = compile_source(SourceFile(path.name, path.read_text()))
    assert result.python is not None
    verify(py.parse(result.python))


def test_every_program_compiles_to_verified_python() -> None:
    for _, source, _ in ALL:
        result = compiled(source)
        assert result.python is not None and "async def main(rt, args)" in result.python


def test_abi_names_match_the_runtime() -> None:
    runtime, _ = load_flowbox()
    provided = {n for n in dir(runtime.Runtime) if not n.startswith("_")}
    missing = ABI_NAMES - provided
    assert not missing, f"the verifier allows names the runtime lacks: {sorted(missing)}"
    used_by_codegen = set()
    for _, source, _ in ALL:
        tree = py.parse(compiled(source).python or "")
        used_by_codegen |= {n.attr for n in py.walk(tree) if isinstance(n, py.Attribute)}
    assert used_by_codegen <= ABI_NAMES


def test_flow_strings_never_become_code() -> None:
    source = 'let s = "\\"); import os; os.system(\\"x\\") #"\nprint s\nprint "${s}__class__"'
    result = compiled(source)
    tree = py.parse(result.python or "")
    verify(tree)
    assert not any(isinstance(n, (py.Import, py.ImportFrom)) for n in py.walk(tree))


def test_source_map_points_into_flow() -> None:
    result = compiled("let a = 1\nlet b = [a]\nb[3]")
    assert result.source_map is not None and len(result.source_map) > 0
    tree = py.parse(result.python or "")
    index_calls = [n for n in py.walk(tree) if isinstance(n, py.Call) and isinstance(n.func, py.Attribute) and n.func.attr == "index"]
    node = index_calls[0]
    span = result.source_map.lookup([node.lineno, node.col_offset, node.end_lineno, node.end_col_offset])
    assert span is not None and span.text == "b[3]"
    inner = result.source_map.lookup([node.lineno, node.col_offset + 9, node.lineno, node.col_offset + 12])
    assert inner is not None and span.start <= inner.start and inner.end <= span.end


REFUSED = [
    ("import", "async def main(rt, args):\n    import os\n"),
    ("import from", "async def main(rt, args):\n    from os import system\n"),
    ("dunder attribute", "async def main(rt, args):\n    return rt.__class__\n"),
    ("attribute on a value", "async def main(rt, args):\n    return args.keys\n"),
    ("non-ABI attribute", "async def main(rt, args):\n    return rt.bridge\n"),
    ("subscript", "async def main(rt, args):\n    return args['x']\n"),
    ("builtin name", "async def main(rt, args):\n    return open\n"),
    ("call of a value", "async def main(rt, args):\n    return v_f(1)\n"),
    ("lambda", "async def main(rt, args):\n    return lambda: 1\n"),
    ("sync def", "def main(rt, args):\n    return 1\n"),
    ("module statement", "x = 1\nasync def main(rt, args):\n    return 1\n"),
    ("global", "async def main(rt, args):\n    global v_x\n"),
    ("raise an expression", "async def main(rt, args):\n    raise v_x\n"),
    ("except everything", "async def main(rt, args):\n    try:\n        pass\n    except:\n        pass\n"),
    ("rebinding rt", "async def main(rt, args):\n    rt = 1\n"),
    ("comprehension", "async def main(rt, args):\n    return [v_x for v_x in args]\n"),
    ("keyword call", "async def main(rt, args):\n    return rt.step(x=1)\n"),
    ("bytes constant", "async def main(rt, args):\n    return b'x'\n"),
    # `+ - *` and one comparison are generated for ints (exact_ints.py); nothing else is.
    ("chained comparison", "async def main(rt, args):\n    return v_a < v_b < v_c\n"),
    ("membership operator", "async def main(rt, args):\n    return v_a in v_b\n"),
    ("identity comparison", "async def main(rt, args):\n    return v_a is v_b\n"),
    ("is not of a value", "async def main(rt, args):\n    return v_a is not v_b\n"),
    ("power", "async def main(rt, args):\n    return 9 ** 9 ** 9\n"),
    ("shift", "async def main(rt, args):\n    return 1 << 10 ** 9\n"),
    ("true division", "async def main(rt, args):\n    return v_a / v_b\n"),
    ("floor division", "async def main(rt, args):\n    return v_a // v_b\n"),
    ("modulo operator", "async def main(rt, args):\n    return v_a % v_b\n"),
    ("bitwise or", "async def main(rt, args):\n    return v_a | v_b\n"),
    ("augmented assignment", "async def main(rt, args):\n    v_a += 1\n"),
    ("with as", "async def main(rt, args):\n    with rt.stage('x') as v_s:\n        pass\n"),
    ("no main", "async def c_main(rt):\n    return 1\n"),
    ("default argument", "async def main(rt, args=rt):\n    return 1\n"),
    ("walrus on a binding", "async def main(rt, args):\n    return (v_x := 1)\n"),
    ("attribute store", "async def main(rt, args):\n    rt.step = 1\n"),
]


@pytest.mark.parametrize(("name", "source"), REFUSED, ids=[r[0] for r in REFUSED])
def test_verifier_refuses(name: str, source: str) -> None:
    with pytest.raises(VerificationError):
        verify(py.parse(source))


def test_conditions_that_can_only_be_bools_are_not_wrapped_in_cond() -> None:
    """`rt.cond` (fails unless its value is a bool) is left out around comparisons and
    `and`/`or` of them; a name or a call that may give anything keeps it."""
    source = ("let n = 3\nlet flag: any = true\nlet xs = [1]\n"
              "if n > 2 and n == 3 { print 1 }\nif flag { print 2 }\nif flag or n < 1 { print 3 }\n"
              "if contains(xs, 1) { print 4 }\nprint n >= 1 ? 5 : 6\n")
    text = compiled(source).python or ""
    assert "if rt.gt(v_n, 2) and rt.eq(v_n, 3):" in text
    assert "if rt.cond(v_flag):" in text
    assert "if rt.cond(v_flag) or rt.lt(v_n, 1):" in text
    assert "if rt.cond(rt.fn_contains(v_xs, 1)):" in text
    assert "rt.print(5 if rt.ge(v_n, 1) else 6)" in text


def test_shared_literals_are_shared_only_between_values_written_alike() -> None:
    """`CodeGenerator.literal` builds one tree per JSON value and the writer writes it
    once: values Python holds equal but `const` writes differently stay apart."""
    from flow_kernel.lang import check
    from flow_kernel.lang.codegen import CodeGenerator
    from flow_kernel.lang.pywriter import ModuleWriter

    generator = CodeGenerator(check(SourceFile("t.flow", "print 1")))
    values = [[1], [True], [1.0], [0.0], [-0.0], [-1], {"a": 1}, {"a": True}, {"a": [1, "x"]}, ["1"], [None]]
    nodes = [generator.literal(v) for v in values]
    assert len({id(n) for n in nodes}) == len(values)
    assert generator.literal([1]) is nodes[0] and generator.literal({"a": [1, "x"]}) is nodes[8]
    written = [n for v, n in zip(values, nodes, strict=True) if repr(v) != "[-0.0]"]  # (-0.0: ast.unparse writes it)
    body = [py.Expr(n) for n in [*written, *written]]  # each literal twice: the second from the writer's cache
    text = ModuleWriter({}).write(py.Module(body, []))
    expected = [py.unparse(n) for n in written]
    assert text.splitlines() == [*expected, *expected]


def test_a_for_without_an_index_iterates_the_list_itself() -> None:
    """`for x in xs` compiles to `rt.each(xs)`, which makes no (index, item) pair per item;
    `for x, i in xs` keeps `rt.iterate`'s pairs. Both run alike, step alike, and refuse a
    value that is not an array with the same error."""
    import asyncio

    from flow_kernel.runtime.run import run_compiled
    from flow_kernel.sandbox.inprocess import InProcessExecutor

    plain = compiled("var s = 0\nfor x in [5, 6, 7] { s = s + x }\nprint s")
    indexed = compiled("var s = 0\nfor x, i in [5, 6, 7] { s = s + x + 0 * i }\nprint s")
    assert "in rt.each(" in (plain.python or "") and "rt.iterate" not in (plain.python or "")
    assert "in rt.iterate(" in (indexed.python or "") and "rt.each" not in (indexed.python or "")
    runs = [asyncio.run(run_compiled(c, InProcessExecutor())) for c in (plain, indexed)]
    assert [[e["data"]["text"] for e in run.events if e.get("type") == "print"] for run in runs] == [["18"], ["18"]]
    assert runs[0].steps == runs[1].steps
    for source in ("let v: any = \"abc\"\nfor x in v { print x }", "let v: any = \"abc\"\nfor x, i in v { print x }"):
        failed = asyncio.run(run_compiled(compiled(source), InProcessExecutor())).error
        assert failed is not None and (failed.code, failed.message) == ("evaluation", "`for` needs an array, got string")
