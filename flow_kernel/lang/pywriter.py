"""Python source text for a generated module: a small writer for the node types the
code generator makes (the verifier's allow-list and a few more), with `ast.unparse`
for anything else.

`ast.unparse` handles all of Python: precedence tables, a context manager per
delimiter, a visitor lookup per node. On a 5,000-line Flow file it took longer than
checking the file. This writer knows its input: it puts parentheses around every
operand that is not an atom instead of reasoning about precedence (parentheses make
no nodes, so parsing the text gives the same tree), and it writes `else: if` where
`ast.unparse` writes `elif` (the same tree again).

It also records, as it writes, where each node with a Flow origin lands in the text:
the same (line, col, end_line, end_col) that parsing the text would give the node
(columns in UTF-8 bytes, a node inside added parentheses without them), so the source
map needs no second parse of the module (tests/lang/test_sourcemap_positions.py
compares the two over every test program). Whatever could make the text say something
else than the tree — a node it does not know, a negative number constant, a target
not marked `Store`, an empty body — makes it give up (`Unsupported`); the caller then
writes and parses the module the old way.
"""

from __future__ import annotations

import ast as py
import math
from collections.abc import Callable
from typing import Any

from flow_kernel.source import Span

INDENT = "    "

Position = tuple[int, int, int, int]  # line, col, end_line, end_col (1-based lines, 0-based byte cols)
Entry = tuple[Position, Span]

_COMPARE: dict[type[py.AST], str] = {py.Eq: "==", py.NotEq: "!=", py.Lt: "<", py.LtE: "<=", py.Gt: ">", py.GtE: ">=",
            py.Is: "is", py.IsNot: "is not", py.In: "in", py.NotIn: "not in"}
_BINARY: dict[type[py.AST], str] = {py.Add: "+", py.Sub: "-", py.Mult: "*"}  # what exact_ints.py writes
_UNARY: dict[type[py.AST], str] = {py.USub: "-", py.UAdd: "+", py.Not: "not ", py.Invert: "~"}
_ATOMS = (py.Name, py.Call, py.Attribute, py.List, py.Tuple, py.Dict, py.NamedExpr)
_Name, _Constant, _Attribute, _Starred = py.Name, py.Constant, py.Attribute, py.Starred


class Unsupported(Exception):
    """A node (or a shape) this writer does not write faithfully."""


def unparse(tree: py.Module) -> str:
    try:
        return TextWriter().write(tree)
    except Unsupported:
        _give_statements_a_line(tree.body)
        return py.unparse(tree) + "\n"


def _give_statements_a_line(stmts: list[py.stmt]) -> None:
    """`ast.unparse` reads `lineno` of statements that may carry a type comment; a built
    tree has none (its positions come from the text), so a placeholder will do. (Cheaper
    than `ast.fix_missing_locations`, which visits every expression node too.)"""
    for node in stmts:
        if not hasattr(node, "lineno"):
            node.lineno = 1
        for name in ("body", "orelse", "finalbody", "handlers"):
            children = getattr(node, name, None)
            if children:
                _give_statements_a_line(children)


