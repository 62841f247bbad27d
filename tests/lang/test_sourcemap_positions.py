"""The source map written as the module is written (`pywriter.ModuleWriter`) is the map
that parsing the written text again gives (`sourcemap.write_and_parse`, the way every
module was mapped before): every node with a Flow origin at the same (line, col,
end_line, end_col), in the same order, so every runtime error's Flow span is unchanged.
Over the golden cases, the run corpus, the examples, the gallery's Flow cells (compiled
cell after cell in one session, as the kernel does) and the bench's 5,022-line program."""

from __future__ import annotations

import ast as py
import pickle
from pathlib import Path

import pytest

from flow_kernel.bench.frontend import flow_program
from flow_kernel.lang.check import check
from flow_kernel.lang.codegen import GeneratedModule, generate
from flow_kernel.lang.compiler import compile_checked, compile_source
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.lang.sourcemap import CompiledPython, write, write_and_parse
from flow_kernel.lang.verify import VerificationError, verify
from flow_kernel.source import SourceFile, Span
from tests.flow_sources import flow_files
from tests.golden.corpus import notebook_cells
from tests.lang.flowcases import split_example
from tests.runtime.programs import ALL

ROOT = Path(__file__).parents[2]


def same_map(source: str, *, session: SessionScope | None = None, name: str = "t.flow") -> CompiledPython | None:
    """Compile `source` both ways and compare; None when it does not check."""
    result = check(SourceFile(name, source), session=session, cell=session is not None)
    if not result.ok:
        return None
    generated = generate(result, set(session.bindings) if session is not None else None)
    written = write(generated.tree, generated.origins)
    assert written.tree is generated.tree, "the module was parsed again: the writer gave up on it"
    reference = write_and_parse(generated.tree, generated.origins)
    assert written.source == reference.source
    assert written.source_map.entries == reference.source_map.entries
    assert written.source_map.exact == reference.source_map.exact
    # Every node the reference parse positions is looked up to the same span.
    for position, _ in reference.source_map.entries:
        assert written.source_map.lookup(list(position)) is reference.source_map.lookup(list(position))
    # The compiler writes the text alone; its map records positions on the first lookup,
    # from the module generated again: the same map.
    compiled = compile_checked(result, session)
    assert compiled.python == reference.source and compiled.source_map is not None
    assert compiled.source_map.entries == reference.source_map.entries
    if session is not None:
        session.commit(result)
    return written


def gallery_cells() -> dict[str, list[str]]:
    """Each notebook's Flow cells, as the golden corpus reads them."""
    return {path.stem: notebook_cells(path) for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))}


@pytest.mark.parametrize("path", sorted((ROOT / "tests/lang/cases").glob("*.flow")), ids=lambda p: p.stem)
def test_golden_cases(path: Path) -> None:
    example = split_example(path.read_text())
    if len(example.cells) == 1:
        same_map(example.cells[0])
        return
    session = SessionScope()
    for i, cell in enumerate(example.cells, start=1):
        same_map(cell, session=session, name=f"cell[{i}]")


def test_run_corpus_and_examples() -> None:
    sources = [source for _, source, _ in ALL] + [p.read_text() for p in flow_files(ROOT / "examples")]
    mapped = [same_map(source) for source in sources]
    assert sum(m is not None for m in mapped) >= len(ALL)  # the run corpus checks, all of it


def test_gallery_cells() -> None:
    compiled = 0
    for cells in gallery_cells().values():
        session = SessionScope()
        for i, cell in enumerate(cells, start=1):
            compiled += same_map(cell, session=session, name=f"<cell {i}>") is not None
    assert compiled >= 50, compiled


def test_bench_program() -> None:
    written = same_map(flow_program(5022))
    assert written is not None and len(written.source_map) > 30_000


def test_columns_count_utf8_bytes() -> None:
    # Python counts a column in UTF-8 bytes: "é" is 2, "🦜" is 4, on the line after them.
    written = same_map('let s = "é🦜"\nlet t = [s, "ü", len("€"), s + "x"]\nt')
    assert written is not None and not written.source.isascii()


def test_what_nests_deep_is_parsed_again() -> None:
    # 110 nested calls: still valid Python, but near enough to its 200-bracket limit that
    # the writer's positions are not trusted to stand for "it parses"; parsed again, the
    # same code and map. 250 go past the limit: a diagnostic, as before.
    source = "let x = " + "len(" * 110 + "[]" + ")" * 110
    result = check(SourceFile("deep.flow", source))
    assert result.ok
    generated = generate(result, None)
    written = write(generated.tree, generated.origins)
    assert written.tree is not generated.tree
    reference = write_and_parse(generated.tree, generated.origins).source_map.entries
    assert written.source_map.entries == reference and len(reference) > 100
    # The compiler generates without origins: parsed again, it maps the module generated again.
    compiled = compile_checked(result)
    assert compiled.source_map is not None and compiled.source_map.entries == reference
    too_deep = compile_source(SourceFile("deep.flow", "let x = " + " + ".join(["1"] * 250)))
    assert not too_deep.ok and {d.code for d in too_deep.check.errors} == {"F1006"}


def test_the_verifier_reads_the_built_tree_whole_names_only() -> None:
    # Built, not parsed: a name may hold what no parse would give. The verifier matches
    # names whole (a trailing newline is not a name), and the writer does not write a
    # handler name that is not one identifier: the module goes the parsing way, which
    # sees the text say something else than the tree.
    tree = py.parse("async def main(rt, args):\n    v_x = 1\n")
    assign = tree.body[0].body[0]  # type: ignore[attr-defined]
    verify(tree)
    assign.targets[0].id = "v_x\n"
    with pytest.raises(VerificationError):
        verify(tree)
    handled = py.parse("async def main(rt, args):\n    try:\n        pass\n    except rt.Error as e_1:\n        raise\n")
    handler = handled.body[0].body[0].handlers[0]  # type: ignore[attr-defined]
    handler.name = "e_1:\n        import os\n    #"
    with pytest.raises(AssertionError, match="unparse changed the tree"):  # written, parsed again: caught
        write(handled, {})


def test_a_map_recorded_later_is_of_the_compiled_module() -> None:
    # What builds the tree again must build the module that was written; anything else
    # is refused at the first lookup rather than mapping errors to the wrong spans.
    result = check(SourceFile("t.flow", "let x = 1\nprint x"))
    other = check(SourceFile("t.flow", "let x = 2\nprint x"))
    generated = generate(result, None)
    written = write(generated.tree, generated.origins, again=lambda: _built(generate(other, None)))
    with pytest.raises(AssertionError, match="not the module that was compiled"):
        written.source_map.lookup([1, 0, 1, 1])
    good = write(generated.tree, generated.origins, again=lambda: _built(generate(result, None)))
    assert good.source_map.entries == write(generated.tree, generated.origins).source_map.entries != []


def _built(generated: GeneratedModule) -> tuple[py.Module, dict[int, Span]]:
    return generated.tree, generated.origins


def test_a_map_pickled_for_another_process_keeps_its_spans() -> None:
    # A Ray worker gets the compiled program pickled. Recording the map later there would
    # build the module again from an unpickled check result, whose facts are keyed by the
    # identity of the original nodes (a call's output type, ...): it records first instead.
    program = (ROOT / "tests" / "eval" / "parity.flow").read_text(encoding="utf-8")
    compiled = compile_source(SourceFile("parity.flow", program))
    assert compiled.source_map is not None
    copy = pickle.loads(pickle.dumps(compiled))
    assert copy.source_map is not None
    assert copy.source_map.entries == compiled.source_map.entries != []
