"""The guides stay true: every Flow example in docs/language-guide.md and
docs/runtime-guide.md checks as the page says — clean, or (a deliberate mistake) with
the diagnostic codes the output shown after it names; and every file of the package or
the tests that a page names by its path is there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flow_kernel import SourceFile, check

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```flow\n(.*?)```(?:\s*```console\n(.*?)```)?", re.S)


def _examples() -> list[tuple[str, str, str]]:
    found = []
    for page in ("language-guide.md", "runtime-guide.md"):
        for i, match in enumerate(BLOCK.finditer((DOCS / page).read_text(encoding="utf-8"))):
            found.append((f"{page}:{i}", match.group(1), match.group(2) or ""))
    return found


EXAMPLES = _examples()
FILES = {src.split("\n", 1)[0].removeprefix("# file: ").strip(): src for _, src, _ in EXAMPLES
         if src.startswith("# file: ")}


def _loader(path: str, importer: str | None) -> SourceFile | None:
    return SourceFile(path, FILES[path]) if path in FILES else None


def test_the_guides_have_examples() -> None:
    assert len(EXAMPLES) >= 25


@pytest.mark.parametrize(("where", "source", "shown"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_checks_as_shown(where: str, source: str, shown: str) -> None:
    result = check(SourceFile(where, source), loader=_loader)
    errors = sorted({d.code for d in result.diagnostics if d.is_error})
    if errors:  # a deliberate mistake: the page shows its diagnostics
        assert all(f"[{code}]" in shown for code in errors), (errors, shown[:500])
    else:
        assert result.ok


def test_the_package_docstring_runs_as_shown() -> None:
    """`help(flow_kernel)` shows a check and a run (in a real sandbox); both give what it says."""
    import doctest

    import flow_kernel

    result = doctest.testmod(flow_kernel)
    assert result.attempted >= 5 and result.failed == 0


PACKAGE = DOCS.parent / "flow_kernel"
# A file of the package or of the tests named by its path: `runtime/durable/journal.py`,
# `flow_kernel/serve/door.py`, `tests/test_docs.py`. A placeholder (`cli/NAME.py`) is no path.
PATH_REF = re.compile(r"(?<![\w./-])(?:flow_kernel/)?((?:runtime|cli|kernel|serve|frontend|views|lang|diagnostics|sandbox"
                      r"|bench|flowbox|tests)/[\w/.-]*?\.py)\b")


def stale_paths(pages: list[Path]) -> list[str]:
    """Each `page:line: path` whose path names no file of the checkout."""
    found = []
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for match in PATH_REF.finditer(line):
                path = match.group(1)
                if re.search(r"[A-Z]", path.removeprefix("tests/")):
                    continue
                places = (DOCS.parent / path, PACKAGE / path, PACKAGE / "sandbox" / "bootstrap" / path)
                if not any(place.exists() for place in places):
                    found.append(f"{page.name}:{number}: {path}")
    return found


def test_the_docs_name_files_where_they_are() -> None:
    pages = [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]
    assert stale_paths(pages) == []


def test_a_moved_file_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("see `runtime/journal.py` and flow_kernel/cli/serve_door.py; `runtime/durable/journal.py`,\n"
                    "`tests/test_docs.py` and `cli/NAME.py` are fine\n", encoding="utf-8")
    assert stale_paths([page]) == ["page.md:1: runtime/journal.py", "page.md:1: cli/serve_door.py"]
