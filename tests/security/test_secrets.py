"""API keys in the host environment never leave the host side that needs them.

With OPENAI_API_KEY and ANTHROPIC_API_KEY set to unique markers: every gallery notebook
(globbed, so new ones are covered) runs in a temporary copy through nbclient in its own
kernel, and real provider calls (the official clients against a loopback server, one that
repeats the key in its error) run through the sandbox with a journal, a cassette and
debug traces. The markers must appear in no notebook output, kernel log, journal,
cassette, event, trace, error or sandbox process environment — while the server did
receive them (so the test is not vacuous)."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from flow_kernel import Session
from flow_kernel.runtime.context import RunContext
from tests.reliability.fault_helpers import FakeModel, sandbox_processes

GALLERY = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(GALLERY.glob("[0-9][0-9]-*.ipynb"))
OPENAI_MARK = f"sk-openai-marker-{uuid.uuid4().hex}"
ANTHROPIC_MARK = f"sk-ant-marker-{uuid.uuid4().hex}"
MARKS = (OPENAI_MARK, ANTHROPIC_MARK)


@pytest.fixture()
def marked_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_MARK)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_MARK)


def leaks(text: str) -> list[str]:
    """The markers in `text`, also as their distinctive halves (a key shortened or split)."""
    found = []
    for mark in MARKS:
        for piece in (mark, mark[-32:], mark[:-16]):
            if piece in text:
                found.append(piece)
    return found


def files_text(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
            for p in root.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json", ".ipynb", ".log", ".txt", ".toml")}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_key_leaves_the_host_in_a_gallery_notebook(path: Path, tmp_path: Path, marked_env: None,
                                                      trust_folder: Callable[[Path], None]) -> None:
    work = tmp_path / "notebooks"
    shutil.copytree(GALLERY, work, ignore=shutil.ignore_patterns("lessons", ".flow", "__pycache__", ".ipynb_checkpoints"))
    trust_folder(work)  # as scripts/gallery does: the lessons' %tools, %allow run, auto-approve run
    copy = work / path.name
    nb = nbformat.read(copy, as_version=4)
    kernel_name = nb.metadata["kernelspec"]["name"]
    log = tmp_path / "kernel.log"
    with log.open("w") as out:
        km = KernelManager(kernel_name=kernel_name)
        km.start_kernel(cwd=str(work), stdout=out, stderr=out)  # the environment is this process's: keys set
        environments: list[bytes] = []
        try:
            client = NotebookClient(nb, km=km, timeout=300, allow_errors=True, resources={"metadata": {"path": str(work)}})
            client.on_cell_executed = lambda **kw: environments.extend(_sandbox_environments(km))
            client.execute()
        finally:
            km.shutdown_kernel(now=True)
    assert environments, "the notebook should have run a sandbox"
    for environ in environments:
        assert not leaks(environ.decode(errors="replace")), "a sandbox process has a key in its environment"
    outputs = json.dumps([cell.get("outputs", []) for cell in nb.cells], ensure_ascii=False)
    assert not leaks(outputs), "a notebook output shows a key"
    assert not leaks(log.read_text(errors="replace")), "the kernel log shows a key"
    for name, text in files_text(work).items():  # journals, cassettes, anything the run wrote
        assert not leaks(text), f"{name} holds a key"


def _sandbox_environments(km: KernelManager) -> list[bytes]:
    out = []
    for process in sandbox_processes(km):
        try:
            out.append(Path(f"/proc/{process.pid}/environ").read_bytes())
        except OSError:  # it ended meanwhile
            continue
    return out


# -- real provider calls ------------------------------------------------------------------------

@pytest.fixture()
def model() -> Iterator[FakeModel]:
    server = FakeModel()
    yield server
    server.close()


def test_no_key_leaves_the_host_in_provider_calls(tmp_path: Path, marked_env: None, model: FakeModel,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", model.url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url.removesuffix("/v1"))
    traces: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    session = Session(directory=tmp_path, record="calls.jsonl", operator="auto-approve",
                      context=RunContext(debug=True, trace_sinks=[traces.append], sinks=[events.append]))
    cells = ['agent o { model: "openai/ok-1" }\no("hello")',
             'agent oe { model: "openai/echo-1" }\noe("hello")',
             'agent ae { model: "anthropic/echo-2" }\nae("hello")',
             'agent og { model: "openai/garbage-3" }\nog("hello")',
             'agent ag { model: "anthropic/broken-4" }\nag("hello")']
    results = []

    async def go() -> None:
        async with session:
            for cell in cells:
                results.append((await session.run_async(cell)).to_json())

    asyncio.run(go())
    assert results[0]["ok"] and results[0]["result"] == "ok", results[0]
    assert all(not r["ok"] for r in results[1:]), results
    sent = json.dumps(model.headers)
    assert OPENAI_MARK in sent and ANTHROPIC_MARK in sent  # the server did get the keys
    assert "Incorrect API key provided" in json.dumps(results)  # the echoing errors arrived ...
    assert not leaks(json.dumps(results)), results  # ... without the key
    assert not leaks(json.dumps(events, default=str)), "an event holds a key"
    assert not leaks(json.dumps(traces, default=str)), "a trace holds a key"
    for name, text in files_text(tmp_path).items():
        assert not leaks(text), f"{name} holds a key"
