"""Verifier fuzzing: no forbidden construct passes `verify`.

Two generators:
- mutations of real generated modules (every program of tests/runtime/programs.py):
  a forbidden expression or statement spliced in anywhere, a name renamed to one that is
  not generated, an `rt` attribute renamed off the ABI, a constant made non-JSON, an
  expression wrapped in a forbidden shape. Every mutant must be refused.
- hypothesis-built Python trees over a grammar that mixes what codegen emits with what it
  never does. Whatever the verifier accepts is held to an independent structural oracle,
  then compiled and run in CPython with empty builtins, a stand-in `rt` and an audit hook:
  an accepted module may cause no audit event at all (no import, open, exec, compile,
  socket, subprocess, code-object or frame access)."""

from __future__ import annotations

import ast as py
import asyncio
import copy
import functools
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.verify import ABI_NAMES, ALLOWED_NODES, NAME, VerificationError, verify
from tests.runtime.programs import ALL

LONG = os.environ.get("FLOW_FUZZ_LONG") == "1"
EXAMPLES = 3000 if LONG else 300
SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _modules() -> list[py.Module]:
    out = []
    for _, source, _ in ALL:
        compiled = compile_source(SourceFile("m.flow", source))
        assert compiled.python is not None
        out.append(py.parse(compiled.python))
    return out


MODULES = _modules()

FORBIDDEN_EXPRS = [
    "__import__('os')", "open('/etc/passwd')", "eval('1')", "exec('1')", "globals()", "getattr(rt, 'x')",
    "rt.__class__", "rt._bridge", "rt.bridge", "rt.__dict__", "rt.print.__globals__", "rt.agent.__code__",
    "v_x.__class__", "v_x.y", "args['x']", "v_x[0]", "rt.fn_len(*v_x)", "rt.agent(prompt=1)", "rt.agent(**v_x)",
    "(lambda: 0)", "[y for y in v_x]", "{y for y in v_x}", "{y: 1 for y in v_x}", "(y for y in v_x)",
    "f'{v_x}'", "b'bytes'", "...", "1j", "v_x ** 2", "v_x @ v_y", "not v_x", "v_x < v_y < v_z", "v_x // v_y",
    "v_x << 9", "v_x / v_y", "v_x % v_y", "v_x | v_y", "v_x is None",
    "v_x in v_y", "v_x if v_y else v_z and v_x" if False else "-v_x if v_y else ~v_z", "(yield)", "v_x(1)",
    "rt.agent(1)(2)", "w_1.__code__", "t_1.cr_frame", "(v_x := 1)", "(rt := 1)", "main.__globals__",
    "type(v_x)", "print(1)", "__builtins__", "os", "self", "rt.step.__self__", "rt.Error.__subclasses__()",
    "rt.start.__func__", "args.__class__", "v_x[1:2]", "{**v_x}", "[*v_x]", "rt.run(v_x, *v_y)",
]
FORBIDDEN_STMTS = [
    "import os", "from os import system", "global v_x", "del v_x", "v_x.attr = 1", "rt.print = 1", "rt = 1",
    "class C:\n    pass", "def f():\n    pass", "with open('x') as v_f:\n    pass", "raise Exception()",
    "try:\n    pass\nexcept Exception:\n    pass", "try:\n    pass\nexcept:\n    pass", "assert v_x", "v_x += 1",
    "v_x: int = 1", "async with v_x:\n    pass", "async for v_y in v_x:\n    pass", "v_x[0] = 1",
    "match v_x:\n    case _:\n        pass", "raise rt.Error from None", "for v_y in v_x:\n    import sys",
    "nonlocal_v = 1", "@rt.step\nasync def w_9(rt):\n    pass", "async def w_8(rt, v_a=1):\n    pass",
    "async def w_7(rt, *v_a):\n    pass", "async def w_6(rt) -> int:\n    pass", "async def evil(rt):\n    pass",
]
BAD_NAMES = ["os", "open", "print", "__builtins__", "__import__", "eval", "globals", "self", "x", "_", "rtx",
             "V_x", "v", "vx", "__class__", "c_main_", "w1", "builtins", "sys"]
