"""The checker: resolves names and types over a module, its `use`d files and the
session of earlier cells, and reports every F2xxx–F7xxx diagnostic.

The work is split by construct: declarations (`check_decls`), expressions
(`check_exprs`), calls and effects (`check_calls`) and statements (`check_stmts`);
this module holds the shared state and the order of the passes, and `check_common`
the helpers they share (the mixins import it, not each other).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from flow_kernel.diagnostics.model import Related
from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.check_calls import CallChecker
from flow_kernel.lang.check_decls import DeclChecker
from flow_kernel.lang.check_exprs import ExprChecker
from flow_kernel.lang.check_panels import PanelChecker
from flow_kernel.lang.check_prompts import PromptChecker
from flow_kernel.lang.check_stmts import StmtChecker
from flow_kernel.lang.env import Binding, DeclEntry, Frame, Scope, WorkflowContext
from flow_kernel.lang.fn_effects import FnEffect
from flow_kernel.lang.graphs import find_cycles
from flow_kernel.native_marks import mypyc_attr
from flow_kernel.source import SourceFile, Span

DECL_KINDS = {ast.TypeDecl: "type", ast.ToolDecl: "tool", ast.AgentDecl: "agent", ast.TeamDecl: "team", ast.WorkflowDecl: "workflow",
              ast.RubricDecl: "rubric", ast.PanelDecl: "panel", ast.FnDecl: "fn"}


def decl_kind(node: ast.Decl) -> str:
    return DECL_KINDS[type(node)]


class _InScope:
    """The context manager of `Checker.new_scope`: a plain class, because the checker opens
    a scope per block and lambda and a generator-based one costs several times more."""

    __slots__ = ("checker", "scope")

    def __init__(self, checker: Checker) -> None:
        self.checker = checker

    def __enter__(self) -> Scope:
        checker = self.checker
        scope = self.scope = Scope(checker.scope)
        checker.scope = scope
        return scope

    def __exit__(self, *exc: object) -> None:
        checker, scope = self.checker, self.scope
        checker.scope = scope.parent or checker.root
        checker._warn_unused(scope)


class _InFrame:
    """The context manager of `Checker.frame` (a plain class, like `_InScope`)."""

    __slots__ = ("frame", "frames")

    def __init__(self, frames: list[Frame], frame: Frame) -> None:
        self.frames = frames
        self.frame = frame

    def __enter__(self) -> Frame:
        self.frames.append(self.frame)
        return self.frame

    def __exit__(self, *exc: object) -> None:
        self.frames.pop()


@mypyc_attr(native_class=False)  # the mixins combined: a plain class when compiled (flow_kernel/native_marks.py)
class Checker(DeclChecker, ExprChecker, CallChecker, StmtChecker, PromptChecker, PanelChecker):
    # Node class -> its `x_…` / `s_…` method, filled as node classes are met (`expr`, `stmt`).
    expr_methods: ClassVar[dict[type, Callable[[Any, Any], T.Type]]] = {}
    stmt_methods: ClassVar[dict[type, Callable[[Any, Any], bool]]] = {}

    def __init__(self, reporter: Reporter, reportable: set[SourceFile], *, file_mode: bool) -> None:
        self.reporter = reporter
        self.reportable = {id(s) for s in reportable}
        self.file_mode = file_mode
        self.decls: dict[str, DeclEntry] = {}
        self.root = Scope(None)
        self.scope = self.root
        self.frames: list[Frame] = [Frame("workflow")]
        self.ctx: WorkflowContext | None = None
        self.it_types: list[T.Type] = []
        self.parallel_depth = 0
        self.first_statement: ast.Stmt | None = None
        self.result_statement: ast.Stmt | None = None
        self.toplevel_names: set[str] = set()
        self.toplevel_bindings: dict[str, Binding] = {}
        self._resolving: DeclEntry | None = None
        # Facts the code generator needs beyond the tree: which field reads are of
        # declared optional fields (an absent key reads as null) and the output type
        # of every agent call (its schema is the call's output contract).
        self.optional_reads: set[int] = set()
        self.call_outputs: dict[int, T.Type] = {}
        self.prompt_fills: dict[int, list[str | int]] = {}  # `file(…)` expressions (check_prompts.py)
        # Each user function's first effect, through the functions it calls (fn_effects.py).
        self.fn_effects: dict[str, FnEffect] = {}
        # For the budget pass: `exits` counts the `return`/`break`/`continue` statements
        # checked so far outside lambdas, and `leaves` maps the id of every statement a
        # block checked to whether one was among it (it may leave its block).
        self.exits: int = 0
        self.reports: int = 0  # calls of `report`, those about other sources' text included
        self.leaves: dict[int, bool] = {}
        self.decl_kinds: dict[str, str] = {}  # name -> kind of every declaration, for the budget pass

    # -- reporting ---------------------------------------------------------------------------
    def report(self, code: str, span: Span, message: str, related: list[Related] | tuple[Related, ...] = (),
               hints: tuple[str, ...] | list[str] = ()) -> None:
        self.reports += 1
        # Declarations carried over from earlier cells were reported when their cell ran.
        if id(span.source) not in self.reportable:
            return
        self.reporter.report(code, span, message, [r for r in related if r is not None], hints)

    # -- scopes and frames ----------------------------------------------------------------------
    def new_scope(self) -> _InScope:
        """`with self.new_scope() as scope:` — a scope for a block; its unused bindings are
        reported as it closes."""
        return _InScope(self)

    def frame(self, frame: Frame) -> _InFrame:
        return _InFrame(self.frames, frame)

    def _warn_unused(self, scope: Scope) -> None:
        for binding in scope.bindings.values():
            if binding.kind in ("let", "var") and not binding.used and not binding.name.startswith("_"):
                self.report("F7001", binding.span, f"`{binding.name}` is never used",
                            hints=(f"remove it, or name it `_{binding.name}` to keep it",))

    def bind(self, name: ast.Ident, t: T.Type, *, mutable: bool, kind: str) -> Binding:
        existing = self.scope.bindings.get(name.name)
        if name.name in self.decls or name.name in BUILTINS:
            what = f"the {self.decls[name.name].kind} `{name.name}`" if name.name in self.decls else f"the builtin `{name.name}`"
            related = [Related(self.decls[name.name].span, "declared here")] if name.name in self.decls else []
            self.report("F2006", name.span, f"`{name.name}` shadows {what}", related=related, hints=(f"rename it, e.g. `{name.name}_value`",))
        elif existing is not None:
            self.report("F2003", name.span, f"`{name.name}` is already bound in this scope",
                        related=[Related(existing.span, "first bound here")],
                        hints=("use `var` and assign to change a value",) if not existing.mutable else ())
        elif self.ctx is not None and name.name in self.ctx.tasks:
            self.report("F2016", name.span, f"`{name.name}` collides with the task of the same name",
                        related=[Related(self.ctx.tasks[name.name].span, "the task starts here")])
        if self.ctx is not None:
            self.ctx.bound.add(name.name)
        binding = Binding(name.name, t, mutable, name.span, kind, self.frames[-1], used=kind not in ("let", "var"))
        self.scope.bindings[name.name] = binding
        return binding

    # -- passes ---------------------------------------------------------------------------------
    def check_declarations(self) -> None:
        self.declare_types()
        for kind, method in (("tool", self.declare_tool), ("agent", self.declare_agent), ("team", self.declare_team),
                             ("rubric", self.declare_rubric), ("panel", self.declare_panel),
                             ("workflow", self.declare_workflow), ("fn", self.declare_workflow)):
            for entry in list(self.decls.values()):
                if entry.kind == kind:
                    method(entry)

    def check_workflow(self, entry: DeclEntry) -> WorkflowContext:
        """Check a workflow's or a user function's body (a function runs in its caller's
        frame: it has no `limits` of its own, F5030, and no tasks, F5001)."""
        node = entry.node
        assert isinstance(node, ast.WorkflowDecl) and entry.workflow is not None
        is_fn = isinstance(node, ast.FnDecl)
        ctx = WorkflowContext(entry.name, node, entry.workflow.returns)
        self.ctx = ctx
        self.scope = Scope(self.root)
        body = node.body.body
        self.first_statement = body[0] if body else None
        self.result_statement = None
        if body and isinstance(body[0], ast.Limits) and not is_fn:
            self.apply_limits(body[0], ctx)
        with self.frame(Frame("fn" if is_fn else "workflow")), self.new_scope():
            seen: dict[str, ast.Param] = {}
            for p, (_, t, optional) in zip(node.params, entry.workflow.params, strict=True):
                if p.name.name in seen:
                    self.report("F2003", p.name.span, f"duplicate parameter `{p.name.name}`",
                                related=[Related(seen[p.name.name].name.span, "first declared here")])
                    continue
                seen[p.name.name] = p
                self.bind(p.name, T.union([t, T.NULL]) if optional else t, mutable=False, kind="param")
            ends = self.block(body)
        if not is_fn:
            self.budget_report(ctx, body, node.name.span)
        if entry.workflow.returns is not None and not ends and not self.syntax_error_within(node.span):
            self.report("F3008", node.name.span, f"not every path of `{entry.name}` returns a value",
                        hints=(f"end the body with `return …` of type `{entry.workflow.returns}`",))
        self.ctx = None
        self.scope = self.root
        return ctx

    def syntax_error_within(self, span: Span) -> bool:
        """Whether a syntax error was reported inside `span`: a statement that did not
        parse is missing from the tree, so what the checker says of the paths through it
        (F3008) would only repeat that error."""
        return any(d.code.startswith("F1") and d.is_error and d.span.source is span.source
                   and span.start <= d.span.start < span.end for d in self.reporter.diagnostics)

    def check_toplevel(self, statements: list[ast.Stmt], session_scope: Scope) -> WorkflowContext:
        ctx = WorkflowContext("<top level>", None, None)
        self.ctx = ctx
        self.scope = Scope(session_scope)
        self.first_statement = statements[0] if statements else None
        last = statements[-1] if statements else None
        self.result_statement = last if isinstance(last, ast.ExprStmt) else None
        if statements and isinstance(statements[0], ast.Limits):
            self.apply_limits(statements[0], ctx)
        cell_scope = self.scope
        self.block(statements)
        if statements:
            self.budget_report(ctx, statements, statements[0].span)
        self.toplevel_bindings = dict(cell_scope.bindings)
        self.ctx = None
        self.scope = self.root
        return ctx

    def check_recursion(self, contexts: list[WorkflowContext]) -> None:
        """F2009 for a cycle of calls through a workflow; functions alone may recurse."""
        spans = {(c.name, callee): span for c in contexts for callee, span in reversed(c.calls)}
        edges = {c.name: list(dict.fromkeys(callee for callee, _ in c.calls)) for c in contexts}
        for cycle in find_cycles([c.name for c in contexts], edges):
            if all(self.decls[name].kind == "fn" for name in cycle):
                continue
            # Said at a workflow's call, the one that cannot recurse.
            while self.decls[cycle[0]].kind == "fn":
                cycle = [*cycle[1:], cycle[0]]
            head, nxt = cycle[0], cycle[1 % len(cycle)]
            chain = " → ".join([*cycle, head])
            self.report("F2009", spans[(head, nxt)], f"recursive workflow call: {chain}",
                        hints=("workflows may not call themselves, directly or indirectly; use a loop",))

    def warn_unused_declarations(self) -> None:
        for entry in self.decls.values():
            if entry.origin == "cell" and entry.kind != "workflow" and not entry.used:
                self.report("F7002", entry.span, f"{entry.kind} `{entry.name}` is never used")
