"""Lesson 10 · Flow from Python (a Python notebook: `%%flow`, `@flow_tool`, `Session`)."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "10-flow-from-python"

CELLS = [
    md("""
    # 10 · Flow from Python

    Your data is in Python — a DataFrame, a list of dicts, an API client — and so is
    what you do with the results. You do not have to move to the Flow kernel to use
    Flow: this notebook runs in the ordinary **Python** kernel, and Flow cells are
    `%%flow` cells in it, run in the same sandbox, with the same checker and run view.

    **What you will learn**

    - `%load_ext flow_kernel` and the `%%flow` cell magic;
    - reading Python variables from Flow, and `--out NAME` to get results back;
    - Python functions as Flow tools with `@flow_tool`;
    - `--operator` for approvals, and errors as Python exceptions
      (`FlowCompileError`, `FlowRunError`) that you can catch;
    - `flow_kernel.Session`, the API underneath, for scripts and services:
      running a workflow with input, cancelling a run, surviving a sandbox crash.
    """),
    code("""
    %load_ext flow_kernel
    """),
    md("""
    ## Python data in, Flow results out

    A Flow cell can read any Python variable whose value is JSON — numbers, strings,
    lists, dicts — by its name. It gets a copy, typed from the value, so the checker
    knows `tickets` is an array of objects with `id`, `title` and `tags`.
    """),
    code("""
    tickets = [
        {"id": "T1", "title": "Charged twice for order A-1001", "tags": ["billing"]},
        {"id": "T2", "title": "App crashes on login", "tags": ["bug", "mobile"]},
        {"id": "T3", "title": "How do I export to CSV?", "tags": []},
    ]
    """),
    code("""
    %%flow --out triaged
    type Triage = { id: string, severity: "low" | "medium" | "high", team: string }

    agent triager {
      model: "scripted"
      instructions: "Triage the support ticket."
      output: Triage
      script: [
        when("T1", { id: "T1", severity: "high", team: "billing" }),
        when("T2", { id: "T2", severity: "medium", team: "mobile" }),
        when("T3", { id: "T3", severity: "low", team: "docs" }),
      ]
    }

    parallelMap(tickets, t => triager("Ticket ${t.id}: ${t.title}"))
    """),
    md("""
    `--out triaged` put the result in a Python variable. From here it is plain Python:
    """),
    code("""
    from collections import Counter

    print(Counter(t["severity"] for t in triaged))
    [t["id"] for t in triaged if t["severity"] != "low"]
    """),
    md("""
    Declarations and bindings persist across `%%flow` cells, as in the Flow kernel:
    """),
    code("""
    %%flow
    len(filter(tickets, t => "billing" in t.tags))
    """),
    md("""
    ## Python functions as tools

    `@flow_tool` registers a Python function as the implementation of the Flow `tool`
    declaration of the same name. It runs here, in this Python process — it can use
    your database connection or your API client — while the Flow code around it runs
    in the sandbox.
    """),
    code("""
    from flow_kernel import flow_tool

    ORDERS = {"A-1001": {"status": "shipped", "charged": 2}}

    @flow_tool
    def order_status(order_id: str) -> dict:
        order = ORDERS.get(order_id, {"status": "unknown", "charged": 0})
        return {"order_id": order_id, **order}
    """),
    code("""
    %%flow --out reply --operator auto-approve
    tool order_status(order_id: string) -> { order_id: string, status: string, charged: int }

    agent support {
      model: "mock"
      tools: [order_status]
      output: { answer: string }
    }

    let answer = support("Why was I charged twice for A-1001?")
    let send = approve "Send the reply to the customer?"
    { answer: answer.answer, sent: send }
    """),
    md("""
    `--operator auto-approve` answered the `approve`; the options are those of
    `%operator` in the Flow kernel (lesson 6).

    ## Errors are Python exceptions

    A cell that does not compile raises `FlowCompileError` and shows the diagnostics;
    a run that fails raises `FlowRunError`, whose `.code` is the runtime error code.
    Both fail the cell, as an exception does in Python (these two cells are tagged as
    expected to fail):
    """),
    code("""
    %%flow
    len(tickets) + "three"
    """, RAISES),
    code("""
    %%flow
    tickets[7].title
    """, RAISES),
    md("""
    ## Underneath: `flow_kernel.Session`

    Everything above — and the Flow kernel, and `flow run` — is built on `Session`. Use
    it directly in scripts and services: it compiles, checks and runs Flow, keeps
    declarations and bindings, registers tools and takes the operator policy and event
    sinks. In a notebook, which has an event loop running already, `await` its
    `run_async`.
    """),
    code("""
    from flow_kernel import Session

    session = Session(operator="none")
    outcome = await session.run_async('''
    workflow greet(name: string, times?: int) -> string[] {
      return map(range(times ?? 1), i => "Hello, ${name}! (${i + 1})")
    }
    ''')
    outcome = await session.run_async("", workflow="greet", input={"name": "Ada", "times": 2})
    outcome.result
    """),
    md("""
    Source that does not compile raises `CompileError`, carrying every diagnostic —
    nothing of it runs:
    """),
    code("""
    from flow_kernel import CompileError

    try:
        await session.run_async('greet(nme: "Ada")')
    except CompileError as err:
        for d in err.diagnostics:
            print(f"{d.code} {d.message}")
    """),
    md("""
    A workflow's input is checked against its schema before it runs. Input from the
    outside world is not typed by the checker, so it is checked at run time, and bad
    input is `workflow-input-validation`, saying what is wrong:
    """),
    code("""
    outcome = await session.run_async("", workflow="greet", input={"name": 42, "times": "twice"})
    print(f"error[{outcome.error.code}]: {outcome.error.message}")
    """),
    md("""
    ## Cancelling a run, and surviving a crash

    A run is an `asyncio` task: cancel it and the sandbox stops it — the outcome says
    `cancelled` (in a notebook, the kernel's *interrupt* button does the same). The
    events up to that point are in its journal. To cancel at the right moment, this
    cell watches the run's events with a *sink*, a function called with each event as
    it happens (the run view is one), and cancels once the agent call has started:
    """),
    code("""
    import asyncio

    SLOW = 'agent slowpoke { model: "scripted", script: [slow(5s, "done")] }\\nslowpoke("take your time")'

    def start_slow_run():
        started = asyncio.Event()
        def sink(event):
            if event["type"] == "agent.started":
                started.set()
        return asyncio.ensure_future(session.run_async(SLOW, sinks=[sink])), started

    run, started = start_slow_run()
    await started.wait()
    run.cancel()
    outcome = await run
    print(f"error[{outcome.error.code}]: {outcome.error.message}")
    """),
    md("""
    The sandbox is a separate Node.js process, so even the worst failure — the process
    dying — costs one run, not your session. Here we kill it ourselves mid-run
    (`sandbox_pids()` lists the session's sandbox processes): the run fails with
    `worker-crashed`, and the next run gets a fresh sandbox.
    """),
    code("""
    import os
    import signal

    run, started = start_slow_run()
    await started.wait()
    os.kill(session.sandbox_pids()[0], signal.SIGKILL)
    outcome = await run
    print(f"error[{outcome.error.code}]: {outcome.error.message}")
    (await session.run_async('"still here"')).result
    """),
    code("""
    await session.aclose()  # stop the session's sandbox processes
    """),
    md("""
    ## What next

    Lesson 11 is about the other kind of failure: runs that would go on too long or
    spend too much, and the budgets that stop them.
    """),
]
