"""The ``fastslow`` command line: run, eval, episodes, bench, data, config.

Bad input (unknown task, variation, config key, wrong type, unwritable output) prints one line on
stderr and exits with code 2 before anything is written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import click
import typer
import yaml
from rich.console import Console

from fastslow.config import RunConfig, load_config
from fastslow.errors import FastslowError, ModelUnavailableError, UsageError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Dual-process agents on ScienceWorld.")
bench_app = typer.Typer(
    no_args_is_help=True, help="Benchmarks; each ends with one JSON line of headline figures."
)
data_app = typer.Typer(no_args_is_help=True, help="Build the data files fastslow ships or trains on.")
config_app = typer.Typer(no_args_is_help=True, help="Inspect configurations.")
app.add_typer(bench_app, name="bench")
app.add_typer(data_app, name="data")
app.add_typer(config_app, name="config")

console = Console()
err_console = Console(stderr=True)

ConfigOpt = Annotated[
    str, typer.Option("--config", "-c", help="Built-in config name or path to a YAML file.")
]
OverrideOpt = Annotated[
    list[str] | None, typer.Option("--override", "-o", help="Dotted override, e.g. -o env.step_limit=100.")
]
SetOpt = Annotated[str, typer.Option("--set", help="Episode set: test, dev, warmup, train, all.")]
TasksOpt = Annotated[str | None, typer.Option("--tasks", help="Task ids, e.g. 0,3,5-8.")]
VariationsOpt = Annotated[str | None, typer.Option("--variations", help="Variation ids, e.g. 0-2.")]
LimitOpt = Annotated[int | None, typer.Option("--limit-per-task", help="At most N episodes per task.")]


def _config(name: str, overrides: list[str] | None) -> RunConfig:
    return load_config(name, overrides or [])


@app.command()
def episodes(
    set_name: SetOpt = "test",
    tasks: TasksOpt = None,
    variations: VariationsOpt = None,
    limit_per_task: LimitOpt = None,
    count: Annotated[bool, typer.Option("--count", help="Print only the number of episodes.")] = False,
) -> None:
    """Print one `task_id variation` line per episode of a set (or only the count)."""
    from fastslow.env.episodes import select_episodes

    selected = select_episodes(set_name, tasks, variations, limit_per_task)
    if count:
        print(len(selected))
    else:
        print("\n".join(str(e) for e in selected))


@app.command()
def run(
    task: Annotated[str, typer.Option("--task", "-t", help="Task id 0-29, name, or SwiftSage id like 1-1.")],
    variation: Annotated[int, typer.Option("--variation", "-v", help="Variation id of the task.")],
    config: ConfigOpt = "oracle",
    override: OverrideOpt = None,
    out: Annotated[Path | None, typer.Option("--out", help="Directory for the event log.")] = None,
) -> None:
    """Play one episode with a live view of every step."""
    from fastslow.env.episodes import Episode
    from fastslow.env.tasks import get_task
    from fastslow.eval.live import play_one

    cfg = _config(config, override)
    info = get_task(task)
    info.check_variation(variation)
    play_one(cfg, Episode(info.task_id, variation), out, console)


@app.command("eval")
def eval_(
    out: Annotated[Path, typer.Option("--out", help="Output directory (events/, metrics.json).")],
    config: ConfigOpt = "oracle",
    set_name: SetOpt = "test",
    tasks: TasksOpt = None,
    variations: VariationsOpt = None,
    limit_per_task: LimitOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Play a set of episodes and write DIR/events/*.jsonl and DIR/metrics.json."""
    from fastslow.env.episodes import select_episodes
    from fastslow.eval.live import eval_with_progress

    cfg = _config(config, override)
    selected = select_episodes(set_name, tasks, variations, limit_per_task)
    metrics = eval_with_progress(cfg, selected, out, console)
    headline = {k: metrics[k] for k in ("episodes", "mean_score", "success_rate", "steps_at_success")}
    console.print(f"metrics written to {out / 'metrics.json'}")
    print(json.dumps(headline))


@bench_app.command("env")
def bench_env_cmd(
    tasks: TasksOpt = None,
) -> None:
    """Replay gold paths through the stock wrapper and ours; print steps/s of each and the ratio."""
    from fastslow.bench.env import DEFAULT_TASKS, bench_env
    from fastslow.env.episodes import parse_int_ranges

    task_ids = tuple(parse_int_ranges(tasks, "task")) if tasks else DEFAULT_TASKS
    result = bench_env(task_ids, progress=lambda line: console.print(line))
    for line in result.mismatches[:20]:
        err_console.print(f"[red]mismatch[/red] {line}")
    head = result.headline()
    console.print(
        f"{head['steps']} steps: stock {head['stock_steps_per_s']} steps/s, "
        f"ours {head['ours_steps_per_s']} steps/s, ratio {head['ratio']}x, identical={head['identical']}"
    )
    print(json.dumps(head))
    if result.mismatches:
        raise typer.Exit(1)


@bench_app.command("llm")
def bench_llm_cmd(
    config: ConfigOpt = "oracle",
    override: OverrideOpt = None,
    role: Annotated[str, typer.Option("--role", help="Which configured model: sage or critic.")] = "sage",
    prompt_words: Annotated[int, typer.Option("--prompt-words", help="Length of the long prompt.")] = 600,
    gen_tokens: Annotated[int, typer.Option("--gen-tokens", help="Tokens to generate.")] = 128,
) -> None:
    """Prompt-processing and generation tokens/s of the configured Sage (or Critic) model."""
    from fastslow.models import make_model
    from fastslow.models.bench import bench_llm

    cfg = _config(config, override)
    if role not in ("sage", "critic"):
        raise UsageError(f"--role must be sage or critic, got '{role}'")
    model_cfg = cfg.sage.model if role == "sage" else cfg.critic.model
    model = make_model(model_cfg)
    model.check_available()
    result = bench_llm(model, prompt_words=prompt_words, gen_tokens=gen_tokens)
    console.print(
        f"{result['backend']}/{result['model']}: prompt {result['prompt_tokens']} tok at "
        f"{result['prompt_tok_s']} tok/s, generation {result['gen_tokens']} tok at {result['gen_tok_s']} tok/s"
    )
    print(json.dumps({k: v for k, v in result.items() if k != "calls"}))


@data_app.command("tasks")
def data_tasks(
    out: Annotated[
        Path | None, typer.Option("--out", help="Where to write (default: the packaged file).")
    ] = None,
) -> None:
    """Regenerate the task table (variation splits, oracle lengths, groups) from ScienceWorld."""
    from fastslow.env import tasks as tasks_mod

    target = out or Path(tasks_mod.__file__).parent / "data" / tasks_mod.TASKS_FILE
    table = tasks_mod.build_task_table(lambda i, name: console.print(f"task {i:2d} {name}"))
    target.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    console.print(f"wrote {target}")


@config_app.command("show")
def config_show(config: ConfigOpt = "oracle", override: OverrideOpt = None) -> None:
    """Print the resolved configuration as YAML."""
    print(yaml.safe_dump(_config(config, override).model_dump(mode="json"), sort_keys=False), end="")


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-line errors and exit code 2 for bad input, whatever layer detects it."""
    try:
        app(args=argv, standalone_mode=False)
    except (UsageError, ModelUnavailableError) as exc:
        err_console.print(f"error: {exc}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except click.UsageError as exc:
        err_console.print(f"error: {exc.format_message()}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except FastslowError as exc:
        err_console.print(f"error: {type(exc).__name__}: {exc}", highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
