"""spec/ holds a copy of the normative specification (spec/README.md), so that a plain clone
runs the tests that read it. The copy must be the specification: where the shared folder
is beside this checkout (`../shared/spec`), every file of it is here, unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COPY = ROOT / "spec"
SHARED = ROOT.parent / "shared" / "spec"
SPECS = {"language.md", "runtime.md", "diagnostics.md"}


def _specs(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md")) if p.name != "README.md"}


def differences(copy: Path, shared: Path) -> list[str]:
    """What a refresh (`cp ../shared/spec/*.md spec/`) would change, one line a file."""
    kept, normative = _specs(copy), _specs(shared)
    found = [f"{name}: missing from spec/" for name in sorted(normative.keys() - kept.keys())]
    found += [f"{name}: in spec/ but not in the shared spec" for name in sorted(kept.keys() - normative.keys())]
    found += [f"{name}: differs from the shared spec" for name in sorted(kept.keys() & normative.keys())
              if kept[name] != normative[name]]
    return found


def test_the_copy_is_in_the_repository() -> None:
    assert set(_specs(COPY)) == SPECS
    assert "copy" in (COPY / "README.md").read_text(encoding="utf-8")


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared spec folder is not beside this checkout")
def test_the_copy_matches_the_shared_spec() -> None:
    found = differences(COPY, SHARED)
    assert found == [], "spec/ is out of date; refresh it with `cp ../shared/spec/*.md spec/`:\n" + "\n".join(found)


def test_the_comparison_sees_a_stale_a_missing_and_an_extra_file(tmp_path: Path) -> None:
    copy, shared = tmp_path / "copy", tmp_path / "shared"
    copy.mkdir()
    shared.mkdir()
    for folder in (copy, shared):
        (folder / "language.md").write_text("# Flow\n", encoding="utf-8")
    (copy / "README.md").write_text("a copy\n", encoding="utf-8")  # not part of the spec
    assert differences(copy, shared) == []

    (shared / "language.md").write_text("# Flow, amended\n", encoding="utf-8")
    (shared / "runtime.md").write_text("# Runtime\n", encoding="utf-8")
    (copy / "old.md").write_text("# Gone\n", encoding="utf-8")
    assert differences(copy, shared) == [
        "runtime.md: missing from spec/",
        "old.md: in spec/ but not in the shared spec",
        "language.md: differs from the shared spec",
    ]
