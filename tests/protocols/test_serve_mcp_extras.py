"""`flow serve FILE --mcp --http` beyond tools, through the official Python SDK's client:
prompt files as prompts, the runs a caller started as resources (and no one else's), log
messages at the level a client set, completion of enum-typed parameters and run ids."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.protocols.helpers import FLOW, Served, flow_serve, free_port, mcp_client

SERVED = '''type Size = "small" | "medium" | "large"

## Orders a pizza of a size.
workflow order(size: Size, crust: "thin" | "thick") -> string {
  print "ordering ${size}"
  publish "note.txt" "noted"
  publish primary "order.md" "# Order\\n\\n${size}, ${crust}"
  return "ordered ${size}"
}

## Refuses every order.
workflow refuse(size: Size) -> string {
  require size == "large" : "only large"
  return "never"
}
'''


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """shop.flow with a prompts folder beside it: two prompts, and files that are none."""
    folder = tmp_path_factory.mktemp("extras")
    (folder / "shop.flow").write_text(SERVED)
    prompts = folder / "prompts"
    prompts.mkdir()
    (prompts / "triage.md").write_text("# Triage a <b>ticket</b>\n\nTicket {{ticket}} from {{who}}: {{ticket}}.\n")
    (prompts / "plain.md").write_text("No arguments here.")
    (prompts / "notes.txt").write_text("not Markdown: not a prompt")
    (prompts / "bad name.md").write_text("a name with a space")
    outside = folder / "secret.md"
    outside.write_text("outside the prompts folder")
    os.symlink(outside, prompts / "linked.md")
    return folder / "shop.flow"


@pytest.fixture(scope="module")
def served(shop: Path) -> Iterator[Served]:
    folder = shop.parent
    port = free_port()
    with flow_serve(["serve", str(folder / "shop.flow"), "--mcp", "--http", f"127.0.0.1:{port}"], port,
                    issue=["bob"], path="/mcp") as server:
        yield server


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_prompt_files_are_prompts_with_their_placeholders_as_arguments(served: Served) -> None:
    async def go() -> dict[str, Any]:
        async with mcp_client(served.url, served.auth()) as client:
            listed = (await client.list_prompts()).prompts
            got = await client.get_prompt("triage", {"ticket": "T-1 {{who}}", "who": "<script>Ada</script>"})
            errors = []
            for name, arguments in [("triage", {"ticket": "x"}), ("triage", {"ticket": "x", "who": "y", "z": "1"}),
                                    ("linked", {}), ("nope", {})]:
                try:
                    await client.get_prompt(name, arguments)
                except MCPError as exc:
                    errors.append(exc.error.message)
            return {"listed": listed, "got": got, "errors": errors}

    got = run(go())
    assert [(p.name, p.description, [(a.name, a.required) for a in p.arguments or []]) for p in got["listed"]] == [
        ("plain", "The prompt file prompts/plain.md.", []),
        ("triage", "Triage a <b>ticket</b>", [("ticket", True), ("who", True)])]
    (message,) = got["got"].messages
    assert message.role == "user" and message.content.type == "text"
    # filled once: the value `{{who}}` given for ticket stays as it is; markup stays text
    assert message.content.text == ("# Triage a <b>ticket</b>\n\nTicket T-1 {{who}} from <script>Ada</script>: "
                                    "T-1 {{who}}.\n")
    assert got["errors"] == ["prompt `triage`: missing who (it takes ticket, who)",
                             "prompt `triage`: unknown z (it takes ticket, who)",
                             "no prompt `linked` in this server", "no prompt `nope` in this server"]
    left_out = [line for line in served.stderr if "prompt left out" in line]
    assert any("prompts/linked.md: not a regular file" in line for line in left_out), served.stderr
    assert any("prompts/bad name.md" in line for line in left_out)


def test_runs_are_resources_of_the_caller_who_started_them(served: Served) -> None:
    async def go() -> dict[str, Any]:
        async with mcp_client(served.url, served.auth()) as main, mcp_client(served.url, served.auth("bob")) as bob:
            done = await main.call_tool("order", {"size": "small", "crust": "thin"})
            failed = await main.call_tool("refuse", {"size": "small"})
            refused = await main.call_tool("order", {"size": "huge", "crust": "thin"})  # never started
            run_id = (await main.list_resources()).resources[1].name
            mine = (await main.list_resources()).resources
            read = await main.read_resource(f"flow://runs/{run_id}")
            read_failed = await main.read_resource(f"flow://runs/{failed.meta['flow/run']}")
            templates = (await main.list_resource_templates()).resource_templates
            theirs = (await bob.list_resources()).resources
            errors = []
            for client, uri in [(bob, f"flow://runs/{run_id}"), (main, "flow://runs/r000000000000"),
                                (main, f"flow://runs/{run_id}/../../etc/passwd"), (main, "file:///etc/passwd")]:
                try:
                    await client.read_resource(uri)
                except MCPError as exc:
                    errors.append((exc.error.code, exc.error.message))
            return {"done": done, "failed": failed, "refused": refused, "mine": mine, "read": read,
                    "read_failed": read_failed, "templates": templates, "theirs": theirs, "errors": errors,
                    "run_id": run_id}

    got = run(go())
    assert not got["done"].is_error and got["failed"].is_error and got["refused"].is_error
    run_id = got["run_id"]
    assert [(r.uri, r.name, r.title) for r in got["mine"]] == [
        (f"flow://runs/{got['failed'].meta['flow/run']}", got["failed"].meta["flow/run"], "refuse: failed"),
        (f"flow://runs/{run_id}", run_id, "order: completed")]  # newest first; the refused call is no run
    summary, artifact, result, note = got["read"].contents  # the primary artifact right after the summary
    assert (summary.uri, summary.mime_type) == (f"flow://runs/{run_id}", "text/plain")
    assert summary.text.startswith("Flow run: completed — order")
    assert "published order.md" in summary.text and 'result: ordered small' in summary.text
    assert (result.uri, result.mime_type, result.text) == (f"flow://runs/{run_id}/result", "application/json",
                                                           '"ordered small"')
    assert (artifact.uri, artifact.mime_type, artifact.text) == (
        f"flow://runs/{run_id}/artifacts/order.md", "text/markdown", "# Order\n\nsmall, thin")
    assert (note.uri, note.mime_type, note.text) == (f"flow://runs/{run_id}/artifacts/note.txt", "text/plain", "noted")
    (failed_summary,) = got["read_failed"].contents  # a failed run: its summary says why, no result
    assert failed_summary.text.startswith("Flow run: failed — refuse") and "only large" in failed_summary.text
    assert [(t.uri_template, t.name) for t in got["templates"]] == [("flow://runs/{id}", "run")]
    assert got["theirs"] == []  # bob sees none of main's runs
    assert got["errors"] == [(-32002, "Resource not found")] * 4  # another's run, no run, no path, no file


def test_log_messages_at_or_above_the_level_the_client_set(served: Served) -> None:
    async def go(level: str | None, modern: bool = False) -> list[tuple[str, Any]]:
        """A handshake-era client sets its level with `logging/setLevel`; a 2026-07-28 one
        stamps it on each request (`log_level`)."""
        logged: list[tuple[str, Any]] = []

        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            logged.append((params.level, params.data))

        options: dict[str, Any] = {"log_level": level} if modern else {"mode": "legacy"}
        async with mcp_client(served.url, served.auth(), logging_callback=on_log, **options) as client:
            if level is not None and not modern:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # deprecated by 2026-07-28, which this call does not speak
                    await client.set_logging_level(level)
            await client.call_tool("order", {"size": "medium", "crust": "thick"})
            await client.call_tool("refuse", {"size": "medium"})
        return logged

    for modern in (False, True):
        info = run(go("info", modern))
        assert info[:3] == [("info", "ordering medium"), ("info", "published note.txt"),
                            ("info", "published order.md")], modern
        ((level, text),) = info[3:]
        assert level == "error" and text.startswith("assertion: only large (run r")
        assert [lv for lv, _ in run(go("error", modern))] == ["error"]
        assert run(go(None, modern)) == []  # no level asked for: no log messages


def test_completion_of_enum_parameters_and_run_ids(served: Served) -> None:
    async def go() -> dict[str, Any]:
        async with mcp_client(served.url, served.auth()) as client:
            order = types.PromptReference(type="ref/prompt", name="order")
            done = await client.call_tool("order", {"size": "large", "crust": "thin"})
            runs = types.ResourceTemplateReference(type="ref/resource", uri="flow://runs/{id}")
            return {
                "sizes": (await client.complete(order, {"name": "size", "value": ""})).completion,
                "m": (await client.complete(order, {"name": "size", "value": "m"})).completion.values,
                "crust": (await client.complete(order, {"name": "crust", "value": "th"})).completion.values,
                "prompt": (await client.complete(types.PromptReference(type="ref/prompt", name="triage"),
                                                 {"name": "ticket", "value": ""})).completion.values,
                "run": (await client.complete(runs, {"name": "id", "value": "r"})).completion.values,
                "done": done,
                "listed": [r.name for r in (await client.list_resources()).resources],
            }

    got = run(go())
    assert got["sizes"].values == ["small", "medium", "large"] and got["sizes"].total == 3
    assert got["m"] == ["medium"] and got["crust"] == ["thin", "thick"]
    assert got["prompt"] == []  # a prompt file's arguments are free text
    assert got["done"].structured_content == {"result": "ordered large"}
    assert got["run"] == got["listed"] and got["listed"]  # the caller's runs, newest first


def test_over_stdio_the_person_who_started_the_server_sees_their_runs(shop: Path) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=FLOW, args=["serve", str(shop), "--mcp"], cwd=str(shop.parent))

    async def go() -> tuple[list[str], Any, list[str]]:
        async with Client(params) as client:
            await client.call_tool("order", {"size": "small", "crust": "thin"})
            listed = [r.uri for r in (await client.list_resources()).resources]
            read = await client.read_resource(listed[0])
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            return listed, read, prompts

    listed, read, prompts = run(go())
    assert len(listed) == 1 and read.contents[0].text.startswith("Flow run: completed — order")
    assert prompts == ["plain", "triage"]
