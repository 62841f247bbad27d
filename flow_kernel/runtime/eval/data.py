"""An eval's cases, read from JSON lines or CSV (docs/eval.md).

A JSON line is one case: `{"input": {...}, "expected": ..., "metadata": {...}, "id": "..."}`,
or, without an object under `input`, the line itself is the input and `expected`, `metadata`
and `id` beside it are taken off. A CSV file has a header row: `id` and `expected` columns,
`meta.NAME` columns for metadata, and every other column an input field; a cell is JSON when
the field is not a string in the workflow's input schema and it parses (`3`, `true`,
`["a"]`), else text. A case without an `id` is known by its line number (`L7`).

A bad line — not JSON, not an object, a row with the wrong number of cells, an input the
workflow's schema refuses, an id seen before — is reported with its line number and
skipped; the rest of the file is read. A file that cannot be read at all is a `DataError`.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flow_kernel.runtime.validation import schema_errors, schema_validator

RESERVED = ("id", "expected", "metadata")


class DataError(Exception):
    """The data file as a whole cannot be used (missing, unreadable, an unknown format)."""


@dataclass(frozen=True)
class Case:
    id: str
    line: int
    input: dict[str, Any]
    expected: Any = None
    has_expected: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DataProblem:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def load_cases(path: str | Path, input_schema: dict[str, Any] | None = None) -> tuple[list[Case], list[DataProblem]]:
    """The cases of `path` (.jsonl/.json lines or .csv), and the lines skipped with why.
    With `input_schema` (the workflow's), an input it refuses is a bad line too."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read the data {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        rows = _jsonl_rows(text)
    elif suffix == ".csv":
        rows = _csv_rows(text, input_schema)
    else:
        raise DataError(f"{path}: data must be .jsonl or .csv (got {suffix or 'no extension'!r})")
    return _cases(rows, input_schema)


Row = tuple[int, "dict[str, Any] | str"]  # (line, the case's fields) or (line, what is wrong)


def _jsonl_rows(text: str) -> list[Row]:
    rows: list[Row] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            rows.append((number, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(value, dict):
            rows.append((number, f"a case is a JSON object, not {type(value).__name__}"))
            continue
        if isinstance(value.get("input"), dict):
            rows.append((number, {"input": value["input"], **{k: value[k] for k in RESERVED if k in value}}))
        else:
            rows.append((number, {"input": {k: v for k, v in value.items() if k not in RESERVED},
                                  **{k: value[k] for k in RESERVED if k in value}}))
    return rows


def _csv_rows(text: str, input_schema: dict[str, Any] | None) -> list[Row]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        return []
    except csv.Error as exc:
        raise DataError(f"the CSV header cannot be read: {exc}") from None
    props = (input_schema or {}).get("properties", {})
    rows: list[Row] = []
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            rows.append((reader.line_num, f"not a CSV row ({exc})"))
            continue
        number = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            rows.append((number, f"{len(cells)} cells, the header has {len(header)}"))
            continue
        row: dict[str, Any] = {"input": {}, "metadata": {}}
        for name, cell in zip(header, cells, strict=True):
            if name == "id":
                row["id"] = cell
            elif name == "expected":
                row["expected"] = _cell(cell, None)
            elif name.startswith(("meta.", "metadata.")):
                row["metadata"][name.partition(".")[2]] = _cell(cell, None)
            else:
                row["input"][name] = _cell(cell, props.get(name))
        rows.append((number, row))
    return rows


def _cell(text: str, schema: Any) -> Any:
    """A CSV cell: text for a string field, else JSON when it parses."""
    if isinstance(schema, dict) and schema.get("type") == "string":
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _cases(rows: list[Row], input_schema: dict[str, Any] | None) -> tuple[list[Case], list[DataProblem]]:
    validator = schema_validator(input_schema) if input_schema is not None else None
    cases: list[Case] = []
    problems: list[DataProblem] = []
    seen: set[str] = set()
    for number, row in rows:
        if isinstance(row, str):
            problems.append(DataProblem(number, row))
            continue
        raw_id = row.get("id")
        if raw_id is not None and not isinstance(raw_id, str | int):
            problems.append(DataProblem(number, "`id` must be a string or an integer"))
            continue
        case_id = str(raw_id) if raw_id not in (None, "") else f"L{number}"
        if case_id in seen:
            problems.append(DataProblem(number, f"the id {case_id!r} is used by an earlier line"))
            continue
        metadata = row.get("metadata", {})
        if not isinstance(metadata, dict):
            problems.append(DataProblem(number, "`metadata` must be an object"))
            continue
        if validator is not None:
            errors = schema_errors(input_schema, row["input"], validator)
            if errors:
                problems.append(DataProblem(number, "the input does not fit the workflow: " + "; ".join(errors[:3])))
                continue
        seen.add(case_id)
        cases.append(Case(case_id, number, row["input"], row.get("expected"), "expected" in row, metadata))
    return cases, problems


__all__ = ["Case", "DataError", "DataProblem", "load_cases"]
