"""Expressions and type expressions (language.md §3, §6)."""

from __future__ import annotations

import re

from flow_kernel.diagnostics.model import Related
from flow_kernel.lang import ast
from flow_kernel.lang.lexer import Lexer
from flow_kernel.lang.parser_base import MAX_NESTING, ParseError, ParserBase
from flow_kernel.lang.tokens import RESERVED, Interpolation, Kind, Token
from flow_kernel.source import Span

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
NOT_PREC, COMPARISON_PREC = 4, 5
# Binary operators and operator keywords by their text (a token's text alone tells them:
# see `ParserBase.at_op`).
BINARY_PREC = {"??": 1, "or": 2, "and": 3, "in": COMPARISON_PREC, "+": 6, "-": 6, "*": 7, "/": 7, "%": 7,
               **{c: COMPARISON_PREC for c in COMPARISONS}}
PREFIX_WORDS = frozenset(("approve", "ask", "run"))
_POSTFIX_OPS = frozenset(("(", ".", "?.", "["))
# `${name}` or `${name.field.field}` with nothing else inside (the lexer's identifiers, no
# spaces): 5 interpolations in 6 in the bench's program.
_PLAIN_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_OP, _KEYWORD, _IDENT, _NEWLINE = Kind.OP, Kind.KEYWORD, Kind.IDENT, Kind.NEWLINE
_INT, _NUMBER, _DURATION, _STRING = Kind.INT, Kind.NUMBER, Kind.DURATION, Kind.STRING


