"""Lesson 7 · Tools and processes."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "07-tools-and-processes"

CELLS = [
    md("""
    # 7 · Tools and processes

    An agent that can only talk is limited to what it already knows. *Tools* let it
    look things up and act: a Flow `tool` declaration says what a tool takes and gives,
    a Python function on the host implements it, and an agent calls the tools it was
    given while it works. `run`, on the other hand, is for your workflow itself: it
    starts a program on the host — only one you allowed — and gives back its output.

    **What you will learn**

    - declaring `tool`s in Flow and implementing them in Python with `@flow_tool`;
    - loading the implementations into the Flow kernel with `%tools FILE.py`;
    - giving tools to agents, and narrowing them per call with `tools: [...]`;
    - what an agent sees when a tool fails (an error it can read, not a crash);
    - `requires approval`: a tool that waits for the operator before it acts;
    - `run` with `%allow run`, `stdin`, `timeout`, and the `process` error.

    The agents here use `model: "mock"`, which needs no network: before it answers,
    it calls each tool it was given once, with arguments generated from the tool's
    schema — enough to see the whole mechanism work the same way every time.
    """),
    md("""
    ## Declaring tools

    A `tool` declaration is a signature: typed parameters (`?` marks an optional one)
    and a result type. The doc comment (`##`) becomes the tool's description for the
    model. Flow code never calls a tool itself — only agents do.
    """),
    code('''
    ## The status and total of an order, by its id (e.g. "A-1001").
    tool lookup_order(order_id: string) -> { found: bool, status: string, total: number }

    ## Help-centre articles matching a query.
    tool search_kb(query: string, limit?: int) -> string[]

    ## Refund an order, in full or in part.
    tool refund(order_id: string, amount: number) -> { ok: bool, order_id: string, refunded: number } requires approval

    ## A shipping quote for a country.
    tool shipping_quote(country: string) -> { price: number, days: int }
    '''),
    md("""
    `%schema` shows what the model is told a tool takes — the same JSON Schema that
    the arguments it sends are validated against before your function ever runs:
    """),
    code("""
    %schema lookup_order
    """),
    md("""
    ## Implementing them in Python

    The implementations live in [`shop_tools.py`](shop_tools.py), beside this
    notebook: plain Python functions marked with `@flow_tool` (from `flow_kernel`),
    each named like its declaration. `%tools` runs that file in the kernel's own
    Python — on the host, not in the sandbox — and registers the marked functions.

    Running Python on the host is a capability, and capabilities come from you, never
    from the notebook: `%tools`, `%allow run` and `%operator auto-approve` only *ask*.
    In a notebook someone sent you, a prompt appears — "This notebook asks to run the
    Python tool file …" — with Allow once, Allow for this notebook and Deny; run
    headless, the cell fails and says how to grant it. This gallery's folder is trusted
    by `scripts/gallery` (`flow trust notebooks`), so its cells get what they ask for.
    """),
    code("""
    %tools shop_tools.py
    """),
    md("""
    ## An agent with tools

    `tools: [...]` in an agent lists the tools it may call. The run view shows each
    call, its arguments and its result under the agent's card.
    """),
    code("""
    agent support {
      model: "mock"
      role: "customer support agent"
      instructions: "Answer the customer's question; look the order up first."
      tools: [lookup_order, search_kb]
      output: { answer: string, order_status: string }
    }

    let reply = support("Where is my order A-1001?")
    reply
    """),
    md("""
    A call can narrow what the agent may use — here only the knowledge base. It can
    never widen it: the tools offered are the call's list ∩ the agent's ∩ what the host
    allows, so a tool the agent was not given is simply not offered (the second call
    below asks for `refund` and gets no tool at all).
    """),
    code("""
    let faq = support("How long do refunds take?", tools: [search_kb])
    faq.answer
    """),
    code("""
    support("Refund my order", tools: [refund])
    """),
    md("""
    ## When a tool fails

    A tool that raises does not crash the run. Its error goes back to the model as
    `{"error": "…"}`, so the model can apologise, try another way or give up — exactly
    what would happen with a flaky API. The same goes for arguments that do not match
    the tool's schema: they are refused before your function is called.
    """),
    code("""
    agent shipping {
      model: "mock"
      tools: [shipping_quote]
      output: string
    }
    shipping("How much is shipping to Norway?")
    """),
    md("""
    ## Tools that need a yes: `requires approval`

    `refund` moves money, so its declaration ends with `requires approval`: every call
    waits for the operator, like `approve` does (lesson 6). A denial is not an error —
    the model receives `{"denied": true, "reason": …}` and can explain it to the
    customer. This notebook runs unattended, so the operator policy answers:
    """),
    code("""
    %operator auto-approve
    agent refunds {
      model: "mock"
      instructions: "Refund the order if the customer is entitled to it."
      tools: [lookup_order, refund]
      output: { refunded: bool, note: string }
    }
    refunds("Order A-1002 arrived broken, please refund it")
    """),
    code("""
    %operator auto-deny
    refunds("Order A-1002 arrived broken, please refund it")
    """),
    md("""
    With `%operator none` — nobody to ask, the default of an unattended run — a gated
    tool call fails closed with `operator-unavailable`, which the model receives as an
    error like any other failed tool call.

    ## Running programs: `run`

    `run "program" [arguments]` starts a program on the host and gives back
    `{stdout, stderr, exit_code}`. There is no shell: the arguments are passed as they
    are, so nothing is expanded and nothing can be injected. And nothing may run at all
    until you allow it by name:
    """),
    code("""
    let listing = run "echo" ["hello", "from", "the host"]
    listing.stdout
    """, RAISES),
    code("""
    %allow run 'echo hello *' 'sort -f' 'python3 -c *'
    let listing = run "echo" ["hello", "from", "the host"]
    listing
    """),
    md("""
    Each program is allowed with the arguments it may take: `echo hello *` lets `echo`
    start with `hello` and anything after it, `sort -f` only as `sort -f`. A program
    allowed by its name alone may start with any arguments, and many run other programs
    through their own flags (`sort --compress-program`, `find -exec`, `git -c alias…`):
    the kernel warns when a cell grants one that way, so pin the arguments.

    `stdin` feeds the program's standard input and `timeout` bounds it (30 seconds by
    default). Here `sort` orders the titles an agent might have produced:
    """),
    code('''
    let titles = ["Refund policy", "Delivery times", "Broken items"]
    let sorted = run "sort" ["-f"] stdin join(titles, "\\n") timeout 5s
    split(trim(sorted.stdout), "\\n")
    '''),
    md("""
    A program that fails — a non-zero exit, a timeout, a missing executable — fails
    the run with the code `process`; `details` carries its `stdout`, `stderr` and
    `exit_code`, so a `catch` can look at what went wrong:
    """),
    code('''
    try {
      run "python3" ["-c", "import sys; print('checking'); sys.exit(3)"]
    } catch "process" as err {
      print "the check failed with exit code ${err.details.exit_code}: ${trim(err.details.stdout)}"
    }
    '''),
    md("""
    ## What next

    Tools and processes are where a workflow touches the world, so they are where the
    host decides: which tools exist (`%tools`), which programs may start (`%allow run`)
    and who approves what (`%operator`). Lesson 8 records real model answers once and
    replays them, so a notebook like this one can use a real model and still be tested.
    """),
]
