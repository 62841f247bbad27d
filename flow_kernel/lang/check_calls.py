"""Calls and effects: builtins and lambdas, agents and teams, workflows, `parallel`,
`approve`/`ask` and `run` (§4.3, §5.1, §5.3, §6.1–6.3)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from flow_kernel.diagnostics.model import Related
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.builtins import (
    BUILTINS,
    LAMBDA,
    LAMBDA_RESULT_KIND,
    Builtin,
    kind_accepts,
    lambda_params,
)
from flow_kernel.lang.check_common import closest
from flow_kernel.lang.env import DeclEntry, Frame, WorkflowContext
from flow_kernel.lang.literals import literal_value
from flow_kernel.lang.prices import DEFAULT_MAX_OUTPUT_TOKENS, price_of
from flow_kernel.lang.static_budget import Names, local_names, usage
from flow_kernel.native_marks import mypyc_attr

if TYPE_CHECKING:
    from flow_kernel.lang.checker import Checker
    from flow_kernel.source import Span

# `facts:` (trust high), `documents:` (medium) and `context:` (low) pass data at a trust level
# (runtime/prompts.py renders each as such).
AGENT_OPTIONS = ("context", "facts", "documents", "label", "output", "tools", "timeout", "repair", "choice", "fallback",
                 "max_tool_calls")


@mypyc_attr(native_class=False)  # mixins: a plain class when compiled (flow_kernel/native_marks.py)
class CallChecker:
    # -- effects and operator prompts -----------------------------------------------------
    def effect(self: Checker, span: object, what: str) -> None:
        if any(f.pure for f in self.frames):
            self.report("F5020", span, f"{what} is not allowed inside a lambda given to a pure builtin",  # type: ignore[arg-type]
                        hints=("use `parallelMap` for effects per item, or a `for` loop",))

    def operator_prompt(self: Checker, span: object, word: str) -> bool:
        if any(f.kind == "async" for f in self.frames):
            self.report("F5002", span, f"`{word}` is not allowed inside an `async` body")  # type: ignore[arg-type]
            return False
        if self.parallel_depth or any(f.parallel for f in self.frames):
            self.report("F5011", span, f"`{word}` is not allowed inside `parallel` or `parallelMap`",  # type: ignore[arg-type]
                        hints=("ask once before or after the parallel part",))
            return False
        if any(f.pure for f in self.frames):
            self.report("F5020", span, f"`{word}` is not allowed inside a lambda given to a pure builtin")  # type: ignore[arg-type]
            return False
        return True

    # -- calls ---------------------------------------------------------------------------
    def x_Call(self: Checker, e: ast.Call) -> T.Type:
        callee = e.callee
        if isinstance(callee, ast.Name) and self.scope.lookup(callee.name) is None:
            entry = self.decls.get(callee.name)
            if entry is not None:
                return self.declared_call(e, entry)
            if callee.name == "file":
                return self.prompt_file_expr(e)  # check_prompts.py
            builtin = BUILTINS.get(callee.name)
            if builtin is not None:
                return self.builtin_call(e, builtin)
            self.undefined(callee.name, callee.span)
            self._check_args_loosely(e)
            return T.ANY
        if isinstance(callee, ast.Member) and isinstance(callee.obj, ast.Name) and self.scope.lookup(callee.obj.name) is None:
            entry = self.decls.get(callee.obj.name)
            if entry is not None and entry.kind == "team":
                return self.team_call(e, entry, callee.name)
        self.expr(callee)
        self.report("F3004", callee.span, "this value cannot be called",
                    hints=("only builtins, workflows, agents and team members can be called",))
        self._check_args_loosely(e)
        return T.ANY

    def _check_args_loosely(self: Checker, e: ast.Call) -> None:
        for arg in e.args:
            if not isinstance(arg.value, (ast.Lambda, ast.TypeArg)):
                self.expr(arg.value)

    def declared_call(self: Checker, e: ast.Call, entry: DeclEntry) -> T.Type:
        entry.used = True
        if entry.kind == "agent":
            assert entry.agent is not None
            return self.agent_call(e, entry, e.args, entry.agent.output)
        if entry.kind == "workflow":
            return self.workflow_call(e, entry)
        if entry.kind == "fn":
            return self.fn_call(e, entry)
        if entry.kind == "panel":
            return self.panel_call(e, entry)  # check_panels.py
        if entry.kind == "tool":
            self.report("F3004", e.callee.span, f"tool `{entry.name}` cannot be called from Flow code",
                        hints=(f"give it to an agent: `tools: [{entry.name}]`",))
        elif entry.kind == "team":
            self.report("F3004", e.callee.span, f"call a team through a member: `{entry.name}.main(prompt)`")
        else:
            self.report("F3004", e.callee.span, f"{entry.kind} `{entry.name}` cannot be called")
        self._check_args_loosely(e)
        return T.ANY

    def _split_args(self: Checker, args: list[ast.Arg]) -> tuple[list[ast.Arg], dict[str, ast.Arg]]:
        positional: list[ast.Arg] = []
        named: dict[str, ast.Arg] = {}
        for arg in args:
            if arg.name is None:
                if named:
                    self.report("F3005", arg.span, "positional arguments must come before named ones")
                positional.append(arg)
                continue
            if arg.name.name in named:
                self.report("F2014", arg.name.span, f"argument `{arg.name.name}` given twice",
                            related=[Related(named[arg.name.name].span, "first given here")])
                continue
            named[arg.name.name] = arg
        return positional, named

    # -- builtins ------------------------------------------------------------------------
    def builtin_call(self: Checker, e: ast.Call, b: Builtin) -> T.Type:
        positional, named = self._split_args(e.args)
        for name, arg in named.items():
            if b.name == "parallelMap" and name == "concurrency":
                self.check_value(arg.value, T.INT, what="`concurrency`")
                continue
            self.report("F2013", arg.name.span if arg.name else arg.span, f"`{b.name}` has no argument `{name}`")
        max_args = None if b.variadic else len(b.params)
        if len(positional) < b.required or (max_args is not None and len(positional) > max_args):
            expected = f"{b.required}" if b.required == len(b.params) else f"{b.required} to {len(b.params)}"
            if b.variadic:
                expected = f"at least {b.required}"
            self.report("F3005", e.span, f"`{b.name}` takes {expected} argument{'s' if expected != '1' else ''}, found {len(positional)}")
        arg_types: list[T.Type] = []
        lambda_result: T.Type | None = None
        for i, arg in enumerate(positional):
            kind = b.params[min(i, len(b.params) - 1)] if b.params else "any"
            if i >= len(b.params) and not b.variadic:
                if not isinstance(arg.value, ast.Lambda):
                    self.expr(arg.value)
                continue
            if kind == LAMBDA:
                lambda_result = self._builtin_lambda(b, arg.value, arg_types)
                continue
            if isinstance(arg.value, ast.Lambda):
                self.x_Lambda(arg.value)
                arg_types.append(T.ANY)
                continue
            t = self.expr(arg.value)
            arg_types.append(t)
            if not kind_accepts(kind, t):
                code = "F3010" if b.name == "parallelMap" and i == 0 else "F3001"
                self.report(code, arg.value.span, f"`{b.name}` expects {_kind_words(kind)} here, found `{t}`")
        if b.name == "parallelMap" and positional:
            self.fan_out(e, positional[0].value, positional[1].value if len(positional) > 1 else None)
        return b.result(arg_types, lambda_result)

    def _builtin_lambda(self: Checker, b: Builtin, value: ast.Expr, arg_types: list[T.Type]) -> T.Type | None:
        if not isinstance(value, ast.Lambda):
            t = self.expr(value)
            self.report("F3001", value.span, f"`{b.name}` expects a lambda here (e.g. `x => …`), found `{t}`")
            return None
        if len(value.params) not in b.lambda_arities:
            counts = " or ".join(str(n) for n in b.lambda_arities)
            self.report("F3019", value.span, f"the lambda given to `{b.name}` must take {counts} parameter{'s' if counts != '1' else ''}, found {len(value.params)}")
            # What each parameter stands for is unknown: its body is checked with `any`s,
            # so the arity is the one error reported.
            self.lambda_body(value, [T.ANY] * len(value.params), pure=b.pure, parallel=not b.pure)
            return None
        params = lambda_params(b.name, arg_types, len(value.params))
        result = self.lambda_body(value, params, pure=b.pure, parallel=not b.pure)
        want = LAMBDA_RESULT_KIND.get(b.name)
        body = value.body
        if want == "bool" and isinstance(body, ast.Expr) and not T.is_bool(result):
            self.report("F3009", body.span, f"the lambda of `{b.name}` must give a `bool`, found `{result}`")
        if want == "string" and isinstance(body, ast.Expr) and not T.is_stringy(result):
            self.report("F3001", body.span, f"the lambda of `{b.name}` must give a `string` key, found `{result}`")
        where = body.span if isinstance(body, ast.Expr) else value.span
        if want == "array" and not T.is_any(result) and T.array_item(result) is None:
            self.report("F3001", where, f"the lambda of `{b.name}` must give an array (its items go into the result), found `{result}`",
                        hints=("wrap a single value in brackets: `x => [x]`",))
        if want == "accumulator" and params and not T.assignable(result, params[0]):
            self.report("F3001", where, f"the lambda of `{b.name}` must give the accumulator's type `{params[0]}` (the start "
                        f"value's), found `{result}`",
                        hints=("start from a value of the type the lambda gives, e.g. `0.0` to add numbers, or bind it "
                               "with a type: `let start: T = …`",))
        return result

    def lambda_body(self: Checker, lam: ast.Lambda, params: list[T.Type], *, pure: bool, parallel: bool) -> T.Type:
        frame = Frame("lambda", pure=pure, parallel=parallel)
        if self.ctx is not None:
            self.ctx.bound.update(p.name for p in lam.params)
        exits = self.exits  # a `return` here leaves the lambda, not the statement around it
        try:
            with self.frame(frame), self.new_scope():
                for name, t in zip(lam.params, params, strict=False):
                    self.bind(name, t, mutable=False, kind="lambda")
                if isinstance(lam.body, ast.Block):
                    self.block(lam.body.body)
                    return T.union(frame.returns) if frame.returns else T.NULL
                return self.expr(lam.body, expect_ok=True)
        finally:
            self.exits = exits

    # -- agents and teams ------------------------------------------------------------------
    def team_call(self: Checker, e: ast.Call, entry: DeclEntry, member: ast.Ident) -> T.Type:
        entry.used = True
        team = entry.team
        assert team is not None
        if member.name == "member":
            positional = [a for a in e.args if a.name is None]
            if positional:
                self.check_value(positional[0].value, T.STRING, what="member name")
            names = [n for n in [team.main, *team.members] if n]
            outputs = [self.decls[n].agent.output for n in names if self.decls[n].agent is not None]  # type: ignore[union-attr]
            return self.agent_call(e, None, [a for a in e.args if a is not (positional[0] if positional else None)], T.union(outputs) if outputs else T.ANY)
        name = team.main if member.name == "main" else member.name
        if member.name != "main" and member.name not in team.members:
            self.report("F4006", member.span, f"`{member.name}` is not a member of team `{entry.name}`",
                        related=[Related(entry.span, "the team is declared here")],
                        hints=closest(member.name, ["main", "member", *team.members]))
            self._check_args_loosely(e)
            return T.ANY
        target = self.decls.get(name) if name else None
        if target is None or target.agent is None:
            self._check_args_loosely(e)
            return T.ANY
        return self.agent_call(e, target, e.args, target.agent.output)

    def agent_call(self: Checker, e: ast.Call, entry: DeclEntry | None, args: list[ast.Arg], output: T.Type) -> T.Type:
        result = self._agent_call(e, entry, args, output)
        self.call_outputs[id(e)] = result
        return result

    def _agent_call(self: Checker, e: ast.Call, entry: DeclEntry | None, args: list[ast.Arg], output: T.Type) -> T.Type:
        self.effect(e.span, "an agent call")
        positional, named = self._split_args(args)
        if not positional:
            self.report("F3006", e.span, "missing the prompt: an agent call takes a prompt string first")
        else:
            prompt = self.expr(positional[0].value)
            if not T.is_stringy(prompt):
                self.report("F4008", positional[0].value.span, f"the prompt must be a string, found `{prompt}`",
                            hints=('interpolate values into a string: "Ticket ${t.id}"',))
            for extra in positional[1:]:
                self.report("F3005", extra.span, "an agent call takes one prompt; pass other values as named options such as `context:`")
                self.expr(extra.value)
        choice_values: list[str] | None = None
        for name, arg in named.items():
            value = arg.value
            if name not in AGENT_OPTIONS:
                self.report("F2013", arg.name.span if arg.name else arg.span, f"unknown agent call option `{name}`",
                            hints=closest(name, list(AGENT_OPTIONS)))
                if not isinstance(value, (ast.Lambda, ast.TypeArg)):
                    self.expr(value)
                continue
            if name == "output":
                assert isinstance(value, ast.TypeArg)
                output = self.resolve_type(value.type)
            elif name == "choice":
                choice_values = self.choice_values(value)
            elif name == "label":
                self._label(value)
            elif name == "tools":
                self._call_tools(value, entry)
            elif name == "timeout":
                self.check_value(value, T.DURATION, what="`timeout`")
                if isinstance(value, ast.DurationLit):
                    self.timeout_within_deadline(value.ms, value.span)
            elif name == "repair":
                self.check_value(value, T.INT, what="`repair`")
            elif name == "max_tool_calls":
                self.tool_call_limit(value)
            elif name in ("context", "facts", "documents"):
                self.expr(value)
        if entry is not None and entry.agent is not None and entry.agent.timeout_ms is not None and "timeout" not in named:
            self.timeout_within_deadline(entry.agent.timeout_ms, e.span, entry.agent.timeout_span)
        if "choice" in named and "output" in named:
            self.report("F4009", named["output"].span, "`choice` and `output` cannot be combined",
                        related=[Related(named["choice"].span, "`choice` given here")])
        fallback = named.get("fallback")
        if fallback is not None:
            fb = literal_value(fallback.value)
            if "choice" not in named:
                self.report("F4011", fallback.span, "`fallback` needs `choice`")
                self.expr(fallback.value)
            elif choice_values is not None and fb not in choice_values:
                self.report("F4010", fallback.value.span, f"`fallback` must be one of the choices ({', '.join(map(repr, choice_values))})")
        if choice_values:
            return T.union([T.Literal(v) for v in choice_values])
        if "choice" in named:
            return T.STRING
        return output

    def choice_values(self: Checker, value: ast.Expr) -> list[str] | None:
        raw = literal_value(value)
        if not isinstance(raw, list):
            t = self.expr(value)
            if T.array_item(t) is None or not T.is_stringy(T.array_item(t) or T.ANY):
                self.report("F3020", value.span, "`choice` must be a list of strings")
            return None
        if not raw or not all(isinstance(v, str) and v for v in raw) or len(set(map(str, raw))) != len(raw):
            self.report("F3020", value.span, "`choice` values must be unique, non-empty strings")
            return None
        return [str(v) for v in raw]

    def _label(self: Checker, value: ast.Expr) -> None:
        label = literal_value(value)
        if not isinstance(label, str):
            self.check_value(value, T.STRING, what="`label`")
            return
        if self.ctx is None:
            return
        first = self.ctx.labels.get(label)
        if first is not None:
            self.report("F4012", value.span, f"the call label \"{label}\" is used twice in this workflow",
                        related=[Related(first, "first used here")], hints=("labels identify calls for replay; make each unique",))
        else:
            self.ctx.labels[label] = value.span

    def _call_tools(self: Checker, value: ast.Expr, entry: DeclEntry | None) -> None:
        if not isinstance(value, ast.ArrayLit):
            self.report("F3001", value.span, "`tools` must list tool names, e.g. `tools: [search_kb]`")
            return
        for item in value.items:
            target = self.decls.get(item.name) if isinstance(item, ast.Name) else None
            if target is None or target.kind != "tool":
                label = item.name if isinstance(item, ast.Name) else item.span.text
                tools = [n for n, d in self.decls.items() if d.kind == "tool"]
                self.report("F4007", item.span, f"unknown tool `{label}`", hints=closest(label, tools))
            else:
                target.used = True

    def timeout_within_deadline(self: Checker, ms: int, span: object, origin: object = None) -> None:
        if self.ctx is None:
            return
        deadline = self.ctx.limits["duration"]
        if origin is not None:
            # An agent's own timeout is reported once per workflow, not at every call.
            key = (id(origin), "timeout")
            if key in self.ctx.reported:
                return
            self.ctx.reported.add(key)
        if ms > deadline:
            related = [Related(origin, "the agent's timeout is set here")] if origin is not None else []  # type: ignore[arg-type]
            self.report("F6004", span, f"a timeout of {_ms(ms)} is longer than the workflow's `duration` of {_ms(deadline)}",  # type: ignore[arg-type]
                        related=related)

    # -- workflows -------------------------------------------------------------------------
    def workflow_call(self: Checker, e: ast.Call, entry: DeclEntry) -> T.Type:
        self.effect(e.span, "a workflow call")
        info = entry.workflow
        assert info is not None
        if self.ctx is not None and self.ctx.decl is not None:
            self.ctx.calls.append((entry.name, e.callee.span))
        return self.declared_arguments(e, entry)

    def fn_call(self: Checker, e: ast.Call, entry: DeclEntry) -> T.Type:
        """A user function's call: checked like a workflow's; where effects are refused, the
        function's own effects (through the functions it calls) are (fn_effects.py)."""
        effect = self.fn_effects.get(entry.name)
        if effect is not None:
            here = [Related(effect.span, "the effect")]
            if any(f.pure for f in self.frames):
                self.report("F5020", e.callee.span, f"`{entry.name}` {effect.describe()}: not allowed inside a lambda "
                            "given to a pure builtin", related=here,
                            hints=("use `parallelMap` for effects per item, or a `for` loop",))
            elif effect.asks is not None and any(f.kind == "async" for f in self.frames):
                self.report("F5002", e.callee.span, f"`{entry.name}` asks the operator, which is not allowed inside an "
                            "`async` body", related=[Related(effect.asks, "it asks here")])
            elif effect.asks is not None and (self.parallel_depth or any(f.parallel for f in self.frames)):
                self.report("F5011", e.callee.span, f"`{entry.name}` asks the operator, which is not allowed inside "
                            "`parallel` or `parallelMap`", related=[Related(effect.asks, "it asks here")],
                            hints=("ask once before or after the parallel part",))
        if self.ctx is not None and self.ctx.decl is not None:
            self.ctx.calls.append((entry.name, e.callee.span))
        return self.declared_arguments(e, entry)

    def declared_arguments(self: Checker, e: ast.Call, entry: DeclEntry) -> T.Type:
        """The arguments of a workflow's or function's call against its parameters; the
        call's type is its declared return type (`any` without one)."""
        info = entry.workflow
        assert info is not None
        positional, named = self._split_args(e.args)
        params = info.params
        given: dict[str, ast.Arg] = {}
        for i, arg in enumerate(positional):
            if i >= len(params):
                self.report("F3005", arg.span, f"`{entry.name}` takes {len(params)} argument{'s' if len(params) != 1 else ''}, found {len(positional)}")
                self.expr(arg.value)
                continue
            given[params[i][0]] = arg
        for name, arg in named.items():
            if name not in {p[0] for p in params}:
                self.report("F2013", arg.name.span if arg.name else arg.span, f"`{entry.name}` has no parameter `{name}`",
                            hints=closest(name, [p[0] for p in params]))
                self.expr(arg.value)
                continue
            if name in given:
                self.report("F2014", arg.span, f"argument `{name}` given twice", related=[Related(given[name].span, "first given here")])
                continue
            given[name] = arg
        for name, t, optional in params:
            if name in given:
                self.check_value(given[name].value, t, what=f"argument `{name}`")
            elif not optional:
                self.report("F3006", e.span, f"missing required argument `{name}` of `{entry.name}`")
        return info.returns if info.returns is not None else T.ANY

    # -- parallel, operator prompts, processes ----------------------------------------------------
    def x_Parallel(self: Checker, e: ast.Parallel) -> T.Type:
        if not e.branches:
            self.report("F5009", e.span, "`parallel` needs at least one branch (`name: expression`)")
            return T.object_type({})
        fields: dict[str, T.Type] = {}
        first: dict[str, ast.ParallelBranch] = {}
        self.parallel_depth += 1
        try:
            for branch in e.branches:
                t = self.expr(branch.value)
                if branch.name.name in first:
                    self.report("F5010", branch.name.span, f"duplicate `parallel` branch `{branch.name.name}`",
                                related=[Related(first[branch.name.name].name.span, "first branch with this name")])
                    continue
                first[branch.name.name] = branch
                fields[branch.name.name] = t
        finally:
            self.parallel_depth -= 1
        called = [c for c in (b.value.call if isinstance(b.value, ast.Expect) else b.value for b in e.branches)
                  if self.is_agent_call(c)]
        self._fan_out_report(e.keyword_span, called)
        return T.object_type(fields)

    def fan_out(self: Checker, e: ast.Call, items: ast.Expr, lam: ast.Expr | None) -> None:
        if not isinstance(items, ast.ArrayLit) or not isinstance(lam, ast.Lambda):
            return
        body = lam.body.call if isinstance(lam.body, ast.Expect) else lam.body
        if isinstance(body, ast.Expr) and self.is_agent_call(body):
            self._fan_out_report(e.callee.span, [body] * len(items.items))

    def _fan_out_report(self: Checker, span: object, calls: list[ast.Expr]) -> None:
        if self.ctx is None:
            return
        limit = self.ctx.limits.get("cost")
        worst = self._worst_cost(calls) if limit is not None else None
        if limit is not None and worst is not None and worst > limit:
            self.report("F6007", span, f"the worst case of this fan-out costs {worst:.4g} (every call writing "  # type: ignore[arg-type]
                                       f"{DEFAULT_MAX_OUTPUT_TOKENS} tokens), more than the `cost` limit of {limit:g}")

    def budget_report(self: Checker, ctx: WorkflowContext, body: list[ast.Stmt], where: Span) -> None:
        """Errors for a workflow (or cell) whose text alone spends more agent runs or steps
        than its `limits` allow, each naming the figure to set (static_budget.py); a
        warning when only some paths spend more agent runs than allowed."""
        # The checker leaves a value unchecked (a lambda's parameters unbound) only where it
        # or the parser reports something, so a check that has reported nothing so far has
        # bound every name; otherwise the body is searched.
        clean = self.reports == 0 and not self.reporter.diagnostics
        local = ctx.bound if clean else local_names(ctx.decl or body)
        kinds = self.decl_kinds
        if len(kinds) != len(self.decls):  # made once: every declaration is in before a body is checked
            kinds = self.decl_kinds = {n: e.kind for n, e in self.decls.items()}
        names = Names(kinds, local, self.leaves)
        used = usage(body, names)
        runs, steps = ctx.limits["agent_runs"], ctx.limits["steps"]
        what = "this workflow" if ctx.decl is not None else "this cell"
        if used.calls > runs:
            self.report("F6008", self._limit_span(body, "agent_runs", where),
                        f"{what} makes at least {used.calls} agent calls; `agent_runs` is {runs}: set `agent_runs: {used.calls}`",
                        hints=("each call takes at least one run; repairs and retries take more",))
        elif used.calls_max is not None and used.calls_max > runs:
            least = f" (at least {used.calls})" if used.calls else ""
            self.report("F6006", self._limit_span(body, "agent_runs", where),
                        f"{what} makes up to {used.calls_max} agent calls{least}; `agent_runs` is {runs}: "
                        f"set `agent_runs: {used.calls_max}` if they can all run")
        if used.steps > steps:
            self.report("F6009", self._limit_span(body, "steps", where),
                        f"{what} takes at least {used.steps} steps; `steps` is {steps}: set `steps: {used.steps}`",
                        hints=("a step is a statement, a builtin, agent or workflow call, or a lambda call: "
                               "a `parallelMap` item that calls an agent takes 2",))

    @staticmethod
    def _limit_span(body: list[ast.Stmt], key: str, where: Span) -> Span:
        """The value given to `key` in the body's `limits`, else `where`."""
        if body and isinstance(body[0], ast.Limits):
            for entry in body[0].entries:
                if entry.name.name == key:
                    return entry.value.span
        return where

    def _worst_cost(self: Checker, calls: list[ast.Expr]) -> float | None:
        """The calls' output at `max_tokens` each, priced by the built-in table; None when a
        call's model has no price there (`default`, a team, a model the table lacks)."""
        total = 0.0
        for call in calls:
            callee = call.callee if isinstance(call, ast.Call) else None
            entry = self.decls.get(callee.name) if isinstance(callee, ast.Name) else None
            price = price_of(entry.agent.model) if entry is not None and entry.agent is not None else None
            if price is None:
                return None
            total += price.cost(0, DEFAULT_MAX_OUTPUT_TOKENS)
        return total

    def x_Approve(self: Checker, e: ast.Approve) -> T.Type:
        self.operator_prompt(e.span, "approve")
        self.check_value(e.question, T.STRING, what="question")
        if e.details is not None:
            self.expr(e.details)
        if e.deadline is not None:
            self.prompt_deadline(e.deadline, "approve", T.BOOL)
        return T.BOOL

    def x_Ask(self: Checker, e: ast.Ask) -> T.Type:
        self.operator_prompt(e.span, "ask")
        self.check_value(e.question, T.STRING, what="question")
        answer: T.Type = T.STRING
        if e.choice is not None:
            values = self.choice_values(e.choice)
            if values:
                answer = T.union([T.Literal(v) for v in values])
        if e.deadline is not None:
            self.prompt_deadline(e.deadline, "ask", answer)
        return answer

    def prompt_deadline(self: Checker, d: ast.Deadline, word: str, answer: T.Type) -> None:
        """`timeout T else V`: T a positive duration the run can wait for, V an answer the
        operator could have given. V is computed before the question is asked (it travels
        with the request, so a deferred run's record holds it too), hence it must be pure."""
        self.check_value(d.timeout, T.DURATION, what="`timeout`")
        if isinstance(d.timeout, ast.DurationLit):
            if d.timeout.ms <= 0:
                self.report("F5022", d.timeout.span, f"a `timeout` of {d.timeout.ms}ms on `{word}` gives nobody time to answer",
                            hints=("use the default directly instead of asking",))
            elif self.ctx is not None and d.timeout.ms > self.ctx.limits["duration"]:
                self.report("F5023", d.timeout.span,
                            f"`{word}` waits up to {_ms(d.timeout.ms)}, longer than the workflow's `duration` of "
                            f"{_ms(int(self.ctx.limits['duration']))}: a run that waits for the answer ends with "
                            "`workflow-timeout` first (only a deferred run, which stops while it waits, reaches the default)")
        effect = _first_effect(d.default, self)
        if effect is not None:
            self.report("F5024", effect.span, f"the default of `{word}` is computed before the question is asked, "
                        "so it cannot call an agent, team or workflow, ask, or run a process",
                        hints=("bind the value with `let` before the question and use its name",))
        t = self.expr(d.default)
        if not T.is_any(t) and not T.assignable(t, answer):
            wanted = f"one of its choices (`{answer}`)" if word == "ask" and answer != T.STRING else f"a `{answer}`"
            self.report("F5021", d.default.span, f"the default of `{word}` must be {wanted}, found `{t}`")

    def x_Run(self: Checker, e: ast.Run) -> T.Type:
        self.effect(e.span, "`run`")
        exe = self.expr(e.executable)
        if not T.is_stringy(exe):
            self.report("F5014", e.executable.span, f"the executable of `run` must be a string, found `{exe}`")
        if isinstance(e.arguments, ast.ArrayLit):
            for arg in e.arguments.items:
                t = self.expr(arg)
                if not _is_scalar(t):
                    self.report("F5014", arg.span, f"`run` arguments must be scalars, found `{t}`")
                elif T.may_be_null(t):
                    self.report("F5014", arg.span, _null_argument(t), hints=_NULL_ARGUMENT_HINTS)
        else:
            t = self.expr(e.arguments)
            item = T.array_item(t)
            if item is None or not _is_scalar(item):
                self.report("F5014", e.arguments.span, f"`run` takes an array of scalar arguments, found `{t}`")
            elif T.may_be_null(item):
                self.report("F5014", e.arguments.span, _null_argument(t, "items"), hints=_NULL_ARGUMENT_HINTS)
        if e.stdin is not None:
            self.check_value(e.stdin, T.STRING, what="`stdin`")
        if e.timeout is not None:
            self.check_value(e.timeout, T.DURATION, what="`timeout`")
            if isinstance(e.timeout, ast.DurationLit):
                self.timeout_within_deadline(e.timeout.ms, e.timeout.span)
        return T.RUN_RESULT


