"""The Pygments lexer for Flow (flow_kernel.highlight): the examples lex without
Error tokens and round-trip, specific tokens get their classes, the keyword and
builtin tables follow the compiler, and random text never raises and round-trips."""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from flow_kernel.highlight import (
    BUILTIN_NAMES,
    CONSTANTS,
    DECLARATION_KEYWORDS,
    KEYWORDS,
    NAMESPACE_KEYWORDS,
    OPERATOR_WORDS,
    TYPE_NAMES,
    FlowLexer,
)
from flow_kernel.lang import check
from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.tokens import RESERVED
from flow_kernel.source import SourceFile
from tests.lang.test_fuzz import FLOW_CHARS, flow_programs, token_soup

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [ROOT / "examples" / "triage.flow", ROOT / "examples" / "hello.flow"]
CORPUS = sorted((ROOT / "tests" / "lang" / "fuzz_corpus").glob("*.flow"))
CASES = sorted((ROOT / "tests" / "lang" / "cases").glob("*.flow"))
_SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

Duration = Number.Duration


def tokens(text: str) -> list[tuple[object, str]]:
    """(type, value) pairs, exactly covering the text (no Pygments preprocessing)."""
    out = [(t, v) for _pos, t, v in FlowLexer().get_tokens_unprocessed(text)]
    assert "".join(v for _t, v in out) == text
    return out


def significant(text: str) -> list[tuple[object, str]]:
    return [(t, v) for t, v in tokens(text) if v.strip()]


def type_of(text: str, value: str, nth: int = 0) -> object:
    """The token type of the `nth` token whose value is `value`."""
    found = [t for t, v in tokens(text) if v == value]
    assert len(found) > nth, (value, tokens(text))
    return found[nth]


def assert_no_errors(text: str) -> None:
    errors = [(t, v) for t, v in tokens(text) if t in Error]
    assert not errors, errors


