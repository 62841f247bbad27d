"""Record and replay of agent answers (runtime.md §4.2).

A cassette is JSON lines, one per provider attempt: `{"agent", "label", "occurrence",
"attempt", "prompt_hash", "output", "usage"}` or, for a failed attempt, `"error": {"code",
"message"}`. `occurrence` counts the calls with the same agent and label in a run, in
the order they start (deterministic: `parallelMap` starts items in input order);
`attempt` counts the provider attempts of that call (repairs and retries included),
so a replay walks the same attempts and gives the same events. `prompt_hash` is the
hash of the compiled user prompt: an entry whose prompt has changed since it was recorded
is a miss, not a stale answer. Only what the agent answered is written: no keys, headers
or provider settings. Tools an agent called while recording are not called again on
replay: the recorded answer already reflects them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from flow_kernel.errors import AgentInvocationError, FlowError
from flow_kernel.runtime.provider_base import ProviderReply

Key = tuple[str, str, int, int]  # agent, label, occurrence, attempt


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()[:16]


class CassetteRecorder:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("", encoding="utf-8")  # a recording starts a new cassette

    def write(self, key: Key, prompt: str, output: Any = None, error: FlowError | None = None,
              usage: dict[str, int] | None = None, tool_calls: list[dict[str, Any]] | None = None) -> None:
        agent, label, occurrence, attempt = key
        entry: dict[str, Any] = {"agent": agent, "label": label, "occurrence": occurrence, "attempt": attempt,
                                 "prompt_hash": prompt_hash(prompt)}
        if error is not None:
            entry["error"] = {"code": error.code, "message": error.message}
        else:
            entry["output"] = output
            if usage:
                entry["usage"] = usage
            if tool_calls:
                entry["tool_calls"] = tool_calls
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")


class CassettePlayer:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.entries: dict[Key, dict[str, Any]] = {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read the cassette {self.path}: {exc.strerror}") from None
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            try:
                e = json.loads(line)
                self.entries[(str(e["agent"]), str(e["label"]), int(e["occurrence"]), int(e["attempt"]))] = e
            except (ValueError, KeyError, TypeError):
                if number == len(lines) and not text.endswith("\n"):
                    break  # a torn last line: the recorder was killed mid-write; what came before replays
                raise ValueError(f"{self.path}:{number}: not a cassette entry") from None

    def answer(self, key: Key, prompt: str | None = None) -> ProviderReply:
        entry = self.entries.get(key)
        agent, label, occurrence, attempt = key
        if entry is None:
            raise AgentInvocationError(f"the cassette {self.path.name} has no answer for `{label}` "
                                       f"(agent `{agent}`, call {occurrence}, attempt {attempt})",
                                       details={"label": label, "cassette": str(self.path)})
        if prompt is not None and entry.get("prompt_hash") not in (None, prompt_hash(prompt)):
            raise AgentInvocationError(f"the cassette {self.path.name} has an answer for `{label}` (agent `{agent}`, "
                                       f"call {occurrence}), but for another prompt: record it again",
                                       details={"label": label, "cassette": str(self.path), "reason": "prompt-changed"})
        if "error" in entry:
            raise FlowError.from_dto({"code": entry["error"].get("code"), "message": entry["error"].get("message")})
        usage = entry.get("usage")
        tool_calls = entry.get("tool_calls")
        return ProviderReply(entry.get("output"), dict(usage) if isinstance(usage, dict) else {},
                             tool_calls=list(tool_calls) if isinstance(tool_calls, list) else [])
