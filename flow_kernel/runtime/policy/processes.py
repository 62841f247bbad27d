"""`run`: which executables a program may start, with which arguments, and how a child runs.

The allow-list (`RunPolicy`) is made of entries, one string each, the same everywhere —
`--allow-run 'git status'`, `Session(allow_run=["git log *"])`, `allow_run = ["wc",
{git = ["status", "log *"]}]` in a trusted flow.toml, `%allow run`:

- `wc`: the executable `wc`, with any arguments;
- `git status`, `git log *`: `git` pinned to argument lists that match one of its
  patterns. A pattern is words (shell-quoted where a word has spaces); each word is a
  glob (`*`, `?`, `[…]`) for one argument, and a last word `*` stands for any number of
  further arguments (none included). `git log *` allows `git log --oneline -5`, and not
  `git -c alias.x=!sh x`.

An allowed interpreter grants everything it can do: `sh`, `python`, `node`, `git` with
any arguments (aliases run commands), `sort` (`--compress-program=sh`), `find -exec`,
`tar --to-command`, … Pin the arguments of anything that has such options: a grant
without pinned arguments is warned about once a run (`unpinned_warning`; docs/security.md
lists the common programs that run others).

A child (`run_child`) gets a minimal environment (PATH and the locale: none of the host's
keys), its own process group, and where the OS allows it its own user, network, PID and
mount namespaces (`sandbox/lifetime.py`); it dies with the host (parent-death signal)
and its whole group is killed on its timeout, the run's deadline and a cancel. Its
output is read as it comes, up to a bound; a timeout keeps what it had written.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import shlex
import shutil
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flow_kernel.errors import CapabilityViolationError, ProcessError
from flow_kernel.sandbox.lifetime import child_namespace, preexec
from flow_kernel.sandbox.node import network_namespace

CHILD_OUTPUT_MAX = 4 * 1024 * 1024  # bytes kept of each of a child's stdout and stderr
CHILDREN_AT_ONCE = 16  # `run` children of one run alive at once (a bypassed sandbox may ask for more)
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class AllowedExecutable:
    """One executable `run` may start; `patterns` None allows any arguments."""

    name: str
    patterns: tuple[tuple[str, ...], ...] | None = None

    def allows(self, arguments: list[str]) -> bool:
        if self.patterns is None:
            return True
        return any(_matches(pattern, arguments) for pattern in self.patterns)

    def describe(self) -> str:
        if self.patterns is None:
            return self.name
        return " | ".join(" ".join(shlex.quote(w) if w != "*" else w for w in [self.name, *p]) for p in self.patterns)


def _matches(pattern: tuple[str, ...], arguments: list[str]) -> bool:
    if pattern and pattern[-1] == "*":
        fixed = pattern[:-1]
        if len(arguments) < len(fixed):
            return False
        arguments = arguments[:len(fixed)]
        pattern = fixed
    return len(pattern) == len(arguments) and all(fnmatch.fnmatchcase(a, p) for p, a in zip(pattern, arguments, strict=True))


def parse_entry(text: str) -> tuple[str, tuple[str, ...] | None]:
    """`"git log *"` → ("git", ("log", "*")); `"wc"` → ("wc", None). ValueError when malformed."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"allow-run entry {text!r}: {exc}") from None
    if not words:
        raise ValueError("an allow-run entry names an executable")
    name = words[0]
    if "/" in name or name in (".", ".."):
        raise ValueError(f"allow-run entry {text!r}: name an executable on PATH, not a path")
    return name, tuple(words[1:]) if len(words) > 1 else None


def entries_from_config(value: object, where: str) -> tuple[str, ...]:
    """`allow_run` of a flow.toml as entry strings: a list of names and `{exe = [patterns]}`
    tables, or a table `{exe = true | [patterns]}`. ValueError names what is wrong."""
    items: list[tuple[str, object]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str):
                items.append((item, True))
            elif isinstance(item, dict):
                items.extend(item.items())
            else:
                raise ValueError(f"{where}: `allow_run` entries are names or tables of argument patterns")
    else:
        raise ValueError(f"{where}: `allow_run` must be a list (or a table) of executables")
    entries: list[str] = []
    for name, patterns in items:
        if patterns is True:
            entries.append(name)
        elif isinstance(patterns, list) and patterns and all(isinstance(p, str) for p in patterns):
            entries.extend(shlex.join([name]) + (" " + p if p.strip() else "") for p in patterns)
        else:
            raise ValueError(f"{where}: `allow_run.{name}` must be true (any arguments) or a non-empty list of "
                             "argument patterns such as [\"status\", \"log *\"]")
    for entry in entries:
        parse_entry(entry)
    return tuple(entries)


