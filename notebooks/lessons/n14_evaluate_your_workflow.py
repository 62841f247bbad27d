"""Lesson 14 · Evaluate your workflow."""

from __future__ import annotations

from lessons import code, md

NAME = "14-evaluate-your-workflow"
CASSETTE = "cassettes/14-evaluate.jsonl"
SCORERS = "--scorer field:severity --scorer workflow:same_severity --scorer judge:judge,pass=0.7"

# The cells that call models: notebooks/cassettes/record_14.py runs exactly these (with
# record on) to make the committed cassette, and the notebook replays them.
DECLARE = code('''
type Triage = { severity: "low" | "medium" | "high", summary: string }

agent triager {
  model: "openai/gpt-4o-mini"
  instructions: "Classify the support ticket's severity and summarise it in one sentence."
  output: Triage
}

workflow triage(title: string) -> Triage {
  return triager("Ticket: ${title}")
}

workflow triage_v2(title: string) -> Triage {
  return triager("Ticket: ${title}\\nAnything that locks customers out of their account is high.")
}

workflow same_severity(output: Triage, expected: { severity: string }) -> { score: number } {
  return { score: output.severity == expected.severity ? 1 : 0 }
}

agent judge {
  model: "anthropic/claude-sonnet-4-5"
  instructions: """
    You grade a support-ticket triage. Rubric: 1 when the severity matches the expected one
    and the summary says what is broken; 0.5 when the severity is one step off; 0 otherwise.
  """
  output: { score: number(minimum: 0, maximum: 1), reason: string }
}
''')
EVAL_1 = code(f"%eval triage --data eval/tickets.jsonl {SCORERS} --out .flow/evals/v1.jsonl")
EVAL_2 = code(f"%eval triage_v2 --data eval/tickets.jsonl {SCORERS} --out .flow/evals/v2.jsonl "
              "--compare .flow/evals/v1.jsonl")

CELLS = [
    md("""
    # 14 · Evaluate your workflow

    A workflow that works on the three tickets you tried in a notebook still has to answer
    the question that matters: *how good is it on all of them?* An **eval** runs the
    workflow on every case of a dataset, scores each output, and says whether the scores
    meet your thresholds.

    **What you will learn**

    - a dataset: one case a line, an input plus the `expected` answer;
    - scorers: built-in (`field:severity`), a Flow workflow as a scorer, and an LLM judge
      written in Flow — an agent whose instructions are the rubric, with a threshold;
    - `%eval`: the summary (mean, standard error, pass rate per scorer, failures by code)
      and the items, not passed first;
    - `--compare`: the same eval before and after a prompt change, side by side;
    - `flow eval` on the command line: exit codes for CI, `--resume`, and Ray.

    The agents use real providers (`openai/gpt-4o-mini`, `anthropic/claude-sonnet-4-5`);
    this notebook replays their answers from
    [`cassettes/14-evaluate.jsonl`](cassettes/14-evaluate.jsonl), recorded by
    [`cassettes/record_14.py`](cassettes/record_14.py) against a local stand-in that
    speaks both APIs (lesson 8 explains cassettes). With your own keys, record again and
    the same cells evaluate a real model.
    """),
    code(f"%replay {CASSETTE}"),
    md("""
    ## The workflow and its scorers

    `triage` asks an agent for a severity and a summary. `same_severity` is a scorer
    written as a workflow: it gets the item's `output` and `expected` (and `input` if it
    asks for it) and returns `{score: number}`. `judge` is an LLM judge: its instructions
    are the rubric, its output has a numeric `score` and a `reason`; `judge:judge,pass=0.7`
    makes an item pass it at 0.7 or more. `triage_v2` is the same workflow with one more
    sentence in the prompt — the change we will evaluate.
    """),
    DECLARE,
    md("""
    ## The dataset

    [`eval/tickets.jsonl`](eval/tickets.jsonl) holds nine lines: each an `id`, an `input`
    object (the workflow's parameters) and the `expected` answer. Line 8 puts the input
    beside `expected` instead of under `input` (also accepted); line 9 is broken on
    purpose — it is reported with its line number and skipped, and the eval goes on.
    """),
    md("""
    ## Run the eval

    `%eval WORKFLOW --data FILE --scorer …` runs every case (four at once, each in a warm
    sandbox) and shows the summary and the items. Every scorer needs every item to pass
    unless you say otherwise (`,min=0.8`); here one ticket is misjudged, so the eval does
    not pass. `--out` keeps each item's record as it ends — with `--resume`, an
    interrupted eval runs only what is missing or failed.
    """),
    EVAL_1,
    md("""
    Where a person watches (JupyterLab), the items are a live table: sort by a score,
    filter by status or text, pick a run to open its run view. A saved notebook keeps
    this static form, without timings or run ids: the results file has them.

    ## Did the prompt change help?

    `triage_v2` tells the model that being locked out is high. `--compare` puts the new
    eval beside the old one: each scorer before and after, and the items fixed or broken.
    """),
    EVAL_2,
    md("""
    One ticket fixed, one broken: the new sentence made the model call a slow checkout a
    lock-out. That is what an eval is for — a prompt change is a trade, and you see it
    before your users do.

    ## On the command line, in CI, on a cluster

    ```console
    $ flow eval triage.flow triage --data eval/tickets.jsonl \\
        --scorer field:severity,min=0.8 --scorer judge:judge,pass=0.7 \\
        --replay cassettes/14-evaluate.jsonl --out results.jsonl
    $ echo $?        # 0: every scorer met its min; 1: not; 2: a usage error
    $ flow eval … --out results.jsonl --resume          # after a crash: only what is missing
    $ flow eval … --executor ray --concurrency 8        # items on Ray workers (flow-kernel[ray])
    $ flow batch triage.flow triage --data tickets.jsonl --out outputs.jsonl   # no scorers
    ```

    From Python, `Session.eval(...)` returns the same report. See
    [docs/eval.md](../docs/eval.md) for every scorer, the file formats and the executors.
    """),
]