# -- the examples --------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_lex_without_errors_and_round_trip(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert_no_errors(text)
    # Through the public API as well (no stripping, no added newline).
    lexer = FlowLexer(stripnl=False, ensurenl=False)
    assert "".join(v for _t, v in lexer.get_tokens(text)) == text


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_spec_cases_round_trip(path: Path) -> None:
    tokens(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_fuzz_corpus_round_trips(path: Path) -> None:
    tokens(path.read_text(encoding="utf-8"))


def test_triage_tokens() -> None:
    text = (ROOT / "examples" / "triage.flow").read_text(encoding="utf-8")
    toks = significant(text)
    assert toks[:4] == [(Keyword.Declaration, "type"), (Name.Class, "Severity"), (Operator, "="), (String.Double, '"')]
    assert (Keyword.Declaration, "agent") in toks
    assert (Name.Class, "triager") in toks
    assert (Name.Function, "triage_all") in toks
    assert (Keyword.Type, "string") in toks
    assert (Keyword.Type, "bool") in toks
    assert (Keyword, "limits") in toks
    assert (Duration, "1m") in toks
    assert (Keyword, "pipeline") in toks and (Keyword, "stage") in toks
    assert (Name.Builtin, "parallelMap") in toks and (Name.Builtin, "len") in toks
    assert (Name.Builtin, "any") in toks  # `any(results, …)` is the builtin, not the type
    assert (Operator, "=>") in toks
    assert (Name.Builtin.Pseudo, "it") in toks
    assert (Name.Attribute, "needs_human") in toks
    assert (Operator.Word, "or") in toks
    assert (Keyword, "approve") in toks and (Keyword, "log") in toks
    assert (String.Interpol, "${") in toks and (String.Interpol, "}") in toks
    assert (Name.Builtin, "when") in toks


# -- specific tokens -----------------------------------------------------------------


def test_comments_and_doc_comments() -> None:
    text = "## Classifies one ticket.\nagent a { model: \"mock\" }  # trailing\nx # not ## a doc\n"
    assert type_of(text, "## Classifies one ticket.") is Comment.Special
    assert type_of(text, "# trailing") is Comment.Single
    assert type_of(text, "# not ## a doc") is Comment.Single
    assert type_of("  ## indented doc\n", "## indented doc") is Comment.Special


def test_keyword_classes() -> None:
    assert type_of('use "lib.flow"', "use") is Keyword.Namespace
    for word in ("let", "var"):
        assert type_of(f"{word} x = 1", word) is Keyword.Declaration
        assert type_of(f"{word} x = 1", "x") is Name.Variable
    for word in ("true", "false", "null"):
        assert type_of(f"let x = {word}", word) is Keyword.Constant
    for word in ("if", "else", "for", "while", "return", "try", "catch", "as", "await", "verify", "require"):
        assert type_of(f"{word} x", word) is Keyword
    assert type_of("x and not y or z in xs", "and") is Operator.Word
    assert type_of("x and not y or z in xs", "not") is Operator.Word
    assert type_of("x and not y or z in xs", "in") is Operator.Word
    assert type_of("x and not y", "x") is Name


@pytest.mark.parametrize("word", ["string", "int", "number", "bool", "any", "duration", "external"])
def test_type_names(word: str) -> None:
    assert type_of(f"type T = {{ a: {word}, b?: {word}[] }}", word) is Keyword.Type
    assert type_of(f"workflow w(x: {word}) -> {word} {{ return x }}", word, 1) is Keyword.Type


def test_declaration_names() -> None:
    assert type_of("agent triager {", "triager") is Name.Class
    assert type_of("team support { main: a, members: [b] }", "support") is Name.Class
    assert type_of("type Ticket = { id: string }", "Ticket") is Name.Class
    assert type_of("workflow triage_all(ts: Ticket[]) -> int {", "triage_all") is Name.Function
    tool = "tool refund(order_id: string) -> { ok: bool } requires approval"
    assert type_of(tool, "refund") is Name.Function
    assert type_of(tool, "requires") is Keyword
    assert type_of(tool, "approval") is Keyword
    # `fn` declares only before `NAME(`; elsewhere it is a name.
    assert type_of("fn double(x: int) -> int { return x * 2 }", "fn") is Keyword.Declaration
    assert type_of("fn double(x: int) -> int { return x * 2 }", "double") is Name.Function
    assert type_of("let fn = 3", "fn") is Name.Variable
    assert type_of("print fn + 1", "fn") is Name


def test_builtins() -> None:
    for name in ("len", "keys", "sortBy", "groupBy", "parallelMap", "now", "str", "int", "bool", "any"):
        assert type_of(f"let y = {name}(x)", name) is Name.Builtin, name
    # A builtin's name that is not called is an ordinary name (a binding, a field).
    assert type_of("let count = 3", "count") is Name.Variable
    assert type_of("print count + 1", "count") is Name
    assert type_of("r.count(1)", "count") is Name.Attribute
    # A constrained type, not a conversion.
    assert type_of("type N = int(minimum: 0)", "int") is Keyword.Type
    assert type_of("type S = string(minLength: 1)", "string") is Keyword.Type


def test_builtin_and_keyword_tables_follow_the_compiler() -> None:
    assert set(BUILTINS) <= BUILTIN_NAMES
    groups = [NAMESPACE_KEYWORDS, DECLARATION_KEYWORDS, CONSTANTS, OPERATOR_WORDS, KEYWORDS, {"it"}, {"external"}]
    assert set().union(*groups) == RESERVED
    assert sum(len(g) for g in groups) == len(RESERVED)  # disjoint
    assert {"string", "int", "number", "bool", "any"} <= TYPE_NAMES
    # Every reserved word and every builtin lexes as one non-Error token.
    for word in sorted(RESERVED | BUILTIN_NAMES):
        toks = tokens(f"{word}(x)")
        assert toks[0][1] == word and toks[0][0] not in Error, (word, toks)


def test_reserved_words_as_plain_names() -> None:
    assert type_of('{type: "x", stage: 1}', "type") is Name
    assert type_of('{type: "x", stage: 1}', "stage") is Name
    assert type_of("type E = { stage?: string }", "stage") is Name
    assert type_of("print err.stage", "stage") is Name.Attribute
    assert type_of("print err?.details", "details") is Name.Attribute
    assert type_of("print err?.details", "?.") is Operator
    assert type_of("x ? true : false", "true") is Keyword.Constant


def test_contextual_keywords() -> None:
    text = 'let ok = approve "Send?" details { n: 1 }'
    assert type_of(text, "approve") is Keyword
    assert type_of(text, "details") is Keyword
    assert type_of('let p = ask "Which?" choice ["A", "B"]', "choice") is Keyword
    run = 'let r = run "git" ["status"] timeout 10s stdin """\n  x\n"""'
    assert type_of(run, "run") is Keyword
    assert type_of(run, "timeout") is Keyword
    assert type_of(run, "stdin") is Keyword
    assert type_of(run, "10s") is Duration
    # Elsewhere they are names: agent fields, named arguments.
    assert type_of("agent a { timeout: 30s }", "timeout") is Name
    assert type_of('r("x", choice: ["a"])', "choice") is Name
    # `publish primary "NAME" e`: `primary` is a word only before a string.
    assert type_of('publish primary "answer" x', "primary") is Keyword
    assert type_of("publish primary x", "primary") is Name


def test_strings_escapes_and_interpolation() -> None:
    text = r'print "a\n\u00e9 ${t.id + len(xs)} \$ ${ {a: "}"}.a }"'
    toks = significant(text)
    assert (String.Escape, r"\n") in toks
    assert (String.Escape, r"\u00e9") in toks
    assert (String.Escape, r"\$") in toks
    assert [v for t, v in toks if t is String.Interpol] == ["${", "}", "${", "}"]
    assert (Name, "t") in toks and (Name.Attribute, "id") in toks and (Name.Builtin, "len") in toks
    # A nested object and a nested string with `}` do not close the interpolation.
    assert (String.Double, "}") in toks and (Name.Attribute, "a") in toks
    assert type_of(r'"\q"', r"\q") is Error


def test_nested_interpolation() -> None:
    toks = significant('"${"${1}"}"')
    assert [t for t, _v in toks] == [
        String.Double, String.Interpol, String.Double, String.Interpol, Number.Integer,
        String.Interpol, String.Double, String.Interpol, String.Double,
    ]


def test_triple_quoted_strings() -> None:
    text = 'let s = """\n  Hello ${name},\n  "quoted" ${ len(\n   xs) }\n"""\nlet y = 1\n'
    toks = significant(text)
    assert toks[3] == (String.Double, '"""')
    assert (String.Interpol, "${") in toks
    assert (Name.Builtin, "len") in toks
    assert (Name, "xs") in toks
    closing = [i for i, (t, v) in enumerate(toks) if v == '"""']
    assert len(closing) == 2
    # After the closing quotes, code again.
    assert toks[closing[1] + 1] == (Keyword.Declaration, "let")
    assert_no_errors(text)


def test_unterminated_string_stops_at_the_end_of_the_line() -> None:
    text = 'let s = "abc ${x\nlet y = 1\n'
    assert type_of(text, "let", 1) is Keyword.Declaration
    assert type_of(text, "1") is Number.Integer


def test_numbers_and_durations() -> None:
    for lit in ("30s", "300ms", "2m", "1h", "0ms"):
        assert type_of(f"let d = {lit}", lit) is Duration
    for lit in ("3.14", "1e-3", "2E5", "1.5e+2"):
        assert type_of(f"let n = {lit}", lit) is Number.Float
    assert type_of("let n = 42", "42") is Number.Integer
    assert type_of("xs[0].name", "0") is Number.Integer
    for bad in ("5x", "3.5e", "1.2.3", "1.5s", "5min"):
        assert type_of(f"let n = {bad}", bad) is Error, bad
    # `-` is always an operator.
    assert significant("-3")[0] == (Operator, "-")


def test_durations_are_numbers_for_styles_and_html() -> None:
    assert Duration in Number
    html = highlight("let d = 30s", FlowLexer(), HtmlFormatter())
    assert re.search(r'class="m[^"]*">30s<', html), html


def test_operators() -> None:
    text = "let a = xs[*].name ?? b?.c ... x => x -> y == z != w <= 1 >= 2 | T? ? 1 : 2"
    for op in ("[*]", "??", "?.", "...", "=>", "->", "==", "!=", "<=", ">=", "|"):
        assert type_of(text, op) is Operator, op
    assert type_of(text, ":") is Punctuation
    assert type_of("f(a, b);", ",") is Punctuation
    assert type_of("obj.{id, title}", ".") is Punctuation


def test_bad_characters_are_errors() -> None:
    for ch in ("!", "&", "'", "é"):
        assert type_of(f"x {ch} y", ch) is Error, ch


def test_magics() -> None:
    text = "%operator auto-approve\n%allow run git\nlet x = 1 % 2\n"
    toks = tokens(text)
    assert toks[0] == (Name.Decorator, "%operator")
    assert toks[1] == (Text, " auto-approve")
    assert (Name.Decorator, "%allow") in toks
    assert type_of(text, "%") is Operator  # not at the start of a line: modulo
    assert tokens("%%flow --out r\nprint 1")[0] == (Name.Decorator, "%%flow")
    assert tokens("  %who\n")[:2] == [(Whitespace, "  "), (Name.Decorator, "%who")]


# -- registration ----------------------------------------------------------------------


def _entry_point_registered() -> bool:
    return any(ep.name == "flow" for ep in importlib.metadata.entry_points(group="pygments.lexers"))


@pytest.mark.skipif(
    not _entry_point_registered(),
    reason='the `pygments.lexers` entry point `flow` is not in the installed metadata: add '
    '`flow = "flow_kernel.highlight:FlowLexer"` under [project.entry-points."pygments.lexers"] '
    "in pyproject.toml and reinstall the package",
)
def test_pygments_finds_the_lexer() -> None:
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename, get_lexer_for_mimetype

    assert isinstance(get_lexer_by_name("flow"), FlowLexer)
    assert isinstance(get_lexer_for_filename("triage.flow"), FlowLexer)
    assert isinstance(get_lexer_for_mimetype("text/x-flow"), FlowLexer)


def test_lexer_metadata() -> None:
    assert FlowLexer.name == "Flow"
    assert FlowLexer.aliases == ["flow"]
    assert FlowLexer.filenames == ["*.flow"]
    assert FlowLexer.mimetypes == ["text/x-flow"]


# -- properties ------------------------------------------------------------------------


@settings(max_examples=500, **_SETTINGS)
@given(text=st.text(max_size=300) | st.text(alphabet=FLOW_CHARS, max_size=300) | token_soup)
def test_random_text_never_raises_and_round_trips(text: str) -> None:
    positions = [(pos, v) for pos, _t, v in FlowLexer().get_tokens_unprocessed(text)]
    assert "".join(v for _pos, v in positions) == text
    offset = 0
    for pos, value in positions:
        assert pos == offset
        offset += len(value)
    # The public API too (it normalises newlines and may strip them).
    list(FlowLexer().get_tokens(text))


@settings(max_examples=60, **_SETTINGS)
@given(program=flow_programs())
def test_generated_programs_lex_without_errors(program: str) -> None:
    assert_no_errors(program)


@settings(max_examples=300, **_SETTINGS)
@given(text=token_soup)
def test_error_tokens_only_where_the_compiler_reports_syntax_errors(text: str) -> None:
    if not any(t in Error for t, _v in tokens(text)):
        return
    codes = {d.code for d in check(SourceFile("soup.flow", text)).diagnostics}
    assert any(code.startswith("F1") for code in codes), (text, codes)


# -- the JupyterLab mode (labextension/src/mode.ts) mirrors this lexer -----------------

LAB = ROOT / "labextension"
WORDS_SCRIPT = LAB / "scripts" / "generate_words.py"
TOKENS_SCRIPT = LAB / "scripts" / "tokens.cjs"


@pytest.mark.skipif(not WORDS_SCRIPT.exists(), reason="labextension/ sources are not in this tree (an sdist)")
def test_lab_mode_word_lists_are_generated_from_this_lexer() -> None:
    result = subprocess.run([sys.executable, str(WORDS_SCRIPT), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def _node_ready() -> bool:
    return (shutil.which("node") is not None and TOKENS_SCRIPT.exists()
            and (LAB / "node_modules" / "typescript").is_dir()
            and (LAB / "node_modules" / "@codemirror" / "language").is_dir())


def _pygments_styles(text: str) -> list[str | None]:
    """One style per character, named like the CodeMirror mode's tokens."""
    styles: list[str | None] = []
    for ttype, value in tokens(text):
        if ttype in (Whitespace, Text):
            name = None
        elif ttype is Keyword.Constant and value == "null":
            name = "KeywordConstantNull"
        else:
            name = "".join(str(ttype).split(".")[1:]).replace("Literal", "")
        styles += [name] * len(value)
    return styles


def _codemirror_styles(texts: list[str]) -> list[list[str | None]]:
    result = subprocess.run(["node", str(TOKENS_SCRIPT)], input=json.dumps(texts), capture_output=True,
                            text=True, cwd=LAB, timeout=120, check=True)
    out: list[list[str | None]] = []
    for toks in json.loads(result.stdout):
        styles: list[str | None] = []
        for style, value in toks:
            styles += [style] * len(value)
        out.append(styles)
    return out


def assert_same_styles(texts: list[str]) -> None:
    for text, cm in zip(texts, _codemirror_styles(texts), strict=True):
        py = _pygments_styles(text)
        assert len(cm) == len(py) == len(text)
        # A line end is no token in CodeMirror (Pygments has it in a triple-quoted string).
        diff = next((i for i, (a, b) in enumerate(zip(py, cm, strict=True)) if a != b and text[i] != "\n"), None)
        if diff is not None:
            line = text.count("\n", 0, diff) + 1
            raise AssertionError(f"{text!r}\nline {line}, offset {diff} ({text[diff]!r}): Pygments {py[diff]}, "
                                 f"CodeMirror {cm[diff]}\n{text[max(0, diff - 40):diff + 40]!r}")


_needs_node = pytest.mark.skipif(not _node_ready(), reason="needs node and `npm ci` in labextension/")
# CodeMirror splits lines at \r too, and \u2028 is a line end for neither: keep inputs to \n.
_LINE_TEXT = st.text(alphabet=FLOW_CHARS.replace("\r", ""), max_size=200)


@_needs_node
def test_lab_mode_matches_pygments_on_files() -> None:
    texts = [p.read_text(encoding="utf-8") for p in [*EXAMPLES, *CASES, *CORPUS]]
    assert_same_styles([t.replace("\r", "") for t in texts])


@_needs_node
def test_lab_mode_matches_pygments_on_functions_and_primary() -> None:
    assert_same_styles([
        "fn double(x: int) -> int {\n  return x * 2\n}\nlet fn = double(2)\nprint fn",
        'workflow w() -> int {\n  publish primary "answer" 42\n  publish primary 1\n  return 1\n}',
    ])


@_needs_node
@settings(max_examples=20, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(texts=st.lists(flow_programs() | token_soup.map(lambda s: s.replace("\r", "")) | _LINE_TEXT,
                      min_size=8, max_size=8))
def test_lab_mode_matches_pygments_on_random_programs(texts: list[str]) -> None:
    assert_same_styles(texts)


BUNDLE = ROOT / "flow_kernel" / "labextension"


def test_the_built_lab_extension_is_present_and_current() -> None:
    """The prebuilt bundle (committed; the wheel ships it as shared data) loads its
    remote entry and carries the current word lists (rebuild it after changing them)."""
    meta = json.loads((BUNDLE / "package.json").read_text(encoding="utf-8"))
    assert meta["name"] == "flow-kernel-lab"
    assert meta["jupyterlab"]["extension"] is True
    entry = BUNDLE / meta["jupyterlab"]["_build"]["load"]
    assert entry.is_file() and re.fullmatch(r"remoteEntry\.[0-9a-f]+\.js", entry.name)
    bundle = "".join(p.read_text(encoding="utf-8") for p in (BUNDLE / "static").glob("*.js"))
    for word in sorted(BUILTIN_NAMES | RESERVED | TYPE_NAMES):
        assert f'"{word}"' in bundle, f"{word} is not in the built mode: run `npm run build` in labextension/"
    assert "text/x-flow" in bundle
    # The mode's contextual words (`fn NAME(`, `primary "…"`) are in the built bundle too.
    assert "'fn'" in bundle or '"fn"' in bundle
    assert "'primary'" in bundle or '"primary"' in bundle


@_needs_node
def test_the_built_lab_extension_is_what_its_sources_build(tmp_path: Path) -> None:
    """Building labextension/ afresh gives the committed chunks byte for byte (the remote
    entry names module ids after the build's path, so it is left out): a bundle edited
    by hand, or sources changed without `npm run build`, fail here."""
    copy = tmp_path / "labextension"
    copy.mkdir()
    for name in ("src", "package.json", "tsconfig.json"):
        source = LAB / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, copy / name)
    (copy / "node_modules").symlink_to(LAB / "node_modules")
    node = shutil.which("node") or "node"
    subprocess.run([node, "node_modules/typescript/bin/tsc"], cwd=copy, check=True)
    subprocess.run([node, "node_modules/@jupyter/builder/lib/build-labextension.js", "--core-package-file",
                    "node_modules/@jupyterlab/core-meta/core.package.json", "."],
                   cwd=copy, check=True, capture_output=True)

    def chunks(root: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((root / "static").iterdir())
                if not p.name.startswith("remoteEntry.")}

    built = chunks(tmp_path / "flow_kernel" / "labextension")
    assert built == chunks(BUNDLE), "the committed lab bundle is stale: run `npm run build` in labextension/"
