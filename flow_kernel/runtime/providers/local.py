"""The deterministic providers: `scripted` (an agent's `script`) and `mock`
(schema-valid values seeded by the agent and the prompt), language.md §4.2.1. Both are
entries of the one provider table (table.py: `local`, made from the program when a run
starts; the scripted one with `calls_tools=False`).

`mock` also exercises an agent's tools, so that tools and approval-gated tools can be
shown and tested with no model: before answering, it calls each tool the call was given
once, in order, with schema-valid arguments seeded like its output.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from flow_kernel.errors import AgentInvocationError, OutputValidationError
from flow_kernel.lang import ast, patterns
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.providers.table import ProviderSetup
from flow_kernel.runtime.providers.timer import precise_sleep


@dataclass(frozen=True)
class Reply:
    value: Any = None
    fail: tuple[str, str] | None = None  # (code, message)
    delay_ms: int = 0


@dataclass(frozen=True)
class When:
    pattern: str
    reply: Reply

    def matches(self, prompt: str) -> bool:
        if len(self.pattern) >= 2 and self.pattern.startswith("/") and self.pattern.endswith("/"):
            # On RE2, linear in the prompt (a prompt can carry a model's or a tool's text);
            # the checker refused a regex RE2 cannot run (F3013, F3016, F4017).
            try:
                return patterns.search(self.pattern[1:-1], prompt)
            except patterns.PatternError:
                return False
        return self.pattern in prompt


@dataclass(frozen=True)
class Script:
    ordered: tuple[Reply, ...]
    whens: tuple[When, ...]


def _reply(node: ast.Expr) -> Reply:
    if isinstance(node, ast.Call) and isinstance(node.callee, ast.Name):
        args = [a.value for a in node.args]
        if node.callee.name == "fail":
            return Reply(fail=(str(literal_value(args[0])), str(literal_value(args[1]))))
        if node.callee.name == "slow":
            inner = _reply(args[1])
            delay = literal_value(args[0])
            return Reply(inner.value, inner.fail, delay if isinstance(delay, int) else 0)
    value = literal_value(node)
    return Reply(None if value is NOT_LITERAL else value)


def parse_script(agent: ast.AgentDecl) -> Script:
    ordered: list[Reply] = []
    whens: list[When] = []
    for f in agent.fields:
        if f.name.name != "script" or not isinstance(f.value, ast.ArrayLit):
            continue
        for item in f.value.items:
            if isinstance(item, ast.Call) and isinstance(item.callee, ast.Name) and item.callee.name == "when":
                args = [a.value for a in item.args]
                whens.append(When(str(literal_value(args[0])), _reply(args[1])))
            else:
                ordered.append(_reply(item))
    return Script(tuple(ordered), tuple(whens))


class ScriptedProvider:
    """One cursor per agent per run; a matching `when` answers every attempt of its call.

    The cursor counts the run's attempts, wherever their answers come from: an attempt
    answered from the run's journal (a resumed run) moves it as the live attempt did
    (`passed`: it `KeepsPlace`, base.py), so a resumed run goes on with the entry the
    journal's last attempt left."""

    def __init__(self, scripts: dict[str, Script]) -> None:
        self.scripts = scripts
        self.cursors: dict[str, int] = {}

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        """The script's entry for this attempt (`_take`): its value after its delay, or its
        failure; `agent-invocation` when the script has no entry for the prompt."""
        agent = request.agent
        reply = self._take(agent, self.scripts[agent], request.call_prompt)
        if reply is None:
            raise AgentInvocationError(f"the script of `{agent}` has no reply for this prompt")
        if reply.delay_ms:  # ends at its deadline (timer.py), as a provider's reply is heard
            await precise_sleep(reply.delay_ms / 1000)
        if reply.fail is not None:
            code, message = reply.fail
            cls = OutputValidationError if code == "output-validation" else AgentInvocationError
            raise cls(message)
        return ProviderReply(reply.value)

    def passed(self, agent: str, prompt: str) -> None:
        """An attempt of `agent` answered elsewhere (the journal): the entry it took is taken."""
        script = self.scripts.get(agent)
        if script is not None:
            self._take(agent, script, prompt)

    def _take(self, agent: str, script: Script, prompt: str) -> Reply | None:
        """The attempt's entry: the first matching `when`, else the next ordered one (the
        cursor moves); None when the script has neither."""
        reply = next((w.reply for w in script.whens if w.matches(prompt)), None) if script.whens else None
        if reply is None and script.ordered:
            cursor = self.cursors.get(agent, 0)
            self.cursors[agent] = cursor + 1
            reply = script.ordered[cursor % len(script.ordered)]
        return reply


def build_mock(setup: ProviderSetup) -> MockProvider:
    """The `mock` entry's provider (it needs nothing from the setup)."""
    return MockProvider()


def build_scripted(setup: ProviderSetup) -> ScriptedProvider:
    """The `scripted` entry's provider: the scripts of the program's agents."""
    return ScriptedProvider({name: parse_script(decl) for name, decl in setup.agents.items()})


class MockProvider:
    """Deterministic schema-valid values: the same agent, prompt and schema give the same value."""

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        seed = hashlib.sha256(f"{request.agent}\x00{request.call_prompt}".encode()).digest()
        rng = random.Random(seed)
        calls: list[dict[str, Any]] = []
        if request.call_tool is not None:
            for tool in request.tools:
                arguments = _MockValue(rng, tool.parameters).value(tool.parameters, 0)
                arguments = arguments if isinstance(arguments, dict) else {}
                calls.append({"tool": tool.name, "arguments": arguments,
                              "result": await request.call_tool(tool.name, arguments)})
        return ProviderReply(_MockValue(rng, request.schema).value(request.schema, 0), tool_calls=calls)


class _MockValue:
    def __init__(self, rng: random.Random, root: dict[str, Any]) -> None:
        self.rng = rng
        self.defs: dict[str, Any] = root.get("$defs", {})

    def value(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > 8:
            return None
        if "$ref" in schema:
            return self.value(self.defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {}), depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        if "anyOf" in schema:
            options = [o for o in schema["anyOf"] if not (isinstance(o, dict) and o.get("type") == "null")] or schema["anyOf"]
            return self.value(self.rng.choice(options), depth + 1)
        kind = schema.get("type")
        if kind == "string":
            low = int(schema.get("minLength", 1))
            high = max(low, int(schema.get("maxLength", max(low, 12))))
            words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
            text = " ".join(self.rng.choice(words) for _ in range(3))
            while len(text) < low:
                text += " " + self.rng.choice(words)
            return text[:high]
        if kind == "integer":
            low = int(schema.get("minimum", 0))
            return self.rng.randint(low, int(schema.get("maximum", low + 100)))
        if kind == "number":
            bottom = float(schema.get("minimum", 0))
            return round(self.rng.uniform(bottom, float(schema.get("maximum", bottom + 100))), 2)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        if kind == "array":
            n = max(int(schema.get("minItems", 1)), min(2, int(schema.get("maxItems", 2))))
            return [self.value(schema.get("items", {}), depth + 1) for _ in range(n)]
        if kind == "object":
            props: dict[str, Any] = schema.get("properties", {})
            return {k: self.value(v, depth + 1) for k, v in props.items() if k in schema.get("required", [])}
        return "mock"

