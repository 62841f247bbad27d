"""Property tests for the front end: `check()` never raises, never hangs, reports only
registered codes with spans inside the text, and is deterministic.

Three kinds of input:
- random text over a Flow-ish alphabet (and token soup: random Flow tokens);
- grammar-aware programs built from language.md (types, tools, agents, teams,
  workflows with every statement, expressions with every operator, interpolation,
  durations), which must also be free of syntax errors (F1xxx);
- those programs mutated (token ranges deleted, lines duplicated, characters
  inserted, tokens swapped, text truncated), checked as files, as notebook
  cells, and as `use`d libraries (including import cycles and missing files).

Every check runs under a SIGALRM guard, so an infinite loop fails the example
instead of hanging the run. Minimised failures are kept in `fuzz_corpus/*.flow`
and replayed by `test_corpus_never_raises`.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flow_kernel.diagnostics.registry import REGISTRY
from flow_kernel.lang import SessionScope, check
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.source import SourceFile

CORPUS = Path(__file__).parent / "fuzz_corpus"
TIMEOUT_S = 10

# Corpus files known to fail today, with the exception they raise and why; they are
# xfail(strict), so a fix shows up as an XPASS failure and the entry gets removed. Any
# *other* exception still fails. The `slow_*` files are super-linear blowups: they run
# under a short guard (KNOWN_SLOW_GUARD_S) so that the suite stays fast; fixed, each
# checks in well under a second.
KNOWN_CRASHES: dict[str, tuple[type[BaseException], str]] = {}  # all fixed; add new finds here


KNOWN_SLOW: dict[str, str] = {}  # all fixed; add new finds here
KNOWN_SLOW_GUARD_S = 1.5

# FLOW_FUZZ_LONG=1: the long run (every property 20 times over), done once and reported.
SCALE = 20 if os.environ.get("FLOW_FUZZ_LONG") == "1" else 1
_SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- the no-hang guard and the invariants ------------------------------------------


class CheckTimedOut(Exception):
    """`check()` ran longer than TIMEOUT_S seconds: most likely an infinite loop."""


@contextmanager
def no_hang(seconds: float = TIMEOUT_S) -> Iterator[None]:
    """Raise CheckTimedOut in the main thread after `seconds` (POSIX only)."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise CheckTimedOut(f"check() did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except CheckTimedOut as exc:
        # Re-raise with a summary of where the check was stuck but without the
        # interrupted traceback: pytest cannot render its frames (tb_lineno is None).
        frames = traceback.extract_tb(exc.__traceback__)[-6:]
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
        raise CheckTimedOut(f"{exc} (stuck in {where})") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_check(text: str, *, cell: bool = False, session: SessionScope | None = None,
              timeout: float = TIMEOUT_S) -> CheckResult:
    source = SourceFile("cell[1]" if cell else "fuzz.flow", text)
    with no_hang(timeout):
        if cell:
            return check(source, session=session if session is not None else SessionScope())
        return check(source)


def assert_well_formed(result: CheckResult, text: str, other_files: tuple[str, ...] = ()) -> None:
    lines = text.count("\n") + 1
    for d in result.diagnostics:
        assert d.code in REGISTRY, f"unregistered code {d.code}: {d.message}"
        assert d.severity == REGISTRY[d.code].severity, d.code
        assert isinstance(d.message, str) and d.message.strip(), d.code
        spans = [d.span] + [r.span for r in d.related]
        for span in spans:
            limit = len(span.source.text)
            assert 0 <= span.start <= span.end <= limit, (d.code, d.message, span.start, span.end, limit)
            for pos in (span.start_pos, span.end_pos):
                assert pos.line >= 1 and pos.column >= 1, (d.code, pos)
        if d.span.source.text == text:
            assert d.span.end_pos.line <= lines, (d.code, d.span.end_pos)
        else:
            assert d.span.source.text in other_files, (d.code, "primary span points into an unknown file")


def fingerprint(result: CheckResult) -> list[tuple[object, ...]]:
    return [
        (d.code, d.severity, d.span.start, d.span.end, d.message,
         tuple((r.span.start, r.span.end, r.message) for r in d.related), d.hints)
        for d in result.diagnostics
    ]


# -- random text --------------------------------------------------------------------

OPERATOR_CHARS = "()[]{},:;.+-*/%<>=|?!&^~@`'\\"
FLOW_CHARS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"
    + OPERATOR_CHARS
    + '"$#'
    + " \n\t\r\f\v"
    + "éß中😀\u00a0\u2028\ufeff\u0301\x00\x7f²١𝟙"
)
flowish_text = st.text(alphabet=FLOW_CHARS, max_size=300)

TOKENS = (
    "use type tool agent team workflow let var if else for in while return break continue stage pipeline "
    "parallel async await verify require expect emit print log publish approve ask run try catch as true "
    "false null and or not limits external schema it details choice stdin timeout requires approval progress "
    "string number int bool any duration parallelMap len map filter sum range x y xs t err it_ _a"
).split() + [
    "(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "?.", "??", "=>", "==", "!=", "<", "<=", ">", ">=",
    "->", "...", "+", "-", "*", "/", "%", "=", "|", "?", "!", "&", "'", "\\", "$", "${", "}", "#", "## doc",
    '"', '"""', '"a"', '"${x}"', '"${"${1}"}"', '"\\u12"', '"\\q"', '"""\n  a\n  """', "0", "42", "3.14",
    "1e-3", "1e", "3.5e", "1.2.3", "5x", "250ms", "30s", "5m", "2h", "1.5s", "0ms", "007", "\n", "\t", " ",
    "é", "😀", "\x00",
]
token_soup = st.lists(st.sampled_from(TOKENS), max_size=80).flatmap(
    lambda toks: st.lists(st.sampled_from(["", " ", "\n", "  "]), min_size=len(toks), max_size=len(toks)).map(
        lambda seps: "".join(t + s for t, s in zip(toks, seps, strict=True))
    )
)


@settings(max_examples=1000 * SCALE, **_SETTINGS)
@given(text=flowish_text, cell=st.booleans())
def test_random_text_never_raises(text: str, cell: bool) -> None:
    assert_well_formed(run_check(text, cell=cell), text)


@settings(max_examples=60 * SCALE, **_SETTINGS)
@given(text=st.text(max_size=200))
def test_arbitrary_unicode_never_raises(text: str) -> None:
    assert_well_formed(run_check(text), text)


