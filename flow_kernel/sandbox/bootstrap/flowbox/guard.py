"""Defence in depth inside Python: drop the modules that reach JavaScript and refuse
to import them again. Easily bypassed by code that runs with full Python — the real
walls are Node's (frozen `jsglobals`, the permission model, stubbed modules); this
only makes the first obvious attempt fail loudly."""

from __future__ import annotations

import sys

BLOCKED = ("js", "pyodide_js", "pyodide.ffi", "pyodide.code", "pyodide.http", "micropip", "_pyodide_core")


class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name in BLOCKED or any(name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"module {name!r} is not available in the Flow sandbox")
        return None


def install():
    for name in list(sys.modules):
        if name in BLOCKED or any(name.startswith(b + ".") for b in BLOCKED):
            del sys.modules[name]
    if not any(isinstance(f, _Blocker) for f in sys.meta_path):
        sys.meta_path.insert(0, _Blocker())
