"""The budget pass's tree walks (lang/static_budget.py): `local_names` reads only the fields
that can hold a node (one getter per node class, chosen from ast.py's annotations), and a
statement's "may it leave its block" search looks at statements only. Both are held to a
plain walk of every attribute of every node, over programs with every kind of binder and
exit, wherever it may sit.

The checker hands the pass what it learnt as it walked (the names a body binds, whether
each statement may leave its block) so that a clean check needs neither search: the pass
is held to its own searches' answers over every golden input."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.bench.frontend import flow_program
from flow_kernel.lang import ast
from flow_kernel.lang.check import check
from flow_kernel.lang.check_calls import CallChecker
from flow_kernel.lang.static_budget import Names, local_names, usage
from flow_kernel.source import SourceFile
from tests.golden.record import check_input

AGENT = 'agent reviewer {\n  model: "scripted"\n  script: ["Fine"]\n}\n'

BINDERS = AGENT + '''
workflow w(xs: int[], label?: string) -> any {
  limits { agent_runs: 20 }
  let a = map(xs, x => { let inner = x + 1
    return inner })
  var b = parallel { left: reviewer("l"), right: map([1, 2], y => y * 2) }
  async task { let hidden = reviewer("t") }
  await task
  for v, n in xs {
    try {
      let deep = { k: filter(xs, z => z > n) }
    } catch "agent-invocation" as err {
      log err.message
    }
  }
  if len(xs) > 0 {
    while b == null { break }
  } else if a == null {
    let other = reduce(xs, (acc, q) => acc + q, 0)
  }
  let picked = approve "ok?" timeout 1s else all(xs, w2 => w2 > 0)
  return [a, b, picked, label]
}
'''


def reference_local_names(node: object) -> frozenset[str]:
    """What `local_names` promises, by visiting every field of every node."""
    found: set[str] = set()
    for n in _every_node(node):
        if isinstance(n, ast.Let | ast.Async | ast.Param):
            found.add(n.name.name)
        elif isinstance(n, ast.For):
            found.update(i.name for i in (n.var, n.index) if i is not None)
        elif isinstance(n, ast.Lambda):
            found.update(p.name for p in n.params)
        elif isinstance(n, ast.Catch) and n.binding is not None:
            found.add(n.binding.name)
    return frozenset(found)


def _attributes(n: ast.Node) -> list[object]:
    """Every field of `n` that holds a node or a list (its dataclass fields: a compiled
    node has no `__dict__`)."""
    return [v for f in dataclasses.fields(n) if isinstance(v := getattr(n, f.name), ast.Node | list)]


def reference_may_leave(stmt: ast.Stmt) -> bool:
    """A `return`, `break` or `continue` at or below `stmt`, not below an expression (a
    lambda's statements leave the lambda only), by visiting every field."""
    stack: list[object] = [stmt]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return | ast.Break | ast.Continue):
            return True
        if isinstance(n, list):
            stack.extend(n)
        elif isinstance(n, ast.Node) and not isinstance(n, ast.Expr):
            stack.extend(_attributes(n))
    return False


def _every_node(node: object) -> Iterator[object]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, list):
            stack.extend(n)
        elif isinstance(n, ast.Node):
            stack.extend(_attributes(n))


def _workflows(text: str) -> list[ast.WorkflowDecl]:
    module = check(SourceFile("walks.flow", text)).module
    return [d for d in module.decls if isinstance(d, ast.WorkflowDecl)]


@pytest.mark.parametrize("text", [BINDERS, flow_program(300)], ids=["every-binder", "bench"])
def test_local_names_finds_what_a_walk_of_every_attribute_finds(text: str) -> None:
    workflows = _workflows(text)
    assert workflows
    for decl in workflows:
        assert local_names(decl) == reference_local_names(decl)
        assert local_names(decl.body.body) == reference_local_names(decl.body.body)


def test_local_names_finds_every_kind_of_binder_wherever_it_sits() -> None:
    (decl,) = _workflows(BINDERS)
    assert local_names(decl) == {"xs", "label", "a", "inner", "x", "b", "y", "task", "hidden", "v", "n", "deep",
                                 "z", "err", "other", "acc", "q", "picked", "w2"}


