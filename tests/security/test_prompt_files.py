"""A prompt file is read like a `use`d file: inside the notebook's (or program's) folder,
or where the person granted it. A stranger's notebook that names `file("../secret")` must
not put that file's text into a prompt sent to a provider (nor into a diagnostic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.policy import trust as trust_module
from flow_kernel.runtime.session import Session

SECRET = "sk-live-do-not-send-4242"


def _program(path: str) -> str:
    return f'agent leak {{ model: "scripted", instructions: file("{path}"), script: ["ok"] }}\nprint leak("hi")\n'


def _stranger(tmp_path: Path) -> Path:
    folder = tmp_path / "nb"
    folder.mkdir()
    (tmp_path / "secret.md").write_text(f"token: {SECRET}\n", encoding="utf-8")
    (folder / "escape").symlink_to(tmp_path)
    (folder / "inside.md").write_text("Be kind.", encoding="utf-8")
    return folder


def _session(folder: Path) -> Session:
    return Session(directory=folder, sandbox=False, journal_dir=None, context=RunContext(debug=True))


def test_a_prompt_file_outside_the_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _stranger(tmp_path)
    session = _session(folder)
    for path in ("../secret.md", str(tmp_path / "secret.md"), "escape/secret.md"):
        result = session.check(_program(path))
        assert [d.code for d in result.errors] == ["F2011"], path
        assert "not readable here" in result.errors[0].message and "--allow-path" in result.errors[0].message
        assert SECRET not in str([(d.message, d.hints) for d in result.diagnostics])
        outcome_error = None
        try:
            session.run(_program(path))
        except Exception as exc:  # CompileError: nothing runs, nothing is sent
            outcome_error = exc
        assert outcome_error is not None and SECRET not in str(outcome_error)
    assert session.run(_program("inside.md")).ok  # inside the folder: no ceremony

    # the person's grant (FLOW_ALLOW path:…) lets it be read
    monkeypatch.setenv("FLOW_ALLOW", f"path:{tmp_path / 'secret.md'}")
    granted = _session(folder).run(_program("../secret.md"))
    assert granted.ok and SECRET in granted.traces[0]["prompt"]["system"]
    monkeypatch.delenv("FLOW_ALLOW")

    # reopened door: the loader without the trust guard sends the secret to the provider
    monkeypatch.setattr(trust_module.Trust, "use_guard", lambda self: (lambda name: None))
    opened = _session(folder).run(_program("../secret.md"))
    assert opened.ok and SECRET in opened.traces[0]["prompt"]["system"]


def test_flow_check_does_not_read_a_prompt_file_outside_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from flow_kernel.cli import main

    folder = _stranger(tmp_path)
    (folder / "p.flow").write_text(_program("../secret.md"), encoding="utf-8")
    monkeypatch.chdir(folder)
    assert main(["check", "p.flow"]) == 1
    out = capsys.readouterr().out
    assert "F2011" in out and SECRET not in out
    assert main(["check", "p.flow", "--allow-path", str(tmp_path / "secret.md")]) == 0
    capsys.readouterr()
    # reopened door: a loader with no guard reads it (and the file checks clean)
    monkeypatch.setattr(trust_module.Trust, "use_guard", lambda self: (lambda name: None))
    assert main(["check", "p.flow"]) == 0