@settings(max_examples=600 * SCALE, **_SETTINGS)
@given(text=token_soup, cell=st.booleans())
def test_token_soup_never_raises(text: str, cell: bool) -> None:
    assert_well_formed(run_check(text, cell=cell), text)


# -- grammar-aware programs ---------------------------------------------------------

NAMES = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa", "lam", "mu", "nu", "xi"]
FIELDS = ["id", "title", "n", "tags", "score", "body"]  # the fields of the generated `Item` type
SCALAR_TYPES = ["string", "number", "int", "bool", "null", "any", "duration", "external"]
RUNTIME_CODES = ["agent-invocation", "output-validation", "evaluation", "assertion", "process",
                 "capability-violation", "operator-unavailable", "workflow-input-validation"]
STR_CHARS = "abc XYZ 0189_-.,:;!?'{}()[]#é中😀"
_STR_PIECE = st.text(alphabet=STR_CHARS, max_size=6)
_TRIPLE_PIECE = st.text(alphabet=STR_CHARS + '"', max_size=8)
_PERMILLE = st.integers(0, 999)
_INTS: dict[tuple[int, int], st.SearchStrategy[int]] = {}

# Precedence of the printed forms, lowest first (language.md §6).
PREFIX, TERNARY, COALESCE, OR, AND, NOT, CMP, ADD, MUL, UNARY, POSTFIX = range(11)
BINARY_OPS = {
    "??": COALESCE, "or": OR, "and": AND, "==": CMP, "!=": CMP, "<": CMP, "<=": CMP, ">": CMP, ">=": CMP,
    "in": CMP, "+": ADD, "-": ADD, "*": MUL, "/": MUL, "%": MUL,
}
LAMBDA_BUILTINS = ["map", "filter", "find", "count", "all", "any", "sortBy", "groupBy"]


