"""requirements-dev.txt is a hashed lock (issue 15, item 7): scripts/setup installs it with
`pip install --require-hashes`, and scripts/lock writes the hashes. The rewriting is
tested here without the network (the digests are given); the real run against PyPI is
scripts/lock itself."""

from __future__ import annotations

import importlib.util
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_lock() -> ModuleType:
    loader = SourceFileLoader("flow_lock_script", str(ROOT / "scripts" / "lock"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


LOCK = load_lock()

BEFORE = """# Header comment
# Tools
pytest==9.2.0
Pygments==2.21.0 \\
    --hash=sha256:{old}

# Runtime
jsonschema==4.26.0
"""


def test_lock_rewrites_every_pin_with_its_digests_and_is_idempotent(monkeypatch: pytest.MonkeyPatch) -> None:
    digests = {("pytest", "9.2.0"): ["a" * 64, "b" * 64], ("Pygments", "2.21.0"): ["c" * 64],
               ("jsonschema", "4.26.0"): ["d" * 64]}
    monkeypatch.setattr(LOCK, "hashes", lambda name, version: digests[(name, version)])
    once = LOCK.locked_text(BEFORE.format(old="0" * 64))
    assert once == (
        "# Header comment\n# Tools\n"
        f"pytest==9.2.0 \\\n    --hash=sha256:{'a' * 64} \\\n    --hash=sha256:{'b' * 64}\n"
        f"Pygments==2.21.0 \\\n    --hash=sha256:{'c' * 64}\n"
        "\n# Runtime\n"
        f"jsonschema==4.26.0 \\\n    --hash=sha256:{'d' * 64}\n")
    assert LOCK.locked_text(once) == once


@pytest.mark.parametrize(("filename", "kept"), [
    ("pkg-1.0.tar.gz", True),
    ("pkg-1.0-py3-none-any.whl", True),
    ("pkg-1.0-py2.py3-none-any.whl", True),
    ("pkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", True),
    ("pkg-1.0-cp313t-cp313t-win_amd64.whl", True),
    ("pkg-1.0-cp39-abi3-macosx_11_0_arm64.whl", True),
    ("pkg-1.0-cp310-cp310-manylinux_2_17_x86_64.whl", False),
    ("pkg-1.0-pp310-pypy310_pp73-manylinux_2_17_x86_64.whl", False),
    ("pkg-1.0-py2-none-any.whl", False),
])
def test_lock_keeps_the_files_a_cpython_311_or_newer_can_install(filename: str, kept: bool) -> None:
    assert LOCK.installable(filename) is kept


def test_versions_are_read_from_file_names() -> None:
    assert LOCK.version_of("python-dateutil-4.0.0.tar.gz") == "4.0.0"
    assert LOCK.version_of("opentelemetry_semantic_conventions-0.66b2-py3-none-any.whl") == "0.66b2"


def test_every_pin_in_requirements_dev_carries_its_hashes() -> None:
    """scripts/setup installs with --require-hashes: a pin without hashes (added without
    running scripts/lock) would stop it. Run `python3 scripts/lock` after changing a pin."""
    lines = (ROOT / "requirements-dev.txt").read_text().splitlines()
    unhashed = []
    for number, line in enumerate(lines):
        if LOCK.PIN.match(line):
            following = lines[number + 1] if number + 1 < len(lines) else ""
            if not (line.rstrip().endswith("\\") and following.strip().startswith("--hash=sha256:")):
                unhashed.append(line.strip())
    assert LOCK.pins(lines), "no pins found"
    assert not unhashed, f"pins without hashes (run python3 scripts/lock): {unhashed}"
