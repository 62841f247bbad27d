"""What an agent call is to the pipeline: the agent's declaration as the host reads it
(`AgentSpec`), one call's state while it runs (`AgentCall`), and the checks of what the
sandbox sends with a call (its options, an `expect` answer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.errors import CapabilityViolationError
from flow_kernel.json_text import encoder
from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.env import AgentInfo
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.lang.prices import Price
from flow_kernel.lang.prompt_files import PromptFile
from flow_kernel.lang.schema import type_schema
from flow_kernel.runtime.providers.base import MAX_TOOL_CALLS, ToolSpec
from flow_kernel.runtime.providers.streaming import DeltaMerger

# `json.dumps(value, sort_keys=True)` (a schema's lookup key), without a new encoder per call.
sorted_json = encoder(sort_keys=True)


@dataclass
class AgentSpec:
    name: str
    model: str
    fields: dict[str, Any]
    tools: list[str]
    decl: ast.AgentDecl
    prompt_files: list[PromptFile] = field(default_factory=list)  # read at check time (lang/check_prompts.py)


@dataclass(slots=True)
class AgentCall:
    """One agent call as the attempt loop and its layers see it."""

    spec: AgentSpec
    payload: dict[str, Any]
    label: str
    occurrence: int
    schema: dict[str, Any]
    provider: str
    model: str
    system: str
    prompt: str
    tools: list[ToolSpec]
    identity: str = ""  # what the cassette hashes: the prompt, plus the digests of the agent's prompt files
    log: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str | None] = field(default_factory=list)
    schema_key: str = ""
    merger: DeltaMerger | None = None  # its streamed text, merged into `agent.delta` events (streaming.py)
    partial: str | None = None  # what a failed attempt's stream had written, for the trace
    price: Price | None = None  # the model's price (lang/prices.py); None: unknown
    priced: bool = False  # a price, of a provider that is not local: its events and trace show `cost`
    cost: float = 0.0  # what its replies cost so far
    sent: bool = False  # whether the current attempt's request went to a provider
    # The output tokens its cost reservations assume (cost.py); its requests carry them as
    # their cap. None: no `cost` limit encloses the call.
    output_cap: int | None = None
    max_tool_calls: int = MAX_TOOL_CALLS  # the tool calls each attempt may make (request.py `max_tool_calls`)


def agent_spec(node: ast.Decl, tools: list[str], info: AgentInfo | None = None) -> AgentSpec:
    """An agent's declaration as the host reads it: its literal fields (and the texts of its
    `file("…")` fields, as the checker read them), its tools and prompt files."""
    assert isinstance(node, ast.AgentDecl)
    fields: dict[str, Any] = {}
    for f in node.fields:
        value = literal_value(f.value) if isinstance(f.value, ast.Expr) else NOT_LITERAL
        if value is not NOT_LITERAL:
            fields[f.name.name] = value
    if info is not None:
        fields.update(info.texts)
    return AgentSpec(node.name.name, str(fields.get("model", "default")), fields, list(tools), node,
                     list(info.prompt_files) if info is not None else [])


def prompt_files_identity(files: list[PromptFile]) -> str:
    """The part of a call's cassette identity that stands for its prompt files: one line per
    file with the digest of its text, so an edited file is a replay miss whose diff names it.
    Empty when the agent has none (cassettes recorded before prompt files still match)."""
    return "".join(f"\n[prompt file {f.path} ({f.used_for}): sha256 {f.digest}]" for f in files)


def compiled_output_schemas(check: CheckResult) -> dict[str, dict[str, Any]]:
    """Every output schema the program's agent calls may use, as the code generator wrote
    them (`type_schema` of each call site's output type, and of each agent's declared output),
    by their JSON text."""
    types = list(check.call_outputs.values())
    types += [entry.agent.output for entry in check.decls.values() if entry.agent is not None]
    schemas = (type_schema(t) for t in types)
    return {sorted_json(schema): schema for schema in schemas}


Path = tuple[str | int, ...]


class CompiledSchemas:
    """The program's output schemas (`compiled_output_schemas`) and which one a request's
    `schema` names: the compiled schema whose sorted JSON text is the sent one's.

    A request carries the same schema call after call, and its sorted text costs ~2 µs for
    a bare `string` and ~9 µs for a record of four fields. So the schema an agent's last
    call named is tried first, by value: equal as Python values, and each bool and number
    in it written the same (True == 1 and 1 == 1.0 in Python, not in JSON text), which is
    the same JSON text up to the order of keys, as the sorted text would have found."""

    def __init__(self, check: CheckResult) -> None:
        self.by_text = compiled_output_schemas(check)
        self._recent: dict[str, tuple[dict[str, Any], str, list[Path]]] = {}  # agent -> schema, text, its scalars

    def find(self, agent: str, sent: Any) -> tuple[dict[str, Any], str] | None:
        """The compiled schema `sent` names and its sorted text; None if it names none."""
        if not isinstance(sent, dict):
            return None
        recent = self._recent.get(agent)
        if recent is not None and sent == recent[0] and _same_scalars(sent, recent[0], recent[2]):
            return recent[0], recent[1]
        text = sorted_json(sent)
        found = self.by_text.get(text)
        if found is None:
            return None
        self._recent[agent] = (found, text, _scalar_paths(found, ()))
        return found, text


def _scalar_paths(value: Any, path: Path) -> list[Path]:
    """Where `value` holds a bool or a number (the values Python's == may confuse)."""
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _scalar_paths(item, (*path, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _scalar_paths(item, (*path, index))]
    return [path] if isinstance(value, bool | int | float) else []


def _same_scalars(sent: Any, compiled: Any, paths: list[Path]) -> bool:
    """Whether two values already equal hold the same bools and numbers at `paths` (their
    `repr` is their JSON text: `True`/`1`/`1.0`, `-0.0`/`0.0`)."""
    for path in paths:
        left, right = sent, compiled
        for step in path:
            left, right = left[step], right[step]
        if repr(left) != repr(right):
            return False
    return True


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# What the generated code puts in an agent call's options (codegen `agent_call`), by type.
_OPTION_TYPES: dict[str, Callable[[Any], bool]] = {
    "label": lambda v: v is None or isinstance(v, str),
    "schema": lambda v: isinstance(v, dict),
    "tools": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
    "repair": _number,
    "timeout": lambda v: v is None or _number(v),
    "choice": lambda v: v is None or isinstance(v, list),
    "max_tool_calls": lambda v: v is None or _number(v),
}


def checked_options(payload: dict[str, Any]) -> dict[str, Any]:
    """An agent request's options, shaped as the generated code shapes them. Any other shape
    came from a bypassed sandbox: a `capability-violation`, never a host TypeError (`isolate`)."""
    frame = payload.get("frame")
    if frame is not None and not isinstance(frame, str):  # a dict key later: a list would be a host TypeError
        raise CapabilityViolationError("an agent request's frame must be a string")
    options = payload.get("options") or {}
    if not isinstance(options, dict):
        raise CapabilityViolationError("an agent request's options must be an object")
    for key in options:  # the few options a call has, rather than every known one
        valid = _OPTION_TYPES.get(key)
        if valid is not None and not valid(options[key]):
            wrong = next(name for name, check in _OPTION_TYPES.items() if name in options and not check(options[name]))
            raise CapabilityViolationError(f"an agent request's option `{wrong}` has the wrong type",
                                           details={"option": wrong})
    return options


def expect_messages(reply: Any) -> list[str]:
    """The sandbox's answer to an `expect` check: the failed clauses' messages."""
    if not isinstance(reply, list) or not all(isinstance(m, str) for m in reply):
        raise CapabilityViolationError("the sandbox answered an `expect` check with something other than messages")
    return reply
