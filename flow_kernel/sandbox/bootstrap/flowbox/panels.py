"""Panels, run in the sandbox (`rt.panel`, language guide "Panels"). Shipped into Pyodide
as source: imports only the standard library and its siblings.

A call asks every expert, in the declared order, for a verdict on the candidate — a score
per rubric criterion and a rationale — as an ordinary agent call whose output contract is
the rubric's (the host validates it and runs the repair loop: a verdict with an unknown or
a missing criterion is invalid output). After each round the scores are summarised here,
by `summarise`, deterministic code: per criterion the mean and the spread (highest minus
lowest score), and the weighted aggregate of the means, each mean first put on 0..1 by
its scale. The panel has converged when the spread is within the declared bound on every
criterion; otherwise the next round shows each expert the round before. The judge, if
any, then writes the synthesis.

The record says how it ended: `converged`, `not-converged` (rounds used up), or, with
everything gathered so far (a round cut short is kept with `complete: false`),
`budget-exhausted` (the workflow's `agent_runs` ran out) or `failed` (an expert or the
judge failed for good; `error` says how). Anything else — a deadline, a cancellation —
still ends the run as usual.
"""

from __future__ import annotations

from . import builtins as _builtins
from .errors import FlowError

GIVE_UP = ("agent-invocation", "output-validation")  # an expert or the judge failed for good


def summarise(criteria, verdicts):
    """The round's per-criterion means, its spread and the weighted aggregate (0..1)."""
    means, spread, total, weights = {}, 0, 0.0, 0.0
    for c in criteria:
        given = [v["scores"][c["id"]] for v in verdicts]
        mean = sum(given) / len(given)
        means[c["id"]] = _tidy(mean)
        spread = max(spread, max(given) - min(given))
        total += c["weight"] * (mean - c["low"]) / (c["high"] - c["low"])
        weights += c["weight"]
    return {"scores": means, "aggregate": _tidy(total / weights) if weights else None, "spread": spread}


def _tidy(x):
    """Four decimals, rounded as Flow's `round(x, 4)` rounds (half away from zero)."""
    x = _builtins.b_round(x, 4)
    return int(x) if x == int(x) else x


def rubric_text(criteria):
    return "\n".join(f"- {c['id']} (weight {_tidy(c['weight'])}, scale {c['low']} to {c['high']}): {c['description']}"
                     for c in criteria)


def expert_prompt(name, spec, expert, number):
    criteria = spec["criteria"]
    shape = ", ".join(f'"{c["id"]}": <{c["low"]}..{c["high"]}>' for c in criteria)
    lines = [
        f"You are one of {len(spec['experts'])} experts on the panel `{name}`, judging from your domain: {expert['domain']}.",
        f"Round {number} of {spec['rounds']}.",
        "Score the candidate (in the context, as `candidate`) on every criterion of this rubric, each with a whole "
        "number within its scale, and explain your scores briefly in `rationale`.",
        "Rubric:",
        rubric_text(criteria),
        f'Answer {{"scores": {{{shape}}}, "rationale": "…"}}: every criterion once, and no other.',
    ]
    if number > 1:
        lines.append(f"The panel's verdicts of round {number - 1} are in the context as `previous_round`: "
                     "keep or revise yours in their light.")
    return "\n".join(lines)


def judge_prompt(name, spec, record):
    return "\n".join([
        f"You chair the panel `{name}`. Its experts have judged the candidate (in the context, as `candidate`) "
        "against this rubric:",
        rubric_text(spec["criteria"]),
        f"The panel ended {record['status']} after {len(record['rounds'])} round(s); every verdict, the "
        "per-criterion means and the weighted aggregate (0 to 1) are in the context.",
        "Write the panel's synthesis: where the experts agree, where they differ and why, and the overall judgement.",
    ])


async def run(event, agent, name, candidate, spec, options):
    """Run the panel `name` on `candidate`: its rounds, verdicts, aggregate and synthesis, as
    the typed record. `event(kind, data)` records a run event; `await agent(target, prompt,
    options, check)` is one agent call, as the runtime makes it."""
    label = options.get("label") or name
    about = options.get("context")
    criteria = spec["criteria"]
    record = {"panel": name, "status": "not-converged", "rounds": [], "scores": None, "aggregate": None,
              "spread": None, "synthesis": None, "error": None}
    base = {"panel": name, "label": label}
    event("panel.started", {**base, "experts": [dict(e) for e in spec["experts"]],
                            "criteria": [{k: c[k] for k in ("id", "weight", "low", "high")} for c in criteria],
                            "rounds": spec["rounds"], "spread": spec["spread"]})
    previous = None
    try:
        for number in range(1, spec["rounds"] + 1):
            current = {"round": number, "complete": False, "verdicts": [], "scores": None, "aggregate": None,
                       "spread": None}
            record["rounds"].append(current)
            for expert in spec["experts"]:
                context = {"candidate": candidate}
                if about is not None:
                    context["about"] = about
                if previous is not None:
                    context["previous_round"] = previous
                reply = await agent({"agent": expert["agent"], "team": None, "member": None},
                                    expert_prompt(name, spec, expert, number),
                                    {"schema": spec["schema"], "label": f"{label}/r{number}/{expert['agent']}",
                                     "context": context}, None)
                verdict = {"expert": expert["agent"], "domain": expert["domain"],
                           "scores": {c["id"]: reply["scores"][c["id"]] for c in criteria},
                           "rationale": reply["rationale"]}
                current["verdicts"].append(verdict)
                event("panel.verdict", {**base, "round": number, **verdict})
            current.update(summarise(criteria, current["verdicts"]), complete=True)
            record.update(scores=current["scores"], aggregate=current["aggregate"], spread=current["spread"])
            converged = current["spread"] <= spec["spread"]
            event("panel.round", {**base, "round": number, "status": "converged" if converged else "running",
                                  "scores": current["scores"], "aggregate": current["aggregate"],
                                  "spread": current["spread"]})
            if converged:
                record["status"] = "converged"
                break
            previous = current["verdicts"]
        if spec.get("judge"):
            context = {"candidate": candidate, "rounds": record["rounds"], "scores": record["scores"],
                       "aggregate": record["aggregate"]}
            record["synthesis"] = await agent({"agent": spec["judge"], "team": None, "member": None},
                                              judge_prompt(name, spec, record),
                                              {"label": f"{label}/synthesis", "context": context}, None)
    except FlowError as exc:
        details = exc.details if isinstance(exc.details, dict) else {}
        if exc.code == "limit-exceeded" and details.get("limit") == "agent_runs":
            record["status"] = "budget-exhausted"
        elif exc.code in GIVE_UP:
            record["status"] = "failed"
            record["error"] = {"code": exc.code, "message": exc.message}
        else:
            raise
    event("panel.completed", {**base, "status": record["status"], "rounds": len(record["rounds"]),
                              "aggregate": record["aggregate"], "spread": record["spread"]})
    return record
