"""Reference pages of the documentation site, rendered from the code, so they cannot drift from it.

Each ``*_reference`` function returns one markdown page built from what the program itself declares:
the Typer app's commands and options, the pydantic models' fields (type, default, docstring), the
event classes, the metrics.json record and the configuration files shipped in the package. The
mkdocs hook (``scripts/mkdocs_hooks.py``) writes them into the site at build time, so none is edited by
hand and a page that no longer matches the code cannot be built: a field added with a docstring appears
on the next build.

Importing this module loads pydantic and the config models only; the CLI app is imported inside
:func:`cli_reference`.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

GENERATED_NOTE = (
    '!!! note "Generated from the code"\n'
    "    This page is written by `fastslow.docgen` at every build of the site; edit {source}, "
    "not this page.\n"
)


# -- helpers -------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """``text`` made safe for one markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def type_name(annotation: Any) -> str:
    """A short, readable spelling of a type annotation (``int``, ``"a" | "b"``, ``list[str] | None``)."""
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a.value if isinstance(a, enum.Enum) else a) for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_name(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_name(a) for a in args)}]" if args else name
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return " \\| ".join(json.dumps(m.value) for m in annotation)
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def default_text(field: FieldInfo) -> str:
    """The field's default as it would be written in YAML/JSON; ``required`` when there is none."""
    if field.default is PydanticUndefined:
        if field.default_factory is None:
            return "required"
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:  # a factory that takes the validated data: no fixed default
            return "computed"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's type holds (``X``, ``X | None``, ``list[X]``, ``dict[str, X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        for model in _models_in(arg):
            if model not in found:
                found.append(model)
    return found


def _container_suffix(annotation: Any) -> str:
    """How a nested model's keys continue the path: ``[]`` under a list, ``.<key>`` under a mapping."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return "[]"
    if origin is dict:
        return ".<key>"
    for arg in typing.get_args(annotation):
        suffix = _container_suffix(arg)
        if suffix:
            return suffix
    return ""


def model_rows(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    """(key path, type, default, description) of every field of ``model`` and of the models it nests,
    depth first in declaration order; a nested model's own row comes before its fields."""
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        yield key, type_name(field.annotation), default_text(field), field.description or ""
        suffix = _container_suffix(field.annotation)
        for nested in _models_in(field.annotation):
            yield from model_rows(nested, f"{key}{suffix}.")


def model_table(model: type[BaseModel], prefix: str = "") -> str:
    """A markdown table of :func:`model_rows`."""
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for key, type_, default, description in model_rows(model, prefix):
        lines.append(f"| `{key}` | {type_} | `{_cell(default)}` | {_cell(description)} |")
    return "\n".join(lines) + "\n"


# -- configuration -------------------------------------------------------------------------------------


def config_reference(model: type[BaseModel] | None = None) -> str:
    """Every configuration key of ``model`` (default: ``RunConfig``): one table per top-level section,
    each key with its type, default and the field's docstring."""
    if model is None:
        from fastslow.config import RunConfig

        model = RunConfig
    out = [
        "# Configuration keys\n",
        GENERATED_NOTE.format(source="the field docstrings in the pydantic config models"),
        "Every key of a run configuration, as `fastslow config show` writes it and `-o key.path=value`"
        " sets it. A configuration file states only what differs from these defaults (or from the file"
        " it `extends`); an unknown key is an error.\n",
    ]
    scalars = [(n, f) for n, f in model.model_fields.items() if not _models_in(f.annotation)]
    if scalars:
        out.append("## Top level\n")
        out.append("| key | type | default | description |\n|---|---|---|---|")
        for name, field in scalars:
            out.append(
                f"| `{name}` | {type_name(field.annotation)} | `{_cell(default_text(field))}` "
                f"| {_cell(field.description or '')} |"
            )
        out.append("")
    for name, field in model.model_fields.items():
        nested = _models_in(field.annotation)
        if not nested:
            continue
        out.append(f"## `{name}`\n")
        out.append(f"{field.description or ''}\n")
        for sub in nested:
            out.append(model_table(sub, f"{name}{_container_suffix(field.annotation)}."))
    return "\n".join(out)