BAD_ATTRS = ["_bridge", "__class__", "__dict__", "__globals__", "bridge", "steps", "_event", "cancel_reason",
             "frames", "system", "Error_", "fn_open", "fn_eval", "ABI", "__getattribute__"]


def _expr(text: str) -> py.expr:
    return py.parse(text, mode="eval").body


def _stmts(text: str) -> list[py.stmt]:
    return py.parse(text).body


def test_every_forbidden_snippet_is_refused_alone() -> None:
    """The mutation tables themselves: each one alone in a minimal module is refused (so
    a mutant that passes cannot be blamed on a harmless table entry)."""
    assert not [n for n in BAD_NAMES if NAME.match(n)] and not [a for a in BAD_ATTRS if a in ABI_NAMES]
    for text in FORBIDDEN_EXPRS:
        module = py.parse("async def main(rt, args):\n    v_x = 1\n    return 0\n")
        module.body[0].body[1].value = _expr(text)  # type: ignore[attr-defined]
        with pytest.raises(VerificationError):
            verify(module)
    for text in FORBIDDEN_STMTS:
        module = py.parse("async def main(rt, args):\n    return 0\n")
        module.body[0].body[:0] = _stmts(text)  # type: ignore[attr-defined]
        with pytest.raises(VerificationError):
            verify(module)


def test_the_unmutated_modules_verify() -> None:
    for module in MODULES:
        verify(module)


# -- mutations of generated modules -------------------------------------------------------------

def _slots(tree: py.AST, kind: type[py.AST]) -> list[tuple[py.AST, str, int | None]]:
    """(parent, field, index) of every child of `kind`, found without the context markers."""
    out: list[tuple[py.AST, str, int | None]] = []
    for parent in py.walk(tree):
        for field, value in py.iter_fields(parent):
            if isinstance(value, list):
                out += [(parent, field, i) for i, item in enumerate(value) if isinstance(item, kind)]
            elif isinstance(value, kind):
                out.append((parent, field, None))
    return out


def _put(slot: tuple[py.AST, str, int | None], node: Any) -> None:
    parent, field, index = slot
    if index is None:
        setattr(parent, field, node)
    else:
        getattr(parent, field)[index] = node


def _get(slot: tuple[py.AST, str, int | None]) -> Any:
    parent, field, index = slot
    value = getattr(parent, field)
    return value if index is None else value[index]


