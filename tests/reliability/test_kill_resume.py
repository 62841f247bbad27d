"""`flow run` killed (SIGKILL) at 100 random moments of a 30-call run, each kill resumed with
`flow resume` (docs/durability.md): the results equal the uninterrupted run's, and the
provider — the official `openai` client against a loopback server that counts requests —
never sees a call again once the journal holds it.

Kills are chained: a run is killed, resumed, the resume killed again, … (ten kills a run,
ten runs, three at a time), then resumed to the end. A moment is one of: a random time
after the process starts (start-up, compiling, the sandbox starting, calls under way), the
server receiving the n-th request of the process (the call in flight), or the server having
answered the n-th request plus 0–5 ms (the answer on its way into the journal, or just in).

What "exactly once" can mean: a call the provider answered but the process died before
journaling is asked again (at-least-once for the one call in flight, as in Temporal and
DBOS); a call the journal holds is never asked again. The test checks exactly that, per
call: every request of a call but its last came from a process that died with that call as
its last request, and no process asks for a call the journal held when it started.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from flow_kernel.runtime.durable.journal import read_checkpoint

CALLS = 30
RUNS = 10
KILLS_PER_RUN = 10
PROGRAM = f'''agent a {{ model: "openai/gpt-test" }}
var answers = []
for i in range({CALLS}) {{
  answers = answers + [a("call ${{i}}")]
}}
answers
'''
EXPECTED = [f"ans:call {i}" for i in range(CALLS)]
FLOW = [sys.executable, "-m", "flow_kernel.cli"]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client killed mid-request resets its connection: expected here, not worth a traceback."""


def read_chat(handler: BaseHTTPRequestHandler) -> tuple[dict[str, Any], str]:
    """A Chat Completions request's body and its last message."""
    body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
    return body, str(body["messages"][-1]["content"])


