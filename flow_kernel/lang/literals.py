"""Constant JSON values of literal expressions (for agent fields, constraints, schemas)."""

from __future__ import annotations

from flow_kernel.lang import ast


class _NotLiteral:
    def __repr__(self) -> str:
        return "NOT_LITERAL"


NOT_LITERAL: object = _NotLiteral()


def literal_value(node: object) -> object:
    """The JSON value of a literal expression, or `NOT_LITERAL`."""
    if isinstance(node, ast.IntLit):
        return node.value
    if isinstance(node, ast.NumLit):
        return node.value
    if isinstance(node, ast.DurationLit):
        return node.ms
    if isinstance(node, ast.StrLit):
        const = node.constant
        return NOT_LITERAL if const is None else const
    if isinstance(node, ast.BoolLit):
        return node.value
    if isinstance(node, ast.NullLit):
        return None
    if isinstance(node, ast.Unary) and node.op == "-" and isinstance(node.operand, (ast.IntLit, ast.NumLit)):
        return -node.operand.value
    if isinstance(node, ast.ArrayLit):
        items = [literal_value(i) for i in node.items]
        return NOT_LITERAL if any(i is NOT_LITERAL for i in items) else items
    if isinstance(node, ast.ObjectLit):
        out: dict[str, object] = {}
        for entry in node.entries:
            v = literal_value(entry.value)
            if v is NOT_LITERAL:
                return NOT_LITERAL
            out[entry.key] = v
        return out
    return NOT_LITERAL


MAX_EXACT = 2**53  # the largest integral float shown as an int


def normalise(value: object) -> object:
    """Integral floats (|x| ≤ 2^53) become ints, at any depth: how Flow shows numbers
    (language.md §1), on the host as in the sandbox. Iterative: a value nested as deep
    as the sandbox lets one be (256 levels) or deeper never meets Python's recursion limit."""
    root: list[object] = [None]
    todo: list[tuple[object, list[object] | dict[str, object], int | str]] = [(value, root, 0)]
    while todo:
        item, parent, key = todo.pop()
        if isinstance(item, float) and item.is_integer() and abs(item) <= MAX_EXACT:
            item = int(item)
        elif isinstance(item, list):
            copy: list[object] = [None] * len(item)
            todo.extend((v, copy, i) for i, v in enumerate(item))
            item = copy
        elif isinstance(item, dict):
            mapping: dict[str, object] = dict.fromkeys(item)
            todo.extend((v, mapping, k) for k, v in item.items())
            item = mapping
        parent[key] = item  # type: ignore[index]
    return root[0]
