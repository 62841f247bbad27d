"""The first sandbox of a kernel, `flow run` or `flow resume`, started before their imports.

A Flow kernel spends ~0.3–0.4 s importing ipykernel and the runtime before its event loop
runs, and a sandbox takes about as long to restore its snapshot: started only when the
loop runs, the sandbox was still starting when the first cell came (and `flow run` spends
~0.3 s importing and checking its file). `launch()` (called before those imports) starts the process at once, with exactly the
command, environment and limits `SandboxProcess.start` would use; `SandboxProcess.start`
takes it over (`take`) when it would run the same command, and kills it otherwise.
`process.start_early()` decides the command, for the kernel (`flow_kernel.__main__`) and for
`flow run`/`flow resume` (`flow_kernel.cli.main`, before the command's imports): only with a
snapshot already built and matching its record — building one takes seconds; without it
the sandbox starts the ordinary way. A CLI command that ends without taking it (a refused
run, a compile error, a usage error) kills it (`cancel`); it would die with the CLI anyway
(`lifetime.preexec`, within `stack.preexec`: the same stack as `SandboxProcess.start`'s).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess

from flow_kernel.sandbox import stack

_early: tuple[list[str], subprocess.Popen[bytes]] | None = None


def launch(command: list[str], env: dict[str, str]) -> bool:
    """Start the first sandbox now with `command` (what `sandbox_command` gives for the pool's
    snapshot and memory cap) and `env` (`SANDBOX_ENV`); True if one was started. Never
    raises: a kernel that cannot start one here starts it later, and says why then."""
    global _early
    if _early is not None:
        return True
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(env), start_new_session=True, preexec_fn=stack.preexec())
    except (OSError, ValueError, subprocess.SubprocessError):  # the ordinary start reports it
        return False
    _early = (command, proc)
    return True


def take(command: list[str]) -> subprocess.Popen[bytes] | None:
    """The early process if it runs `command` and is alive (it is handed over once), else None;
    an early process that does not match is killed."""
    global _early
    if _early is None:
        return None
    started, proc = _early
    _early = None
    if started == command and proc.poll() is None:
        return proc
    discard(proc)
    return None


def cancel() -> None:
    """Kill the early process if nothing took it (the command ended without a sandbox)."""
    global _early
    if _early is not None:
        proc = _early[1]
        _early = None
        discard(proc)


def discard(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        proc.wait(timeout=5)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):  # ours: left open, each is an fd until collected
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


class AdoptedProcess:
    """What `SandboxProcess` uses of `asyncio.subprocess.Process`, for a process started
    with `subprocess.Popen` before the event loop ran: its pipes as asyncio streams."""

    def __init__(self, proc: subprocess.Popen[bytes], stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader) -> None:
        self._proc = proc
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.pid = proc.pid
        self._watched = False  # a pidfd tells the loop when it exits: `returncode` needs no syscall

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # not Linux 5.3+: `returncode` asks the OS each time
            return

        def exited() -> None:
            loop.remove_reader(fd)
            os.close(fd)
            self._proc.poll()

        loop.add_reader(fd, exited)
        self._watched = True

    @classmethod
    async def adopt(cls, proc: subprocess.Popen[bytes], limit: int) -> AdoptedProcess:
        loop = asyncio.get_running_loop()
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        readers = []
        for pipe in (proc.stdout, proc.stderr):
            reader = asyncio.StreamReader(limit=limit, loop=loop)
            protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
            await loop.connect_read_pipe(lambda p=protocol: p, pipe)  # type: ignore[misc]
            readers.append(reader)
        transport, flow = await loop.connect_write_pipe(lambda: asyncio.streams.FlowControlMixin(loop=loop), proc.stdin)
        writer = asyncio.StreamWriter(transport, flow, None, loop)
        adopted = cls(proc, writer, readers[0], readers[1])
        adopted._watch(loop)
        return adopted

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._watched else self._proc.poll()

    def kill(self) -> None:
        self._proc.kill()

    async def wait(self) -> int:
        return await asyncio.to_thread(self._proc.wait)