# -- events and metrics --------------------------------------------------------------------------------


def _event_classes() -> list[type[BaseModel]]:
    from fastslow.events import Event

    union = typing.get_args(Event)[0]
    return list(typing.get_args(union))


def events_reference() -> str:
    """Every event type of the JSONL logs: its ``event`` value, docstring and fields."""
    from fastslow.events import SCHEMA_VERSION

    out = [
        "# Event schema\n",
        GENERATED_NOTE.format(source="`src/fastslow/events.py`"),
        f"Each line of `events/<episode>.jsonl` is one JSON object; its `event` field names the type below."
        f" The schema version (`episode_start.schema_version`) is **{SCHEMA_VERSION}**. Unknown fields or"
        " values are refused: a log that does not match is reported as damaged.\n",
    ]
    nested: list[type[BaseModel]] = []
    for cls in _event_classes():
        name = cls.model_fields["event"].default
        out.append(f"## `{name}`\n")
        out.append(f"{(cls.__doc__ or '').strip()}\n")
        out.append("| field | type | default | description |\n|---|---|---|---|")
        for field_name, field in cls.model_fields.items():
            out.append(
                f"| `{field_name}` | {type_name(field.annotation)} | `{_cell(default_text(field))}` "
                f"| {_cell(field.description or '')} |"
            )
            for model in _models_in(field.annotation):
                if model not in nested:
                    nested.append(model)
        out.append("")
    if nested:
        out.append("## Nested records\n")
        for model in nested:
            out.append(f"### `{model.__name__}`\n")
            out.append(f"{(model.__doc__ or '').strip()}\n")
            out.append(model_table(model))
    return "\n".join(out)


def metrics_reference() -> str:
    """The metrics.json record (``RunMetrics``): every key path with type, default and description."""
    from fastslow.eval.records import METRICS_FORMAT, RunMetrics

    return "\n".join(
        [
            "# metrics.json schema\n",
            GENERATED_NOTE.format(source="`src/fastslow/eval/records.py`"),
            f"`fastslow eval` computes `DIR/metrics.json` from the event logs only; `fastslow report` reads"
            f" it back. This fastslow writes format **{METRICS_FORMAT}** (`format_version`); a file of"
            " another version is recomputed from its logs or refused. `[]` marks a list's items and"
            " `.<key>` a mapping's values.\n",
            f"{(RunMetrics.__doc__ or '').strip()}\n",
            model_table(RunMetrics),
        ]
    )


# -- shipped configurations ----------------------------------------------------------------------------


def _shipped(root: Traversable, prefix: str = "") -> Iterator[tuple[str, str]]:
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_dir() and not entry.name.startswith(("_", ".")):
            yield from _shipped(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".yaml"):
            yield f"{prefix}{entry.name[: -len('.yaml')]}", entry.read_text(encoding="utf-8")


def shipped_configs() -> list[tuple[str, str]]:
    """(name, YAML text) of every configuration in the package, subfolders included (``constrained/full``)."""
    from fastslow.config import CONFIG_PACKAGE

    return list(_shipped(resources.files(CONFIG_PACKAGE)))


