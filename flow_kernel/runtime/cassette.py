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
import os
from pathlib import Path
from typing import Any

from flow_kernel.errors import AgentInvocationError, FlowError
from flow_kernel.runtime.nofollow import LinkRefused, open_file_in_place
from flow_kernel.runtime.provider_base import ProviderReply

Key = tuple[str, str, int, int]  # agent, label, occurrence, attempt


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()[:16]


def entry_key(line: str) -> Key:
    """The key of one cassette line; ValueError, KeyError or TypeError if it is not an entry."""
    e = json.loads(line)
    return str(e["agent"]), str(e["label"]), int(e["occurrence"]), int(e["attempt"])


def is_cassette(text: str) -> bool:
    """Every line is a cassette entry (a torn last line after entries allowed); empty is one too."""
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        try:
            entry_key(line)
        except (ValueError, KeyError, TypeError):
            if number == len(lines) > 1 and not text.endswith("\n"):
                continue  # the recorder was killed mid-line
            return False
    return True


def _open_recordable(path: Path) -> int:
    """The file at `path`, opened without following a link there, if it may be replaced by a
    recording: new, empty or a cassette. Otherwise a ValueError that says why; untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = open_file_in_place(path)
    except LinkRefused as exc:
        raise ValueError(f"cannot record to {path}: {exc}") from None
    except OSError as exc:
        raise ValueError(f"cannot record to {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(os.dup(fd), "rb") as existing:
            text: str | None = existing.read().decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        text = None
    if text is None or not is_cassette(text):
        os.close(fd)
        raise ValueError(f"cannot record to {path}: it holds something that is not a cassette, and a "
                         "recording would replace it (choose a new file, or remove this one)")
    return fd


def check_recordable(path: Path | str) -> None:
    """Refuse a recording to `path` before anything runs (`flow run --record`), as the
    recorder would, without truncating anything."""
    os.close(_open_recordable(Path(path)))


class CassetteRecorder:
    """Writes a new cassette at `path`. The file is opened without following a link there,
    and an existing file is truncated only when it is empty or a cassette: `%record
    notes.py` must not wipe the notes (issue 15). Refusals are ValueError, said plainly."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        fd = _open_recordable(self.path)
        os.ftruncate(fd, 0)  # a recording starts a new cassette
        self._fd: int | None = fd

    def close(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None  # absent when __init__ refused the path
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.close()

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
        if self._fd is None:
            raise ValueError(f"the recording to {self.path} was closed")
        data = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        while data:  # the descriptor opened above: the path is not looked up again
            data = data[os.write(self._fd, data):]


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
                self.entries[entry_key(line)] = json.loads(line)
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