class Gen:
    """Builds one Flow program from hypothesis draws (so failures shrink)."""

    def __init__(self, draw: Callable[[st.SearchStrategy[object]], object]) -> None:
        self._draw = draw
        self.counter = 0
        self.inline = 0  # > 0 inside `${…}`: no newlines allowed
        self.agents: list[str] = []
        self.item_agents: list[str] = []  # agents whose output is `Item`
        self.teams: list[tuple[str, list[str]]] = []
        self.workflows: list[tuple[str, list[tuple[str, str]]]] = []
        self.types: list[str] = ["Item"]

    # -- draws --
    def pick(self, seq: list[str] | tuple[str, ...]) -> str:
        if len(seq) == 1:
            return seq[0]
        return seq[self.num(0, len(seq) - 1)]

    def num(self, lo: int, hi: int) -> int:
        strategy = _INTS.get((lo, hi))
        if strategy is None:
            strategy = _INTS[(lo, hi)] = st.integers(lo, hi)
        return self._draw(strategy)  # type: ignore[return-value]

    def coin(self, p: float = 0.5) -> bool:
        return self._draw(_PERMILLE) < int(p * 1000)  # type: ignore[operator]

    def fresh(self, base: str = "v") -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    def sp(self) -> str:
        """Whitespace inside brackets, where newlines are insignificant."""
        if self.inline:
            return self.pick(["", " "])
        return self.pick(["", " ", " ", "\n    ", " # note\n  "])

    # -- literals --
    def string(self, scope: list[tuple[str, str]] | None = None, depth: int = 0) -> str:
        parts: list[str] = []
        for _ in range(self.num(0, 3)):
            kind = self.num(0, 9)
            if kind <= 4:
                parts.append(self._draw(_STR_PIECE))  # type: ignore[arg-type]
            elif kind <= 6:
                parts.append(self.pick(["\\n", "\\t", '\\"', "\\\\", "\\$", "\\u00e9", "\\u0041", "$", "$x", "{}"]))
            elif scope is not None and depth < 2:
                self.inline += 1
                try:
                    parts.append("${" + self.expr(scope, "any", depth + 1) + "}")
                finally:
                    self.inline -= 1
        text = ""
        for part in parts:  # a literal `$` must not run into a following `{`
            text += (" " + part) if text.endswith("$") and part.startswith("{") else part
        return '"' + text + '"'

    def triple_string(self, scope: list[tuple[str, str]] | None = None, depth: int = 0) -> str:
        if self.inline:
            return self.string(scope, depth)
        lines = []
        for _ in range(self.num(0, 3)):
            text: str = self._draw(_TRIPLE_PIECE)  # type: ignore[assignment]
            text = re.sub('"+', '"', text).rstrip('"')  # never `"""` inside, nor `"` before the closing quotes
            if scope is not None and depth < 2 and self.coin(0.3):
                self.inline += 1
                try:
                    text += "${" + self.expr(scope, "any", depth + 1) + "}"
                finally:
                    self.inline -= 1
            lines.append(" " * self.num(0, 6) + text)
        return '"""' + self.pick(["", "\n"]) + "\n".join(lines) + self.pick(["", "\n  "]) + '"""'

    def number(self) -> str:
        return self.pick(["0", "1", "2", "42", "1000000", "3.14", "0.5", "1e-3", "2.5E+4", "1e10"])

    def duration(self) -> str:
        return str(self.num(1, 500)) + self.pick(["ms", "s", "m", "h"])

    def json_value(self, depth: int = 0) -> str:
        kind = self.num(0, 7 if depth < 2 else 4)
        if kind == 0:
            return self.string()
        if kind == 1:
            return self.number()
        if kind == 2:
            return self.pick(["true", "false", "null"])
        if kind in (3, 4):
            return self.item_literal()
        if kind == 5:
            return "[" + ", ".join(self.json_value(depth + 1) for _ in range(self.num(0, 3))) + "]"
        keys = sorted({self.pick(NAMES + ["type", "if"]) for _ in range(self.num(0, 3))})
        return "{" + ", ".join(f"{k}: {self.json_value(depth + 1)}" for k in keys) + "}"

    def item_literal(self, scope: list[tuple[str, str]] | None = None, depth: int = 3) -> str:
        s = self.sp
        fields = [f"id: {self.string()}", f"title: {self.expr(scope, 'str', depth) if scope else self.string()}",
                  f"n: {self.num(0, 99)}"]
        if self.coin(0.4):
            fields.append(f'tags: ["{self.pick(NAMES)}"]')
        if self.coin(0.3):
            fields.append(f"score: {self.number()}")
        trailing = "," if self.coin(0.3) else ""
        return "{" + s() + ("," + s()).join(fields) + trailing + s() + "}"

    # -- types --
    def type_expr(self, depth: int = 0) -> tuple[str, int]:
        """(text, 0 for a union, 1 for a postfix-able primary)."""
        kind = self.num(0, 11 if depth < 2 else 4)
        if kind <= 1:
            text, prec = self.pick(SCALAR_TYPES + self.types), 1
        elif kind == 2:
            text, prec = self.pick(['"low"', '"high"', "42", "-1", "true", "false", "2.5"]), 1
        elif kind == 3:
            base = self.pick(["string", "int", "number"])
            args = {"string": ["minLength: 1", "maxLength: 80", 'pattern: "^[a-z]+$"', 'format: "email"'],
                    "int": ["minimum: 0", "maximum: 10", "multipleOf: 2", "exclusiveMaximum: 100"],
                    "number": ["minimum: 0.5", "exclusiveMinimum: -1", "maximum: 1e3"]}[base]
            chosen = sorted({self.pick(args) for _ in range(self.num(1, 2))})
            text, prec = f"{base}({', '.join(chosen)})", 1
        elif kind == 4:
            inner, p = self.type_expr(depth + 1)
            suffix = self.pick(["[]", "?", "[](minItems: 1)", "[](uniqueItems: true)"])
            if not p or (suffix == "?" and inner.endswith("?")):  # `T??` would lex as the `??` operator
                inner = f"({inner})"
            text, prec = inner + suffix, 1
        elif kind <= 7:
            names = sorted({self.pick(NAMES + ["type", "for"]) for _ in range(self.num(0, 4))})
            members = [f"{n}{'?' if self.coin(0.3) else ''}: {self.type_expr(depth + 1)[0]}" for n in names]
            if self.coin(0.2):
                members.append('"quoted key": string')
            if self.coin(0.25):
                members.append("...")
            text, prec = "{" + self.sp() + ("," + self.sp()).join(members) + self.sp() + "}", 1
        elif kind <= 9:
            options = [self.type_expr(depth + 1)[0] for _ in range(self.num(2, 3))]
            text, prec = " | ".join(options), 0
        elif kind == 10:
            text, prec = 'schema { "type": "object", "properties": { "a": { "type": "string" } } }', 1
        else:
            inner, _ = self.type_expr(depth + 1)
            text, prec = f"({inner})", 1
        return text, prec

    # -- expressions --
    def names_of(self, scope: list[tuple[str, str]], ty: str) -> list[str]:
        return [n for n, t in scope if t == ty or (ty == "any" and t != "task")]

    def expr(self, scope: list[tuple[str, str]] | None, ty: str = "any", depth: int = 0) -> str:
        """A full expression whose type is (mostly) `ty`."""
        return self.ex(scope or [], ty, depth)[0]

    def at(self, scope: list[tuple[str, str]], ty: str, depth: int, prec: int) -> str:
        """An expression usable where precedence `prec` is required."""
        text, p = self.ex(scope, ty, depth)
        return text if p >= prec else f"({text})"

    def ex(self, scope: list[tuple[str, str]], ty: str, depth: int) -> tuple[str, int]:
        if ty in ("any", "other"):
            ty = self.pick(["int", "num", "str", "bool", "items", "item", "strs", "ints"])
        names = self.names_of(scope, ty)
        leaf = depth >= 3 or self.coin(0.3)
        if leaf:
            if names and self.coin(0.6):
                return self.pick(names), POSTFIX
            return self.leaf(ty, scope, depth), POSTFIX
        return getattr(self, "ex_" + ty)(scope, depth + 1)

    def leaf(self, ty: str, scope: list[tuple[str, str]], depth: int) -> str:
        if ty == "int":
            return self.pick(["0", "1", "7", "42", "100"]) if self.coin(0.8) else self.duration()
        if ty == "num":
            return self.number()
        if ty == "str":
            return self.string(scope, depth) if self.coin(0.85) else self.triple_string(scope, depth)
        if ty == "bool":
            return self.pick(["true", "false"])
        if ty == "item":
            return self.item_literal()
        if ty == "items":
            return "[" + ", ".join(self.item_literal() for _ in range(self.num(0, 2))) + "]"
        if ty == "strs":
            return "[" + ", ".join(self.string() for _ in range(self.num(0, 3))) + "]"
        return "[" + ", ".join(str(self.num(0, 9)) for _ in range(self.num(0, 3))) + "]"

    def binop(self, scope: list[tuple[str, str]], depth: int, op: str, ty_l: str, ty_r: str) -> tuple[str, int]:
        prec = BINARY_OPS[op]
        if op == "??":  # right-associative
            return f"{self.at(scope, ty_l, depth, prec + 1)} ?? {self.at(scope, ty_r, depth, prec)}", prec
        if prec == CMP:  # comparisons do not chain
            return f"{self.at(scope, ty_l, depth, prec + 1)} {op} {self.at(scope, ty_r, depth, prec + 1)}", prec
        return f"{self.at(scope, ty_l, depth, prec)} {op} {self.at(scope, ty_r, depth, prec + 1)}", prec

    def lam(self, scope: list[tuple[str, str]], param_ty: str, body_ty: str, depth: int, arity: int = 1) -> str:
        p = self.fresh("x")
        inner = scope + [(p, param_ty)]
        params = p
        if arity == 2:
            i = self.fresh("i")
            inner.append((i, "int"))
            params = f"({p}, {i})"
        elif self.coin(0.2):
            params = f"({p})"
        if self.coin(0.2):
            sep = "; " if self.inline else self.pick(["; ", "\n      "])
            v = self.fresh("b")
            body = f"{{ let {v} = {self.expr(inner, body_ty, depth)}{sep}return {v} }}"
            return f"{params} => {body}"
        body = self.at(inner, body_ty, depth, TERNARY)
        return f"{params} => {'(' + body + ')' if body.startswith('{') else body}"

    def call(self, fn: str, args: list[str]) -> tuple[str, int]:
        s = self.sp
        trailing = "," if args and self.coin(0.15) else ""
        return f"{fn}({s()}{(',' + s()).join(args)}{trailing}{s()})", POSTFIX

    def agent_call(self, scope: list[tuple[str, str]], depth: int, agents: list[str]) -> tuple[str, int]:
        if not agents:
            return self.leaf("str", scope, depth), POSTFIX
        agent = self.pick(agents)
        args = [self.at(scope, "str", depth, TERNARY)]
        if self.coin(0.4):
            args.append(f"context: {{ data: {self.expr(scope, 'any', depth)} }}")
        if self.coin(0.3):
            args.append(f'label: "{self.fresh("lbl")}"')
        if self.coin(0.2):
            args.append(f"timeout: {self.duration()}")
        if self.coin(0.15):
            args.append(f"repair: {self.num(0, 3)}")
        return self.call(agent, args)

    def ex_int(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 9)
        if k <= 2:
            return self.binop(scope, depth, self.pick(["+", "-", "*", "%"]), "int", "int")
        if k == 3:
            return f"-{self.at(scope, 'int', depth, UNARY)}", UNARY
        if k == 4:
            return self.call("len", [self.expr(scope, self.pick(["str", "items", "strs", "item"]), depth)])
        if k == 5:
            return self.call(self.pick(["floor", "ceil", "round"]), [self.expr(scope, "num", depth)])
        if k == 6:
            return self.call("count", [self.expr(scope, "items", depth), self.lam(scope, "item", "bool", depth)])
        if k == 7:
            return f"{self.at(scope, 'item', depth, POSTFIX)}.n", POSTFIX
        if k == 8:
            return f"{self.at(scope, 'ints', depth, POSTFIX)}[{self.expr(scope, 'int', depth)}]", POSTFIX
        return self.call("sum", [self.expr(scope, "ints", depth)])

    def ex_num(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 5)
        if k <= 1:
            return self.binop(scope, depth, self.pick(["+", "-", "*", "/"]), self.pick(["num", "int"]), "num")
        if k == 2:
            return self.call(self.pick(["abs", "num"]), [self.expr(scope, self.pick(["num", "int"]), depth)])
        if k == 3:
            return self.call(self.pick(["avg", "max", "min"]), [self.expr(scope, "ints", depth)])
        if k == 4:
            return self.call("round", [self.expr(scope, "num", depth), str(self.num(0, 3))])
        return self.ex_int(scope, depth)

    def ex_str(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 12)
        if k <= 1:
            return self.binop(scope, depth, "+", "str", "str")
        if k == 2:
            return self.string(scope, depth), POSTFIX
        if k == 3:
            return self.call(self.pick(["lower", "upper", "trim", "str", "json"]), [self.expr(scope, "str", depth)])
        if k == 4:
            return self.call("join", [self.expr(scope, "strs", depth), self.string()])
        if k == 5:
            return self.call("replace", [self.expr(scope, "str", depth), self.string(), self.string()])
        if k == 6:
            return f"{self.at(scope, 'item', depth, POSTFIX)}{self.pick(['.', '?.'])}{self.pick(['id', 'title'])}", POSTFIX
        if k == 7:
            return (f"{self.at(scope, 'bool', depth, COALESCE)} ? {self.at(scope, 'str', depth, TERNARY)}"
                    f" : {self.at(scope, 'str', depth, TERNARY)}"), TERNARY
        if k == 8:
            return f"{self.at(scope, 'item', depth, POSTFIX)}.body ?? {self.at(scope, 'str', depth, COALESCE)}", COALESCE
        if k == 9:
            return self.agent_call(scope, depth, [a for a in self.agents if a not in self.item_agents])
        if k == 10 and self.teams:
            team, members = self.teams[self.num(0, len(self.teams) - 1)]
            plain = [m for m in members if m not in self.item_agents]
            if plain:
                return f"{team}.{self.pick(plain)}({self.at(scope, 'str', depth, TERNARY)})", POSTFIX
        if k == 11:
            return f"{self.at(scope, 'strs', depth, POSTFIX)}[{self.expr(scope, 'int', depth)}]", POSTFIX
        return self.call("default", [f"first({self.expr(scope, 'strs', depth)})", self.string()])

    def ex_bool(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 9)
        if k <= 1:
            return self.binop(scope, depth, self.pick(["and", "or"]), "bool", "bool")
        if k == 2:
            return f"not {self.at(scope, 'bool', depth, NOT)}", NOT
        if k == 3:
            return self.binop(scope, depth, self.pick(["<", "<=", ">", ">=", "==", "!="]), "int", "int")
        if k == 4:
            return self.binop(scope, depth, self.pick(["==", "!="]), "str", "str")
        if k == 5:
            return self.binop(scope, depth, "in", "str", self.pick(["str", "strs"]))
        if k == 6:
            return self.call(self.pick(["all", "any"]), [self.expr(scope, "items", depth),
                                                          self.lam(scope, "item", "bool", depth)])
        if k == 7:
            return self.call(self.pick(["startsWith", "endsWith", "contains"]),
                             [self.expr(scope, "str", depth), self.expr(scope, "str", depth)])
        if k == 8:
            return self.call("bool", [self.expr(scope, "any", depth)])
        return f"{self.at(scope, 'item', depth, POSTFIX)}.n == {self.at(scope, 'int', depth, CMP + 1)}", CMP

    def ex_item(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 5)
        if k <= 1:
            return self.item_literal(scope, depth), POSTFIX
        if k == 2:
            return f"{self.at(scope, 'items', depth, POSTFIX)}[{self.expr(scope, 'int', depth)}]", POSTFIX
        if k == 3 and self.item_agents:
            text, _ = self.agent_call(scope, depth, self.item_agents)
            return text, POSTFIX
        if k == 4:
            return self.call("merge", [self.expr(scope, "item", depth), f"{{ n: {self.expr(scope, 'int', depth)} }}"])
        return self.call("default", [f"find({self.expr(scope, 'items', depth)}, {self.lam(scope, 'item', 'bool', depth)})",
                                     self.item_literal()])

    def ex_items(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 6)
        if k == 0:
            return self.binop(scope, depth, "+", "items", "items")
        if k == 1:
            return self.call(self.pick(["filter"]), [self.expr(scope, "items", depth), self.lam(scope, "item", "bool", depth)])
        if k == 2:
            return self.call("sortBy", [self.expr(scope, "items", depth), self.lam(scope, "item", "int", depth)])
        if k == 3:
            return f"{self.at(scope, 'items', depth, POSTFIX)}[{self.num(0, 2)}:{self.pick(['', '-1', '3'])}]", POSTFIX
        if k == 4:
            if self.coin():
                return self.call("unique", [self.expr(scope, "items", depth)])
            return self.call("slice", [self.expr(scope, "items", depth), "0"] + (["2"] if self.coin() else []))
        if k == 5:
            return self.call("parallelMap", [self.expr(scope, "items", depth),
                                             self.lam(scope, "item", "item", depth), f"concurrency: {self.num(1, 8)}"])
        return "[" + ", ".join(self.expr(scope, "item", depth) for _ in range(self.num(0, 3))) + "]", POSTFIX

    def ex_strs(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 6)
        if k == 0:
            return f"{self.at(scope, 'items', depth, POSTFIX)}[*].{self.pick(['id', 'title'])}", POSTFIX
        if k == 1:
            return self.call("map", [self.expr(scope, "items", depth), self.lam(scope, "item", "str", depth, self.num(1, 2))])
        if k == 2:
            return self.call("split", [self.expr(scope, "str", depth), self.string()])
        if k == 3:
            return self.call(self.pick(["keys", "sort"]), [self.expr(scope, self.pick(["item", "strs"]), depth)])
        if k == 4:
            return self.call("concat", [self.expr(scope, "strs", depth) for _ in range(self.num(1, 3))])
        if k == 5:
            obj = f"{self.at(scope, 'item', depth, POSTFIX)}.{{{self.sp()}id,{self.sp()}title{self.sp()}}}"
            return self.call("values", [obj])
        return "[" + ", ".join(self.expr(scope, "str", depth) for _ in range(self.num(0, 3))) + "]", POSTFIX

    def ex_ints(self, scope: list[tuple[str, str]], depth: int) -> tuple[str, int]:
        k = self.num(0, 4)
        if k == 0:
            return self.call("range", [self.expr(scope, "int", depth) for _ in range(self.num(1, 2))])
        if k == 1:
            return f"{self.at(scope, 'items', depth, POSTFIX)}[*].n", POSTFIX
        if k == 2:
            return self.call("map", [self.expr(scope, "items", depth), self.lam(scope, "item", "int", depth)])
        if k == 3:
            return self.call("flatten", [f"[{self.expr(scope, 'ints', depth)}, {self.expr(scope, 'ints', depth)}]"])
        return "[" + ", ".join(self.expr(scope, "int", depth) for _ in range(self.num(0, 4))) + "]", POSTFIX

    def full_rhs(self, scope: list[tuple[str, str]], ty: str, in_async: bool = False,
                 in_parallel: bool = False) -> tuple[str, str]:
        """A right-hand side and its coarse type: a prefix form, a parallel block, an agent
        call with `expect` clauses, a workflow call, or a plain expression of type `ty`."""
        k = self.num(0, 12)
        if k == 0 and not in_async and not in_parallel:
            details = f" details {{ a: {self.expr(scope, 'any', 2)} }}" if self.coin() else ""
            return f"approve {self.expr(scope, 'str', 2)}{details}", "bool"
        if k == 1 and not in_async and not in_parallel:
            choice = f' choice ["{self.pick(NAMES)}", "{self.pick(NAMES)}x"]' if self.coin() else ""
            return f"ask {self.expr(scope, 'str', 2)}{choice}", "str"
        if k == 2:
            clauses = [f"timeout {self.duration()}", f"stdin {self.string(scope, 2)}"]
            if self.coin():
                clauses.reverse()
            chosen = clauses[: self.num(0, 2)]
            exe = self.pick(["git", "python3", "ls"])
            arg = self.pick(["1", "true", "null", self.string()])
            return f'run "{exe}" [{self.string()}, {arg}] ' + " ".join(chosen), "other"
        if k == 3:
            branches = sorted({self.pick(NAMES) for _ in range(self.num(1, 3))})
            sep = self.pick([",\n    ", "\n    ", ", "])
            body = sep.join(f"{b}: {self.expr(scope, 'any', 2)}" for b in branches)
            return f"parallel {{\n    {body}{self.pick(['', ','])}\n  }}", "other"
        if k == 4 and self.agents:
            agent = self.pick(self.agents)
            call, _ = self.agent_call(scope, 2, [agent])
            it_ty = "item" if agent in self.item_agents else "str"
            clauses = "".join(
                f"{self.pick([' ', chr(10) + '    '])}expect {self.expr(scope + [('it', it_ty)], 'bool', 2)}"
                + (f" : {self.string()}" if self.coin() else "")
                for _ in range(self.num(1, 2))
            )
            return call + clauses, it_ty
        if k == 5 and self.agents:
            agent = self.pick(self.agents)
            a, b = self.pick(NAMES), self.pick(NAMES) + "2"
            fallback = f', fallback: "{a}"' if self.coin() else ""
            return f'{agent}({self.string(scope, 2)}, choice: ["{a}", "{b}"]{fallback})', "str"
        if k == 6 and self.workflows:
            name, params = self.workflows[self.num(0, len(self.workflows) - 1)]
            positional = self.num(0, len(params))
            args = [self.expr(scope, t, 2) for _, t in params[:positional]]
            args += [f"{p}: {self.expr(scope, t, 2)}" for p, t in params[positional:]]
            return self.call(name, args)[0], "other"
        if k == 7 and self.agents:
            return f"{self.pick(self.agents)}({self.string(scope, 2)}, output: {self.type_expr(1)[0]})", "other"
        return self.expr(scope, ty), ty

    # -- statements --
    def sep(self) -> str:
        return self.pick(["\n", "\n", "\n\n", "; ", " # comment\n", "\n# full-line comment\n"])

    def block(self, scope: list[tuple[str, str]], depth: int, ctx: dict[str, object], indent: str) -> str:
        inner = list(scope)
        body = self.statements(inner, depth, ctx, indent + "  ", self.num(0, 4))
        if not body:
            return "{ }"
        return "{\n" + body + "\n" + indent + "}"

    def statements(self, scope: list[tuple[str, str]], depth: int, ctx: dict[str, object], indent: str, n: int) -> str:
        out: list[str] = []
        for _ in range(n):
            stmt = self.statement(scope, depth, ctx, indent)
            if stmt:
                out.append(indent + stmt)
        return "".join(s + (self.sep() if i < len(out) - 1 else "") for i, s in enumerate(out))

    def statement(self, scope: list[tuple[str, str]], depth: int, ctx: dict[str, object], indent: str) -> str:
        k = self.num(0, 24)
        in_async = bool(ctx.get("async"))
        nested = depth >= 3
        if k <= 3:
            ty = self.pick(["int", "num", "str", "bool", "items", "item", "strs", "ints"])
            name = self.fresh(self.pick(NAMES))
            kw = self.pick(["let", "let", "var"])
            annot = {"int": ": int", "str": ": string", "bool": ": bool", "strs": ": string[]", "item": ": Item",
                     "items": ": Item[]"}.get(ty, "") if self.coin(0.3) else ""
            rhs, ty = self.full_rhs(scope, ty, in_async, bool(ctx.get("lambda")))
            if annot and rhs_type_differs(annot, ty):
                annot = ""
            scope.append((name, ty))
            if kw == "var":
                ctx.setdefault("vars", []).append((name, ty))  # type: ignore[union-attr]
            return f"{kw} {name}{annot} = {rhs}"
        if k == 4:
            own = [v for v in ctx.get("vars", []) if v in scope and v[1] != "other"]  # type: ignore[attr-defined]
            if own:
                name, ty = own[self.num(0, len(own) - 1)]
                return f"{name} = {self.expr(scope, ty)}"
        if k == 5 and not nested:
            text = f"if {self.expr(scope, 'bool', 1)} {self.block(scope, depth + 1, ctx, indent)}"
            for _ in range(self.num(0, 2)):
                text += f"{self.pick([' ', chr(10) + indent])}else if {self.expr(scope, 'bool', 1)} {self.block(scope, depth + 1, ctx, indent)}"
            if self.coin():
                text += f"{self.pick([' ', chr(10) + indent])}else {self.block(scope, depth + 1, ctx, indent)}"
            return text
        if k == 6 and not nested:
            x = self.fresh("it")
            idx = self.fresh("ix") if self.coin(0.4) else None
            coll_ty = self.pick(["items", "strs", "ints"])
            inner = scope + [(x, {"items": "item", "strs": "str", "ints": "int"}[coll_ty])] + ([(idx, "int")] if idx else [])
            loop_ctx = dict(ctx, loop=True)
            head = f"for {x}{', ' + idx if idx else ''} in {self.expr(scope, coll_ty, 1)} "
            return head + self.block(inner, depth + 1, loop_ctx, indent)
        if k == 7 and not nested:
            return f"while {self.expr(scope, 'bool', 1)} " + self.block(scope, depth + 1, dict(ctx, loop=True), indent)
        if k == 8 and ctx.get("loop"):
            return self.pick(["break", "continue"])
        if k == 9 and not nested:
            body = self.statements(scope, depth + 1, ctx, indent + "  ", self.num(1, 3))  # no scope: shares `scope`
            return f'stage "{self.fresh("st")}" {{\n{body}\n{indent}}}'
        if k == 10 and not nested:
            stages = []
            for _ in range(self.num(1, 3)):
                body = self.statements(scope, depth + 2, ctx, indent + "    ", self.num(1, 2))
                stages.append(f'{indent}  stage "{self.fresh("st")}" {{\n{body}\n{indent}  }}')
            return f'pipeline "{self.fresh("pl")}" {{\n' + "\n".join(stages) + f"\n{indent}}}"
        if k == 11:
            msg = f" : {self.string(scope, 1)}" if self.coin(0.7) else ""
            return f"{self.pick(['verify', 'require'])} {self.expr(scope, 'bool')}{msg}"
        if k == 12 and not ctx.get("lambda"):
            fields = [f"done: {self.expr(scope, 'int', 2)}", f"total: {self.expr(scope, 'int', 2)}",
                      f"message: {self.string(scope, 1)}"][: self.num(0, 3)]
            return "emit progress {" + self.sp() + ", ".join(fields) + self.sp() + "}"
        if k == 13 and not ctx.get("lambda"):
            return f"{self.pick(['print', 'log'])} {self.expr(scope, 'any')}"
        if k == 14 and not ctx.get("lambda"):
            return f'publish "{self.pick(["out", "reports/a.md", "x_1.json"])}" {self.expr(scope, "any")}'
        if k == 15 and ctx.get("toplevel_async") and not in_async and depth == ctx.get("base_depth"):
            task = self.fresh("task")
            body_ctx = dict(ctx, **{"async": True, "loop": False, "vars": []})
            body_scope = list(scope)
            body = self.statements(body_scope, depth + 1, body_ctx, indent + "  ", self.num(1, 3))
            tasks: list[str] = ctx.setdefault("tasks", [])  # type: ignore[assignment]
            tasks.append(task)
            return f"async {task} {{\n{body}\n{indent}}}"
        if k == 16 and ctx.get("tasks") and not in_async:
            tasks = ctx["tasks"]  # type: ignore[assignment]
            return f"await {tasks.pop(0)}"
        if k == 17 and not nested:
            text = "try " + self.block(scope, depth + 1, ctx, indent)
            for _ in range(self.num(1, 2)):
                codes = sorted({self.pick(RUNTIME_CODES) for _ in range(self.num(0, 2))})
                err = self.fresh("err") if self.coin(0.6) else None
                cscope = scope + ([(err, "other")] if err else [])
                head = "catch" + (" " + ", ".join(f'"{c}"' for c in codes) if codes else "") + (f" as {err}" if err else "")
                text += f"{self.pick([' ', chr(10) + indent])}{head} " + self.block(cscope, depth + 1, ctx, indent)
            return text
        if k == 18 and ctx.get("returns") and not in_async:
            ret = str(ctx["returns"])
            rhs, ty = self.full_rhs(scope, ret, False, bool(ctx.get("lambda")))
            return f"return {rhs if ty == ret else self.expr(scope, ret)}"
        if k == 19 and self.agents and not ctx.get("lambda"):
            return self.full_rhs(scope, "str", in_async)[0]
        if k == 20:
            return f"{self.pick(['len', 'str', 'json'])}({self.expr(scope, 'any')})"
        if k == 21 and not ctx.get("lambda"):
            return f"let {self.fresh('pm')} = " + self.call("parallelMap", [
                self.expr(scope, "items", 1), self.lam(scope, "item", "str", 1), f"concurrency: {self.num(1, 4)}"])[0]
        return f"print {self.string(scope, 1)}"

    # -- declarations --
    def program(self) -> str:
        out: list[str] = []
        if self.coin(0.3):
            out.append("# a generated program")
        item_type = "type Item = { id: string, title: string, n: int, tags?: string[], score?: number, body?: string }"
        decls: list[str] = [item_type]
        for _ in range(self.num(0, 2)):
            name = self.fresh("T")
            decls.append(f"type {name} = {self.type_expr()[0]}")
            self.types.append(name)
        tools: list[str] = []
        for _ in range(self.num(0, 2)):
            name = self.fresh("tool_")
            params = ", ".join(f"{p}{'?' if self.coin(0.3) else ''}: {self.type_expr(1)[0]}" for p in sorted({self.pick(NAMES) for _ in range(self.num(0, 2))}))
            approval = " requires approval" if self.coin(0.3) else ""
            decls.append(f"tool {name}({params}) -> {self.type_expr(1)[0]}{approval}")
            tools.append(name)
        for _ in range(self.num(1, 3)):
            decls.append(self.agent_decl(tools))
        if len(self.agents) >= 2 and self.coin(0.6):
            name = self.fresh("team")
            members = self.agents[1:]
            self.teams.append((name, [self.agents[0]] + members))
            sep = self.pick([", ", "\n  "])
            decls.append(f"team {name} {{{self.pick(['', chr(10) + '  '])}main: {self.agents[0]}{sep}members: [{', '.join(members)}]{self.pick(['', ',', chr(10)])}}}")
        for _ in range(self.num(1, 3)):
            decls.append(self.workflow_decl())
        if self.coin(0.5):
            decls.reverse()  # declarations may appear in any order
        for d in decls:
            if self.coin(0.3):
                out.append("## Documentation of the next declaration.\n## Second line.")
            out.append(d)
        top_scope: list[tuple[str, str]] = []
        ctx: dict[str, object] = {"toplevel_async": True, "base_depth": 0}
        top = self.statements(top_scope, 0, ctx, "", self.num(0, 4))
        if top:
            out.append(top)
        return "\n\n".join(out) + self.pick(["", "\n"])

    def agent_decl(self, tools: list[str]) -> str:
        name = self.fresh("agent_")
        model = self.pick(['"scripted"', '"scripted"', '"mock"', '"openai/gpt-4o-mini"', '"default"'])
        fields: list[str] = [f"model: {model}"]
        output_item = self.coin(0.4)
        options = {
            "role": lambda: self.string(),
            "persona": lambda: self.string(),
            "instructions": lambda: self.triple_string(),
            "constraints": lambda: "[" + ", ".join(self.string() for _ in range(self.num(0, 2))) + "]",
            "hints": lambda: "[" + self.string() + "]",
            "uncertainty": lambda: self.string(),
            "repair": lambda: str(self.num(0, 3)),
            "retry": lambda: f'{{ on: ["{self.pick(["agent-invocation", "output-validation"])}"], attempts: {self.num(1, 4)}, backoff: {self.duration()} }}',
            "timeout": lambda: self.duration(),
            "temperature": lambda: self.pick(["0", "0.2", "1", "1.5"]),
        }
        for key in sorted({self.pick(list(options)) for _ in range(self.num(0, 5))}):
            fields.append(f"{key}: {options[key]()}")
        if tools and self.coin():
            fields.append(f"tools: [{', '.join(tools)}]")
        if output_item:
            fields.append("output: Item")
        if model == '"scripted"':
            entries = []
            for _ in range(self.num(0, 3)):
                value = self.item_literal() if output_item else self.string()
                entries.append(self.pick([
                    value, f'when("{self.pick(NAMES)}", {value})', f'when("/^{self.pick(NAMES)}.*$/", {value})',
                    'fail("agent-invocation", "boom")', f"slow({self.duration()}, {value})",
                    'slow(10ms, fail("output-validation", "late"))',
                ]))
            trailing = self.pick(["", ","]) if entries else ""
            fields.append("script: [" + self.sp() + ("," + self.sp()).join(entries) + trailing + self.sp() + "]")
        sep = self.pick(["\n  ", ",\n  ", ", "])
        self.agents.append(name)
        if output_item:
            self.item_agents.append(name)
        return f"agent {name} {{\n  " + sep.join(fields) + self.pick(["", ","]) + "\n}"

    def workflow_decl(self) -> str:
        name = self.fresh("wf_")
        params: list[tuple[str, str]] = []
        texts: list[str] = []
        annots = {"int": "int", "num": "number", "str": "string", "bool": "bool", "items": "Item[]", "item": "Item",
                  "strs": "string[]", "ints": "int[]"}
        for p in sorted({self.pick(NAMES) for _ in range(self.num(0, 3))}):
            ty = self.pick(list(annots))
            params.append((p, ty))
            texts.append(f"{p}: {annots[ty]}")
        ret = self.pick([None, "str", "int", "bool", "items"])
        head = f"workflow {name}({', '.join(texts)})" + (f" -> {annots[ret]}" if ret else "")
        scope = list(params)
        ctx: dict[str, object] = {"toplevel_async": True, "base_depth": 0, "returns": ret}
        lines: list[str] = []
        if self.coin(0.4):
            entries = [f"agent_runs: {self.num(1, 100)}", f"duration: {self.duration()}",
                       f"concurrency: {self.num(1, 8)}", f"steps: {self.num(10, 5000)}"][: self.num(1, 4)]
            lines.append("  limits { " + self.pick([", ", "\n    "]).join(entries) + " }")
        body = self.statements(scope, 0, ctx, "  ", self.num(0, 6))
        if body:
            lines.append(body)
        for task in list(ctx.get("tasks", [])):  # type: ignore[call-overload]
            lines.append(f"  await {task}")
        if ret:
            lines.append(f"  return {self.expr(scope, ret)}")
        self.workflows.append((name, params))  # later workflows may call this one: no recursion
        return head + " {\n" + "\n".join(lines) + "\n}"


