"""Codes beyond the normative catalogue: tools lent by MCP servers
(`tool … from mcp "server"`, docs/protocols.md). Registered through `catalogue._ADDED`; the
numbers are this topic's range (F2017-F2019, F4021-F4024)."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F2017",
        "E",
        "malformed MCP server name in `from mcp`",
        """\
A tool lent by an MCP server names the server as `from mcp "SERVER"`, or
`from mcp "SERVER/TOOL"` when the server's name for the tool is not the Flow name.
SERVER is the name of a `[mcp.SERVER]` table of flow.toml: letters, digits, `_`, `-`
and `.`; TOOL, after the one `/`, is not empty and has no spaces. Anything else can
never match a configured server, so it is refused when the file is checked rather
than when an agent first calls the tool.""",
        """\
tool search(query: string) -> any from mcp "my docs"
agent helper { model: "mock", tools: [search], output: string }
print helper("Find the intro")
""",
        """\
tool search(query: string) -> any
agent helper { model: "mock", tools: [search], output: string }
print helper("Find the intro")
""",
    ),
    (
        "F4021",
        "E",
        "tool lent by an MCP server the configuration does not declare",
        """\
In a file (`flow check`, `flow run`, `flow serve`) a tool `from mcp "SERVER"` needs the
configuration that applies to the file to declare that server: a `[mcp.SERVER]` table in
flow.toml (or `[tool.flow.mcp.SERVER]`) with the command that starts it or its `url`, in
a folder you trust. Without it no agent could ever call the tool, so the file is refused
before it runs. In a notebook the session's configuration is only known when the cell
runs, and a missing server is a `capability-violation` of the call then.""",
        """\
tool search(query: string) -> any from mcp "docs"
agent helper { model: "mock", tools: [search], output: string }
print helper("Find the intro")
""",
        """\
tool search(query: string) -> any
agent helper { model: "mock", tools: [search], output: string }
print helper("Find the intro")
""",
    ),
)
