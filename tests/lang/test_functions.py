"""User functions (`fn`): parsed as a top-level declaration only in the shape `fn NAME (`,
checked like a workflow body, callable where their effects are allowed, compiled to a
`w_<n>` function that `rt.call` runs in the caller's frame."""

from __future__ import annotations

import ast as py

from flow_kernel import SourceFile
from flow_kernel.lang import ast, check
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.lang.verify import verify

AGENT = 'agent helper { model: "scripted", script: ["ok"] }\n'


def found(source: str, session: SessionScope | None = None) -> list[tuple[str, str, str]]:
    """Each diagnostic as (code, the text it points at, its message)."""
    result = check(SourceFile("main.flow", source), session=session)
    return [(d.code, source[d.span.start:d.span.end], d.message) for d in result.diagnostics]


def codes(source: str) -> list[str]:
    return [code for code, _, _ in found(source)]


# -- parsing --------------------------------------------------------------------------------------
def test_fn_declares_a_function_with_its_signature_and_doc() -> None:
    source = "## Doubles a number.\nfn double(n: int, half?: bool) -> int {\n  return n * 2\n}\nprint double(2)"
    result = check(SourceFile("main.flow", source))
    assert result.diagnostics == []
    node = result.module.decls[0]
    assert isinstance(node, ast.FnDecl) and node.name.name == "double" and node.doc == "Doubles a number."
    assert [(p.name.name, p.optional) for p in node.params] == [("n", False), ("half", True)]
    assert result.decls["double"].kind == "fn"
    assert source[node.span.start:node.span.end].startswith("fn double(") and node.span.text.endswith("}")


def test_fn_stays_an_ordinary_name_outside_the_declaration_shape() -> None:
    assert found("let fn = 3\nprint fn + 1") == []


def test_a_fn_inside_a_body_is_f1012() -> None:
    assert found("workflow w() {\n  fn inner(x: int) -> int { return x }\n}") == [
        ("F1012", "fn", "`fn` declarations are allowed only at the top level")]


# -- checking the body ---------------------------------------------------------------------------
def test_a_wrong_return_type_is_f3001_and_a_missing_return_f3008() -> None:
    assert found('fn label(n: int) -> string {\n  return n\n}\nprint label(1)') == [
        ("F3001", "n", "expected `string`, found `int`")]
    assert found('fn label(n: int) -> string {\n  return\n}\nprint label(1)') == [
        ("F3001", "return", "`return` without a value in a function that returns `string`")]
    assert found('fn label(n: int) -> string {\n  if n > 1 { return "big" }\n}\nprint label(1)') == [
        ("F3008", "label", "not every path of `label` returns a value")]


def test_a_function_sees_its_parameters_and_declarations_not_top_level_bindings() -> None:
    source = 'let base = 10\nfn add(n: int) -> int {\n  return n + base\n}\nprint add(1)'
    assert found(source) == [("F2001", "base", "undefined name `base`")]


def test_arguments_are_checked_with_the_call_codes() -> None:
    header = "fn add(a: int, b?: int) -> int {\n  return a + (b ?? 0)\n}\n"
    assert found(header + 'print add("x")') == [("F3001", '"x"', "expected `int`, found `\"x\"`")]
    assert codes(header + "print add(1, 2, 3)") == ["F3005"]
    assert codes(header + "print add(b: 2)") == ["F3006"]
    assert codes(header + "print add(1, c: 2)") == ["F2013"]
    assert found(header + "let s: string = add(1)\nprint s") == [("F3001", "add(1)", "expected `string`, found `int`")]


def test_a_duplicate_name_is_f2002() -> None:
    source = "fn f(x: int) -> int { return x }\nworkflow f() {}\nprint f(1)"
    assert ("F2002", "f", "`f` is declared twice") in found(source)


def test_limits_in_a_function_is_f5030_and_async_f5001() -> None:
    assert found("fn f(x: int) -> int {\n  limits { steps: 5 }\n  return x\n}\nprint f(1)") == [
        ("F5030", "limits { steps: 5 }", "a function has no `limits`: `f` runs within its caller's")]
    assert codes("fn f(x: int) -> int {\n  async t { let y = x }\n  await t\n  return t.y\n}\nprint f(1)") == ["F5001"]


# -- recursion and effects ------------------------------------------------------------------------
def test_functions_may_recurse_directly_and_through_each_other() -> None:
    source = """fn even(n: int) -> bool {
  return n == 0 ? true : odd(n - 1)
}
fn odd(n: int) -> bool {
  return n == 0 ? false : even(n - 1)
}
print even(10)"""
    assert found(source) == []


