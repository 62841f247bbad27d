"""Python source text for a generated module: a small writer for the node types the
code generator makes (the verifier's allow-list and a few more), with `ast.unparse`
for anything else.

`ast.unparse` handles all of Python: precedence tables, a context manager per
delimiter, a visitor lookup per node. On a 5,000-line Flow file it took longer than
checking the file. This writer knows its input: it puts parentheses around every
operand that is not an atom instead of reasoning about precedence (parentheses make
no nodes, so the re-parsed tree is the same), and it writes `else: if` where
`ast.unparse` writes `elif` (the same tree again). `sourcemap.write` re-parses the
text and compares it with the built tree node by node, so a writer mistake cannot
reach the sandbox unnoticed.
"""

from __future__ import annotations

import ast as py
import math
from collections.abc import Callable
from typing import Any

INDENT = "    "

_COMPARE: dict[type[py.AST], str] = {py.Eq: "==", py.NotEq: "!=", py.Lt: "<", py.LtE: "<=", py.Gt: ">", py.GtE: ">=",
            py.Is: "is", py.IsNot: "is not", py.In: "in", py.NotIn: "not in"}
_UNARY: dict[type[py.AST], str] = {py.USub: "-", py.UAdd: "+", py.Not: "not ", py.Invert: "~"}
_ATOMS = (py.Name, py.Call, py.Attribute, py.List, py.Tuple, py.Dict, py.NamedExpr)


class _Unsupported(Exception):
    """A node this writer does not know: the whole module goes to `ast.unparse`."""


def unparse(tree: py.Module) -> str:
    lines: list[str] = []
    try:
        _block(tree.body, 0, lines)
    except _Unsupported:
        return py.unparse(tree) + "\n"
    return "\n".join(lines) + "\n"


def _block(body: list[py.stmt], depth: int, lines: list[str]) -> None:
    if not body:
        lines.append(INDENT * depth + "pass")
    for node in body:
        write = _STATEMENTS.get(node.__class__)
        if write is None:
            raise _Unsupported(node.__class__.__name__)
        write(node, depth, lines)


def _orelse(orelse: list[py.stmt], depth: int, lines: list[str]) -> None:
    if orelse:
        lines.append(INDENT * depth + "else:")
        _block(orelse, depth + 1, lines)


def _expr_statement(node: py.Expr, depth: int, lines: list[str]) -> None:
    lines.append(INDENT * depth + _expr(node.value))


def _assign(node: py.Assign, depth: int, lines: list[str]) -> None:
    targets = " = ".join(_expr(t) for t in node.targets)
    lines.append(f"{INDENT * depth}{targets} = {_expr(node.value)}")


def _return(node: py.Return, depth: int, lines: list[str]) -> None:
    lines.append(INDENT * depth + ("return" if node.value is None else "return " + _expr(node.value)))


def _function(node: py.AsyncFunctionDef, depth: int, lines: list[str]) -> None:
    a = node.args
    if node.decorator_list or node.returns is not None or a.posonlyargs or a.vararg or a.kwonlyargs \
            or a.kwarg or a.defaults or a.kw_defaults or any(p.annotation is not None for p in a.args):
        raise _Unsupported("function signature")
    params = ", ".join(p.arg for p in a.args)
    lines.append(f"{INDENT * depth}async def {node.name}({params}):")
    _block(node.body, depth + 1, lines)


def _if(node: py.If, depth: int, lines: list[str]) -> None:
    lines.append(f"{INDENT * depth}if {_expr(node.test)}:")
    _block(node.body, depth + 1, lines)
    _orelse(node.orelse, depth, lines)


def _for(node: py.For, depth: int, lines: list[str]) -> None:
    lines.append(f"{INDENT * depth}for {_expr(node.target)} in {_expr(node.iter)}:")
    _block(node.body, depth + 1, lines)
    _orelse(node.orelse, depth, lines)


def _while(node: py.While, depth: int, lines: list[str]) -> None:
    lines.append(f"{INDENT * depth}while {_expr(node.test)}:")
    _block(node.body, depth + 1, lines)
    _orelse(node.orelse, depth, lines)


def _with(node: py.With, depth: int, lines: list[str]) -> None:
    items = []
    for item in node.items:
        text = _expr(item.context_expr)
        if item.optional_vars is not None:
            text += " as " + _expr(item.optional_vars)
        items.append(text)
    lines.append(f"{INDENT * depth}with {', '.join(items)}:")
    _block(node.body, depth + 1, lines)


