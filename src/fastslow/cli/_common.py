"""What every command group shares: the root Typer app, the consoles, the ``--out`` parser, the option
types and the configuration loader."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from fastslow.config import RunConfig, load_config

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Dual-process agents on text worlds: ScienceWorld, TextWorldExpress.",
)

# path, an error message quoting any of them), and rich would read "[/b]" in it as a closing tag and
# raise. Styling is given as Text objects or style= instead.
# soft_wrap: a line is never broken by rich (the terminal wraps it), so a printed path stays one word a
# user can copy, whatever the terminal's width.
console = Console(markup=False, soft_wrap=True)
err_console = Console(stderr=True, markup=False, soft_wrap=True)


def out_path(value: str) -> Path:
    """The parser of every ``--out`` option: the path, refused when empty (``Path("")`` is ``.``, so
    ``--out ""`` would quietly write into the current folder)."""
    if not value:
        raise typer.BadParameter("an empty path (it would mean the current folder; give . for that)")
    return Path(value)


ConfigOpt = Annotated[
    str, typer.Option("--config", "-c", help="Built-in config name or path to a YAML file.")
]
OverrideOpt = Annotated[
    list[str] | None, typer.Option("--override", "-o", help="Dotted override, e.g. -o env.step_limit=100.")
]
SetOpt = Annotated[
    str,
    typer.Option("--set", help="Episode set: test, dev, warmup, train, all (TextWorldExpress: no all)."),
]
TasksOpt = Annotated[
    str | None,
    typer.Option("--tasks", help="Task ids, e.g. 0,3,5-8 (TextWorldExpress: game ids or names)."),
]
VariationsOpt = Annotated[str | None, typer.Option("--variations", help="Variation ids, e.g. 0-2.")]
LimitOpt = Annotated[int | None, typer.Option("--limit-per-task", help="At most N episodes per task.")]


def run_config(name: str, overrides: list[str] | None) -> RunConfig:
    """The resolved configuration that ``--config`` and ``--override`` name."""
    return load_config(name, overrides or [])