def _mutate(draw: Callable[[st.SearchStrategy[Any]], Any], tree: py.Module) -> str:
    kind = draw(st.sampled_from(["expr", "stmt", "name", "attr", "const", "wrap"]))
    if kind == "expr":
        slots = [s for s in _slots(tree, py.expr) if not isinstance(s[0], py.Attribute | py.NamedExpr)
                 and not (isinstance(s[0], py.Call) and s[1] == "func")]
        slot = draw(st.sampled_from(slots))
        text = draw(st.sampled_from(FORBIDDEN_EXPRS))
        _put(slot, _expr(text))
        return f"expr {text}"
    if kind == "stmt":
        bodies = [(n, f) for n in py.walk(tree) for f in ("body", "orelse", "finalbody")
                  if isinstance(getattr(n, f, None), list) and getattr(n, f) and isinstance(getattr(n, f)[0], py.stmt)]
        node, field = draw(st.sampled_from(bodies))
        text = draw(st.sampled_from(FORBIDDEN_STMTS))
        body = getattr(node, field)
        position = draw(st.integers(0, len(body)))
        body[position:position] = _stmts(text)
        return f"stmt {text!r} into {type(node).__name__}.{field}"
    if kind == "name":
        names = [n for n in py.walk(tree) if isinstance(n, py.Name)]
        node = draw(st.sampled_from(names))
        node.id = draw(st.sampled_from(BAD_NAMES))
        return f"name {node.id}"
    if kind == "attr":
        attrs = [n for n in py.walk(tree) if isinstance(n, py.Attribute)]
        node = draw(st.sampled_from(attrs))
        node.attr = draw(st.sampled_from(BAD_ATTRS) | st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)
                         .filter(lambda a: a not in ABI_NAMES))
        return f"attr {node.attr}"
    if kind == "const":
        consts = [n for n in py.walk(tree) if isinstance(n, py.Constant)]
        node = draw(st.sampled_from(consts))
        node.value = draw(st.sampled_from([b"bytes", 1j, Ellipsis, frozenset({1}), (1, 2)]))
        return f"const {node.value!r}"
    slots = [s for s in _slots(tree, py.expr) if not isinstance(s[0], py.Attribute | py.NamedExpr)
             and not (isinstance(s[0], py.Call) and s[1] == "func")]
    slot = draw(st.sampled_from(slots))
    inner = _get(slot)
    shape = draw(st.sampled_from(["attr", "subscript", "call", "lambda", "listcomp", "fstring", "starred-call"]))
    wrapped: py.expr = {
        "attr": lambda: py.Attribute(inner, draw(st.sampled_from(BAD_ATTRS)), py.Load()),
        "subscript": lambda: py.Subscript(inner, py.Constant(0), py.Load()),
        "call": lambda: py.Call(inner, [], []),
        "lambda": lambda: py.Lambda(py.arguments([], [], None, [], [], None, []), inner),
        "listcomp": lambda: py.ListComp(py.Name("v_y", py.Load()),
                                        [py.comprehension(py.Name("v_y", py.Store()), inner, [], 0)]),
        "fstring": lambda: py.JoinedStr([py.FormattedValue(inner, -1, None)]),
        "starred-call": lambda: py.Call(py.Attribute(py.Name("rt", py.Load()), "fn_len", py.Load()),
                                        [py.Starred(inner, py.Load())], []),
    }[shape]()
    _put(slot, wrapped)
    return f"wrap {shape}"


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(data=st.data())
def test_no_mutant_of_a_generated_module_verifies(data: st.DataObject) -> None:
    tree = copy.deepcopy(data.draw(st.sampled_from(MODULES)))
    what = _mutate(data.draw, tree)
    py.fix_missing_locations(tree)
    with pytest.raises(VerificationError):
        verify(tree)
        print(what, py.unparse(tree)[:2000], file=sys.stderr)


# -- hypothesis-built trees, accepted ones run under an audit hook -----------------------------

# Inline operators: + - * and one of == != < <= > >= are generated for ints (exact_ints.py); the rest never.
ARITHMETIC_OPS = [py.Add(), py.Sub(), py.Mult(), py.Pow(), py.LShift(), py.Div(), py.FloorDiv(), py.Mod(), py.MatMult(),
                  py.BitOr()]
COMPARE_OPS = [py.Eq(), py.NotEq(), py.Lt(), py.LtE(), py.Gt(), py.GtE(), py.In(), py.NotIn(), py.Is(), py.IsNot()]
INLINE_ARITHMETIC = (py.Add, py.Sub, py.Mult)
INLINE_COMPARISONS = (py.Eq, py.NotEq, py.Lt, py.LtE, py.Gt, py.GtE)

GOOD_NAMES = ["rt", "args", "v_a", "v_b", "q_1", "t_1", "w_1", "l_1", "main"]
ATTRS = sorted(ABI_NAMES)[:20] + ["__class__", "_bridge", "__globals__", "system", "__dict__"]
JSON_CONSTANTS = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["s", "__import__", "os"])


