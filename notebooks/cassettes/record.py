"""Records cassettes/08-release-notes.jsonl, the cassette lesson 8 replays.

    python notebooks/cassettes/record.py            # against the built-in stand-in server
    python notebooks/cassettes/record.py --live     # against the endpoints in your environment

It runs lesson 8's model-calling cells (notebooks/lessons/n08_record_and_replay.py,
RECORDED) in one Flow session with `record()` on, through the real `openai` and
`anthropic` providers and their official clients. By default they talk to a local
stand-in that speaks the Chat Completions and Messages APIs and answers from the table
below — deterministic and offline, so anyone can re-record the committed cassette. With
`--live` the environment's OPENAI_BASE_URL / OPENAI_API_KEY / ANTHROPIC_API_KEY are used
and a real model answers (the lesson's outputs then change: rebuild it with make.py).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASSETTE = HERE / "08-release-notes.jsonl"
sys.path.insert(0, str(HERE.parent))

# (words in the prompt, answers in turn), the first match wins; the first answer for CSV breaks the contract
# on purpose (an audience that is not allowed), so the lesson shows a recorded repair.
ANSWERS: list[tuple[str, list[Any]]] = [
    ("Review the release notes", [{"approved": False, "comments": [
        "Say which export formats besides CSV got faster, or none.",
        "Link the /v2/search reference from its note."]}]),
    ("CSV", [{"title": "Faster CSV exports", "summary": "Exports to CSV now finish three times faster.",
              "audience": "everyone"},
             {"title": "Faster CSV exports", "summary": "Exports to CSV now finish three times faster.",
              "audience": "users"}]),
    ("/v2/search", [{"title": "Paginated search API", "summary": "The new /v2/search endpoint returns results page by page.",
                     "audience": "developers"}]),
    ("Dark mode", [{"title": "Dark mode", "summary": "The settings page can now be switched to a dark theme.",
                    "audience": "users"}]),
]


class StandIn:
    """A local server speaking POST /v1/chat/completions (OpenAI) and POST /v1/messages
    (Anthropic), answering each prompt from ANSWERS in turn."""

    def __init__(self) -> None:
        self.served: dict[str, int] = {}
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the name http.server calls
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                users = [m["content"] for m in body["messages"] if m["role"] == "user"]
                text = users[-1] if isinstance(users[-1], str) else json.dumps(users[-1])
                first = users[0]
                answer = stand_in.answer(first if isinstance(first, str) else json.dumps(first), text)
                if self.path.endswith("/chat/completions"):
                    payload: dict[str, Any] = {
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": answer}}],
                        "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(answer) // 4,
                                  "total_tokens": (len(text) + len(answer)) // 4}}
                else:
                    payload = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                               "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn",
                               "stop_sequence": None,
                               "usage": {"input_tokens": len(text) // 4, "output_tokens": len(answer) // 4}}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def answer(self, prompt: str, latest: str) -> str:
        for words, replies in ANSWERS:
            if words in prompt:
                turn = self.served.get(words, 0)
                self.served[words] = turn + 1
                return json.dumps(replies[min(turn, len(replies) - 1)])
        return json.dumps({"error": f"the stand-in has no answer for {prompt[:60]!r}"})


def record(live: bool) -> None:
    from lessons.n08_record_and_replay import RECORDED

    from flow_kernel import Session

    stand_in = None
    if not live:
        stand_in = StandIn()
        threading.Thread(target=stand_in.server.serve_forever, daemon=True).start()
        os.environ.update({"OPENAI_BASE_URL": f"http://127.0.0.1:{stand_in.port}/v1", "OPENAI_API_KEY": "stand-in",
                           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{stand_in.port}",
                           "ANTHROPIC_API_KEY": "stand-in"})
    session = Session(directory=HERE.parent, operator="none", journal_dir=None)
    CASSETTE.unlink(missing_ok=True)  # the whole cassette is made here: no entry of an older recording stays
    session.record(CASSETTE)
    try:
        for cell in RECORDED:
            outcome = session.run(cell.source)
            if outcome.error is not None:
                raise SystemExit(f"recording failed: {outcome.error.code}: {outcome.error.message}")
            print(json.dumps(outcome.result, ensure_ascii=False)[:200])
    finally:
        if stand_in is not None:
            stand_in.server.shutdown()
    print(f"wrote {CASSETTE.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    record("--live" in sys.argv[1:])
