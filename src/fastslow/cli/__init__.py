"""The ``fastslow`` command line: run, eval, episodes, report, view, bench, data, config.

Bad input (unknown task, variation, config key, wrong type, unwritable output) prints one line on
stderr and exits with code 2 before anything is written.

One module per command group: ``run`` (the commands that play episodes), ``report`` (those that read
finished runs), ``bench``, ``data``, ``train`` and ``config`` (the sub-apps), ``entry`` (``main``:
errors, exit codes, Ctrl-C); ``_common`` holds the root app, the consoles and the shared options.
"""

from __future__ import annotations

# Importing run, then report, registers their commands on the root app in the order `fastslow --help`
# lists them (the order of registration); the sub-apps follow them there in the order they are added.
from fastslow.cli import run as run

# isort: split
from fastslow.cli import report as report
from fastslow.cli._common import app, console, err_console, out_path
from fastslow.cli.bench import bench_app
from fastslow.cli.config import config_app
from fastslow.cli.data import data_app
from fastslow.cli.entry import INTERRUPTED, RESUMABLE, main
from fastslow.cli.train import train_app
from fastslow.memory.cli import memory_app

app.add_typer(bench_app, name="bench")
app.add_typer(data_app, name="data")
app.add_typer(config_app, name="config")
app.add_typer(train_app, name="train")
app.add_typer(memory_app, name="memory")

__all__ = [
    "INTERRUPTED",
    "RESUMABLE",
    "app",
    "bench_app",
    "config_app",
    "console",
    "data_app",
    "err_console",
    "main",
    "out_path",
    "train_app",
]