@functools.cache
def good_exprs(depth: int) -> st.SearchStrategy[py.expr]:
    """Only the shapes codegen emits: most of these trees pass and get run."""
    leaf = st.one_of(st.sampled_from(GOOD_NAMES[:4]).map(lambda n: py.Name(n, py.Load())), JSON_CONSTANTS.map(py.Constant))
    if depth <= 0:
        return leaf
    sub = good_exprs(depth - 1)
    rt_call = st.builds(lambda a, args: py.Call(py.Attribute(py.Name("rt", py.Load()), a, py.Load()), args, []),
                        st.sampled_from(sorted(ABI_NAMES)), st.lists(sub, max_size=2))
    return st.one_of(
        leaf, rt_call, st.builds(py.Await, rt_call),
        st.builds(lambda xs: py.List(xs, py.Load()), st.lists(sub, max_size=2)),
        st.builds(lambda k, v: py.Dict([py.Constant(k)], [v]), st.text(max_size=3), sub),
        st.builds(lambda a, b, c: py.IfExp(a, b, c), sub, sub, sub),
        st.builds(lambda a, b: py.BoolOp(py.Or(), [a, b]), sub, sub),
        st.builds(lambda a: py.UnaryOp(py.USub(), a), sub),
        st.builds(lambda a: py.Compare(a, [py.IsNot()], [py.Constant(None)]), sub),
        st.builds(lambda v: py.NamedExpr(py.Name("q_1", py.Store()), v), sub),
        st.builds(lambda: py.Call(py.Name("t_1", py.Load()), [], [])),
    )


@functools.cache
def exprs(depth: int) -> st.SearchStrategy[py.expr]:
    leaf = st.one_of(
        st.sampled_from(GOOD_NAMES + BAD_NAMES[:6]).map(lambda n: py.Name(n, py.Load())),
        JSON_CONSTANTS.map(py.Constant),
        st.sampled_from([b"x", 1j, Ellipsis]).map(py.Constant),
        st.sampled_from(ATTRS).map(lambda a: py.Attribute(py.Name("rt", py.Load()), a, py.Load())),
    )
    if depth <= 0:
        return leaf
    sub = exprs(depth - 1)
    good_leaf = st.one_of(st.sampled_from(GOOD_NAMES[:4]).map(lambda n: py.Name(n, py.Load())), JSON_CONSTANTS.map(py.Constant))
    rt_call = st.builds(lambda a, args: py.Call(py.Attribute(py.Name("rt", py.Load()), a, py.Load()), args, []),
                        st.sampled_from(sorted(ABI_NAMES)), st.lists(st.one_of(good_leaf, sub), max_size=2))
    return st.one_of(
        # what codegen emits, several times over, so that many trees pass and get run
        rt_call, rt_call, rt_call, st.builds(py.Await, rt_call), st.builds(py.Await, rt_call), good_leaf, good_leaf,
        leaf,
        st.builds(lambda v, a: py.Attribute(v, a, py.Load()), sub, st.sampled_from(ATTRS)),
        st.builds(lambda f, a: py.Call(f, a, []), sub, st.lists(sub, max_size=2)),
        st.builds(lambda f, a, k: py.Call(f, a, [py.keyword(k, a[0] if a else py.Constant(1))]), sub,
                  st.lists(sub, max_size=1), st.sampled_from(["x", "prompt"])),
        st.builds(lambda v, i: py.Subscript(v, i, py.Load()), sub, sub),
        st.builds(py.Await, sub),
        st.builds(lambda a, op, b: py.BinOp(a, op, b), sub, st.sampled_from(ARITHMETIC_OPS), sub),
        st.builds(lambda a: py.UnaryOp(py.Not(), a), sub),
        st.builds(lambda a: py.UnaryOp(py.USub(), a), sub),
        st.builds(lambda a, op: py.Compare(a, [op], [py.Constant(None)]), sub, st.sampled_from([py.IsNot(), py.Is(), py.Eq()])),
        st.builds(lambda a, ops, b: py.Compare(a, ops, [b] * len(ops)), sub, st.lists(st.sampled_from(COMPARE_OPS), min_size=1,
                                                                                       max_size=2), sub),
        st.builds(lambda xs: py.List(xs, py.Load()), st.lists(sub, max_size=2)),
        st.builds(lambda k, v: py.Dict([k], [v]), sub, sub),
        st.builds(lambda a, b, c: py.IfExp(a, b, c), sub, sub, sub),
        st.builds(lambda a, b: py.BoolOp(py.And(), [a, b]), sub, sub),
        st.builds(lambda n, v: py.NamedExpr(py.Name(n, py.Store()), v), st.sampled_from(["q_1", "v_a", "x"]), sub),
        st.builds(lambda v: py.Lambda(py.arguments([], [], None, [], [], None, []), v), sub),
        st.builds(lambda v: py.JoinedStr([py.FormattedValue(v, -1, None)]), sub),
        st.builds(lambda v: py.Starred(v, py.Load()), sub),
    )


