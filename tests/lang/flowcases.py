"""Running Flow examples that may hold several cells (`# %% cell`) and virtual
files for `use` (`# %% file NAME`), and reading inline expectation markers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from flow_kernel.diagnostics.model import Diagnostic
from flow_kernel.lang import SessionScope, check
from flow_kernel.source import SourceFile

MARKER = re.compile(r"\b(error|warning|info): \[(F\d{4})\]")


@dataclass
class Example:
    cells: list[str]
    files: dict[str, str] = field(default_factory=dict)


def split_example(text: str) -> Example:
    parts = re.split(r"^# %% file (\S+)[ \t]*\n", text, flags=re.M)
    main, rest = parts[0], parts[1:]
    files = {rest[i]: rest[i + 1] for i in range(0, len(rest), 2)}
    cells = re.split(r"^# %% cell[ \t]*\n", main, flags=re.M)
    return Example(cells, files)


def run_example(text: str) -> list[Diagnostic]:
    example = split_example(text)

    def loader(path: str, importer: str | None) -> SourceFile | None:
        name = path.removeprefix("./")
        return SourceFile(name, example.files[name]) if name in example.files else None

    if len(example.cells) == 1:
        return check(SourceFile("main.flow", example.cells[0]), loader=loader).diagnostics
    session = SessionScope()
    found: list[Diagnostic] = []
    for i, cell in enumerate(example.cells, start=1):
        result = check(SourceFile(f"cell[{i}]", cell), session=session, loader=loader)
        found.extend(result.diagnostics)
        if result.ok:
            session.commit(result)
    return found


def expected_markers(text: str) -> list[tuple[str, int, str, str]]:
    """(source name, line, severity, code) for every marker, for single-source cases."""
    example = split_example(text)
    names = ["main.flow"] if len(example.cells) == 1 else [f"cell[{i}]" for i in range(1, len(example.cells) + 1)]
    sources = [*zip(names, example.cells, strict=True), *example.files.items()]
    out: list[tuple[str, int, str, str]] = []
    for name, source in sources:
        for lineno, line in enumerate(source.splitlines(), start=1):
            comment = line.find("#")
            if comment >= 0:
                out.extend((name, lineno, severity, code) for severity, code in MARKER.findall(line[comment:]))
    return sorted(out)


def actual_markers(diagnostics: list[Diagnostic]) -> list[tuple[str, int, str, str]]:
    return sorted((d.file, d.span.start_pos.line, d.severity.value, d.code) for d in diagnostics)
