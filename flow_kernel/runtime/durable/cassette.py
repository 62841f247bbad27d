"""Record and replay of agent answers (runtime.md §4.2).

A cassette is JSON lines, one per provider attempt: `{"scope", "agent", "label",
"occurrence", "attempt", "prompt_hash", "prompt", "output", "usage"}` or, for a failed
attempt, `"error": {"code", "message"}`. A call's identity is its key — scope, agent,
label, occurrence, attempt — plus the hash of its canonical request (the compiled user
prompt):

- `scope` is the program the run executed and, after `#`, the workflow it ran. A source
  with a name of its own (a file, `flow run prog.flow`) is known by its file name, so a file
  whose prompt was edited still finds its entries and says what changed. A notebook cell
  has no stable name (`<cell N>` counts executions and changes on every re-run), so it is
  known by a hash of its text (`cell:…`): re-running an unchanged cell, or the same cell
  after others were added, moved or re-run, finds its own answers; two cells that both
  call `a("…")` at line 1, column 9 do not share them.
- `label` is the call's label or, by default, where the call is written (`agent@line:col`).
- `occurrence` counts the calls with the same agent and label *within one run*, in the
  order they start (deterministic: `parallelMap` starts items in input order), so running
  a cell twice replays the same answers twice.
- `attempt` counts the provider attempts of that call (repairs and retries included), so
  a replay walks the same attempts and gives the same events.

An entry whose prompt hash differs, or a call with no entry, is a miss that names the
nearest recorded request and shows a short diff of the prompt (`prompt` keeps the text
for that). Recording a scope again replaces that scope's entries, keeping every other
scope's: the file is rewritten atomically (a new file renamed over the old one) after
each answer. Only what the agent was asked and answered is written: no keys, headers or
provider settings. Tools an agent called while recording are not called again on replay:
the recorded answer already reflects them.

Cassettes recorded before scopes (no `scope` field) still load: their entries answer
any scope, by agent, label, occurrence and attempt as before; a miss on them cannot show
a diff (they kept no prompt text), and the message says to record again for one.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any

from flow_kernel.errors import AgentInvocationError, FlowError
from flow_kernel.runtime.durable.nofollow import LinkRefused, open_file_in_place
from flow_kernel.runtime.providers.base import ProviderReply

Key = tuple[str, str, str, int, int]  # scope, agent, label, occurrence, attempt
LEGACY = ""  # the scope of an entry recorded before scopes existed: it answers any scope
PROMPT_KEPT = 20_000  # characters of the prompt kept for the miss diff


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()[:16]


def source_scope(name: str, text: str, workflow: str | None = None) -> str:
    """The scope of a run of the source `name` (see the module docstring): its own name,
    or for an anonymous cell (`<cell N>`, `<…>`) a hash of its text, then `#workflow`."""
    if name.startswith("<"):
        base = "cell:" + hashlib.sha256(text.strip().encode()).hexdigest()[:16]
    else:
        base = Path(name).name  # `flow run prog.flow` and `flow run /abs/prog.flow` are one program
    return f"{base}#{workflow}" if workflow else base


def entry_key(line: str) -> Key:
    """The key of one cassette line; ValueError, KeyError or TypeError if it is not an entry."""
    e = json.loads(line)
    scope = e.get("scope", LEGACY)
    if not isinstance(scope, str):
        raise TypeError("scope")
    return scope, str(e["agent"]), str(e["label"]), int(e["occurrence"]), int(e["attempt"])


def _parse(text: str, where: Path) -> list[dict[str, Any]]:
    """The entries of a cassette's text (a torn last line dropped); ValueError for anything else."""
    lines = text.splitlines()
    entries = []
    for number, line in enumerate(lines, 1):
        try:
            entry_key(line)
            entries.append(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError):
            if number == len(lines) and not text.endswith("\n"):
                break  # a torn last line: the recorder was killed mid-write; what came before stays
            raise ValueError(f"{where}:{number}: not a cassette entry") from None
    return entries


def is_cassette(text: str) -> bool:
    """Every line is a cassette entry (a torn last line after entries allowed); empty is one too."""
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        try:
            entry_key(line)
        except (ValueError, KeyError, TypeError, AttributeError):
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


