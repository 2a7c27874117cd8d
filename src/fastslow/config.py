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
from pydantic import (
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from fastslow.controller.config import ControllerConfig
from fastslow.env.config import SCIENCEWORLD_SIMPLIFICATIONS as SCIENCEWORLD_SIMPLIFICATIONS
from fastslow.env.config import EnvConfig
from fastslow.errors import UsageError
from fastslow.memory.config import AmmConfig
from fastslow.models.config import ModelConfig
from fastslow.procedures.config import ProceduresConfig
from fastslow.redact import is_secret_key, redact_data, wants_secrets
from fastslow.reflection.config import CriticConfig, SrmConfig
from fastslow.strict import StrictModel
from fastslow.swift.config import SwiftConfig
from fastslow.vocab import Mechanism

BUILTIN_AGENTS = ("oracle", "swiftsage")
"""Agent kinds ``fastslow.build`` makes itself; every other kind is a plug-in (``agent_kinds``)."""
PLUGIN_PACKAGE = "fastslow.plugins"
"""Where plug-in agents live: kind ``K`` is the module ``fastslow.plugins.K`` (``fastslow.plugins``)."""


def agent_kinds() -> tuple[str, ...]:
    """Every ``agent.kind``: the built-in ones, then the plug-in modules of ``PLUGIN_PACKAGE`` (each
    ``<kind>.py`` not starting with ``_``), listed from the package's files without importing them."""
    root = resources.files(PLUGIN_PACKAGE)
    plugins = sorted(
        p.name[: -len(".py")] for p in root.iterdir() if p.name.endswith(".py") and not p.name.startswith("_")
    )
    return (*BUILTIN_AGENTS, *plugins)


class AgentConfig(StrictModel):
    """Which agent plays the episode."""

    kind: str = "oracle"
    """oracle = replay ScienceWorld's gold action sequence (an upper bound and a harness check);
    swiftsage = SwiftSage's fast/slow controller (the paper's baseline; ``controller:`` section), which
    also plays Swift alone (``controller.sage_enabled: false``, e.g. swift-only); any other kind is a
    plug-in agent, the module ``fastslow.plugins.<kind>`` (react = ReAct, Yao et al. 2023; reflexion =
    Reflexion, Shinn et al. 2023; docs/agents.md). An unknown kind is refused with the known ones."""
    settings: dict[str, Any] = {}
    """A plug-in agent's own settings, checked by its module's ``Settings`` model when the agent is
    built and before a run writes anything (unknown keys are errors there); empty for oracle and
    swiftsage, whose settings are their own sections (``controller:`` ...)."""

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        known = agent_kinds()
        if kind not in known:
            raise ValueError(f"unknown agent kind {kind!r} (known: {', '.join(known)})")
        return kind

    @model_validator(mode="after")
    def _settings_of_plugins(self) -> AgentConfig:
        if self.settings and self.kind in BUILTIN_AGENTS:
            raise ValueError(f"agent.settings is for plug-in agents; {self.kind} takes none")
        return self


class SageConfig(StrictModel):
    """Sage, the slow planner (paper §3; Qwen2.5-7B-Instruct-1M in §4)."""

    model: ModelConfig = ModelConfig()
    """Language model Sage plans and grounds with (default: the embedded offline model)."""


class Intervention(StrictModel):
    """One mechanism switched off at one step of every episode (``fastslow attribute``'s forks).

    ``gate-drop``: SRM's Gate-1 is not consulted for the action of step ``step + 1`` (what it would have
    dropped runs); ``critic``: actions the Critic hands over after step ``step`` do not reach the buffer
    (it is still called, so its budget is spent as it was); ``t1-injection``: AMM's T1 does not run on
    Swift's proposal for step ``step + 1``; ``sage-round``: a Sage round asked for while choosing step
    ``step + 1`` answers nothing (``controller.sage.SageOff``: the arbiter's fallback acts, as when Sage
    fails); ``memory-prior``: AMM's action prior leaves Swift's proposal for step ``step + 1`` as Swift
    (or T1's retry) ranked it (T1 and the rest of AMM still run there); ``t4-injection``: a Sage round
    planning at ``step`` steps taken gets no AMM memory block (its baseline prompt). Every other step,
    and every other mechanism, as configured."""

    mechanism: Mechanism
    step: int = Field(ge=0)
    """Env steps taken when the mechanism would act: the ``step`` of its event in the parent's log."""


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
    procedures: ProceduresConfig = ProceduresConfig()
    """Hand-written task logic (task procedures, judgements, Gate-1's task-specific focus rules);
    off unless ``procedures.enabled``."""
    srm: SrmConfig = SrmConfig()
    """SRM (Gate-1, stagnation detector, Critic switch) settings."""
    controller: ControllerConfig = ControllerConfig()
    """SwiftSage controller settings: escalation rules, action buffer, Sage prompting, early stop."""
    amm: AmmConfig = AmmConfig()
    """AMM (adaptive episodic memory, paper §3.1) settings; off unless ``amm.enabled``."""
    intervention: Intervention | None = None
    """A mechanism off at one step (set by ``fastslow attribute`` for its counterfactual forks); None:
    every mechanism acts as configured."""
    warmup: Literal["any", "required", "refused"] = "any"
    """The memory regime this configuration stands for, checked by ``fastslow eval`` before anything
    is written: ``required`` refuses a run without ``--warmup`` (the paper's populated store),
    ``refused`` a run with it (the paper's weak-memory sensitivity regime: the store starts empty and
    fills online only); ``any`` leaves it to the command line."""

    @model_serializer(mode="wrap")
    def _dump_redacted(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        # Every dump is a record or a display (config.yaml, the config hash, event headers, `config
        # show`) except the config the harness ships to its own workers: a password given anywhere in
        # it (a URL, extra_body, a DSN) is written as *** (fastslow.redact).
        data = handler(self)
        return data if wants_secrets(info.context) else redact_data(data)

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
        return _read_text(path, name_or_path), path.stem, path.resolve().parent
    resource = resources.files(CONFIG_PACKAGE) / f"{name_or_path}.yaml"
    if not resource.is_file():
        known = ", ".join(builtin_config_names())
        raise UsageError(f"unknown config '{name_or_path}' (built-in: {known}; or give a .yaml path)")
    return resource.read_text(encoding="utf-8"), name_or_path, None


MAX_CONFIG_BYTES = 1_000_000
"""Largest config file read (the shipped ones are a few kB)."""
MAX_YAML_NODES = 100_000
"""Most nodes one YAML document may expand to, each alias counted as the nodes it repeats: far above
any configuration, far below what an alias bomb ("billion laughs") would build in memory."""


def _read_text(path: Path, name: str) -> str:
    """A config file's text; one-line ``UsageError`` for a file too large, unreadable or not UTF-8."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise UsageError(f"config {name} is {size} bytes: a config file may hold {MAX_CONFIG_BYTES}")
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"config {name} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise UsageError(f"config {name} cannot be read: {exc.strerror or exc}") from None


def load_yaml(text: str, what: str) -> Any:
    """``yaml.safe_load`` of ``text`` that refuses, with a one-line ``UsageError`` naming ``what``,
    invalid YAML, nesting too deep to parse, a document that refers to itself or whose aliases would
    expand it past ``MAX_YAML_NODES`` nodes, and a mapping that gives one key twice (naming the key
    and both lines), before any Python object is built from it."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, what)
        _check_duplicate_keys(node, what)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise UsageError(f"{what} is not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise UsageError(f"{what} is nested too deeply to read") from None
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node, what: str) -> None:
    """The node count of ``root`` once every alias is expanded, computed without expanding any (each
    distinct node is sized once); UsageError past ``MAX_YAML_NODES`` or on a node that contains itself."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # being sized: the ancestors of the node at hand
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_sized = stack.pop()
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        if children_sized:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[id(node)] > MAX_YAML_NODES:
                raise UsageError(
                    f"{what}: its aliases expand it past {MAX_YAML_NODES} nodes (an alias bomb?); refused"
                )
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise UsageError(f"{what}: an alias refers to a node that contains it; refused")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _check_duplicate_keys(root: yaml.Node, what: str) -> None:
    """UsageError for the first mapping under ``root`` that gives a key twice: PyYAML would keep the
    last value without a word, so a setting written twice (an ablation edited in two places) would
    silently be the later one. The message names the key's path and the two lines. ``<<`` (a merge of
    an anchored mapping) is not a key; the keys it merges may be given again on purpose."""
    seen: set[int] = set()  # nodes already walked: an alias is checked once, where it is defined
    stack: list[tuple[yaml.Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node.value))
        if not isinstance(node, yaml.MappingNode):
            continue
        lines: dict[tuple[str, str], int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                name = f"{path}.{key.value}" if path else key.value
                line = key.start_mark.line + 1
                if (key.tag, key.value) in lines:
                    first = lines[(key.tag, key.value)]
                    where = f"line {line}" if first == line else f"lines {first} and {line}"
                    raise UsageError(f"{what}: key '{name}' is given twice ({where})")
                lines[(key.tag, key.value)] = line
                stack.append((value, name))
            else:
                stack.append((value, path))


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
    data = load_yaml(text, f"config {name_or_path}") or {}
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
    value = load_yaml(raw, f"override {override}: value") if raw.strip() else raw
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
    # A whole section as input says nothing the message does not, and may hold a DSN password; a value
    # refused for a secret (or for a *_env name, where a pasted secret is the likely mistake) is not echoed.
    hidden = isinstance(got, dict) or is_secret_key(loc) or loc.endswith("_env")
    return f"config {source}: {loc}: {err['msg']}" + ("" if hidden else f" (got {got!r})")


def load_config(name_or_path: str, overrides: list[str] | None = None) -> RunConfig:
    """Load a built-in config by name or a YAML file by path, then apply dotted overrides."""
    _, data = _read_yaml(name_or_path)
    for override in overrides or []:
        apply_override(data, override)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise UsageError(_format_validation_error(name_or_path, exc)) from exc
