"""The nodes of a Python syntax tree, in `ast.walk` order, as one list — without the
`Load`/`Store`/`Del` context markers.

`ast.walk` goes through two generators per node (`iter_child_nodes`, `iter_fields`);
on a 5,000-line module (~120,000 nodes) the source map and the verifier spent more
time walking than doing their work. Reading the fields directly, from a per-class
list that leaves out `ctx`, is about twice as fast. The markers carry nothing
to map or verify: the verifier reads `node.ctx` where it matters.
"""

from __future__ import annotations

import ast as py

_FIELDS: dict[type[py.AST], tuple[str, ...]] = {}


def tree_nodes(tree: py.AST) -> list[py.AST]:
    out: list[py.AST] = [tree]
    append = out.append
    fields_of = _FIELDS
    for node in out:  # breadth first, like ast.walk; the list grows as we go
        cls = node.__class__
        fields = fields_of.get(cls)
        if fields is None:
            fields = fields_of[cls] = tuple(f for f in cls._fields if f != "ctx")
        for name in fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, py.AST):
                        append(item)
            elif isinstance(value, py.AST):
                append(value)
    return out
