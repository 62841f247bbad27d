"""The master-regex lexer (issue 23) gives exactly what the old per-character lexer
gave: the same tokens (kind, text, span, value, string parts), doc comments and
F1xxx diagnostics (code, message, span, hints), on every golden case, the fuzz
corpus, the gallery's Flow cells, the bench's 5,022-line program, and the `${…}`
ranges the parser lexes again. The old lexer is kept verbatim in
tests/lang/lexer_reference.py as the reference."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flow_kernel.bench.frontend import flow_program
from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang import lexer
from flow_kernel.lang.check import RECURSION_LIMIT
from flow_kernel.lang.tokens import Interpolation, Kind, Token
from flow_kernel.source import SourceFile
from tests.flow_sources import flow_files
from tests.lang import lexer_reference

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent


def _corpus() -> list[tuple[str, str]]:
    files = flow_files(HERE / "cases", recursive=True) + flow_files(HERE / "fuzz_corpus", recursive=True)
    files += flow_files(ROOT / "notebooks", recursive=True)
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in files]
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                source = cell["source"]
                out.append((f"{nb.name}#{i}", "".join(source) if isinstance(source, list) else source))
    out.append(("bench 5,022 lines", flow_program(5000)))
    return out


CORPUS = _corpus()

# Edge cases around what the master regex decides at once: token boundaries,
# numbers and their tails, strings simple and not, and the end of a range.
EDGES = [
    "", "\n\n\n", "  \n # c\n\n x", "## doc\n  ## doc2\nx ## not a doc\n",
    '"" "a" """x""" """\n  a\n  b\n  """ "a$b" "$" "a${b}c" "\\n" "${"',
    '"unterminated\n"x', '"""never closed', '"${x" y\n', '"a\\qb" "\\u00e9" "\\u12"',
    "1 12 1.5 1e5 1E+5 1e-x 1.x 1..2 1.2.3 30s 5ms 2m 1h 1.5s 3x 3_ 0xff 1e5s 12ab9",
    "... ?. ?? => == != <= >= -> ( ) [ ] { } , : ; . + - * / % < > = | ? ! & ' @ ` ~ ^",
    ") ] } ( [ ) ] { ( } ]", "a\u00e9b x\u00b2 \u00b2 3\u00b2 \ufeffx \u00a0y \t\r\f\v z",
    "let x = 1\r\nlet y = 2\r\n", "x.1 a?.b a??b", "x   ", "x \t", "   ", " \ufeff", "!  ", "\n  \n", '"${ { "}" } }" "${"a${"b"}"}"',
]


def _lex_ref(src: SourceFile, start: int = 0, end: int | None = None) -> tuple[list[Token], list[tuple[int, str]], Reporter]:
    reporter = Reporter()
    lx = lexer_reference.Lexer(src, reporter, start, end)
    tokens = lx.tokenize()
    return tokens, [(d.line, d.text) for d in lx.docs], reporter


def _lex_new(src: SourceFile, start: int = 0, end: int | None = None) -> tuple[list[Token], list[tuple[int, str]], Reporter]:
    reporter = Reporter()
    lx = lexer.Lexer(src, reporter, start, end)
    tokens = lx.tokenize()
    return tokens, [(d.line, d.text) for d in lx.docs], reporter


def _tokens(tokens: list[Token]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for t in tokens:
        parts = [(p.start, p.end) if isinstance(p, Interpolation) else p for p in t.parts]
        out.append((t.kind, t.text, t.span.start, t.span.end, type(t.value).__name__, t.value, parts))
    return out


def _diagnostics(reporter: Reporter) -> list[tuple[object, ...]]:
    return [(d.code, d.message, d.span.start, d.span.end, tuple(d.hints)) for d in reporter.diagnostics]


@pytest.fixture(autouse=True)
def _check_recursion_limit() -> Iterator[None]:
    """Nested `${…}` recurse in both lexers: run them with the limit check() sets."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    yield
    sys.setrecursionlimit(previous)


def _assert_same(name: str, text: str) -> int:
    """Compare the whole file, then every `${…}` range in it as the parser lexes it."""
    src = SourceFile(name, text)
    ranges: list[tuple[int, int | None]] = [(0, None)]
    compared = 0
    while ranges:
        start, end = ranges.pop()
        ref_tokens, ref_docs, ref_reporter = _lex_ref(src, start, end)
        new_tokens, new_docs, new_reporter = _lex_new(src, start, end)
        where = f"{name} [{start}:{end}]"
        assert _tokens(new_tokens) == _tokens(ref_tokens), where
        assert new_docs == ref_docs, where
        assert _diagnostics(new_reporter) == _diagnostics(ref_reporter), where
        compared += 1
        for tok in ref_tokens:
            if tok.kind is Kind.STRING:
                ranges.extend((p.start, p.end) for p in tok.parts if isinstance(p, Interpolation))
    return compared


@pytest.mark.parametrize(("name", "text"), CORPUS, ids=[n for n, _ in CORPUS])
def test_same_tokens_as_reference_on_corpus(name: str, text: str) -> None:
    assert _assert_same(name, text) >= 1


@pytest.mark.parametrize("text", EDGES)
def test_same_tokens_as_reference_on_edges(text: str) -> None:
    _assert_same("edge.flow", text)


def test_corpus_is_what_it_claims() -> None:
    names = [n for n, _ in CORPUS]
    assert sum(n.startswith("tests/lang/cases/") for n in names) >= 10
    assert sum(n.startswith("tests/lang/fuzz_corpus/") for n in names) >= 20
    assert sum(".ipynb#" in n for n in names) >= 15
    # Strings with interpolations are compared range by range as well.
    assert _assert_same("bench", CORPUS[-1][1]) > 1000


def test_comparison_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lexer that differs in one detail (a doc comment's line, here) is caught."""
    if not str(lexer.__file__).endswith(".py"):
        pytest.skip("the compiled lexer calls DocComment directly: a patched module name does not reach it")
    real = lexer.DocComment
    monkeypatch.setattr(lexer, "DocComment", lambda line, text: real(line + 1, text))
    with pytest.raises(AssertionError):
        _assert_same("doc.flow", "## doc\nworkflow main() {}\n")
