"""A Pygments lexer for Flow (language.md §1), used by nbconvert's HTML export and
any Pygments consumer once the `pygments.lexers` entry point `flow` is installed.

The keyword list comes from `flow_kernel.lang.tokens.RESERVED` and the builtins from
`flow_kernel.lang.builtins.BUILTINS`, so the highlighter follows the compiler.
The JupyterLab mode in `labextension/src/mode.ts` mirrors these token classes; keep
the two in step.

Token classes:

- `#` comments `Comment.Single`; `##` at the start of a line (a doc comment)
  `Comment.Special`;
- a `%magic` (or `%%magic`) at the start of a line `Name.Decorator`, its arguments
  `Text` (cells may begin with line magics);
- `use` `Keyword.Namespace`; `type tool agent team workflow let var`
  `Keyword.Declaration`; `true false null` `Keyword.Constant`; `and or not in`
  `Operator.Word`; `it` `Name.Builtin.Pseudo`; every other reserved word, and the
  contextual keywords (`details choice stdin timeout`, `requires approval`, `primary`
  before a string) in their positions, `Keyword`; `fn` before `NAME(`
  `Keyword.Declaration`;
- the type names `string int number bool any duration external` `Keyword.Type`
  (they are not reserved words: `any(xs, f)`, `int(v)` and `bool(v)` followed by
  `(` are builtin calls, except `int(minimum: 0)`, a constrained type);
- the name after `agent`, `team` and `type` `Name.Class`, after `workflow` and
  `tool` (and `fn`) `Name.Function`, after `let` and `var` `Name.Variable`;
- a builtin followed by `(` `Name.Builtin` (also the script entries `when`, `fail`,
  `slow`); a name after `.` or `?.` `Name.Attribute`; a reserved word used as an
  object key, type field or named argument (`{type: "x"}`) plain `Name`;
- strings `String.Double` (`"…"` and `\"\"\"…\"\"\"`), valid escapes `String.Escape`,
  `${` and `}` `String.Interpol` with the expression inside lexed as Flow;
- integers `Number.Integer`, other numbers `Number.Float`, durations (`30s`,
  `250ms`) `Number.Duration` (a subtype of `Number`: styles and the HTML class `m`
  apply);
- operators (`=>`, `->`, `??`, `?.`, `[*]`, `...`, comparisons, arithmetic, `|`, `?`)
  `Operator`; brackets, `,`, `;`, `:` and `.` `Punctuation`;
- what the compiler's lexer rejects (a character such as `!` or `'`, a number glued
  to letters such as `5x`, a bad escape) `Error`.
"""

from __future__ import annotations