def rhs_type_differs(annotation: str, ty: str) -> bool:
    wanted = {": int": "int", ": string": "str", ": bool": "bool", ": string[]": "strs", ": Item": "item",
              ": Item[]": "items"}
    return wanted.get(annotation) != ty


@st.composite
def flow_programs(draw: Callable[[st.SearchStrategy[object]], object]) -> str:
    return Gen(draw).program()


def _tokens(text: str) -> list[str]:
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?[A-Za-z]*|\s+|\"\"\"|\$\{|[=!<>?.-][=>.]?|.", text, re.S)


MUTATIONS = ("delete", "duplicate", "insert", "truncate", "swap", "replace")
INSERTS = list('(){}[]"$#:,;.=?|\n\\') + ["${", '"""', "é", "١", "😀", "\u2028", "\ufeff", "\x00", "=>", " expect ", "}", "else", "catch"]


def mutate(draw: Callable[[st.SearchStrategy[object]], object], text: str) -> str:
    """Apply 1-3 random edits: delete a token range, duplicate a line, insert a
    character, truncate, swap two adjacent tokens, replace a token."""
    for _ in range(draw(st.integers(1, 3))):  # type: ignore[arg-type]
        kind = draw(st.sampled_from(MUTATIONS))
        toks = _tokens(text)
        if kind == "delete" and toks:
            a: int = draw(st.integers(0, len(toks) - 1))  # type: ignore[assignment]
            b: int = draw(st.integers(a, min(len(toks), a + 12)))  # type: ignore[assignment]
            text = "".join(toks[:a] + toks[b:])
        elif kind == "duplicate":
            lines = text.split("\n")
            i: int = draw(st.integers(0, len(lines) - 1))  # type: ignore[assignment]
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == "insert":
            i = draw(st.integers(0, len(text)))  # type: ignore[assignment]
            text = text[:i] + draw(st.sampled_from(INSERTS)) + text[i:]  # type: ignore[operator]
        elif kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]  # type: ignore[misc]
        elif kind == "swap" and len(toks) > 1:
            i = draw(st.integers(0, len(toks) - 2))  # type: ignore[assignment]
            toks[i], toks[i + 1] = toks[i + 1], toks[i]
            text = "".join(toks)
        elif kind == "replace" and toks:
            i = draw(st.integers(0, len(toks) - 1))  # type: ignore[assignment]
            toks[i] = draw(st.sampled_from(TOKENS))  # type: ignore[assignment]
            text = "".join(toks)
    return text