class ModuleWriter:
    """Writes one module; `entries` gets (position, span) for every node of `origins`, in
    the order of the text (a node before the nodes inside it)."""

    def __init__(self, origins: dict[int, Span]) -> None:
        self.origins = origins
        self.entries: list[Any] = []
        self.lines: list[str] = []
        self.max_depth = 0  # deepest block: Python's tokenizer stops at 100 indentation levels
        # The text of each list and dict written, by node, to write a literal the generator
        # shares between many places once (`CodeGenerator.literal`); only with no origins:
        # a node's text does not depend on where it stands, its entries do.
        self.texts: dict[int, str] | None = None if origins else {}

    def write(self, tree: py.Module) -> str:
        self.block(tree.body, 0)
        return "\n".join(self.lines) + "\n"

    # -- statements --------------------------------------------------------------------
    def block(self, body: list[py.stmt], depth: int) -> None:
        if not body:
            raise Unsupported("empty body")  # it would need a `pass` the tree does not have
        if depth > self.max_depth:
            self.max_depth = depth
        origins = self.origins
        entries = self.entries
        for node in body:
            write = _STATEMENTS.get(node.__class__)
            if write is None:
                raise Unsupported(node.__class__.__name__)
            span = origins.get(id(node))
            if span is None:
                write(self, node, depth)
                continue
            index = len(entries)
            entries.append(None)
            line = len(self.lines) + 1
            write(self, node, depth)
            last = self.lines[-1]
            end_col = len(last) if last.isascii() else len(last.encode())
            entries[index] = ((line, len(INDENT) * depth, len(self.lines), end_col), span)

    def line(self, depth: int, head: str, text: str) -> None:
        """Add a line: `head` (ASCII) then `text`, the part whose expressions were written
        from column `len(INDENT * depth + head)` on, with their entries since `self.mark`."""
        line = INDENT * depth + head + text
        if not line.isascii():
            self._to_bytes(line)
        self.lines.append(line)

    def _to_bytes(self, line: str) -> None:
        # Entries so far are in characters; Python counts a column in UTF-8 bytes.
        number = len(self.lines) + 1
        entries = self.entries
        for i in range(len(entries) - 1, -1, -1):
            entry = entries[i]
            if entry is None:
                continue
            (start_line, col, end_line, end_col), span = entry
            if start_line != number:
                break
            entries[i] = ((start_line, len(line[:col].encode()), end_line, len(line[:end_col].encode())), span)

    def orelse(self, orelse: list[py.stmt], depth: int) -> None:
        if orelse:
            self.lines.append(INDENT * depth + "else:")
            self.block(orelse, depth + 1)

    def expr_at(self, node: py.expr, depth: int, head: str) -> str:
        return self.expr(node, len(INDENT) * depth + len(head))

    # -- expressions -------------------------------------------------------------------
    def expr(self, node: py.expr, col: int) -> str:
        """`node`'s text, which starts at column `col` (in characters) of the current line."""
        cls = node.__class__
        if cls is _Name or cls is _Constant:
            # Leaves (most nodes): written here, and with no nodes inside they need no
            # place kept in `entries` before their text is known.
            leaf: str = node.id if cls is _Name else _constant(self, node, col)  # type: ignore[attr-defined, arg-type]
            span = self.origins.get(id(node))
            if span is not None:
                line = len(self.lines) + 1
                self.entries.append(((line, col, line, col + len(leaf)), span))
            return leaf
        write = _EXPRESSIONS.get(cls)
        if write is None:
            raise Unsupported(node.__class__.__name__)
        span = self.origins.get(id(node))
        if span is None:
            return write(self, node, col)
        entries = self.entries
        index = len(entries)
        entries.append(None)
        text: str = write(self, node, col)
        line = len(self.lines) + 1
        if node.__class__ is py.NamedExpr:  # `(x := y)`: the parentheses are not the node's
            entries[index] = ((line, col + 1, line, col + len(text) - 1), span)
        else:
            entries[index] = ((line, col, line, col + len(text)), span)
        return text

    def operand(self, node: py.expr, col: int) -> str:
        """An expression inside an operator: parenthesised unless it is an atom."""
        if isinstance(node, _ATOMS) or node.__class__ is py.Constant:
            return self.expr(node, col)
        return "(" + self.expr(node, col + 1) + ")"

    def target(self, node: py.expr, col: int) -> str:
        """A name bound: its text must be a binding (`Store`) in the tree too, or the
        verifier, which reads the tree, would judge a different module."""
        _check_store(node)
        return self.expr(node, col)


class TextWriter(ModuleWriter):
    """A module's text alone, with no origins to record (the compiler's pass: the source
    map records positions on its first lookup). `expr` is the class's, not an instance
    attribute: a bound method stored on the writer would be a reference cycle, keeping
    the writer and its ~9,000 lines alive until the next full collection.

    Columns are only for entries: the statements and calls (most of the nodes) are
    written by text-only versions (`_TEXT_STATEMENTS`, `_TEXT_EXPRESSIONS`) that count none."""

    def __init__(self) -> None:
        super().__init__({})

    def block(self, body: list[py.stmt], depth: int) -> None:
        if not body:
            raise Unsupported("empty body")
        if depth > self.max_depth:
            self.max_depth = depth
        statements = _TEXT_STATEMENTS
        for node in body:
            write = statements.get(node.__class__)
            if write is None:
                raise Unsupported(node.__class__.__name__)
            write(self, node, depth)

    def line(self, depth: int, head: str, text: str) -> None:
        self.lines.append(INDENT * depth + head + text)  # no entries to count in bytes

    def expr(self, node: py.expr, col: int) -> str:
        cls = node.__class__
        if cls is _Name:
            return node.id  # type: ignore[attr-defined, no-any-return]
        if cls is _Constant:
            return _constant(self, node, col)  # type: ignore[arg-type]
        write = _TEXT_EXPRESSIONS.get(cls)
        if write is None:
            raise Unsupported(cls.__name__)
        return write(self, node, col)