@functools.cache
def stmts(depth: int, good: bool = False) -> st.SearchStrategy[py.stmt]:
    if good:
        g = good_exprs(2)
        plain = st.one_of(st.builds(lambda n, v: py.Assign([py.Name(n, py.Store())], v), st.sampled_from(["v_a", "v_b"]), g),
                          st.builds(py.Expr, g), st.builds(py.Return, g), st.just(py.Pass()))
        if depth <= 0:
            return plain
        inner = st.lists(stmts(depth - 1, True), min_size=1, max_size=2)
        handler = py.Attribute(py.Name("rt", py.Load()), "Error", py.Load())
        return st.one_of(plain, st.builds(lambda c, b, o: py.If(c, b, o), g, inner, st.just([])),
                         st.builds(lambda b, h: py.Try(b, [py.ExceptHandler(handler, None, h)], [], []), inner, inner),
                         st.builds(lambda c, b: py.While(c, b + [py.Break()], []), g, inner))
    e = exprs(2)
    good_assign = st.builds(lambda n, v: py.Assign([py.Name(n, py.Store())], v), st.sampled_from(["v_a", "v_b"]), e)
    simple = st.one_of(
        good_assign, good_assign, st.builds(py.Expr, e), st.builds(py.Return, e),
        st.builds(lambda n, v: py.Assign([py.Name(n, py.Store())], v), st.sampled_from(["v_a", "v_b", "x", "rt"]), e),
        st.builds(lambda v, a: py.Assign([py.Attribute(v, a, py.Store())], py.Constant(1)), e, st.sampled_from(ATTRS)),
        st.builds(py.Expr, e),
        st.builds(py.Return, e),
        st.just(py.Raise(None, None)),
        st.builds(lambda v: py.Raise(v, None), e),
        st.sampled_from(["os", "sys"]).map(lambda m: py.Import([py.alias(m)])),
    )
    if depth <= 0:
        return simple
    body = st.lists(stmts(depth - 1), min_size=1, max_size=3)
    return st.one_of(
        simple,
        st.builds(lambda c, b: py.If(c, b, []), e, body),
        st.builds(lambda t, b, h: py.Try(b, [py.ExceptHandler(t, None, h)], [], []), e, body, body),
    )


@st.composite
def modules(draw: Callable[[st.SearchStrategy[Any]], Any]) -> py.Module:
    good = draw(st.sampled_from([True, True, False]))
    body = draw(st.lists(stmts(2, good), min_size=1, max_size=3))
    params = py.arguments([], [py.arg("rt"), py.arg("args")], None, [], [], None, [])
    main = py.AsyncFunctionDef(name="main", args=params, body=body, decorator_list=[], returns=None)
    extra = [] if good else draw(st.sampled_from([[]] * 5 + [["import os"], ["x = 1"], ["def f():\n    pass"]]))
    tree = py.Module([*[s for text in extra for s in _stmts(text)], main], [])
    return py.fix_missing_locations(tree)