@st.composite
def mutated_programs(draw: Callable[[st.SearchStrategy[object]], object]) -> str:
    return mutate(draw, draw(flow_programs()))  # type: ignore[arg-type]


def _syntax_errors(result: CheckResult) -> list[tuple[str, int, int, str]]:
    return [(d.code, d.span.start_pos.line, d.span.start_pos.column, d.message)
            for d in result.diagnostics if d.code.startswith("F1")]


@settings(max_examples=100 * SCALE, **_SETTINGS)
@given(program=flow_programs())
def test_generated_programs_check_without_syntax_errors(program: str) -> None:
    result = run_check(program)
    assert_well_formed(result, program)
    assert not _syntax_errors(result), (_syntax_errors(result), program)


@settings(max_examples=40 * SCALE, **_SETTINGS)
@given(program=flow_programs())
def test_generated_programs_as_cells_never_raise(program: str) -> None:
    session = SessionScope()
    first = run_check(program, cell=True, session=session)
    assert_well_formed(first, program)
    if first.ok:
        session.commit(first)
    again = run_check(program, cell=True, session=session)  # redefinitions of every declaration
    assert_well_formed(again, program)


@settings(max_examples=100 * SCALE, **_SETTINGS)
@given(program=flow_programs(), data=st.data())
def test_mutated_programs_never_raise(program: str, data: st.DataObject) -> None:
    # Several mutants per program: generating a program costs more than checking one.
    for _ in range(4):
        mutant = mutate(data.draw, program)
        cell = data.draw(st.booleans(), label="cell")
        assert_well_formed(run_check(mutant, cell=cell), mutant)


