"""`flow serve`: a file's workflows as MCP tools or an A2A agent (docs/protocols.md), a front
end beside `cli/` and `kernel/`; the door (credentials, origins) and the bounds.
"""
