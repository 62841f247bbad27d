"""Expressions: names, operators, member access, literals against expected types (§3.2, §6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from flow_kernel.diagnostics.model import Related
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.check_common import article, closest
from flow_kernel.lang.env import TaskInfo
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.lang.patterns import pattern_problem, search
from flow_kernel.native_marks import mypyc_attr

if TYPE_CHECKING:
    from flow_kernel.lang.checker import Checker

ARITHMETIC = ("-", "*", "/", "%")
ORDERING = ("<", "<=", ">", ">=")


@mypyc_attr(native_class=False)  # mixins: a plain class when compiled (flow_kernel/native_marks.py)
class ExprChecker:
    def expr(self: Checker, e: ast.Expr, *, expect_ok: bool = False) -> T.Type:
        # One dict lookup on the hot path (~17,000 calls a check; an `isinstance` that fails
        # costs ~300 instructions). `Expect` is never put in the table (it needs `expect_ok`),
        # so it is always found on the miss path.
        method = self.expr_methods.get(type(e))
        if method is None:
            if isinstance(e, ast.Expect):
                return self.expect_expr(e, expect_ok)
            method = self.expr_methods[type(e)] = getattr(type(self), "x_" + type(e).__name__)
        t: T.Type = method(self, e)
        return t

    # -- values against an expected type ----------------------------------------------
    def check_value(
        self: Checker, e: ast.Expr, expected: T.Type | None, *, code: str = "F3001",
        what: str = "value", expect_ok: bool = False,
    ) -> T.Type:
        """Check `e` where a value of type `expected` is required; object literals get
        field-level diagnostics (F3017/F3018) and literals constraint checks (F3014)."""
        if expected is None:
            return self.expr(e, expect_ok=expect_ok)
        target = T.unwrap(expected)
        if isinstance(e, ast.ObjectLit):
            obj = _single_object(expected)
            if obj is not None:
                return self._object_against(e, obj, expected)
        if isinstance(e, ast.ArrayLit) and isinstance(target, T.ArrayType):
            for item in e.items:
                self.check_value(item, target.item, code=code, what="array item")
            self._constraint_literal(e, expected)
            return expected
        actual = self.expr(e, expect_ok=expect_ok)
        self.require_type(e, actual, expected, code=code, what=what)
        return actual

    def require_type(self: Checker, e: ast.Expr, actual: T.Type, expected: T.Type, *, code: str = "F3001", what: str = "value") -> None:
        if T.assignable(actual, expected):
            self._constraint_literal(e, expected)
            return
        if T.may_be_null(actual) and T.assignable(T.without_null(actual), expected):
            self.report("F3003", e.span, f"this {what} may be null (type `{actual}`), but `{expected}` is required",
                        hints=("use `?.`, `??` or `default()` to handle null",))
            return
        if T.assignable(T.strip_constraints(actual), T.strip_constraints(expected)):
            return
        self.report(code, e.span, f"expected `{expected}`, found `{actual}`")

    def _object_against(self: Checker, e: ast.ObjectLit, obj: T.ObjectType, expected: T.Type) -> T.Type:
        present = {entry.key for entry in e.entries}
        for entry in e.entries:
            fld = obj.get(entry.key)
            if fld is None:
                if obj.open:
                    self.expr(entry.value)
                    continue
                self.report("F3018", entry.key_span, f"`{entry.key}` is not a field of `{expected}`",
                            hints=closest(entry.key, [n for n in obj.names if n not in present]))
                self.expr(entry.value)
                continue
            self.check_value(entry.value, fld.type, what=f"field `{entry.key}`")
        missing = [name for name, fld in obj.fields if not fld.optional and name not in present]
        if missing:
            listed = ", ".join(f"`{m}`" for m in missing)
            self.report("F3017", e.span, f"missing required field{'s' if len(missing) > 1 else ''} {listed} of `{expected}`")
        return expected

    def _constraint_literal(self: Checker, e: ast.Expr, expected: T.Type) -> None:
        """F3014: a literal of the right base type that breaks a constraint."""
        target = T.unwrap(expected)
        constraints = getattr(target, "constraints", ())
        if not constraints:
            return
        value = literal_value(e)
        if value is NOT_LITERAL:
            return
        problem = _violated(value, dict(constraints))
        if problem:
            self.report("F3014", e.span, f"{problem} (required by `{expected}`)")

    # -- expect ------------------------------------------------------------------------
    def expect_expr(self: Checker, e: ast.Expect, allowed: bool) -> T.Type:
        out = self.expr(e.call)
        if not self.is_agent_call(e.call):
            self.report("F4013", e.clauses[0].span, "`expect` may only follow an agent or team call")
        elif not allowed:
            self.report("F4013", e.clauses[0].span,
                        "`expect` may follow an agent call only when the call is a whole right-hand side, lambda body or statement")
        self.it_types.append(out)
        try:
            for clause in e.clauses:
                self.condition(clause.cond, "F3009", "`expect` condition")
                if clause.message is not None:
                    self.check_value(clause.message, T.STRING, what="message")
        finally:
            self.it_types.pop()
        return out

    def is_agent_call(self: Checker, e: ast.Expr) -> bool:
        if not isinstance(e, ast.Call):
            return False
        callee = e.callee
        if isinstance(callee, ast.Name):
            entry = self.decls.get(callee.name)
            return entry is not None and entry.kind == "agent" and self.scope.lookup(callee.name) is None
        if isinstance(callee, ast.Member) and isinstance(callee.obj, ast.Name):
            entry = self.decls.get(callee.obj.name)
            return entry is not None and entry.kind == "team"
        return False

    def condition(self: Checker, e: ast.Expr, code: str, what: str) -> T.Type:
        t = self.expr(e)
        if not T.is_bool(t):
            self.report(code, e.span, f"{what} must be `bool`, found `{t}`",
                        hints=("compare explicitly, e.g. `len(xs) > 0`",) if T.prim_name(t) != "bool" else ())
        return t

    # -- literals ----------------------------------------------------------------------
    def x_IntLit(self: Checker, e: ast.IntLit) -> T.Type:
        return T.Literal(e.value)

    def x_NumLit(self: Checker, e: ast.NumLit) -> T.Type:
        return T.Literal(e.value)

    def x_DurationLit(self: Checker, e: ast.DurationLit) -> T.Type:
        return T.DURATION

    def x_BoolLit(self: Checker, e: ast.BoolLit) -> T.Type:
        return T.Literal(e.value)

    def x_NullLit(self: Checker, e: ast.NullLit) -> T.Type:
        return T.NULL

    def x_StrLit(self: Checker, e: ast.StrLit) -> T.Type:
        for part in e.parts:
            if isinstance(part, ast.Expr):
                t = self.expr(part)
                if isinstance(t, (T.Prim, T.Literal, T.AnyType)):
                    continue  # a scalar (or `any`): rendered as text
                core = [T.unwrap(o) for o in T.options(t)]
                if core and all(isinstance(c, (T.ObjectType, T.ArrayType)) for c in core):
                    self.report("F7007", part.span, f"interpolating `{t}` renders it as JSON",
                                hints=("interpolate a field, or use `json(…)` to make the intent explicit",))
        const = e.constant
        return T.Literal(const) if const is not None else T.STRING

    def x_ArrayLit(self: Checker, e: ast.ArrayLit) -> T.Type:
        items = [T.widen(self.expr(i)) for i in e.items]
        return T.ArrayType(T.union(items) if items else T.ANY)

    def x_ObjectLit(self: Checker, e: ast.ObjectLit) -> T.Type:
        fields = tuple((entry.key, T.Field(self.expr(entry.value))) for entry in e.entries)
        return T.ObjectType(fields)

    def x_TypeArg(self: Checker, e: ast.TypeArg) -> T.Type:
        self.report("F3001", e.span, "a type is allowed here only as the `output:` option of an agent call")
        return T.ANY

    # -- names -------------------------------------------------------------------------
    def x_Name(self: Checker, e: ast.Name) -> T.Type:
        binding = self.scope.lookup(e.name)
        if binding is not None:
            binding.used = True
            return binding.type
        if self.ctx is not None and e.name in self.ctx.tasks:
            self.report("F3001", e.span, f"task `{e.name}` is not a value; read one of its bindings, e.g. `{e.name}.result`")
            return T.ANY
        entry = self.decls.get(e.name)
        if entry is not None:
            hint = ("call it: `" + e.name + "(…)`",) if entry.kind in ("agent", "workflow", "fn") else ()
            self.report("F3001", e.span, f"`{e.name}` is {article(entry.kind)}, not a value", hints=hint)
            return T.ANY
        if e.name in BUILTINS:
            self.report("F3001", e.span, f"`{e.name}` is a builtin function, not a value", hints=(f"call it: `{e.name}(…)`",))
            return T.ANY
        self.undefined(e.name, e.span)
        return T.ANY

    def undefined(self: Checker, name: str, span: object) -> None:
        candidates = self.scope.visible_names() + list(self.decls) + list(BUILTINS)
        hints = closest(name, candidates)
        if self.ctx is not None and self.ctx.decl is not None and name in self.toplevel_names:
            hints = (*hints, "top-level bindings are not visible inside a workflow: pass the value as an argument")
        self.report("F2001", span, f"undefined name `{name}`", hints=hints)  # type: ignore[arg-type]

    def x_ErrorExpr(self: Checker, e: ast.ErrorExpr) -> T.Type:
        return T.ANY

    def x_It(self: Checker, e: ast.It) -> T.Type:
        if not self.it_types:
            self.report("F2001", e.span, "`it` is defined only inside an `expect` condition")
            return T.ANY
        return self.it_types[-1]

    # -- operators -----------------------------------------------------------------------
    def x_Unary(self: Checker, e: ast.Unary) -> T.Type:
        t = self.expr(e.operand)
        if e.op == "not":
            if not T.is_bool(t):
                self.report("F3004", e.span, f"`not` needs a `bool`, found `{t}`")
            return T.BOOL
        if not T.is_numeric(t):
            self.report("F3004", e.span, f"unary `-` needs a number, found `{t}`")
            return T.NUMBER
        return T.widen(t) if not T.is_any(t) else T.ANY

    def x_Binary(self: Checker, e: ast.Binary) -> T.Type:
        if e.op == "??":
            left = self.expr(e.left)
            right = self.expr(e.right)
            return T.union([T.without_null(left), right])
        left, right = self.expr(e.left), self.expr(e.right)
        op = e.op
        if op in ("and", "or"):
            for side, t in ((e.left, left), (e.right, right)):
                if not T.is_bool(t):
                    self.report("F3004", side.span, f"`{op}` needs `bool` operands, found `{t}`")
            return T.BOOL
        if op in ("==", "!="):
            if not T.related(left, right):
                self.report("F3015", e.op_span, f"comparing `{left}` with `{right}` is always {'false' if op == '==' else 'true'}")
            return T.BOOL
        if op == "in":
            ok = T.is_any(right) or T.array_item(right) is not None or T.is_stringy(right) or T.as_object(right) is not None
            if T.is_stringy(right) and not T.is_any(right) and not T.is_stringy(left):
                ok = False
            if not ok:
                self.report("F3004", e.op_span, f"`in` needs an array, a string or an object on the right, found `{right}`")
            return T.BOOL
        if op in ORDERING:
            if not ((T.is_numeric(left) and T.is_numeric(right)) or (T.is_stringy(left) and T.is_stringy(right))):
                self.report("F3004", e.op_span, f"`{op}` cannot compare `{left}` with `{right}`")
            return T.BOOL
        if op == "+":
            if T.is_any(left) or T.is_any(right):
                return T.ANY
            if T.is_numeric(left) and T.is_numeric(right):
                return T.INT if T.is_intlike(left) and T.is_intlike(right) else T.NUMBER
            if T.is_stringy(left) and T.is_stringy(right):
                return T.STRING
            li, ri = T.array_item(left), T.array_item(right)
            if li is not None and ri is not None:
                return T.ArrayType(T.union([li, ri]))
            self.report("F3004", e.op_span, f"`+` cannot combine `{left}` and `{right}`",
                        hints=('to build text, use interpolation: "${a}${b}"',) if T.is_stringy(left) or T.is_stringy(right) else ())
            return T.ANY
        # - * / %
        if not (T.is_numeric(left) and T.is_numeric(right)):
            self.report("F3004", e.op_span, f"`{op}` needs numbers, found `{left}` and `{right}`")
            return T.NUMBER
        if T.is_any(left) or T.is_any(right):
            return T.ANY if op != "/" else T.NUMBER
        if op != "/" and T.is_intlike(left) and T.is_intlike(right):
            return T.INT
        return T.NUMBER

    def x_Ternary(self: Checker, e: ast.Ternary) -> T.Type:
        self.condition(e.cond, "F3009", "the condition of `? :`")
        return T.union([self.expr(e.then), self.expr(e.other)])

    # -- member access -------------------------------------------------------------------
    def x_Member(self: Checker, e: ast.Member) -> T.Type:
        if isinstance(e.obj, ast.Name) and self.scope.lookup(e.obj.name) is None and self.ctx is not None:
            task = self.ctx.tasks.get(e.obj.name)
            if task is not None:
                return self._task_field(task, e)
            entry = self.decls.get(e.obj.name)
            if entry is not None and entry.kind == "team":
                self.report("F3001", e.span, f"team members are called: `{e.obj.name}.{e.name.name}(prompt)`")
                return T.ANY
        obj = self.expr(e.obj)
        if e.optional:
            base = T.without_null(obj)
            return T.union([self.field_type(base, e.name, e.obj), T.NULL]) if not T.is_any(obj) else T.ANY
        if T.may_be_null(obj):
            self.report("F3003", e.obj.span, f"this value may be null (type `{obj}`)",
                        hints=(f"use `?.{e.name.name}` or `??`",))
            obj = T.without_null(obj)
        return self.field_type(obj, e.name, e.obj)

    def _task_field(self: Checker, task: TaskInfo, e: ast.Member) -> T.Type:
        if not task.awaited:
            self.report("F5004", e.span, f"`{task.name}.{e.name.name}` is read before `await {task.name}`",
                        related=[Related(task.span, "the task starts here")], hints=(f"add `await {task.name}` first",))
        if e.name.name not in task.fields:
            self.report("F3002", e.name.span, f"task `{task.name}` has no binding `{e.name.name}`",
                        hints=closest(e.name.name, list(task.fields)))
            return T.ANY
        return task.fields[e.name.name]

    def field_type(self: Checker, obj: T.Type, name: ast.Ident, where: ast.Expr) -> T.Type:
        if T.is_any(obj):
            return T.ANY
        results: list[T.Type] = []
        for option in T.options(obj):
            core = T.unwrap(option)
            if isinstance(core, T.AnyType):
                return T.ANY
            if not isinstance(core, T.ObjectType):
                if T.prim_name(core) == "null":
                    continue
                self.report("F3002", name.span, f"`{option}` has no field `{name.name}`")
                return T.ANY
            fld = core.get(name.name)
            if fld is None:
                if core.open:
                    results.append(T.ANY)
                    continue
                self.report("F3002", name.span, f"`{option}` has no field `{name.name}`", hints=closest(name.name, core.names))
                return T.ANY
            if fld.optional:
                self.optional_reads.add(id(name))
            results.append(T.union([fld.type, T.NULL]) if fld.optional else fld.type)
        return T.union(results) if results else T.ANY

    def x_Index(self: Checker, e: ast.Index) -> T.Type:
        obj = self.expr(e.obj)
        idx = self.expr(e.index)
        if T.is_any(obj):
            return T.ANY
        item = T.array_item(obj)
        if item is not None:
            if not T.is_intlike(idx) and not T.is_any(idx):
                self.report("F3011", e.index.span, f"an array index must be an `int`, found `{idx}`")
            return item
        if T.as_object(obj) is not None:
            if not T.is_stringy(idx):
                self.report("F3011", e.index.span, f"an object key must be a `string`, found `{idx}`")
                return T.ANY
            key = literal_value(e.index)
            if isinstance(key, str):
                return self.field_type(obj, ast.Ident(e.index.span, key), e.obj)
            return T.ANY
        self.report("F3011", e.obj.span, f"cannot index a value of type `{obj}`")
        return T.ANY

    def x_Slice(self: Checker, e: ast.Slice) -> T.Type:
        obj = self.expr(e.obj)
        for bound in (e.lower, e.upper):
            if bound is not None:
                t = self.expr(bound)
                if not T.is_intlike(t) and not T.is_any(t):
                    self.report("F3011", bound.span, f"slice bounds must be `int`, found `{t}`")
        if T.is_any(obj):
            return T.ANY
        item = T.array_item(obj)
        if item is not None:
            return T.ArrayType(item)
        if T.is_stringy(obj):
            return T.STRING
        self.report("F3011", e.obj.span, f"cannot slice a value of type `{obj}`")
        return T.ANY

    def x_Project(self: Checker, e: ast.Project) -> T.Type:
        obj = self.expr(e.obj)
        item = T.array_item(obj)
        if item is None:
            self.report("F3011", e.obj.span, f"`[*]` needs an array, found `{obj}`")
            return T.ANY
        current = item
        for name in e.path:
            current = self.field_type(current, name, e.obj)
        return T.ArrayType(current)

    def x_Pick(self: Checker, e: ast.Pick) -> T.Type:
        obj = self.expr(e.obj)
        if T.is_any(obj):
            return T.object_type({f.name: T.ANY for f in e.fields})
        fields = {f.name: self.field_type(obj, f, e.obj) for f in e.fields}
        return T.object_type(fields)

    def x_Lambda(self: Checker, e: ast.Lambda) -> T.Type:
        self.report("F5006", e.span, "a lambda is allowed only as an argument of a builtin that takes one, or of `parallelMap`",
                    hints=("no value of Flow is a function",))
        self.lambda_body(e, [T.ANY] * len(e.params), pure=True, parallel=False)
        return T.ANY


def _single_object(t: T.Type) -> T.ObjectType | None:
    objects = [T.unwrap(o) for o in T.options(t) if isinstance(T.unwrap(o), T.ObjectType)]
    others = [o for o in T.options(t) if not isinstance(T.unwrap(o), T.ObjectType) and T.prim_name(o) != "null"]
    if len(objects) == 1 and not others:
        obj = objects[0]
        assert isinstance(obj, T.ObjectType)
        return obj
    return None


def _violated(value: object, c: dict[str, object]) -> str | None:
    if isinstance(value, str):
        n = len(value)
        if isinstance(c.get("minLength"), int) and n < c["minLength"]:  # type: ignore[operator]
            return f"the string has {n} characters, fewer than minLength {c['minLength']}"
        if isinstance(c.get("maxLength"), int) and n > c["maxLength"]:  # type: ignore[operator]
            return f"the string has {n} characters, more than maxLength {c['maxLength']}"
        pattern = c.get("pattern")
        if isinstance(pattern, str) and pattern_problem(pattern) is None and not search(pattern, value):
            return f"the string does not match the pattern `{pattern}`"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        checks: tuple[tuple[str, Callable[[float], bool], str], ...] = (
            ("minimum", lambda b: value < b, "less than minimum"),
            ("maximum", lambda b: value > b, "greater than maximum"),
            ("exclusiveMinimum", lambda b: value <= b, "not above exclusiveMinimum"),
            ("exclusiveMaximum", lambda b: value >= b, "not below exclusiveMaximum"),
        )
        for key, broken, words in checks:
            bound = c.get(key)
            if isinstance(bound, (int, float)) and broken(bound):
                return f"{value} is {words} {bound}"
        step = c.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0 and (value / step) != int(value / step):
            return f"{value} is not a multiple of {step}"
    elif isinstance(value, list):
        n = len(value)
        if isinstance(c.get("minItems"), int) and n < c["minItems"]:  # type: ignore[operator]
            return f"the array has {n} items, fewer than minItems {c['minItems']}"
        if isinstance(c.get("maxItems"), int) and n > c["maxItems"]:  # type: ignore[operator]
            return f"the array has {n} items, more than maxItems {c['maxItems']}"
        if c.get("uniqueItems") is True:
            seen = [json.dumps(v, sort_keys=True) for v in value]
            if len(set(seen)) != len(seen):
                return "the array has duplicate items but uniqueItems is true"
    return None