def _check_store(node: py.expr) -> None:
    if not isinstance(node, py.Name | py.Tuple | py.List) or node.ctx.__class__ is not py.Store:
        raise Unsupported("target")
    if not isinstance(node, py.Name):
        for element in node.elts:
            _check_store(element)


def _expr_statement(w: ModuleWriter, node: py.Expr, depth: int) -> None:
    w.line(depth, "", w.expr_at(node.value, depth, ""))


def _assign(w: ModuleWriter, node: py.Assign, depth: int) -> None:
    col = len(INDENT) * depth
    parts = []
    for t in node.targets:
        text = w.target(t, col)
        parts.append(text)
        col += len(text) + 3
    parts.append(w.expr(node.value, col))
    w.line(depth, "", " = ".join(parts))


def _return(w: ModuleWriter, node: py.Return, depth: int) -> None:
    if node.value is None:
        w.line(depth, "return", "")
    else:
        w.line(depth, "return ", w.expr_at(node.value, depth, "return "))


def _function(w: ModuleWriter, node: py.AsyncFunctionDef, depth: int) -> None:
    a = node.args
    if node.decorator_list or node.returns is not None or a.posonlyargs or a.vararg or a.kwonlyargs \
            or a.kwarg or a.defaults or a.kw_defaults or any(p.annotation is not None for p in a.args):
        raise Unsupported("function signature")
    params = ", ".join(p.arg for p in a.args)
    w.line(depth, f"async def {node.name}({params}):", "")
    w.block(node.body, depth + 1)


def _if(w: ModuleWriter, node: py.If, depth: int) -> None:
    w.line(depth, "if ", w.expr_at(node.test, depth, "if ") + ":")
    w.block(node.body, depth + 1)
    w.orelse(node.orelse, depth)


def _for(w: ModuleWriter, node: py.For, depth: int) -> None:
    target = w.target(node.target, len(INDENT) * depth + 4)
    col = len(INDENT) * depth + 4 + len(target) + 4
    w.line(depth, "for ", f"{target} in {w.expr(node.iter, col)}:")
    w.block(node.body, depth + 1)
    w.orelse(node.orelse, depth)


def _while(w: ModuleWriter, node: py.While, depth: int) -> None:
    w.line(depth, "while ", w.expr_at(node.test, depth, "while ") + ":")
    w.block(node.body, depth + 1)
    w.orelse(node.orelse, depth)


def _with(w: ModuleWriter, node: py.With, depth: int) -> None:
    col = len(INDENT) * depth + 5
    items = []
    for item in node.items:
        if item.optional_vars is not None:
            raise Unsupported("with … as")
        text = w.expr(item.context_expr, col)
        items.append(text)
        col += len(text) + 2
    w.line(depth, "with ", ", ".join(items) + ":")
    w.block(node.body, depth + 1)


def _try(w: ModuleWriter, node: py.Try, depth: int) -> None:
    w.line(depth, "try:", "")
    w.block(node.body, depth + 1)
    for handler in node.handlers:
        head = "except"
        text = ""
        if handler.type is not None:
            head += " "
            text = w.expr_at(handler.type, depth, head)
        if handler.name is not None:
            if not handler.name.isidentifier():
                raise Unsupported("handler name")
            text += " as " + handler.name
        w.line(depth, head, text + ":")
        w.block(handler.body, depth + 1)
    w.orelse(node.orelse, depth)
    if node.finalbody:
        w.lines.append(INDENT * depth + "finally:")
        w.block(node.finalbody, depth + 1)


def _raise(w: ModuleWriter, node: py.Raise, depth: int) -> None:
    if node.exc is not None or node.cause is not None:
        raise Unsupported("raise with an exception")
    w.line(depth, "raise", "")


def _word(word: str) -> Callable[[ModuleWriter, py.stmt, int], None]:
    def write(w: ModuleWriter, node: py.stmt, depth: int) -> None:
        w.line(depth, word, "")

    return write


