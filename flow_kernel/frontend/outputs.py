"""What a cell shows of its code and its run, the same in every front end that shows it:
the generated module or the diagnostics (`%python`, `%check`), a run's result, and what
a run that stopped `waiting` says."""

from __future__ import annotations

import json
from typing import Any

from flow_kernel.diagnostics import Diagnostic
from flow_kernel.frontend.port import Bundle
from flow_kernel.lang.compiler import Compiled
from flow_kernel.markup import escape
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.value_text import render_value


def compiled_bundle(compiled: Compiled, mode: str) -> Bundle:
    """`%python`: the generated module (an escaped <pre>, never Markdown); `%check`: the
    diagnostics."""
    if mode == "python":
        assert compiled.python is not None
        return {"text/plain": compiled.python, "text/html": f"<pre>{escape(compiled.python)}</pre>"}
    diagnostics = compiled.check.diagnostics
    text = render_diagnostics(diagnostics) if diagnostics else "no diagnostics"
    return {"text/plain": text.rstrip("\n")}


def result_bundle(value: Any) -> Bundle:
    """A run's result: short values on one line as Flow renders them; long structures indented."""
    text = render_value(value)
    bundle: Bundle = {"text/plain": text}
    if isinstance(value, dict | list):
        bundle["application/json"] = value
        if len(text) > 80:
            bundle["text/plain"] = json.dumps(value, ensure_ascii=False, indent=2)
    return bundle


def waiting_text(outcome: RunOutcome, how: str, text_value: str) -> str:
    """What a run that stopped `waiting` says: its requests, and how to answer the first.
    `how` is a template with `{run}`, `{id}` and `{value}` (`true` for an approval,
    `text_value` for a question)."""
    lines = [f"run {outcome.run_id} is waiting for an answer:"]
    for pending in outcome.pending:
        choices = pending.get("choices")
        lines.append(f"  {pending['id']}  {pending['kind']}: {pending['question']}"
                     + (f"  (choices: {', '.join(map(str, choices))})" if choices else ""))
    first = outcome.pending[0]
    value = "true" if first["kind"] in ("approve", "tool") else text_value
    lines.append(how.format(run=outcome.run_id, id=first["id"], value=value))
    return "\n".join(lines)


def render_diagnostics(diagnostics: list[Diagnostic]) -> str:
    """The diagnostics as plain text, one block each, ending in a newline."""
    from flow_kernel.diagnostics.render import render_text

    return render_text(diagnostics)


__all__ = ["compiled_bundle", "render_diagnostics", "result_bundle", "waiting_text"]