from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups, include  # type: ignore[import-untyped]
from pygments.regexopt import regex_opt  # type: ignore[import-untyped]
from pygments.token import (  # type: ignore[import-untyped]
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

from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.tokens import RESERVED

__all__ = [
    "BUILTIN_NAMES",
    "CONSTANTS",
    "CONTEXTUAL_KEYWORDS",
    "DECLARATION_KEYWORDS",
    "KEYWORDS",
    "NAMESPACE_KEYWORDS",
    "OPERATOR_WORDS",
    "PSEUDO_NAMES",
    "TYPE_NAMES",
    "FlowLexer",
]

NAMESPACE_KEYWORDS = frozenset({"use"})
DECLARATION_KEYWORDS = frozenset({"type", "tool", "agent", "team", "workflow", "let", "var"})
CONSTANTS = frozenset({"true", "false", "null"})
OPERATOR_WORDS = frozenset({"and", "or", "not", "in"})
PSEUDO_NAMES = frozenset({"it"})
# Primitive type names (not reserved, except `external`); `null` is a constant.
TYPE_NAMES = frozenset({"string", "int", "number", "bool", "any", "duration", "external"})
# Every other reserved word.
KEYWORDS = frozenset(
    RESERVED - NAMESPACE_KEYWORDS - DECLARATION_KEYWORDS - CONSTANTS - OPERATOR_WORDS - PSEUDO_NAMES - TYPE_NAMES
)
# Keywords only in some positions (language.md §1); `requires approval` is matched as a pair.
CONTEXTUAL_KEYWORDS = frozenset({"details", "choice", "stdin", "timeout"})
# The builtins of language.md §6.3 and the `script` entries of an agent (§4.2.1).
BUILTIN_NAMES = frozenset(set(BUILTINS) | {"when", "fail", "slow"})

# The token type of durations: a subtype of Number, so every style colours it as a number.
Duration = Number.Duration

_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_END = r"(?![A-Za-z0-9_])"  # the end of a word (ASCII, like the compiler's lexer)
_WS = r"[ \t\r\f\v\ufeff]"  # blanks other than a newline
_BAD_ESCAPE = r"\\[^\n]?"


def _words(names: frozenset[str]) -> str:
    """A regex for any of the words, as whole words (`regex_opt` orders alternatives
    so that no word is cut short by a prefix of it)."""
    return str(regex_opt(sorted(names), suffix=_END))


class FlowLexer(RegexLexer):  # type: ignore[misc]
    """Pygments lexer for the Flow language (`.flow` files and notebook cells)."""

    name = "Flow"
    aliases: ClassVar[list[str]] = ["flow"]
    filenames: ClassVar[list[str]] = ["*.flow"]
    mimetypes: ClassVar[list[str]] = ["text/x-flow"]

    tokens: ClassVar[dict[str, list[object]]] = {
        "root": [
            (r"\n", Whitespace),
            # A line magic (or an IPython cell magic) at the start of a line.
            (r"^(" + _WS + r"*)(%%?[A-Za-z_][A-Za-z0-9_-]*)([^\n]*)", bygroups(Whitespace, Name.Decorator, Text)),
            include("expr"),
            (r"\{", Punctuation),
            (r"\}", Punctuation),
        ],
        # Expressions, statements and declarations; newlines are handled by the including state.
        "expr": [
            (r"^(" + _WS + r"*)(##[^\n]*)", bygroups(Whitespace, Comment.Special)),
            (_WS + r"+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r'"""', String.Double, "tdqs"),
            (r'"', String.Double, "dqs"),
            # Numbers: durations, floats, integers; a number glued to letters is one bad token.
            (r"[0-9]+(?:ms|s|m|h)(?![A-Za-z0-9_]|\.[0-9])", Duration),
            (r"[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)(?![A-Za-z0-9_]|\.[0-9])", Number.Float),
            (r"[0-9]+(?![A-Za-z0-9_]|\.[0-9])", Number.Integer),
            (r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?:[A-Za-z0-9_]|\.[0-9])+", Error),
            # After `.` and `?.` any word is a field name (`err.stage`).
            (r"(\?\.)(" + _WS + r"*)(" + _ID + ")", bygroups(Operator, Whitespace, Name.Attribute)),
            (r"(\.)(" + _WS + r"*)(" + _ID + ")", bygroups(Punctuation, Whitespace, Name.Attribute)),
            # A reserved word as an object key, type field or named argument is a plain name
            # (`{type: "x"}`, `{ stage?: string }`); constants keep their class (`c ? true : x`).
            (_words(RESERVED - CONSTANTS) + r"(?=" + _WS + r"*\??" + _WS + r"*:)", Name),
            # Declarations and the name they declare (on the same line).
            (r"(agent|team|type)(" + _WS + r"+)(" + _ID + ")" + _END, bygroups(Keyword.Declaration, Whitespace, Name.Class)),
            (r"(workflow|tool)(" + _WS + r"+)(" + _ID + ")" + _END, bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (r"(let|var)(" + _WS + r"+)(" + _ID + ")" + _END, bygroups(Keyword.Declaration, Whitespace, Name.Variable)),
            # `fn NAME(` declares a function; `fn` elsewhere is a plain name.
            (r"(fn)(" + _WS + r"+)(" + _ID + ")(?=" + _WS + r"*\()", bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            # `publish primary "NAME" e`: `primary` is a word only before a string.
            (r"primary(?=" + _WS + r'+")', Keyword),
            (r"(requires)(" + _WS + r"+)(approval)" + _END, bygroups(Keyword, Whitespace, Keyword)),
            (_words(NAMESPACE_KEYWORDS), Keyword.Namespace),
            (_words(DECLARATION_KEYWORDS), Keyword.Declaration),
            (_words(CONSTANTS), Keyword.Constant),
            (_words(OPERATOR_WORDS), Operator.Word),
            (_words(PSEUDO_NAMES), Name.Builtin.Pseudo),
            (_words(KEYWORDS), Keyword),
            # `details {…}`, `choice [...]`, `stdin """…"""`, `timeout 10s`: keywords when an
            # operand follows on the same line; ordinary names elsewhere.
            (_words(CONTEXTUAL_KEYWORDS) + r"(?=" + _WS + r'+[\[{("A-Za-z0-9_])', Keyword),
            # `int(minimum: 0)` is a constrained type, `int(x)` a conversion.
            (_words(TYPE_NAMES) + r"(?=" + _WS + r"*\(" + _WS + r"*" + _ID + _WS + r"*:)", Keyword.Type),
            (_words(BUILTIN_NAMES) + r"(?=" + _WS + r"*\()", Name.Builtin),
            (_words(TYPE_NAMES), Keyword.Type),
            (_ID, Name),
            # Operators (longest first) and punctuation.
            (r"\[\*\]|\.\.\.|\?\.|\?\?|=>|->|==|!=|<=|>=|[-+*/%<>=|?]", Operator),
            (r"[()\[\],;:.]", Punctuation),
        ],
        # `"…"`: ends at `"`; an unterminated string stops at the end of the line, where
        # Pygments returns to the root state.
        "dqs": [
            (r'"', String.Double, "#pop"),
            (r'\\(?:[nt"\\$]|u[0-9a-fA-F]{4})', String.Escape),
            (_BAD_ESCAPE, Error),
            (r"\$\{", String.Interpol, "interp"),
            (r'[^"\\$\n]+', String.Double),
            (r"\$", String.Double),
        ],
        # `"""…"""`: may span lines.
        "tdqs": [
            (r'"""', String.Double, "#pop"),
            (r'\\(?:[nt"\\$]|u[0-9a-fA-F]{4})', String.Escape),
            (_BAD_ESCAPE, Error),
            (r"\$\{", String.Interpol, "tinterp"),
            (r'[^"\\$]+', String.Double),
            (r'["$]', String.Double),
        ],
        # `${ … }` in a `"…"` string: one line; braces nest.
        "interp": [
            (r"\}", String.Interpol, "#pop"),
            (r"\{", Punctuation, "ibrace"),
            include("expr"),
        ],
        "ibrace": [
            (r"\}", Punctuation, "#pop"),
            (r"\{", Punctuation, "#push"),
            include("expr"),
        ],
        # `${ … }` in a `\"\"\"…\"\"\"` string: may span lines.
        "tinterp": [
            (r"\n", Whitespace),
            (r"\}", String.Interpol, "#pop"),
            (r"\{", Punctuation, "tibrace"),
            include("expr"),
        ],
        "tibrace": [
            (r"\n", Whitespace),
            (r"\}", Punctuation, "#pop"),
            (r"\{", Punctuation, "#push"),
            include("expr"),
        ],
    }
