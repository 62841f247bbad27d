"""Every door of the sandbox notes, tried from inside Pyodide with full Python (as if the
verifier had been bypassed), must stay shut: no host file, process, network, environment
or JavaScript global comes back."""

from __future__ import annotations

import os
import socket
import subprocess
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from flow_kernel.errors import FlowError
from flow_kernel.sandbox.install import BOOTSTRAP_DIR, JS_DIR, RUNNER, runtime_paths
from flow_kernel.sandbox.node import find_node, network_namespace
from tests.sandbox.sandbox_helpers import Sandbox, sandbox

__all__ = ["sandbox"]

ROOT = Path(__file__).parents[2]

# Inside the sandbox: undo the Python-level guard first, so each test tries the wall behind it.
UNGUARD = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Blocker"]
"""


def attempt(sandbox: Sandbox, body: str, **kw: object) -> object:
    return sandbox.raw(UNGUARD + textwrap.dedent(body), **kw)  # type: ignore[arg-type]


def test_guard_blocks_js_modules_in_python(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        out = {}
        for name in ["js", "pyodide_js", "pyodide.ffi", "pyodide.code", "micropip"]:
            try:
                __import__(name)
                out[name] = "imported"
            except ImportError as exc:
                out[name] = "blocked"
        return out
    """)
    assert result == {n: "blocked" for n in ["js", "pyodide_js", "pyodide.ffi", "pyodide.code", "micropip"]}


def test_js_module_is_an_empty_frozen_global_object(sandbox: Sandbox) -> None:
    result = attempt(sandbox, """
        import js
        names = [n for n in ("process", "require", "globalThis", "setTimeout", "fetch") if hasattr(js, n)]
        try:
            js.foo = 1
            wrote = True
        except Exception:
            wrote = False
        return {"names": names, "wrote": wrote and hasattr(js, "foo")}
    """)
    assert result == {"names": [], "wrote": False}


def test_run_js_cannot_evaluate_code(sandbox: Sandbox) -> None:
    result = attempt(sandbox, """
        try:
            from pyodide.code import run_js
            return str(run_js("typeof process === 'undefined' ? 'none' : JSON.stringify(process.env)"))
        except Exception as exc:
            return "refused: " + type(exc).__name__
    """)
    assert isinstance(result, str) and result.startswith("refused"), result


def test_function_constructor_from_any_js_object_is_refused(sandbox: Sandbox) -> None:
    result = attempt(sandbox, """
        import flowbox.bridge as b
        io = b._bridge.io
        out = []
        for obj in (io.write, io, b._bridge.io.memory):
            try:
                out.append(str(obj.constructor.constructor("return process.env")()))
            except Exception as exc:
                out.append("refused")
        # and through the function's own globals: the same JS objects, nothing more
        g = type(b._bridge).invoke.__globals__
        out.append("refused" if "process" not in g else "leak")
        return out
    """)
    assert result == ["refused"] * 4


def test_host_files_cannot_be_read(sandbox: Sandbox) -> None:
    secret = (ROOT / "README.md").read_text()[:40]
    result = attempt(sandbox, """
        out = []
        try:
            out.append(open("/etc/hostname").read())
        except Exception as exc:
            out.append("open: " + type(exc).__name__)
        try:
            import pyodide_js
            pyodide_js.FS.mkdirTree("/mnt/host")
            pyodide_js.mountNodeFS("/mnt/host", args["dir"])
            import os
            out.append(str(os.listdir("/mnt/host")))
            out.append(open("/mnt/host/README.md").read()[:40])
        except Exception as exc:
            out.append("mount: " + type(exc).__name__ + " " + str(exc)[:200])
        return out
    """, args={"dir": str(ROOT)})
    assert isinstance(result, list)
    assert not any(secret in str(r) for r in result), result
    assert "README.md" not in str(result)


def test_node_fs_writes_are_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    target = tmp_path / f"flow-door-{uuid.uuid4().hex}"
    result = attempt(sandbox, """
        try:
            import pyodide_js
            pyodide_js.FS.mkdirTree("/mnt/w")
            pyodide_js.mountNodeFS("/mnt/w", args["dir"])
            open("/mnt/w/" + args["name"], "w").write("escaped")
            return "wrote"
        except Exception as exc:
            return "refused: " + type(exc).__name__
    """, args={"dir": str(tmp_path), "name": target.name})
    assert not target.exists()
    assert result != "wrote"


