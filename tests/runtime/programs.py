"""Flow programs with their expected outcome, run by test_programs.py through every executor.

Each case: name, source, and what must happen: `result` (the value of the last top-level
expression), `prints` (texts of `print` events in order), `error` (a runtime code) with
`line` (the Flow line its span starts on), `events` (event types that must appear, in order)."""

from __future__ import annotations

from typing import Any

Case = tuple[str, str, dict[str, Any]]

STATEMENTS: list[Case] = [
    ("let and var", "let a = 1\nvar b = 2\nb = b + a\nb", {"result": 3}),
    ("typed let", "let xs: int[] = [1, 2]\nlen(xs)", {"result": 2}),
    ("if else if else", 'let x = 5\nvar s = ""\nif x > 10 { s = "big" } else if x > 3 { s = "mid" } else { s = "small" }\ns',
     {"result": "mid"}),
    ("if scopes shadow", "let x = 1\nif true { let x = 2\nprint x }\nx", {"result": 1, "prints": ["2"]}),
    ("for with index", 'var out = []\nfor x, i in ["a", "b"] { out = out + ["${i}:${x}"] }\nout', {"result": ["0:a", "1:b"]}),
    ("break and continue", "var n = 0\nfor x in range(10) { if x == 2 { continue }\nif x == 5 { break }\nn = n + x }\nn",
     {"result": 8}),
    ("while", "var i = 0\nwhile i < 5 { i = i + 1 }\ni", {"result": 5}),
    ("stage keeps bindings", 'stage "one" { let a = 40 }\na + 2', {"result": 42, "events": ["stage.started", "stage.completed"]}),
    ("pipeline of stages", 'pipeline "p" { stage "a" { let x = 1 } stage "b" { let y = x + 1 } }\ny',
     {"result": 2, "events": ["pipeline.started", "stage.started", "stage.completed", "stage.started", "stage.completed",
                              "pipeline.completed"]}),
    ("verify records and goes on", 'verify 1 == 2 : "nope"\n"after"', {"result": "after", "events": ["verify.evaluated"]}),
    ("require passes", 'require 1 == 1 : "fine"\n3', {"result": 3}),
    ("require fails", 'let a = 1\nrequire a == 2 : "a must be 2"\na', {"error": "assertion", "line": 2,
                                                                        "events": ["require.failed"]}),
    ("emit progress", "emit progress { done: 1, total: 2 }\n0", {"result": 0, "events": ["progress"]}),
    ("print renders", 'print {a: 1, b: [true, null]}\nprint "text"\nprint 6 / 3\nnull',
     {"prints": ['{"a": 1, "b": [true, null]}', "text", "2"], "result": None}),
    ("log", 'log "hello"\n1', {"result": 1, "events": ["log"]}),
    ("publish", 'publish "report.md" "# Title"\npublish "data/x.json" {a: 1}\n1', {"result": 1, "events": ["artifact.published", "artifact.published"]}),
    ("publish rejects ..", 'publish "../x" "no"\n1', {"error": "capability-violation", "line": 1}),
    ("try catch by code", 'var got = ""\ntry { let x = parseJson("{") } catch "evaluation" as err { got = err.code }\ngot',
     {"result": "evaluation"}),
    ("try catch falls through to next", 'var got = ""\ntry { require false } catch "process" { got = "p" } catch "assertion" as e { got = e.message }\ngot',
     {"result": "requirement failed: false"}),
    ("catch without codes", 'var got = 0\ntry { let _x = [1][5] } catch { got = 1 }\ngot', {"result": 1}),
    ("uncaught code passes through", 'try { require false } catch "process" { print "no" }\n1', {"error": "assertion", "line": 1}),
    ("fatal never caught", 'limits { steps: 5 }\ntry { var i = 0\nwhile true { i = i + 1 } } catch { print "caught" }\n1',
     {"error": "limit-exceeded"}),
    ("async await", 'async a { let v = 1 + 1 }\nasync b { let w = 3 }\nawait a\nawait b\na.v + b.w', {"result": 5}),
    ("async snapshot at launch", 'var x = 1\nasync t { let seen = x }\nx = 2\nawait t\nt.seen', {"result": 1}),
    ("async failure at await", 'async t { let v = parseJson("{") }\ntry { await t } catch "evaluation" { print "caught" }\n1',
     {"result": 1, "prints": ["caught"]}),
    ("unawaited failing task fails the run", 'async t { let v = parseJson("{") }\n1', {"error": "evaluation"}),
    ("workflow call positional and named", "workflow add(a: int, b: int) -> int { return a + b }\nadd(1, b: 2)", {"result": 3}),
    ("workflow optional param", "workflow f(a: int, b?: int) -> int { return a + (b ?? 10) }\nf(1)", {"result": 11}),
    ("workflow events", "workflow f() -> int { return 1 }\nf()", {"result": 1, "events": ["workflow.started", "workflow.started",
                                                                                             "workflow.completed", "workflow.completed"]}),
    ("nested steps limit", "workflow spin() -> int {\n  limits { steps: 20 }\n  var i = 0\n  while true { i = i + 1 }\n  return i\n}\nspin()",
     {"error": "limit-exceeded", "line": 4}),
    ("expression statement", "let xs = [1]\nlen(xs)\nnull", {"result": None}),
    ("no result when last is not an expression", "let a = 1", {"result": None}),
]

