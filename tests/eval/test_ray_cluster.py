"""What the private Ray cluster's processes get (ray_cluster.py), without a cluster: the
key variables an eval's models read, through the configuration, and the environment the
cluster starts with (tests/security/test_ray_door.py reads both off a real cluster)."""

from __future__ import annotations

from flow_kernel.lang.check import check
from flow_kernel.lang.compiler import compile_checked
from flow_kernel.runtime.config import FlowConfig, parse_config
from flow_kernel.runtime.eval.ray_cluster import cluster_environ, key_names
from flow_kernel.source import SourceFile


def agents(*models: str) -> str:
    return "\n".join(f'agent a{i} {{\n  model: "{m}"\n  instructions: "x"\n  output: {{ t: string }}\n}}'
                     for i, m in enumerate(models))


def keys(config: FlowConfig, *models: str) -> set[str]:
    compiled = compile_checked(check(SourceFile("k.flow", agents(*models)), models=config.models))
    assert compiled.ok, compiled.check.diagnostics
    return key_names(compiled, config)


CONFIG = parse_config({
    "default_model": "anthropic/claude-x",
    "models": {"deep-judgement": "openai/gpt-x"},
    "providers": {"openai": {"api_key_env": "OLLAMA_API_KEY"}},
    "a2a": {"reviewer": {"url": "http://127.0.0.1:9/", "token_env": "REVIEWER_TOKEN"}},
})


def test_the_keys_an_evals_models_read() -> None:
    assert keys(FlowConfig(), "openai/gpt-x") == {"OPENAI_API_KEY"}
    assert keys(CONFIG, "openai/gpt-x") == {"OLLAMA_API_KEY"}  # the configuration's variable
    assert keys(CONFIG, "default") == {"ANTHROPIC_API_KEY"}
    assert keys(CONFIG, "for:deep-judgement") == {"OLLAMA_API_KEY"}
    assert keys(CONFIG, "a2a/reviewer") == {"A2A_TOKEN", "REVIEWER_TOKEN"}
    assert keys(CONFIG, "scripted", "mock") == set()
    assert keys(FlowConfig(), "default") == set()  # no default configured: nothing read


def test_the_cluster_starts_without_credentials() -> None:
    environ = {"PATH": "/bin", "HOME": "/h", "LANG": "C", "OPENAI_BASE_URL": "http://x", "OPENAI_API_KEY": "k",
               "GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s", "PGPASSWORD": "p", "MY_LLM": "m",
               "REVIEWER_TOKEN": "r"}
    assert cluster_environ(environ) == {"PATH": "/bin", "HOME": "/h", "LANG": "C", "OPENAI_BASE_URL": "http://x",
                                        "MY_LLM": "m"}
    named = parse_config({"providers": {"openai": {"api_key_env": "MY_LLM"}}})
    assert "MY_LLM" not in cluster_environ(environ, named)  # a variable the configuration names as a key