class ExprParser(ParserBase):
    _paren_start: dict[int, int]  # node id -> offset of the `(` wrapped around it

    def outer_start(self, node: ast.Node) -> int:
        """Where a node starts as an operand: at its parentheses, if it has any."""
        return self._paren_start.get(id(node), node.span.start)

    # -- names -----------------------------------------------------------------
    def ident(self, what: str = "a name") -> ast.Ident:
        """A binding or declaration name; a reserved word is F1010 but parsing goes on."""
        tok = self.peek()
        if tok.kind is Kind.IDENT:
            self.advance()
            return ast.Ident(tok.span, tok.text)
        if tok.kind is Kind.KEYWORD:
            self.advance()
            self.reporter.report(
                "F1010", tok.span, f"`{tok.text}` is a reserved word and cannot be used as a name",
                hints=(f"choose another name, e.g. `{tok.text}_`",),
            )
            return ast.Ident(tok.span, tok.text)
        raise self.fail(what)

    def plain_name(self, what: str = "a name") -> ast.Ident:
        """A field, key or argument name: reserved words are accepted as plain names."""
        tok = self.peek()
        if tok.kind in (Kind.IDENT, Kind.KEYWORD):
            self.advance()
            return ast.Ident(tok.span, tok.text)
        raise self.fail(what)

    # -- expressions -------------------------------------------------------------
    def expr(self) -> ast.Expr:
        """A full expression, with `expect` clauses when they follow."""
        if self.peek().text in PREFIX_WORDS:
            value = self.prefix_form()
        else:  # `prefix_form` and `ternary`, inlined (one expression in three is an argument)
            value = self.binary()
            if self.peek().text == "?":
                value = self._conditional(value)
        if self._at_expect():
            clauses: list[ast.ExpectClause] = []
            while self._at_expect():
                self.skip_newlines()
                kw = self.advance()
                cond = self.prefix_form()
                message = None
                if self.accept_op(":"):
                    message = self.prefix_form()
                clauses.append(ast.ExpectClause(self.span_from(kw.start), cond, message))
            value = ast.Expect(self.span_from(self.outer_start(value)), value, clauses)
        return value

    def _at_expect(self) -> bool:
        # The next token, or (also outside brackets, where a line that begins with
        # `expect` continues the one above) the one after a newline.
        tok = self.toks[self.i]
        if tok.kind is _NEWLINE:
            tok = self.toks[self.i + 1]
        return tok.text == "expect"

    def prefix_form(self) -> ast.Expr:
        tok = self.peek()
        if tok.text not in PREFIX_WORDS:
            return self.ternary()
        if tok.is_kw("approve"):
            self.advance()
            question = self.ternary()
            details = None
            if self.peek().is_word("details"):
                self.advance()
                details = self.ternary()
            return ast.Approve(self.span_from(tok.start), question, details, self._deadline("approve"))
        if tok.is_kw("ask"):
            self.advance()
            question = self.ternary()
            choice = None
            if self.peek().is_word("choice"):
                self.advance()
                choice = self.ternary()
            return ast.Ask(self.span_from(tok.start), question, choice, self._deadline("ask"))
        return self.run_expr()

    def _deadline(self, word: str) -> ast.Deadline | None:
        """`timeout T else V` after an `approve`/`ask`: both halves, in this order."""
        tok = self.peek()
        if tok.is_kw("else"):
            self.reporter.report("F1016", tok.span, f"a default (`else`) of `{word}` needs a `timeout` before it",
                                 hints=(f"e.g. `{word} \"…\" timeout 2h else …`",))
            raise ParseError()
        if not tok.is_word("timeout"):
            return None
        self.advance()
        timeout = self.ternary()
        if not self.accept_kw("else"):
            example = "false" if word == "approve" else '"…"'
            self.reporter.report("F1015", self.span_from(tok.start), f"a `timeout` of `{word}` needs a default: `else` and the answer to use",
                                 hints=(f"e.g. `timeout 2h else {example}`",))
            raise ParseError()
        default = self.ternary()
        return ast.Deadline(self.span_from(tok.start), timeout, default)

    def run_expr(self) -> ast.Run:
        kw = self.advance()
        exe = self.primary(postfix=False)
        args = self.primary(postfix=False)
        clauses: dict[str, ast.Expr] = {}
        while self.peek().is_word("stdin", "timeout"):
            word = self.advance()
            if word.text in clauses:
                self.reporter.report("F1006", word.span, f"`{word.text}` given twice in one `run`")
                raise ParseError()
            clauses[word.text] = self.ternary()
        return ast.Run(self.span_from(kw.start), exe, args, clauses.get("stdin"), clauses.get("timeout"))

    def ternary(self) -> ast.Expr:
        cond = self.binary()
        if self.peek().text == "?":
            return self._conditional(cond)
        return cond

    def _conditional(self, cond: ast.Expr) -> ast.Ternary:
        """`cond ? then : other`, from the `?`."""
        self.advance()
        then = self.ternary()
        self.expect_op(":", "`:` of the conditional expression `c ? a : b`")
        other = self.ternary()
        return ast.Ternary(self.span_from(self.outer_start(cond)), cond, then, other)

    def binary(self, min_prec: int = 1) -> ast.Expr:
        """The binary levels of §6 by precedence climbing (one frame per operand
        instead of one per level): `??` (right-associative) < `or` < `and` < prefix
        `not` < comparisons (not chained) < `+ -` < `* / %`."""
        tok = self.peek()
        if tok.text == "not" and min_prec <= NOT_PREC:
            self.advance()
            operand = self.binary(NOT_PREC)
            left: ast.Expr = ast.Unary(self.span_from(tok.start), "not", operand)
            tok = self.peek()
        elif tok.text == "-":
            left = self.unary()
            tok = self.peek()
        else:  # `unary` and `primary`, inlined
            left = self._atom(tok)
            tok = self.peek()
            if tok.text in _POSTFIX_OPS:
                left = self._postfix(left)
                tok = self.peek()
        while True:  # `tok` is the token after `left`
            prec = BINARY_PREC.get(tok.text)
            if prec is None or prec < min_prec:
                return left
            self.advance()
            right = self.binary(prec if tok.text == "??" else prec + 1)
            start = self._paren_start.get(id(left), left.span.start)  # `outer_start`, inlined
            left = ast.Binary(self.span_from(start), tok.text, left, right, tok.span)
            tok = self.peek()
            if prec == COMPARISON_PREC and BINARY_PREC.get(tok.text) == COMPARISON_PREC:
                self.reporter.report(
                    "F1006", tok.span, f"expected the end of the comparison, found `{tok.text}`",
                    hints=("comparisons do not chain: write `a < b and b < c`",),
                )
                raise ParseError()

    def unary(self) -> ast.Expr:
        if self.peek().text == "-":
            op = self.advance()
            operand = self.unary()
            return ast.Unary(self.span_from(op.start), "-", operand)
        return self.primary()

    # -- postfix and primaries ---------------------------------------------------
    def primary(self, postfix: bool = True) -> ast.Expr:
        tok = self.peek()
        node = self._atom(tok)
        return self._postfix(node) if postfix else node

    def _atom(self, tok: Token) -> ast.Expr:
        """The primary that starts at `tok` (which is `peek()`), without postfixes."""
        kind = tok.kind
        if kind is _IDENT:
            self.advance()
            nxt = self.toks[self.i]  # `peek_at(1)`, inlined: ~1 in 5 tokens is a name
            if nxt.kind is _NEWLINE and self.skip_newlines_now:
                nxt = self.toks[self.i + 1]
            if nxt.text == "=>":
                self.i -= 1  # back to the name (a newline before it stays skipped)
                return self.lambda_expr()
            return ast.Name(tok.span, tok.text)
        if kind is _STRING:
            self.advance()
            return self.string(tok)
        if kind is _INT:
            self.advance()
            return ast.IntLit(tok.span, int(tok.value))  # type: ignore[call-overload]
        if kind is _NUMBER:
            self.advance()
            return ast.NumLit(tok.span, float(tok.value))  # type: ignore[arg-type]
        if kind is _DURATION:
            self.advance()
            return ast.DurationLit(tok.span, int(tok.value))  # type: ignore[call-overload]
        if kind is Kind.KEYWORD:
            if tok.text in ("true", "false"):
                self.advance()
                return ast.BoolLit(tok.span, tok.text == "true")
            if tok.text == "null":
                self.advance()
                return ast.NullLit(tok.span)
            if tok.text == "it":
                self.advance()
                return ast.It(tok.span)
            if tok.text == "parallel":
                return self.parallel()
            raise self.fail("an expression", hints=(f"`{tok.text}` is a reserved word",))
        if tok.is_op("("):
            if self._lambda_ahead():
                return self.lambda_expr()
            self.advance()
            with self.bracket(tok, newlines_ignored=True):
                inner = self.expr()
                self.expect_op(")")
            self._paren_start[id(inner)] = tok.start
            return inner
        if tok.is_op("["):
            return self.array()
        if tok.is_op("{"):
            return self.object_literal()
        raise self.fail("an expression")

    def _lambda_ahead(self) -> bool:
        """`( ident (, ident)* ) =>` starting at the current `(`."""
        k = 1
        if self.peek_at(k).is_op(")"):
            return self.peek_at(k + 1).is_op("=>")
        while True:
            if self.peek_at(k).kind not in (Kind.IDENT, Kind.KEYWORD):
                return False
            k += 1
            if self.peek_at(k).is_op(","):
                k += 1
                if self.peek_at(k).is_op(")"):
                    return self.peek_at(k + 1).is_op("=>")
                continue
            if self.peek_at(k).is_op(")"):
                return self.peek_at(k + 1).is_op("=>")
            return False

    def lambda_expr(self) -> ast.Lambda:
        start = self.peek()
        params: list[ast.Ident] = []
        if start.is_op("("):
            opener = self.advance()
            with self.bracket(opener, newlines_ignored=True):
                while not self.at_op(")"):
                    params.append(self.ident("a lambda parameter"))
                    if not self.accept_op(","):
                        break
                self.expect_op(")")
        else:
            params.append(self.ident("a lambda parameter"))
        self.expect_op("=>")
        body: ast.Expr | ast.Block
        if self.at_op("{"):
            body = self.lambda_block()
        else:
            body = self.expr()
        return ast.Lambda(self.span_from(start.start), params, body)

    def lambda_block(self) -> ast.Block:  # pragma: no cover - provided by the statement parser
        raise NotImplementedError

    def _postfix(self, node: ast.Expr) -> ast.Expr:
        while True:
            tok = self.peek()
            text = tok.text
            if text not in _POSTFIX_OPS:  # most primaries have no postfix
                return node
            if text == "(":
                node = self.call(node)
            elif text == "." and self.peek_at(1).text == "{":
                self.advance()
                opener = self.advance()
                fields: list[ast.Ident] = []
                with self.bracket(opener, newlines_ignored=True):
                    while not self.at_op("}"):
                        fields.append(self.plain_name("a field name"))
                        if not self.accept_op(","):
                            break
                    self.expect_op("}")
                node = ast.Pick(self.span_from(self.outer_start(node)), node, fields)
            elif text != "[":  # `.` or `?.`
                self.advance()
                name = self.plain_name("a field name after `" + text + "`")
                node = ast.Member(self.span_from(self.outer_start(node)), node, name, text == "?.")
            else:
                node = self.subscript(node)

    def subscript(self, node: ast.Expr) -> ast.Expr:
        opener = self.advance()
        with self.bracket(opener, newlines_ignored=True):
            if self.at_op("*") and self.peek_at(1).is_op("]"):
                self.advance()
                self.advance()
                path: list[ast.Ident] = []
                with self.newlines(False):
                    while self.at_op(".") and not self.peek_at(1).is_op("{"):
                        self.advance()
                        path.append(self.plain_name("a field name"))
                return ast.Project(self.span_from(self.outer_start(node)), node, path)
            lower = None if self.at_op(":") else self.expr()
            if self.accept_op(":"):
                upper = None if self.at_op("]") else self.expr()
                self.expect_op("]")
                return ast.Slice(self.span_from(self.outer_start(node)), node, lower, upper)
            self.expect_op("]")
        assert lower is not None
        return ast.Index(self.span_from(self.outer_start(node)), node, lower)

    def call(self, callee: ast.Expr) -> ast.Call:
        opener = self.advance()
        args: list[ast.Arg] = []
        with self.bracket(opener, newlines_ignored=True):
            while self.peek().text != ")":
                start = self.peek()
                if (start.kind is _IDENT or start.kind is _KEYWORD) and self.peek_at(1).text == ":":
                    name = self.plain_name()
                    self.advance()
                    value: ast.Expr
                    if name.name == "output":
                        t = self.type_expr()
                        value = ast.TypeArg(t.span, t)
                    else:
                        value = self.expr()
                    args.append(ast.Arg(self.span_from(start.start), name, value))
                else:
                    value = self.expr()
                    args.append(ast.Arg(value.span, None, value))
                if self.peek().text != ",":
                    break
                self.advance()
            self.expect_op(")", "`,` or `)` in the argument list")
        return ast.Call(self.span_from(self.outer_start(callee)), callee, args)

    def array(self) -> ast.ArrayLit:
        opener = self.advance()
        items: list[ast.Expr] = []
        with self.bracket(opener, newlines_ignored=True):
            while self.peek().text != "]":
                items.append(self.expr())
                if self.peek().text != ",":
                    break
                self.advance()
            self.expect_op("]", "`,` or `]` in the array")
        return ast.ArrayLit(self.span_from(opener.start), items)

    def object_literal(self) -> ast.ObjectLit:
        opener = self.advance()
        entries: list[ast.ObjectEntry] = []
        seen: dict[str, ast.ObjectEntry] = {}
        with self.bracket(opener, newlines_ignored=True):
            while self.peek().text != "}":
                key_tok = self.peek()
                if key_tok.kind is _IDENT or key_tok.kind is _KEYWORD:
                    self.advance()
                    key = key_tok.text
                elif key_tok.kind is _STRING and key_tok.value is not None:
                    self.advance()
                    key = str(key_tok.value)
                else:
                    raise self.fail("an object key")
                if self.peek().text != ":":
                    raise self.fail("`:` after the object key", hints=(f"there is no shorthand: write `{{{key}: {key}}}`",))
                self.advance()
                value = self.expr()
                entry = ast.ObjectEntry(self.span_from(key_tok.start), key, key_tok.span, value)
                if key in seen:
                    self.reporter.report(
                        "F1014", key_tok.span, f"duplicate key `{key}` in object literal",
                        [Related(seen[key].key_span, "first given here")],
                    )
                else:
                    seen[key] = entry
                    entries.append(entry)
                if self.peek().text != ",":
                    break
                self.advance()
            self.expect_op("}", "`,` or `}` in the object")
        return ast.ObjectLit(self.span_from(opener.start), entries)

    def parallel(self) -> ast.Parallel:
        kw = self.advance()
        entries = self.named_entries("parallel", "branch", "`}` closing `parallel`")
        branches = [ast.ParallelBranch(span, name, value) for span, name, value in entries]
        return ast.Parallel(self.span_from(kw.start), branches, kw.span)

    def named_entries(self, keyword: str, entry: str, closing: str) -> list[tuple[Span, ast.Ident, ast.Expr]]:
        """`{ name: expr, … }` after `keyword` (just consumed), entries apart by commas or new
        lines: each entry's span, name and value. `entry` names one in messages ("branch":
        "a branch name"); `closing` is the message when the `}` is missing."""
        opener = self.expect_op("{", f"`{{` after `{keyword}`")
        entries: list[tuple[Span, ast.Ident, ast.Expr]] = []
        with self.bracket(opener, newlines_ignored=False):
            self._skip_separators()
            while not self.at_op("}"):
                name = self.plain_name(f"a {entry} name")
                self.expect_op(":", f"`:` after the {entry} name")
                value = self.expr()
                entries.append((self.span_from(name.span), name, value))
                if not self._member_separator():
                    break
            self.expect_op("}", closing)
        return entries

    def _skip_separators(self) -> None:
        while self.toks[self.i].kind is Kind.NEWLINE or self.toks[self.i].is_op(","):
            self.i += 1

    def _member_separator(self) -> bool:
        """Members of agent/team/limits/parallel bodies: a comma, a newline, or both."""
        found = False
        while self.toks[self.i].kind is Kind.NEWLINE or self.toks[self.i].is_op(","):
            self.i += 1
            found = True
        return found

    # -- strings -----------------------------------------------------------------
    def string(self, tok: Token) -> ast.StrLit:
        parts: list[str | ast.Expr] = []
        for part in tok.parts:
            if isinstance(part, Interpolation):
                parts.append(self._interpolated(part, tok))
            else:
                parts.append(part)
        return ast.StrLit(tok.span, parts)

    def _interpolated(self, part: Interpolation, string: Token) -> ast.Expr:
        # An interpolation nests like a bracket, and counts against the same limit: each
        # level re-lexes the text inside it, so strings nested through `${` thousands deep
        # took quadratic time (5,000 levels: 15 s) before reaching any limit.
        if len(self._open_brackets) >= MAX_NESTING:
            self.reporter.report("F1006", self.src.span(part.start - 2, part.end + 1),
                                 f"brackets, blocks and interpolations are nested more than {MAX_NESTING} deep here")
            return ast.NullLit(self.src.span(part.start, part.end))
        plain = self._plain_path(part)
        if plain is not None:
            return plain
        sub_tokens = Lexer(self.src, self.reporter, part.start, part.end).tokenize()
        sub = type(self)(self.src, sub_tokens, self.reporter)
        sub._open_brackets = [*self._open_brackets, string]
        sub.in_interpolation = True
        with sub.newlines(True):
            try:
                if sub.peek().kind is Kind.EOF:
                    self.reporter.report("F1006", self.src.span(part.start - 2, part.end + 1), "expected an expression inside `${}`")
                    raise ParseError()
                value = sub.expr()
                if sub.peek().kind is not Kind.EOF:
                    raise sub.fail("`}` closing the interpolation")
            except ParseError:
                return ast.NullLit(self.src.span(part.start, part.end))
        return value

    def _plain_path(self, part: Interpolation) -> ast.Expr | None:
        """The tree of a `${name.field…}` interpolation, built from its text: the nodes and
        spans that lexing and parsing it would give (a `Name`, then a `Member` per field,
        spanning from the name to the field's end), without a lexer and a parser for it.
        None for anything else, and for a reserved word first (`${it}`, `${true}`, …)."""
        text = self.src.text
        if _PLAIN_PATH.fullmatch(text, part.start, part.end) is None:
            return None
        names = text[part.start : part.end].split(".")
        if names[0] in RESERVED:
            return None
        src, start = self.src, part.start
        end = start + len(names[0])
        node: ast.Expr = ast.Name(Span(src, start, end), names[0])
        for name in names[1:]:
            name_start, end = end + 1, end + 1 + len(name)
            node = ast.Member(Span(src, start, end), node, ast.Ident(Span(src, name_start, end), name), False)
        return node

    # -- types -------------------------------------------------------------------
    def type_expr(self) -> ast.TypeExpr:
        first = self._type_postfix()
        if not self.at_op("|"):
            return first
        options = [first]
        while self.accept_op("|"):
            options.append(self._type_postfix())
        return ast.TUnion(self.span_from(self.outer_start(first)), options)

    def _type_postfix(self) -> ast.TypeExpr:
        node = self._type_primary()
        while True:
            if self.at_op("[") and self.peek_at(1).is_op("]"):
                self.advance()
                self.advance()
                node = ast.TArray(self.span_from(self.outer_start(node)), node)
            elif self.at_op("?", "??"):  # the lexer reads `T??` as the `??` operator
                self.advance()
                node = ast.TOptional(self.span_from(self.outer_start(node)), node)
            elif self.at_op("("):
                opener = self.advance()
                args: list[ast.NamedValue] = []
                with self.bracket(opener, newlines_ignored=True):
                    while not self.at_op(")"):
                        name = self.plain_name("a constraint keyword")
                        self.expect_op(":", "`:` after the constraint keyword")
                        value = self.expr()
                        args.append(ast.NamedValue(self.span_from(name.span), name, value))
                        if not self.accept_op(","):
                            break
                    self.expect_op(")")
                node = ast.TConstrained(self.span_from(self.outer_start(node)), node, args)
            else:
                return node

    def _type_primary(self) -> ast.TypeExpr:
        tok = self.peek()
        if tok.kind is Kind.IDENT:
            self.advance()
            return ast.TName(tok.span, tok.text)
        if tok.is_kw("null", "external", "any"):
            self.advance()
            return ast.TName(tok.span, tok.text)
        if tok.is_kw("true", "false"):
            self.advance()
            return ast.TLiteral(tok.span, tok.text == "true")
        if tok.kind is Kind.STRING and tok.value is not None:
            self.advance()
            return ast.TLiteral(tok.span, str(tok.value))
        if tok.kind in (Kind.INT, Kind.NUMBER):
            self.advance()
            return ast.TLiteral(tok.span, tok.value)  # type: ignore[arg-type]
        if tok.is_op("-") and self.peek_at(1).kind in (Kind.INT, Kind.NUMBER):
            self.advance()
            num = self.advance()
            return ast.TLiteral(self.span_from(tok.start), -num.value)  # type: ignore[operator]
        if tok.is_kw("schema"):
            self.advance()
            if not self.at_op("{"):
                raise self.fail("`{` after `schema`")
            body = self.object_literal()
            return ast.TSchema(self.span_from(tok.start), body)
        if tok.is_op("{"):
            return self._object_type()
        if tok.is_op("("):
            opener = self.advance()
            with self.bracket(opener, newlines_ignored=True):
                inner = self.type_expr()
                self.expect_op(")")
            self._paren_start[id(inner)] = opener.start
            return inner
        raise self.fail("a type")

    def _object_type(self) -> ast.TObject:
        opener = self.advance()
        fields: list[ast.TField] = []
        seen: dict[str, ast.TField] = {}
        is_open = False
        with self.bracket(opener, newlines_ignored=True):
            while not self.at_op("}"):
                if self.at_op("..."):
                    self.advance()
                    is_open = True
                    self.accept_op(",")
                    break
                tok = self.peek()
                if tok.kind is Kind.STRING and tok.value is not None:
                    self.advance()
                    name = ast.Ident(tok.span, str(tok.value))
                else:
                    name = self.plain_name("a field name")
                optional = self.accept_op("?") is not None
                self.expect_op(":", "`:` after the field name")
                ftype = self.type_expr()
                fld = ast.TField(self.span_from(name.span), name, ftype, optional)
                if name.name in seen:
                    self.reporter.report(
                        "F1014", name.span, f"duplicate field `{name.name}` in object type",
                        [Related(seen[name.name].name.span, "first given here")],
                    )
                else:
                    seen[name.name] = fld
                    fields.append(fld)
                if not self.accept_op(","):
                    break
            self.expect_op("}", "`,` or `}` in the object type" if not is_open else "`}` after `...`")
        return ast.TObject(self.span_from(opener.start), fields, is_open)
