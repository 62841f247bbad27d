"""Code generation: a checked Flow module → a restricted Python module.

The output defines `async def main(rt, args)`. Every operation on a value goes
through the runtime object `rt` (the ABI of `flow_kernel/sandbox/bootstrap/flowbox/
runtime.py`; `exact_ints.py` then writes `+ - *` and comparisons inline where both
operands can only be ints): generated code never reads an attribute, calls a value,
indexes or imports anything itself, so the verifier (`verify.py`) can check it against
a short allow-list. The generator builds Python `ast` nodes rather than text, so no Flow
string can ever become code; `sourcemap.py` turns the nodes' origins into a map
from generated positions back to Flow spans.

Naming: Flow bindings become `v_<name>[_<n>]` (a suffix when an inner scope shadows
an outer name), workflows and user functions `w_<n>`, lambdas `l_<n>`, parallel branches `p_<n>`,
`async` bodies `t_<n>` with their handles `k_<n>`, expectation checks `x_<n>`,
caught errors `e_<n>`, temporaries `q_<n>` and unused lambda parameters `d_<n>`.
"""

from __future__ import annotations

import ast as py
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from flow_kernel.errors import FATAL, RUNTIME_CODES
from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.codegen_calls import LOAD, STORE, CallCodegen
from flow_kernel.lang.env import DEFAULT_LIMITS
from flow_kernel.lang.exact_ints import OPERATORS, IntTracker
from flow_kernel.lang.schema import schema_for_decl
from flow_kernel.source import Span

CATCHABLE = tuple(c for c in RUNTIME_CODES if c not in FATAL)
# JSON Schema types a value in the sandbox can be seen to satisfy by its Python class alone
# (flowbox/local_checks.py `LOCAL_TYPES` holds the classes); "any" stands for the empty schema.
LOCAL_KINDS = frozenset({"integer", "string", "boolean"})


def local_checks(schemas: Any, params: list[str]) -> list[Any]:
    """`[input, output]` for a workflow's row of the table `rt.start` reads: `input` the
    JSON type of each parameter, in order, when the input schema is an object of exactly
    those parameters, all required, each `{"type": t}` for a t in LOCAL_KINDS or `{}`
    ("any"); `output` likewise for the output schema (its `$schema` aside); None where a
    schema is anything else. A value whose class is the type's passes the schema whatever
    it holds, and every value passes `{}`, so the sandbox need not ask the host to validate
    it; any other value is still asked about (flowbox/runtime.py `Runtime.workflow`)."""
    if not isinstance(schemas, dict):
        return [None, None]
    inputs = schemas.get("input")
    kinds = None
    if (isinstance(inputs, dict) and inputs.get("required") == params and inputs.get("additionalProperties") is False
            and isinstance(inputs.get("properties"), dict) and list(inputs["properties"]) == params):
        found = [_local_kind(inputs["properties"][name]) for name in params]
        kinds = found if params and None not in found else None
    output = schemas.get("output")
    return [kinds, _local_kind({k: v for k, v in output.items() if k != "$schema"}) if isinstance(output, dict) else None]


def _local_kind(schema: Any) -> str | None:
    """t when `schema` is exactly `{"type": t}` with t in LOCAL_KINDS, "any" when it is `{}`,
    else None."""
    if schema == {}:
        return "any"
    if isinstance(schema, dict) and len(schema) == 1 and schema.get("type") in LOCAL_KINDS:
        return str(schema["type"])
    return None


@dataclass
class _Scope:
    parent: _Scope | None
    names: dict[str, str] = field(default_factory=dict)
    cell: bool = False  # the top-level scope of a cell: its bindings persist in the session
    boundary: _Frame | None = None  # set on the first scope of an `async` body


@dataclass
class _Frame:
    """An `async` body: the outer names it reads become parameters (a snapshot at launch)."""

    captured: dict[str, str] = field(default_factory=dict)


