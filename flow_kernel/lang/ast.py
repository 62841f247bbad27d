"""The Flow syntax tree. Every node carries the span of the source it came from.

Nodes compare by identity (`eq=False`) so the checker can key side tables on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flow_kernel.native_marks import rebuilt_by_fields
from flow_kernel.source import Span


@dataclass(eq=False)
class Node:
    span: Span

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


# --- names -------------------------------------------------------------------


@dataclass(eq=False)
class Ident(Node):
    name: str


# --- type expressions --------------------------------------------------------


@dataclass(eq=False)
class TypeExpr(Node):
    pass


@dataclass(eq=False)
class TName(TypeExpr):
    name: str


@dataclass(eq=False)
class TLiteral(TypeExpr):
    value: str | int | float | bool | None


@dataclass(eq=False)
class TArray(TypeExpr):
    item: TypeExpr


@dataclass(eq=False)
class TField(Node):
    name: Ident
    type: TypeExpr
    optional: bool


@dataclass(eq=False)
class TObject(TypeExpr):
    fields: list[TField]
    open: bool


@dataclass(eq=False)
class TUnion(TypeExpr):
    options: list[TypeExpr]


@dataclass(eq=False)
class TOptional(TypeExpr):
    inner: TypeExpr


@dataclass(eq=False)
class TSchema(TypeExpr):
    body: ObjectLit


@dataclass(eq=False)
class TConstrained(TypeExpr):
    base: TypeExpr
    args: list[NamedValue]


# --- expressions -------------------------------------------------------------


@dataclass(eq=False)
class Expr(Node):
    pass


@dataclass(eq=False)
class IntLit(Expr):
    value: int


@dataclass(eq=False)
class NumLit(Expr):
    value: float


@dataclass(eq=False)
class DurationLit(Expr):
    ms: int


@dataclass(eq=False)
class StrLit(Expr):
    """A string; `parts` holds literal text and interpolated expressions."""

    parts: list[str | Expr]

    @property
    def constant(self) -> str | None:
        if all(isinstance(p, str) for p in self.parts):
            return "".join(p for p in self.parts if isinstance(p, str))
        return None


@dataclass(eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(eq=False)
class NullLit(Expr):
    pass


@dataclass(eq=False)
class ArrayLit(Expr):
    items: list[Expr]


@dataclass(eq=False)
class ObjectEntry(Node):
    key: str
    key_span: Span
    value: Expr


@dataclass(eq=False)
class ObjectLit(Expr):
    entries: list[ObjectEntry]


@dataclass(eq=False)
class Name(Expr):
    name: str


@dataclass(eq=False)
class It(Expr):
    pass


@dataclass(eq=False)
class ErrorExpr(Expr):
    """Stands for an expression that did not parse (already reported)."""


@dataclass(eq=False)
class Unary(Expr):
    op: str  # "-" or "not"
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    op: str
    left: Expr
    right: Expr
    op_span: Span


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class Arg(Node):
    name: Ident | None
    value: Expr


@dataclass(eq=False)
class TypeArg(Expr):
    """The value of an `output: Type` call option."""

    type: TypeExpr


@dataclass(eq=False)
class Call(Expr):
    callee: Expr
    args: list[Arg]


@dataclass(eq=False)
class Member(Expr):
    obj: Expr
    name: Ident
    optional: bool  # `?.`


@dataclass(eq=False)
class Index(Expr):
    obj: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    obj: Expr
    lower: Expr | None
    upper: Expr | None


@dataclass(eq=False)
class Project(Expr):
    """`xs[*].a.b`: the field path mapped over an array."""

    obj: Expr
    path: list[Ident]


@dataclass(eq=False)
class Pick(Expr):
    obj: Expr
    fields: list[Ident]


@dataclass(eq=False)
class Lambda(Expr):
    params: list[Ident]
    body: Expr | Block


@dataclass(eq=False)
class ParallelBranch(Node):
    name: Ident
    value: Expr


@dataclass(eq=False)
class Parallel(Expr):
    branches: list[ParallelBranch]
    keyword_span: Span


@dataclass(eq=False)
class Approve(Expr):
    question: Expr
    details: Expr | None
    deadline: Deadline | None = None


@dataclass(eq=False)
class Ask(Expr):
    question: Expr
    choice: Expr | None
    deadline: Deadline | None = None


@dataclass(eq=False)
class Deadline(Node):
    """`timeout T else V` on `approve`/`ask`: after T with no answer, V is the answer."""

    timeout: Expr
    default: Expr


@dataclass(eq=False)
class Run(Expr):
    executable: Expr
    arguments: Expr
    stdin: Expr | None
    timeout: Expr | None


@dataclass(eq=False)
class ExpectClause(Node):
    cond: Expr
    message: Expr | None


@dataclass(eq=False)
class Expect(Expr):
    """An agent call followed by `expect` clauses."""

    call: Expr
    clauses: list[ExpectClause]


# --- statements --------------------------------------------------------------


@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class Block(Node):
    body: list[Stmt]


@dataclass(eq=False)
class NamedValue(Node):
    name: Ident
    value: Expr


@dataclass(eq=False)
class Limits(Stmt):
    entries: list[NamedValue]


@dataclass(eq=False)
class Let(Stmt):
    name: Ident
    type: TypeExpr | None
    value: Expr
    mutable: bool


@dataclass(eq=False)
class Assign(Stmt):
    target: Name
    value: Expr


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Block
    other: Block | If | None


@dataclass(eq=False)
class For(Stmt):
    var: Ident
    index: Ident | None
    iterable: Expr
    body: Block


@dataclass(eq=False)
class While(Stmt):
    cond: Expr
    body: Block


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Stage(Stmt):
    name: Expr
    body: Block


@dataclass(eq=False)
class Pipeline(Stmt):
    name: Expr
    stages: list[Stage]


@dataclass(eq=False)
class Verify(Stmt):
    cond: Expr
    message: Expr | None
    require: bool


@dataclass(eq=False)
class Emit(Stmt):
    kind: Ident
    value: Expr


@dataclass(eq=False)
class Print(Stmt):
    value: Expr


@dataclass(eq=False)
class Log(Stmt):
    value: Expr


@dataclass(eq=False)
class Publish(Stmt):
    name: Expr
    value: Expr
    primary: bool = False  # `publish primary NAME e`: the run's one primary artifact


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None


@dataclass(eq=False)
class Async(Stmt):
    name: Ident
    body: Block


@dataclass(eq=False)
class Await(Stmt):
    name: Ident


@dataclass(eq=False)
class Catch(Node):
    codes: list[StrLit]
    binding: Ident | None
    body: Block


@dataclass(eq=False)
class Try(Stmt):
    body: Block
    catches: list[Catch]


@dataclass(eq=False)
class ExprStmt(Stmt):
    expr: Expr


# --- declarations ------------------------------------------------------------


@dataclass(eq=False)
class Decl(Node):
    name: Ident
    doc: str | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Use(Node):
    path: str
    path_span: Span


@dataclass(eq=False)
class TypeDecl(Decl):
    type: TypeExpr


@dataclass(eq=False)
class Param(Node):
    name: Ident
    type: TypeExpr
    optional: bool


@dataclass(eq=False)
class ToolDecl(Decl):
    params: list[Param]
    returns: TypeExpr | None
    requires_approval: bool
    # `from mcp "server"` or `from mcp "server/remote-name"`: the tool is lent by an MCP server
    # the configuration declares (runtime/remote/mcp.py), not a Python function on the host.
    mcp: str | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class AgentField(Node):
    name: Ident
    value: Expr | TypeExpr


@dataclass(eq=False)
class AgentDecl(Decl):
    fields: list[AgentField]


@dataclass(eq=False)
class TeamDecl(Decl):
    fields: list[AgentField]


@dataclass(eq=False)
class RubricDecl(Decl):
    """`rubric Name { criteria: [ {id, description, weight, scale}, … ] }` (check_panels.py)."""

    fields: list[AgentField]


@dataclass(eq=False)
class PanelDecl(Decl):
    """`panel Name { experts: [...], rubric: R, judge: A, rounds: n, converge: {spread: x} }`."""

    fields: list[AgentField]


@dataclass(eq=False)
class WorkflowDecl(Decl):
    params: list[Param]
    returns: TypeExpr | None
    body: Block


@dataclass(eq=False)
class FnDecl(WorkflowDecl):
    """`fn name(p: T, …) -> R { … }`: a user function. Shaped like a workflow, but it runs
    inside its caller's frame and limits, may recurse (bounded by `steps`) and is no entry
    point (language-guide.md "Functions")."""


@dataclass(eq=False)
class Module(Node):
    """A parsed file or cell: `uses`, declarations and top-level statements in order."""

    uses: list[Use]
    decls: list[Decl]
    statements: list[Stmt]
