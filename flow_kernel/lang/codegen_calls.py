"""Code generation of calls: agents and teams, workflows, panels, builtins, lambdas and
`expect` clauses. A part of `CodeGenerator` (codegen.py), which it is a base class of; its
methods read the generator's state and helpers through `self`."""

from __future__ import annotations

import ast as py
from typing import TYPE_CHECKING

from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.env import DEFAULT_LIMITS
from flow_kernel.lang.schema import type_schema

if TYPE_CHECKING:
    from flow_kernel.lang.codegen import CodeGenerator

NOW_UUID = ("now", "uuid")
# One context marker of each kind for the whole tree, as Python's parser makes them (they
# hold nothing; a new one per name is a node to build each time).
LOAD, STORE = py.Load(), py.Store()


class CallCodegen:
    def call(self: CodeGenerator, e: ast.Call, clauses: list[ast.ExpectClause]) -> py.expr:
        callee = e.callee
        if isinstance(callee, ast.Name) and not self._is_local(callee.name):
            entry = self.decls.get(callee.name)
            if entry is not None and entry.kind == "agent":
                return self.agent_call(e, callee.name, None, clauses)
            if entry is not None and entry.kind in ("workflow", "fn"):
                return self.workflow_call(e, callee.name)
            if entry is not None and entry.kind == "panel":
                return self.panel_call(e, callee.name)
            if callee.name == "file":
                return self.prompt_fill(e)
            return self.builtin_call(e, callee.name)
        assert isinstance(callee, ast.Member) and isinstance(callee.obj, ast.Name)
        return self.agent_call(e, None, (callee.obj.name, callee.name.name), clauses)

    def builtin_call(self: CodeGenerator, e: ast.Call, name: str) -> py.expr:
        if name in NOW_UUID:
            return self.await_(self.rt(name, span=e.span), e.span)
        # One pass over the arguments (a builtin call is one expression in six): the
        # positional ones generated in order; of the named ones only `concurrency` is read.
        args: list[py.expr] = []
        lambdas = False
        concurrency: ast.Expr | None = None
        for a in e.args:
            if a.name is None:
                lambdas = lambdas or isinstance(a.value, ast.Lambda)
                args.append(self.expr(a.value))
            elif a.name.name == "concurrency":
                concurrency = a.value
        if name == "parallelMap":
            limit = self.expr(concurrency) if concurrency is not None else self.constant(None)
            return self.await_(self.rt("parallel_map", *args, limit, span=e.span), e.span)
        call = self.rt("fn_" + name, *args, span=e.span)
        if lambdas:
            return self.await_(call, e.span)
        return call

    def prompt_fill(self: CodeGenerator, e: ast.Call) -> py.expr:
        """`file(PATH, { name: value })` as an expression: the file's pieces as the checker
        read them, filled with the values (each evaluated once, in the order written)."""
        values = e.args[1].value if len(e.args) > 1 else None
        items = [self.expr(entry.value) for entry in values.entries] if isinstance(values, ast.ObjectLit) else []
        return self.rt("fill_prompt", self.literal(self.result.prompt_fills[id(e)]), py.List(items, LOAD), span=e.span)

    def lambda_def(self: CodeGenerator, e: ast.Lambda) -> str:
        name = self.fresh("l")
        saved, self.prelude = self.prelude, []
        self.push()
        params = [self.bind(p.name) for p in e.params]
        while len(params) < 2:
            params.append(self.fresh("d"))
        body: list[py.stmt] = [self.step(e.span)]
        if isinstance(e.body, ast.Block):
            body.extend(self.block(e.body.body))
            body.append(py.Return(self.constant(None)))
        else:
            value = self.expr(e.body)
            body.extend(self.take_prelude())
            body.append(py.Return(value))
        self.pop()
        self.prelude = saved
        fn = self.async_def(name, params, body)
        self.at(fn, e.span)
        self.prelude.append(fn)
        return name

    def workflow_call(self: CodeGenerator, e: ast.Call, name: str) -> py.expr:
        entry = self.decls[name]
        node = entry.node
        assert isinstance(node, ast.WorkflowDecl)
        positional = [a.value for a in e.args if a.name is None]
        named = {a.name.name: a.value for a in e.args if a.name is not None}
        values: list[py.expr] = []
        for i, param in enumerate(node.params):
            value = positional[i] if i < len(positional) else named.get(param.name.name)
            values.append(self.expr(value) if value is not None else self.constant(None))
        if entry.kind == "fn":  # in the caller's frame: `rt.call` steps and bounds the depth
            return self.await_(self.rt("call", self.load(self.workflow_names[name]), py.List(values, LOAD), span=e.span), e.span)
        ctx = self.result.workflows.get(name)
        limits = dict(ctx.limits) if ctx is not None else dict(DEFAULT_LIMITS)
        call = self.rt("workflow", self.constant(name), self.load(self.workflow_names[name]),
                       py.List(values, LOAD), self.literal(limits), span=e.span)
        return self.await_(call, e.span)

    def agent_call(self: CodeGenerator, e: ast.Call, agent: str | None, team: tuple[str, str] | None,
                   clauses: list[ast.ExpectClause]) -> py.expr:
        args = list(e.args)
        member_expr: py.expr = self.constant(None)
        if team is not None and team[1] == "member":
            first = next(a for a in args if a.name is None)
            args.remove(first)
            member_expr = self.expr(first.value)
        prompt_arg = next(a for a in args if a.name is None)
        named = {a.name.name: a.value for a in args if a.name is not None}
        output = self.result.call_outputs.get(id(e), T.STRING)
        schema = self.schemas.get(id(output))  # (the type is kept alive by `call_outputs`, or a constant)
        if schema is None:
            schema = self.schemas[id(output)] = self.literal(type_schema(output))
        options: dict[str, py.expr] = {"schema": schema}
        start = e.span.start_pos
        target = agent if agent is not None else f"{team[0]}.{team[1]}" if team else "?"
        options["label"] = self.expr(named["label"]) if "label" in named else self.constant(f"{target}@{start.line}:{start.column}")
        for key in ("context", "facts", "documents", "timeout", "repair", "choice", "fallback", "max_tool_calls"):
            if key in named:
                options[key] = self.expr(named[key])
        if "tools" in named:
            value = named["tools"]
            names = [i.name for i in value.items if isinstance(i, ast.Name)] if isinstance(value, ast.ArrayLit) else []
            options["tools"] = self.literal(names)
        check: py.expr = self.constant(None)
        if clauses:
            check = self.load(self.expect_def(clauses))
        opts = py.Dict([self.constant(k) for k in options], list(options.values()))
        if team is None:
            call = self.rt("agent", self.constant(agent), self.expr(prompt_arg.value), opts, check, span=e.span)
        else:
            call = self.rt("team", self.constant(team[0]), self.constant(team[1]), member_expr,
                           self.expr(prompt_arg.value), opts, check, span=e.span)
        return self.await_(call, e.span)

    def panel_call(self: CodeGenerator, e: ast.Call, name: str) -> py.expr:
        """`rt.panel(name, candidate, spec, options)`: the spec is the checked declaration as
        data (experts, rubric criteria, judge, rounds, convergence, the verdict schema); the
        sandbox runs the rounds (flowbox/panels.py)."""
        entry = self.decls[name]
        info = entry.panel
        assert info is not None
        rubric = self.decls[info.rubric].rubric if info.rubric is not None else None
        criteria = [{"id": c.id, "description": c.description, "weight": c.weight, "low": c.low, "high": c.high}
                    for c in (rubric.criteria if rubric is not None else [])]
        spec = {"experts": [{"agent": a, "domain": d} for a, d in info.experts], "criteria": criteria,
                "judge": info.judge, "rounds": info.rounds, "spread": info.spread,
                "schema": type_schema(info.verdict)}
        candidate = next(a.value for a in e.args if a.name is None)
        named = {a.name.name: a.value for a in e.args if a.name is not None}
        start = e.span.start_pos
        options: dict[str, py.expr] = {
            "label": self.expr(named["label"]) if "label" in named else self.constant(f"{name}@{start.line}:{start.column}"),
            "context": self.expr(named["context"]) if "context" in named else self.constant(None),
        }
        opts = py.Dict([self.constant(k) for k in options], list(options.values()))
        call = self.rt("panel", self.constant(name), self.expr(candidate), self.literal(spec), opts, span=e.span)
        return self.await_(call, e.span)

    def expect_def(self: CodeGenerator, clauses: list[ast.ExpectClause]) -> str:
        """`async def x_n(it)` → `[[passed, message], …]` for the host's repair loop."""
        name = self.fresh("x")
        saved, self.prelude = self.prelude, []
        self.push()
        it = self.fresh("v_it")
        self.it_names.append(it)
        pairs: list[py.expr] = []
        for clause in clauses:
            cond = self.expr(clause.cond)
            message = self.expr(clause.message) if clause.message is not None else self.constant(clause.cond.span.text)
            pairs.append(py.List([cond, message], LOAD))
        self.it_names.pop()
        self.pop()
        body = [*self.take_prelude(), py.Return(py.List(pairs, LOAD))]
        self.prelude = saved
        self.prelude.append(self.async_def(name, [it], body))
        return name