def test_a_cycle_through_a_workflow_is_still_f2009_at_the_workflow() -> None:
    source = "fn f(n: int) -> int {\n  return w(n)\n}\nworkflow w(n: int) -> int {\n  return f(n)\n}\nprint w(1)"
    assert found(source) == [("F2009", "f", "recursive workflow call: w → f → w")]


def test_a_pure_function_may_be_called_inside_map_and_filter() -> None:
    source = "fn double(n: int) -> int {\n  return n * 2\n}\nprint filter(map([1, 2], x => double(x)), y => double(y) > 2)"
    assert found(source) == []


def test_a_function_with_an_effect_is_f5020_inside_a_pure_lambda_naming_it() -> None:
    source = AGENT + 'fn ask_helper(s: string) -> string {\n  return helper(s)\n}\nfn twice(s: string) -> string {\n  return ask_helper(s)\n}\nprint map(["a"], x => twice(x))'
    assert found(source) == [
        ("F5020", "twice", "`twice` calls `ask_helper`, which calls the agent `helper`: not allowed inside a "
                           "lambda given to a pure builtin")]
    allowed = source.replace("print map(", "print parallelMap(")
    assert found(allowed) == []


def test_each_kind_of_effect_is_found() -> None:
    cases = {
        'print "x"': "prints", 'log "x"': "logs", 'emit progress { n: 1 }': "emits an event",
        'run "ls" []': "runs a process",
    }
    for statement, what in cases.items():
        source = f"fn f(n: int) -> int {{\n  {statement}\n  return n\n}}\nprint map([1], x => f(x))"
        assert [(c, m) for c, _, m in found(source)] == [
            ("F5020", f"`f` {what}: not allowed inside a lambda given to a pure builtin")], statement


def test_a_name_the_function_binds_itself_is_not_an_agent() -> None:
    source = AGENT + "fn f(helper: int) -> int {\n  return helper + 1\n}\nprint map([1], x => f(x))"
    assert ("F2006", "helper", "`helper` shadows the agent `helper`") in found(source)
    assert "F5020" not in codes(source)


def test_a_function_that_asks_is_refused_in_parallel_and_async() -> None:
    header = "fn confirm(s: string) -> bool {\n  return approve \"Go on with ${s}?\"\n}\n"
    assert found(header + 'let r = parallelMap(["a"], x => confirm(x))\nprint r') == [
        ("F5011", "confirm", "`confirm` asks the operator, which is not allowed inside `parallel` or `parallelMap`")]
    assert codes(header + 'async t {\n  let ok = confirm("a")\n}\nawait t\nprint t.ok') == ["F5002"]
    assert found(header + 'print confirm("a")') == []


# -- code generation and sessions -----------------------------------------------------------------
def test_a_function_compiles_to_a_verified_w_function_run_by_rt_call() -> None:
    compiled = compile_source(SourceFile("main.flow", "fn double(n: int) -> int {\n  return n * 2\n}\nprint double(21)"))
    assert compiled.ok and compiled.python is not None
    assert "async def w_0(rt, v_n):" in compiled.python
    assert "await rt.call(w_0, [21])" in compiled.python
    assert "'double'" not in compiled.python  # no entry point: `flow run FILE double` cannot start it
    verify(py.parse(compiled.python))  # the allow-list holds `rt.call` and the `w_` name


def test_a_cells_function_is_visible_to_later_cells() -> None:
    session = SessionScope()
    first = check(SourceFile("<cell-1>", "fn double(n: int) -> int {\n  return n * 2\n}"), session=session)
    assert first.diagnostics == []
    session.commit(first)
    assert found('print double(2)\nlet s: string = double(1)\nprint s', session) == [
        ("F3001", "double(1)", "expected `string`, found `int`")]


def test_a_pure_function_may_give_an_approvals_default_and_one_with_an_effect_may_not() -> None:
    source = AGENT + """fn pure(n: int) -> bool {
  return n > 1
}
fn calls(n: int) -> bool {
  return helper("x") == "ok"
}
let ok = approve "Fine?" timeout 5s else pure(2)
let no = approve "Really?" timeout 5s else calls(2)
print [ok, no]"""
    assert [(c, t) for c, t, _ in found(source)] == [("F5024", "calls(2)")]
