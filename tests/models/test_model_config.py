"""Model sections of the run config (Sage/Critic models, paper §3 and §4): defaults, the paper
configuration, overrides, value ranges, and the rule that a field the chosen kind does not use is an error."""

from __future__ import annotations

import json
from importlib import resources

import pytest
import yaml
from pydantic import ValidationError

from fastslow.config import CONFIG_PACKAGE, RunConfig, builtin_config_names, load_config
from fastslow.errors import UsageError
from fastslow.models import ModelConfig
from fastslow.models.config import USED_BY


def all_builtin_configs() -> list[str]:
    """Every built-in name, the ``sensitivity/...`` ones included (builtin_config_names lists the top)."""
    sub = resources.files(CONFIG_PACKAGE) / "sensitivity"
    nested = sorted(
        f"sensitivity/{p.name.removesuffix('.yaml')}" for p in sub.iterdir() if p.name.endswith(".yaml")
    )
    return builtin_config_names() + nested


def test_default_is_the_embedded_model() -> None:
    cfg = load_config("oracle")
    assert cfg.sage.model.kind == cfg.critic.model.kind == "local"
    assert cfg.sage.model.n_threads == 1
    assert cfg.sage.model.call_budget_s == 180.0


def test_paper_config_uses_qwen_via_vllm() -> None:
    cfg = load_config("paper")
    for model in (cfg.sage.model, cfg.critic.model):
        assert model.kind == "openai"
        assert model.base_url == "http://127.0.0.1:8000/v1"
        assert model.model == "Qwen/Qwen2.5-7B-Instruct-1M"
        assert model.temperature == 0
    assert cfg.env.step_limit == 300


@pytest.mark.parametrize("name", all_builtin_configs())
def test_every_builtin_config_loads_and_sets_only_fields_its_kinds_use(name: str) -> None:
    cfg = load_config(name)
    for model in (cfg.sage.model, cfg.critic.model):
        unused = {f for f in model.model_fields_set if f in USED_BY and model.kind not in USED_BY[f]}
        assert not unused, f"{name}: kind {model.kind} does not use {unused}"


def test_the_list_of_builtin_configs_is_complete() -> None:
    names = all_builtin_configs()
    assert {"baseline", "full", "paper", "paper-full", "sensitivity/full-critic6"} <= set(names)
    assert len(names) == len(set(names)) >= 15


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


# -- a field the kind does not use ----------------------------------------------------------------

VALUES: dict[str, object] = {
    "base_url": "http://127.0.0.1:11434/v1",
    "api_key_env": "OPENAI_API_KEY",
    "timeout_s": 30.0,
    "max_retries": 1,
    "backoff_s": 0.5,
    "call_budget_s": 60.0,
    "extra_body": {"top_k": 20},
    "constraint_format": "vllm",
    "n_ctx": 2048,
    "n_threads": 2,
    "model_path": "/models/qwen.gguf",
    "response_cache": False,
    "prefix_states": 2,
    "replies": ["look around"],
    "cycle": True,
}
"""A valid value for each kind-specific field."""

NEEDS: dict[str, dict[str, object]] = {
    "openai": {"model": "qwen2.5:7b"},
    "local": {},
    "scripted": {"replies": ["look around"]},
}
"""What each kind needs to be valid on its own."""

CASES = [
    (field, kind)
    for field, kinds in USED_BY.items()
    for kind in ("openai", "local", "scripted")
    if kind not in kinds and not (field == "replies" and kind == "scripted")
]


def test_values_cover_every_kind_specific_field() -> None:
    assert set(VALUES) == set(USED_BY)
    assert USED_BY["base_url"] == ("openai",) and USED_BY["n_threads"] == ("local",)


