"""Hatch build hook (pyproject.toml `[tool.hatch.build.targets.wheel.hooks.custom]`, and the
sdist's): the wheel carries the pinned Pyodide runtime, so that `pip install flow-kernel` is the whole
install and nothing is fetched at run time.

It adds exactly the files listed in flow_kernel/sandbox/js/pyodide-files.json (what the
sandbox loads: about 13.5 MB), from flow_kernel/sandbox/js/node_modules, where `npm ci`
put them after checking the tarballs against package-lock.json's integrity; and it fails
the build when a file is missing or its sha256 is not the recorded one. An editable
install reads them from the checkout instead, so it adds nothing.

With FLOW_COMPILED_WHEEL=1 the wheel also carries the front end compiled with mypyc
(scripts/build-front, into `flow_kernel_front/` beside the package, with its manifest) and
is tagged for this platform and interpreter; flow_kernel/compiled_front.py uses it while the
installed sources are the ones compiled. Without it the wheel is pure (py3-none-any).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

JS = Path("flow_kernel") / "sandbox" / "js"
COMPILED_VARIABLE = "FLOW_COMPILED_WHEEL"


class PyodideRuntimeHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        # The sdist carries them too (node_modules is otherwise left out by .gitignore), so
        # that a wheel built from it has them; an editable install uses the checkout's.
        if self.target_name not in ("wheel", "sdist") or version == "editable":
            return
        js = Path(self.root) / JS
        files = json.loads((js / "pyodide-files.json").read_text())["files"]
        problems = []
        for relative, want in files.items():
            source = js / "node_modules" / relative
            try:
                digest = hashlib.sha256(source.read_bytes()).hexdigest()
            except OSError as exc:
                problems.append(f"{source}: {exc.strerror}")
                continue
            if digest != want["sha256"]:
                problems.append(f"{source}: sha256 {digest}, expected {want['sha256']}")
                continue
            build_data["force_include"][str(source)] = (JS / "node_modules" / relative).as_posix()
        if self.target_name == "wheel" and os.environ.get(COMPILED_VARIABLE) == "1":
            self.add_compiled_front(build_data)
        if problems:
            raise RuntimeError(
                "the wheel carries the pinned Pyodide runtime, and these files are missing or not the published ones:\n  "
                + "\n  ".join(problems)
                + f"\nInstall them exactly as package-lock.json pins: (cd {JS.as_posix()} && npm ci), "
                "or `bash scripts/setup`; after a Pyodide upgrade, run scripts/pyodide-manifest.")

    def add_compiled_front(self, build_data: dict[str, Any]) -> None:
        """The compiled front end into the wheel, as `flow_kernel_front/`; the wheel is then
        for this platform and interpreter. A failed build fails the wheel: it was asked for."""
        out = Path(tempfile.mkdtemp(prefix="flow-front-wheel-")) / "flow_kernel_front"
        script = Path(self.root) / "scripts" / "build-front"
        proc = subprocess.run([sys.executable, str(script), "--force", "--out", str(out)], cwd=self.root,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{COMPILED_VARIABLE}=1, and the front end did not compile: {proc.stdout}{proc.stderr}"
                               f"(mypyc's output: {out.with_name(out.name + '.log')})")
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            build_data["force_include"][str(path)] = (Path(out.name) / path.relative_to(out)).as_posix()
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
