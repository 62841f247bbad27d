"""`flow run` and `flow doctor` through the real sandbox (runtime.md §8)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELLO = ROOT / "examples" / "hello.flow"
TRIAGE = ROOT / "examples" / "triage.flow"


def flow(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_run_top_level_prints_and_result() -> None:
    out = flow("run", str(HELLO))
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Greeting 2 people\nHello, Ada!\n"


def test_run_workflow_json() -> None:
    out = flow("run", str(HELLO), "greet", "--input", '{"name": "Grace"}', "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["ok"] is True and doc["result"] == {"to": "Grace", "text": "Hello, Grace!"}
    assert doc["run"].startswith("r")


def test_run_input_from_file(tmp_path: Path) -> None:
    data = tmp_path / "in.json"
    data.write_text('{"name": "Ada"}')
    out = flow("run", str(HELLO), "greet", "--input", f"@{data}", "--format", "json")
    assert json.loads(out.stdout)["result"]["to"] == "Ada"


def test_print_goes_to_stderr_in_json_mode() -> None:
    out = flow("run", str(HELLO), "--format", "json")
    assert out.returncode == 0
    assert json.loads(out.stdout) == {"ok": True, "result": "Hello, Ada!", "run": json.loads(out.stdout)["run"]}
    assert "Greeting 2 people" in out.stderr


def test_input_validation_error_exit_1() -> None:
    out = flow("run", str(HELLO), "greet", "--input", '{"name": 3}', "--format", "json")
    assert out.returncode == 1
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "workflow-input-validation"
    assert set(error) == {"code", "message", "stage", "span", "details"}


def test_runtime_error_has_span_and_exit_1() -> None:
    out = flow("run", str(TRIAGE), "--format", "json")  # headless: no operator for `approve`
    assert out.returncode == 1
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "operator-unavailable"
    assert error["span"]["file"] == "examples/triage.flow" and error["span"]["line"] == 30
    human = flow("run", str(TRIAGE))
    assert human.returncode == 1
    assert "error[operator-unavailable]" in human.stderr and "examples/triage.flow:30:14" in human.stderr
    assert "approve" in human.stderr  # the source line is shown


def test_operator_policy() -> None:
    out = flow("run", str(TRIAGE), "--operator", "auto-approve", "--format", "json")
    assert out.returncode == 0, out.stdout
    assert [t["id"] for t in json.loads(out.stdout)["result"]] == ["T1", "T2"]


def test_allow_run(tmp_path: Path) -> None:
    src = tmp_path / "p.flow"
    src.write_text('let r = run "echo" ["hi", 3]\nr.stdout')
    denied = flow("run", str(src), "--format", "json")
    assert json.loads(denied.stdout)["error"]["code"] == "capability-violation"
    allowed = flow("run", str(src), "--allow-run", "echo", "--format", "json")
    assert json.loads(allowed.stdout)["result"] == "hi 3\n"
    src.write_text('let r = run "false" []\nr.stdout')
    failed = flow("run", str(src), "--allow-run", "false", "--format", "json")
    assert json.loads(failed.stdout)["error"]["code"] == "process"


def test_compile_errors_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "bad.flow"
    src.write_text("let x = nope\n")
    out = flow("run", str(src))
    assert out.returncode == 2
    assert "[F2001]" in out.stderr


def test_usage_errors() -> None:
    assert flow("run", str(HELLO), "missing").returncode == 2
    assert flow("run", str(HELLO), "greet", "--input", "{bad").returncode == 2
    assert flow("run", str(HELLO), "--operator", "sometimes").returncode == 2


def test_doctor() -> None:
    out = flow("doctor")
    assert out.returncode == 0, out.stdout
    for name in ("node", "pyodide", "snapshot", "network", "providers"):
        assert name in out.stdout


def test_live_progress_on_stderr_and_flow_toml_beside_the_file(tmp_path: Path,
                                                               trust_folder: Callable[[Path], None]) -> None:
    (tmp_path / "flow.toml").write_text('default_model = "mock"\noperator = "auto-approve"\n', encoding="utf-8")
    trust_folder(tmp_path)  # `flow trust`: only a trusted folder's flow.toml applies
    program = tmp_path / "p.flow"
    program.write_text('agent a { model: "default", output: { n: int } }\nstage "one" {\n'
                       '  let ok = approve "go?"\n  let r = a("hi")\n  print ok\n}\n', encoding="utf-8")
    out = flow("run", str(program), "--progress", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "true\n"
    lines = out.stderr.splitlines()
    assert lines[0] == "▸ workflow <cell>" and lines[1] == '  ▸ stage "one"'
    assert "    ? go?" in lines and "      → yes (auto-approve)" in lines
    assert any(line.startswith("    ✓ agent a") for line in lines)


def test_a_bad_flow_toml_is_a_usage_error(tmp_path: Path, trust_folder: Callable[[Path], None]) -> None:
    (tmp_path / "flow.toml").write_text('[providers.openai]\napi_key = "sk-secret"\n', encoding="utf-8")
    trust_folder(tmp_path)
    program = tmp_path / "p.flow"
    program.write_text("print 1\n", encoding="utf-8")
    out = flow("run", str(program), cwd=tmp_path)
    assert out.returncode == 2 and "keys are not read from files" in out.stderr and "sk-secret" not in out.stderr


def test_a_failure_report_names_the_call_path_and_what_was_done(tmp_path: Path) -> None:
    (tmp_path / "month.flow").write_text('''agent writer { model: "scripted", script: ["draft"] }
agent checker { model: "scripted", output: int, repair: 0, script: ["nope"] }
pipeline "month-end" {
  stage "draft" {
    let d = writer("Write it")
    publish "draft.txt" d
  }
  stage "check" {
    let ok = approve "Check the draft?"
    let n = checker("Count the words: ${d}")
  }
}
''')
    out = flow("run", "month.flow", "--operator", "auto-approve", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr.splitlines()[-3:] == [
        '   = in stage "check"',
        '   = call path: workflow <cell> → pipeline "month-end" → stage "check" → agent checker',
        '   = done before the failure: 1 agent call answered; published draft.txt; "Check the draft?" answered yes']