EXPRESSIONS: list[Case] = [
    ("arithmetic", "[1 + 2, 7 - 10, 3 * 4, 7 / 2, 6 / 3, 7 % 3, -7 % 3, -(2)]", {"result": [3, -3, 12, 3.5, 2, 1, 2, -2]}),
    ("string and array concat", '["a" + "b", [1] + [2]]', {"result": ["ab", [1, 2]]}),
    ("comparisons", "[1 < 2, 2 <= 2, 3 > 4, 4 >= 4, 1 == 1.0, true == true, [1, {a: 1}] == [1, {a: 1}], 1 != 2]",
     {"result": [True, True, False, True, True, True, True, True]}),
    ("string comparison", '["a" < "b", "b" > "c"]', {"result": [True, False]}),
    ("in", '[2 in [1, 2], "ell" in "hello", "a" in {a: 1}, 3 in [1]]', {"result": [True, True, True, False]}),
    ("logic short-circuits", "let xs: int[] = []\nlen(xs) == 0 or xs[0] > 1", {"result": True}),
    ("and not", "[true and false, not false, true or false]", {"result": [False, True, True]}),
    ("ternary", '1 > 0 ? "yes" : "no"', {"result": "yes"}),
    ("coalesce", "let o: {a?: int} = {}\n[o.a ?? 5, 3 ?? 4]", {"result": [5, 3]}),
    ("optional chaining", "let o: {a: {b: int}}? = null\no?.a", {"result": None}),
    ("optional field reads null", "let o: {a?: int} = {}\no.a", {"result": None}),
    ("member", '{a: {b: "x"}}.a.b', {"result": "x"}),
    ("index and negative index", '[[10, 20, 30][0], [10, 20, 30][-1], {k: 1}["k"]]', {"result": [10, 30, 1]}),
    ("index out of range", "let xs = [1, 2]\nxs[5]", {"error": "evaluation", "line": 2}),
    ("slice", '[[1, 2, 3, 4][1:3], [1, 2, 3][:-1], "hello"[1:], [1, 2][5:]]', {"result": [[2, 3], [1, 2], "ello", []]}),
    ("projection", '[{n: {v: 1}}, {n: {v: 2}}][*].n.v', {"result": [1, 2]}),
    ("pick", '{id: 1, title: "t", body: "b"}.{id, title}', {"result": {"id": 1, "title": "t"}}),
    ("interpolation renders", 'let o = {a: [1, 2]}\n"o=${o} n=${1 + 1} s=${"x"} f=${1.5}"', {"result": 'o={"a": [1, 2]} n=2 s=x f=1.5'}),
    ("nested interpolation", '"${"in${1}"}"', {"result": "in1"}),
    ("triple-quoted dedent", 'let s = """\n    a\n      b\n    """\ns', {"result": "a\n  b"}),
    ("durations are ms", "[250ms, 2s, 1m, 1h]", {"result": [250, 2000, 60000, 3600000]}),
    ("object literal keys", '{"any key": 1, type: 2}', {"result": {"any key": 1, "type": 2}}),
    ("parallel", "let r = parallel { a: 1 + 1, b: len([1, 2, 3]) }\nr", {"result": {"a": 2, "b": 3}}),
    ("parallelMap keeps order", "parallelMap([3, 1, 2], x => x * 10, concurrency: 2)", {"result": [30, 10, 20]}),
    ("lambda block", "map([1, 2], x => { let y = x * 2\nreturn y + 1 })", {"result": [3, 5]}),
    ("lambda with index", "map([5, 6], (x, i) => x + i)", {"result": [5, 7]}),
    ("division by zero", "let z = 0\n1 / z", {"error": "evaluation", "line": 2}),
    ("missing field on any", 'let o: any = parseJson("{}")\no.name', {"error": "evaluation", "line": 2}),
    ("null use is evaluation", 'let o: any = null\no.name', {"error": "evaluation", "line": 2}),
    ("type error through any", 'let a: any = parseJson("\\"s\\"")\na + 1', {"error": "evaluation", "line": 2}),
]

