"""The kernel spec: in the wheel as shared data (pip install is enough), and installable
elsewhere with `python -m flow_kernel install`."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_install_into_a_prefix(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "flow_kernel", "install", "--prefix", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    spec = json.loads((tmp_path / "share" / "jupyter" / "kernels" / "flow" / "kernel.json").read_text())
    assert spec["language"] == "flow" and spec["interrupt_mode"] == "message"
    assert spec["argv"][1:3] == ["-m", "flow_kernel"] and "{connection_file}" in spec["argv"]


def test_the_installed_environment_finds_the_flow_kernel() -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("flow")
    assert spec.language == "flow" and spec.display_name == "Flow"


def test_the_wheel_carries_the_kernel_spec(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("flow_kernel-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".data/data/share/jupyter/kernels/flow/kernel.json") for n in names)
