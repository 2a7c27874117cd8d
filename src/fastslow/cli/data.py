"""``fastslow data``: build the data files fastslow ships (task table, knowledge files) or trains on
(gold and DAgger datasets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from fastslow.cli._common import ConfigOpt, OverrideOpt, TasksOpt, console, out_path, run_config
from fastslow.errors import UsageError

data_app = typer.Typer(no_args_is_help=True, help="Build the data files fastslow ships or trains on.")


@data_app.command("tasks")
def data_tasks(
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Where to write (default: the packaged file)."),
    ] = None,
    world: Annotated[
        str, typer.Option("--world", help="scienceworld (the only world with a task table to rebuild).")
    ] = "scienceworld",
) -> None:
    """Regenerate the task table (variation splits, oracle lengths, groups) from ScienceWorld."""
    from fastslow.env.world import get_world

    target = get_world(world).rebuild_task_table(out, lambda line: console.print(line))
    console.print(f"wrote {target}")


@data_app.command("gold")
def data_gold(
    out: Annotated[Path, typer.Option("--out", parser=out_path, help="Dataset directory (resumable).")],
    split: Annotated[str, typer.Option("--split", help="Only train is accepted.")] = "train",
    per_task: Annotated[int, typer.Option("--per-task", help="Train variations per task (0: all).")] = 10,
    tasks: TasksOpt = None,
    workers: Annotated[int, typer.Option("--workers", help="Processes, one JVM each.")] = 2,
    world: Annotated[
        str,
        typer.Option(
            "--world",
            help="Whose train gold paths: scienceworld, or textworldexpress (the benchmark's train set, "
            "--per-task seeds of each game, 0: all 200; --tasks takes game ids or names).",
        ),
    ] = "scienceworld",
) -> None:
    """Replay gold paths of train variations into a Swift imitation dataset (gzipped JSONL)."""
    from fastslow.env.episodes import parse_int_ranges
    from fastslow.eval.evaluate import check_workers
    from fastslow.eval.rundir import claim_directory
    from fastslow.swift.data import build_gold, check_world_gold, world_task_ids

    if world == "scienceworld":
        task_ids = parse_int_ranges(tasks, "task") if tasks else None
    else:
        task_ids = world_task_ids(world, tasks)
    if split != "train":
        raise UsageError(f"only the train split may become training data (got '{split}')")
    if per_task < 0:
        raise UsageError(f"--per-task must be 0 (all) or more (got {per_task})")
    check_workers(workers)
    key = {"split": split, "per_task": per_task, "tasks": sorted(task_ids) if task_ids else None}
    if world != "scienceworld":
        check_world_gold(world, per_task, task_ids)  # every refusal before the directory is claimed
        key = {"world": world, **key}
    with claim_directory(out, "data gold", key):
        summary = build_gold(
            out,
            "train",
            per_task,
            task_ids,
            workers,
            progress=lambda line: console.print(line, highlight=False),
            world=world,
        )
    console.print(f"wrote {out}: {summary.episodes} episodes, {summary.examples} examples")
    counts = {"episodes": summary.episodes, "examples": summary.examples, "skipped": summary.skipped}
    print(json.dumps(counts))


@data_app.command("dagger")
def data_dagger(
    gold: Annotated[Path, typer.Option("--gold", help="Gold dataset whose variations are played (train).")],
    out: Annotated[Path, typer.Option("--out", parser=out_path, help="Dataset directory (resumable).")],
    config: ConfigOpt = "swift-only",
    override: OverrideOpt = None,
    workers: Annotated[int, typer.Option("--workers", help="Processes, one JVM each.")] = 2,
) -> None:
    """Play a configuration on the gold dataset's train variations and label the states it reaches with
    the gold path's next step (DAgger; docs/swift.md 2d)."""
    from fastslow.env.world import require_scienceworld
    from fastslow.eval.dagger import build_dagger, check_gold
    from fastslow.eval.evaluate import check_workers
    from fastslow.eval.rundir import claim_directory, config_hash

    cfg = run_config(config, override)
    require_scienceworld(cfg.env, "data dagger")
    check_workers(workers)
    check_gold(gold)
    key = {"gold": str(gold.resolve()), "config": cfg.name, "config_hash": config_hash(cfg)}
    with claim_directory(out, "data dagger", key, parents=(gold,)):
        summary = build_dagger(
            gold, out, cfg, workers, progress=lambda line: console.print(line, highlight=False)
        )
    console.print(f"wrote {out}: {summary.episodes} episodes, {summary.examples} examples")
    counts = {"episodes": summary.episodes, "examples": summary.examples, "skipped": summary.skipped}
    print(json.dumps(counts))