@pytest.mark.parametrize(("field", "kind"), CASES)
def test_a_field_the_kind_does_not_use_is_an_error(field: str, kind: str) -> None:
    with pytest.raises(ValidationError) as info:
        ModelConfig.model_validate({"kind": kind, **NEEDS[kind], field: VALUES[field]})
    message = str(info.value)
    wanted = USED_BY[field][0]
    kinds = " or ".join(USED_BY[field])
    assert f"{field} is used only by kind {kinds} (this model is kind {kind})" in message
    assert f"-o sage.model.kind={wanted}" in message
    assert f"or remove {field}" in message


@pytest.mark.parametrize(("field", "kind"), CASES)
def test_the_same_field_is_fine_on_a_kind_that_uses_it(field: str, kind: str) -> None:
    wanted = USED_BY[field][0]
    cfg = ModelConfig.model_validate({"kind": wanted, **NEEDS[wanted], field: VALUES[field]})
    assert getattr(cfg, field) == VALUES[field]


def test_setting_a_field_to_its_default_still_counts() -> None:
    # base_url's default is vLLM's address: writing it on a local model still means "use that server".
    with pytest.raises(ValidationError, match="base_url is used only by kind openai"):
        ModelConfig(kind="local", base_url="http://127.0.0.1:8000/v1")


def test_every_unused_field_is_named_at_once() -> None:
    with pytest.raises(ValidationError) as info:
        ModelConfig(kind="openai", model="m", n_ctx=2048, n_threads=2)
    assert "n_ctx is used only by kind local; n_threads is used only by kind local" in str(info.value)
    assert "or remove n_ctx, n_threads" in str(info.value)


@pytest.mark.parametrize("kind", ["openai", "local", "scripted"])
def test_fields_every_kind_reads_are_allowed_on_all(kind: str) -> None:
    common = {"max_tokens": 64, "temperature": 0.7, "stop": ["\n"], "seed": 3, "model": "label"}
    cfg = ModelConfig.model_validate({"kind": kind, **NEEDS[kind], **common})
    assert (cfg.max_tokens, cfg.temperature, cfg.stop, cfg.seed, cfg.model) == (64, 0.7, ["\n"], 3, "label")


def test_changing_kind_later_is_checked_too() -> None:
    cfg = ModelConfig(kind="openai", model="m", base_url="http://127.0.0.1:11434/v1")
    with pytest.raises(ValidationError, match="base_url is used only by kind openai"):
        cfg.kind = "local"  # validate_assignment: the same rule as at load time


def test_defaults_of_other_kinds_do_not_count() -> None:
    cfg = ModelConfig(kind="scripted", replies=["a"])
    assert cfg.model_fields_set == {"kind", "replies"}
    assert (cfg.base_url, cfg.n_threads, cfg.timeout_s) == ("http://127.0.0.1:8000/v1", 1, 120.0)


def test_with_seed_keeps_a_valid_config() -> None:
    seeded = load_config("baseline").with_seed(7)
    assert seeded.sage.model.seed == seeded.critic.model.seed == 7
    # model_copy does not validate; what it made must still pass validation (seed is read by every kind).
    again = ModelConfig.model_validate(seeded.sage.model.model_dump(exclude_unset=True))
    assert (again.kind, again.seed) == ("local", 7)


def test_unused_field_through_load_config_is_one_line_naming_the_section() -> None:
    with pytest.raises(UsageError) as info:
        load_config("baseline", ["sage.model.base_url=http://x/v1"])
    message = str(info.value)
    assert message.startswith("config baseline: sage.model: ")
    assert "base_url is used only by kind openai (this model is kind local)" in message
    assert "-o sage.model.kind=openai" in message and "a model name" in message
    assert "\n" not in message


def test_unused_field_on_the_critic_names_critic_model() -> None:
    with pytest.raises(
        UsageError, match=r"^config srm: critic\.model: .*api_key_env is used only by kind openai"
    ):
        load_config("srm", ["critic.model.api_key_env=OPENAI_API_KEY"])


def test_switching_kind_by_override_is_accepted() -> None:
    cfg = load_config(
        "oracle",
        [
            "sage.model.kind=openai",
            "sage.model.base_url=http://127.0.0.1:11434/v1",
            "sage.model.model=qwen2.5:7b",
        ],
    )
    assert (cfg.sage.model.kind, cfg.sage.model.base_url) == ("openai", "http://127.0.0.1:11434/v1")