@dataclass
class GeneratedModule:
    tree: py.Module
    origins: dict[int, Span]  # id(python node) -> the Flow span it came from
    entry_limits: dict[str, int | float]


class CodeGenerator(CallCodegen):
    def __init__(self, result: CheckResult, session_names: set[str] | None = None, *, origins: bool = True) -> None:
        self.result = result
        self.decls = result.decls
        self.session_names = session_names or set()
        # Without `origins`, no Flow span is recorded (the compiler's first pass: the source
        # map records positions on its first lookup, from the module generated again).
        self.recording = origins
        self.origins: dict[int, Span] = {}
        self.counter = 0
        self.scope = _Scope(None)
        self.prelude: list[py.stmt] = []  # helper functions the current statement needs
        self.it_names: list[str] = []
        self.tasks: dict[str, str] = {}  # Flow task name -> handle variable
        self.session_loads: dict[str, str] = {}
        self.workflow_names: dict[str, str] = {}
        self.ints = IntTracker()  # bindings and operator calls, for exact_ints.py
        # One `rt.<name>` node per name, shared by every call of it in the module (a third
        # of the module's nodes otherwise; they hold no Flow origin and are never changed).
        self.rt_names: dict[str, py.Attribute] = {}
        # Likewise one tree per JSON literal (`literal`), and per agent output's schema: a
        # fifth of the module's nodes otherwise (the same few limits, names and schemas).
        self.literals: dict[object, py.expr] = {}
        self.schemas: dict[int, py.expr] = {}
        # With no origins to record, a node needs no identity of its own: one `Name` per
        # name read, one `Constant` per value, one `rt.step()` statement, each shared by all its places (a fifth of
        # the remaining nodes). Recording, each place has its own node, for its own span.
        self.loads: dict[str, py.Name] | None = None if origins else {}
        self.constants: dict[object, py.Constant] | None = None if origins else {}
        self.shared_step: py.stmt | None = None if origins else py.Expr(self.rt("step"))

    # -- helpers -------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def at(self, node: py.AST, span: Span) -> py.AST:
        if self.recording:
            self.origins[id(node)] = span
        return node

    def rt(self, name: str, *args: py.expr, span: Span | None = None) -> py.expr:
        func = self.rt_names.get(name)
        if func is None:
            func = self.rt_names[name] = py.Attribute(py.Name("rt", LOAD), name, LOAD)
        call = py.Call(func, list(args), [])
        if span is not None and self.recording:
            self.origins[id(call)] = span
        return call

    def await_(self, call: py.expr, span: Span) -> py.expr:
        node = py.Await(call)
        self.at(node, span)
        return node

    @staticmethod
    def const(value: object) -> py.expr:
        if isinstance(value, list):
            return py.List([CodeGenerator.const(v) for v in value], LOAD)
        if isinstance(value, dict):
            return py.Dict([py.Constant(k) for k in value], [CodeGenerator.const(v) for v in value.values()])
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            return py.UnaryOp(py.USub(), py.Constant(-value))
        assert value is None or isinstance(value, (str, int, float, bool))
        return py.Constant(value)

    def constant(self, value: str | int | float | None) -> py.Constant:
        """`py.Constant(value)`; with no origins to record, one node per value (and type:
        `1`, `1.0` and `True` are equal in Python; floats by their text, `0.0 == -0.0`)."""
        constants = self.constants
        if constants is None:
            return py.Constant(value)
        key = (value.__class__, repr(value) if value.__class__ is float else value)
        node = constants.get(key)
        if node is None:
            node = constants[key] = py.Constant(value)
        return node

    def literal(self, value: object) -> py.expr:
        """`const(value)`, one tree for all equal values in the module: built, written
        (the writer reuses a written node's text) and freed once. Nothing in it has a
        Flow origin, so it can stand in many places."""
        if not isinstance(value, (list, dict)):
            return self.const(value)
        key = _literal_key(value)
        node = self.literals.get(key)
        if node is None:
            node = self.literals[key] = self.const(value)
        return node

    def load(self, name: str) -> py.Name:
        loads = self.loads
        if loads is None:
            return py.Name(name, LOAD)
        node = loads.get(name)
        if node is None:
            node = loads[name] = py.Name(name, LOAD)
        return node

    def store(self, name: str) -> py.Name:
        self.ints.stored(name)  # every binding is counted: one whose value is not reported is not an int
        return py.Name(name, STORE)

    def stmt_expr(self, value: py.expr, span: Span) -> py.stmt:
        node = py.Expr(value)
        self.at(node, span)
        return node

    def step(self, span: Span) -> py.stmt:
        if self.shared_step is not None:
            return self.shared_step
        return self.stmt_expr(self.rt("step", span=span), span)

    def async_def(self, name: str, params: list[str], body: list[py.stmt]) -> py.AsyncFunctionDef:
        self.ints.parameters(params)
        args = py.arguments([], [py.arg(p) for p in params], None, [], [], None, [])
        fn = py.AsyncFunctionDef(name, args, body or [py.Pass()], [], None)
        setattr(fn, "type_params", [])  # noqa: B010 - a field from Python 3.12 on, unknown to 3.11
        return fn

    # -- scopes --------------------------------------------------------------------------
    def push(self, *, cell: bool = False, boundary: _Frame | None = None) -> _Scope:
        self.scope = _Scope(self.scope, cell=cell, boundary=boundary)
        return self.scope

    def pop(self) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent

    def bind(self, name: str) -> str:
        python = f"v_{name}"
        if self._taken(python):
            self.counter += 1
            python = f"v_{name}_{self.counter}"
        self.scope.names[name] = python
        return python

    def _taken(self, python: str) -> bool:
        scope: _Scope | None = self.scope
        while scope is not None:
            if python in scope.names.values():
                return True
            scope = scope.parent
        return python in self.session_loads.values()

    def lookup(self, name: str) -> tuple[str, _Scope | None]:
        scope: _Scope | None = self.scope
        frames: list[_Frame] = []
        while scope is not None:
            python = scope.names.get(name)
            if python is not None:
                for frame in frames:  # read from inside an `async` body: capture it
                    frame.captured.setdefault(python, python)
                return python, scope
            if scope.boundary is not None:
                frames.append(scope.boundary)
            scope = scope.parent
        if name in self.session_names:
            python = self.session_loads.setdefault(name, f"v_{name}")
            for frame in frames:
                frame.captured.setdefault(python, python)
            return python, None
        raise AssertionError(f"unresolved name {name!r} in checked code")

    # -- the module ----------------------------------------------------------------------
    def module(self) -> GeneratedModule:
        body: list[py.stmt] = []
        workflows = [e for e in self.decls.values() if e.kind == "workflow"]
        functions = [e for e in self.decls.values() if e.kind == "fn"]
        for i, entry in enumerate([*workflows, *functions]):
            self.workflow_names[entry.name] = f"w_{i}"
        for entry in functions:  # not entry points: no row in the table `rt.start` reads
            assert isinstance(entry.node, ast.FnDecl)
            body.append(self.workflow(entry.node))
        table_keys: list[py.expr | None] = []
        table_values: list[py.expr] = []
        for entry in workflows:
            node = entry.node
            assert isinstance(node, ast.WorkflowDecl)
            body.append(self.workflow(node))
            ctx = self.result.workflows.get(entry.name)
            limits = dict(ctx.limits) if ctx is not None else dict(DEFAULT_LIMITS)
            params = [p.name.name for p in node.params]
            table_keys.append(self.constant(entry.name))
            row = [self.load(self.workflow_names[entry.name]), self.literal(params), self.literal(limits)]
            checks = local_checks(schema_for_decl(entry), params)
            if checks != [None, None]:
                row.append(self.literal(checks))
            table_values.append(py.List(row, LOAD))
        body.append(self.cell())
        toplevel = self.result.toplevel
        entry_limits: dict[str, int | float] = dict(toplevel.limits) if toplevel is not None else dict(DEFAULT_LIMITS)
        start = self.rt("start", self.load("args"), self.load("c_main"), self.literal(entry_limits),
                        py.Dict(table_keys, table_values))
        body.append(self.async_def("main", ["rt", "args"], [py.Return(py.Await(start))]))
        tree = py.Module(body, [])
        self.ints.inline()
        return GeneratedModule(tree, self.origins, entry_limits)

    def workflow(self, node: ast.WorkflowDecl) -> py.AsyncFunctionDef:
        saved_tasks, self.tasks = self.tasks, {}
        self.push()
        params = [self.bind(p.name.name) for p in node.params]
        stmts = self.block(node.body.body)
        self.pop()
        self.tasks = saved_tasks
        stmts.append(py.Return(self.constant(None)))
        fn = self.async_def(self.workflow_names[node.name.name], ["rt", *params], stmts)
        self.at(fn, node.name.span)
        return fn

    def cell(self) -> py.AsyncFunctionDef:
        statements = self.result.module.statements
        self.push(cell=True)
        result_stmt = statements[-1] if statements and isinstance(statements[-1], ast.ExprStmt) else None
        body = self.block(statements[:-1] if result_stmt is not None else statements)
        if result_stmt is not None:
            assert isinstance(result_stmt, ast.ExprStmt)
            value = self.expr(result_stmt.expr)
            body.extend(self.take_prelude())
            body.append(self.step(result_stmt.span))
            ret = py.Return(value)
            self.at(ret, result_stmt.span)
            body.append(ret)
        else:
            body.append(py.Return(self.constant(None)))
        self.pop()
        loads = [py.Assign([self.store(python)], self.rt("session", self.constant(name)))
                 for name, python in self.session_loads.items()]
        return self.async_def("c_main", ["rt"], [*loads, *body])

    # -- statements ----------------------------------------------------------------------
    def take_prelude(self) -> list[py.stmt]:
        out, self.prelude = self.prelude, []
        return out

    def block(self, stmts: list[ast.Stmt]) -> list[py.stmt]:
        out: list[py.stmt] = []
        saved, self.prelude = self.prelude, []
        for s in stmts:
            if isinstance(s, ast.Limits):
                continue  # applied by `rt.start` / `rt.workflow` from the limits table
            generated = self.stmt(s)
            out.extend(self.take_prelude())
            out.append(self.step(s.span))
            out.extend(generated)
        self.prelude = saved
        return out

    def scoped(self, block: ast.Block) -> list[py.stmt]:
        self.push()
        try:
            return self.block(block.body) or [py.Pass()]
        finally:
            self.pop()

    def stmt(self, s: ast.Stmt) -> list[py.stmt]:
        method = _STMT_METHODS.get(s.__class__) or _method(_STMT_METHODS, "s_", s.__class__)
        out: list[py.stmt] = method(self, s)
        if self.recording:
            origins = self.origins
            for node in out:
                if id(node) not in origins:
                    origins[id(node)] = s.span
        return out

    def _persisting(self, python: str, scope: _Scope | None, name: str, value: py.expr) -> py.expr:
        if scope is None or scope.cell:
            return self.rt("bind", self.constant(name), value)
        return value

    def s_Let(self, s: ast.Let) -> list[py.stmt]:
        value = self.expr(s.value)
        python = self.bind(s.name.name)
        value = self._persisting(python, self.scope, s.name.name, value)
        self.ints.bound(python, value)
        return [py.Assign([self.store(python)], value)]

    def s_Assign(self, s: ast.Assign) -> list[py.stmt]:
        value = self.expr(s.value)
        python, scope = self.lookup(s.target.name)
        value = self._persisting(python, scope, s.target.name, value)
        self.ints.bound(python, value)
        return [py.Assign([self.store(python)], value)]

    def s_If(self, s: ast.If) -> list[py.stmt]:
        cond = self.truth(s.cond)
        then = self.scoped(s.then)
        other: list[py.stmt] = []
        if isinstance(s.other, ast.If):
            saved, self.prelude = self.prelude, []
            inner = self.stmt(s.other)
            other = [*self.take_prelude(), self.step(s.other.span), *inner]
            self.prelude = saved
        elif isinstance(s.other, ast.Block):
            other = self.scoped(s.other)
        return [py.If(cond, then, other)]

    def s_For(self, s: ast.For) -> list[py.stmt]:
        # A loop that names no index iterates the list itself (`rt.each`): no pair per item.
        iterable = self.rt("iterate" if s.index is not None else "each", self.expr(s.iterable), span=s.iterable.span)
        self.push()
        item = self.bind(s.var.name)
        index = self.bind(s.index.name) if s.index is not None else None
        body = self.block(s.body.body) or [py.Pass()]
        self.pop()
        target: py.expr = (py.Tuple([self.store(index), self.store(item)], STORE) if index is not None
                           else self.store(item))
        self.ints.bound_for(index, item, iterable)
        return [py.For(target, iterable, body, [])]

    def s_While(self, s: ast.While) -> list[py.stmt]:
        # The condition counts a step per iteration, so `while true {}` still meets `steps`.
        saved, self.prelude = self.prelude, []
        cond = self.rt("loop", self.expr(s.cond), span=s.cond.span)
        helpers = self.take_prelude()
        self.prelude = saved
        self.prelude.extend(helpers)
        return [py.While(cond, self.scoped(s.body), [])]

    def s_Break(self, s: ast.Break) -> list[py.stmt]:
        return [py.Break()]

    def s_Continue(self, s: ast.Continue) -> list[py.stmt]:
        return [py.Continue()]

    def s_Stage(self, s: ast.Stage) -> list[py.stmt]:
        name = self.expr(s.name)
        body = self.block(s.body.body) or [py.Pass()]
        return [py.With([py.withitem(self.rt("stage", name, span=s.name.span))], body)]

    def s_Pipeline(self, s: ast.Pipeline) -> list[py.stmt]:
        name = self.expr(s.name)
        body: list[py.stmt] = []
        for stage in s.stages:
            generated = self.stmt(stage)
            body.extend(self.take_prelude())
            body.append(self.step(stage.span))
            body.extend(generated)
        return [py.With([py.withitem(self.rt("pipeline", name, span=s.name.span))], body or [py.Pass()])]

    def s_Verify(self, s: ast.Verify) -> list[py.stmt]:
        cond = self.expr(s.cond)
        message = self.expr(s.message) if s.message is not None else self.constant(None)
        op = "require" if s.require else "verify"
        return [self.stmt_expr(self.rt(op, cond, message, self.constant(s.cond.span.text), span=s.span), s.span)]

    def s_Emit(self, s: ast.Emit) -> list[py.stmt]:
        return [self.stmt_expr(self.rt("emit", self.constant(s.kind.name), self.expr(s.value), span=s.span), s.span)]

    def s_Print(self, s: ast.Print) -> list[py.stmt]:
        return [self.stmt_expr(self.rt("print", self.expr(s.value), span=s.span), s.span)]

    def s_Log(self, s: ast.Log) -> list[py.stmt]:
        return [self.stmt_expr(self.rt("log", self.expr(s.value), span=s.span), s.span)]

    def s_Publish(self, s: ast.Publish) -> list[py.stmt]:
        primary = [self.constant(True)] if s.primary else []
        call = self.rt("publish", self.expr(s.name), self.expr(s.value), *primary, span=s.span)
        return [self.stmt_expr(call, s.span)]

    def s_Return(self, s: ast.Return) -> list[py.stmt]:
        return [py.Return(self.expr(s.value) if s.value is not None else self.constant(None))]

    def s_ExprStmt(self, s: ast.ExprStmt) -> list[py.stmt]:
        return [self.stmt_expr(self.expr(s.expr), s.span)]

    def s_Async(self, s: ast.Async) -> list[py.stmt]:
        frame = _Frame()
        saved, self.prelude = self.prelude, []
        self.push(boundary=frame)
        body = self.block(s.body.body)
        fields = dict(self.scope.names)
        self.pop()
        self.prelude = saved
        body.append(py.Return(py.Dict([self.constant(k) for k in fields], [self.load(v) for v in fields.values()])))
        fn_name, handle = self.fresh("t"), self.fresh("k")
        captured = list(frame.captured)
        self.prelude.append(self.async_def(fn_name, captured, body))
        self.tasks[s.name.name] = handle
        launch = py.Call(self.load(fn_name), [self.load(c) for c in captured], [])
        return [py.Assign([self.store(handle)], self.rt("task", self.constant(s.name.name), launch, span=s.span))]

    def s_Await(self, s: ast.Await) -> list[py.stmt]:
        handle = self.tasks[s.name.name]
        return [self.stmt_expr(self.await_(self.rt("await_task", self.load(handle), span=s.span), s.span), s.span)]

    def s_Try(self, s: ast.Try) -> list[py.stmt]:
        body = self.scoped(s.body)
        err = self.fresh("e")
        chain: list[py.stmt] = [py.Raise(None, None)]
        for catch in reversed(s.catches):
            codes = [c.constant for c in catch.codes if c.constant is not None]
            test = self.rt("catches", self.load(err), self.literal(codes) if catch.codes else self.constant(None))
            self.push()
            inner: list[py.stmt] = []
            if catch.binding is not None:
                python = self.bind(catch.binding.name)
                inner.append(py.Assign([self.store(python)], self.rt("error_value", self.load(err))))
            inner.extend(self.block(catch.body.body))
            self.pop()
            chain = [py.If(test, inner or [py.Pass()], chain)]
        handler = py.ExceptHandler(py.Attribute(self.load("rt"), "Error", LOAD), err, chain)
        return [py.Try(body, [handler], [], [])]

    # -- expressions ---------------------------------------------------------------------
    def expr(self, e: ast.Expr) -> py.expr:
        method = _EXPR_METHODS.get(e.__class__) or _method(_EXPR_METHODS, "x_", e.__class__)
        node: py.expr = method(self, e)
        if self.recording:
            origins = self.origins
            if id(node) not in origins:
                origins[id(node)] = e.span
        return node

    def x_IntLit(self, e: ast.IntLit) -> py.expr:
        return self.constant(e.value)

    def x_NumLit(self, e: ast.NumLit) -> py.expr:
        return self.constant(int(e.value) if e.value.is_integer() and abs(e.value) <= 2**53 else e.value)

    def x_DurationLit(self, e: ast.DurationLit) -> py.expr:
        return self.constant(e.ms)

    def x_BoolLit(self, e: ast.BoolLit) -> py.expr:
        return self.constant(e.value)

    def x_NullLit(self, e: ast.NullLit) -> py.expr:
        return self.constant(None)

    def x_StrLit(self, e: ast.StrLit) -> py.expr:
        pieces = e.parts
        first = pieces[0] if len(pieces) == 1 else None
        if first.__class__ is str:  # most strings: `e.constant`, without its scan
            return self.constant(first)
        const = e.constant
        if const is not None:
            return self.constant(const)
        parts = [self.constant(p) if isinstance(p, str) else self.expr(p) for p in e.parts]
        return self.rt("interp", *parts, span=e.span)

    def x_ArrayLit(self, e: ast.ArrayLit) -> py.expr:
        return py.List([self.expr(i) for i in e.items], LOAD)

    def x_ObjectLit(self, e: ast.ObjectLit) -> py.expr:
        return py.Dict([self.constant(en.key) for en in e.entries], [self.expr(en.value) for en in e.entries])

    def x_Name(self, e: ast.Name) -> py.expr:
        return self.load(self.lookup(e.name)[0])

    def x_It(self, e: ast.It) -> py.expr:
        return self.load(self.it_names[-1])

    def x_Unary(self, e: ast.Unary) -> py.expr:
        return self.rt("neg" if e.op == "-" else "not_", self.expr(e.operand), span=e.span)

    BINARY: ClassVar[dict[str, str]] = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "==": "eq", "!=": "ne",
              "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}

    def x_Binary(self, e: ast.Binary) -> py.expr:
        if e.op in ("and", "or"):
            left = self.truth(e.left)
            right = self.truth(e.right)
            return py.BoolOp(py.And() if e.op == "and" else py.Or(), [left, right])
        if e.op == "??":
            temp = self.fresh("q")
            value = self.expr(e.left)
            self.ints.bound(temp, value)
            left = py.NamedExpr(self.store(temp), value)
            test = py.Compare(left, [py.IsNot()], [self.constant(None)])
            return py.IfExp(test, self.load(temp), self.expr(e.right))
        if e.op == "in":
            return self.rt("in_", self.expr(e.left), self.expr(e.right), span=e.span)
        call = self.rt(self.BINARY[e.op], self.expr(e.left), self.expr(e.right), span=e.span)
        if self.BINARY[e.op] in OPERATORS:
            self.ints.site(call)  # type: ignore[arg-type]
        return call

    # Runtime operators that always return a bool (flowbox/operators.py): `rt.cond` of one
    # of them, or of `and`/`or` over them, is the identity, so it is not generated.
    BOOL_RESULTS: ClassVar[frozenset[str]] = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "in_", "not_", "cond"})

    def truth(self, e: ast.Expr) -> py.expr:
        """`e` as a condition: `rt.cond(e)`, which fails unless e is a bool, or e itself
        when the code computing it can only give a bool."""
        value = self.expr(e)
        if self._bool_valued(value):
            return value
        return self.rt("cond", value, span=e.span)

    def _bool_valued(self, node: py.expr) -> bool:
        if isinstance(node, py.BoolOp):
            return all(self._bool_valued(v) for v in node.values)
        if isinstance(node, py.Constant):
            return isinstance(node.value, bool)
        func = node.func if isinstance(node, py.Call) else None
        return (isinstance(func, py.Attribute) and isinstance(func.value, py.Name) and func.value.id == "rt"
                and func.attr in self.BOOL_RESULTS)

    def x_Ternary(self, e: ast.Ternary) -> py.expr:
        cond = self.truth(e.cond)
        return py.IfExp(cond, self.expr(e.then), self.expr(e.other))

    def x_Member(self, e: ast.Member) -> py.expr:
        if isinstance(e.obj, ast.Name) and e.obj.name in self.tasks and not self._is_local(e.obj.name):
            return self.rt("task_field", self.load(self.tasks[e.obj.name]), self.constant(e.name.name), span=e.span)
        obj = self.expr(e.obj)
        if e.optional:
            op = "safe_member"
        elif id(e.name) in self.result.optional_reads:
            op = "member_opt"
        else:
            op = "member"
        return self.rt(op, obj, self.constant(e.name.name), span=e.span)

    def _is_local(self, name: str) -> bool:
        scope: _Scope | None = self.scope
        while scope is not None:
            if name in scope.names:
                return True
            scope = scope.parent
        return False

    def x_Index(self, e: ast.Index) -> py.expr:
        return self.rt("index", self.expr(e.obj), self.expr(e.index), span=e.span)

    def x_Slice(self, e: ast.Slice) -> py.expr:
        lower = self.expr(e.lower) if e.lower is not None else self.constant(None)
        upper = self.expr(e.upper) if e.upper is not None else self.constant(None)
        return self.rt("slice_", self.expr(e.obj), lower, upper, span=e.span)

    def x_Project(self, e: ast.Project) -> py.expr:
        return self.rt("project", self.expr(e.obj), self.literal([p.name for p in e.path]), span=e.span)

    def x_Pick(self, e: ast.Pick) -> py.expr:
        return self.rt("pick", self.expr(e.obj), self.literal([f.name for f in e.fields]), span=e.span)

    def x_Parallel(self, e: ast.Parallel) -> py.expr:
        keys: list[py.expr | None] = []
        values: list[py.expr] = []
        for branch in e.branches:
            fn = self.fresh("p")
            saved, self.prelude = self.prelude, []
            value = self.expr(branch.value)
            helpers = self.take_prelude()
            self.prelude = saved
            self.prelude.append(self.async_def(fn, [], [*helpers, py.Return(value)]))
            keys.append(self.constant(branch.name.name))
            values.append(self.load(fn))
        return self.await_(self.rt("parallel", py.Dict(keys, values), span=e.span), e.span)

    def x_Approve(self, e: ast.Approve) -> py.expr:
        details = self.expr(e.details) if e.details is not None else self.constant(None)
        return self.await_(self.rt("approve", self.expr(e.question), details, *self._deadline(e.deadline), span=e.span), e.span)

    def x_Ask(self, e: ast.Ask) -> py.expr:
        choice = self.expr(e.choice) if e.choice is not None else self.constant(None)
        return self.await_(self.rt("ask", self.expr(e.question), choice, *self._deadline(e.deadline), span=e.span), e.span)

    def _deadline(self, deadline: ast.Deadline | None) -> list[py.expr]:
        """`timeout T else V`: two more arguments (T in ms, V computed now, before asking)."""
        if deadline is None:
            return []
        return [self.expr(deadline.timeout), self.expr(deadline.default)]

    def x_Run(self, e: ast.Run) -> py.expr:
        stdin = self.expr(e.stdin) if e.stdin is not None else self.constant(None)
        timeout = self.expr(e.timeout) if e.timeout is not None else self.constant(None)
        call = self.rt("run", self.expr(e.executable), self.expr(e.arguments), stdin, timeout, span=e.span)
        return self.await_(call, e.span)

    def x_Expect(self, e: ast.Expect) -> py.expr:
        assert isinstance(e.call, ast.Call)
        return self.call(e.call, e.clauses)

    def x_Call(self, e: ast.Call) -> py.expr:
        return self.call(e, [])

    def x_Lambda(self, e: ast.Lambda) -> py.expr:  # only reached as a builtin argument
        return self.load(self.lambda_def(e))


