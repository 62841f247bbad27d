"""MCP servers lending tools to Flow agents (issue 20, item 1), with the SDK on both sides: the
server is tests/protocols/docs_server.py (`MCPServer`), over stdio as a child and over
streamable HTTP on loopback; the agent's provider calls the tools it is told to."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import Session
from flow_kernel.lang import check
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.remote.mcp import McpUnavailable, flow_signature, probe
from flow_kernel.source import SourceFile
from tests.protocols.helpers import DOCS_SERVER, PYTHON, ToolUser, free_port, server_process

TOOLS = '''## Finds pages.
tool search(query: string) -> { pages: string[] } from mcp "docs"
tool delete_page(name: string) -> any from mcp "docs"
tool shout(text: string) -> { result: string } from mcp "docs"
tool broken(reason: string) -> any from mcp "docs"
tool slow(seconds: number) -> any from mcp "docs"
tool loud(text: string) -> { result: string } from mcp "docs/shout"
agent helper { model: "fake/m", tools: [search, delete_page, shout, broken, slow, loud], output: any }
'''


def stdio_config(extra: str = "") -> str:
    return f'[mcp.docs]\ncommand = ["{PYTHON}", "{DOCS_SERVER}"]\ntimeout_ms = 5000\n{extra}'


def session(tmp_path: Path, config: str, plan: list[tuple[str, dict[str, Any]]], operator: str = "auto-deny",
            **kw: Any) -> tuple[Session, ToolUser]:
    (tmp_path / "flow.toml").write_text(config)
    user = ToolUser(plan)
    s = Session(directory=tmp_path, config=tmp_path / "flow.toml", operator=operator, sandbox=False,
                journal_dir=None, context=RunContext(providers={"fake": user}), **kw)
    return s, user


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    port = free_port()
    with server_process([PYTHON, str(DOCS_SERVER), "--http", str(port)], port):
        yield f"http://127.0.0.1:{port}/mcp"


def test_the_checker_types_a_lent_tool_and_the_signature_is_its_contract() -> None:
    result = check(SourceFile("t.flow", TOOLS + 'let r = helper("x")\n'), mcp_servers=["docs"])
    assert result.ok, [d.message for d in result.diagnostics]
    assert result.decls["search"].node.mcp == "docs"
    assert result.decls["loud"].node.mcp == "docs/shout"
    assert result.schema_for("search")["input"]["properties"] == {"query": {"type": "string"}}
    bad = check(SourceFile("t.flow", 'tool search(query: string) -> any from mcp\n'))
    assert not bad.ok and "server's name" in bad.diagnostics[0].message


def test_flow_check_wants_the_server_in_the_configuration_that_applies(
        tmp_path: Path, trust_folder: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from flow_kernel.cli import main

    program = tmp_path / "lent.flow"
    program.write_text(TOOLS + 'let r = helper("x")\n')
    assert main(["check", str(program)]) == 1  # no flow.toml: F4021 for each lent tool
    assert "[F4021]" in capsys.readouterr().out
    (tmp_path / "flow.toml").write_text(stdio_config())
    assert main(["check", str(program)]) == 1  # found but not trusted: it declares nothing
    capsys.readouterr()
    trust_folder(tmp_path)
    assert main(["check", str(program)]) == 0, capsys.readouterr().out


def test_flow_run_reads_the_servers_of_the_config_it_is_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flow_kernel.cli import main

    program = tmp_path / "prog" / "lent.flow"
    program.parent.mkdir()
    program.write_text(TOOLS + 'print "declared"\n')
    assert main(["run", str(program)]) == 2 and "[F4021]" in capsys.readouterr().err
    (tmp_path / "elsewhere.toml").write_text(stdio_config())
    assert main(["run", str(program), "--config", str(tmp_path / "elsewhere.toml")]) == 0
    assert "declared" in capsys.readouterr().out


def test_stdio_server_lends_tools_annotations_add_approvals_and_errors_go_back(tmp_path: Path) -> None:
    plan = [("search", {"query": "agent"}), ("delete_page", {"name": "intro"}), ("shout", {"text": "hi"}),
            ("broken", {"reason": "x"}), ("loud", {"text": "abc"}), ("search", {"query": 3})]
    s, user = session(tmp_path, stdio_config(), plan, operator="auto-deny")
    outcome = s.run(TOOLS + 'helper("Help")')
    assert outcome.error is None, outcome.to_json()
    found, deleted, shouted, broken, loud, bad_arguments = outcome.result
    assert found == {"pages": ["intro", "tools"]}  # structured content, checked against the signature
    # destructiveHint true, and no annotation at all: both ask; auto-deny says no; the run goes on
    assert deleted["denied"] is True and shouted["denied"] is True and loud["denied"] is True
    assert "error" in broken and "broken" in broken["error"]
    assert "invalid arguments" in bad_arguments["error"]
    asked = [e["data"]["tool"] for e in outcome.events if e["type"] == "approval.requested"]
    assert asked == ["delete_page", "shout", "loud"]  # search and broken say read-only: not asked
    (request,) = user.requests
    assert [t.name for t in request.tools] == ["search", "delete_page", "shout", "broken", "slow", "loud"]
    assert request.tools[0].description == "Finds pages."


def test_an_approved_destructive_tool_runs_and_a_denied_one_does_not(tmp_path: Path) -> None:
    target = tmp_path / "deleted.txt"  # where the server's delete_page writes
    # the child's environment is the SDK's short safe list (no API keys), so the variable is
    # given in the command the person writes
    config = (f'[mcp.docs]\ncommand = ["/usr/bin/env", "DOCS_DELETED={target}", "{PYTHON}", "{DOCS_SERVER}"]\n'
              'timeout_ms = 5000\n')
    denied, _ = session(tmp_path, config, [("delete_page", {"name": "intro"})], operator="auto-deny")
    assert denied.run(TOOLS + 'helper("Help")').result == [
        {"denied": True, "reason": "the operator denied this call of `delete_page` (auto-deny)"}]
    assert not target.exists()
    allowed, _ = session(tmp_path, config, [("delete_page", {"name": "intro"})], operator="auto-approve")
    outcome = allowed.run(TOOLS + 'helper("Help")')
    # structured content, as the server sent it (the SDK wraps a plain return in {"result": …})
    assert outcome.result == [{"result": "deleted intro"}], outcome.to_json()
    assert target.read_text() == "intro\n"
    resolved = [e["data"] for e in outcome.events if e["type"] == "approval.resolved"]
    assert resolved[0]["answer"] is True and resolved[0]["tool"] == "delete_page"


def test_no_approval_is_the_persons_and_annotations_never_remove_a_declared_approval(tmp_path: Path) -> None:
    program = TOOLS.replace('-> { pages: string[] } from mcp "docs"',
                            '-> { pages: string[] } from mcp "docs" requires approval')
    s, _ = session(tmp_path, stdio_config('no_approval = ["shout", "search"]\n'),
                   [("shout", {"text": "hi"}), ("search", {"query": "flow"})], operator="auto-deny")
    outcome = s.run(program + 'helper("Help")')
    shouted, searched = outcome.result
    assert shouted == {"result": "HI"}  # listed by the person: runs unasked though it has no annotations
    assert searched["denied"] is True  # read-only by its annotations, yet the declaration asks


def test_streamable_http_server_lends_tools_and_a_timeout_is_an_error(tmp_path: Path, http_server: str) -> None:
    config = f'[mcp.docs]\nurl = "{http_server}"\ntimeout_ms = 1500\n'
    s, _ = session(tmp_path, config, [("search", {"query": "tools"}), ("slow", {"seconds": 5}),
                                      ("search", {"query": "flow"})])
    outcome = s.run(TOOLS + 'helper("Help")')
    assert outcome.error is None, outcome.to_json()
    found, slow, again = outcome.result
    assert found == {"pages": ["tools"]} and again == {"pages": ["intro"]}
    assert "did not answer within 1500 ms" in slow["error"]


def test_an_http_server_gets_the_token_the_configuration_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    with server_process([PYTHON, str(DOCS_SERVER), "--http", str(port)], port, env={"DOCS_TOKEN": "docs-token-123456789"}):
        url = f"http://127.0.0.1:{port}/mcp"
        config = f'[mcp.docs]\nurl = "{url}"\ntoken_env = "DOCS_CLIENT_TOKEN"\ntimeout_ms = 5000\n'
        monkeypatch.setenv("DOCS_CLIENT_TOKEN", "docs-token-123456789")
        s, _ = session(tmp_path, config, [("search", {"query": "flow"})])
        assert s.run(TOOLS + 'helper("Help")').result == [{"pages": ["intro"]}]
        monkeypatch.setenv("DOCS_CLIENT_TOKEN", "not-the-token-000000")
        s, _ = session(tmp_path, config, [("search", {"query": "flow"})])
        (refused,) = s.run(TOOLS + 'helper("Help")').result
        assert "did not start" in refused["error"]
        monkeypatch.delenv("DOCS_CLIENT_TOKEN")
        s, _ = session(tmp_path, config, [("search", {"query": "flow"})])
        (unset,) = s.run(TOOLS + 'helper("Help")').result
        assert "needs a token in $DOCS_CLIENT_TOKEN" in unset["error"]


def test_a_server_that_does_not_start_or_lacks_the_tool_is_an_error_for_the_model(tmp_path: Path) -> None:
    config = '[mcp.docs]\ncommand = ["/nonexistent/server"]\ntimeout_ms = 3000\n'
    s, _ = session(tmp_path, config, [("search", {"query": "x"})])
    (result,) = s.run(TOOLS + 'helper("Help")').result
    assert "did not start" in result["error"]
    program = TOOLS + 'tool missing(x: string) -> any from mcp "docs"\nagent other { model: "fake/m", tools: [missing], output: any }\n'
    s, _ = session(tmp_path, stdio_config(), [("missing", {"x": "y"})])
    (result,) = s.run(program + 'other("go")').result
    assert "has no tool `missing`" in result["error"] and "search" in result["error"]


def test_a_server_the_configuration_does_not_declare_lends_nothing(tmp_path: Path) -> None:
    s, _ = session(tmp_path, "", [("search", {"query": "x"})])
    outcome = s.run(TOOLS + 'helper("Help")')
    assert outcome.error is not None and outcome.error.code == "capability-violation"
    assert "[mcp.NAME]" in outcome.error.message


def test_an_untrusted_flow_toml_declares_no_server(tmp_path: Path) -> None:
    """A discovered flow.toml is content: its [mcp.*] apply only in a trusted folder."""
    (tmp_path / "flow.toml").write_text(stdio_config())
    s = Session(directory=tmp_path, operator="auto-deny", sandbox=False, journal_dir=None,
                context=RunContext(providers={"fake": ToolUser([("search", {"query": "x"})])}))
    assert s.config.ignored is not None and s.config.mcp == {}
    outcome = s.run(TOOLS + 'helper("Help")')
    assert outcome.error is not None and outcome.error.code == "capability-violation"


def test_calls_are_recorded_and_replayed_without_the_server(tmp_path: Path) -> None:
    plan = [("search", {"query": "agent"}), ("delete_page", {"name": "intro"})]
    recording, _ = session(tmp_path, stdio_config(), plan)
    recording.record("mcp.jsonl")
    recorded = recording.run(TOOLS + 'helper("Help")')
    gone = '[mcp.docs]\ncommand = ["/nonexistent/server"]\n'  # replay must not start it
    replaying, user = session(tmp_path, gone, plan)
    replaying.replay("mcp.jsonl")
    replayed = replaying.run(TOOLS + 'helper("Help")')
    assert replayed.error is None and replayed.result == recorded.result
    assert user.requests == []
    calls = next(e for e in replayed.events if e["type"] == "agent.completed")["data"]["tool_calls"]
    assert [c["tool"] for c in calls] == ["search", "delete_page"]
    assert calls[1]["approval"] == {"answer": False, "by": "replayed"}


def test_probe_lists_tools_and_writes_their_flow_signatures() -> None:
    settings = parse_config({"mcp": {"docs": {"command": [PYTHON, str(DOCS_SERVER)]}}}).mcp["docs"]
    tools = {t.name: t for t in asyncio.run(probe(settings))}
    assert set(tools) == {"search", "delete_page", "shout", "broken", "slow"}
    assert tools["delete_page"].destructive is True and tools["shout"].destructive is None
    signature = flow_signature("docs", tools["search"])
    assert signature.startswith('tool search(query: string) -> ') and signature.endswith('from mcp "docs"')
    assert check(SourceFile("s.flow", signature + "\n"), mcp_servers=["docs"]).ok
    bad = parse_config({"mcp": {"docs": {"command": ["/nonexistent/server"], "timeout_ms": 2000}}}).mcp["docs"]
    with pytest.raises(McpUnavailable, match="did not start"):
        asyncio.run(probe(bad))


@pytest.mark.parametrize("table, message", [
    ({"docs": {"command": ["x"], "url": "http://127.0.0.1:1/mcp"}}, "exactly one of"),
    ({"docs": {}}, "exactly one of"),
    ({"docs": {"url": "file:///etc/passwd"}}, "http:// or https://"),
    ({"docs": {"url": "http://h/mcp", "token": "s3cret"}}, "secrets are not read from files"),
    ({"docs": {"command": "python x.py"}}, "list of strings"),
    ({"docs": {"command": ["x"], "colour": 1}}, "unknown key `mcp.docs.colour`"),
])
def test_bad_server_tables_are_refused_with_the_key(table: dict[str, Any], message: str) -> None:
    from flow_kernel.runtime.config import ConfigError

    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_config({"mcp": table})


@pytest.mark.parametrize("config, message", [
    ({"mcp": ["docs"]}, "`mcp` must be a table of servers ([mcp.NAME])"),
    ({"mcp": {"docs": "python x.py"}}, "`mcp.docs` must be a table"),
    ({"a2a": "http://h"}, "`a2a` must be a table of agents ([a2a.NAME])"),
    ({"a2a": {"rev": ["http://h"]}}, "`a2a.rev` must be a table"),
    ({"a2a": {"rev": {"url": "http://h", "api_key": "s3cret"}}}, "`a2a.rev.api_key`: secrets are not read from files"),
    ({"a2a": {"rev": {"url": "http://h", "colour": 1}}}, "unknown key `a2a.rev.colour` (known: url, token_env, timeout_ms, skill)"),
    ({"a2a": {"rev": {"skill": "review"}}}, "`a2a.rev` needs `url`"),
])
def test_bad_sections_and_agent_tables_are_refused_with_the_key(config: dict[str, Any], message: str) -> None:
    # [mcp.NAME] and [a2a.NAME] are opened by one helper (remote_config._tables): both sides
    from flow_kernel.runtime.config import ConfigError

    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(config)


def test_the_mcp_magic_lists_servers_and_their_tools_and_doctor_starts_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flow_kernel.frontend.magics import MagicError, plan_cell
    from flow_kernel.runtime.doctor import doctor_report

    s, _ = session(tmp_path, stdio_config() + '\n[mcp.gone]\ncommand = ["/nonexistent/server"]\ntimeout_ms = 2000\n', [])
    listing = plan_cell("%mcp\n", s).outputs[0]["text/plain"]
    assert "docs: stdio:" in listing and "5 tools" in listing
    assert 'tool delete_page(name: string) -> { result: string } from mcp "docs"    # asks first' in listing
    assert 'tool search(query: string) -> any from mcp "docs"    # runs unasked' in listing
    assert "gone: not started:" in listing
    with pytest.raises(MagicError, match="no MCP server `nope`"):
        plan_cell("%mcp nope\n", s)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOW_ALLOW", f"config:{tmp_path}")
    rows = {name: (ok, detail) for name, ok, detail in doctor_report() if name.startswith("mcp ")}
    assert rows["mcp docs"][0] is True and rows["mcp gone"][0] is False