BUILTIN_CALLS: list[Case] = [
    ("len", '[len("héllo"), len([1, 2]), len({a: 1})]', {"result": [5, 2, 1]}),
    ("keys values entries", 'let o = {b: 1, a: 2}\n[keys(o), values(o), entries(o)]',
     {"result": [["b", "a"], [1, 2], [{"key": "b", "value": 1}, {"key": "a", "value": 2}]]}),
    ("range", "[range(3), range(2, 4)]", {"result": [[0, 1, 2], [2, 3]]}),
    ("sum avg min max", "[sum([1, 2, 3]), sum([]), avg([1, 2]), min([3, 1]), max([3, 1])]", {"result": [6, 0, 1.5, 1, 3]}),
    ("avg of empty", "let xs: number[] = []\navg(xs)", {"error": "evaluation", "line": 2}),
    ("rounding", "[round(2.5), round(-2.5), round(1.005, 2), floor(1.7), ceil(1.2), abs(-3)]", {"result": [3, -3, 1.01, 1, 2, 3]}),
    ("count all any", "let xs = [1, 2, 3]\n[count(xs, x => x > 1), all(xs, x => x > 0), any(xs, x => x > 2)]",
     {"result": [2, True, True]}),
    ("map filter find", "let xs = [1, 2, 3]\n[map(xs, x => x * 2), filter(xs, x => x != 2), find(xs, x => x > 1), find(xs, x => x > 5)]",
     {"result": [[2, 4, 6], [1, 3], 2, None]}),
    ("sort sortBy", '[sort([3, 1, 2]), sort(["b", "a"]), sortBy([{n: 2}, {n: 1}], x => x.n)]',
     {"result": [[1, 2, 3], ["a", "b"], [{"n": 1}, {"n": 2}]]}),
    ("sort mixed fails", 'let xs: any[] = [1, "a"]\nsort(xs)', {"error": "evaluation", "line": 2}),
    ("unique flatten zip", "[unique([1, 2, 1, 1.0]), flatten([[1], [2, 3]]), zip([1, 2, 3], [4, 5])]",
     {"result": [[1, 2], [1, 2, 3], [[1, 4], [2, 5]]]}),
    ("first last", "let e: int[] = []\n[first([1, 2]), last([1, 2]), first(e)]", {"result": [1, 2, None]}),
    ("slice concat", '[slice([1, 2, 3], 1), slice("hello", 1, 3), concat([1], [2], [3]), concat("a", "b")]',
     {"result": [[2, 3], "el", [1, 2, 3], "ab"]}),
    ("join split", '[join(["a", "b"], "-"), split("a,b", ",")]', {"result": ["a-b", ["a", "b"]]}),
    ("case and trim", '[lower("AbC"), upper("abc"), trim("  x ")]', {"result": ["abc", "ABC", "x"]}),
    ("replace contains starts ends", '[replace("a-b-c", "-", "+"), contains([1, 2], 2), startsWith("hello", "he"), endsWith("hello", "lo")]',
     {"result": ["a+b+c", True, True, True]}),
    ("json parseJson", '[json({a: [1, 2.0]}), parseJson("{\\"a\\": 1.0}")]', {"result": ['{"a": [1, 2]}', {"a": 1}]}),
    ("bad parseJson", 'parseJson("{oops")', {"error": "evaluation", "line": 1}),
    ("conversions", '[str(1.5), str("s"), num("2.5"), int("42"), int(3.9), bool(0), bool("x")]',
     {"result": ["1.5", "s", 2.5, 42, 3, False, True]}),
    ("num of junk", 'num("abc")', {"error": "evaluation", "line": 1}),
    ("default typeOf", 'let o: {a?: int} = {}\n[default(o.a, 7), typeOf(null), typeOf([]), typeOf({}), typeOf(1), typeOf("s"), typeOf(true)]',
     {"result": [7, "null", "array", "object", "number", "string", "bool"]}),
    ("merge pick omit", '[merge({a: 1, b: 1}, {b: 2}), pick({a: 1, b: 2}, ["a"]), omit({a: 1, b: 2}, ["a"])]',
     {"result": [{"a": 1, "b": 2}, {"a": 1}, {"b": 2}]}),
    ("groupBy", 'groupBy(["ant", "bee", "ape"], w => slice(w, 0, 1))',
     {"result": [{"key": "a", "items": ["ant", "ape"]}, {"key": "b", "items": ["bee"]}]}),
    ("now and uuid from the host", "[len(now()) > 10, len(uuid())]", {"result": [True, 36]}),
    ("reduce and flatMap", "let xs = [1, 2, 3]\n[reduce(xs, 0, (acc, x) => acc * 10 + x), flatMap(xs, (x, i) => i == 1 ? [] : [x, x])]",
     {"result": [123, [1, 1, 3, 3]]}),
    ("functions and recursion", "fn fib(n: int) -> int {\n  return n < 2 ? n : fib(n - 1) + fib(n - 2)\n}\nmap(range(8), n => fib(n))",
     {"result": [0, 1, 1, 2, 3, 5, 8, 13]}),
    ("runaway recursion", "fn down(n: int) -> int {\n  return down(n + 1)\n}\ndown(0)", {"error": "limit-exceeded", "line": 2}),
]

