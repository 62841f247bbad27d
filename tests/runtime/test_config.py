"""flow.toml / [tool.flow]: found beside or above the notebook, checked, keys refused;
applied only in a folder the person trusted (`flow trust`, here the `trust_folder` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from flow_kernel.runtime.config import (
    ConfigError,
    FlowConfig,
    find_config,
    load_config,
    parse_config,
)


def test_flow_toml_in_a_parent_folder_applies(tmp_path: Path, trust_folder: Callable[[Path], None]) -> None:
    (tmp_path / "flow.toml").write_text('default_model = "openai/gpt-4o-mini"\n[providers.openai]\n'
                                        'base_url = "http://localhost:1/v1"\napi_key_env = "MY_KEY"\n', encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    trust_folder(tmp_path)
    config = find_config(tmp_path / "notebooks")
    assert config.default_model == "openai/gpt-4o-mini" and config.path == tmp_path / "flow.toml"
    assert config.provider("openai").base_url == "http://localhost:1/v1"
    assert config.provider("openai").api_key_env == "MY_KEY"
    assert config.provider("anthropic").base_url is None


def test_tool_flow_in_pyproject(tmp_path: Path, trust_folder: Callable[[Path], None]) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.flow]\noperator = "auto-deny"\n', encoding="utf-8")
    trust_folder(tmp_path)
    assert find_config(tmp_path / "a.flow").operator == "auto-deny"


def test_a_pyproject_without_tool_flow_does_not_stop_the_search(tmp_path: Path,
                                                                 trust_folder: Callable[[Path], None]) -> None:
    (tmp_path / "flow.toml").write_text('operator = "none"\n', encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    trust_folder(tmp_path)
    assert find_config(tmp_path / "sub").operator == "none"


def test_no_configuration_is_the_defaults(tmp_path: Path) -> None:
    assert find_config(tmp_path) == FlowConfig()


def test_an_untrusted_configuration_is_found_and_not_applied(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "flow.toml").write_text('operator = "auto-approve"\nallow_run = ["sh"]\n', encoding="utf-8")
    config = find_config(tmp_path / "a.flow")
    assert config == FlowConfig(ignored=tmp_path.resolve() / "flow.toml")
    assert f"run `flow trust {tmp_path.resolve()}`" in (config.ignored_warning() or "")
    # an untrusted file is not even parsed: a broken one does not stop the run either
    (tmp_path / "flow.toml").write_text("allow_run = [", encoding="utf-8")
    assert find_config(tmp_path).ignored is not None
    # FLOW_ALLOW="config:DIR" is the headless grant
    (tmp_path / "flow.toml").write_text('operator = "auto-deny"\n', encoding="utf-8")
    monkeypatch.setenv("FLOW_ALLOW", f"config:{tmp_path}")
    assert find_config(tmp_path).operator == "auto-deny"


@pytest.mark.parametrize(("text", "message"), [
    ('api_key = "sk-1"', "unknown key `api_key`"),
    ('[providers.openai]\napi_key = "sk-1"', "keys are not read from files"),
    ('[providers.cohere]\nbase_url = "x"', "unknown provider `cohere`"),
    ('default_model = "gpt-4o"', "must be \"provider/model\""),
    ("allow_run = \"git\"", "`allow_run` must be a list"),
    ("[providers.anthropic]\nmax_tokens = 0", "positive integer"),
    ("default_model = [", "not valid TOML"),
])
def test_bad_configuration_names_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "flow.toml"
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value) and str(path) in str(info.value)
    assert "sk-1" not in str(info.value)


def test_parse_config_without_a_file() -> None:
    assert parse_config({"allow_run": ["git"]}).allow_run == ("git",)
