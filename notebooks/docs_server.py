"""An MCP server written with the official SDK (`MCPServer`), lending tools to Flow agents in
gallery lesson 13 (declared in flow.toml beside it) and in tests/protocols: over stdio
(`python docs_server.py`) or streamable HTTP (`python docs_server.py --http PORT`, loopback only).

Its tools cover what a lent tool can do: answer with structured content (`search`, marked
read-only and not destructive), change something (`delete_page`, marked destructive),
say nothing about itself (`shout`, no annotations), fail (`broken`), and be slow (`slow`).
`delete_page` appends to the file named by $DOCS_DELETED, so a test sees whether it ran;
over HTTP, $DOCS_TOKEN (when set) is the bearer token every request needs.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("docs")

PAGES = {"intro": "Flow is a typed language for agent workflows.", "tools": "Agents call tools."}


@server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
def search(query: str) -> dict[str, list[str]]:
    """Find the pages whose text mentions the query."""
    return {"pages": sorted(name for name, text in PAGES.items() if query.lower() in text.lower())}


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_page(name: str) -> str:
    """Delete a page."""
    deleted = os.environ.get("DOCS_DELETED")
    if deleted:
        with open(deleted, "a") as handle:
            handle.write(name + "\n")
    return f"deleted {name}"


@server.tool()
def shout(text: str) -> str:
    """Say it louder (no annotations: a client cannot know it is harmless)."""
    return text.upper()


@server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
def broken(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"broken on purpose: {reason}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False))
async def slow(seconds: float) -> str:
    """Takes its time."""
    await asyncio.sleep(seconds)
    return "done"


def _bearer(app: Any, token: str) -> Any:
    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != f"Bearer {token}".encode():
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        import uvicorn

        app = server.streamable_http_app()
        token = os.environ.get("DOCS_TOKEN")  # when set, every request needs it as a bearer token
        uvicorn.run(_bearer(app, token) if token else app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
