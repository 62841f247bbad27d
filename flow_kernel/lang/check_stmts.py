"""Statements: bindings, control flow, stages, tasks, try/catch and the effects (§5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_kernel.diagnostics.model import Related
from flow_kernel.errors import FATAL, RUNTIME_CODES
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.check_common import closest
from flow_kernel.lang.env import Frame, TaskInfo
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.native_marks import mypyc_attr

if TYPE_CHECKING:
    from flow_kernel.lang.checker import Checker


@mypyc_attr(native_class=False)  # mixins: a plain class when compiled (flow_kernel/native_marks.py)
class StmtChecker:
    def block(self: Checker, stmts: list[ast.Stmt]) -> bool:
        """Check statements in order; True when the block always ends (return/break/continue)."""
        ends = False
        warned = False
        frame = self.frames[-1]
        branch = frame.branch  # an `if` whose arm ends puts the rest of this block in its other arm
        leaves = self.leaves
        try:
            for stmt in stmts:
                if ends and not warned:
                    self.report("F5007", stmt.span, "unreachable code")
                    warned = True
                exits = self.exits
                if self.stmt(stmt):
                    ends = True
                leaves[id(stmt)] = self.exits != exits
        finally:
            frame.branch = branch
        return ends

    def in_arm(self: Checker, s: ast.If, arm: int, block: ast.Block | ast.If) -> bool:
        """Check one arm of `if` `s` (0: then, 1: else); True when it always ends."""
        frame = self.frames[-1]
        outer = frame.branch
        frame.branch = (*outer, (id(s), arm))
        try:
            return self.s_If(block) if isinstance(block, ast.If) else self.scoped_block(block)
        finally:
            frame.branch = outer

    def scoped_block(self: Checker, block: ast.Block) -> bool:
        frame = self.frames[-1]
        frame.nesting += 1
        try:
            with self.new_scope():
                return self.block(block.body)
        finally:
            frame.nesting -= 1

    def stmt(self: Checker, s: ast.Stmt) -> bool:
        method = self.stmt_methods.get(type(s))
        if method is None:
            method = self.stmt_methods[type(s)] = getattr(type(self), "s_" + type(s).__name__)
        return bool(method(self, s))

    # -- bindings --------------------------------------------------------------------------
    def s_Let(self: Checker, s: ast.Let) -> bool:
        declared = self.resolve_type(s.type) if s.type is not None else None
        t = self.check_value(s.value, declared, expect_ok=True)
        if declared is not None:
            t = declared
        elif s.mutable:
            t = T.widen(t)
        binding = self.bind(s.name, t, mutable=s.mutable, kind="var" if s.mutable else "let")
        if isinstance(s.value, ast.ErrorExpr):
            binding.used = True  # its statement is already reported; stay quiet about it
        return False

    def s_Assign(self: Checker, s: ast.Assign) -> bool:
        name = s.target.name
        binding = self.scope.lookup(name)
        value_t = self.expr(s.value, expect_ok=True)
        if binding is None:
            self.report("F2005", s.target.span, f"assignment to undeclared variable `{name}`",
                        hints=(f"declare it first: `var {name} = …`", *closest(name, self.scope.visible_names())))
            return False
        if not binding.mutable:
            self.report("F2004", s.target.span, f"`{name}` is a `let` binding and cannot be reassigned",
                        related=[Related(binding.span, "bound here")], hints=(f"declare it with `var {name} = …`",))
            return False
        frame = self.frames[-1]
        if binding.frame is not frame and frame.kind in ("lambda", "async"):
            where = "a lambda" if frame.kind == "lambda" else "an `async` body"
            self.report("F5005", s.target.span, f"assigning the outer `var {name}` inside {where} is a race",
                        related=[Related(binding.span, "declared here")],
                        hints=("return the value instead and combine the results outside",))
            return False
        self.require_type(s.value, value_t, binding.type)
        return False

    # -- control flow ----------------------------------------------------------------------
    def s_If(self: Checker, s: ast.If) -> bool:
        self.condition(s.cond, "F3009", "the `if` condition")
        then_ends = self.in_arm(s, 0, s.then)
        other_ends = s.other is not None and self.in_arm(s, 1, s.other)
        if then_ends != other_ends:  # what follows runs only after the arm that does not end
            frame = self.frames[-1]
            frame.branch = (*frame.branch, (id(s), 1 if then_ends else 0))
        return then_ends and other_ends

    def s_For(self: Checker, s: ast.For) -> bool:
        t = self.expr(s.iterable)
        item = T.array_item(t)
        if item is None:
            self.report("F3010", s.iterable.span, f"`for` needs an array, found `{t}`",
                        hints=("use `range(n)` to count, or `entries(obj)` for an object",))
            item = T.ANY
        frame = self.frames[-1]
        frame.loop_depth += 1
        frame.nesting += 1
        try:
            with self.new_scope():
                self.bind(s.var, item, mutable=False, kind="loop")
                if s.index is not None:
                    self.bind(s.index, T.INT, mutable=False, kind="loop")
                self.block(s.body.body)
        finally:
            frame.loop_depth -= 1
            frame.nesting -= 1
        return False

    def s_While(self: Checker, s: ast.While) -> bool:
        self.condition(s.cond, "F3009", "the `while` condition")
        frame = self.frames[-1]
        frame.loop_depth += 1
        try:
            self.scoped_block(s.body)
        finally:
            frame.loop_depth -= 1
        return False

    def _loop_jump(self: Checker, s: ast.Stmt, word: str) -> bool:
        self.exits += 1
        if self.frames[-1].loop_depth == 0:
            self.report("F5008", s.span, f"`{word}` outside a loop")
        return True

    def s_Break(self: Checker, s: ast.Break) -> bool:
        return self._loop_jump(s, "break")

    def s_Continue(self: Checker, s: ast.Continue) -> bool:
        return self._loop_jump(s, "continue")

    def s_Return(self: Checker, s: ast.Return) -> bool:
        self.exits += 1
        frame = self.frames[-1]
        if frame.kind == "async":
            self.report("F5018", s.span, "`return` is not allowed inside an `async` body",
                        hints=("bind the value with `let`; it becomes a field of the task",))
            if s.value is not None:
                self.expr(s.value)
            return True
        if frame.kind == "lambda":
            frame.returns.append(self.expr(s.value, expect_ok=True) if s.value is not None else T.NULL)
            return True
        ctx = self.ctx
        if ctx is None or ctx.decl is None:
            self.report("F1011", s.span, "`return` outside a workflow",
                        hints=("the last expression statement of a cell is its result",))
            if s.value is not None:
                self.expr(s.value)
            return True
        # A workflow's return type is its output contract (F3007); a function's is a type (F3001).
        code, what = ("F3001", "a function") if isinstance(ctx.decl, ast.FnDecl) else ("F3007", "a workflow")
        if s.value is None:
            if ctx.returns is not None and not T.assignable(T.NULL, ctx.returns):
                self.report(code, s.span, f"`return` without a value in {what} that returns `{ctx.returns}`")
            return True
        self.check_value(s.value, ctx.returns, code=code, what="returned value", expect_ok=True)
        return True

    # -- stages --------------------------------------------------------------------------------
    def _stage_name(self: Checker, name: ast.Expr, what: str) -> str | None:
        value = literal_value(name)
        if value is NOT_LITERAL:
            self.check_value(name, T.STRING, what=f"{what} name")
            return None
        if not isinstance(value, str):
            self.report("F3001", name.span, f"a {what} name must be a string")
            return None
        if not value.strip():
            self.report("F5016", name.span, f"empty {what} name")
        return value

    def s_Stage(self: Checker, s: ast.Stage) -> bool:
        self._stage_name(s.name, "stage")
        if not s.body.body:
            self.report("F7006", s.span, "empty stage")
        # A stage does not open a scope: its bindings stay visible after it.
        return self.block(s.body.body)

    def s_Pipeline(self: Checker, s: ast.Pipeline) -> bool:
        self._stage_name(s.name, "pipeline")
        seen: dict[str, ast.Stage] = {}
        ends = False
        for stage in s.stages:
            name = literal_value(stage.name)
            if isinstance(name, str) and name in seen:
                self.report("F5015", stage.name.span, f"duplicate stage name \"{name}\" in this pipeline",
                            related=[Related(seen[name].name.span, "first stage with this name")])
            elif isinstance(name, str):
                seen[name] = stage
            if ends:
                self.report("F5007", stage.span, "unreachable code")
            ends = self.s_Stage(stage) or ends
        return ends

    # -- checks and effects --------------------------------------------------------------------------
    def s_Verify(self: Checker, s: ast.Verify) -> bool:
        word = "require" if s.require else "verify"
        self.condition(s.cond, "F3009", f"the `{word}` condition")
        if isinstance(literal_value(s.cond), bool) or _constant_logic(s.cond):
            self.report("F7005", s.cond.span, f"the `{word}` condition is constant")
        if s.message is not None:
            self.check_value(s.message, T.STRING, what="message")
        return False

    def s_Emit(self: Checker, s: ast.Emit) -> bool:
        self.effect(s.span, "`emit`")
        if s.kind.name != "progress":
            self.report("F5012", s.kind.span, f"unknown event kind `{s.kind.name}`: only `emit progress` exists",
                        hints=("use `log` for free-form messages",))
            self.expr(s.value)
            return False
        t = self.expr(s.value)
        obj = T.as_object(t)
        if obj is None and not T.is_any(t):
            self.report("F5013", s.value.span, f"the `progress` payload must be an object `{{done, total, message}}`, found `{t}`")
        elif obj is not None:
            for key, fld in obj.fields:
                if key in ("done", "total") and not T.is_numeric(fld.type):
                    self.report("F5013", s.value.span, f"`{key}` in a `progress` payload must be a number, found `{fld.type}`")
        return False

    def s_Print(self: Checker, s: ast.Print) -> bool:
        self.effect(s.span, "`print`")
        self.expr(s.value)
        return False

    def s_Log(self: Checker, s: ast.Log) -> bool:
        self.effect(s.span, "`log`")
        self.expr(s.value)
        return False

    def s_Publish(self: Checker, s: ast.Publish) -> bool:
        self.effect(s.span, "`publish`")
        self.check_value(s.name, T.STRING, what="artifact name")
        self.expr(s.value)
        if s.primary:
            self.primary_published(s)
        return False

    def primary_published(self: Checker, s: ast.Publish) -> None:
        """A run publishes one primary artifact: a second `publish primary` that the same
        workflow body (or top level) reaches on a path with the first is F6010. Two in the
        two arms of one `if` are fine; one in a loop, a lambda, an `async` body or a
        function, or in a workflow called twice, is counted at run time (`limit-exceeded`)."""
        frame = self.frames[-1]
        if frame.kind != "workflow":
            return
        first = next((span for path, span in frame.primaries if not _exclusive(path, frame.branch)), None)
        if first is not None:
            self.report("F6010", s.span, "a second `publish primary`: a run publishes at most one primary artifact",
                        related=[Related(first, "the first primary artifact")],
                        hints=("publish this one without `primary`, or put the two in the two arms of one `if`",))
        frame.primaries.append((frame.branch, s.span))

    def s_ExprStmt(self: Checker, s: ast.ExprStmt) -> bool:
        self.expr(s.expr, expect_ok=True)
        inner = s.expr.call if isinstance(s.expr, ast.Expect) else s.expr
        if self.is_agent_call(inner) and s is not self.result_statement:
            self.report("F7008", s.span, "the agent's result is never used",
                        hints=("bind it with `let`, or remove the call",))
        return False

    def s_Limits(self: Checker, s: ast.Limits) -> bool:
        ctx = self.ctx
        if ctx is not None and isinstance(ctx.decl, ast.FnDecl):
            self.report("F5030", s.span, f"a function has no `limits`: `{ctx.name}` runs within its caller's",
                        hints=("set the limits in the workflow or cell that calls it",))
            return False
        if ctx is not None and ctx.limits_seen:
            self.report("F6003", s.span, "more than one `limits` block", related=[Related(ctx.limits_seen, "the first one")])
        elif s is not self.first_statement:
            self.report("F5019", s.span, "`limits` must be the first statement of the workflow body")
        if ctx is not None and not ctx.limits_seen:
            ctx.limits_seen = s.span
        return False

    # -- tasks -----------------------------------------------------------------------------------
    def s_Async(self: Checker, s: ast.Async) -> bool:
        frame = self.frames[-1]
        ctx = self.ctx
        if any(f.kind == "async" for f in self.frames):
            self.report("F5002", s.span, "`async` is not allowed inside an `async` body")
        elif frame.kind != "workflow" or frame.nesting > 0:
            self.report("F5001", s.span, "`async` must be at the top level of a workflow or cell (stages and pipelines included)")
        name = s.name.name
        task = TaskInfo(name, s.name.span)
        if ctx is not None:
            ctx.bound.add(name)
        if ctx is not None and name in ctx.tasks:
            self.report("F5003", s.name.span, f"duplicate task name `{name}`", related=[Related(ctx.tasks[name].span, "first task with this name")])
        elif self.scope.lookup(name) is not None:
            binding = self.scope.lookup(name)
            assert binding is not None
            self.report("F2016", s.name.span, f"task name `{name}` collides with a binding", related=[Related(binding.span, "bound here")])
        body_frame = Frame("async")
        with self.frame(body_frame), self.new_scope() as scope:
            self.block(s.body.body)
            for bname, binding in scope.bindings.items():
                binding.used = True  # task fields are read through `task.name`
                task.fields[bname] = binding.type
        if ctx is not None and name not in ctx.tasks:
            ctx.tasks[name] = task
        return False

    def s_Await(self: Checker, s: ast.Await) -> bool:
        if any(f.kind == "async" for f in self.frames):
            self.report("F5002", s.span, "`await` is not allowed inside an `async` body")
            return False
        if any(f.kind == "lambda" for f in self.frames):
            self.report("F5001", s.span, "`await` cannot stand inside a lambda")
            return False
        ctx = self.ctx
        task = ctx.tasks.get(s.name.name) if ctx is not None else None
        if task is None:
            known = list(ctx.tasks) if ctx is not None else []
            self.report("F2015", s.name.span, f"unknown task `{s.name.name}`", hints=closest(s.name.name, known))
            return False
        task.awaited = True
        return False

    def s_Try(self: Checker, s: ast.Try) -> bool:
        body_ends = self.scoped_block(s.body)
        all_end = body_ends
        for catch in s.catches:
            for code_lit in catch.codes:
                code = code_lit.constant
                if code is None or code not in RUNTIME_CODES:
                    self.report("F5017", code_lit.span, f"unknown error code \"{code}\" in `catch`",
                                hints=closest(code or "", list(RUNTIME_CODES)))
                elif code in FATAL:
                    self.report("F5017", code_lit.span, f"\"{code}\" is fatal and can never be caught")
            frame = self.frames[-1]
            frame.nesting += 1
            try:
                with self.new_scope():
                    if catch.binding is not None:
                        self.bind(catch.binding, T.ERROR_OBJECT, mutable=False, kind="catch")
                    all_end = self.block(catch.body.body) and all_end
            finally:
                frame.nesting -= 1
        return all_end


_LOGIC = {"==", "!=", "<", "<=", ">", ">=", "and", "or", "in"}


def _constant_logic(node: ast.Expr) -> bool:
    """A comparison or `and`/`or`/`not` of literals only (`65 > 100`): the same every run."""
    if isinstance(node, ast.Unary):
        return node.op == "not" and _constant(node.operand)
    if isinstance(node, ast.Binary):
        return node.op in _LOGIC and _constant(node.left) and _constant(node.right)
    return False


def _constant(node: ast.Expr) -> bool:
    if literal_value(node) is not NOT_LITERAL:
        return True
    if isinstance(node, ast.Binary):
        return _constant(node.left) and _constant(node.right)
    if isinstance(node, ast.Unary):
        return _constant(node.operand)
    return False


def _exclusive(one: tuple[tuple[int, int], ...], other: tuple[tuple[int, int], ...]) -> bool:
    """Whether two statements at these `if`-arm paths never both run: they part at two arms of one `if`."""
    for a, b in zip(one, other, strict=False):
        if a != b:
            return a[0] == b[0]
    return False