def send_completion(handler: BaseHTTPRequestHandler, model: str, content: str) -> None:
    """Answer a Chat Completions request with `content` (one choice, one token each way)."""
    payload = {"id": "c", "object": "chat.completion", "created": 0, "model": model,
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class CountingServer:
    """Chat Completions on 127.0.0.1: answers `ans:<prompt>`, logs (process, call) per request,
    and kills the process it serves when its plan says so. Each process of a chain is given
    its own base URL (`url_for(n)`), so a request is the process's that sent it even when the
    server reads it late: a request a killed process wrote just before it died may be read
    after the next process has started, and must not count as the next one's."""

    def __init__(self) -> None:
        self.log: list[tuple[int, int]] = []  # (process number, call index), in arrival order
        self.lock = threading.Lock()
        self.number = 0  # the process served now (0: the uninterrupted run's)
        self.pid = 0  # its operating-system pid
        self.kill_at: tuple[int, str, float] | None = None  # (n-th request of this pid, "before"|"after", delay)
        self.seen = 0  # requests of the current pid
        self.killed = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: the headers and the body go out as two writes; with Nagle the body
            # waits for the client's delayed ACK (~40 ms a call), so an "after" kill 0-5 ms
            # later would land before the answer reached the process.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # the name http.server calls
                body, prompt = read_chat(self)
                first = self.path.split("/")[1]  # `/p<n>/v1/…` for a chain's process n
                number = int(first[1:]) if first.startswith("p") and first[1:].isdigit() else 0
                with server.lock:
                    server.log.append((number, int(prompt.split()[-1])))
                    plan = None
                    if number == server.number:  # a late request of a dead process counts for nothing
                        server.seen += 1
                        plan = server.kill_at if server.kill_at and server.kill_at[0] == server.seen else None
                if plan is not None and plan[1] == "before":
                    server.kill(number)
                    return
                send_completion(self, body["model"], f"ans:{prompt}")
                self.wfile.flush()
                if plan is not None:
                    time.sleep(plan[2])
                    server.kill(number)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = _QuietServer(("127.0.0.1", 0), Handler)
        self.root = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.url = f"{self.root}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def url_for(self, number: int) -> str:
        """The base URL process `number` of a chain is given."""
        return f"{self.root}/p{number}/v1"

    def kill(self, number: int) -> None:
        with self.lock:
            if number != self.number or self.killed:
                return
            self.killed = True
            pid = self.pid
        os.kill(pid, signal.SIGKILL)

    def serve(self, number: int, pid: int, kill_at: tuple[int, str, float] | None) -> None:
        with self.lock:
            self.number, self.pid, self.kill_at, self.seen, self.killed = number, pid, kill_at, 0, False


def journaled_calls(folder: Path) -> tuple[str | None, int]:
    """The run journaled in `folder` that can go on (the newest with a header), and how many
    of its provider calls the journal holds."""
    runs = sorted((folder / ".flow" / "runs").glob("r*.jsonl"), key=lambda p: p.stat().st_mtime)
    for path in reversed(runs):
        checkpoint = read_checkpoint(path)
        if checkpoint.header is not None:
            return path.stem, sum(1 for key in checkpoint.effects if key.startswith("agent:"))
    return None, 0


def one_chain(folder: Path, rng: random.Random, env: dict[str, str], wanted: int = KILLS_PER_RUN) -> dict[str, Any]:
    """One run killed `wanted` times, then resumed to its end. A kill timed by the clock can
    come after the run has ended (a fast machine): the chain then ends with fewer kills, and
    the test carries the rest over to a new chain."""
    server = CountingServer()
    env = {**env, "OPENAI_API_KEY": "sk-loopback"}
    (folder / "prog.flow").write_text(PROGRAM, encoding="utf-8")
    kills, processes, modes = 0, [], []
    while True:
        number = len(processes) + 1
        run_id, held = journaled_calls(folder)
        command = [*FLOW, "run", "prog.flow"] if run_id is None else [*FLOW, "resume", run_id]
        plan: tuple[int, str, float] | None = None
        timer: threading.Timer | None = None
        process = subprocess.Popen([*command, "--format", "json"], cwd=folder,
                                   env={**env, "OPENAI_BASE_URL": server.url_for(number)},
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if kills < wanted:
            if rng.random() < 0.3:
                delay = rng.uniform(0.05, 2.6)
                modes.append(f"time {delay:.2f}s")
                timer = threading.Timer(delay, server.kill, (number,))
            else:
                plan = (rng.randint(1, max(1, min(8, CALLS - held))), rng.choice(["before", "after"]),
                        rng.uniform(0, 0.005))
                modes.append(f"request {plan[0]} {plan[1]}")
        server.serve(number, process.pid, plan)
        if timer is not None:
            timer.start()
        out, err = process.communicate(timeout=120)
        if timer is not None:
            timer.cancel()
        processes.append({"pid": number, "held": held, "code": process.returncode})  # the server's number for it
        if process.returncode == -signal.SIGKILL:
            kills += 1
            continue
        if process.returncode != 0:  # the last kill came after the journal's end line: nothing to resume
            refusal = json.loads(out)["error"]
            assert refusal["code"] == "run-ended" and refusal["details"]["status"] == "completed", (out, err)
            # The answer went to a killed process's stdout; the journal says the run completed,
            # and check_exactly_once still holds its provider calls to once each.
            return {"result": None, "log": list(server.log), "processes": processes, "kills": kills, "modes": modes}
        result = json.loads(out)
        return {"result": result, "log": list(server.log), "processes": processes, "kills": kills, "modes": modes}


def check_exactly_once(chain: dict[str, Any]) -> int:
    """Per call: every request but its last came from a process that died with that call as
    its last request; no process asked for a call its journal held. Returns the repeats."""
    log: list[tuple[int, int]] = chain["log"]
    held = {p["pid"]: p["held"] for p in chain["processes"]}
    by_pid: dict[int, list[int]] = {}
    for pid, call in log:
        by_pid.setdefault(pid, []).append(call)
    for pid, calls in by_pid.items():
        assert min(calls) >= held[pid], f"process {pid} asked for call {min(calls)}, which its journal held"
        assert calls == list(range(held[pid], held[pid] + len(calls))), calls
    repeats = 0
    for call in range(CALLS):
        askers = [pid for pid, c in log if c == call]
        assert askers, f"call {call} was never asked"
        for pid in askers[:-1]:
            assert by_pid[pid][-1] == call, f"call {call} asked again after process {pid} had gone past it"
            repeats += 1
    return repeats


def test_a_run_killed_at_100_random_moments_resumes_to_the_same_result_and_asks_each_call_once(
        tmp_path: Path) -> None:
    started = time.perf_counter()
    seed = int(os.environ.get("FLOW_KILL_SEED", "1717"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "FLOW_ALLOW"))}
    # the uninterrupted run
    plain = tmp_path / "plain"
    plain.mkdir()
    baseline = one_chain_uninterrupted(plain, env)
    assert baseline["ok"] is True and baseline["result"] == EXPECTED
    folders = []
    for n in range(RUNS):
        folders.append(tmp_path / f"chain{n}")
        folders[-1].mkdir()
    # A `flow run` keeps about two thirds of a core busy (its imports, then its sandbox):
    # three chains at a time fill two cores without leaving a process waiting for one.
    with ThreadPoolExecutor(max_workers=3) as pool:
        chains = list(pool.map(lambda nf: one_chain(nf[1], random.Random(seed + nf[0]), env), enumerate(folders)))
    total_kills = sum(c["kills"] for c in chains)
    for extra in range(RUNS):  # kills timed after a run's end, carried over to new runs until there are 100
        if total_kills >= RUNS * KILLS_PER_RUN:
            break
        folder = tmp_path / f"extra{extra}"
        folder.mkdir()
        chains.append(one_chain(folder, random.Random(seed + RUNS + extra), env, RUNS * KILLS_PER_RUN - total_kills))
        total_kills += chains[-1]["kills"]
    repeats = 0
    for chain in chains:
        if chain["result"] is not None:
            assert chain["result"]["ok"] is True and chain["result"]["result"] == baseline["result"]
        repeats += check_exactly_once(chain)
    assert sum(c["result"] is not None for c in chains) >= RUNS // 2, "most chains print their result"
    requests = sum(len(c["log"]) for c in chains)
    elapsed = time.perf_counter() - started
    print(f"\n{total_kills} kills over {len(chains)} runs of {CALLS} calls (seed {seed}), "
          f"{sum(len(c['processes']) for c in chains)} processes; every run ended with the uninterrupted result; "
          f"{requests} provider requests for {len(chains) * CALLS} calls: {repeats} repeats, each the call in flight at a "
          f"kill, none of a journaled call; {elapsed:.1f} s")
    assert total_kills == RUNS * KILLS_PER_RUN
    assert requests == len(chains) * CALLS + repeats
    assert repeats <= total_kills


def one_chain_uninterrupted(folder: Path, env: dict[str, str]) -> dict[str, Any]:
    server = CountingServer()
    (folder / "prog.flow").write_text(PROGRAM, encoding="utf-8")
    done = subprocess.run([*FLOW, "run", "prog.flow", "--format", "json"], cwd=folder, capture_output=True, text=True,
                          env={**env, "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-loopback"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(c for _, c in server.log) == list(range(CALLS))
    result: dict[str, Any] = json.loads(done.stdout)
    return result