def _flatten(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from _flatten(value, f"{prefix}{key}.")
    else:
        yield prefix.rstrip("."), data


def configs_reference() -> str:
    """Each shipped configuration: its description, what it extends, and the keys it sets over that
    (its own file's keys, which is all that differs from its parents). Every one is loaded, so a
    shipped file that no longer validates fails the build."""
    from fastslow.config import load_config, load_yaml

    out = [
        "# Shipped configurations\n",
        GENERATED_NOTE.format(source="the YAML files in `src/fastslow/configs/`"),
        "Run one with `fastslow eval --config NAME` (or `fastslow config show --config NAME` to see it"
        " resolved). `extends` builds a file on others; the keys listed are the ones the file sets over"
        " what it extends, i.e. what it switches on or changes.\n",
        "| config | extends | description |\n|---|---|---|",
    ]
    details: list[str] = []
    for name, text in shipped_configs():
        data = load_yaml(text, f"config {name}") or {}
        resolved = load_config(name)
        parents = data.pop("extends", None)
        if isinstance(parents, str):
            parents = [parents]
        data.pop("name", None)
        description = data.pop("description", None) or resolved.description
        anchor = name.replace("/", "-")
        extends = ", ".join(f"`{p}`" for p in parents or []) or "defaults"
        out.append(f"| [`{name}`](#{anchor}) | {extends} | {_cell(description)} |")
        details.append(f"## `{name}` {{#{anchor}}}\n")
        details.append(f"{description}\n\nExtends: {extends}.\n")
        rows = list(_flatten(data))
        if rows:
            details.append("| key | value |\n|---|---|")
            for key, value in rows:
                details.append(f"| `{key}` | `{_cell(json.dumps(value, default=str))}` |")
            details.append("")
        else:
            details.append("Sets nothing over what it extends.\n")
    return "\n".join([*out, "", *details])


# -- command line --------------------------------------------------------------------------------------


def _param_type(param: Any) -> str:
    bare = getattr(param, "bare_type", None)  # Typer's own parameters spell the Python type
    if callable(bare):
        return str(bare())
    type_ = getattr(param, "type", None)
    return str(getattr(type_, "name", type_ or ""))


def _param_rows(command: Any) -> list[str]:
    rows = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            names = f"`{(param.name or '').upper()}`"
            kind = "argument"
        else:
            names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
            kind = "flag" if getattr(param, "is_flag", False) else "option"
        type_ = "bool" if kind == "flag" else _param_type(param)
        if getattr(param, "multiple", False) or param.nargs == -1:
            type_ += ", repeatable"
        default = param.default
        if param.required:
            default_cell = "required"
        elif callable(default) or default is None:
            default_cell = ""
        else:
            default_cell = f"`{_cell(json.dumps(default, default=str))}`"
        help_text = getattr(param, "help", None) or ""
        rows.append(f"| {names} | {kind}, {_cell(type_)} | {default_cell} | {_cell(help_text)} |")
    return rows


def _is_group(command: Any) -> bool:
    # Typer may ship its own copy of Click (typer._click): judged by shape, not by class.
    return isinstance(getattr(command, "commands", None), dict)


def _commands(group: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    for name in sorted(group.commands):
        command = group.commands[name]
        if getattr(command, "hidden", False):
            continue
        yield [*path, name], command
        if _is_group(command):
            yield from _commands(command, [*path, name])


def cli_reference() -> str:
    """Every ``fastslow`` command and subcommand with its usage, help text and each argument and option
    (type, default, help), from the Typer app."""
    import typer.main

    from fastslow.cli import app

    root = typer.main.get_command(app)
    out = [
        "# Command line\n",
        GENERATED_NOTE.format(source="the Typer app in `src/fastslow/cli/`"),
        "`fastslow --help` and `fastslow COMMAND --help` print the same text. Bad input prints one line"
        " on stderr, exits 2 and writes nothing.\n",
    ]
    for path, command in _commands(root, []):
        title = " ".join(["fastslow", *path])
        ctx = command.context_class(command, info_name=title)
        pieces = " ".join(command.collect_usage_pieces(ctx))
        out.append(f"## `{title}`\n")
        out.append(f"```\n{title} {pieces}\n```\n")
        help_text = (command.help or command.short_help or "").strip()
        if help_text:
            out.append(help_text.replace("\b\n", "") + "\n")
        rows = _param_rows(command)
        if rows:
            out.append("| name | kind | default | help |\n|---|---|---|---|")
            out.extend(rows)
            out.append("")
        if _is_group(command):
            out.append(
                "Subcommands: " + ", ".join(f"`{title} {n}`" for n in sorted(command.commands)) + ".\n"
            )
    return "\n".join(out)


PAGES: dict[str, Any] = {
    "reference/cli.md": cli_reference,
    "reference/config.md": config_reference,
    "reference/events.md": events_reference,
    "reference/metrics.md": metrics_reference,
    "reference/configs.md": configs_reference,
}
"""Site path -> function rendering that generated page (the mkdocs hook adds each to the site)."""
