"""How the suite is split over pytest-xdist workers (`pytest -n 2 --dist loadfile`, the
README's test command; docs/testing.md, "Two workers").

A worker takes whole *units*, never single tests:

- a test module is one unit (what `--dist loadfile` does), so that its module- and
  class-scoped fixtures (kernels, sandboxes, servers, `flow bench --quick`) start once;
- the modules of `UNITS` go together: "browser" shares one JupyterLab and one Chromium
  (the package-scoped fixtures of tests/browser/conftest.py); "ray" keeps the session's
  Ray cluster (tests/eval/conftest.py) and the two probe clusters of
  tests/security/test_ray_door.py on one worker, one after the other, never two clusters
  at once on two cores.

Units are handed out heaviest first (`HEAVIEST`, from the suite's `--durations`), then in
collection order: the longest start at once and the short ones fill the gaps, instead of a
3-minute test starting last while the other worker idles.

The units are named by module path, not by xdist's `xdist_group` mark: with pytest 9, xdist
3.8's `--dist loadgroup` no longer sees the group (it appends it to a test's id through an
attribute pytest 9 does not read), so marked tests were spread over both workers.

A test marked `alone` owns the machine while it runs (it measures the machine: a browser's
long tasks, a deadline's lateness): before it starts, the other worker finishes the test it is
in and then waits until this one is done. The lock is two `flock`s in the run's temporary
folder: `alone` takes the turnstile, then the machine exclusively; every other test passes
the turnstile and holds the machine shared, so a waiting `alone` test is never starved.
The test whose setup starts the session's Ray cluster is `alone` too (`alone()`).

With `-n 0`, `-p no:xdist` or no `-n` (a targeted run), nothing here changes the run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

LOCKS = "FLOW_TEST_LOCKS"  # the folder of the run's two locks (`alone`, below)

# Units of more than one module: name -> the modules (or folders, ending in "/") in it.
UNITS = {
    "browser": ("tests/browser/",),
    "ray": ("tests/eval/test_eval_ray.py", "tests/eval/test_eval_cancel.py", "tests/security/test_ray_door.py"),
}

# The units that take longest (seconds of a serial run, docs/testing.md), heaviest first.
HEAVIEST = (
    "browser",                                      # ~400 s: nine files, Run All of every lesson
    "tests/reliability/test_kill_resume.py",        # ~100-200 s: 100 kills of `flow run`
    "ray",                                          # ~130 s: three cluster starts and their evals
    "tests/test_gallery.py",                        # ~60-90 s: nbval of every notebook
    "tests/security/test_run_doors.py",             # ~70 s
    "tests/security/test_ceilings.py",              # ~60 s
    "tests/test_bench_smoke.py",                    # ~40 s: `flow bench --quick`
    "tests/runtime/test_cassette.py",               # ~40-60 s
    "tests/runtime/test_cost_reservations.py",      # ~40 s
    "tests/protocols/test_serve_deadlines.py",      # ~35 s
    "tests/reliability/test_scripted_resume.py",    # ~30 s
    "tests/protocols/test_serve_load.py",           # ~30 s of load by design
    "tests/security/test_unpinned_grants.py",       # ~30 s
    "tests/kernel/test_restart.py",                 # ~30 s
    "tests/test_wheel_install.py",                  # ~25 s: a wheel into a fresh venv
    "tests/kernel/test_kernel_resume.py",           # ~25 s
)


def unit_of(nodeid: str) -> str:
    """The unit of a test, by its id: the `UNITS` entry its module is in, else the module."""
    module = nodeid.split("::", 1)[0]
    for unit, members in UNITS.items():
        if any(module == member or (member.endswith("/") and module.startswith(member)) for member in members):
            return unit
    return module


def rank(unit: str) -> int:
    """Where a unit stands in the hand-out order: its place in HEAVIEST, else after them."""
    return HEAVIEST.index(unit) if unit in HEAVIEST else len(HEAVIEST)


@pytest.hookimpl(trylast=True)  # after deselection (-k, -m), on what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Every worker sorts the same collection the same way (a stable sort), so the
        # collections still match; the scheduler takes units in this order.
        items.sort(key=lambda item: rank(unit_of(item.nodeid)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `--dist loadfile`: the units above, in the workers' (sorted) collection order."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class UnitScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # keep the heaviest-first order of the collection
    return UnitScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    """The controller of a distributed run makes the lock folder its workers inherit."""
    if config.getoption("dist", "no") != "no" and not os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ[LOCKS] = tempfile.mkdtemp(prefix="flow-test-locks-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER") and LOCKS in os.environ:
        shutil.rmtree(os.environ.pop(LOCKS), ignore_errors=True)


def _lock(path: Path, how: int) -> int:
    """An open descriptor of `path` holding `flock(how)` (blocks until granted)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, how)
    return fd


@contextmanager
def machine(folder: Path, alone: bool) -> Iterator[None]:
    """Hold the machine of the run whose locks are in `folder`: shared, or for an `alone`
    test exclusively. An `alone` test waits for the tests holding it; tests asking after it
    wait at the turnstile until it is done."""
    turnstile = _lock(folder / "turnstile.lock", fcntl.LOCK_EX)
    try:
        held = _lock(folder / "machine.lock", fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
    finally:
        os.close(turnstile)
    try:
        yield
    finally:
        os.close(held)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under xdist: a test's setup, call and teardown hold the machine (`machine`)."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or LOCKS not in os.environ:
        return (yield)
    with machine(Path(os.environ[LOCKS]), alone=alone(item)):
        return (yield)


def alone(item: pytest.Item) -> bool:
    """Marked `alone`, or the test whose setup starts the session's Ray cluster
    (tests/eval/conftest.py): Ray gives its processes a fixed 15 s to come up
    (runtime/eval/ray_executor.py), which a loaded machine can miss."""
    if item.get_closest_marker("alone") is not None:
        return True
    ray = sys.modules.get("ray")
    starting = ray is None or not ray.is_initialized()
    return starting and "ray_cluster" in getattr(item, "fixturenames", ())