def _try(node: py.Try, depth: int, lines: list[str]) -> None:
    pad = INDENT * depth
    lines.append(pad + "try:")
    _block(node.body, depth + 1, lines)
    for handler in node.handlers:
        head = "except"
        if handler.type is not None:
            head += " " + _expr(handler.type)
        if handler.name is not None:
            head += " as " + handler.name
        lines.append(pad + head + ":")
        _block(handler.body, depth + 1, lines)
    _orelse(node.orelse, depth, lines)
    if node.finalbody:
        lines.append(pad + "finally:")
        _block(node.finalbody, depth + 1, lines)


def _raise(node: py.Raise, depth: int, lines: list[str]) -> None:
    if node.exc is not None or node.cause is not None:
        raise _Unsupported("raise with an exception")
    lines.append(INDENT * depth + "raise")


def _word(word: str) -> Callable[[py.stmt, int, list[str]], None]:
    def write(node: py.stmt, depth: int, lines: list[str]) -> None:
        lines.append(INDENT * depth + word)

    return write


_STATEMENTS: dict[type[py.AST], Callable[[Any, int, list[str]], None]] = {
    py.Expr: _expr_statement, py.Assign: _assign, py.Return: _return, py.AsyncFunctionDef: _function,
    py.If: _if, py.For: _for, py.While: _while, py.With: _with, py.Try: _try, py.Raise: _raise,
    py.Break: _word("break"), py.Continue: _word("continue"), py.Pass: _word("pass"),
}


def _expr(node: py.expr) -> str:
    write = _EXPRESSIONS.get(node.__class__)
    if write is None:
        raise _Unsupported(node.__class__.__name__)
    return write(node)


def _operand(node: py.expr) -> str:
    """An expression inside an operator: parenthesised unless it is an atom."""
    if isinstance(node, _ATOMS) or (isinstance(node, py.Constant) and not _negative(node.value)):
        return _expr(node)
    return f"({_expr(node)})"


def _negative(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.copysign(1, value) < 0


def _name(node: py.Name) -> str:
    return node.id


def _attribute(node: py.Attribute) -> str:
    value = node.value
    base = value.id if isinstance(value, py.Name) else f"({_expr(value)})"
    return f"{base}.{node.attr}"


def _call(node: py.Call) -> str:
    func = node.func
    head = _expr(func) if isinstance(func, py.Name | py.Attribute) else f"({_expr(func)})"
    args = [("*" + _operand(a.value)) if isinstance(a, py.Starred) else _expr(a) for a in node.args]
    args += [f"{k.arg}={_expr(k.value)}" if k.arg is not None else "**" + _operand(k.value) for k in node.keywords]
    return head + "(" + ", ".join(args) + ")"


def _constant(node: py.Constant) -> str:
    value = node.value
    if value is None or value is True or value is False or value.__class__ in (int, str):
        return repr(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    raise _Unsupported("constant")  # inf, nan, bytes, complex, Ellipsis: ast.unparse knows them


def _await(node: py.Await) -> str:
    return "await " + _operand(node.value)


def _list(node: py.List) -> str:
    return "[" + ", ".join(_expr(e) for e in node.elts) + "]"


def _tuple(node: py.Tuple) -> str:
    if len(node.elts) == 1:
        return "(" + _expr(node.elts[0]) + ",)"
    return "(" + ", ".join(_expr(e) for e in node.elts) + ")"


def _dict(node: py.Dict) -> str:
    items = [f"{_expr(k)}: {_expr(v)}" if k is not None else "**" + _operand(v)
             for k, v in zip(node.keys, node.values, strict=True)]
    return "{" + ", ".join(items) + "}"


def _bool_op(node: py.BoolOp) -> str:
    word = " and " if isinstance(node.op, py.And) else " or "
    return word.join(_operand(v) for v in node.values)


def _if_exp(node: py.IfExp) -> str:
    return f"{_operand(node.body)} if {_operand(node.test)} else {_operand(node.orelse)}"


def _compare(node: py.Compare) -> str:
    parts = [_operand(node.left)]
    for op, right in zip(node.ops, node.comparators, strict=True):
        parts += [_COMPARE[op.__class__], _operand(right)]
    return " ".join(parts)


def _named(node: py.NamedExpr) -> str:
    return f"({_expr(node.target)} := {_expr(node.value)})"


def _unary(node: py.UnaryOp) -> str:
    return _UNARY[node.op.__class__] + _operand(node.operand)


_EXPRESSIONS: dict[type[py.AST], Callable[[Any], str]] = {
    py.Name: _name, py.Attribute: _attribute, py.Call: _call, py.Constant: _constant, py.Await: _await,
    py.List: _list, py.Tuple: _tuple, py.Dict: _dict, py.BoolOp: _bool_op, py.IfExp: _if_exp,
    py.Compare: _compare, py.NamedExpr: _named, py.UnaryOp: _unary,
}
