"""The tests' list of Flow sources leaves out the journal folder a run writes beside them
(`notebooks/.flow/` after the gallery has run), which `*.flow` also matches."""

from pathlib import Path

from tests.flow_sources import flow_files


def test_a_journal_folder_is_not_a_source(tmp_path: Path) -> None:
    (tmp_path / ".flow" / "runs").mkdir(parents=True)
    (tmp_path / "sub").mkdir()
    for name in ("a.flow", "sub/b.flow"):
        (tmp_path / name).write_text("workflow main() {}\n")
    assert flow_files(tmp_path) == [tmp_path / "a.flow"]
    assert flow_files(tmp_path, recursive=True) == [tmp_path / "a.flow", tmp_path / "sub" / "b.flow"]
