"""Lesson 6 · Approvals and questions."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "06-approvals-and-questions"

CELLS = [
    md("""
    # 6 · Approvals and questions

    Some steps should not happen without a person saying yes: sending email to
    customers, refunding money, publishing. And sometimes a workflow simply needs
    information only a person has. Flow makes both explicit: `approve` pauses the run
    for a yes or no, `ask` for an answer. Whoever answers is the run's *operator*, and
    the operator's *policy* decides what happens when nobody is there to answer — in CI,
    say, or in this very notebook, which is executed unattended to produce the outputs
    you are reading.

    **What you will learn**

    - `approve "question" details {…}`: a `bool`, decided by the operator;
    - `ask "question"` (a free answer) and `ask "question" choice [...]`;
    - the operator policies: `interactive`, `auto-approve`, `auto-deny`,
      `answers:FILE` and `none`, set with `%operator`;
    - why a run with nobody to ask fails closed with `operator-unavailable`;
    - deadlines: `approve "…" timeout 2h else false`, answered `by timeout`;
    - answering from a later cell with `%background`, `%approve` and `%wait`.
    """),
    md("""
    ## The agents

    A writer drafts emails; we will want a person to approve them before they go out.
    """),
    code("""
    type Draft = { to: string, subject: string, body: string }

    agent writer {
      model: "scripted"
      instructions: "Draft a short reply to the customer."
      output: Draft
      script: [
        when("Ada", { to: "ada@example.com", subject: "Your refund", body: "Your refund is on its way." }),
        when("Alan", { to: "alan@example.com", subject: "Your order", body: "Your order ships tomorrow." }),
      ]
    }

    let customers = ["Ada", "Alan"]
    """),
    md("""
    ## Nobody to ask: failing closed

    `%operator` with no argument shows the current policy. The kernel starts
    `interactive`: a person at the notebook answers.
    """),
    code("""
    %operator
    """),
    md("""
    But when this notebook is executed by a tool — `nbclient`, `nbval`, CI — no person
    can click anything, and the kernel knows it. An `approve` with no way to be answered
    does not guess: it fails with `operator-unavailable`. That is the safe default for a
    question whose point is that a person decides. `%operator none` makes the same
    choice explicit, and everywhere: every request fails closed. (This cell fails on
    purpose.)
    """),
    code("""
    %operator none
    let drafts = parallelMap(customers, c => writer("Reply to ${c}"))
    let send = approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts }
    """, RAISES),
    md("""
    The drafts were made before the failure, so `drafts` is still bound — the failure
    stopped the run exactly at the question. With no answer, nothing was sent.

    ## `auto-approve` and `auto-deny`

    For demos, tests and trusted batch jobs, a policy can answer on the operator's
    behalf. `auto-approve` says yes to every `approve`; `auto-deny` says no. The run
    view records who decided — a policy, not a person — so the record stays honest.
    `details` travel with the question: a person would see them next to the buttons.
    A policy that says yes for you (`auto-approve`, `answers:`) is yours to grant: in a
    folder you have not trusted (`flow trust DIR`), `%operator auto-approve` asks you
    first, with Allow once / Allow for this notebook / Deny (lesson 7 says more).
    """),
    code("""
    %operator auto-approve
    let send = approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts }
    if send {
      for d in drafts { log "sent \\"${d.subject}\\" to ${d.to}" }
    }
    send ? "sent ${len(drafts)} emails" : "nothing sent"
    """),
    code("""
    %operator auto-deny
    let publish_now = approve "Publish the release notes now?"
    publish_now ? "published" : "kept as a draft"
    """),
    md("""
    ## Questions: `ask`

    `ask` returns a string. With `choice`, the answer is one of the listed strings and
    the result's type is their union, so the rest of the program can branch on it
    safely. `auto-approve` and `auto-deny` answer a `choice` question with its *first*
    choice — put the safe option first. An open question they cannot answer: that is
    `operator-unavailable` again, caught here.
    """),
    code("""
    %operator auto-approve
    let tone = ask "Which tone should the replies take?" choice ["formal", "friendly"]
    var note = ""
    try {
      note = ask "Anything the writer should know?"
    } catch "operator-unavailable" as err {
      print "no answer: ${err.message}"
      note = "(none)"
    }
    {tone: tone, note: note}
    """),
    md("""
    ## Answers from a file: `answers:PATH`

    For a notebook that must run unattended *and* take particular decisions, write the
    answers down. `answers:answers.json` (a path relative to the notebook) names a JSON
    object mapping each question's exact text to its answer — `true`/`false` for an
    `approve`, a string for an `ask`. The file beside this notebook:

    ```json
    {
      "Send 2 emails to customers?": true,
      "Publish the release notes now?": false,
      "Which tone should the replies take?": "friendly",
      "Anything the writer should know?": "Mention the 10% discount for returning customers."
    }
    ```

    Questions are matched by their text *after* interpolation: "Send 2 emails…", not
    "Send ${len(drafts)} emails…". A question the file does not list is
    `operator-unavailable`: a changed question should fail loudly, not be answered by
    an answer written for another one.
    """),
    code("""
    %operator answers:answers.json
    let answers = {
      send: approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts },
      publish: approve "Publish the release notes now?",
      tone: ask "Which tone should the replies take?" choice ["formal", "friendly"],
      note: ask "Anything the writer should know?",
    }
    answers
    """),
    md("""
    The policy stays until the next `%operator`. A question missing from the file:
    """),
    code("""
    var refund = false
    try {
      refund = approve "Refund both customers?"
    } catch "operator-unavailable" as err {
      print "not in the answers file: ${err.message}"
    }
    refund
    """),
    md("""
    ## A person at the notebook: `interactive`

    `interactive` is the default when a person can answer. In JupyterLab (or Notebook)
    the run view shows the question with its details and **Approve** / **Deny** buttons
    — or the choices of an `ask`, or a text box — while the cell is still running; the
    click resumes the run, and the view then shows who decided what. This notebook was
    executed headless, so you see policies' answers here; open it in JupyterLab, change
    a cell's `%operator …` line to `%operator interactive`, and that cell will wait for
    your click instead. The cell below does just that: opened in JupyterLab, it shows
    the buttons and waits; executed headless, as it was for the outputs you are reading,
    nobody can click, so it failed closed (and is tagged as expected to fail).
    """),
    code("""
    %operator interactive
    approve "Archive last month's drafts?"
    """, RAISES),
    md("""
    ## Deadlines: `timeout … else …`

    A question can say how long it waits and what the answer is when nobody gives one:

    ```
    approve "Ship the release tonight?" timeout 2h else false
    ask "Which tone?" choice ["formal", "friendly"] timeout 10m else "formal"
    ```

    The default has the answer's type — `true`/`false` for an `approve`, one of the
    choices for an `ask` with `choice` — and the checker holds it to that (`F5021`), as
    it does to a `timeout` without an `else` (`F1015`) or a deadline longer than the
    workflow's `duration`, which would end the run first (`F5023`). When the deadline
    passes with the question unanswered, the prompt closes, the run goes on with the
    default, and the run view and the journal record it as decided `by timeout` — not by
    a person. In JupyterLab, run the cell below with `%operator interactive` instead and
    leave the buttons alone for ten seconds to see it.

    A deadline waits for a person who *could* answer. A policy that answers at once still
    does (here `auto-deny`: no to the approval, the first choice to the question), and
    with nobody able to answer at all — `none`, or `interactive` in a headless run — the
    question still fails closed: a default never answers for a missing operator.
    """),
    code("""
    %operator auto-deny
    let tonight = approve "Ship the release tonight?" timeout 10s else true
    let tone = ask "Which tone should the replies take?" choice ["formal", "friendly"] timeout 10s else "friendly"
    {tonight: tonight, tone: tone}
    """),
    code("""
    %operator interactive
    approve "Ship the release tonight?" timeout 10s else false
    """, RAISES),
    md("""
    ## Answering from another cell: `%background`

    A long workflow that asks for an approval halfway through should not block the
    notebook. `%background` at the top of a cell returns at once with the live view
    while the run goes on, and prints the run's id — say `r3f9c2a1b7d0`:

    ```
    %background
    %operator interactive
    let drafts = parallelMap(customers, c => writer("Reply to ${c}"))
    let send = approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts }
    ```

    The prompt shows in that cell's view, and you may click there; or answer from any
    later cell — `%approve` answers the run's oldest pending question with `yes` or
    `no`, and `%wait` waits for the run to end:

    ```
    %approve r3f9c2a1b7d0 yes
    ```
    ```
    %wait r3f9c2a1b7d0
    ```

    The run's summary and result go to the cell that started it. Answering a run that
    has already ended is refused with a clear error, so a stale `%approve` cannot
    approve something else. (These cells are shown, not run: run ids are random, and
    this notebook's outputs must be the same every time it is executed.)

    ## What next

    You have seen the whole loop: typed values, agents under contracts, parallel
    pipelines, teams, and people in the loop. The rest of the gallery builds on these:
    tools implemented in Python, recording and replaying real models, and `%%flow` in
    Python notebooks.
    """),
]
