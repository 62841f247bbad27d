"""Inspect AI's side of `flow bench --peers`: an eval of the shared dataset (JSON lines of
`{"id", "input": {"question"}, "expected"}`, the file `flow eval` reads) with Inspect's
offline mock model, `mockllm/model`, answering every sample "ok", the `generate()` solver
and the `exact()` scorer, at `--concurrency` samples and connections at once. Prints one
JSON object: items, the eval call's wall time, the accuracy, the version.

Run from bench/peers/.venv (setup.sh): `python inspect_eval.py DATA.jsonl --concurrency 8`."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from importlib.metadata import version
from typing import Any


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample, json_dataset
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import exact
    from inspect_ai.solver import generate

    def sample(record: dict[str, Any]) -> Sample:
        return Sample(id=record["id"], input=record["input"]["question"], target=record["expected"])

    def answer(*_request: Any) -> ModelOutput:
        output = ModelOutput.from_content(model="mockllm", content="ok")
        # With usage given, mockllm does not count the prompt's tokens with tiktoken, which
        # downloads its encoding on first use (this harness runs offline; Flow's scripted
        # model counts no tokens either).
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return output

    dataset = json_dataset(args.data, sample)
    model = get_model("mockllm/model", custom_outputs=answer)
    task = Task(dataset=dataset, solver=generate(), scorer=exact())
    with tempfile.TemporaryDirectory() as logs:
        started = time.perf_counter()
        log, = eval(task, model=model, max_samples=args.concurrency, max_connections=args.concurrency,
                    display="none", log_dir=logs)
        seconds = time.perf_counter() - started
    if log.status != "success" or log.results is None:
        raise SystemExit(f"the Inspect eval did not succeed: {log.status}: {log.error.message if log.error else ''}")
    metrics = log.results.scores[0].metrics
    accuracy = metrics["mean"].value
    json.dump({"tool": "inspect-ai", "version": version("inspect-ai"), "items": len(dataset),
               "concurrency": args.concurrency, "eval_s": seconds, "accuracy": accuracy}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
