"""The `flow` command line: exit codes, output formats, and messages instead of tracebacks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from flow_kernel.cli import main
from tests.diagnostics.test_render import DIAGNOSTICS_JSON

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "triage.flow"
HEADER = re.compile(
    r"^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+) \[(?P<code>F\d{4})\] (?P<sev>error|warning|info): .+$"
)

WARN_ONLY = """\
workflow w() -> int {
  let unused = 1
  return 2
}
"""
WITH_ERROR = """\
workflow go(t: string) -> string {
  let greeting = "Hello"
  return greeting + tt
}
"""


def run_flow(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`python -m flow_kernel.cli ARGS` in a fresh interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "flow_kernel.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def flow(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`flow ARGS` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- explain ----------------------------------------------------------------------


def test_explain_as_a_module() -> None:
    proc = run_flow("explain", "F1001")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "F1001 (error): unexpected character"
    assert "Failing example:" in lines and "Fixed:" in lines
    failing = lines[lines.index("Failing example:") + 2]
    assert failing.startswith("    ") and failing.strip()
    assert proc.stderr == ""


def test_explain_accepts_lower_case(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = flow(capsys, "explain", " f2001 ")
    assert code == 0
    assert out.startswith("F2001 (error): ")


def test_explain_unknown_code_is_a_message() -> None:
    proc = run_flow("explain", "F9999")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "unknown diagnostic code `F9999`" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_explain_suggests_close_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = flow(capsys, "explain", "F200")
    assert code == 1
    assert "did you mean `F2001`, `F2002` or `F2003`?" in err


# --- check ------------------------------------------------------------------------


def test_check_the_complete_example_is_clean() -> None:
    proc = run_flow("check", "examples/triage.flow")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "Checked 1 file: no problems found.\n"


def test_check_with_errors_exits_1(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(workdir / "bad.flow", WITH_ERROR)
    code, out, err = flow(capsys, "check", "bad.flow")
    assert code == 1
    assert err == ""
    first = HEADER.match(out.splitlines()[0])
    assert first is not None, out
    assert first.group("file", "line", "col", "code", "sev") == (
        "bad.flow",
        "3",
        "21",
        "F2001",
        "error",
    )
    assert "\x1b[" not in out  # not a terminal: no colour
    assert "  3 |   return greeting + tt\n    |                     ^^\n" in out
    assert out.endswith("Checked 1 file: 1 error.\n")


def test_check_warnings_only_exits_0(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(workdir / "warn.flow", WARN_ONLY)
    code, out, _ = flow(capsys, "check", "warn.flow")
    assert code == 0
    assert out.startswith("warn.flow:2:7 [F7001] warning: ")
    assert out.endswith("Checked 1 file: 1 warning.\n")


def test_check_json_format(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(workdir / "bad.flow", WITH_ERROR)
    write(workdir / "warn.flow", WARN_ONLY)
    code, out, _ = flow(capsys, "check", "--format", "json", "bad.flow", "warn.flow")
    assert code == 1
    doc = json.loads(out)
    Draft202012Validator(DIAGNOSTICS_JSON).validate(doc)
    found = [(d["file"], d["code"], d["severity"]) for d in doc["diagnostics"]]
    assert found == [("bad.flow", "F2001", "error"), ("warn.flow", "F7001", "warning")]
    assert doc["diagnostics"][0]["span"] == {
        "start": {"line": 3, "column": 21},
        "end": {"line": 3, "column": 23},
    }


def test_check_json_of_a_clean_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = flow(capsys, "check", str(EXAMPLE), "--format", "json")
    assert code == 0
    assert json.loads(out) == {"diagnostics": []}


def test_missing_file_is_a_usage_error() -> None:
    proc = run_flow("check", "no/such.flow")
    assert proc.returncode == 2
    assert "flow check: error: no/such.flow: no such file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_file_does_not_stop_the_others(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(workdir / "bad.flow", WITH_ERROR)
    code, out, err = flow(capsys, "check", "gone.flow", "bad.flow")
    assert code == 2
    assert "gone.flow: no such file" in err
    assert "[F2001]" in out


def test_directory_and_undecodable_file(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "dir").mkdir()
    (workdir / "latin1.flow").write_bytes(b'print "caf\xe9"\n')
    code, _, err = flow(capsys, "check", "dir", "latin1.flow")
    assert code == 2
    assert "dir: is a directory" in err
    assert "latin1.flow: not valid UTF-8" in err


def test_use_is_relative_to_the_importing_file(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(workdir / "lib" / "types.flow", 'use "more.flow"\ntype Ticket = { id: Id }\n')
    write(workdir / "lib" / "more.flow", "type Id = strin\n")
    write(
        workdir / "a.flow",
        'use "lib/types.flow"\nworkflow a(t: Ticket) -> string {\n  return t.id\n}\n',
    )
    write(
        workdir / "b.flow",
        'use "lib/types.flow"\nworkflow b(t: Ticket) -> string {\n  return t.id\n}\n',
    )
    code, out, _ = flow(capsys, "check", "a.flow", "b.flow")
    assert code == 1
    headers = [line for line in out.splitlines() if HEADER.match(line)]
    # the library's mistake, reached from two files, is reported once, by its own path
    assert headers == [f"lib{os.sep}more.flow:1:11 [F2007] error: unknown type `strin`"]


def test_files_outside_the_working_directory_keep_absolute_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = write(tmp_path / "outside" / "bad.flow", WITH_ERROR)
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    code, out, _ = flow(capsys, "check", "--format", "json", str(bad))
    assert code == 1
    assert json.loads(out)["diagnostics"][0]["file"] == str(bad.resolve())


# --- schema -----------------------------------------------------------------------


def test_schema_of_a_type(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = flow(capsys, "schema", str(EXAMPLE), "Ticket")
    assert code == 0
    schema = json.loads(out)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"id": "T1", "title": "Reset my password"})
    assert not validator.is_valid({"id": "T1", "title": ""})


def test_schema_of_a_workflow(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = flow(capsys, "schema", str(EXAMPLE), "triage_all")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"input", "output"}
    for part in doc.values():
        Draft202012Validator.check_schema(part)
    assert Draft202012Validator(doc["input"]).is_valid({"tickets": [{"id": "T1", "title": "x"}]})


def test_schema_of_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = flow(capsys, "schema", str(EXAMPLE), "Tiket")
    assert code == 1
    assert out == ""
    assert "`Tiket` is not a type or workflow" in err and "did you mean `Ticket`?" in err


def test_schema_of_a_file_with_errors(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(workdir / "bad.flow", WITH_ERROR)
    code, out, err = flow(capsys, "schema", "bad.flow", "go")
    assert code == 1
    assert out == ""
    assert "bad.flow:3:21 [F2001] error:" in err
    assert "bad.flow has errors" in err


def test_schema_of_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = flow(capsys, "schema", "nope.flow", "T")
    assert code == 2
    assert "nope.flow: no such file" in err


# --- usage ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [[], ["frobnicate"], ["check"], ["check", "--format", "xml", "a.flow"], ["schema", "a.flow"]],
)
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = flow(capsys, *args)
    assert code == 2
    assert "usage: flow" in err
    assert "Traceback" not in out + err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = flow(capsys, "--help")
    assert code == 0
    for command in ("check", "explain", "schema"):
        assert command in out


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("flow")
    if not script.exists():
        pytest.skip("the package is not installed in this interpreter's environment")
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == "flow 0.1.0"
