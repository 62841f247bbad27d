"""Hatch build hook (pyproject.toml `[tool.hatch.build.targets.wheel.hooks.custom]`, and the
sdist's): the wheel carries the pinned Pyodide runtime, so that `pip install flow-kernel` is the whole
install and nothing is fetched at run time.

It adds exactly the files listed in flow_kernel/sandbox/js/pyodide-files.json (what the
sandbox loads: about 13.5 MB), from flow_kernel/sandbox/js/node_modules, where `npm ci`
put them after checking the tarballs against package-lock.json's integrity; and it fails
the build when a file is missing or its sha256 is not the recorded one. An editable
install reads them from the checkout instead, so it adds nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

JS = Path("flow_kernel") / "sandbox" / "js"


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
        if problems:
            raise RuntimeError(
                "the wheel carries the pinned Pyodide runtime, and these files are missing or not the published ones:\n  "
                + "\n  ".join(problems)
                + f"\nInstall them exactly as package-lock.json pins: (cd {JS.as_posix()} && npm ci), "
                "or `bash scripts/setup`; after a Pyodide upgrade, run scripts/pyodide-manifest.")
