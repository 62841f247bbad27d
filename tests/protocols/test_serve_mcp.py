"""`flow serve FILE --mcp` driven by the official SDK's client (issue 20, item 2): the real
command as a child, over stdio and over streamable HTTP on loopback (the client sending the
token the command printed), running the workflows of tests/protocols/served.flow in the sandbox."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.protocols.helpers import FLOW, HERE, Served, flow_serve, free_port, mcp_client


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """served.flow in a folder of its own: each call's journal is written beside it."""
    folder = tmp_path_factory.mktemp("served")
    shutil.copy(HERE / "served.flow", folder / "served.flow")
    return folder / "served.flow"


@pytest.fixture(scope="module")
def http_served(served: Path) -> Iterator[Served]:
    port = free_port()
    with flow_serve(["serve", str(served), "--mcp", "--http", f"127.0.0.1:{port}"], port, path="/mcp") as server:
        yield server


def test_stdio_lists_workflows_calls_one_with_progress_and_reports_errors(served: Path) -> None:
    params = StdioServerParameters(command=FLOW, args=["serve", str(served), "--mcp", "--operator", "auto-deny"],
                                   cwd=str(served.parent))

    async def go() -> dict[str, Any]:
        progress: list[tuple[float, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, message))

        async with Client(params) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            greeted = await client.call_tool("greet", {"name": "Ada"}, progress_callback=on_progress)
            failed = await client.call_tool("words", {"text": ""})
            bad_input = await client.call_tool("words", {"txt": "a b"})
            counted = await client.call_tool("words", {"text": "one two three"})
            removed = await client.call_tool("remove", {"item": "x"})  # no elicitation: the --operator answers
            return {"listed": listed, "greeted": greeted, "progress": progress, "failed": failed,
                    "bad_input": bad_input, "counted": counted, "removed": removed}

    got = asyncio.run(go())
    listed = got["listed"]
    assert list(listed) == ["greet", "words", "remove", "paint", "wait_long"]
    greet = listed["greet"]
    assert greet.description == "Greets someone by name."
    assert greet.input_schema["properties"] == {"name": {"type": "string"}}
    assert greet.output_schema["properties"]["text"] == {"type": "string"}  # the named type, at the root
    assert listed["words"].output_schema["properties"]["result"]["type"] == "integer"  # wrapped: not an object
    greeted = got["greeted"]
    assert not greeted.is_error and greeted.structured_content == {"to": "Ada", "text": "Hello, Ada!"}
    assert json.loads(greeted.content[0].text) == {"to": "Ada", "text": "Hello, Ada!"}
    messages = [m for _, m in got["progress"]]
    assert messages == ["stage compose", "composing", "agent greeter started", "agent greeter answered", "done",
                        "published greeting.txt"]
    assert [d for d, _ in got["progress"]] == sorted(d for d, _ in got["progress"])
    failed = got["failed"]
    assert failed.is_error and failed.structured_content is None  # errors are not results of the output schema
    assert failed.meta["flow/error"]["code"] == "assertion"
    assert failed.content[0].text == f"assertion: the text is empty (run {failed.meta['flow/run']})"
    assert got["bad_input"].is_error
    assert got["bad_input"].meta["flow/error"]["code"] == "workflow-input-validation"
    assert got["counted"].structured_content == {"result": 3}
    assert got["removed"].structured_content == {"result": "kept x"}
    journals = list((served.parent / ".flow" / "runs").glob("*.jsonl"))
    run = failed.meta["flow/run"]
    assert any(p.stem == run for p in journals)  # each call a run with its journal


def test_http_elicitation_answers_approve_and_ask(http_served: Served) -> None:
    answers = {"Delete a?": {"approve": True}, "Delete b?": None, "Which colour?": {"answer": "blue"}}
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        question = params.message.split("\n")[0]
        asked.append(question)
        content = answers[question]
        return types.ElicitResult(action="accept", content=content) if content else types.ElicitResult(action="decline")

    async def go() -> list[Any]:
        # elicitation is a server-to-client request: the handshake era of the protocol has it
        async with mcp_client(http_served.url, http_served.auth(), elicitation_callback=elicit, mode="legacy") as client:
            return [(await client.call_tool("remove", {"item": "a"})).structured_content,
                    (await client.call_tool("remove", {"item": "b"})).structured_content,
                    (await client.call_tool("paint", {})).structured_content]

    assert asyncio.run(go()) == [{"result": "deleted a"}, {"result": "kept b"}, {"result": "painted blue"}]
    assert asked == ["Delete a?", "Delete b?", "Which colour?"]


def test_http_without_elicitation_or_operator_fails_closed(http_served: Served) -> None:
    async def go() -> Any:
        async with mcp_client(http_served.url, http_served.auth()) as client:
            return await client.call_tool("remove", {"item": "c"})

    result = asyncio.run(go())
    assert result.is_error and result.meta["flow/error"]["code"] == "operator-unavailable"
    assert result.content[0].text.startswith("operator-unavailable: ")


def test_an_unknown_tool_is_an_error(http_served: Served) -> None:
    async def go() -> Any:
        async with mcp_client(http_served.url, http_served.auth()) as client:
            return await client.call_tool("nope", {})

    result = asyncio.run(go())
    assert result.is_error and "no workflow `nope`" in result.content[0].text


def test_a_call_the_client_gives_up_on_stops_its_run(http_served: Served) -> None:
    """The SDK client cancels a request it stops waiting for; the run stops with it and the
    server takes the next call (runs take turns: a run left going would hold it back 30 s)."""
    import time

    async def go() -> tuple[Any, float]:
        async with mcp_client(http_served.url, http_served.auth()) as client:
            with pytest.raises(Exception, match=r"(?i)timed out|timeout"):
                await client.call_tool("wait_long", {}, read_timeout_seconds=2)
            started = time.monotonic()
            counted = await client.call_tool("words", {"text": "a b c"})
            return counted, time.monotonic() - started

    counted, seconds = asyncio.run(go())
    print(f"the next call answered {seconds:.1f} s after the cancel")
    assert counted.structured_content == {"result": 3}
    assert seconds < 20  # the cancelled run would have held the server for its 30 s
