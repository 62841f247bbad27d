"""Flags into grants (runtime/policy/grants.py): the one translation `flow run`, `flow
resume`, `flow eval`, `flow serve` and `Session(...)` use."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_kernel.runtime.policy.grants import flag_grants
from flow_kernel.runtime.policy.trust import Capability


def test_each_flag_grants_its_capability_resolved_where_it_was_typed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    grants = flag_grants(tmp_path, allow_run=["git", "git log *"], paths=["link/data", None, "../out.jsonl"],
                         operator="answers:answers.json", config="conf/flow.toml")
    assert grants == [
        Capability("run", "git"), Capability("run", "git log *"),
        Capability("path", str(tmp_path.resolve() / "real" / "data")),
        Capability("path", str(tmp_path.resolve().parent / "out.jsonl")),
        Capability("operator", f"answers:{tmp_path.resolve() / 'answers.json'}"),
        Capability("config", str(tmp_path.resolve() / "conf")),
    ]


def test_policies_that_never_answer_yes_grant_nothing(tmp_path: Path) -> None:
    for policy in ("interactive", "auto-deny", "none", "defer", None):
        assert flag_grants(tmp_path, operator=policy) == []
    assert flag_grants(tmp_path, operator="auto-approve") == [Capability("operator", "auto-approve")]


def test_an_executable_named_by_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="name an executable"):
        flag_grants(tmp_path, allow_run=["/bin/sh"])
