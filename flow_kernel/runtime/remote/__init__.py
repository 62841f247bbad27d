"""Other agents as clients see them (docs/protocols.md): MCP servers lending tools, A2A agents
as models, and their `flow.toml` tables.
"""
