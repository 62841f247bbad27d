"""`rubric` and `panel` declarations and panel calls (docs/language-guide.md, "Panels").

A rubric lists criteria — `id`, `description` (text or `file("…")`), `weight` (default 1)
and `scale` (`5` for scores 1–5, or `[0, 10]`; default 5). A panel names its experts (an
agent and the domain it judges from), the rubric, an optional judge that writes the
synthesis, the number of `rounds` and a convergence rule `converge: { spread: x }` (the
experts' scores differ by at most x on every criterion; default 0, unanimity).

Each expert's answer has a fixed contract made from the rubric — `{scores: {<id>: int}, rationale}`
with every criterion and no other, each within its scale — so a verdict naming an unknown
criterion or leaving one out is invalid output and goes through the repair loop like any
other. A call `p(candidate)` returns the record `PANEL_RESULT` describes; the sandbox runs
the rounds and computes the aggregate (flowbox/panels.py).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from flow_kernel.diagnostics.model import Related
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.check_common import article, closest
from flow_kernel.lang.env import Criterion, DeclEntry, PanelInfo, RubricInfo
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.native_marks import mypyc_attr

if TYPE_CHECKING:
    from flow_kernel.lang.checker import Checker

RUBRIC_FIELDS = ("criteria",)
CRITERION_KEYS = ("id", "description", "weight", "scale")
PANEL_FIELDS = ("experts", "rubric", "judge", "rounds", "converge")
PANEL_OPTIONS = ("label", "context")
STATUSES = ("converged", "not-converged", "budget-exhausted", "failed")
MAX_ROUNDS = 10
CRITERION_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def verdict_type(criteria: list[Criterion]) -> T.Type:
    """What one expert answers: a score within its scale for every criterion, and why."""
    scores: dict[str, T.Type] = {c.id: T.Prim("int", (("minimum", c.low), ("maximum", c.high))) for c in criteria}
    return T.object_type({"scores": T.object_type(scores), "rationale": T.STRING})


def result_type(criteria: list[Criterion], synthesis: T.Type) -> T.Type:
    """The record a panel call returns (the language guide documents each field)."""
    given = T.object_type({c.id: T.INT for c in criteria})
    means = T.object_type({c.id: T.NUMBER for c in criteria})
    verdict = T.object_type({"expert": T.STRING, "domain": T.STRING, "scores": given, "rationale": T.STRING})
    round_ = T.object_type({"round": T.INT, "complete": T.BOOL, "verdicts": T.ArrayType(verdict),
                            "scores": T.union([means, T.NULL]), "aggregate": T.union([T.NUMBER, T.NULL]),
                            "spread": T.union([T.NUMBER, T.NULL])})
    error = T.object_type({"code": T.STRING, "message": T.STRING})
    return T.object_type({
        "panel": T.STRING,
        "status": T.union([T.Literal(s) for s in STATUSES]),
        "rounds": T.ArrayType(round_),
        "scores": T.union([means, T.NULL]),
        "aggregate": T.union([T.NUMBER, T.NULL]),
        "spread": T.union([T.NUMBER, T.NULL]),
        "synthesis": T.union([synthesis, T.NULL]),
        "error": T.union([error, T.NULL]),
    })


@mypyc_attr(native_class=False)  # mixins: a plain class when compiled (flow_kernel/native_marks.py)
class PanelChecker:
    # -- rubric ----------------------------------------------------------------------------
    def declare_rubric(self: Checker, entry: DeclEntry) -> None:
        node = entry.node
        assert isinstance(node, ast.RubricDecl)
        info = entry.rubric = RubricInfo()
        fields = self._decl_fields(node, "rubric", RUBRIC_FIELDS)
        criteria = fields.get("criteria")
        if criteria is None:
            self.report("F4028", node.name.span, f"rubric `{node.name.name}` has no `criteria`",
                        hints=('add `criteria: [{ id: "accuracy", description: "…", weight: 1, scale: 5 }]`',))
            return
        if not isinstance(criteria, ast.ArrayLit) or not criteria.items:
            self.report("F4028", criteria.span, "`criteria` must be a non-empty list of `{ id, description, weight, scale }`")
            return
        seen: dict[str, ast.Node] = {}
        for item in criteria.items:
            criterion = self._criterion(item, info)
            if criterion is None:
                continue
            if criterion.id in seen:
                self.report("F4028", item.span, f"criterion `{criterion.id}` is listed twice",
                            related=[Related(seen[criterion.id].span, "first listed here")])
                continue
            seen[criterion.id] = item
            info.criteria.append(criterion)

    def _criterion(self: Checker, item: ast.Expr, info: RubricInfo) -> Criterion | None:
        if not isinstance(item, ast.ObjectLit):
            self.report("F4028", item.span, "a criterion is an object `{ id, description, weight, scale }`")
            return None
        values = {e.key: e for e in item.entries}
        ok = True
        for e in item.entries:
            if e.key not in CRITERION_KEYS:
                self.report("F4028", e.key_span, f"unknown criterion key `{e.key}`", hints=closest(e.key, list(CRITERION_KEYS)))
                ok = False
        ident = literal_value(values["id"].value) if "id" in values else None
        if not isinstance(ident, str) or not CRITERION_ID.match(ident):
            self.report("F4028", values["id"].value.span if "id" in values else item.span,
                        "a criterion needs an `id`: a constant name such as \"accuracy\"")
            return None
        description = ""
        if "description" not in values:
            self.report("F4028", item.span, f"criterion `{ident}` needs a `description` (text or `file(\"…\")`)")
            ok = False
        else:
            text = self.prompt_text(values["description"].value, f"criteria.{ident}.description", info.prompt_files)
            if text is NOT_LITERAL:
                self.report("F4028", values["description"].value.span,
                            "a criterion's `description` is a constant string or `file(\"path\")`")
                ok = False
            description = text if isinstance(text, str) else ""
        weight = literal_value(values["weight"].value) if "weight" in values else 1
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
            self.report("F4028", values["weight"].value.span, "a criterion's `weight` is a positive number")
            ok = False
        low, high = 1, 5
        if "scale" in values:
            scale = literal_value(values["scale"].value)
            if isinstance(scale, int) and not isinstance(scale, bool) and scale >= 2:
                high = scale
            elif (isinstance(scale, list) and len(scale) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in scale)
                  and scale[0] < scale[1]):
                low, high = scale
            else:
                self.report("F4028", values["scale"].value.span,
                            "a criterion's `scale` is the top score (`5`: scores 1 to 5) or `[lowest, highest]`")
                ok = False
        return Criterion(ident, description, float(weight) if isinstance(weight, float) else weight, low, high) if ok else None  # type: ignore[arg-type]

    def _decl_fields(self: Checker, node: ast.RubricDecl | ast.PanelDecl, what: str,
                     known: tuple[str, ...]) -> dict[str, ast.Expr]:
        """The declaration's fields by name (their values), each known field once."""
        fields: dict[str, ast.AgentField] = {}
        for f in node.fields:
            key = f.name.name
            if key not in known:
                self.report("F4027", f.name.span, f"unknown {what} field `{key}`", hints=closest(key, list(known)))
            elif key in fields:
                self.report("F1014", f.name.span, f"{what} field `{key}` given twice",
                            related=[Related(fields[key].name.span, "first given here")])
            else:
                fields[key] = f
        # Only an `output` field is parsed as a type, and neither declaration knows one.
        return {key: f.value for key, f in fields.items() if isinstance(f.value, ast.Expr)}

    # -- panel -----------------------------------------------------------------------------
    def declare_panel(self: Checker, entry: DeclEntry) -> None:
        node = entry.node
        assert isinstance(node, ast.PanelDecl)
        info = entry.panel = PanelInfo()
        fields = self._decl_fields(node, "panel", PANEL_FIELDS)
        for required in ("experts", "rubric"):
            if required not in fields:
                self.report("F4030", node.name.span, f"panel `{node.name.name}` has no `{required}`")
        criteria: list[Criterion] = []
        if "rubric" in fields:
            rubric = self._named_decl(fields["rubric"], "rubric", "F4031")
            if rubric is not None and rubric.rubric is not None:
                info.rubric = rubric.name
                criteria = rubric.rubric.criteria
        if "experts" in fields:
            self._experts(fields["experts"], info)
        synthesis: T.Type = T.NULL
        if "judge" in fields:
            judge = self._named_decl(fields["judge"], "agent", "F4029")
            if judge is not None and judge.agent is not None:
                info.judge = judge.name
                synthesis = judge.agent.output
        if "rounds" in fields:
            rounds = literal_value(fields["rounds"])
            if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS \
                    or isinstance(fields["rounds"], ast.DurationLit):
                self.report("F4030", fields["rounds"].span, f"`rounds` is a whole number from 1 to {MAX_ROUNDS}")
            else:
                info.rounds = rounds
        if "converge" in fields:
            self._converge(fields["converge"], info)
        info.verdict = verdict_type(criteria)
        info.result = result_type(criteria, synthesis)
        # The experts' output contract is compiled here, so the host accepts it (agents.py
        # takes only schemas the program's own calls use).
        self.call_outputs[id(node)] = info.verdict

    def _named_decl(self: Checker, value: ast.Expr, kind: str, code: str) -> DeclEntry | None:
        if not isinstance(value, ast.Name):
            self.report(code, value.span, f"expected the name of {article(kind)}")
            return None
        target = self.decls.get(value.name)
        if target is None or target.kind != kind:
            names = [n for n, e in self.decls.items() if e.kind == kind]
            what = f"`{value.name}` is {article(target.kind)}, not {article(kind)}" if target else f"unknown {kind} `{value.name}`"
            self.report(code, value.span, what, hints=closest(value.name, names))
            return None
        target.used = True
        return target

    def _experts(self: Checker, value: ast.Expr, info: PanelInfo) -> None:
        if not isinstance(value, ast.ArrayLit) or not value.items:
            self.report("F4030", value.span, '`experts` is a non-empty list of `{ agent: name, domain: "…" }`')
            return
        seen: dict[str, ast.Node] = {}
        for item in value.items:
            if not isinstance(item, ast.ObjectLit):
                self.report("F4030", item.span, 'an expert is `{ agent: name, domain: "…" }`')
                continue
            values = {e.key: e for e in item.entries}
            for e in item.entries:
                if e.key not in ("agent", "domain"):
                    self.report("F4030", e.key_span, f"unknown expert key `{e.key}`", hints=closest(e.key, ["agent", "domain"]))
            if "agent" not in values:
                self.report("F4030", item.span, "an expert names its `agent`")
                continue
            agent = self._named_decl(values["agent"].value, "agent", "F4029")
            domain = literal_value(values["domain"].value) if "domain" in values else None
            if not isinstance(domain, str) or not domain.strip():
                self.report("F4030", values["domain"].value.span if "domain" in values else item.span,
                            "an expert's `domain` is a constant, non-empty string (what it judges from)")
                continue
            if agent is None:
                continue
            if agent.name in seen:
                self.report("F4030", item.span, f"`{agent.name}` is on the panel twice",
                            related=[Related(seen[agent.name].span, "first here")])
                continue
            seen[agent.name] = item
            info.experts.append((agent.name, domain))

    def _converge(self: Checker, value: ast.Expr, info: PanelInfo) -> None:
        spread = literal_value(value.entries[0].value) if isinstance(value, ast.ObjectLit) and len(value.entries) == 1 \
            and value.entries[0].key == "spread" else None
        if isinstance(spread, bool) or not isinstance(spread, int | float) or spread < 0:
            self.report("F4030", value.span, "`converge` is `{ spread: x }`: converged when, on every criterion, "
                                             "the experts' scores differ by at most x (x ≥ 0)")
            return
        info.spread = spread

    def panel_call(self: Checker, e: ast.Call, entry: DeclEntry) -> T.Type:
        self.effect(e.span, "a panel call")
        positional, named = self._split_args(e.args)
        if not positional:
            self.report("F4032", e.span, f"missing the candidate: `{entry.name}(candidate)` asks the panel about one value")
        for extra in positional[1:]:
            self.report("F4032", extra.span, "a panel judges one candidate per call; call it for each (e.g. in `parallelMap`)")
        for arg in positional:
            self.expr(arg.value)
        for name, arg in named.items():
            if name not in PANEL_OPTIONS:
                self.report("F4032", arg.name.span if arg.name else arg.span, f"unknown panel call option `{name}`",
                            hints=closest(name, list(PANEL_OPTIONS)))
                if not isinstance(arg.value, ast.Lambda | ast.TypeArg):
                    self.expr(arg.value)
            elif name == "label":
                self._label(arg.value)
            else:
                self.expr(arg.value)
        info = entry.panel
        if info is not None and self.ctx is not None:
            # One round and the synthesis are the least a panel can do; fewer runs than that
            # and it can only end `budget-exhausted` with no complete round.
            needed = len(info.experts) + (1 if info.judge else 0)
            budget = self.ctx.limits["agent_runs"]
            if needed > budget:
                judge = " and its judge" if info.judge else ""
                self.report("F4034", e.span, f"panel `{entry.name}` needs at least {needed} agent runs (one round of "
                                             f"{len(info.experts)} experts{judge}), but `agent_runs` is {budget}",
                            hints=(f"raise `agent_runs` to {needed} or more in the workflow's `limits`",))
        return info.result if info is not None else T.ANY
