"""The `openai` provider: any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM,
Ollama, llama.cpp server, LM Studio) through the official `openai` client, with the
output contract as a JSON Schema response format (runtime.md §4.1).

Configuration comes from the host environment only — `OPENAI_BASE_URL` (default the
OpenAI API) and `OPENAI_API_KEY` — and never reaches the sandbox, an event or a cassette.
"""

from __future__ import annotations

import json
import os
from typing import Any

from flow_kernel.errors import AgentInvocationError


class OpenAIProvider:
    def __init__(self, base_url: str | None = None, api_key: str | None = None) -> None:
        try:
            import openai
        except ImportError:
            raise AgentInvocationError("the `openai` provider needs the `openai` package: "
                                       "pip install 'flow-kernel[providers]'") from None
        self._openai = openai
        self.client = openai.AsyncOpenAI(
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "unset",
            max_retries=0,  # retries are the agent's `retry`, counted against `agent_runs`
        )

    async def attempt(self, model: str, system: str, prompt: str, schema: dict[str, Any],
                      repair: dict[str, Any] | None, temperature: float | None) -> Any:
        messages: list[dict[str, str]] = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        if repair is not None:
            messages.append({"role": "assistant", "content": json.dumps(repair["previousOutput"], ensure_ascii=False)})
            messages.append({"role": "user", "content": "Your answer did not meet the output contract:\n"
                             + "\n".join(f"- {e}" for e in repair["errors"]) + "\nAnswer again, correctly."})
        plain_text = schema.get("type") == "string" and len(schema) <= 2
        options: dict[str, Any] = {}
        if not plain_text:
            options["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": "output", "schema": schema, "strict": False}}
        if temperature is not None:
            options["temperature"] = temperature
        try:
            reply = await self.client.chat.completions.create(model=model, messages=messages, **options)  # type: ignore[arg-type]
        except self._openai.APIStatusError as exc:
            raise AgentInvocationError(f"the provider answered {exc.status_code}: {_short(exc.message)}",
                                       details={"status": exc.status_code}) from None
        except self._openai.APIError as exc:  # connection errors, timeouts, unreadable replies
            raise AgentInvocationError(f"the provider could not be reached: {_short(str(exc))}") from None
        content = reply.choices[0].message.content if reply.choices else None
        if content is None:
            raise AgentInvocationError("the provider's reply had no content")
        if plain_text:
            return content
        try:
            return json.loads(content)
        except ValueError:
            return content  # not JSON: the output contract reports it and the repair loop asks again


def _short(text: str) -> str:
    return text if len(text) <= 300 else text[:297] + "…"