def test_the_fields_left_unread_are_never_nodes() -> None:
    """Every field of every node class that the walk skips is annotated as a scalar or a
    span in ast.py, and holds none of the bench program's nodes."""
    if not isinstance(dataclasses.fields(ast.Node)[0].type, str):
        pytest.skip("compiled nodes' fields name classes, not the annotations as written (static_budget.py)")
    node_names = {name for name, value in vars(ast).items() if isinstance(value, type) and issubclass(value, ast.Node)}
    classes = [value for value in vars(ast).values() if isinstance(value, type) and issubclass(value, ast.Node)]
    for cls in classes:
        for f in dataclasses.fields(cls):
            mentioned = {word.strip("[]") for word in str(f.type).replace("|", " ").split()}
            if not mentioned & (node_names | {"list[Stmt]"}) and not str(f.type).startswith("list["):
                assert str(f.type) in {"Span", "bool", "float", "int", "str", "str | None",
                                       "str | int | float | bool | None"}, (cls.__name__, f.name, f.type)


def _budget(text: str) -> list[tuple[str, str]]:
    result = check(SourceFile("walks.flow", AGENT + text))
    return [(d.code, d.message) for d in result.diagnostics if d.code in ("F6006", "F6008")]


def test_a_return_inside_a_lambda_leaves_only_the_lambda() -> None:
    """Calls after a statement whose lambda returns still certainly happen: an error."""
    found = _budget('workflow w(xs: int[]) -> any {\n  limits { agent_runs: 1 }\n'
                    '  let ys = map(xs, x => { return x })\n'
                    '  let r1 = reviewer("a")\n  let r2 = reviewer("b")\n  return [ys, r1, r2]\n}\n')
    assert [code for code, _ in found] == ["F6008"]
    assert "at least 2 agent calls" in found[0][1]


@pytest.mark.parametrize("exit_stmt", ["return null", "break", "continue"])
def test_an_exit_nested_in_statements_makes_what_follows_uncertain(exit_stmt: str) -> None:
    """An exit inside an `if` inside a `try` inside a loop body: the calls after it in that
    body may not run, so only a warning."""
    found = _budget('workflow w(xs: int[]) -> any {\n  limits { agent_runs: 1 }\n'
                    '  for x in [1, 2] {\n    try {\n      if x > 1 { ' + exit_stmt + ' }\n    } catch {\n'
                    '      log "no"\n    }\n    let r1 = reviewer("a")\n  }\n  return xs\n}\n')
    assert [code for code, _ in found] == ["F6006"]


GOLDEN_INPUTS = Path(__file__).parent.parent / "golden" / "data" / "inputs.json"


def test_what_the_checker_hands_the_pass_gives_the_searches_answers_on_every_golden_input(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """For every workflow and cell body of the golden inputs: where the check is clean, the
    names the checker bound are `local_names`' answer, and the usage computed with the
    checker's names and exits is the usage computed with the searches alone."""
    compared = {"bodies": 0, "clean": 0, "leaves": 0}
    original = CallChecker.budget_report

    def compare(self: Any, ctx: Any, body: list[ast.Stmt], where: Any) -> None:
        kinds = {n: e.kind for n, e in self.decls.items()}
        searched = local_names(ctx.decl or body)
        clean = self.reports == 0 and not self.reporter.diagnostics
        if clean:
            assert ctx.bound == searched, ctx.name
            compared["clean"] += 1
        walked = usage(body, Names(kinds, searched))
        handed = usage(body, Names(kinds, ctx.bound if clean else searched, self.leaves))
        assert handed == walked, ctx.name
        for s in body:
            if id(s) in self.leaves:
                assert self.leaves[id(s)] == reference_may_leave(s)
                compared["leaves"] += 1
        compared["bodies"] += 1
        original(self, ctx, body, where)

    monkeypatch.setattr(CallChecker, "budget_report", compare)
    for item in json.loads(GOLDEN_INPUTS.read_text(encoding="utf-8")).values():
        check_input(item)
    assert compared["bodies"] > 1000 and compared["clean"] > 500 and compared["leaves"] > 5000, compared


def test_a_lambda_the_checker_leaves_unchecked_still_binds_its_parameters_for_the_pass() -> None:
    """A lambda given to an unknown function is never checked, so its parameter `reviewer`
    is never bound; the pass still counts it as a local name (the check reported the
    unknown function, so the pass searched the body): `reviewer("a")` is then no known
    agent call, and nothing says the limit is passed."""
    found = _budget('workflow w(xs: int[]) -> any {\n  limits { agent_runs: 1 }\n'
                    '  let ys = mystery(xs, reviewer => 1)\n'
                    '  let r1 = reviewer("a")\n  let r2 = reviewer("b")\n  return [ys, r1, r2]\n}\n')
    assert found == []
    plain = _budget('workflow w(xs: int[]) -> any {\n  limits { agent_runs: 1 }\n'
                    '  let r1 = reviewer("a")\n  let r2 = reviewer("b")\n  return [xs, r1, r2]\n}\n')
    assert [code for code, _ in plain] == ["F6008"]
