"""The trust model's core (flow_kernel/runtime/policy/trust.py): capabilities, grants, the store."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flow_kernel.runtime.policy.trust import (
    Capability,
    CapabilityDenied,
    Trust,
    TrustStore,
    config_fingerprint,
    config_home,
    parse_allow,
)


@pytest.fixture
def store(tmp_path: Path) -> TrustStore:
    return TrustStore(tmp_path / "home" / "trust.json")


def test_tests_never_touch_the_person_store() -> None:
    assert config_home() == Path(os.environ["FLOW_CONFIG_HOME"])
    assert "flow-test-config-" in os.environ["FLOW_CONFIG_HOME"]


def test_config_home_order(tmp_path: Path) -> None:
    assert config_home({"FLOW_CONFIG_HOME": "/a", "XDG_CONFIG_HOME": "/b"}) == Path("/a")
    assert config_home({"XDG_CONFIG_HOME": "/b"}) == Path("/b/flow")
    assert config_home({}) == Path.home() / ".config" / "flow"


def test_capability_describe_and_kinds(tmp_path: Path) -> None:
    assert Capability("run", "sh").describe() == "run the executable `sh`"
    assert "on the host" in Capability("tools", "/x/t.py").describe()
    assert "auto-approve" in Capability("operator", "auto-approve").describe()
    with pytest.raises(ValueError, match="unknown capability kind"):
        Capability("network", "x")
    with pytest.raises(ValueError, match="not a path"):
        Capability.of("run", "/bin/sh", tmp_path)


def test_nothing_granted_by_default(tmp_path: Path, store: TrustStore) -> None:
    trust = Trust(tmp_path, store=store, environ={})
    with pytest.raises(CapabilityDenied) as caught:
        trust.require(Capability("run", "sh"))
    message = str(caught.value)
    assert message.startswith("This notebook or file asks to run the executable `sh`; nothing granted it.")
    assert "--allow-run sh" in message
    assert 'FLOW_ALLOW="run:sh"' in message
    assert f"flow trust {tmp_path.resolve()}" in message
    assert caught.value.capability == Capability("run", "sh")


def test_explicit_grants_and_grant_once(tmp_path: Path, store: TrustStore) -> None:
    trust = Trust(tmp_path, grants=[Capability("run", "git")], store=store, environ={})
    assert trust.granted(Capability("run", "git"))
    assert not trust.granted(Capability("run", "sh"))
    trust.grant(Capability("run", "sh"))
    assert trust.granted(Capability("run", "sh"))
    # once: a new session of the same folder does not inherit it
    assert not Trust(tmp_path, store=store, environ={}).granted(Capability("run", "sh"))
    assert not store.path.exists()


def test_allow_for_this_notebook_is_remembered_by_notebook(tmp_path: Path, store: TrustStore) -> None:
    notebook = tmp_path / "a.ipynb"
    trust = Trust(tmp_path, store=store, environ={}, document=notebook)
    trust.grant(Capability("run", "sh"), remember=True)
    assert Trust(tmp_path, store=store, environ={}, document=notebook).granted(Capability("run", "sh"))
    other = Trust(tmp_path, store=store, environ={}, document=tmp_path / "b.ipynb")
    assert not other.granted(Capability("run", "sh"))
    assert store.forget(notebook)
    assert not Trust(tmp_path, store=store, environ={}, document=notebook).granted(Capability("run", "sh"))


def test_remembered_without_a_notebook_is_read_back_under_the_folder(tmp_path: Path, store: TrustStore) -> None:
    # A session that does not know its notebook keeps "for this notebook" under its folder,
    # and must find it there again (it was written and never read).
    Trust(tmp_path, store=store, environ={}).grant(Capability("run", "wc"), remember=True)
    assert Trust(tmp_path, store=store, environ={}).granted(Capability("run", "wc"))
    assert not Trust(tmp_path / "sub", store=store, environ={}).granted(Capability("run", "wc"))


def test_environment_variable(tmp_path: Path, store: TrustStore) -> None:
    (tmp_path / "data").mkdir()
    env = {"FLOW_ALLOW": "run:git, tools:shop_tools.py operator:auto-approve path:data operator:answers:a.json"}
    trust = Trust(tmp_path, store=store, environ=env)
    assert trust.granted(Capability("run", "git"))
    assert trust.granted(Capability("tools", str(tmp_path.resolve() / "shop_tools.py")))
    assert trust.granted(Capability("operator", "auto-approve"))
    assert trust.granted(Capability("operator", "answers:" + str(tmp_path.resolve() / "a.json")))
    assert trust.granted(Capability("path", str(tmp_path.resolve() / "data" / "x" / "y.jsonl")))
    assert not trust.granted(Capability("run", "sh"))
    with pytest.raises(ValueError, match="FLOW_ALLOW"):
        parse_allow("sh", tmp_path)


def test_paths_inside_need_nothing_outside_need_a_grant(tmp_path: Path, store: TrustStore) -> None:
    folder = tmp_path / "nb"
    folder.mkdir()
    trust = Trust(folder, store=store, environ={})
    assert trust.path("tapes/a.jsonl", purpose="record") == folder.resolve() / "tapes" / "a.jsonl"
    for raw in ("../x.jsonl", str(tmp_path / "x.jsonl"), "sub/../../x.jsonl"):
        with pytest.raises(CapabilityDenied, match="outside its folder"):
            trust.path(raw, purpose="%record")
    # a symlink inside that points outside counts as outside
    (folder / "link").symlink_to(tmp_path)
    with pytest.raises(CapabilityDenied, match="--allow-path"):
        trust.path("link/x.jsonl", purpose="%record")
    trust.grant(Capability.of("path", str(tmp_path), folder))
    assert trust.path("link/x.jsonl", purpose="%record") == tmp_path.resolve() / "x.jsonl"


def test_operator_policies(tmp_path: Path, store: TrustStore) -> None:
    trust = Trust(tmp_path, store=store, environ={})
    assert trust.operator("auto-deny") == "auto-deny"
    assert trust.operator("interactive") == "interactive"
    with pytest.raises(CapabilityDenied, match="--operator auto-approve"):
        trust.operator("auto-approve")
    with pytest.raises(CapabilityDenied, match="answers"):
        trust.operator("answers:/etc/x.json")


def test_flow_trust_and_any_edit_revokes(tmp_path: Path, store: TrustStore) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "flow.toml").write_text('operator = "auto-approve"\n')
    trust = Trust(project / "sub", store=store, environ={})
    assert not trust.folder_trusted()
    entry = store.trust(project)
    assert entry.config == project.resolve() / "flow.toml"
    assert trust.folder_trusted() and trust.granted(Capability("run", "sh"))
    assert [e.folder for e in store.entries()] == [project.resolve()]
    # any edit of the trusted configuration revokes it
    (project / "flow.toml").write_text('operator = "auto-approve"\nallow_run = ["sh"]\n')
    assert not trust.folder_trusted()
    assert not store.entries()[0].current()
    store.trust(project)
    assert trust.folder_trusted()
    # a new, nearer flow.toml was never trusted
    (project / "sub" / "flow.toml").write_text('allow_run = ["sh"]\n')
    assert not trust.folder_trusted()
    assert Trust(project, store=store, environ={}).folder_trusted()
    assert store.revoke(project)
    assert not store.revoke(project)
    assert not Trust(project, store=store, environ={}).folder_trusted()


def test_pyproject_fingerprint_is_the_tool_flow_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "1"\n[tool.flow]\noperator = "auto-deny"\n')
    before = config_fingerprint(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "2"\n[tool.flow]\noperator = "auto-deny"\n')
    assert config_fingerprint(tmp_path) == before
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "2"\n[tool.flow]\noperator = "auto-approve"\n')
    assert config_fingerprint(tmp_path) != before


def test_store_file_is_private_and_a_broken_one_trusts_nothing(tmp_path: Path, store: TrustStore) -> None:
    store.trust(tmp_path)
    assert store.path.stat().st_mode & 0o077 == 0
    assert json.loads(store.path.read_text())["folders"][0]["path"] == str(tmp_path.resolve())
    store.path.write_text("{not json")
    assert not store.is_trusted(tmp_path)
    with pytest.raises(ValueError, match="not valid"):
        store.trust(tmp_path)


def test_session_use_outside_its_folder_is_f2011_with_the_grant(tmp_path: Path) -> None:
    from flow_kernel import Session

    folder = tmp_path / "nb"
    folder.mkdir()
    (tmp_path / "lib.flow").write_text("workflow inc(x: int) -> int { return x + 1 }\n", encoding="utf-8")
    (folder / "near.flow").write_text("workflow dec(x: int) -> int { return x - 1 }\n", encoding="utf-8")
    session = Session(directory=folder, sandbox=False, journal_dir=None)
    assert session.check('use "near.flow"\ndec(x: 1)').ok  # inside: no ceremony
    result = session.check('use "../lib.flow"\ninc(x: 1)')
    diagnostic = result.errors[0]
    assert diagnostic.code == "F2011"
    assert "outside its folder" in diagnostic.message and f"--allow-path {tmp_path.resolve() / 'lib.flow'}" in diagnostic.message
    assert "inc" not in result.decls
    granted = Session(directory=folder, sandbox=False, journal_dir=None, allow=[f"path:{tmp_path / 'lib.flow'}"])
    assert granted.check('use "../lib.flow"\ninc(x: 1)').ok


def test_concurrent_writers_lose_nothing(tmp_path: Path, store: TrustStore) -> None:
    import threading

    def remember(n: int) -> None:
        for i in range(10):
            TrustStore(store.path).remember(tmp_path / "nb.ipynb", Capability("run", f"exe{n}-{i}"))

    threads = [threading.Thread(target=remember, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.remembered(tmp_path / "nb.ipynb")) == 60


def test_flow_allow_quotes_pinned_entries(tmp_path: Path) -> None:
    assert parse_allow("run:'git log *', run:wc", tmp_path) == {Capability("run", "git log *"), Capability("run", "wc")}
    with pytest.raises(ValueError, match="FLOW_ALLOW"):
        parse_allow("run:'git", tmp_path)