def _replace_file(path: Path, data: bytes) -> None:
    """Write `data` as the file at `path` atomically: a new file beside it, flushed, then
    renamed over it. A rename replaces a link at `path` itself, never its target."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def check_recordable(path: Path | str) -> None:
    """Refuse a recording to `path` before anything runs (`flow run --record`), as the
    recorder would, without changing anything."""
    os.close(_open_recordable(Path(path)))


class CassetteRecorder:
    """Records into the cassette at `path`, keeping the entries of scopes the recording does
    not run again. The file is checked without following a link there, and it is replaced
    only when it is new, empty or a cassette: `%record notes.py` must not wipe the notes.
    Refusals are ValueError, said plainly."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        fd = _open_recordable(self.path)
        try:
            os.lseek(fd, 0, os.SEEK_SET)  # the check above read it to the end
            with os.fdopen(os.dup(fd), "rb") as existing:
                self.entries = _parse(existing.read().decode("utf-8"), self.path)
        finally:
            os.close(fd)
        self._closed = False
        # scope -> the run that recorded it last: the first answer of a new run of a scope
        # drops that scope's older entries (re-recording a cell replaces, not piles up)
        self._claimed: dict[str, object] = {}
        _replace_file(self.path, self._text())  # a torn last line is gone; the file exists from now on

    def close(self) -> None:
        self._closed = True

    def _text(self) -> bytes:
        return "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in self.entries).encode()

    def write(self, key: Key, prompt: str, output: Any = None, error: FlowError | None = None,
              usage: dict[str, int] | None = None, tool_calls: list[dict[str, Any]] | None = None,
              run: object = None) -> None:
        """One attempt's answer. `run` is a token of the run it belongs to (one object per run):
        the first write of a run for its scope replaces what the cassette held for that scope."""
        if self._closed:
            raise ValueError(f"the recording to {self.path} was closed")
        scope, agent, label, occurrence, attempt = key
        if run is None or self._claimed.get(scope) is not run:
            self._claimed[scope] = run if run is not None else object()
            self.entries = [e for e in self.entries if e.get("scope", LEGACY) != scope]
        entry: dict[str, Any] = {"scope": scope, "agent": agent, "label": label, "occurrence": occurrence,
                                 "attempt": attempt, "prompt_hash": prompt_hash(prompt), "prompt": prompt[:PROMPT_KEPT]}
        if error is not None:
            entry["error"] = {"code": error.code, "message": error.message}
        else:
            entry["output"] = output
            if usage:
                entry["usage"] = usage
            if tool_calls:
                entry["tool_calls"] = tool_calls
        self.entries.append(entry)
        _replace_file(self.path, self._text())


def _short(line: str, width: int = 100) -> str:
    return line if len(line) <= width else line[:width - 1] + "…"


def prompt_diff(recorded: str, now: str, lines: int = 8) -> str:
    """A short unified diff of two prompts: changed lines only, each shortened."""
    changed = [_short(d) for d in difflib.unified_diff(recorded.splitlines(), now.splitlines(), lineterm="", n=0)
               if d[:1] in "+-" and not d.startswith(("+++", "---"))]
    if len(changed) > lines:
        changed = changed[:lines] + [f"… {len(changed) - lines} more changed lines"]
    return "\n".join(changed)


class CassettePlayer:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read the cassette {self.path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise ValueError(f"{self.path}: not a cassette (not UTF-8 text)") from None
        self.entries: dict[Key, dict[str, Any]] = {}
        for entry in _parse(text, self.path):
            self.entries[entry_key(json.dumps(entry))] = entry

    def _nearest(self, key: Key, prompt: str | None) -> dict[str, Any] | None:
        """The recorded request most like this one: the same agent, the same label first,
        then the most similar prompt."""
        scope, agent, label = key[:3]
        same_agent = [e for k, e in self.entries.items() if k[1] == agent]
        if not same_agent:
            return None

        def likeness(e: dict[str, Any]) -> tuple[int, int, float]:
            text = e.get("prompt")
            ratio = difflib.SequenceMatcher(None, text, prompt).quick_ratio() if isinstance(text, str) and prompt else 0.0
            return (e.get("label") == label, e.get("scope") == scope, ratio)

        return max(same_agent, key=likeness)

    def _miss(self, key: Key, prompt: str | None, found: dict[str, Any] | None) -> AgentInvocationError:
        scope, agent, label, occurrence, attempt = key
        near = found if found is not None else self._nearest(key, prompt)
        if found is not None:
            head = (f"the cassette {self.path.name} has an answer for `{label}` (agent `{agent}`, call {occurrence}), "
                    "but for another prompt")
        else:
            head = (f"the cassette {self.path.name} has no answer for `{label}` "
                    f"(agent `{agent}`, call {occurrence}, attempt {attempt})")
        details: dict[str, Any] = {"label": label, "cassette": str(self.path), "scope": scope,
                                   "reason": "prompt-changed" if found is not None else "no-entry"}
        if near is not None:
            where = f"`{near.get('label')}` call {near.get('occurrence')}"
            recorded = near.get("prompt")
            if isinstance(recorded, str) and prompt is not None:
                diff = prompt_diff(recorded, prompt)
                if recorded == prompt:  # the prompt is the same: what changed is the cell or file around it
                    head += (f"; the nearest recorded request is {where}, with the same prompt: the cell's or file's "
                             "text changed (a cell is known by its text, a call by where it is written)")
                else:
                    head += f"; the nearest recorded request is {where}, whose prompt differs:\n{diff or '(only in spacing)'}"
                details["nearest"] = {"label": near.get("label"), "occurrence": near.get("occurrence"), "diff": diff}
            else:
                head += f"; the nearest recorded request is {where} (recorded without its prompt text, so no diff)"
        return AgentInvocationError(head + "\nrecord it again (`%record FILE` or `flow run --record FILE`) "
                                    "to replace this cell's or file's answers", details=details)

    def answer(self, key: Key, prompt: str | None = None) -> ProviderReply:
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries.get((LEGACY, *key[1:]))  # a cassette recorded before scopes
        if entry is None:
            raise self._miss(key, prompt, None)
        if prompt is not None and entry.get("prompt_hash") not in (None, prompt_hash(prompt)):
            raise self._miss(key, prompt, entry)
        if "error" in entry:
            raise FlowError.from_dto({"code": entry["error"].get("code"), "message": entry["error"].get("message")})
        usage = entry.get("usage")
        tool_calls = entry.get("tool_calls")
        return ProviderReply(entry.get("output"), dict(usage) if isinstance(usage, dict) else {},
                             tool_calls=list(tool_calls) if isinstance(tool_calls, list) else [])
