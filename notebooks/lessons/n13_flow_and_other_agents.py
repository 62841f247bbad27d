"""Lesson 13 · Flow and other agents (MCP tools in, a workflow served out)."""

from __future__ import annotations

from lessons import code, md

NAME = "13-flow-and-other-agents"

# An agent whose model is a remote A2A agent: the `greet` skill of `flow serve greetings.flow
# --a2a`. cassettes/record_13.py records this cell against that server; the lesson replays it.
A2A_CELL = '''
agent concierge { model: "a2a/greeter", output: { to: string, text: string } }
concierge("Grace")
'''.strip()

CELLS = [
    md("""
    # 13 · Flow and other agents

    Flow programs do not live alone. Two open protocols connect them to other agents:

    - the **Model Context Protocol** (MCP) exposes *operations* as tools: an MCP server can
      lend its tools to your Flow agents, and `flow serve FILE --mcp` lends your workflows,
      as tools, to any MCP client (an editor, a desktop assistant, another agent);
    - **Agent2Agent** (A2A) exposes *conversations*: `flow serve FILE --a2a HOST:PORT` makes
      your workflows an A2A agent, and `model: "a2a/NAME"` lets a remote A2A agent be the
      model behind a Flow agent.

    **What you will learn**

    - declaring the servers you use in `flow.toml`, and why that is yours to do;
    - listing a server's tools with `%mcp`, and naming them in Flow with `from mcp`;
    - how a tool's annotations decide whether a call asks you first;
    - what an agent sees when a lent tool fails;
    - serving a file's workflows with `flow serve`, and using one back as a tool.

    The agents here use `model: "mock"`, which calls each tool it was given once with
    arguments generated from the tool's schema, so everything runs offline and the same
    way every time. Both protocols use their official Python SDKs (`mcp`, `a2a-sdk`:
    `pip install 'flow-kernel[protocols]'`).
    """),
    md("""
    ## The servers are yours: `flow.toml`

    An MCP server is a program that runs on your machine (or a service you connect to),
    so using one is a capability — like `%tools`, it comes from you, never from a
    notebook. The servers are declared in the `flow.toml` beside this notebook:

    ```toml
    [mcp.docs]                       # started as a child, over stdio
    command = ["{python}", "docs_server.py"]
    timeout_ms = 20000

    [mcp.greetings]                  # this folder's greetings.flow, served by Flow itself
    command = ["{python}", "-m", "flow_kernel.cli", "serve", "greetings.flow", "--mcp"]
    no_approval = ["greet"]          # you know it only composes a greeting: it runs unasked
    ```

    A `flow.toml` applies only in a folder you trusted (`flow trust notebooks`, which
    this gallery's setup does). A server reached over HTTP is `url = "http://…/mcp"`,
    with `token_env = "VAR"` naming the variable that holds its token.

    [`docs_server.py`](docs_server.py) is an MCP server written with the MCP SDK. `%mcp`
    starts the servers, asks each for its tools and prints them as Flow declarations you
    can paste — with whether a call will ask you first:
    """),
    code("""
    %mcp docs
    """),
    md("""
    ## Naming lent tools in Flow

    A program names each tool it wants with a Flow signature and `from mcp "SERVER"`
    (`from mcp "docs/get-page"` when the server's name for it is not a Flow name). The
    signature is the contract: the checker types it, the model is offered exactly it,
    the arguments are checked before the call and the result after — exactly like a
    Python tool.
    """),
    code('''
    ## Finds the pages whose text mentions the query.
    tool search(query: string) -> { pages: string[] } from mcp "docs"

    ## Deletes a page.
    tool delete_page(name: string) -> { result: string } from mcp "docs"

    agent librarian {
      model: "mock"
      instructions: "Keep the documentation tidy."
      tools: [search, delete_page]
      output: string
    }
    '''),
    md("""
    ## Who decides: annotations only add approvals

    A server describes its tools with *annotations*: `search` says it is read-only and not
    destructive; `delete_page` says it is destructive. Flow treats them as hints from the
    server, which you did not write: a tool marked destructive, or not marked at all,
    **asks the operator first**; a hint can never take away an approval your declaration
    asks for (`requires approval`). Only you can waive the question, by listing the tool
    under `no_approval` in the server's table in `flow.toml`.

    With the operator set to deny, `search` runs and `delete_page` is refused — the agent
    gets `{"denied": true, …}` back and goes on:
    """),
    code("""
    %operator auto-deny
    librarian("Remove the pages nobody reads")
    """),
    md("""
    ## When a lent tool fails

    A server that does not start, a tool it does not have, an error it reports, a call that
    takes longer than `timeout_ms`: each goes back to the model as `{"error": …}`, like a
    Python tool's exception, and the run goes on — the model can read it and try again.
    `broken` always fails; `missing` is not a tool of that server at all:
    """),
    code('''
    tool broken(reason: string) -> any from mcp "docs"
    tool missing(page: string) -> any from mcp "docs"

    agent tester { model: "mock", tools: [broken, missing], output: string }
    tester("Try the tools")
    '''),
    md("""
    Calls to lent tools are part of the agent call's record: its events, its journal in
    `.flow/runs`, and a cassette (`%record`), which replays them without starting the
    server (lesson 8).

    ## Serving workflows: `flow serve`

    The other direction: [`greetings.flow`](greetings.flow) has one workflow, `greet`.
    In a terminal,

    ```console
    $ flow serve greetings.flow --mcp                         # MCP over stdio
    $ flow serve greetings.flow --mcp --http 127.0.0.1:8765   # MCP over HTTP, at /mcp
    $ flow serve greetings.flow --a2a 127.0.0.1:9000          # an A2A agent
    ```

    makes its workflows tools (or A2A skills) for other agents. Over HTTP it prints a
    token when it starts, as Jupyter's server does; clients send it as
    `Authorization: Bearer …`. Each tool takes the
    workflow's input schema, its description is the workflow's `##` comment and its
    result is the workflow's; every call is a Flow run in the sandbox with its journal,
    its stages and agent calls reported as progress. An `approve` or `ask` inside goes
    to the client when it can answer (MCP elicitation, A2A `input-required`), else to
    the `--operator` policy you give, else the run stops with `operator-unavailable`.

    The `greetings` server of this folder's `flow.toml` *is* `flow serve greetings.flow
    --mcp`, so `%mcp` shows what any MCP client sees. A served workflow carries no
    annotations (Flow cannot promise it harmless), so it would ask first; `no_approval`
    in `flow.toml` is where you, not the server, say it need not:
    """),
    code("""
    %mcp greetings
    """),
    md("""
    And a Flow agent can use the served workflow as a tool — a Flow run calling another
    Flow run through MCP. The served run happens in its own sandbox; here you see the
    tool call and its structured result:
    """),
    code('''
    tool greet(name: string) -> { to: string, text: string } from mcp "greetings"

    agent host { model: "mock", tools: [greet], output: string }
    host("Welcome our guest")
    '''),
    md("""
    ## A2A agents as models

    An A2A agent can also be the model of a Flow agent. Declare it in `flow.toml`,

    ```toml
    [a2a.reviewer]
    url = "http://127.0.0.1:9000"     # its card: /.well-known/agent-card.json
    skill = "review"                  # which of its skills
    token_env = "REVIEWER_TOKEN"      # its bearer token, from this variable
    ```

    and use it like any model: `agent reviewer { model: "a2a/reviewer", output: Review }`.
    The prompt (with its context, marked as data) goes out as a message, the output
    contract travels with it, and the reply is checked against the contract like any
    model's — a repair is a follow-up in the same A2A conversation, and a question the
    remote agent asks (`input-required`) comes to you as an operator question.

    Below, `concierge`'s model is the `greet` skill of `flow serve greetings.flow --a2a`
    (declared as `[a2a.greeter]` with `skill = "greet"`). So that this notebook runs
    offline, the conversation was recorded once against that server
    ([`cassettes/record_13.py`](cassettes/record_13.py)) and is replayed here (lesson 8):
    """),
    code("""
    %replay cassettes/13-a2a.jsonl
    """),
    code(A2A_CELL),
    code("""
    %replay off
    """),
    md("""
    ## Doors

    Over HTTP `flow serve` wants a credential: the token it prints (or the one in
    `--token-env VAR`), and one more for each `--issue-token NAME` — a client sees only
    its own A2A tasks. `--no-auth` opts out, on loopback only, with a warning. A web page
    you open cannot call it: requests from other origins are refused unless
    `--allow-origin` names them. Serving a workflow that asks for approval hands the
    answer to whoever holds a token — give one only to clients you would let approve.
    More in `docs/protocols.md` and `docs/security.md`.
    """),
]
