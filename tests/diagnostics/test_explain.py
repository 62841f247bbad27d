"""`flow explain` text, the Markdown sections, and the generated reference page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from flow_kernel.diagnostics import FAMILIES, REGISTRY, lookup
from flow_kernel.diagnostics.explain import (
    REGENERATE,
    docs_markdown,
    explain,
    explain_markdown,
    explain_text,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS_PAGE = ROOT / "docs" / "diagnostics.md"


def test_explain_text_layout() -> None:
    info = REGISTRY["F1001"]
    text = explain("F1001")
    assert text == explain_text(info)
    lines = text.splitlines()
    assert lines[0] == f"F1001 (error): {info.summary}"
    assert info.explanation.strip() in text
    failing = lines.index("Failing example:")
    fixed = lines.index("Fixed:")
    assert failing < fixed
    for block, source in (
        (lines[failing + 2 : fixed - 1], info.failing),
        (lines[fixed + 2 :], info.fixed),
    ):
        assert block == [
            "    " + line if line.strip() else "" for line in source.strip("\n").splitlines()
        ]


def test_explain_unknown_or_sloppy_codes() -> None:
    assert explain("F0000") is None
    assert explain("") is None
    assert explain(" f2001\n") == explain("F2001")
    assert lookup("f2001") is REGISTRY["F2001"]


def test_markdown_section() -> None:
    info = REGISTRY["F2001"]
    md = explain_markdown(info)
    assert md.startswith(f"### F2001\n\n**error** — {info.summary}\n")
    assert "```flow\n" + info.failing.strip("\n") + "\n```" in md
    assert "```flow\n" + info.fixed.strip("\n") + "\n```" in md


def test_page_lists_every_code_once_grouped_by_family() -> None:
    page = docs_markdown()
    headings = re.findall(r"^### (F\d{4})$", page, re.M)
    assert headings == sorted(REGISTRY)
    families = re.findall(r"^## (F\dxxx) — ", page, re.M)
    assert families == [f for f in FAMILIES if any(i.family == f for i in REGISTRY.values())]
    for code in REGISTRY:
        assert page.count(f"| [{code}](#{code.lower()}) |") == 1


def test_docs_page_is_up_to_date() -> None:
    assert DOCS_PAGE.exists(), f"docs/diagnostics.md is missing; generate it with {REGENERATE}"
    current = DOCS_PAGE.read_text(encoding="utf-8")
    assert current == docs_markdown(), (
        f"docs/diagnostics.md is stale; regenerate it with {REGENERATE}"
    )


def _explain_module(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "flow_kernel.diagnostics.explain", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_generator_writes_and_checks(tmp_path: Path) -> None:
    target = tmp_path / "docs" / "diagnostics.md"
    stale = _explain_module("--check", str(target), cwd=tmp_path)
    assert stale.returncode == 1 and "Traceback" not in stale.stderr
    written = _explain_module("--write", str(target), cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert target.read_text(encoding="utf-8") == docs_markdown()
    assert _explain_module("--check", str(target), cwd=tmp_path).returncode == 0
    printed = _explain_module(cwd=tmp_path)
    assert printed.stdout == docs_markdown()