class RunPolicy:
    """The executables a run may start, from allow-list entries (see the module's text)."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        found: dict[str, AllowedExecutable] = {}
        for entry in sorted(entries):  # a set's order varies: messages name the patterns in one order
            name, pattern = parse_entry(entry)
            known = found.get(name)
            if pattern is None or (known is not None and known.patterns is None):
                found[name] = AllowedExecutable(name)
            else:
                found[name] = AllowedExecutable(name, (known.patterns or ()) + (pattern,) if known else (pattern,))
        self.allowed = found

    def check(self, executable: str, arguments: list[str]) -> None:
        """Raise `capability-violation` unless `executable` with `arguments` is allowed."""
        allowed = self.allowed.get(executable)
        if allowed is None:
            raise CapabilityViolationError(
                f"`run`: executable {executable!r} is not allowed (allow it with --allow-run {shlex.quote(executable)})",
                details={"executable": executable})
        if not allowed.allows(arguments):
            shown = shlex.join([executable, *arguments])
            raise CapabilityViolationError(
                f"`run`: `{shown[:200]}` is not allowed: `{executable}` may run only as {allowed.describe()}",
                details={"executable": executable, "arguments": arguments[:50]})


def unpinned(entries: Iterable[str]) -> list[str]:
    """The executables `entries` let `run` start with any arguments (an entry of a name
    alone, or `NAME *`), sorted. A malformed entry grants nothing and is not named."""
    names = set()
    for entry in entries:
        with contextlib.suppress(ValueError):
            name, pattern = parse_entry(entry)
            if pattern is None or pattern == ("*",):
                names.add(name)
    return sorted(names)


def unpinned_warning(name: str) -> str:
    """What the front ends say, once a run, of a grant of `name` with any arguments."""
    return (f"`run` may start {name} with any arguments: pin them with '{name} ARGS' (through its flags a "
            "program such as sort, find, git or tar runs any other; docs/security.md lists them)")


def child_env() -> dict[str, str]:
    """What a child's environment holds: PATH and the locale, nothing else of the host's."""
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    env.setdefault("PATH", DEFAULT_PATH)
    return env


def isolation_prefix() -> list[str]:
    """The strongest isolation this OS gives a child: own user, network, PID and mount
    namespaces; else only no network; else none."""
    return child_namespace() or network_namespace() or []


class Children:
    """The `run` children of one run: each in its own process group, all killed when the run ends."""

    def __init__(self, at_once: int = CHILDREN_AT_ONCE) -> None:
        self.groups: set[int] = set()
        self._gate = asyncio.Semaphore(at_once)  # generated code awaits each `run`; only parallel branches overlap

    def kill_all(self) -> None:
        for group in list(self.groups):
            _kill_group(group)
        self.groups.clear()

    async def run(self, path: str, arguments: list[str], stdin: str | None, timeout: float,
                  label: str) -> dict[str, Any]:
        """Start `path` with `arguments`; the result or a `process` error carrying what it wrote.
        A child waits for a free place among the run's CHILDREN_AT_ONCE (its timeout includes it)."""
        started = asyncio.get_running_loop().time()
        try:
            await asyncio.wait_for(self._gate.acquire(), timeout)
        except TimeoutError:
            raise ProcessError(f"`run`: {label} timed out after {timeout:g}s waiting for other `run` children "
                               f"of this run to end", details={"stdout": "", "stderr": "", "exit_code": None,
                                                               "timed_out": True}) from None
        try:
            return await self._run(path, arguments, stdin, timeout - (asyncio.get_running_loop().time() - started),
                                   label)
        finally:
            self._gate.release()

    async def _run(self, path: str, arguments: list[str], stdin: str | None, timeout: float,
                   label: str) -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(
            *isolation_prefix(), path, *arguments, env=child_env(), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
            preexec_fn=preexec())
        self.groups.add(proc.pid)
        out, err = bytearray(), bytearray()
        try:
            work = asyncio.gather(_read(proc.stdout, out), _read(proc.stderr, err), _feed(proc.stdin, stdin), proc.wait())
            work.add_done_callback(_taken)  # stopped mid-way (the run cancelled): its CancelledError is not news
            try:
                await asyncio.wait_for(work, timeout)
            except TimeoutError:
                raise ProcessError(f"`run`: {label} timed out after {timeout:g}s",
                                   details=_result(out, err, None) | {"timed_out": True}) from None
        finally:  # timed out, cancelled (the run's deadline, a cancel) or done: nothing of its group stays
            self.groups.discard(proc.pid)
            _kill_group(proc.pid)  # also what it left behind in its group (`cmd &`), even when it exited
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                with contextlib.suppress(BaseException):
                    await asyncio.shield(asyncio.wait_for(proc.wait(), 5))
            # Its pipes may not have been read to the end (timed out, cancelled): close them now,
            # or the transport is only closed by the collector, after its loop may be gone.
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
        result = _result(out, err, proc.returncode)
        if proc.returncode != 0:
            raise ProcessError(f"`run`: {label} exited with code {proc.returncode}", details=result)
        return result


def _taken(work: asyncio.Future[Any]) -> None:
    """Take a finished gather's outcome, so that one stopped mid-way is not logged as never retrieved."""
    if not work.cancelled():
        work.exception()


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


async def _read(stream: asyncio.StreamReader | None, into: bytearray) -> None:
    """Read a child's stream as it comes; past the bound the rest is read and dropped, so the
    child is never blocked on a full pipe and the host's memory stays bounded."""
    if stream is None:
        return
    while chunk := await stream.read(65536):
        room = CHILD_OUTPUT_MAX - len(into)
        if room > 0:
            into += chunk[:room]


async def _feed(stream: asyncio.StreamWriter | None, text: str | None) -> None:
    if stream is None:
        return
    with contextlib.suppress(ConnectionError, BrokenPipeError):
        if text:
            stream.write(text.encode())
            await stream.drain()
        stream.close()


def _result(out: bytearray, err: bytearray, code: int | None) -> dict[str, Any]:
    return {"stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace"), "exit_code": code}


def which(executable: str) -> str | None:
    return shutil.which(executable, path=child_env()["PATH"])


__all__ = ["AllowedExecutable", "Children", "RunPolicy", "child_env", "entries_from_config", "parse_entry",
           "unpinned", "unpinned_warning"]
