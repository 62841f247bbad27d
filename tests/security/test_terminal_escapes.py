"""Terminal output escapes control characters (issue 15, item 7). A model reply (here a
scripted agent's), a `print`, a log line, an error message or a file name carrying
`ESC ] 0 ; … BEL` (window title), `ESC [ 2 J` (clear screen), cursor moves, the 8-bit CSI
(U+009B) or a bidi override reached `flow run`'s terminal raw. Every path now goes through
`flow_kernel.terminal_text`; these tests run the real `flow run` / `flow check` CLI in a
subprocess and look at the bytes it writes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flow_kernel.terminal_text import json_for_terminal, terminal_safe

ATTACK = r"\u001b]0;pwned\u0007\u001b[2J\u001b[1;1H\u009b31m\u202eevil\u000d\u0008"

PROGRAM = f'''agent echo {{
  model: "scripted"
  output: string
  script: ["{ATTACK} reply"]
}}
agent counter {{
  model: "scripted"
  output: number
  repair: 0
  script: ["{ATTACK} not a number"]
}}
print "print {ATTACK}"
pipeline "p {ATTACK}" {{
  stage "s {ATTACK}" {{
    log "log {ATTACK}"
    verify false : "verify {ATTACK}"
    let reply = echo("prompt {ATTACK}")
    print reply
  }}
}}
"result {ATTACK}"
'''
FAILING = PROGRAM.replace('"result', 'counter("count")\n"result')

# What a terminal would obey: C0 controls but \t \n, DEL, C1 (as characters: U+0080-U+009F
# encoded in UTF-8), bidi controls; and the raw 8-bit bytes, in case something wrote bytes.
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def flow(tmp_path: Path, *args: str, source: str = PROGRAM) -> subprocess.CompletedProcess[bytes]:
    (tmp_path / "prog.flow").write_text(source, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", *args], capture_output=True, cwd=tmp_path,
                          timeout=120)


def obeyed(data: bytes) -> list[str]:
    text = data.decode("utf-8")  # raw C1 bytes (0x80-0x9f alone) would fail here: not UTF-8
    return OBEYED.findall(text)


def test_flow_run_writes_no_terminal_command(tmp_path: Path) -> None:
    out = flow(tmp_path, "run", "prog.flow", "--progress")
    assert out.returncode == 0, out.stderr.decode()
    assert obeyed(out.stdout) == [] and obeyed(out.stderr) == [], (out.stdout, out.stderr)
    stdout, stderr = out.stdout.decode(), out.stderr.decode()
    # shown, visibly: the print, the agent's reply, the result; the progress view's names and log
    assert "print ␛]0;pwned␇␛[2J␛[1;1H\\x9b31m\\u202eevil␍␈" in stdout
    assert "␛]0;pwned␇␛[2J␛[1;1H\\x9b31m\\u202eevil␍␈ reply" in stdout
    assert stdout.endswith("result ␛]0;pwned␇␛[2J␛[1;1H\\x9b31m\\u202eevil␍␈\n")
    assert "· log ␛]0;pwned" in stderr and 'stage "s ␛]0;pwned' in stderr and "verify verify ␛]0;" in stderr


def test_a_failure_carrying_agent_text_writes_no_terminal_command(tmp_path: Path) -> None:
    out = flow(tmp_path, "run", "prog.flow", source=FAILING)
    assert out.returncode == 1, out.stderr.decode()
    assert "error[output-validation]" in out.stderr.decode()
    assert obeyed(out.stdout) == [] and obeyed(out.stderr) == [], (out.stdout, out.stderr)


def test_json_output_is_the_same_value_and_inert(tmp_path: Path) -> None:
    out = flow(tmp_path, "run", "prog.flow", "--format", "json")
    assert out.returncode == 0, out.stderr.decode()
    assert obeyed(out.stdout) == [] and obeyed(out.stderr) == []
    result = json.loads(out.stdout)["result"]  # the exact value, escapes decoded by a JSON reader
    assert result == "result \x1b]0;pwned\x07\x1b[2J\x1b[1;1H\x9b31m\u202eevil\r\b"


def test_diagnostics_and_usage_errors_write_no_terminal_command(tmp_path: Path) -> None:
    (tmp_path / "bad.flow").write_text(f'let x: number = "{ATTACK}"\nundefined_name\n', encoding="utf-8")
    checked = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "check", "bad.flow"],
                             capture_output=True, cwd=tmp_path, timeout=120)
    assert checked.returncode == 1 and b"F2001" in checked.stdout
    assert obeyed(checked.stdout) == [] and obeyed(checked.stderr) == []
    as_json = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "check", "bad.flow", "--format", "json"],
                             capture_output=True, cwd=tmp_path, timeout=120)
    assert obeyed(as_json.stdout) == []
    json.loads(as_json.stdout)
    missing = flow(tmp_path, "run", "nothing\x1b[2J\u009b.flow")
    assert missing.returncode == 2 and obeyed(missing.stderr) == [], missing.stderr


def test_the_one_function() -> None:
    assert terminal_safe("a\tb\nc\x1b[2J\x07\x9b\u202e\x7f") == "a\tb\nc␛[2J␇\\x9b\\u202e␡"
    assert json.loads(json_for_terminal(json.dumps("\x9b\u2066\x7f", ensure_ascii=False))) == "\x9b\u2066\x7f"
    assert terminal_safe("Grüße, 你好, emoji 🙂, Arabic مرحبا") == "Grüße, 你好, emoji 🙂, Arabic مرحبا"


def test_the_reopened_door_reaches_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run in-process with the safe-text function undone: the raw escapes get out."""
    from flow_kernel import cli

    cli.build_parser()  # every command's module imported, so every holder of the function is undone
    for name, module in list(sys.modules.items()):
        if name.startswith("flow_kernel") and hasattr(module, "terminal_safe"):
            monkeypatch.setattr(module, "terminal_safe", lambda text: text)
    (tmp_path / "prog.flow").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    import io

    stdout, stderr = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    assert cli.main(["run", "prog.flow", "--progress"]) == 0
    assert "\x1b]0;pwned\x07" in stdout.getvalue() and "\x9b31m" in stdout.getvalue()
    assert "\x1b[2J" in stderr.getvalue()


def test_flow_trust_names_a_folder_without_obeying_it(tmp_path: Path) -> None:
    folder = tmp_path / "project \x1b]0;pwned\x07\x1b[2J\u009b31m"
    folder.mkdir()
    trusted = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "trust", str(folder)],
                             capture_output=True, cwd=tmp_path, timeout=120)
    listed = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "trust", "--list"],
                            capture_output=True, cwd=tmp_path, timeout=120)
    revoked = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "trust", "--revoke", str(folder)],
                             capture_output=True, cwd=tmp_path, timeout=120)
    assert trusted.returncode == 0 and revoked.returncode == 0, (trusted.stderr, revoked.stderr)
    assert "project ␛]0;pwned␇␛[2J\\x9b31m" in listed.stdout.decode()
    for out in (trusted, listed, revoked):
        assert obeyed(out.stdout) == [] and obeyed(out.stderr) == [], out