_STATEMENTS: dict[type[py.AST], Callable[[ModuleWriter, Any, int], None]] = {
    py.Expr: _expr_statement, py.Assign: _assign, py.Return: _return, py.AsyncFunctionDef: _function,
    py.If: _if, py.For: _for, py.While: _while, py.With: _with, py.Try: _try, py.Raise: _raise,
    py.Break: _word("break"), py.Continue: _word("continue"), py.Pass: _word("pass"),
}


def _name(w: ModuleWriter, node: py.Name, col: int) -> str:
    return node.id


def _attribute(w: ModuleWriter, node: py.Attribute, col: int) -> str:
    value = node.value
    if value.__class__ is py.Name:
        base = w.expr(value, col)
    else:
        base = "(" + w.expr(value, col + 1) + ")"
    return f"{base}.{node.attr}"


def _call(w: ModuleWriter, node: py.Call, col: int) -> str:
    func = node.func
    value = getattr(func, "value", None)
    if func.__class__ is _Attribute and value.__class__ is _Name \
            and id(func) not in w.origins and id(value) not in w.origins:
        head = value.id + "." + func.attr  # `rt.<name>`, what `_attribute` would write, with no entries
    elif isinstance(func, py.Name | py.Attribute):
        head = w.expr(func, col)
    else:
        head = "(" + w.expr(func, col + 1) + ")"
    col += len(head) + 1
    args = []
    for a in node.args:
        if a.__class__ is py.Starred:
            text = "*" + w.operand(a.value, col + 1)
        else:
            text = w.expr(a, col)
        args.append(text)
        col += len(text) + 2
    for k in node.keywords:
        if k.arg is not None:
            text = f"{k.arg}={w.expr(k.value, col + len(k.arg) + 1)}"
        else:
            text = "**" + w.operand(k.value, col + 2)
        args.append(text)
        col += len(text) + 2
    return head + "(" + ", ".join(args) + ")"


def _constant(w: ModuleWriter, node: py.Constant, col: int) -> str:
    value = node.value
    if value is None or value is True or value is False or value.__class__ is str:
        return repr(value)
    if value.__class__ is int and value >= 0:
        return repr(value)
    if value.__class__ is float and math.isfinite(value) and math.copysign(1, value) > 0:
        return repr(value)
    # inf, nan, bytes, complex, Ellipsis: ast.unparse knows them; a negative number would
    # be read back as `-` applied to a number, another tree.
    raise Unsupported("constant")


def _await(w: ModuleWriter, node: py.Await, col: int) -> str:
    return "await " + w.operand(node.value, col + 6)


def _elements(w: ModuleWriter, elts: list[py.expr], col: int) -> list[str]:
    texts = []
    for e in elts:
        text = w.expr(e, col)
        texts.append(text)
        col += len(text) + 2
    return texts


def _list(w: ModuleWriter, node: py.List, col: int) -> str:
    texts = w.texts
    if texts is None:
        return "[" + ", ".join(_elements(w, node.elts, col + 1)) + "]"
    text = texts.get(id(node))
    if text is None:
        text = texts[id(node)] = "[" + ", ".join(_elements(w, node.elts, col + 1)) + "]"
    return text


def _tuple(w: ModuleWriter, node: py.Tuple, col: int) -> str:
    if len(node.elts) == 1:
        return "(" + w.expr(node.elts[0], col + 1) + ",)"
    return "(" + ", ".join(_elements(w, node.elts, col + 1)) + ")"


def _dict(w: ModuleWriter, node: py.Dict, col: int) -> str:
    texts = w.texts
    if texts is None:
        return _dict_text(w, node, col)
    text = texts.get(id(node))
    if text is None:
        text = texts[id(node)] = _dict_text(w, node, col)
    return text


def _dict_text(w: ModuleWriter, node: py.Dict, col: int) -> str:
    col += 1
    items = []
    for k, v in zip(node.keys, node.values, strict=True):
        if k is None:
            text = "**" + w.operand(v, col + 2)
        else:
            key = w.expr(k, col)
            text = f"{key}: {w.expr(v, col + len(key) + 2)}"
        items.append(text)
        col += len(text) + 2
    return "{" + ", ".join(items) + "}"