AGENTS: list[Case] = [
    ("scripted agent with when and order", '''agent bot {
  model: "scripted"
  script: [when("refund", "R"), "first", "second"]
}
[bot("hello"), bot("a refund"), bot("x"), bot("y")]''', {"result": ["first", "R", "second", "first"],
                                                       "events": ["agent.started", "agent.completed"]}),
    ("typed output and repair", '''type Out = { n: int }
agent bot {
  model: "scripted"
  output: Out
  repair: 1
  script: [{ n: "wrong" }, { n: 2 }]
}
bot("go").n''', {"result": 2}),
    ("repairs exhausted", '''type Out = { n: int }
agent bot {
  model: "scripted"
  output: Out
  repair: 0
  script: [{ n: "wrong" }]
}
let r = bot("go")
r''', {"error": "output-validation", "line": 8}),
    ("expect feeds repair", '''agent bot {
  model: "scripted"
  output: int
  script: [1, 2]
}
let v = bot("go") expect it == 2 : "must be two"
v''', {"result": 2}),
    ("retry on agent-invocation", '''agent bot {
  model: "scripted"
  retry: { on: ["agent-invocation"], attempts: 2 }
  script: [fail("agent-invocation", "flaky"), "ok"]
}
bot("go")''', {"result": "ok"}),
    ("failure code", '''agent bot {
  model: "scripted"
  script: [fail("agent-invocation", "down")]
}
try { let _r = bot("go") } catch "agent-invocation" as e { print e.message }
1''', {"result": 1, "prints": ["down"]}),
    ("choice with fallback", '''agent bot {
  model: "scripted"
  script: ["maybe"]
}
bot("pick", choice: ["yes", "no"], fallback: "no")''', {"result": "no"}),
    ("team main and member", '''agent a { model: "scripted", script: ["from a"] }
agent b { model: "scripted", script: ["from b"] }
team t { main: a, members: [b] }
[t.main("x"), t.b("y"), t.member("b", "z")]''', {"result": ["from a", "from b", "from b"]}),
    ("team non-member", '''agent a { model: "scripted", script: ["from a"] }
agent b { model: "scripted", script: ["from b"] }
team t { main: a, members: [b] }
let who = "c"
t.member(who, "z")''', {"error": "capability-violation", "line": 5}),
    ("mock agent is schema-valid and deterministic", '''type P = { name: string, age: int(minimum: 0, maximum: 120) }
agent m { model: "mock", output: P }
let a = m("same")
let b = m("same")
[a == b, typeOf(a.name), a.age >= 0]''', {"result": [True, "string", True]}),
    ("agent_runs budget", '''agent bot { model: "scripted", script: ["x"] }
workflow w(items: int[]) -> string[] {
  limits { agent_runs: 2 }
  return parallelMap(items, i => bot("go ${i}"))
}
w([1, 2, 3])''', {"error": "limit-exceeded"}),
    ("parallelMap of agents", '''agent bot { model: "scripted", script: [when("1", "one"), when("2", "two")] }
parallelMap(["1", "2"], s => bot("n ${s}"))''', {"result": ["one", "two"]}),
    ("approve without operator", 'let ok = approve "Go?"\nok', {"error": "operator-unavailable", "line": 1}),
    ("ask without operator", 'let a = ask "Which?" choice ["x", "y"]\na', {"error": "operator-unavailable", "line": 1}),
    ("run not allowed", 'let r = run "echo" ["hi"]\nr.stdout', {"error": "capability-violation", "line": 1}),
]

ALL = STATEMENTS + EXPRESSIONS + BUILTIN_CALLS + AGENTS
