"""Schemas never fetch (issue 15, item 3).

The door: jsonschema, given no registry, resolves a `$ref` it does not hold by its
deprecated remote retrieval (`urlopen` of any address): a raw `schema { "$ref": "http://…" }`
made the host connect anywhere, `file://…` put a file's content in an error message and the
journal, and a bypassed sandbox could send such a schema in an `agent` request's options.

What shuts it: the checker refuses a reference that leaves the schema (F3016); the host
builds every validator with a `referencing` registry that retrieves nothing
(`validation.schema_validator`); and it validates agent output with a schema it compiled
from the checked program, never one from the request. Each attempt below is made for real
(a loopback listener, a real file, a real sandbox); the reopened door shows each can fail."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flow_kernel.lang import check_decls
from flow_kernel.runtime.agents import AgentPipeline, pipeline
from flow_kernel.runtime.durable.journal import Journal, read_journal
from flow_kernel.runtime.session import CompileError, Session
from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.security.door_helpers import Listener, listener
from tests.security.test_flow_doors import Recorder, ask_host, host_for

__all__ = ["listener", "sandbox"]

ROOT = Path(__file__).resolve().parents[2]
HOSTNAME = Path("/etc/hostname")


@pytest.fixture()
def secret(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A JSON file outside any program, whose content an error message would quote."""
    marker = f"SECRET-{uuid.uuid4().hex}"
    path = tmp_path / "outside" / "secret.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"enum": [marker]}), encoding="utf-8")
    yield path, marker


def _program(listener: Listener, secret: Path) -> str:
    return (f'type Remote = schema {{ "$ref": "http://127.0.0.1:{listener.port}/schema.json" }}\n'
            f'type Host = schema {{ "$ref": "file://{HOSTNAME}" }}\n'
            'type Local = schema { "type": "object", "properties": {\n'
            f'  "secret": {{ "$ref": "file://{secret}" }} }} }}\n'
            'agent a { model: "scripted", output: Remote, script: ["ok"] }\n'
            'agent b { model: "scripted", output: Local, script: [{ secret: "y" }] }\n'
            'agent c { model: "scripted", output: Host, script: ["x"] }\n'
            'print a("go")\nprint b("go")\nprint c("go")\n')


def _hostname() -> str:
    text = HOSTNAME.read_text(encoding="utf-8").strip() if HOSTNAME.exists() else ""
    return text if len(text) >= 6 else ""  # too short to look for without false alarms


# -- at check time: F3016, nothing fetched -----------------------------------------------------

def test_flow_check_refuses_remote_references(tmp_path: Path, listener: Listener,
                                              secret: tuple[Path, str]) -> None:
    program = tmp_path / "remote.flow"
    program.write_text(_program(listener, secret[0]), encoding="utf-8")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "FLOW_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "check", "--format", "json", str(program)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)  # `flow check`: 1 = errors found
    found = [d for d in json.loads(proc.stdout)["diagnostics"] if d["code"] == "F3016"]
    assert len(found) == 3, proc.stdout
    assert {d["span"]["start"]["line"] for d in found} == {1, 2, 4}  # at each `$ref`, not the whole type
    assert "nothing is fetched" in found[0]["message"]
    assert listener.settle() == []
    assert secret[1] not in proc.stdout + proc.stderr


def test_a_session_refuses_them_and_runs_nothing(tmp_path: Path, listener: Listener,
                                                 secret: tuple[Path, str]) -> None:
    session = Session(directory=tmp_path, sandbox=False)
    result = session.check(_program(listener, secret[0]))
    assert [d.code for d in result.errors] == ["F3016"] * 3
    with pytest.raises(CompileError):
        asyncio.run(session.run_async(_program(listener, secret[0])))
    assert listener.settle() == []


def test_the_reopened_door_fetches_at_run_time(tmp_path: Path, listener: Listener, secret: tuple[Path, str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The old behaviour: no reference check, and a plain validator (deprecated remote retrieval).
    monkeypatch.setattr(check_decls, "schema_problems", lambda schema: [])
    monkeypatch.setattr(pipeline, "schema_validator", jsonschema.Draft202012Validator)
    journal = tmp_path / ".flow" / "runs"

    async def run() -> Any:
        session = Session(directory=tmp_path, journal_dir=journal)
        try:
            first = await session.run_async(_program(listener, secret[0]))
            second = await session.run_async(_program(listener, secret[0]).replace("print a(\"go\")\n", ""))
            return first, second
        finally:
            await session.aclose()

    with pytest.warns(DeprecationWarning):  # jsonschema's own warning about remote retrieval
        first, second = asyncio.run(run())
    assert first.error is not None and listener.settle(), first.to_json()  # the host connected
    assert second.error is not None and secret[1] in second.error.message  # the file, in the error
    assert secret[1] in (journal / f"{second.run_id}.jsonl").read_text(encoding="utf-8")  # and the journal


# -- at run time: a bypassed sandbox's forged request -----------------------------------------

FORGER = 'agent a { model: "rec/m", output: string }\n1'
BASE = {"agent": "a", "team": None, "member": None, "prompt": "p", "expect": False, "run": "r-compromised",
        "span": "s1", "stage": None, "frame": "f1"}


def forge(box: Sandbox, tmp_path: Path, listener: Listener, secret: Path) -> tuple[list[Any], str]:
    journal = Journal(tmp_path / ".flow" / "runs", "r-compromised")
    target = host_for(FORGER, tmp_path, providers={"rec": Recorder()}, sinks=[journal])
    target.emit({"type": "workflow.started", "data": {"name": "<cell>", "frame": "f1", "parent": None, "limits": {}}})
    schemas = [{"$ref": f"http://127.0.0.1:{listener.port}/schema.json"},
               {"$ref": f"file://{HOSTNAME}"},
               {"$ref": f"file://{secret}"},
               {"type": "string", "pattern": "^x", "$defs": {"s": {"$ref": f"file://{secret}"}},
                "anyOf": [{"$ref": "#/$defs/s"}]}]
    requests = [("agent", {**BASE, "call": f"c{i}", "options": {"schema": schema, "label": f"l{i}"}})
                for i, schema in enumerate(schemas)]
    try:
        results = ask_host(box, target, requests)
    finally:
        journal.close()
    return results, journal.path.read_text(encoding="utf-8")


def test_a_forged_schema_from_the_sandbox_fetches_nothing(sandbox: Sandbox, tmp_path: Path, listener: Listener,
                                                          secret: tuple[Path, str]) -> None:
    results, journal = forge(sandbox, tmp_path, listener, secret[0])
    # Each call is validated against what `a` declares (a string): "ok" passes.
    assert results == [["ok", "ok"]] * 4, results
    assert listener.settle() == []
    everything = json.dumps(results) + journal
    assert secret[1] not in everything
    if _hostname():
        assert _hostname() not in everything
    assert read_journal(tmp_path / ".flow" / "runs" / "r-compromised.jsonl")


def test_the_reopened_door_lets_a_forged_schema_fetch(sandbox: Sandbox, tmp_path: Path, listener: Listener,
                                                      secret: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The old behaviour: the request's schema, with a plain validator.
    monkeypatch.setattr(AgentPipeline, "_output_schema", lambda self, name, sent: (sent or {}, None))
    monkeypatch.setattr(pipeline, "schema_validator", jsonschema.Draft202012Validator)
    with pytest.warns(DeprecationWarning):
        results, journal = forge(sandbox, tmp_path, listener, secret[0])
    assert listener.settle(), results  # the host connected to the address the sandbox chose
    assert results[2][0] == "error" and secret[1] in results[2][2], results  # the file came back
    assert secret[1] in journal