@settings(max_examples=15 * SCALE, **_SETTINGS)
@given(data=st.data())
def test_use_of_generated_files_never_raises(data: st.DataObject) -> None:
    # lib0 and lib1 are generated (sometimes mutated) programs that may `use` each
    # other, themselves, or a missing file; the main file uses some of them.
    names = ["lib0.flow", "lib1.flow", "missing.flow"]
    files: dict[str, str] = {}
    for name in names[:2]:
        uses = data.draw(st.lists(st.sampled_from(names), max_size=2), label="uses")
        body = data.draw(st.one_of(flow_programs(), mutated_programs()), label=name)
        files[name] = "".join(f'use "{u}"\n' for u in uses) + body
    main_uses = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3), label="main uses")
    main = "".join(f'use "{u}"\n' for u in main_uses) + data.draw(flow_programs(), label="main")

    def loader(path: str, importer: str | None) -> SourceFile | None:
        return SourceFile(path, files[path]) if path in files else None

    for cell in (False, True):
        source = SourceFile("main.flow", main)
        with no_hang():
            result = check(source, loader=loader, session=SessionScope() if cell else None)
        assert_well_formed(result, main, tuple(files.values()))


@settings(max_examples=50 * SCALE, **_SETTINGS)
@given(text=st.one_of(flowish_text, token_soup, flow_programs(), mutated_programs()))
def test_check_is_deterministic(text: str) -> None:
    assert fingerprint(run_check(text)) == fingerprint(run_check(text))


