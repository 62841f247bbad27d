"""Declarations: type aliases and constraints, tools, agents, teams, limits (§3, §4)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from flow_kernel.diagnostics.model import Related
from flow_kernel.errors import RETRYABLE, RUNTIME_CODES
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.check_common import article, closest, type_names
from flow_kernel.lang.env import (
    AgentInfo,
    DeclEntry,
    TeamInfo,
    ToolInfo,
    WorkflowContext,
    WorkflowInfo,
)
from flow_kernel.lang.graphs import find_cycles
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.lang.patterns import pattern_problem
from flow_kernel.lang.prompt_files import file_call
from flow_kernel.lang.purposes import purpose_of
from flow_kernel.lang.schema_rules import schema_problems
from flow_kernel.native_marks import mypyc_attr

if TYPE_CHECKING:
    from flow_kernel.lang.checker import Checker
    from flow_kernel.source import Span

BUILTIN_TYPES = {"string", "number", "int", "bool", "null", "any", "duration", "external"}
AGENT_FIELDS = (
    "model", "role", "persona", "instructions", "constraints", "hints", "uncertainty", "tools",
    "output", "repair", "retry", "timeout", "temperature", "script", "max_tool_calls",
)
STRING_CONSTRAINTS = ("minLength", "maxLength", "pattern", "format")
NUMBER_CONSTRAINTS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
ARRAY_CONSTRAINTS = ("minItems", "maxItems", "uniqueItems")
# Agent fields checked alike: the field -> the `_agent_…` method that checks it (else its own).
_AGENT_FIELD_CHECKS = {"role": "text", "persona": "text", "instructions": "text", "uncertainty": "text",
                       "constraints": "string_list", "hints": "string_list"}
LIMIT_KEYS = ("agent_runs", "duration", "concurrency", "steps", "cost")
MODEL_RE = re.compile(r"^[A-Za-z0-9_.-]+/\S+$")
# `from mcp "SERVER"` or `from mcp "SERVER/TOOL"` (F2017): SERVER as a [mcp.SERVER] table names it
_MCP_SOURCE = re.compile(r"[A-Za-z0-9_.-]+(/\S+)?")


@mypyc_attr(native_class=False)  # mixins: a plain class when compiled (flow_kernel/native_marks.py)
class DeclChecker:
    _resolving: DeclEntry | None  # the alias being resolved (its self-reference is no "use")
    mcp_servers: frozenset[str] = frozenset()  # the configuration's [mcp.NAME] names, for files (F4021)
    # -- type expressions ------------------------------------------------------------
    def resolve_type(self: Checker, te: ast.TypeExpr) -> T.Type:
        if isinstance(te, ast.TName):
            if te.name in BUILTIN_TYPES:
                if te.name == "any":
                    return T.ANY
                if te.name == "external":
                    return T.AnyType(external=True)
                return T.PRIMS[te.name]
            entry = self.decls.get(te.name)
            if entry is not None and entry.kind == "type" and entry.named is not None:
                if entry is not self._resolving:
                    entry.used = True
                return entry.named
            if entry is not None:
                self.report("F2007", te.span, f"`{te.name}` is {article(entry.kind)}, not a type",
                            related=[Related(entry.span, "declared here")])
            else:
                types = [n for n, e in self.decls.items() if e.kind == "type"] + sorted(BUILTIN_TYPES)
                self.report("F2007", te.span, f"unknown type `{te.name}`", hints=closest(te.name, types))
            return T.ANY
        if isinstance(te, ast.TLiteral):
            if te.value is None:
                return T.NULL
            return T.Literal(te.value)
        if isinstance(te, ast.TArray):
            return T.ArrayType(self.resolve_type(te.item))
        if isinstance(te, ast.TObject):
            fields = tuple((f.name.name, T.Field(self.resolve_type(f.type), f.optional)) for f in te.fields)
            return T.ObjectType(fields, te.open)
        if isinstance(te, ast.TUnion):
            return T.union([self.resolve_type(o) for o in te.options])
        if isinstance(te, ast.TOptional):
            return T.union([self.resolve_type(te.inner), T.NULL])
        if isinstance(te, ast.TSchema):
            return self._raw_schema(te)
        if isinstance(te, ast.TConstrained):
            return self._constrained(te)
        return T.ANY

    def _raw_schema(self: Checker, te: ast.TSchema) -> T.Type:
        value = literal_value(te.body)
        if value is NOT_LITERAL or not isinstance(value, dict):
            self.report("F3016", te.span, "`schema { … }` must hold a JSON object of literal values")
            return T.ANY
        from jsonschema import Draft202012Validator, FormatChecker
        from jsonschema.exceptions import SchemaError

        # The meta-schema's "regex" format would judge patterns by Python's `re`; Flow's
        # patterns are RE2's (`schema_problems` below), so that format is left to it.
        formats = FormatChecker(())
        formats.checkers = {k: v for k, v in Draft202012Validator.FORMAT_CHECKER.checkers.items() if k != "regex"}
        try:
            # The meta-schema checks the schema as data: nothing in it is resolved or matched.
            Draft202012Validator.check_schema(value, format_checker=formats)
        except SchemaError as err:
            path = "/".join(str(p) for p in err.absolute_path)
            where = f" at `{path}`" if path else ""
            self.report("F3016", te.span, f"not a valid JSON Schema{where}: {err.message}")
            return T.ANY
        problems = schema_problems(value)
        for problem in problems:
            span = _schema_span(te.body, problem.path)
            where = problem.path[1:]  # as the meta-schema's errors say it: `properties/a/$ref`
            if problem.pattern is not None and problem.pattern.unsupported:
                self.report("F3016", span, f"a pattern Flow cannot run at `{where}` (patterns run on RE2): "
                                           f"{problem.pattern.reason}")
            else:
                self.report("F3016", span, f"not a valid JSON Schema at `{where}`: {problem.message}")
        if problems:
            return T.ANY
        return T.AnyType(raw_schema=tuple(value.items()))

    def _constrained(self: Checker, te: ast.TConstrained) -> T.Type:
        base = self.resolve_type(te.base)
        core = T.unwrap(base)
        allowed: tuple[str, ...]
        if isinstance(core, T.Prim) and core.name == "string":
            allowed, kind = STRING_CONSTRAINTS, "string"
        elif isinstance(core, T.Prim) and core.name in ("number", "int"):
            allowed, kind = NUMBER_CONSTRAINTS, core.name
        elif isinstance(core, T.ArrayType):
            allowed, kind = ARRAY_CONSTRAINTS, "array"
        else:
            allowed, kind = (), str(base)
        constraints: dict[str, object] = dict(getattr(core, "constraints", ()))
        for arg in te.args:
            key = arg.name.name
            if key not in allowed:
                hints = closest(key, list(allowed)) if allowed else ()
                self.report("F3012", arg.name.span, f"`{key}` is not a constraint of `{kind}`", hints=hints)
                continue
            value = literal_value(arg.value)
            problem = _constraint_problem(key, value)
            if problem:
                self.report("F3013", arg.value.span, f"invalid value for `{key}`: {problem}")
                continue
            unsupported = pattern_problem(value) if key == "pattern" and isinstance(value, str) else None
            if unsupported is not None:  # valid elsewhere, but it needs what RE2 lacks
                self.report("F3013", arg.value.span,
                            f"invalid value for `pattern`: Flow runs patterns on RE2, which cannot run this one: "
                            f"{unsupported.reason}")
                continue
            constraints[key] = value
        for low, high in (("minLength", "maxLength"), ("minItems", "maxItems"), ("minimum", "maximum")):
            lo, hi = constraints.get(low), constraints.get(high)
            if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo > hi:
                arg_span = next(a.value.span for a in te.args if a.name.name == high)
                self.report("F3013", arg_span, f"`{high}` ({hi}) is smaller than `{low}` ({lo})")
        items = tuple(constraints.items())
        if isinstance(core, T.Prim):
            return T.Prim(core.name, items) if kind != str(base) or items else base
        if isinstance(core, T.ArrayType):
            return T.ArrayType(core.item, items)
        return base

    # -- declarations ------------------------------------------------------------------
    def declare_types(self: Checker) -> None:
        entries = [e for e in self.decls.values() if e.kind == "type"]
        for entry in entries:
            entry.named = T.Named(entry.name)
        self._detect_recursive_aliases(entries)
        for entry in entries:
            assert isinstance(entry.node, ast.TypeDecl) and entry.named is not None
            if entry.named.target:
                continue  # a recursive alias, already reported
            self._resolving = entry
            entry.named.target.append(self.resolve_type(entry.node.type))
            self._resolving = None

    def _detect_recursive_aliases(self: Checker, entries: list[DeclEntry]) -> None:
        refs: dict[str, list[ast.TName]] = {}
        for entry in entries:
            assert isinstance(entry.node, ast.TypeDecl)
            refs[entry.name] = [n for n in type_names(entry.node.type) if n.name in self.decls and self.decls[n.name].kind == "type"]
        edges = {name: [r.name for r in found] for name, found in refs.items()}
        for cycle in find_cycles([e.name for e in entries], edges):
            head, nxt = cycle[0], cycle[1 % len(cycle)]
            ref = next(r for r in refs[head] if r.name == nxt)
            chain = " → ".join([*cycle, head])
            self.report("F2010", ref.span, f"type alias `{head}` is recursive ({chain})",
                        hints=("use `any` where the nesting is open-ended",))
            for name in cycle:
                named = self.decls[name].named
                if named is not None and not named.target:
                    named.target.append(T.ANY)

    def declare_tool(self: Checker, entry: DeclEntry) -> None:
        node = entry.node
        assert isinstance(node, ast.ToolDecl)
        info = ToolInfo()
        seen: dict[str, ast.Param] = {}
        for p in node.params:
            if p.name.name in seen:
                self.report("F4014", p.name.span, f"tool `{node.name.name}` has two parameters named `{p.name.name}`",
                            related=[Related(seen[p.name.name].name.span, "first declared here")])
                continue
            seen[p.name.name] = p
            info.params.append((p.name.name, self.resolve_type(p.type), p.optional))
        if node.returns is None:
            self.report("F4014", node.name.span, f"tool `{node.name.name}` has no return type",
                        hints=(f"write `tool {node.name.name}(…) -> Type`",))
        else:
            info.returns = self.resolve_type(node.returns)
        if node.mcp is not None and not _MCP_SOURCE.fullmatch(node.mcp):
            self.report("F2017", node.name.span, f"tool `{node.name.name}`: {node.mcp!r} is not an MCP server name",
                        hints=('write `from mcp "SERVER"` or `from mcp "SERVER/TOOL"`, SERVER as in [mcp.SERVER] of '
                               "flow.toml (letters, digits, `_`, `-`, `.`)",))
        elif node.mcp is not None and self.file_mode and node.mcp.partition("/")[0] not in self.mcp_servers:
            server = node.mcp.partition("/")[0]
            known = ", ".join(sorted(self.mcp_servers)) or "none"
            self.report("F4021", node.name.span, f"tool `{node.name.name}` is lent by the MCP server `{server}`, which "
                        f"the configuration that applies here does not declare (declared: {known})",
                        hints=(f"add [mcp.{server}] to flow.toml (a command or a url) in a folder you trust", ))
        entry.tool = info

    def declare_workflow(self: Checker, entry: DeclEntry) -> None:
        node = entry.node
        assert isinstance(node, ast.WorkflowDecl)
        info = WorkflowInfo()
        for p in node.params:
            info.params.append((p.name.name, self.resolve_type(p.type), p.optional))
        info.returns = self.resolve_type(node.returns) if node.returns is not None else None
        entry.workflow = info

    def declare_agent(self: Checker, entry: DeclEntry) -> None:
        node = entry.node
        assert isinstance(node, ast.AgentDecl)
        info = AgentInfo()
        entry.agent = info
        fields: dict[str, ast.AgentField] = {}
        for f in node.fields:
            key = f.name.name
            if key not in AGENT_FIELDS:
                self.report("F4001", f.name.span, f"unknown agent field `{key}`", hints=closest(key, list(AGENT_FIELDS)))
                continue
            if key in fields:
                self.report("F1014", f.name.span, f"agent field `{key}` given twice",
                            related=[Related(fields[key].name.span, "first given here")])
                continue
            fields[key] = f
        for key, f in fields.items():
            getattr(self, "_agent_" + _AGENT_FIELD_CHECKS.get(key, key))(info, f, fields)
        if info.model == "scripted" and "script" not in fields:
            self.report("F4018", node.name.span, f"agent `{node.name.name}` uses model \"scripted\" but has no `script`",
                        hints=("add `script: [ … ]` with the replies, or use model \"mock\"",))

    def _agent_model(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        value = literal_value(f.value)
        if isinstance(value, str) and purpose_of(value) is not None:  # model by purpose (check_prompts.py)
            if self.checked_model(value, f.value.span):
                info.model = value
            return
        if not isinstance(value, str) or not (value in ("default", "mock", "scripted") or MODEL_RE.match(value)):
            self.report("F4015", f.value.span, "malformed `model`: expected \"provider/model\", \"for:<purpose>\", "
                                               "\"default\", \"mock\" or \"scripted\"",
                        hints=('for example `model: "openai/gpt-4o-mini"`',))
            return
        info.model = value

    def _agent_text(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        # a constant string, or `file("…")` read now (check_prompts.py)
        text = self.prompt_text(f.value, f.name.name, info.prompt_files) if isinstance(f.value, ast.Expr) else NOT_LITERAL
        if text is NOT_LITERAL:
            self.report("F4002", f.value.span, f"agent field `{f.name.name}` must be a constant string or `file(\"path\")`")
        elif isinstance(text, str) and file_call(f.value) is not None:
            info.texts[f.name.name] = text

    def _agent_string_list(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        items = f.value.items if isinstance(f.value, ast.ArrayLit) else None
        if items is None or not any(file_call(item) is not None for item in items):
            value = literal_value(f.value)
            if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                self.report("F4002", f.value.span, f"agent field `{f.name.name}` must be a list of constant strings")
            return
        texts: list[str] = []
        for i, item in enumerate(items, 1):
            text = self.prompt_text(item, f"{f.name.name}[{i}]", info.prompt_files)
            if text is NOT_LITERAL:
                self.report("F4002", item.span, f"`{f.name.name}` lists constant strings or `file(\"path\")`")
            elif isinstance(text, str):
                texts.append(text)
        info.texts[f.name.name] = texts

    def _agent_tools(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        if not isinstance(f.value, ast.ArrayLit):
            self.report("F4002", f.value.span, "`tools` must be a list of tool names, e.g. `tools: [search_kb]`")
            return
        for item in f.value.items:
            if not isinstance(item, ast.Name):
                self.report("F4002", item.span, "`tools` must list tool names")
                continue
            target = self.decls.get(item.name)
            if target is None or target.kind != "tool":
                tools = [n for n, e in self.decls.items() if e.kind == "tool"]
                what = f"`{item.name}` is {article(target.kind)}, not a tool" if target else f"unknown tool `{item.name}`"
                self.report("F4007", item.span, what, hints=closest(item.name, tools))
                continue
            target.used = True
            info.tools.append(item.name)

    def _agent_output(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        assert isinstance(f.value, ast.TypeExpr)
        info.output = self.resolve_type(f.value)

    def _agent_repair(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        value = literal_value(f.value)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or isinstance(f.value, ast.DurationLit):
            self.report("F4002", f.value.span, "`repair` must be a non-negative integer (the number of repair attempts)")

    def _agent_timeout(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        if not isinstance(f.value, ast.DurationLit) or f.value.ms <= 0:
            self.report("F4002", f.value.span, "`timeout` must be a positive duration such as `30s`")
            return
        info.timeout_ms = f.value.ms
        info.timeout_span = f.value.span

    def _agent_temperature(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        value = literal_value(f.value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2 or isinstance(f.value, ast.DurationLit):
            self.report("F4002", f.value.span, "`temperature` must be a number between 0 and 2")

    def _agent_max_tool_calls(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        if isinstance(f.value, ast.Expr) and literal_value(f.value) is NOT_LITERAL:
            self.report("F4037", f.value.span, "an agent's `max_tool_calls` must be a constant positive integer")
            return
        self.tool_call_limit(f.value)  # type: ignore[arg-type]

    def tool_call_limit(self: Checker, value: ast.Expr) -> None:
        """`max_tool_calls` (an agent field or a call option): an int, and a constant one
        positive (F4037); the pipeline holds a computed one to the same (`evaluation`)."""
        constant = literal_value(value)
        if constant is NOT_LITERAL:
            self.check_value(value, T.INT, what="`max_tool_calls`")
        elif isinstance(value, ast.DurationLit) or isinstance(constant, bool) or not isinstance(constant, int) or constant < 1:
            self.report("F4037", value.span, f"`max_tool_calls` must be a positive integer (the tool calls one attempt "
                                             f"may make; 8 when not given), not {_shown(value)}")

    def _agent_retry(self: Checker, info: AgentInfo, f: ast.AgentField, _: dict[str, ast.AgentField]) -> None:
        if not isinstance(f.value, ast.ObjectLit):
            self.report("F4002", f.value.span, "`retry` must be an object `{ on: [codes], attempts: n, backoff: duration }`")
            return
        for entry in f.value.entries:
            if entry.key == "on":
                self._retry_on(entry.value)
            elif entry.key == "attempts":
                value = literal_value(entry.value)
                if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1) or isinstance(entry.value, ast.DurationLit):
                    self.report("F4002", entry.value.span, "`retry.attempts` must be a positive integer (attempts in total)")
            elif entry.key == "backoff":
                if not isinstance(entry.value, ast.DurationLit):
                    self.report("F4002", entry.value.span, "`retry.backoff` must be a duration such as `1s`")
            else:
                self.report("F4002", entry.key_span, f"unknown `retry` key `{entry.key}`",
                            hints=closest(entry.key, ["on", "attempts", "backoff"]))

    def _retry_on(self: Checker, value: ast.Expr) -> None:
        if not isinstance(value, ast.ArrayLit):
            self.report("F4002", value.span, "`retry.on` must be a list of error codes")
            return
        for item in value.items:
            code = literal_value(item)
            if not isinstance(code, str):
                self.report("F4002", item.span, "`retry.on` lists error codes as strings")
            elif code not in RUNTIME_CODES:
                self.report("F4003", item.span, f"unknown error code \"{code}\" in `retry.on`", hints=closest(code, list(RUNTIME_CODES)))
            elif code not in RETRYABLE:
                self.report("F4004", item.span, f"\"{code}\" cannot be retried",
                            hints=("only \"agent-invocation\" and \"output-validation\" can be retried",))

    def _agent_script(self: Checker, info: AgentInfo, f: ast.AgentField, fields: dict[str, ast.AgentField]) -> None:
        if info.model != "scripted" and "model" in fields and literal_value(fields["model"].value) != "scripted":
            self.report("F4017", f.name.span, "`script` is only used by agents with model \"scripted\"",
                        related=[Related(fields["model"].value.span, "the model is set here")])
            return
        if "model" not in fields:
            self.report("F4017", f.name.span, "`script` needs `model: \"scripted\"`")
            return
        if not isinstance(f.value, ast.ArrayLit):
            self.report("F4017", f.value.span, "`script` must be a list of replies")
            return
        for item in f.value.items:
            problem = _script_entry_problem(item)
            if problem:
                self.report("F4017", item.span, f"malformed script entry: {problem}")
            unsupported = _when_pattern_unsupported(item)
            if unsupported:
                self.report("F4017", unsupported[0], f"malformed script entry: a pattern RE2 cannot run in `when` "
                                                     f"(patterns run on RE2): {unsupported[1]}")

    def declare_team(self: Checker, entry: DeclEntry) -> None:
        node = entry.node
        assert isinstance(node, ast.TeamDecl)
        info = TeamInfo()
        entry.team = info
        seen: dict[str, ast.Expr] = {}
        main_field: ast.AgentField | None = None
        for f in node.fields:
            key = f.name.name
            if key == "main":
                main_field = f
                name = self._team_agent(f.value)
                if name:
                    info.main = name
                    seen[name] = f.value  # type: ignore[assignment]
            elif key == "members":
                if not isinstance(f.value, ast.ArrayLit):
                    self.report("F4005", f.value.span, "`members` must be a list of agent names")
                    continue
                for item in f.value.items:
                    name = self._team_agent(item)
                    if not name:
                        continue
                    if name in seen:
                        what = "is already the team's `main`" if name == info.main else "is listed twice"
                        self.report("F4016", item.span, f"agent `{name}` {what}",
                                    related=[Related(seen[name].span, "first listed here")])
                        continue
                    seen[name] = item
                    info.members.append(name)
            else:
                self.report("F4001", f.name.span, f"unknown team field `{key}`", hints=closest(key, ["main", "members"]))
        if main_field is None:
            self.report("F4005", node.name.span, f"team `{node.name.name}` has no `main` agent")

    def _team_agent(self: Checker, value: ast.Expr | ast.TypeExpr) -> str | None:
        if not isinstance(value, ast.Name):
            self.report("F4005", value.span, "expected an agent name")
            return None
        target = self.decls.get(value.name)
        if target is None:
            agents = [n for n, e in self.decls.items() if e.kind == "agent"]
            self.report("F2008", value.span, f"unknown agent `{value.name}`", hints=closest(value.name, agents))
            return None
        if target.kind != "agent":
            self.report("F4005", value.span, f"`{value.name}` is {article(target.kind)}, not an agent",
                        related=[Related(target.span, "declared here")])
            return None
        target.used = True
        return value.name

    # -- limits -----------------------------------------------------------------------
    def apply_limits(self: Checker, node: ast.Limits, ctx: WorkflowContext) -> None:
        seen: set[str] = set()
        for entry in node.entries:
            key = entry.name.name
            if key not in LIMIT_KEYS:
                self.report("F6001", entry.name.span, f"unknown limit `{key}`", hints=closest(key, list(LIMIT_KEYS)))
                continue
            if key in seen:
                self.report("F1014", entry.name.span, f"limit `{key}` given twice")
                continue
            seen.add(key)
            value = entry.value
            if key == "duration":
                if not isinstance(value, ast.DurationLit) or value.ms <= 0:
                    self.report("F6002", value.span, "`duration` must be a positive duration such as `2m`")
                    continue
                ctx.limits[key] = value.ms
            elif key == "cost":  # in the currency of the price table (lang/prices.py)
                if not isinstance(value, ast.IntLit | ast.NumLit) or value.value <= 0:
                    self.report("F6002", value.span, "`cost` must be a positive number, such as `2.5`")
                    continue
                ctx.limits[key] = value.value
            else:
                if not isinstance(value, ast.IntLit) or value.value <= 0:
                    self.report("F6002", value.span, f"`{key}` must be a positive integer")
                    continue
                ctx.limits[key] = value.value
            ctx.explicit_limits.add(key)
        if {"concurrency", "agent_runs"} <= ctx.explicit_limits and ctx.limits["concurrency"] > ctx.limits["agent_runs"]:
            span = next(e.value.span for e in node.entries if e.name.name == "concurrency")
            self.report("F6005", span, f"`concurrency` ({ctx.limits['concurrency']}) is larger than `agent_runs` ({ctx.limits['agent_runs']})")


def _schema_span(body: ast.Expr, pointer: str) -> Span:
    """The span of what a JSON pointer names in a `schema { … }` literal (`"key": value`
    for a keyword), for a diagnostic about one part of a big schema."""
    node = body
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")] if pointer else []
    for i, part in enumerate(parts):
        if isinstance(node, ast.ObjectLit):
            entry = next((e for e in node.entries if e.key == part), None)
            if entry is None:
                break
            if i == len(parts) - 1:
                return entry.key_span.to(entry.value.span)
            node = entry.value
        elif isinstance(node, ast.ArrayLit) and part.isdigit() and int(part) < len(node.items):
            node = node.items[int(part)]
        else:
            break
    return node.span


def _constraint_problem(key: str, value: object) -> str | None:
    if value is NOT_LITERAL:
        return "constraint values must be literals"
    if key in ("minLength", "maxLength", "minItems", "maxItems"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return "expected a non-negative integer"
    elif key == "pattern":
        if not isinstance(value, str):
            return "expected a regular expression string"
        err = pattern_problem(value)
        if err is not None and not err.unsupported:
            return f"bad regular expression ({err.reason})"
    elif key == "format":
        if not isinstance(value, str):
            return "expected a format name such as \"email\""
    elif key == "uniqueItems":
        if not isinstance(value, bool):
            return "expected `true` or `false`"
    elif key == "multipleOf":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            return "expected a positive number"
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        return "expected a number"
    return None


def _when_pattern_unsupported(item: ast.Expr) -> tuple[Span, str] | None:
    """(span, reason) for `when("/re/", …)` whose regex is valid but needs what RE2 lacks."""
    if not (isinstance(item, ast.Call) and isinstance(item.callee, ast.Name) and item.callee.name == "when" and item.args):
        return None
    first = item.args[0].value
    pattern = literal_value(first)
    if not (isinstance(pattern, str) and len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/")):
        return None
    err = pattern_problem(pattern[1:-1])
    return (first.span, err.reason) if err is not None and err.unsupported else None


def _script_entry_problem(item: ast.Expr) -> str | None:
    if isinstance(item, ast.Call) and isinstance(item.callee, ast.Name):
        fn = item.callee.name
        args = [a.value for a in item.args]
        if any(a.name is not None for a in item.args):
            return f"`{fn}(…)` takes positional arguments"
        if fn == "when":
            if len(args) != 2 or not isinstance(literal_value(args[0]), str):
                return 'expected `when("substring" or "/regex/", value)`'
            pattern = literal_value(args[0])
            assert isinstance(pattern, str)
            if len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/"):
                err = pattern_problem(pattern[1:-1])
                if err is not None and not err.unsupported:  # an unsupported one is reported at its pattern
                    return f"bad regular expression in `when` ({err.reason})"
            return _script_entry_problem(args[1]) if isinstance(args[1], ast.Call) else _json_problem(args[1])
        if fn == "fail":
            if not 1 <= len(args) <= 2 or literal_value(args[0]) not in RETRYABLE:
                return 'expected `fail("agent-invocation" or "output-validation", "message")`'
            if len(args) == 2 and not isinstance(literal_value(args[1]), str):
                return "the `fail` message must be a string"
            return None
        if fn == "slow":
            if len(args) != 2 or not isinstance(args[0], ast.DurationLit):
                return "expected `slow(duration, value)`"
            if isinstance(args[1], ast.Call):
                if not (isinstance(args[1].callee, ast.Name) and args[1].callee.name == "fail"):
                    return "`slow` wraps a JSON value or a `fail(…)`"
                return _script_entry_problem(args[1])
            return _json_problem(args[1])
        return f"unknown script entry `{fn}(…)`; use a JSON value, `when`, `fail` or `slow`"
    return _json_problem(item)


def _json_problem(item: ast.Expr) -> str | None:
    return "script replies must be JSON literals" if literal_value(item) is NOT_LITERAL else None


def _shown(value: ast.Node) -> str:
    """A value's source text for a message."""
    return f"`{value.span.text}`"