FORBIDDEN_TYPES = (py.Import, py.ImportFrom, py.Lambda, py.ListComp, py.SetComp, py.DictComp, py.GeneratorExp,
                   py.Subscript, py.Starred, py.JoinedStr, py.ClassDef, py.FunctionDef, py.Global, py.Nonlocal,
                   py.Delete, py.AugAssign, py.AnnAssign, py.keyword, py.Is, py.In, py.NotIn, py.Yield)


def oracle_problems(tree: py.Module) -> list[str]:
    """Written from docs/runtime.md, not from verify.py: what an accepted module must not hold."""
    problems = []
    for node in py.walk(tree):
        if isinstance(node, FORBIDDEN_TYPES):
            problems.append(type(node).__name__)
        if isinstance(node, py.Attribute) and (not isinstance(node.value, py.Name) or node.value.id != "rt"
                                                or node.attr.startswith("_") or node.attr not in ABI_NAMES):
            problems.append(f"attribute {node.attr}")
        if isinstance(node, py.Name) and (not NAME.match(node.id) or "__" in node.id):
            problems.append(f"name {node.id}")
        if isinstance(node, py.Constant) and not (node.value is None or isinstance(node.value, bool | int | float | str)):
            problems.append(f"constant {node.value!r}")
        if isinstance(node, py.BinOp) and not isinstance(node.op, INLINE_ARITHMETIC):
            problems.append(f"operator {type(node.op).__name__}")
        if isinstance(node, py.Compare) and not (
                len(node.ops) == 1 and (isinstance(node.ops[0], INLINE_COMPARISONS) or (
                    isinstance(node.ops[0], py.IsNot) and isinstance(node.comparators[0], py.Constant)
                    and node.comparators[0].value is None))):
            problems.append("comparison")
    return problems


class Done:
    """A value that can also be awaited (to 1): a stand-in result with no coroutine to
    forget (a never-awaited coroutine's warning walks frames and would show in the audit)."""

    def __await__(self) -> Any:
        return 1
        yield  # a generator: awaiting it finishes at once


class StandInRuntime:
    """Every ABI name is a harmless function returning `Done()`; anything else is absent."""

    def __getattr__(self, name: str) -> Any:
        if name not in ABI_NAMES:
            raise AttributeError(name)
        if name == "Error":
            return type("FlowError", (Exception,), {})
        return lambda *args: Done()


AUDIT: dict[str, Any] = {"on": False, "events": []}


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if AUDIT["on"]:
        AUDIT["events"].append(event)


sys.addaudithook(_hook)  # cannot be removed; it records only while AUDIT["on"]
accepted_count = {"n": 0}


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(tree=modules())
def test_whatever_the_verifier_accepts_is_harmless(tree: py.Module) -> None:
    try:
        verify(tree)
    except VerificationError:
        return
    accepted_count["n"] += 1
    assert oracle_problems(tree) == [], py.unparse(tree)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # `1 is not None`: legal, and harmless
            code = compile(tree, "<flow>", "exec")
    except (SyntaxError, ValueError, TypeError):
        return
    namespace: dict[str, Any] = {"__builtins__": {}}
    exec(code, namespace)  # defines main only: nothing runs at module level
    touched = set(_audited(namespace["main"](StandInRuntime(), {}))) - _loop_baseline()
    assert touched == set(), (touched, py.unparse(tree))


def _audited(coro: Any) -> list[str]:
    """The audit events raised while `coro` runs on a fresh loop."""
    loop = asyncio.new_event_loop()
    try:
        AUDIT["events"] = []
        AUDIT["on"] = True
        try:
            loop.run_until_complete(asyncio.wait_for(coro, 2))
        except BaseException:  # any error is fine: only what it touched matters
            pass
        finally:
            AUDIT["on"] = False
    finally:
        loop.close()
    return list(AUDIT["events"])


_BASELINE: set[str] = set()


def _loop_baseline() -> set[str]:
    """What the event loop itself raises around any coroutine (its async-generator hooks)."""
    if not _BASELINE:
        async def nothing() -> int:
            return 1

        _BASELINE.update(_audited(nothing()) or ["-"])
    return _BASELINE


