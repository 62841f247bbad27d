"""The split of the suite over two workers (tests/workers.py): which unit a test belongs to,
the order units are handed out in, and that the tables still match the test files."""

from __future__ import annotations

import fcntl
import os
import re
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import workers

ROOT = Path(__file__).resolve().parent.parent
RAY_TEST = re.compile(r"^(pytestmark = |@)pytest\.mark\.ray\b|^def test_\w+\([^)]*\bray_cluster\s*:", re.M)
BROWSER_TEST = re.compile(r"^(pytestmark = |@)pytest\.mark\.browser\b", re.M)


@pytest.mark.parametrize(("nodeid", "unit"), [
    ("tests/browser/test_lab.py::test_deny_clicked", "browser"),
    ("tests/eval/test_eval_cancel.py::test_a_cancelled_local_eval_closes_its_sandboxes_and_resumes", "ray"),
    ("tests/security/test_ray_door.py::test_every_socket_of_the_cluster_is_on_loopback", "ray"),
    ("tests/eval/test_eval_local.py::test_x", "tests/eval/test_eval_local.py"),
    ("tests/kernel/test_kernel_protocol.py::FlowKernelTests::test_execute_stdout", "tests/kernel/test_kernel_protocol.py"),
    ("tests/security/test_secrets.py::test_no_key[tests/browser/x]", "tests/security/test_secrets.py"),
    ("tests/test_browser_like.py::test_x", "tests/test_browser_like.py"),
])
def test_a_test_id_names_its_unit(nodeid: str, unit: str) -> None:
    assert workers.unit_of(nodeid) == unit


def test_the_heaviest_units_go_first_and_the_rest_keep_their_order() -> None:
    units = ["tests/lang/test_parser.py", "ray", "tests/a.py", "browser", "tests/reliability/test_kill_resume.py"]
    assert sorted(units, key=workers.rank) == [
        "browser", "tests/reliability/test_kill_resume.py", "ray", "tests/lang/test_parser.py", "tests/a.py"]


def test_every_heavy_unit_named_exists() -> None:
    """A renamed or deleted slow file would silently lose its place at the front."""
    modules = [unit for unit in workers.HEAVIEST if unit not in workers.UNITS]
    assert len(set(workers.HEAVIEST)) == len(workers.HEAVIEST)
    assert [unit for unit in modules if not (ROOT / unit).is_file()] == []
    assert set(workers.UNITS) <= set(workers.HEAVIEST)


def test_every_module_with_a_ray_or_browser_test_is_in_its_unit() -> None:
    """A new module starting a Ray cluster (or a browser) outside its unit could start a
    second one beside it on the other worker."""
    modules = sorted(ROOT.glob("tests/**/test_*.py"))
    texts = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in modules}
    ray = {name for name, text in texts.items() if RAY_TEST.search(text)}
    browser = {name for name, text in texts.items() if BROWSER_TEST.search(text)}
    assert ray and browser
    assert {name: workers.unit_of(name) for name in ray} == dict.fromkeys(ray, "ray")
    assert {name: workers.unit_of(name) for name in browser} == dict.fromkeys(browser, "browser")


def turnstile_free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_an_alone_test_waits_for_the_running_one_and_holds_back_the_next(tmp_path: Path) -> None:
    """The `alone` lock, with threads standing in for the two workers (flock locks belong to
    each open file, so two threads of one process contend as two processes do)."""
    order: list[str] = []
    running = workers.machine(tmp_path, alone=False)
    running.__enter__()  # a test of the other worker is running

    def test(name: str, alone: bool) -> threading.Thread:
        def body() -> None:
            with workers.machine(tmp_path, alone=alone):
                order.append(name)
        thread = threading.Thread(target=body, daemon=True)
        thread.start()
        return thread

    lone = test("alone", alone=True)
    while turnstile_free(tmp_path / "turnstile.lock"):  # until the alone test waits at the machine
        assert lone.is_alive()
        lone.join(0.01)
    assert order == []  # it waits for the running test
    following = test("next", alone=False)  # asks now: queues behind the alone test
    following.join(0.3)
    assert following.is_alive() and order == []
    running.__exit__(None, None, None)
    lone.join(10)
    following.join(10)
    assert order == ["alone", "next"]


class FakeItem:
    def __init__(self, marks: tuple[str, ...] = (), fixtures: tuple[str, ...] = ()) -> None:
        self.marks, self.fixturenames = marks, list(fixtures)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.marks else None


@pytest.mark.parametrize("initialized", [False, True])
def test_alone_are_the_marked_tests_and_the_one_starting_the_ray_cluster(
        initialized: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(is_initialized=lambda: initialized))
    assert workers.alone(FakeItem(marks=("alone",)))  # type: ignore[arg-type]
    assert not workers.alone(FakeItem(marks=("ray",), fixtures=("tmp_path",)))  # type: ignore[arg-type]
    # The session's cluster: only the test that starts it holds the machine.
    assert workers.alone(FakeItem(fixtures=("tmp_path", "ray_cluster"))) is not initialized  # type: ignore[arg-type]