# -- value ranges -------------------------------------------------------------------------------------

BAD_VALUES = [
    ("openai", "timeout_s", 0),
    ("openai", "timeout_s", -1.0),
    ("openai", "max_retries", -1),
    ("openai", "backoff_s", -0.5),
    ("openai", "call_budget_s", 0),
    ("openai", "max_tokens", 0),
    ("local", "max_tokens", -5),
    ("local", "temperature", -0.1),
    ("local", "n_ctx", 255),
    ("local", "n_threads", 0),
]


@pytest.mark.parametrize(("kind", "field", "value"), BAD_VALUES)
def test_out_of_range_values_are_rejected(kind: str, field: str, value: object) -> None:
    with pytest.raises(ValidationError) as info:
        ModelConfig.model_validate({"kind": kind, **NEEDS[kind], field: value})
    (error,) = info.value.errors()
    assert error["loc"] == (field,)
    assert error["type"] in {"greater_than", "greater_than_equal"}


def test_range_boundaries_are_accepted() -> None:
    remote = ModelConfig(
        kind="openai", model="m", max_retries=0, backoff_s=0, call_budget_s=0.1, timeout_s=0.1
    )
    local = ModelConfig(kind="local", n_ctx=256, n_threads=1, max_tokens=1, temperature=0)
    assert (remote.max_retries, remote.backoff_s, local.n_ctx, local.max_tokens) == (0, 0, 256, 1)


def test_out_of_range_through_load_config_names_the_field() -> None:
    with pytest.raises(
        UsageError, match=r"^config paper: sage\.model\.call_budget_s: Input should be greater than 0"
    ):
        load_config("paper", ["sage.model.call_budget_s=0"])


# -- dumps read back as the same configuration ------------------------------------------------------


@pytest.mark.parametrize("name", ["baseline", "full", "paper-full", "swift-srm"])
def test_a_dumped_config_validates_back_to_itself(name: str) -> None:
    # The eval ships model_dump_json() to its worker processes, which validate it again; `config show`
    # prints model_dump(), which a user may save as a config of their own.
    cfg = load_config(name).with_seed(5)
    shipped = RunConfig.model_validate_json(cfg.model_dump_json())
    saved = RunConfig.model_validate(yaml.safe_load(yaml.safe_dump(cfg.model_dump(mode="json"))))
    assert shipped.model_dump() == saved.model_dump() == cfg.model_dump()
    assert shipped.sage.model.seed == 5


@pytest.mark.parametrize(
    ("fields", "dumped"),
    [
        (
            {"kind": "local"},
            {
                "kind",
                "model",
                "system_message",
                "max_tokens",
                "temperature",
                "stop",
                "seed",
                "n_ctx",
                "n_threads",
                "model_path",
                "prefix_states",
                "response_cache",
            },
        ),
        (
            {"kind": "openai", "model": "m"},
            {"kind", "model", "system_message", "max_tokens", "temperature", "stop", "seed"}
            | {
                "base_url",
                "api_key_env",
                "timeout_s",
                "max_retries",
                "backoff_s",
                "call_budget_s",
                "extra_body",
                "constraint_format",
                "response_cache",
            },
        ),
        (
            {"kind": "scripted", "replies": ["a"]},
            {
                "kind",
                "model",
                "system_message",
                "max_tokens",
                "temperature",
                "stop",
                "seed",
                "replies",
                "cycle",
            },
        ),
    ],
)
def test_a_dump_holds_only_the_fields_its_kind_uses(fields: dict[str, object], dumped: set[str]) -> None:
    cfg = ModelConfig.model_validate(fields)
    every_kind = {"breaker_after", "breaker_cooldown_s"}  # the role's circuit breaker, whatever the backend
    assert set(cfg.model_dump()) == set(json.loads(cfg.model_dump_json())) == dumped | every_kind
