"""What `check` finds in a file or cell: its tree, its diagnostics and what it declared
and bound, for the code generator, the session of later cells and the front ends."""

from __future__ import annotations

from dataclasses import dataclass, field

from flow_kernel.diagnostics.model import Diagnostic
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.env import Binding, DeclEntry, WorkflowContext
from flow_kernel.lang.schema import schema_for_decl
from flow_kernel.source import SourceFile


@dataclass
class CheckResult:
    source: SourceFile
    module: ast.Module
    diagnostics: list[Diagnostic]
    decls: dict[str, DeclEntry] = field(default_factory=dict)
    bindings: dict[str, Binding] = field(default_factory=dict)
    toplevel: WorkflowContext | None = None
    workflows: dict[str, WorkflowContext] = field(default_factory=dict)
    used_files: list[SourceFile] = field(default_factory=list)
    optional_reads: set[int] = field(default_factory=set)  # ids of Idents naming optional fields
    call_outputs: dict[int, T.Type] = field(default_factory=dict)  # id of an agent Call -> output type
    prompt_fills: dict[int, list[str | int]] = field(default_factory=dict)  # id of a `file(…)` Call -> its pieces

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def schema_for(self, name: str) -> dict[str, object] | None:
        entry = self.decls.get(name)
        return schema_for_decl(entry) if entry is not None else None