def test_os_system_runs_no_host_command(sandbox: Sandbox, tmp_path: Path) -> None:
    marker = tmp_path / f"flow-door-{uuid.uuid4().hex}"
    result = attempt(sandbox, f"""
        import os
        try:
            return os.system("touch {marker}")
        except Exception as exc:
            return "refused: " + type(exc).__name__
    """)
    assert not marker.exists(), result
    sandbox.ensure_alive()


def test_subprocess_is_unavailable(sandbox: Sandbox) -> None:
    result = attempt(sandbox, """
        try:
            import subprocess
            return subprocess.run(["id"], capture_output=True).returncode
        except Exception as exc:
            return "refused: " + type(exc).__name__
    """)
    assert isinstance(result, str) and result.startswith("refused")


@pytest.fixture()
def listener() -> tuple[int, list[object]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                accepted.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def test_no_tcp_connection_to_the_host(sandbox: Sandbox, listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    result = attempt(sandbox, f"""
        import socket, asyncio
        try:
            s = socket.create_connection(("127.0.0.1", {port}), timeout=1)
            s.sendall(b"hello")
            return "connected"
        except Exception as exc:
            return "refused: " + type(exc).__name__
    """)
    import time

    time.sleep(0.5)
    assert accepted == [], result
    assert result != "connected"


@pytest.mark.skipif(network_namespace() is None, reason="this OS gives no network namespace")
def test_network_namespace_has_no_route_to_the_host(listener: tuple[int, list[object]]) -> None:
    port, accepted = listener
    prefix = network_namespace() or []
    script = f"const s = require('net').connect({port}, '127.0.0.1'); s.on('connect', () => {{ console.log('connected'); process.exit(0) }}); s.on('error', (e) => {{ console.log('error ' + e.code); process.exit(0) }});"
    out = subprocess.run([*prefix, find_node().path, "-e", script], capture_output=True, text=True, timeout=20)
    assert "connected" not in out.stdout, out
    assert accepted == []


def test_environment_holds_no_host_secret(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    # The shared process started without it; a fresh one must not get it either.
    monkeypatch.setenv("FLOW_TEST_SECRET", "s3cr3t-value")
    fresh = Sandbox()
    try:
        result = attempt(fresh, """
            import os
            out = {"environ": dict(os.environ)}
            try:
                import pyodide_js
                out["js"] = str(pyodide_js._module.ENV)
            except Exception as exc:
                out["js"] = "refused"
            return out
        """)
    finally:
        fresh.close()
    assert "s3cr3t-value" not in str(result)
    assert "FLOW_TEST_SECRET" not in str(result)
    assert os.environ["FLOW_TEST_SECRET"] == "s3cr3t-value"


def test_memory_bomb_is_an_isolate_error(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        x = []
        while True:
            x.append(bytearray(10**7))
    """)
    assert isinstance(result, FlowError) and result.code == "isolate", result
    assert "memory" in result.message


def test_busy_loop_is_stopped_by_the_watchdog(sandbox: Sandbox) -> None:
    import time

    started = time.monotonic()
    result = sandbox.raw("""
        while True:
            pass
    """, deadline_ms=500)
    elapsed = time.monotonic() - started
    assert isinstance(result, FlowError) and result.code == "workflow-timeout", result
    assert elapsed < 5
    assert sandbox.raw("return 1 + 1") == 2  # the same process goes on


def test_read_access_is_limited_to_the_sandbox_files() -> None:
    from flow_kernel.sandbox.process import sandbox_command

    command = sandbox_command(find_node(), snapshot=None, memory_mb=512)
    reads = [c.split("=", 1)[1] for c in command if c.startswith("--allow-fs-read=")]
    # Exactly the files it loads: the runner, the bootstrap and the hash-checked Pyodide
    # runtime files; nothing else in node_modules (a planted module) is readable.
    assert set(reads) == {str(RUNNER), str(JS_DIR / "package.json"), str(BOOTSTRAP_DIR),
                          *(str(path.resolve()) for path in runtime_paths())}
    assert not any(c.startswith("--allow-fs-write") or c.startswith("--allow-child-process") for c in command)
    assert "--allow-worker" not in command  # the watchdog runs on the main thread: no Worker at all
    assert "--disallow-code-generation-from-strings" in command