def _bool_op(w: ModuleWriter, node: py.BoolOp, col: int) -> str:
    word = " and " if node.op.__class__ is py.And else " or "
    texts = []
    for v in node.values:
        text = w.operand(v, col)
        texts.append(text)
        col += len(text) + len(word)
    return word.join(texts)


def _if_exp(w: ModuleWriter, node: py.IfExp, col: int) -> str:
    body = w.operand(node.body, col)
    col += len(body) + 4
    test = w.operand(node.test, col)
    col += len(test) + 6
    return f"{body} if {test} else {w.operand(node.orelse, col)}"


def _compare(w: ModuleWriter, node: py.Compare, col: int) -> str:
    parts = [w.operand(node.left, col)]
    col += len(parts[0])
    for op, right in zip(node.ops, node.comparators, strict=True):
        word = _COMPARE[op.__class__]
        text = w.operand(right, col + len(word) + 2)
        parts += [word, text]
        col += len(word) + 2 + len(text)
    return " ".join(parts)


def _binop(w: ModuleWriter, node: py.BinOp, col: int) -> str:
    word = _BINARY.get(node.op.__class__)
    if word is None:
        raise Unsupported("operator")
    left = w.operand(node.left, col)
    col += len(left) + len(word) + 2
    return f"{left} {word} {w.operand(node.right, col)}"


def _named(w: ModuleWriter, node: py.NamedExpr, col: int) -> str:
    target = w.target(node.target, col + 1)
    return f"({target} := {w.expr(node.value, col + 1 + len(target) + 4)})"


def _unary(w: ModuleWriter, node: py.UnaryOp, col: int) -> str:
    word = _UNARY[node.op.__class__]
    return word + w.operand(node.operand, col + len(word))


_EXPRESSIONS: dict[type[py.AST], Callable[[ModuleWriter, Any, int], str]] = {
    py.Name: _name, py.Attribute: _attribute, py.Call: _call, py.Constant: _constant, py.Await: _await,
    py.List: _list, py.Tuple: _tuple, py.Dict: _dict, py.BoolOp: _bool_op, py.IfExp: _if_exp,
    py.Compare: _compare, py.NamedExpr: _named, py.UnaryOp: _unary, py.BinOp: _binop,
}


# The text writer's (no columns, no entries): the same text as the functions above.
def _expr_statement_text(w: ModuleWriter, node: py.Expr, depth: int) -> None:
    w.lines.append(INDENT * depth + w.expr(node.value, 0))


def _assign_text(w: ModuleWriter, node: py.Assign, depth: int) -> None:
    parts = [w.target(t, 0) for t in node.targets]
    parts.append(w.expr(node.value, 0))
    w.lines.append(INDENT * depth + " = ".join(parts))


def _call_text(w: ModuleWriter, node: py.Call, col: int) -> str:
    func = node.func
    cls = func.__class__
    head: str
    if cls is _Attribute and func.value.__class__ is _Name:  # type: ignore[attr-defined]
        head = func.value.id + "." + func.attr  # type: ignore[attr-defined]  # `_attribute`'s text
    elif cls is _Name:
        head = func.id  # type: ignore[attr-defined]
    elif isinstance(func, py.Name | py.Attribute):
        head = w.expr(func, 0)
    else:
        head = "(" + w.expr(func, 0) + ")"
    expr = w.expr
    args = []
    for a in node.args:
        c = a.__class__
        if c is _Name:  # (most arguments: `expr`'s first case, without the call)
            args.append(a.id)  # type: ignore[attr-defined]
        elif c is _Constant and a.value.__class__ is str:  # type: ignore[attr-defined]
            args.append(repr(a.value))  # type: ignore[attr-defined]  # what `_constant` writes
        elif c is _Starred:
            args.append("*" + w.operand(a.value, 0))  # type: ignore[attr-defined]
        else:
            args.append(expr(a, 0))
    for k in node.keywords:
        args.append(f"{k.arg}={expr(k.value, 0)}" if k.arg is not None else "**" + w.operand(k.value, 0))
    return head + "(" + ", ".join(args) + ")"


_TEXT_STATEMENTS: dict[type[py.AST], Callable[[ModuleWriter, Any, int], None]] = {**_STATEMENTS, py.Expr: _expr_statement_text, py.Assign: _assign_text}
_TEXT_EXPRESSIONS: dict[type[py.AST], Callable[[ModuleWriter, Any, int], str]] = {**_EXPRESSIONS, py.Call: _call_text}