def test_the_tree_generator_reaches_accepted_modules() -> None:
    # Otherwise the property above would hold vacuously.
    found = 0
    for text in ["async def main(rt, args):\n    v_a = rt.add(v_b, 1)\n    return await rt.agent(v_a)\n",
                 "async def main(rt, args):\n    if rt.cond(v_a):\n        raise\n"]:
        tree = py.parse(text)
        verify(tree)
        assert oracle_problems(tree) == []
        found += 1
    assert found == 2


# -- every field of every allowed node is read -----------------------------------------------

# Fields that hold a name, a number or a constant's value, never a node.
SCALAR_FIELDS = {"id", "attr", "arg", "name", "kind", "type_comment", "ctx", "conversion", "is_async"}
# What the generated modules may not show on their own (an empty `else`, `finally`, …).
EXTRA = ("async def main(rt, args):\n    try:\n        v_a = 1\n    except rt.Error as e_1:\n        raise\n"
         "    while rt.loop(v_a):\n        break\n    else:\n        pass\n    with rt.stage(1):\n        continue\n"
         "    for (d_1, v_b) in rt.iterate([-1, {'k': None}]):\n        pass\n"
         "    return rt.add(v_a, v_b) if rt.cond(v_a) else ((q_1 := v_a) is not None) or await t_2()\n")


def _field_mutants(modules: list[py.Module]) -> list[tuple[str, py.Module]]:
    """For every allowed class and each of its fields that can hold a node: a copy of a
    module with an instance of the class, where that field holds a forbidden name too."""
    found: dict[type[py.AST], tuple[py.Module, int]] = {}
    for module in modules:
        for index, node in enumerate(py.walk(module)):
            found.setdefault(node.__class__, (module, index))
    out = []
    for cls in ALLOWED_NODES:
        if cls not in found:
            assert not [f for f in cls._fields if f not in SCALAR_FIELDS], f"no {cls.__name__} to mutate"
            continue
        module, index = found[cls]
        for field in cls._fields:
            if field in SCALAR_FIELDS or (cls is py.Constant and field == "value"):
                continue
            mutant = copy.deepcopy(module)
            node = list(py.walk(mutant))[index]
            bad = py.Name("os", py.Load())
            value = getattr(node, field)
            if isinstance(value, list):
                value.append(bad)
            else:
                setattr(node, field, bad)
            out.append((f"{cls.__name__}.{field}", mutant))
    return out


def _mutant_sources() -> list[py.Module]:
    return [*MODULES, py.parse(EXTRA)]


def test_a_forbidden_node_in_any_field_of_any_allowed_node_is_refused() -> None:
    """The verifier's rules add each node's children by hand (one pass, no generic walk):
    a field a rule forgot would let anything through. Every field of every allowed class
    gets a forbidden name; each mutant is refused."""
    mutants = _field_mutants(_mutant_sources())
    assert len(mutants) > 40
    accepted = []
    for what, mutant in mutants:
        try:
            verify(mutant)
        except VerificationError:
            continue
        accepted.append(what)
    assert accepted == []


def test_the_field_check_sees_a_rule_that_forgets_a_field(monkeypatch: pytest.MonkeyPatch) -> None:
    """The door reopened: an `If` rule that does not read `orelse` lets the mutant through."""
    from flow_kernel.lang import verify as verifier

    def forgetful(node: py.If, add: Any, more: Any) -> None:
        add(node.test)
        more(node.body)

    monkeypatch.setitem(verifier._RULES, py.If, forgetful)
    accepted = []
    for what, mutant in _field_mutants(_mutant_sources()):
        try:
            verify(mutant)
        except VerificationError:
            continue
        accepted.append(what)
    assert "If.orelse" in accepted  # (and what the mutants hold under an `else`, like a `raise`)


# -- `with … as` ---------------------------------------------------------------------------------

