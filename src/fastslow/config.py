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

from fastslow.controller.config import ControllerConfig
from fastslow.env.config import SCIENCEWORLD_SIMPLIFICATIONS as SCIENCEWORLD_SIMPLIFICATIONS
from fastslow.env.config import EnvConfig
from fastslow.errors import UsageError
from fastslow.memory.config import AmmConfig
from fastslow.models.config import ModelConfig
from fastslow.reflection.config import CriticConfig, SrmConfig
from fastslow.strict import StrictModel
from fastslow.swift.config import SwiftConfig


class AgentConfig(StrictModel):
    """Which agent plays the episode."""

    kind: Literal["oracle", "swiftsage"] = "oracle"
    """oracle = replay ScienceWorld's gold action sequence (an upper bound and a harness check);
    swiftsage = SwiftSage's fast/slow controller (the paper's baseline; ``controller:`` section), which
    also plays Swift alone (``controller.sage_enabled: false``, e.g. swift-only)."""


class SageConfig(StrictModel):
    """Sage, the slow planner (paper §3; Qwen2.5-7B-Instruct-1M in §4)."""

    model: ModelConfig = ModelConfig()
    """Language model Sage plans and grounds with (default: the embedded offline model)."""


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
    swift: SwiftConfig = SwiftConfig()
    """Swift (fast proposer) settings."""
    srm: SrmConfig = SrmConfig()
    """SRM (Gate-1, stagnation detector, Critic switch) settings."""
    controller: ControllerConfig = ControllerConfig()
    """SwiftSage controller settings: escalation rules, action buffer, Sage prompting, early stop."""
    amm: AmmConfig = AmmConfig()
    """AMM (adaptive episodic memory, paper §3.1) settings; off unless ``amm.enabled``."""
    warmup: Literal["any", "required", "refused"] = "any"
    """The memory regime this configuration stands for, checked by ``fastslow eval`` before anything
    is written: ``required`` refuses a run without ``--warmup`` (the paper's populated store),
    ``refused`` a run with it (the paper's weak-memory sensitivity regime: the store starts empty and
    fills online only); ``any`` leaves it to the command line."""

    def with_seed(self, seed: int) -> RunConfig:
        """This configuration with every sampling model (Sage, Critic) seeded with ``seed``.

        Swift, Gate-1, the stagnation detector and AMM are deterministic, so at temperature 0 the spread
        between seeds is ScienceWorld's own nondeterminism; above 0 it is also the models' sampling."""
        sage = self.sage.model_copy(update={"model": self.sage.model.model_copy(update={"seed": seed})})
        critic = self.critic.model_copy(update={"model": self.critic.model.model_copy(update={"seed": seed})})
        return self.model_copy(update={"sage": sage, "critic": critic})


CONFIG_PACKAGE = "fastslow.configs"


def builtin_config_names() -> list[str]:
    root = resources.files(CONFIG_PACKAGE)
    return sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml"))


def _locate(name_or_path: str, relative_to: Path | None) -> tuple[str, str, Path | None]:
    """Text, default name and directory (None for built-ins) of a config given by name or path."""
    path = Path(name_or_path)
    if relative_to is not None and not path.is_absolute() and (relative_to / path).is_file():
        path = relative_to / path
    # A YAML path, or any existing file; a folder that happens to share a built-in's name (runs/full)
    # does not shadow the built-in.
    if path.suffix in {".yaml", ".yml"} or path.is_file():
        if not path.is_file():
            raise UsageError(f"config file not found: {name_or_path}")
        return path.read_text(encoding="utf-8"), path.stem, path.resolve().parent
    resource = resources.files(CONFIG_PACKAGE) / f"{name_or_path}.yaml"
    if not resource.is_file():
        known = ", ".join(builtin_config_names())
        raise UsageError(f"unknown config '{name_or_path}' (built-in: {known}; or give a .yaml path)")
    return resource.read_text(encoding="utf-8"), name_or_path, None


def _merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """``child`` over ``base``: sections merge key by key, anything else (scalars, lists) is replaced."""
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_yaml(
    name_or_path: str, relative_to: Path | None = None, chain: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]]:
    """Parse a config; ``extends: <name or path>`` (or a list of them) first loads the parents (paths
    relative to the child's folder, or built-in names), merges them in order and then the child's
    sections over them, so a config file states only what differs from the ones it builds on."""
    if name_or_path in chain:
        raise UsageError(f"config {name_or_path}: 'extends' loops ({' -> '.join((*chain, name_or_path))})")
    text, default_name, folder = _locate(name_or_path, relative_to)
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"config {name_or_path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"config {name_or_path} must be a mapping at the top level")
    parents = data.pop("extends", None)
    if parents is not None:
        if isinstance(parents, str):
            parents = [parents]
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            raise UsageError(f"config {name_or_path}: 'extends' takes a config name or path, or a list")
        base: dict[str, Any] = {}
        for parent in parents:  # later parents win, the child wins over all of them
            # a name that is not a file next to the child is a built-in name (sensitivity/ -> full)
            _, loaded = _read_yaml(parent, folder, (*chain, name_or_path))
            loaded.pop("name", None)
            loaded.pop("description", None)
            base = _merge(base, loaded)
        data = _merge(base, data)
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
    got = err.get("input")
    # A whole section as input says nothing the message does not, and may hold a DSN password.
    return f"config {source}: {loc}: {err['msg']}" + ("" if isinstance(got, dict) else f" (got {got!r})")


def load_config(name_or_path: str, overrides: list[str] | None = None) -> RunConfig:
    """Load a built-in config by name or a YAML file by path, then apply dotted overrides."""
    _, data = _read_yaml(name_or_path)
    for override in overrides or []:
        apply_override(data, override)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise UsageError(_format_validation_error(name_or_path, exc)) from exc
