"""What the checker's parts share: `checker.py` and its mixins by construct
(`check_decls`, `check_exprs`, `check_calls`, `check_stmts`) import this module, never
each other (the mixins name `Checker` for their `self` annotations only, under
`TYPE_CHECKING`), so the parts form no import cycle."""

from __future__ import annotations

import difflib

from flow_kernel.lang import ast


def closest(name: str, candidates: list[str] | set[str]) -> tuple[str, ...]:
    """The "did you mean" hint for a misspelt name, or no hint."""
    found = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return (f"did you mean `{found[0]}`?",) if found else ()


def article(kind: str) -> str:
    """ "a type", "an agent": for messages that say what a name is instead."""
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def type_names(te: ast.TypeExpr) -> list[ast.TName]:
    """Every type name in a type expression, in source order (alias cycles, F7004)."""
    out: list[ast.TName] = []
    stack: list[ast.TypeExpr] = [te]
    while stack:
        t = stack.pop()
        if isinstance(t, ast.TName):
            out.append(t)
        elif isinstance(t, ast.TArray):
            stack.append(t.item)
        elif isinstance(t, ast.TObject):
            stack.extend(f.type for f in t.fields)
        elif isinstance(t, ast.TUnion):
            stack.extend(t.options)
        elif isinstance(t, ast.TOptional):
            stack.append(t.inner)
        elif isinstance(t, ast.TConstrained):
            stack.append(t.base)
    out.sort(key=lambda n: n.span.start)
    return out


def type_references(node: ast.Decl) -> set[str]:
    """Names of types a declaration's signature mentions (for F7004)."""
    exprs: list[ast.TypeExpr] = []
    if isinstance(node, ast.TypeDecl):
        exprs.append(node.type)
    elif isinstance(node, (ast.ToolDecl, ast.WorkflowDecl)):
        exprs.extend(p.type for p in node.params)
        if node.returns is not None:
            exprs.append(node.returns)
    elif isinstance(node, ast.AgentDecl):
        exprs.extend(f.value for f in node.fields if isinstance(f.value, ast.TypeExpr))
    return {n.name for e in exprs for n in type_names(e)}
