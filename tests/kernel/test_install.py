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
    installed = {p.name for p in (tmp_path / "share" / "jupyter" / "kernels" / "flow").iterdir()}
    assert installed >= {"logo-32x32.png", "logo-64x64.png", "logo-svg.svg"}  # Jupyter serves logo-* beside the name


def test_the_logos_are_the_sizes_their_names_say() -> None:
    spec = ROOT / "flow_kernel" / "kernel" / "spec"
    for size in (32, 64):
        header = (spec / f"logo-{size}x{size}.png").read_bytes()[:24]
        assert header[:8] == b"\x89PNG\r\n\x1a\n"
        assert (int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")) == (size, size)
    assert "<svg" in (spec / "logo-svg.svg").read_text(encoding="utf-8")


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
    assert any(n.endswith(".data/data/share/jupyter/kernels/flow/logo-64x64.png") for n in names)
    # The run view's front end (built from widgets/) ships inside the package: nothing fetched.
    assert {"flow_kernel/views/static/run_view.js", "flow_kernel/views/static/run_view.css"} <= set(names)
