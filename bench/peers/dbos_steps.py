"""DBOS's side of `flow bench --peers`: one DBOS workflow of N steps on a new SQLite system
database; each step returns a small dict, which DBOS writes to SQLite (its checkpoint)
before the workflow goes on. Prints one JSON object: the wall time of every step as the
workflow saw it (µs), the process's CPU over the workflow, and the versions.

Run from bench/peers/.venv (setup.sh): `python dbos_steps.py --steps 1200`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from importlib.metadata import version


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1200)
    args = parser.parse_args()
    from dbos import DBOS, DBOSConfig

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        config: DBOSConfig = {"name": "peers-bench",
                              "system_database_url": f"sqlite:///{os.path.join(folder, 'dbos.sqlite')}",
                              "log_level": "ERROR"}
        DBOS(config=config)

        @DBOS.step()
        def step(i: int) -> dict[str, int]:
            return {"id": i}

        @DBOS.workflow()
        def many(n: int) -> list[float]:
            times = []
            for i in range(n):
                t0 = time.perf_counter()
                if step(i)["id"] != i:
                    raise SystemExit("a DBOS step returned the wrong value")
                times.append((time.perf_counter() - t0) * 1e6)
            return times

        DBOS.launch()
        try:
            cpu0 = time.process_time()
            wall0 = time.perf_counter()
            step_us = many(args.steps)
            wall = time.perf_counter() - wall0
            cpu = time.process_time() - cpu0
        finally:
            DBOS.destroy()
    json.dump({"tool": "dbos", "version": version("dbos"), "steps": args.steps, "step_us": step_us,
               "workflow_s": wall, "cpu_s": cpu}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
