"""Doors beyond tests/sandbox/test_doors.py, each tried with full Python inside a real
Pyodide in a real Node process (the deliberate verifier bypass, guard removed).

The network attempts run in a sandbox started *outside* the network namespace, so that
the stubbed `net`/`tls`/`child_process` modules are the only wall: a loopback listener
of the test must accept nothing. Every attempt either fails inside the sandbox or ends
the sandbox process (`worker-crashed`); either way no host file, process, connection,
environment variable or secret comes back, and the host goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.security.door_helpers import Listener, OpenNetworkSandbox, attempt, listener, open_box

__all__ = ["listener", "open_box", "sandbox"]

# -- network: every Python and JS route to a socket, with no namespace behind it -------------

NETWORK_ROUTES = {
    "socket": """
        import socket
        s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
        s.sendall(b"socket")
        return "connected"
    """,
    "node-sockfs": """
        import pyodide_js, socket
        pyodide_js.useNodeSockFS()   # Pyodide's Node socket layer, built on `net`
        s = socket.create_connection(("127.0.0.1", PORT), timeout=2)
        s.sendall(b"sockfs")
        return "connected"
    """,
    "node-sockfs-asyncio": """
        import pyodide_js, asyncio
        pyodide_js.useNodeSockFS()
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 3)
        w.write(b"asyncio")
        await w.drain()
        return "connected"
    """,
    "urllib": """
        import urllib.request
        urllib.request.urlopen("http://127.0.0.1:PORT/urllib", timeout=2).read()
    """,
    "asyncio": """
        import asyncio
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT), 3)
        return "connected"
    """,
    "pyfetch": """
        from pyodide.http import pyfetch
        await pyfetch("http://127.0.0.1:PORT/pyfetch")
    """,
    "open_url": """
        from pyodide.http import open_url
        open_url("http://127.0.0.1:PORT/open_url")
    """,
    "loadPackage": """
        import pyodide_js
        await pyodide_js.loadPackage("http://127.0.0.1:PORT/evil-1.0-py3-none-any.whl")
    """,
    "loadBinaryFile": """
        import pyodide_js
        await pyodide_js._api.loadBinaryFile("http://127.0.0.1:PORT/blob")
    """,
    "micropip": """
        import pyodide_js
        await pyodide_js.loadPackage("micropip")
        import micropip
        await micropip.install("http://127.0.0.1:PORT/evil-1.0-py3-none-any.whl")
    """,
}


@pytest.mark.parametrize("route", sorted(NETWORK_ROUTES))
def test_no_route_reaches_a_loopback_listener_without_the_namespace(
        open_box: OpenNetworkSandbox, listener: Listener, route: str) -> None:
    body = NETWORK_ROUTES[route].replace("PORT", str(listener.port))
    result = attempt(open_box, f"""
        try:
{_indent(body, 12)}
            return "returned"  # some routes (loadPackage) log their failure instead of raising
        except BaseException as exc:
            return "refused: " + type(exc).__name__
    """, deadline_ms=15_000)
    assert listener.settle() == [], (route, result)
    assert result != "connected", route
    open_box.ensure_alive()


def test_the_listener_sees_a_trusted_connection(listener: Listener) -> None:
    # The control: the same Node outside the sandbox does reach the listener, so an empty
    # `accepted` above means the door held, not that the listener saw nothing at all.
    from flow_kernel.sandbox.node import find_node

    script = (f"const s = require('net').connect({listener.port}, '127.0.0.1', () => {{ s.end('trusted') }});"
              "s.on('close', () => process.exit(0)); s.on('error', () => process.exit(1));")
    subprocess.run([find_node().path, "-e", script], timeout=30, check=True)
    assert listener.settle() == [b"trusted"]


def test_the_pooled_sandbox_reaches_no_listener_either(sandbox: Sandbox, listener: Listener) -> None:
    for route in ("socket", "node-sockfs", "urllib"):
        body = NETWORK_ROUTES[route].replace("PORT", str(listener.port))
        result = attempt(sandbox, f"""
            try:
{_indent(body, 16)}
                return "returned"
            except BaseException as exc:
                return "refused: " + type(exc).__name__
        """, deadline_ms=15_000)
        assert result != "connected", route
        sandbox.ensure_alive()
    assert listener.settle() == []


# -- processes: every route to a host command ------------------------------------------------

PROCESS_ROUTES = {
    "ctypes-system": 'import ctypes\nctypes.CDLL(None).system(("touch " + MARK).encode())',
    "posixsubprocess": ('import _posixsubprocess\n_posixsubprocess.fork_exec(["/usr/bin/touch", MARK], [b"/usr/bin/touch"], '
                        "True, (), None, None, -1, -1, -1, -1, -1, -1, -1, -1, False, False, 0, None, None, None, -1, None)"),
    "posix_spawn": 'import os\nos.posix_spawn("/usr/bin/touch", ["touch", MARK], {})',
    "execv": 'import os\nos.execv("/usr/bin/touch", ["touch", MARK])',
    "fork": 'import os\nif os.fork() == 0:\n    os.execv("/usr/bin/touch", ["touch", MARK])',
    "popen": 'import os\nos.popen("touch " + MARK).read()',
    "pty": 'import pty\npty.spawn(["touch", MARK])',
}


@pytest.mark.parametrize("route", sorted(PROCESS_ROUTES))
def test_no_route_starts_a_host_process(open_box: OpenNetworkSandbox, tmp_path: Path, route: str) -> None:
    marker = tmp_path / f"flow-door-{uuid.uuid4().hex}"
    body = PROCESS_ROUTES[route].replace("MARK", repr(str(marker)))
    result = attempt(open_box, f"""
        try:
{_indent(body, 12)}
            return "ran"
        except BaseException as exc:
            return "refused: " + type(exc).__name__
    """)
    assert not marker.exists(), (route, result)
    open_box.ensure_alive()


def test_no_signal_reaches_a_host_process(open_box: OpenNetworkSandbox) -> None:
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        result = attempt(open_box, f"""
            import os, signal
            out = []
            for call in (lambda: os.kill({victim.pid}, signal.SIGKILL), lambda: os.killpg({victim.pid}, signal.SIGKILL),
                         lambda: os.kill({os.getpid()}, signal.SIGTERM), lambda: os.kill(-1, signal.SIGKILL)):
                try:
                    call()
                    out.append("sent")
                except BaseException as exc:
                    out.append(type(exc).__name__)
            return out
        """)
        assert victim.poll() is None, result  # still running
        assert os.getpid() > 0  # and so is this test process, obviously
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
    open_box.ensure_alive()


# -- files: reads and writes outside the sandbox's own files -----------------------------------

def test_no_route_reads_a_host_file(open_box: OpenNetworkSandbox, tmp_path: Path) -> None:
    secret = f"flow-secret-{uuid.uuid4().hex}"
    target = tmp_path / "secret.txt"
    target.write_text(secret)
    result = attempt(open_box, """
        import pyodide_js
        path, folder = args["path"], args["dir"]
        out = {}
        def tryit(name, fn):
            try:
                out[name] = str(fn())[:200]
            except BaseException as exc:
                out[name] = "refused: " + type(exc).__name__
        tryit("open", lambda: open(path).read())
        def mount_fs():
            FS = pyodide_js.FS
            FS.mkdirTree("/mnt/a")
            FS.mount(FS.filesystems.NODEFS, pyodide_js.constructor.fromEntries([["root", folder]]), "/mnt/a")
            return open("/mnt/a/secret.txt").read()
        tryit("FS.mount NODEFS", mount_fs)
        def mount_node():
            pyodide_js.FS.mkdirTree("/mnt/b")
            pyodide_js.mountNodeFS("/mnt/b", folder)
            return open("/mnt/b/secret.txt").read()
        tryit("mountNodeFS", mount_node)
        async def load(url):
            return bytes((await pyodide_js._api.loadBinaryFile(url)).to_py())
        import asyncio
        for url in (path, "file://" + path):
            try:
                out["loadBinaryFile " + url] = str(await load(url))[:200]
            except BaseException as exc:
                out["loadBinaryFile " + url] = "refused: " + type(exc).__name__
        try:
            await pyodide_js.loadPackage("file://" + path)
            out["loadPackage"] = "returned"
        except BaseException as exc:
            out["loadPackage"] = "refused: " + type(exc).__name__
        tryit("proc environ", lambda: open("/proc/self/environ").read())
        return out
    """, args={"path": str(target), "dir": str(tmp_path)})
    assert secret not in str(result), result
    open_box.ensure_alive()


def test_no_route_writes_a_host_file(open_box: OpenNetworkSandbox, tmp_path: Path) -> None:
    name = f"flow-door-{uuid.uuid4().hex}"
    result = attempt(open_box, """
        import pyodide_js
        folder, name = args["dir"], args["name"]
        out = {}
        try:
            FS = pyodide_js.FS
            FS.mkdirTree("/mnt/w")
            FS.mount(FS.filesystems.NODEFS, pyodide_js.constructor.fromEntries([["root", folder]]), "/mnt/w")
            FS.writeFile("/mnt/w/" + name, "escaped")
            out["FS.writeFile"] = "wrote"
        except BaseException as exc:
            out["FS.writeFile"] = type(exc).__name__
        try:
            pyodide_js.unpackArchive(pyodide_js._api.typedArrayAsUint8Array(b"PK\\x05\\x06" + bytes(18)), "zip",
                                     pyodide_js.constructor.fromEntries([["extractDir", folder]]))
            out["unpackArchive"] = "returned"
        except BaseException as exc:
            out["unpackArchive"] = type(exc).__name__
        return out
    """, args={"dir": str(tmp_path), "name": name})
    assert list(tmp_path.iterdir()) == [], result
    open_box.ensure_alive()


# -- the environment and Pyodide's own configuration -------------------------------------------

def test_no_secret_in_any_environment_view(monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"flow-env-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", marker)
    monkeypatch.setenv("ANTHROPIC_API_KEY", marker)
    fresh = OpenNetworkSandbox()  # started with the markers in this process's environment
    try:
        # The Node process itself: its environment as the kernel gave it.
        environ = Path(f"/proc/{fresh.process.pid}/environ").read_bytes()
        assert marker.encode() not in environ
        result = attempt(fresh, """
            import os, pyodide_js
            out = {"os.environ": dict(os.environ)}
            for name, get in (("config.env", lambda: pyodide_js._api.config.env.to_py()),
                              ("config.args", lambda: list(pyodide_js._api.config.args)),
                              ("module.ENV", lambda: pyodide_js._module.ENV.to_py()),
                              ("runtimeEnv", lambda: pyodide_js._api.runtimeEnv.to_py())):
                try:
                    out[name] = str(get())
                except BaseException as exc:
                    out[name] = "refused: " + type(exc).__name__
            return out
        """)
    finally:
        fresh.close()
    assert marker not in str(result), result
    assert "OPENAI_API_KEY" not in str(result) and "ANTHROPIC_API_KEY" not in str(result)


# -- JavaScript reached through Pyodide's own objects -------------------------------------------

def test_pyodide_internals_give_no_code_evaluation(open_box: OpenNetworkSandbox) -> None:
    result = attempt(open_box, """
        import pyodide_js
        out = {}
        Obj = pyodide_js.constructor
        def tryit(name, fn):
            try:
                out[name] = "ran: " + str(fn())[:200]
            except BaseException as exc:
                out[name] = "refused: " + type(exc).__name__
        # Function from strings, through several objects' constructors
        tryit("Function via api", lambda: pyodide_js._api.constructor.constructor("return typeof process")())
        tryit("Function via FS.mount", lambda: pyodide_js.FS.mount.constructor("return typeof process")())
        tryit("AsyncFunction", lambda: pyodide_js.runPythonAsync.constructor("return typeof process"))
        # the prototype-chain escape of cohere-terrarium CVE-2026-5752 (and gf3/sandbox#64):
        # any JS object's constructor's constructor is Function (JS promises reach Python as
        # futures, so that route of #64 is not one here)
        tryit("Function via an Error", lambda: pyodide_js._api.errorConstructors.constructor.constructor("return typeof process")())
        import js
        tryit("Function via js", lambda: js.constructor.constructor("return typeof process")())
        # Python code Pyodide runs for us is still inside the sandbox: it reaches no JS global
        tryit("runPython js", lambda: pyodide_js.runPython("import js\\n[n for n in ('process','require') if hasattr(js, n)]"))
        tryit("registerJsModule", lambda: (pyodide_js.registerJsModule("evil", pyodide_js), "registered")[1])
        # the global object through a JS getter's receiver
        tryit("globalThis getter", lambda: Obj.getOwnPropertyDescriptor(Obj.getPrototypeOf(pyodide_js), "__proto__").get.call(None))
        tryit("config.jsglobals", lambda: Obj.keys(pyodide_js._api.config.jsglobals))
        return out
    """)
    text = str(result)
    assert "function" not in text.replace("refused", ""), result  # `typeof process` never answered
    for name in ("Function via api", "Function via FS.mount", "AsyncFunction", "Function via an Error", "Function via js"):
        assert str(result[name]).startswith("refused"), result
    assert "process" not in str(result.get("runPython js")) or "[]" in str(result.get("runPython js")), result
    assert result.get("config.jsglobals") in ("ran: ", "refused: JsException"), result


def test_the_runner_io_object_cannot_be_changed(sandbox: Sandbox) -> None:
    result = attempt(sandbox, """
        import flowbox.bridge as b
        io = b._bridge.io
        out = []
        for name in ("write", "flush", "wake", "arm", "memory"):
            try:
                setattr(io, name, io.disarm)
                out.append("replaced")
            except BaseException as exc:
                out.append(type(exc).__name__)
        try:
            io.write('{"op": "event", "payload": {}}\\n{"op": "x"}')
            out.append("two lines")
        except BaseException as exc:
            out.append(type(exc).__name__)
        return out
    """)
    assert isinstance(result, list) and "replaced" not in result and "two lines" not in result, result
    assert sandbox.raw("return 5") == 5


def _indent(body: str, spaces: int) -> str:
    import textwrap

    return textwrap.indent(textwrap.dedent(body).strip("\n"), " " * spaces)