# -- the guard itself, and the corpus -----------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_no_hang_guard_fires() -> None:
    with pytest.raises(CheckTimedOut), no_hang(0.2):
        while True:
            pass


CORPUS_FILES = sorted(CORPUS.glob("*.flow"))


def _corpus_param(path: Path) -> object:
    marks = []
    if path.name in KNOWN_CRASHES:
        raises, reason = KNOWN_CRASHES[path.name]
        marks.append(pytest.mark.xfail(raises=raises, reason=reason, strict=True))
    elif path.name in KNOWN_SLOW:
        marks.append(pytest.mark.xfail(raises=CheckTimedOut, reason=KNOWN_SLOW[path.name], strict=True))
    return pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", [_corpus_param(p) for p in CORPUS_FILES])
def test_corpus_never_raises(path: Path) -> None:
    text = path.read_bytes().decode("utf-8")  # keep \r and other line breaks as written
    timeout = KNOWN_SLOW_GUARD_S if path.name in KNOWN_SLOW else TIMEOUT_S
    try:
        first = run_check(text, timeout=timeout)
        assert_well_formed(first, text)
        assert_well_formed(run_check(text, cell=True, timeout=timeout), text)
        assert fingerprint(run_check(text, timeout=timeout)) == fingerprint(first)
    except RecursionError:
        # Re-raised without the thousand-frame traceback, which pytest is slow to render.
        raise RecursionError(f"check() overflowed the stack on {path.name}") from None


def test_corpus_entries_exist() -> None:
    names = {p.name for p in CORPUS_FILES}
    assert set(KNOWN_CRASHES) <= names and set(KNOWN_SLOW) <= names


def test_corpus_is_not_empty() -> None:
    assert len(CORPUS_FILES) >= 5