@data_app.command("sage-demos")
def data_sage_demos(
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Where to write (default: the packaged file)."),
    ] = None,
    tasks: TasksOpt = None,
    world: Annotated[
        str, typer.Option("--world", help="scienceworld (default) or textworldexpress.")
    ] = "scienceworld",
) -> None:
    """Replay train gold paths into Sage's demo trajectories: ScienceWorld's for the authors' prompts (2 per
    task), TextWorldExpress's for ``controller.sage.demo`` (1 per game)."""
    from fastslow.env.episodes import parse_int_ranges
    from fastslow.env.world import get_world
    from fastslow.eval.runner import git_commit

    if out is not None and not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    task_ids = parse_int_ranges(tasks, "task") if tasks else None
    target, summary = get_world(world).rebuild_knowledge(
        "sage-demos", out, task_ids, None, lambda line: console.print(line, highlight=False), git_commit()
    )
    console.print(f"wrote {target}")
    print(json.dumps(summary))


def _write_knowledge(name: str, out: Path | None, tasks: list[int] | None, per_task: int | None) -> None:
    """A knowledge file of ScienceWorld's task logic rebuilt through its ``World``
    (``rebuild_knowledge``), written to ``--out`` (its folder must exist; checked before the replay, so
    a typo costs no minutes) or the packaged file; prints where and the file's counts."""
    from fastslow.env.world import get_world
    from fastslow.eval.runner import git_commit

    if out is not None and not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    target, summary = get_world("scienceworld").rebuild_knowledge(
        name, out, tasks, per_task, lambda line: console.print(line, highlight=False), git_commit()
    )
    console.print(f"wrote {target}")
    print(json.dumps(summary))


@data_app.command("substances")
def data_substances(
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Where to write (default: the packaged file)."),
    ] = None,
    tasks: TasksOpt = None,
    per_task: Annotated[int, typer.Option("--per-task", help="Train variations replayed per task.")] = 40,
) -> None:
    """Replay train gold paths into what each substance is at room temperature (the thermometer judgement)."""
    from fastslow.env.episodes import parse_int_ranges

    if per_task < 1:
        raise UsageError(f"--per-task must be at least 1 (got {per_task})")
    _write_knowledge("substances", out, parse_int_ranges(tasks, "task") if tasks else None, per_task)


@data_app.command("paints")
def data_paints(
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Where to write (default: the packaged file)."),
    ] = None,
) -> None:
    """Read the gold paths of every train variation of the paint tasks into which primaries make which
    secondary colour (the paint judgement)."""
    _write_knowledge("paints", out, None, None)


@data_app.command("circuits")
def data_circuits(
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Where to write (default: the packaged file)."),
    ] = None,
) -> None:
    """Read the gold paths of every train variation of the power tasks into which power sources are
    renewable and where they are wired (the circuit judgement)."""
    _write_knowledge("circuits", out, None, None)


@data_app.command("focus-budgets")
def data_focus_budgets(
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Where to write (default: the packaged file)."),
    ] = None,
    tasks: TasksOpt = None,
    per_task: Annotated[
        int, typer.Option("--per-task", help="Train variations read per task, spread over its split.")
    ] = 10,
) -> None:
    """Read train gold paths into Gate-1's per-task focus budgets (the most `focus on` actions a gold
    path takes)."""
    from fastslow.env.episodes import parse_int_ranges

    if per_task < 1:
        raise UsageError(f"--per-task must be at least 1 (got {per_task})")
    _write_knowledge("focus-budgets", out, parse_int_ranges(tasks, "task") if tasks else None, per_task)
