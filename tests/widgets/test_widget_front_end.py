"""The run view's front end (widgets/): its reducer and renderer tested in Node on streams
recorded from real runs (widgets/test/*.test.mjs), and the bundle anywidget serves
(flow_kernel/views/static/) being exactly what widgets/build.mjs makes of the sources."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from flow_kernel.sandbox.node import find_node

ROOT = Path(__file__).resolve().parents[2]


def node(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([find_node().path, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_reducer_and_renderer_pass_their_node_tests() -> None:
    # The test files by name: Node 20 ran a directory given to --test, Node 24 takes it for
    # a module and fails ("Cannot find module .../widgets/test"); and TAP asked for, which
    # Node 24 no longer picks by itself for a pipe (its default there is "spec").
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "widgets" / "test").glob("*.test.mjs"))
    assert files
    result = node("--test", "--test-reporter=tap", *files)
    print(result.stdout[-600:])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout and "# pass 0" not in result.stdout


def test_the_shipped_bundle_is_built_from_the_sources(tmp_path: Path) -> None:
    assert node("widgets/build.mjs", "--check").returncode == 0, "run: node widgets/build.mjs"
    # The check can fail: a copy whose source changed is reported stale.
    shutil.copytree(ROOT / "widgets" / "src", tmp_path / "widgets" / "src")
    shutil.copy(ROOT / "widgets" / "build.mjs", tmp_path / "widgets" / "build.mjs")
    shutil.copytree(ROOT / "flow_kernel" / "views" / "static", tmp_path / "flow_kernel" / "views" / "static")
    assert node("widgets/build.mjs", "--check", cwd=tmp_path).returncode == 0
    source = tmp_path / "widgets" / "src" / "format.js"
    source.write_text(source.read_text() + "\nexport const EXTRA = 1;\n")
    stale = node("widgets/build.mjs", "--check", cwd=tmp_path)
    assert stale.returncode == 1 and "run_view.js" in stale.stderr and "prompts_guard.js" not in stale.stderr
    source = tmp_path / "widgets" / "src" / "prompts.js"  # in both bundles
    source.write_text(source.read_text() + "\nexport const EXTRA_TOO = 1;\n")
    stale = node("widgets/build.mjs", "--check", cwd=tmp_path)
    assert stale.returncode == 1 and "run_view.js" in stale.stderr and "prompts_guard.js" in stale.stderr


def test_each_bundle_is_one_module_with_nothing_fetched() -> None:
    for bundle in ("run_view.js", "prompts_guard.js"):  # the run view; the guard of prompts on their own
        js = (ROOT / "flow_kernel" / "views" / "static" / bundle).read_text()
        assert "\nimport " not in js and js.count("export default { render };") == 1, bundle
        for fetch in ("fetch(", "http://", "https://", "import(", "XMLHttpRequest", "WebSocket"):
            assert fetch not in js, (bundle, fetch)
