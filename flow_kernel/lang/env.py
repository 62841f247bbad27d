"""What the checker knows while it walks: declarations, scopes, frames and tasks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.native_marks import rebuilt_by_fields
from flow_kernel.source import Span

if TYPE_CHECKING:
    from flow_kernel.lang.prompt_files import PromptFile

DEFAULT_LIMITS = {"agent_runs": 100, "duration": 600_000, "concurrency": 4, "steps": 1000}


@dataclass
class AgentInfo:
    output: T.Type = T.STRING
    tools: list[str] = field(default_factory=list)
    model: str = "default"
    timeout_ms: int | None = None
    timeout_span: Span | None = None
    # Prompt fields whose text is read from files (`file("…")`), resolved at check time:
    # field -> text (or list of texts), and every file with its digest (check_prompts.py).
    texts: dict[str, object] = field(default_factory=dict)
    prompt_files: list[PromptFile] = field(default_factory=list)

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass
class TeamInfo:
    main: str | None = None
    members: list[str] = field(default_factory=list)

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass
class Criterion:
    """One criterion of a rubric: scores are integers from `low` to `high`."""

    id: str
    description: str
    weight: int | float  # as written: a compiled `float` field would store 3 as 3.0
    low: int
    high: int

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass
class RubricInfo:
    criteria: list[Criterion] = field(default_factory=list)
    prompt_files: list[PromptFile] = field(default_factory=list)

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass
class PanelInfo:
    experts: list[tuple[str, str]] = field(default_factory=list)  # (agent, domain)
    rubric: str | None = None
    judge: str | None = None
    rounds: int = 1
    # Converged when, on every criterion, the experts' scores differ by at most this; kept as
    # written (a compiled `float` field would store 1 as 1.0).
    spread: int | float = 0
    result: T.Type = T.ANY  # the record a call returns
    verdict: T.Type = T.ANY  # what each expert answers (its output contract)

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass
class WorkflowInfo:
    params: list[tuple[str, T.Type, bool]] = field(default_factory=list)  # name, type, optional
    returns: T.Type | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass
class ToolInfo:
    params: list[tuple[str, T.Type, bool]] = field(default_factory=list)
    returns: T.Type = T.ANY

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass(eq=False)
class DeclEntry:
    """A declaration visible to the code being checked."""

    kind: str  # "type" | "tool" | "agent" | "team" | "workflow" | "rubric" | "panel" | "fn"
    node: ast.Decl
    origin: str  # "cell" (the source being checked), "use" or "session"
    used: bool = False
    named: T.Named | None = None  # for type aliases
    agent: AgentInfo | None = None
    team: TeamInfo | None = None
    workflow: WorkflowInfo | None = None  # a workflow's or a function's signature
    tool: ToolInfo | None = None
    rubric: RubricInfo | None = None
    panel: PanelInfo | None = None

    @property
    def name(self) -> str:
        return self.node.name.name

    @property
    def span(self) -> Span:
        return self.node.name.span

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass(eq=False)
class Frame:
    """A body that runs as one unit: a workflow, a function, a lambda or an `async` task."""

    kind: str  # "workflow" | "fn" | "lambda" | "async"
    pure: bool = False  # lambda given to a pure builtin (F5020)
    parallel: bool = False  # parallelMap lambda (F5011)
    returns: list[T.Type] = field(default_factory=list)
    loop_depth: int = 0
    nesting: int = 0  # scope-opening blocks inside this frame (async must be at 0)
    # the `if` arms the statement being checked is in, as (id of the `if`, 0 then / 1 else)
    branch: tuple[tuple[int, int], ...] = ()
    primaries: list[tuple[tuple[tuple[int, int], ...], Span]] = field(default_factory=list)  # `publish primary`s

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass(eq=False)
class Binding:
    name: str
    type: T.Type
    mutable: bool
    span: Span
    kind: str  # "let" "var" "param" "loop" "lambda" "catch" "session"
    frame: Frame | None
    used: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass(eq=False)
class TaskInfo:
    name: str
    span: Span
    fields: dict[str, T.Type] = field(default_factory=dict)
    awaited: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


class Scope:
    def __init__(self, parent: Scope | None) -> None:
        self.parent = parent
        self.bindings: dict[str, Binding] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return Scope, (self.parent,), self.bindings

    def __setstate__(self, bindings: dict[str, Binding]) -> None:
        self.bindings = bindings

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.bindings.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def visible_names(self) -> list[str]:
        names: list[str] = []
        scope: Scope | None = self
        while scope is not None:
            names.extend(scope.bindings)
            scope = scope.parent
        return names


@dataclass(eq=False)
class WorkflowContext:
    """Per-workflow state (the implicit top-level workflow and user functions included)."""

    name: str
    decl: ast.WorkflowDecl | None
    returns: T.Type | None
    # Whole numbers, and `cost` a number of the price table's currency (a float or an int):
    # the compiled front end holds a value to its annotation.
    limits: dict[str, int | float] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    explicit_limits: set[str] = field(default_factory=set)
    labels: dict[str, Span] = field(default_factory=dict)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    calls: list[tuple[str, Span]] = field(default_factory=list)  # workflow and function calls, for F2009
    limits_seen: Span | None = None
    reported: set[tuple[int, str]] = field(default_factory=set)
    # The names the body binds, as the checker binds them: what the budget pass
    # (static_budget.py) resolves calls against when the check has reported nothing.
    bound: set[str] = field(default_factory=set)

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)
