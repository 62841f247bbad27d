"""The README's first screen stays true: its two commands are the ones CI and a new user
run, its Flow example checks clean, and every local file it links to exists. Binder's
files point at the project's own pins."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from flow_kernel import SourceFile, check

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _bash_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", README, re.S)]


def test_the_first_two_commands_set_up_and_open_the_gallery_and_run_the_tests() -> None:
    setup, tests = _bash_blocks()[:2]
    assert setup == "bash scripts/setup && bash scripts/gallery"
    gallery = (ROOT / "scripts/gallery").read_text(encoding="utf-8")
    assert ".venv/bin/jupyter lab" in gallery and "notebooks/01-hello-flow.ipynb" in gallery
    assert (ROOT / "notebooks/01-hello-flow.ipynb").is_file()
    assert os.access(ROOT / "scripts/setup", os.X_OK) and os.access(ROOT / "scripts/gallery", os.X_OK)
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").strip().splitlines()
    assert "bash scripts/setup" in ci and ci[-1] == tests  # CI runs the README's test command


def test_the_flow_example_checks_clean() -> None:
    (example,) = re.findall(r"```flow\n(.*?)```", README, re.S)
    result = check(SourceFile("README.md", example))
    assert result.ok and not result.diagnostics, [d.message for d in result.diagnostics]


def test_local_links_exist() -> None:
    links = re.findall(r"\]\(([^)#]+?)(?:#[^)]*)?\)", README)
    local = [link for link in links if not re.match(r"https?:", link)]
    assert len(local) > 15
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing


def test_binder_installs_the_project_pins() -> None:
    assert (ROOT / "binder/requirements.txt").read_text(encoding="utf-8").splitlines()[-1] == "-r ../requirements-dev.txt"
    post_build = ROOT / "binder/postBuild"
    assert os.access(post_build, os.X_OK)
    subprocess.run(["bash", "-n", str(post_build)], check=True)  # it parses
    text = post_build.read_text(encoding="utf-8")
    assert "npm ci" in text and "flow_kernel install --sys-prefix" in text
    # repo2docker's default Python is older than the package's minimum (pyproject: >=3.11)
    assert (ROOT / "binder/runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"
