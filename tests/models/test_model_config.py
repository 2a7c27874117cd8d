"""Model sections of the run config: defaults, validation, the paper configuration, overrides."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fastslow.config import load_config
from fastslow.errors import UsageError
from fastslow.models import ModelConfig


def test_default_is_the_embedded_model() -> None:
    cfg = load_config("oracle")
    assert cfg.sage.model.kind == cfg.critic.model.kind == "local"
    assert cfg.sage.model.n_threads == 1


def test_paper_config_uses_qwen_via_vllm() -> None:
    cfg = load_config("paper")
    for model in (cfg.sage.model, cfg.critic.model):
        assert model.kind == "openai"
        assert model.base_url == "http://127.0.0.1:8000/v1"
        assert model.model == "Qwen/Qwen2.5-7B-Instruct-1M"
        assert model.temperature == 0
    assert cfg.env.step_limit == 300


def test_overrides_point_sage_elsewhere() -> None:
    cfg = load_config(
        "paper", ["sage.model.base_url=http://127.0.0.1:11434/v1", "sage.model.model=qwen2.5:7b"]
    )
    assert (cfg.sage.model.base_url, cfg.sage.model.model) == ("http://127.0.0.1:11434/v1", "qwen2.5:7b")
    assert cfg.critic.model.base_url == "http://127.0.0.1:8000/v1"


def test_unknown_key_is_rejected() -> None:
    with pytest.raises(UsageError, match=r"unknown key 'sage.model.temprature'"):
        load_config("paper", ["sage.model.temprature=0.2"])


def test_openai_needs_a_model_name() -> None:
    with pytest.raises(UsageError, match="kind openai needs a model name"):
        load_config("oracle", ["critic.model.kind=openai"])


def test_scripted_needs_replies() -> None:
    with pytest.raises(ValidationError, match="non-empty replies"):
        ModelConfig(kind="scripted")