# The `s_<Class>` / `x_<Class>` method of each Flow node class, found by name once.
_STMT_METHODS: dict[type, Callable[[CodeGenerator, Any], list[py.stmt]]] = {}
_EXPR_METHODS: dict[type, Callable[[CodeGenerator, Any], py.expr]] = {}


def _method(table: dict[type, Callable[[CodeGenerator, Any], Any]], prefix: str, cls: type) -> Callable[[CodeGenerator, Any], Any]:
    method: Callable[[CodeGenerator, Any], Any] = getattr(CodeGenerator, prefix + cls.__name__)
    table[cls] = method
    return method


def _literal_key(value: object) -> object:
    """A key equal for two values only if `const` writes them the same: types tagged
    (`1`, `1.0` and `True` are equal in Python), floats by their text (`0.0 == -0.0`)."""
    if isinstance(value, dict):
        return (dict, tuple((k, _literal_key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return (list, tuple(_literal_key(v) for v in value))
    if isinstance(value, float):
        return (float, repr(value))
    return (value.__class__, value)


def generate(result: CheckResult, session_names: set[str] | None = None, *, origins: bool = True) -> GeneratedModule:
    """Generate the Python module of a checked (error-free) module; with `origins=False`,
    its `origins` stay empty (the same tree, generated ~15 % faster)."""
    if not result.ok:
        raise ValueError("cannot generate code for a module with errors")
    return CodeGenerator(result, session_names, origins=origins).module()