def _first_effect(e: ast.Node, checker: Checker) -> ast.Node | None:
    """The first node in `e` that has an effect: an operator prompt, `run`, `parallel`, or a
    call of a declared agent, team or workflow, or of a function that has an effect
    (builtins are pure)."""
    if isinstance(e, ast.Approve | ast.Ask | ast.Run | ast.Parallel):
        return e
    if isinstance(e, ast.Call):
        callee = e.callee.obj if isinstance(e.callee, ast.Member) else e.callee
        entry = checker.decls.get(callee.name) if isinstance(callee, ast.Name) else None
        if entry is not None and checker.scope.lookup(entry.name) is None \
                and (entry.kind != "fn" or entry.name in checker.fn_effects):
            return e
    for f in dataclasses.fields(e):
        value = getattr(e, f.name)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.Node):
                found = _first_effect(child, checker)
                if found is not None:
                    return found
    return None


def _is_scalar(t: T.Type) -> bool:
    return T.is_any(t) or all(T.prim_name(o) is not None for o in T.options(t))


_NULL_ARGUMENT_HINTS = ("give a default with `??`, or leave the argument out when the value is `null`",)


def _null_argument(t: T.Type, what: str = "argument") -> str:
    """Why a `run` argument (or an array's items) of type `t`, which can be `null`, is refused."""
    found = "is `null`" if T.prim_name(t) == "null" else f"can be `null` (`{t}`)"
    subject = "this argument" if what == "argument" else "an item of these arguments"
    return f"`run` arguments must be strings, numbers or booleans, but {subject} {found}: a command line has no `null`"


def _kind_words(kind: str) -> str:
    return {"array": "an array", "number[]": "an array of numbers", "string[]": "an array of strings",
            "string": "a string", "number": "a number", "int": "an int", "object": "an object",
            "array or string": "an array or a string"}.get(kind, kind)


def _ms(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
