"""``fastslow config``: inspect configurations."""

from __future__ import annotations

import typer
import yaml

from fastslow.cli._common import ConfigOpt, OverrideOpt, run_config

config_app = typer.Typer(no_args_is_help=True, help="Inspect configurations.")


@config_app.command("show")
def config_show(config: ConfigOpt = "oracle", override: OverrideOpt = None) -> None:
    """Print the resolved configuration as YAML."""
    print(yaml.safe_dump(run_config(config, override).model_dump(mode="json"), sort_keys=False), end="")
