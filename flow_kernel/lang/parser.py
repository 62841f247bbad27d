"""The parser: tokens → `ast.Module`, for files and notebook cells.

One mistake gives one diagnostic: the parser reports, raises `ParseError` and
resumes at the next statement or declaration boundary (`synchronize`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang import ast
from flow_kernel.lang.lexer import DocComment, tokenize
from flow_kernel.lang.parse_expr import ExprParser
from flow_kernel.lang.parser_base import ParseError
from flow_kernel.lang.tokens import Kind, Token
from flow_kernel.source import SourceFile

DECLARATION_WORDS = ("use", "type", "tool", "agent", "team", "workflow")
# By token text (which alone tells an operator or a newline, see `ParserBase.at_op`).
_SEPARATORS = frozenset(("\n", ";"))
_STATEMENT_ENDS = frozenset(("\n", ";", "}"))
SOFT_DECLARATION_WORDS = ("rubric", "panel")  # declare only as `rubric NAME {` at the top level
FN_WORD = "fn"  # declares only as `fn NAME (` at the top level
_BodyDecl = TypeVar("_BodyDecl", bound=ast.WorkflowDecl)


class Parser(ExprParser):
    def __init__(self, source: SourceFile, tokens: list[Token], reporter: Reporter, docs: list[DocComment] | None = None) -> None:
        super().__init__(source, tokens, reporter)
        self._docs = {d.line: d.text for d in docs or []}

    # -- module ------------------------------------------------------------------
    def module(self) -> ast.Module:
        uses: list[ast.Use] = []
        decls: list[ast.Decl] = []
        statements: list[ast.Stmt] = []
        while True:
            self._skip_statement_separators()
            tok = self.peek()
            if tok.kind is Kind.EOF:
                break
            start = self.i
            try:
                if tok.is_kw("use"):
                    uses.append(self.use())
                    self._end_of_statement()
                elif tok.is_kw(*DECLARATION_WORDS) or self._at_soft_declaration():
                    decls.append(self.declaration())
                    self._end_of_statement()
                else:
                    self._statement_into(statements)
            except ParseError:
                self.synchronize(start)
                stray = self.toks[self.i]
                if stray.is_op("}"):
                    # A `}` that closes nothing at the top level; said once, and not
                    # again when the error just reported was about this very token.
                    if stray is not self.last_error_token:
                        self.reporter.report("F1008", stray.span, "unmatched closing bracket `}`")
                    self.i += 1
        return ast.Module(self.src.span(0, len(self.src.text)), uses, decls, statements)

    def _statement_into(self, body: list[ast.Stmt]) -> None:
        stmt = self.statement()
        body.append(stmt)
        try:
            self._end_of_statement()
        except ParseError:
            if isinstance(stmt, ast.Let):
                # The binding stays (so later uses do not cascade); its value is broken.
                stmt.value = ast.ErrorExpr(stmt.value.span)
            raise

    def _skip_statement_separators(self) -> None:
        toks, i = self.toks, self.i
        while toks[i].text in _SEPARATORS:
            i += 1
        self.i = i

    def _end_of_statement(self) -> None:
        tok = self.toks[self.i]
        if tok.text in _STATEMENT_ENDS or tok.kind is Kind.EOF:
            return
        raise self.fail("the end of the statement (a new line or `;`)")

    def _doc_for(self, tok: Token) -> str | None:
        line = tok.span.start_pos.line - 1
        lines: list[str] = []
        while line in self._docs:
            lines.append(self._docs[line])
            line -= 1
        return "\n".join(reversed(lines)) if lines else None

    # -- declarations --------------------------------------------------------------
    def use(self) -> ast.Use:
        kw = self.advance()
        tok = self.peek()
        if tok.kind is not Kind.STRING or tok.value is None:
            raise self.fail('a file path string after `use`, e.g. `use "lib.flow"`')
        self.advance()
        return ast.Use(self.span_from(kw.start), str(tok.value), tok.span)

    def _at_soft_declaration(self) -> bool:
        """`rubric NAME {` / `panel NAME {` / `fn NAME (` at the top level. The words are not
        reserved (a program may still name a binding `rubric` or `fn`): they declare only in
        this shape."""
        tok = self.peek()
        if tok.kind is not Kind.IDENT:
            return False
        if tok.text == FN_WORD:
            return self.peek_at(1).kind is Kind.IDENT and self.peek_at(2).is_op("(")
        return (tok.text in SOFT_DECLARATION_WORDS
                and self.peek_at(1).kind is Kind.IDENT and self.peek_at(2).is_op("{"))

    def declaration(self) -> ast.Decl:
        kw = self.peek()
        doc = self._doc_for(kw)
        if kw.kind is Kind.IDENT and kw.text == FN_WORD:
            decl: ast.Decl = self.fn_decl()
        elif kw.kind is Kind.IDENT and kw.text in SOFT_DECLARATION_WORDS:
            self.advance()
            name = self.ident(f"a {kw.text} name")
            fields = self._fields(kw.text)
            node_type = ast.RubricDecl if kw.text == "rubric" else ast.PanelDecl
            decl = node_type(self.span_from(kw.start), name, fields)
        elif kw.is_kw("type"):
            decl = self.type_decl()
        elif kw.is_kw("tool"):
            decl = self.tool_decl()
        elif kw.is_kw("agent"):
            decl = self.agent_decl()
        elif kw.is_kw("team"):
            decl = self.team_decl()
        else:
            decl = self.workflow_decl()
        decl.doc = doc
        return decl

    def type_decl(self) -> ast.TypeDecl:
        kw = self.advance()
        name = self.ident("a type name")
        self.expect_op("=", "`=` after the type name")
        t = self.type_expr()
        return ast.TypeDecl(self.span_from(kw.start), name, t)

    def params(self) -> list[ast.Param]:
        opener = self.expect_op("(", "`(` opening the parameter list")
        params: list[ast.Param] = []
        with self.bracket(opener, newlines_ignored=True):
            while not self.at_op(")"):
                name = self.ident("a parameter name")
                optional = self.accept_op("?") is not None
                self.expect_op(":", "`:` and the parameter's type")
                t = self.type_expr()
                params.append(ast.Param(self.span_from(name.span), name, t, optional))
                if not self.accept_op(","):
                    break
            self.expect_op(")", "`,` or `)` in the parameter list")
        return params

    def tool_decl(self) -> ast.ToolDecl:
        kw = self.advance()
        name = self.ident("a tool name")
        params = self.params()
        returns = self.type_expr() if self.accept_op("->") else None
        mcp = self._mcp_source()
        approval = False
        if self.peek().is_word("requires"):
            self.advance()
            if not self.peek().is_word("approval"):
                raise self.fail("`approval` after `requires`")
            self.advance()
            approval = True
        if mcp is None:
            mcp = self._mcp_source()
        return ast.ToolDecl(self.span_from(kw.start), name, params, returns, approval, mcp=mcp)

    def _mcp_source(self) -> str | None:
        """`from mcp "server"` (or `"server/remote-name"`) after a tool's signature."""
        if not self.peek().is_word("from"):
            return None
        self.advance()
        if not self.peek().is_word("mcp"):
            raise self.fail('`mcp` after `from`, e.g. `from mcp "docs"`')
        self.advance()
        tok = self.peek()
        if tok.kind is not Kind.STRING or tok.value is None or not str(tok.value).strip():
            raise self.fail('the MCP server\'s name as a string, e.g. `from mcp "docs"` or `from mcp "docs/get-page"`')
        self.advance()
        return str(tok.value)

    def _fields(self, what: str) -> list[ast.AgentField]:
        opener = self.expect_op("{", f"`{{` opening the {what} body")
        fields: list[ast.AgentField] = []
        with self.bracket(opener, newlines_ignored=False):
            self._skip_separators()
            while not self.at_op("}"):
                name = self.plain_name(f"a {what} field name")
                self.expect_op(":", "`:` after the field name")
                value: ast.Expr | ast.TypeExpr = self.type_expr() if name.name == "output" else self.expr()
                fields.append(ast.AgentField(self.span_from(name.span), name, value))
                if not self._member_separator():
                    break
            self.expect_op("}", f"`}}` closing the {what}, or a new line between fields")
        return fields

    def agent_decl(self) -> ast.AgentDecl:
        kw = self.advance()
        name = self.ident("an agent name")
        fields = self._fields("agent")
        return ast.AgentDecl(self.span_from(kw.start), name, fields)

    def team_decl(self) -> ast.TeamDecl:
        kw = self.advance()
        name = self.ident("a team name")
        fields = self._fields("team")
        return ast.TeamDecl(self.span_from(kw.start), name, fields)

    def workflow_decl(self) -> ast.WorkflowDecl:
        return self._body_decl(ast.WorkflowDecl, "workflow")

    def fn_decl(self) -> ast.FnDecl:
        return self._body_decl(ast.FnDecl, "function")

    def _body_decl(self, node_type: type[_BodyDecl], what: str) -> _BodyDecl:
        """`KEYWORD NAME(params) [-> T] { body }`: a workflow or a function."""
        kw = self.advance()
        name = self.ident(f"a {what} name")
        params = self.params()
        returns = self.type_expr() if self.accept_op("->") else None
        body = self.block(f"the {what} body")
        return node_type(self.span_from(kw.start), name, params, returns, body)

    # -- blocks --------------------------------------------------------------------
    def block(self, what: str = "a block") -> ast.Block:
        opener = self.peek()
        if not opener.is_op("{"):
            raise self.fail(f"`{{` opening {what}")
        self.advance()
        body: list[ast.Stmt] = []
        with self.bracket(opener, newlines_ignored=False):
            while True:
                self._skip_statement_separators()
                tok = self.peek()
                if tok.text == "}":
                    self.advance()
                    break
                if tok.kind is Kind.EOF:
                    raise self.fail("`}`")
                start = self.i
                try:
                    self._statement_into(body)
                except ParseError:
                    self.synchronize(start)
        return ast.Block(self.span_from(opener.start), body)

    def lambda_block(self) -> ast.Block:
        return self.block("the lambda body")

    # -- statements ----------------------------------------------------------------
    def statement(self) -> ast.Stmt:
        tok = self.peek()
        if tok.kind is Kind.IDENT and tok.text == FN_WORD and self._at_soft_declaration():
            self.reporter.report("F1012", tok.span, "`fn` declarations are allowed only at the top level",
                                 hints=("move the function out of the body; it may take what it needs as parameters",))
            raise ParseError()
        if tok.kind is Kind.KEYWORD:
            handler = _STATEMENTS.get(tok.text)
            if handler is not None:
                return handler(self)
            if tok.text in DECLARATION_WORDS and len(self._modes) > 1:
                if tok.text == "use" and self._async_depth:
                    self.reporter.report("F5002", tok.span, "`use` is not allowed inside an `async` body")
                else:
                    self.reporter.report(
                        "F1012", tok.span, f"`{tok.text}` declarations are allowed only at the top level",
                        hints=("move the declaration out of the workflow body",),
                    )
                raise ParseError()
        return self.expression_statement()

    def expression_statement(self) -> ast.Stmt:
        start = self.peek()
        value = self.expr()
        if self.at_op("="):
            self.advance()
            rhs = self.expr()
            if not isinstance(value, ast.Name):
                self.reporter.report(
                    "F1013", value.span, "invalid assignment target: only a `var` name can be assigned",
                    hints=("values are immutable; build a new one, e.g. `x = merge(x, {a: 1})`",),
                )
                raise ParseError()
            return ast.Assign(self.span_from(start.start), value, rhs)
        return ast.ExprStmt(self.span_from(start.start), value)

    def _binding(self, mutable: bool) -> ast.Let:
        begin = self._index()
        kw = self.advance()
        name = self.ident("a binding name")
        t = self.type_expr() if self.accept_op(":") else None
        self.expect_op("=", f"`=` and a value for `{name.name}`")
        start = self.peek().start
        try:
            value = self.expr()
        except ParseError:
            # Keep the binding so later uses of the name do not cascade into F2001.
            self.synchronize(begin, consume_end=False)
            value = ast.ErrorExpr(self.span_from(start))
        return ast.Let(self.span_from(kw.start), name, t, value, mutable)

    def stmt_let(self) -> ast.Stmt:
        return self._binding(False)

    def stmt_var(self) -> ast.Stmt:
        return self._binding(True)

    def _accept_after_block(self, word: str) -> bool:
        """`else` / `catch` may start the next line after a closing `}`."""
        j = self.i
        while self.toks[j].kind is Kind.NEWLINE:
            j += 1
        if self.toks[j].is_kw(word):
            self.i = j
            return True
        return False

    def stmt_if(self) -> ast.Stmt:
        kw = self.advance()
        cond = self.expr()
        then = self.block("the `if` body")
        other: ast.Block | ast.If | None = None
        if self._accept_after_block("else"):
            self.advance()
            if self.at_kw("if"):
                nested = self.stmt_if()
                assert isinstance(nested, ast.If)
                other = nested
            else:
                other = self.block("the `else` body")
        return ast.If(self.span_from(kw.start), cond, then, other)

    def stmt_for(self) -> ast.Stmt:
        kw = self.advance()
        var = self.ident("a loop variable")
        index = self.ident("an index variable") if self.accept_op(",") else None
        if not self.accept_kw("in"):
            raise self.fail("`in` after the loop variable")
        iterable = self.expr()
        body = self.block("the loop body")
        return ast.For(self.span_from(kw.start), var, index, iterable, body)

    def stmt_while(self) -> ast.Stmt:
        kw = self.advance()
        cond = self.expr()
        body = self.block("the loop body")
        return ast.While(self.span_from(kw.start), cond, body)

    def stmt_break(self) -> ast.Stmt:
        return ast.Break(self.advance().span)

    def stmt_continue(self) -> ast.Stmt:
        return ast.Continue(self.advance().span)

    def stmt_stage(self) -> ast.Stmt:
        kw = self.advance()
        name = self.primary(postfix=False)
        body = self.block("the stage body")
        return ast.Stage(self.span_from(kw.start), name, body)

    def stmt_pipeline(self) -> ast.Stmt:
        kw = self.advance()
        name = self.primary(postfix=False)
        opener = self.expect_op("{", "`{` opening the pipeline")
        stages: list[ast.Stage] = []
        with self.bracket(opener, newlines_ignored=False):
            while True:
                self._skip_statement_separators()
                if self.accept_op("}"):
                    break
                tok = self.peek()
                if not tok.is_kw("stage"):
                    raise self.fail("`stage` (a pipeline holds only stages)")
                stage = self.stmt_stage()
                assert isinstance(stage, ast.Stage)
                stages.append(stage)
        return ast.Pipeline(self.span_from(kw.start), name, stages)

    def _check(self, require: bool) -> ast.Stmt:
        kw = self.advance()
        cond = self.prefix_form()
        message = self.prefix_form() if self.accept_op(":") else None
        return ast.Verify(self.span_from(kw.start), cond, message, require)

    def stmt_verify(self) -> ast.Stmt:
        return self._check(False)

    def stmt_require(self) -> ast.Stmt:
        return self._check(True)

    def stmt_emit(self) -> ast.Stmt:
        kw = self.advance()
        kind = self.plain_name("an event kind, e.g. `emit progress {done: 1}`")
        value = self.expr()
        return ast.Emit(self.span_from(kw.start), kind, value)

    def stmt_print(self) -> ast.Stmt:
        kw = self.advance()
        value = self.expr()
        return ast.Print(self.span_from(kw.start), value)

    def stmt_log(self) -> ast.Stmt:
        kw = self.advance()
        value = self.expr()
        return ast.Log(self.span_from(kw.start), value)

    def stmt_publish(self) -> ast.Stmt:
        kw = self.advance()
        # `publish primary "NAME" e`: `primary` is a word here only before a string (a
        # variable named `primary` stays a name: `publish primary e`)
        primary = self.peek().text == "primary" and self.peek_at(1).kind is Kind.STRING
        if primary:
            self.advance()
        name = self.primary(postfix=False)
        value = self.expr()
        return ast.Publish(self.span_from(kw.start), name, value, primary)

    def stmt_return(self) -> ast.Stmt:
        kw = self.advance()
        nxt = self.toks[self.i]
        if nxt.text in _STATEMENT_ENDS or nxt.kind is Kind.EOF:
            return ast.Return(kw.span, None)
        value = self.expr()
        return ast.Return(self.span_from(kw.start), value)

    def stmt_async(self) -> ast.Stmt:
        kw = self.advance()
        name = self.ident("a task name")
        self._async_depth += 1
        try:
            body = self.block("the `async` body")
        finally:
            self._async_depth -= 1
        return ast.Async(self.span_from(kw.start), name, body)

    def stmt_await(self) -> ast.Stmt:
        kw = self.advance()
        name = self.ident("a task name")
        return ast.Await(self.span_from(kw.start), name)

    def stmt_try(self) -> ast.Stmt:
        kw = self.advance()
        body = self.block("the `try` body")
        catches: list[ast.Catch] = []
        while self._accept_after_block("catch"):
            ckw = self.advance()
            codes: list[ast.StrLit] = []
            while self.peek().kind is Kind.STRING:
                tok = self.advance()
                codes.append(self.string(tok))
                if not self.accept_op(","):
                    break
            binding = self.ident("a name after `as`") if self.accept_kw("as") else None
            cbody = self.block("the `catch` body")
            catches.append(ast.Catch(self.span_from(ckw.start), codes, binding, cbody))
        if not catches:
            raise self.fail("`catch` after the `try` block")
        return ast.Try(self.span_from(kw.start), body, catches)

    def stmt_limits(self) -> ast.Stmt:
        kw = self.advance()
        entries = self.named_entries("limits", "limit", "`}` closing `limits`, or a new line between entries")
        return ast.Limits(self.span_from(kw.start), [ast.NamedValue(span, name, value) for span, name, value in entries])


def parse(source: SourceFile, reporter: Reporter) -> ast.Module:
    tokens, docs = tokenize(source, reporter)
    return Parser(source, tokens, reporter, docs).module()


# Statement keyword -> its parser method (`stmt_if` for `if`, …).
_STATEMENTS: dict[str, Callable[[Parser], ast.Stmt]] = {
    name.removeprefix("stmt_"): method for name, method in vars(Parser).items() if name.startswith("stmt_")
}