WITH_AS = "async def main(rt, args):\n    with rt.stage('s') as v_a:\n        return v_a\n"


def test_with_as_is_refused_even_binding_a_generated_name() -> None:
    """Codegen never writes `with … as` (a stage's context object is the runtime's own);
    the `withitem` rule refuses it, even when every name in it is a generated one."""
    plain = py.parse(WITH_AS.replace(" as v_a", "").replace("return v_a", "return 1"))
    verify(plain)  # the same module without `as` passes: the refusal is about `as`
    with pytest.raises(VerificationError, match="with … as"):
        verify(py.parse(WITH_AS))


def test_the_with_as_check_can_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The door reopened: a `withitem` rule that reads `optional_vars` instead of refusing
    it (the old, dead branch) lets the module through."""
    from flow_kernel.lang import verify as verifier

    def admitting(node: py.withitem, add: Any, more: Any) -> None:
        add(node.context_expr)
        if node.optional_vars is not None:
            add(node.optional_vars)

    monkeypatch.setitem(verifier._RULES, py.withitem, admitting)
    verify(py.parse(WITH_AS))


# -- the shortcut for operands ------------------------------------------------------------------

class _SubName(py.Name):
    pass


class _Str(str):
    pass


class _Int(int):
    pass


def _operands() -> list[py.expr]:
    """Names and constants that pass their rules or not, and what only looks like them."""
    names = ["v_a", "q_1", "rt", "args", "main", "c_main", "t_1", "os", "__import__", "v_a\n", "", "V_a"]
    out: list[py.expr] = [py.Name(n, ctx) for n in names for ctx in (py.Load(), py.Store(), py.Del())]
    out += [_SubName("v_a", py.Load()), _SubName("os", py.Load())]
    out += [py.Constant(v) for v in ("s", "", 0, -1, 1.5, float("nan"), True, False, None, b"x", 1j, ...,
                                     _Str("s"), _Int(1), frozenset(), (1,))]
    out += [py.Starred(py.Name("v_a", py.Load()), py.Load())]
    return out


def _verdict(value: py.expr) -> bool:
    module = py.parse("async def main(rt, args):\n    return 0\n")
    module.body[0].body[0].value = value  # type: ignore[attr-defined]
    try:
        verify(module)
    except VerificationError:
        return False
    return True


def _shortcut_disagreements() -> list[str]:
    """Each operand judged by its own rule (a `return` value) and where `_operands` judges
    it first: a call's argument, a list's element, a dict's key and value."""
    out = []
    for operand in _operands():
        alone = _verdict(operand)
        placed = {
            "argument": py.Call(py.Attribute(py.Name("rt", py.Load()), "fn_len", py.Load()), [operand], []),
            "element": py.List([operand], py.Load()),
            "key": py.Dict([operand], [py.Constant(1)]),
            "value": py.Dict([py.Constant("k")], [operand]),
        }
        for where, value in placed.items():
            if _verdict(value) != alone:
                out.append(f"{py.dump(operand)} as {where}")
    return out


def test_the_operand_shortcut_accepts_what_the_rules_accept() -> None:
    """`verify._operands` accepts a plain name or constant without its rule; it must give
    every operand the verdict the rule gives it."""
    assert _shortcut_disagreements() == []
    refused = [py.dump(o) for o in _operands() if not _verdict(o)]
    assert len(refused) == 24, refused  # os, __import__, a newline, bytes, a subclass of Name, a `Starred`, …


def test_the_operand_comparison_sees_a_shortcut_that_lets_more_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """The door reopened: a shortcut that takes bytes for a plain constant is caught."""
    from flow_kernel.lang import verify as verifier

    monkeypatch.setattr(verifier, "PLAIN_CONSTANTS", verifier.PLAIN_CONSTANTS | {bytes})
    assert sorted(_shortcut_disagreements()) == sorted(
        f"{py.dump(py.Constant(b'x'))} as {where}" for where in ("argument", "element", "key", "value"))
