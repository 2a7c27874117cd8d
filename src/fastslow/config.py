"""Run configuration: typed pydantic models, YAML files shipped in the package, ``-o a.b=c`` overrides.

Each of the paper's configurations (§4: baseline, +AMM, +SRM, full) is a YAML file under
``fastslow/configs``; the difference between two configurations is a config diff, never a code branch.
Every field carries a docstring, and unknown keys are errors (``extra="forbid"``) so a typo in an
ablation cannot silently fall back to a default.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from fastslow.errors import UsageError
from fastslow.models.config import ModelConfig
from fastslow.strict import StrictModel


class EnvConfig(StrictModel):
    """ScienceWorld settings (paper §4; SwiftSage's evaluation setup)."""

    simplification: str = "easy"
    """Comma-separated ScienceWorld simplifications; "easy" = teleport, open doors/containers,
    self-watering pots, no electrical actions outside electrical tasks."""
    step_limit: int = 300
    """Maximum env steps per episode (SwiftSage used 300; its baselines 100)."""
    jvm_timeout_s: float = 120.0
    """A single JVM call taking longer than this ends the episode with a typed error instead of hanging."""


class AgentConfig(StrictModel):
    """Which agent plays the episode."""

    kind: Literal["oracle"] = "oracle"
    """oracle = replay ScienceWorld's gold action sequence (an upper bound and a harness check)."""


class SageConfig(StrictModel):
    """Sage, the slow planner (paper §3; Qwen2.5-7B-Instruct-1M in §4)."""

    model: ModelConfig = ModelConfig()
    """Language model Sage plans and grounds with (default: the embedded offline model)."""


class CriticConfig(StrictModel):
    """The SRM Critic, called when the agent stagnates (paper §3.2; same model as Sage in §4)."""

    model: ModelConfig = ModelConfig()
    """Language model the Critic diagnoses with (default: the embedded offline model)."""


class RunConfig(StrictModel):
    """A complete, resolved configuration for running or evaluating episodes."""

    name: str = "custom"
    """Name of the configuration, recorded in every event log."""
    description: str = ""
    """One line on what this configuration is for."""
    env: EnvConfig = EnvConfig()
    """Environment settings."""
    agent: AgentConfig = AgentConfig()
    """Agent settings."""
    sage: SageConfig = SageConfig()
    """Sage (slow planner) settings."""
    critic: CriticConfig = CriticConfig()
    """Critic (SRM reflection) settings."""


CONFIG_PACKAGE = "fastslow.configs"


def builtin_config_names() -> list[str]:
    root = resources.files(CONFIG_PACKAGE)
    return sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml"))


def _read_yaml(name_or_path: str) -> tuple[str, dict[str, Any]]:
    path = Path(name_or_path)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        if not path.is_file():
            raise UsageError(f"config file not found: {name_or_path}")
        text = path.read_text(encoding="utf-8")
        default_name = path.stem
    else:
        resource = resources.files(CONFIG_PACKAGE) / f"{name_or_path}.yaml"
        if not resource.is_file():
            known = ", ".join(builtin_config_names())
            raise UsageError(f"unknown config '{name_or_path}' (built-in: {known}; or give a .yaml path)")
        text = resource.read_text(encoding="utf-8")
        default_name = name_or_path
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"config {name_or_path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"config {name_or_path} must be a mapping at the top level")
    data.setdefault("name", default_name)
    return default_name, data


def apply_override(data: dict[str, Any], override: str) -> None:
    """Apply one ``a.b.c=value`` override in place; the value is parsed as a YAML scalar/list."""
    key, sep, raw = override.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"override must look like key.path=value, got '{override}'")
    try:
        value = yaml.safe_load(raw) if raw.strip() else raw
    except yaml.YAMLError as exc:
        raise UsageError(f"override {override}: value is not valid YAML ({exc})") from exc
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise UsageError(f"override {override}: '{part}' is not a section")
        node = child
    node[parts[-1]] = value


def _format_validation_error(source: str, exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"config {source}: unknown key '{loc}'"
    return f"config {source}: {loc}: {err['msg']} (got {err.get('input')!r})"


def load_config(name_or_path: str, overrides: list[str] | None = None) -> RunConfig:
    """Load a built-in config by name or a YAML file by path, then apply dotted overrides."""
    _, data = _read_yaml(name_or_path)
    for override in overrides or []:
        apply_override(data, override)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise UsageError(_format_validation_error(name_or_path, exc)) from exc
