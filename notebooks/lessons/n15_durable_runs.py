"""Lesson 15 · Durable runs."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "15-durable-runs"

CELLS = [
    md("""
    # 15 · Durable runs

    A run can stop without being lost. Every effect that leaves the sandbox — an agent's
    answer, a tool's result, an approval, a `run`, `now()` — is written to the run's
    *journal* (`.flow/runs/RUN.jsonl` beside the notebook) before the run goes on, so
    the journal is a checkpoint: a run killed halfway, or one that stopped on purpose to
    wait for a person, goes on later from where it was, without asking anything twice.

    **What you will learn**

    - `%operator defer`: a run that reaches an `approve` stops `waiting`, with the
      pending request recorded, and no process stays alive for it;
    - `%runs --waiting`: the runs waiting for an answer, and what each asks;
    - `%answer`: answering the pending request (journaled with who answered);
    - `%resume`: the same run goes on — the answers it already had come from the
      journal, nothing is asked again;
    - a deadline on a deferred question: `approve "…" timeout … else …`;
    - `flow answer` and `flow resume` from a terminal, and why a waiting run survives a
      kernel restart.

    [docs/durability.md](../docs/durability.md) says exactly what is journaled, when it
    reaches the disk, and what a resume does and does not guarantee.
    """),
    md("""
    ## A call that counts

    The writer below is a `mock` agent (lesson 7): it calls every tool it is given once.
    Its tool, `fetch_changes`, is a Python function in
    [`release_tools.py`](release_tools.py) that stands for something that costs money or
    time, and says how often the host has run it: `fetched` goes up by one on every call.
    Watch that number — it shows which calls really happened.
    """),
    code("""
    %tools release_tools.py
    """),
    code("""
    ## The changes since the last release; `fetched` counts how often the host ran it.
    tool fetch_changes() -> { fetched: int, entries: string[] }

    agent writer {
      model: "mock"
      role: "technical writer"
      instructions: "Write the release notes from the changes."
      tools: [fetch_changes]
      output: { title: string }
    }
    """),
    md("""
    ## Stopping at an approval: `%operator defer`

    Lesson 6 answered approvals at once: a person clicking, or a policy. `defer` does
    neither: when the run reaches an `approve` (or an `ask`, or a tool that `requires
    approval`), it records the request in the journal and *stops*, with the status
    `waiting`. Nothing is lost and nothing keeps running: the question can be answered
    in an hour or next week, from this notebook, another one, or a terminal.

    The cell below drafts the notes (one call of the writer, so `fetched` is 1), asks
    whether to publish them, and stops there. The cell's output is the run so far and
    the pending request with its id.
    """),
    code("""
    %operator defer
    let notes = writer("Draft the notes for version 2.4")
    let go_ahead = approve "Publish the notes for version 2.4?" details { notes: notes }
    let announcement = go_ahead ? writer("Announce version 2.4").title : "not published"
    { notes: notes.title, announcement: announcement }
    """),
    md("""
    `%runs --waiting` lists the runs of this folder that wait for an answer, each with
    its pending requests. (`%runs` alone lists every run with its status: `completed`,
    `failed`, `waiting`, `interrupted`, or `running` while a process holds it.) A run id
    is random and a run's time changes on every execution, so in the saved outputs of
    this gallery they read `RUN-ID` and `TIMESTAMP` (the end of this lesson says why).
    """),
    code("""
    %runs --waiting
    """),
    md("""
    ## Answering: `%answer`

    `%answer RUN PENDING_ID VALUE` records the answer — `true` or `false` for an
    approval, text for a question — with who gave it (`%answer`, and the user account).
    `last` stands for the run this kernel last left waiting, so a notebook does not have
    to spell out a random id; the pending id is not random: it comes from where the
    request is in the program and what it asks, so it is the same every time the
    notebook runs. Answering does not run anything yet.
    """),
    code("""
    %answer last pf3285c92a5 true
    """),
    md("""
    ## Going on: `%resume`

    `%resume RUN` (here `%resume last`) re-executes the run's program from the start,
    in a cell of its own, and answers every effect the journal holds *from the
    journal*: the first call of the writer is not made again — its tool call still
    says `fetched: 1` — and the approval is the answer just given. The run goes live at
    the first effect the journal does not hold: the announcement, a new call, so
    `fetched` becomes 2. Had the first call been made again, the numbers would read 2
    and 3. It is the same run: the resumed execution appends to the same journal,
    under the same id.
    """),
    code("""
    %resume last
    """),
    md("""
    A resume is refused, with the name of what changed, when the program is not the one
    that started the run (a declaration it uses, its top-level statements, a `use`d file,
    its input): answers recorded for one program are never fed to another. A run that
    ended — completed or failed — is final: answering it or resuming it by its id is
    refused (`run-ended`), and a second answer to the same request too
    (`already-answered`). Here the run went on, so no run of this kernel waits any more
    and `last` has nothing to name:
    """),
    code("""
    %answer last pf3285c92a5 false
    """, RAISES),
    md("""
    ## A deadline on a deferred question

    `timeout … else …` (lesson 6) gives a question a deadline and a default. In a
    deferred run no process watches the clock: the pending request keeps when its
    deadline falls (`due`) and its default, and the deadline is checked when the run is
    answered or resumed. Before `due`, an answer stands and a resume without one waits
    again; after `due`, an answer is refused and a resume takes the default, journaled
    as decided `by timeout`.

    A real deadline would be hours (`timeout 2h`); this one is 10 milliseconds, so that
    it has passed by the time the next cell runs.
    """),
    code("""
    %operator defer
    let tonight = approve "Ship version 2.4 tonight?" timeout 10ms else false
    tonight ? "shipping tonight" : "shipping with the next train"
    """),
    md("""
    `%runs --waiting` shows the deadline beside the request: no answer by `due`, and the
    default takes over.
    """),
    code("""
    %runs --waiting
    """),
    md("""
    Too late for an answer: `%answer` is refused with `deadline-passed`, and says which
    default a resume will use.
    """),
    code("""
    %answer last p22c87e40d4 true
    """, RAISES),
    md("""
    The resume takes the default, `false`, recorded as decided `by timeout`:
    """),
    code("""
    %resume last
    """),
    md("""
    ## From a terminal, and after a restart

    A waiting run lives in its journal, not in a process: shut this kernel down, restart
    it, reboot the machine — the run is still there, waiting, and `%runs --waiting` in
    any kernel started in this folder lists it. A run that was going when the kernel
    restarted ends `interrupted` and goes on the same way. In a new kernel, `last` is the
    newest run of the folder's journals that waits (for `%resume`, or was interrupted),
    and the declarations it took from earlier cells come back from its journal, so
    `%resume last` needs no cell re-run; any run can also be named by its id:
    `%answer RUN PENDING_ID VALUE`, then `%resume RUN`. In JupyterLab, `%resume RUN` of a waiting run first shows its
    pending request as the usual Approve / Deny buttons; the click is journaled as
    decided by the `widget`.

    The terminal does the same, from the folder the run was journaled in (the
    notebook's folder):

    ```console
    $ flow runs --waiting
    r3c9e…          waiting                      2026-12-03T16:51:40  <cell 5a1f0e>
        pf3285c92a5  approve: Publish the notes for version 2.4?
    $ flow answer r3c9e… pf3285c92a5 true        # recorded `by: "flow answer"`
    $ flow resume r3c9e…                         # goes on from the approval
    ```

    `flow answer RUN ID VALUE` takes `true`/`false` or a question's text; `flow resume
    RUN` re-executes the program from the journal and prints the run as `flow run` does.
    A file's run goes on the same way: `flow run release.flow --operator defer` stops
    with exit status 3 (`--format json` prints the pending requests), and `flow answer` /
    `flow resume` take it from there. A run stopped by a crash rather than a question
    (`interrupted` in `flow runs`) resumes the same way.

    ## Run ids in a tested notebook

    A run id and a time change on every execution, so nbval would see a different output
    every time. The gallery's [`sanitize.cfg`](sanitize.cfg) tells nbval to read them as
    `RUN-ID` and `TIMESTAMP` (`conftest.py` beside it hands it to nbval), and `make.py`
    saves them that way — which is why this notebook's outputs say `RUN-ID`. The cells
    themselves never hold an id: `last` names the run, and a pending id is the same on
    every execution. For a notebook of your own: `pytest --nbval --nbval-sanitize-with
    notebooks/sanitize.cfg`, or tag such cells `nbval-ignore-output`
    ([docs/notebooks.md](../docs/notebooks.md)).
    """),
]
