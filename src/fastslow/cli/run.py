"""The commands that play episodes: ``episodes``, ``run``, ``eval``, ``fork``, ``attribute``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from fastslow.cli._common import (
    ConfigOpt,
    LimitOpt,
    OverrideOpt,
    SetOpt,
    TasksOpt,
    VariationsOpt,
    app,
    console,
    err_console,
    out_path,
    run_config,
)
from fastslow.errors import UsageError


@app.command()
def episodes(
    set_name: SetOpt = "test",
    tasks: TasksOpt = None,
    variations: VariationsOpt = None,
    limit_per_task: LimitOpt = None,
    count: Annotated[bool, typer.Option("--count", help="Print only the number of episodes.")] = False,
    world: Annotated[
        str, typer.Option("--world", help="The world whose episodes: scienceworld or textworldexpress.")
    ] = "scienceworld",
) -> None:
    """Print one `task_id variation` line per episode of a set (or only the count)."""
    from fastslow.env.world import get_world

    selected = get_world(world).select(set_name, tasks, variations, limit_per_task)
    if count:
        print(len(selected))
    else:
        print("\n".join(str(e) for e in selected))


@app.command()
def run(
    task: Annotated[
        str,
        typer.Option(
            "--task",
            "-t",
            help="Task id 0-29, name, or SwiftSage id like 1-1 (TextWorldExpress: game id or name).",
        ),
    ],
    variation: Annotated[int, typer.Option("--variation", "-v", help="Variation id of the task.")],
    config: ConfigOpt = "oracle",
    override: OverrideOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", parser=out_path, help="Directory for the event log.")
    ] = None,
) -> None:
    """Play one episode with a live view of every step (in the config's world, ``env.world``)."""
    from fastslow.build import check_world
    from fastslow.env.episodes import Episode
    from fastslow.env.world import get_world
    from fastslow.eval.live import play_one

    cfg = run_config(config, override)
    check_world(cfg)
    info = get_world(cfg.env.world).task(task)
    info.check_variation(variation)
    play_one(cfg, Episode(info.task_id, variation), out, console)


@app.command("eval")
def eval_(
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="Output directory (events/, metrics.json).")
    ],
    config: ConfigOpt = "oracle",
    set_name: SetOpt = "test",
    tasks: TasksOpt = None,
    variations: VariationsOpt = None,
    limit_per_task: LimitOpt = None,
    override: OverrideOpt = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            "-w",
            help="Parallel workers, one JVM each: 1 to 64, and never more are started than there are "
            "episodes to play.",
        ),
    ] = 1,
    executor: Annotated[str, typer.Option("--executor", help="local (processes) or ray (actors).")] = "local",
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Ray cluster to join: auto or HOST:PORT.")
    ] = None,
    warmup: Annotated[
        bool,
        typer.Option(
            "--warmup", help="First fill AMM's store with the warmup set (60 episodes) into DIR/warmup."
        ),
    ] = False,
    warmup_config: Annotated[
        str | None,
        typer.Option(
            "--warmup-config",
            help="Config whose agent plays the warm-up (e.g. swift-amm: minutes instead of hours with the "
            "embedded LLM); the store and salience gate stay the run's own. Needs --warmup.",
        ),
    ] = None,
    seeds: Annotated[
        str | None,
        typer.Option(
            "--seeds",
            help="Play every episode once per seed, e.g. 0-2 (seeds the Sage/Critic models; metrics.json "
            "gets per-seed scores and their mean and std).",
        ),
    ] = None,
    restart: Annotated[
        bool,
        typer.Option(
            "--restart",
            help="Discard the run already in DIR: only the files its run.json says it wrote (its episode "
            "logs, warm-up, metrics, report, own store); other files stay.",
        ),
    ] = False,
    extend: Annotated[
        bool,
        typer.Option("--extend", help="Add this selection to the run already in DIR (same config)."),
    ] = False,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream",
            help="Play each task's episodes as a stream in the set's order: the episode at position k reads "
            "the memories of the warm-up and of positions below k only, whatever --workers (the learning "
            "curve of `fastslow report`).",
        ),
    ] = False,
) -> None:
    """Play a set of episodes of the config's world (env.world) and write DIR/events/*.jsonl and
    DIR/metrics.json.

    Rerunning the same command resumes; a DIR holding another config's run, or files that no fastslow
    run wrote, is refused. Every option is checked before DIR is created or anything is written."""
    from fastslow.build import sampled_models
    from fastslow.env.episodes import Episode, parse_seeds, with_seeds
    from fastslow.env.world import get_world
    from fastslow.eval.evaluate import claim
    from fastslow.eval.live import eval_with_progress, warmup_with_progress

    cfg = run_config(config, override)
    selected = get_world(cfg.env.world).select(set_name, tasks, variations, limit_per_task)
    if seeds is not None:
        selected = with_seeds(selected, parse_seeds(seeds))
    if warmup_config is not None and not warmup:
        raise UsageError("--warmup-config chooses who plays the warm-up: add --warmup")
    if restart and extend:
        raise UsageError("--restart discards the run in DIR and --extend adds to it: choose one")
    player = run_config(warmup_config, []) if warmup_config else None
    # Claimed here, not in evaluate: the store lines and the warm-up come under the claim, before the
    # episodes; every refusal (options, models, DIR) comes before DIR is created.
    with claim(
        cfg,
        selected,
        out,
        workers=workers,
        executor=executor,
        ray_address=ray_address,
        warmup=warmup,
        warmup_agent=player,
        overrides=list(override or []),
        restart=restart,
        extend=extend,
        stream=stream,
    ) as record:
        store = record.store
        if store is not None:
            shared = "" if store.per_run else " (named by the config: shared on purpose)"
            records = record.starts[-1].store_records
            console.print(f"memory store: {store.location}{shared}, {records} records at start")
            start = record.starts[-1]
            if start.memory_ranking == "hybrid":
                from fastslow.models.embeddings import MINILM_NAME

                note = "" if start.memory_embedder == MINILM_NAME else ", a lexical stand-in, not semantic"
                console.print(f"memory ranking: hybrid, BM25 + embedder {start.memory_embedder}{note}")
        if warmup and store is not None:  # (--warmup without AMM was refused above)
            console.print(f"warm-up: filling the memory store {store.location}")
            done = warmup_with_progress(
                cfg, out, console, player, workers, executor, ray_address, stream=record.stream
            )
            console.print(f"warm-up: {len(done)} episodes played (finished ones skipped)")
        if seeds is not None and not sampled_models(cfg):
            # Not refused: the spread over seeds of such a run is ScienceWorld's own nondeterminism, a
            # measurement of its own (docs/results.md); but a reader expecting sampling must hear it.
            err_console.print(
                f"warning: --seeds: config {cfg.name} has no model that samples (no Sage or Critic at a "
                "temperature above 0), so the seeds change no decision of the agent: their spread is "
                "ScienceWorld's own nondeterminism (raise sage.model.temperature to measure sampling)",
                style="yellow",
                highlight=False,
                soft_wrap=True,
            )
        chosen = [Episode.from_id(i) for i in record.episodes]
        metrics = eval_with_progress(cfg, chosen, out, console, workers, executor, ray_address)
    keys = ("episodes", "mean_score", "mean_score_strict", "success_rate", "steps_at_success")
    headline = {k: metrics[k] for k in keys}
    if "seeds" in metrics:
        headline["mean_score_over_seeds"] = metrics["seeds"]["mean_score"]
    console.print(f"metrics written to {out / 'metrics.json'}")
    print(json.dumps(headline))


@app.command()
def fork(
    run_dir: Annotated[Path, typer.Argument(help="A finished run's directory.")],
    episode: Annotated[str, typer.Argument(help="An episode of that run, e.g. 13-0027.")],
    at: Annotated[
        int, typer.Option("--at", help="The fork's first own step: steps 1..K-1 replay the parent's actions.")
    ],
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="A new or empty directory for the fork's run.")
    ],
    config: Annotated[
        str | None,
        typer.Option("--config", "-c", help="The fork's configuration (default: the parent's, resolved)."),
    ] = None,
    override: OverrideOpt = None,
) -> None:
    """Replay an episode of a finished run up to step K, then play on under a configuration."""
    from fastslow.eval.fork import fork_config, fork_episode, read_parent
    from fastslow.eval.replay import ReplayDivergence

    parent = read_parent(run_dir, episode)
    cfg = fork_config(parent, config, override)
    console.print(
        f"fork of {run_dir} {episode} ({parent.start.config_name}) at step {at} under {cfg.name}: "
        f"replaying {at - 1} steps",
        highlight=False,
    )
    result = fork_episode(parent, at, cfg, out, overrides=override)
    if result.outcome.error and result.outcome.error.startswith("replay diverged"):
        log = out / "events" / f"{episode}.jsonl"
        raise ReplayDivergence(f"{result.outcome.error} (the fork's log: {log})")
    theirs, mine = parent.result, result.fork
    assert mine is not None, "run_episode always ends the log"
    console.print(
        f"parent: {theirs.score:.0f} / {theirs.score_strict:.0f} ({theirs.end.value}, {theirs.steps} steps); "
        f"fork: {mine.score:.0f} / {mine.score_strict:.0f} ({mine.end.value}, {mine.steps} steps) "
        "(paper / strict)",
        highlight=False,
    )
    scores = {
        name: {"score": r.score, "score_strict": r.score_strict, "end": r.end.value, "steps": r.steps}
        for name, r in (("parent", theirs), ("fork", mine))
    }
    print(json.dumps({**scores, "at": at, "store": result.store}))


@app.command()
def attribute(
    run_dir: Annotated[Path, typer.Argument(help="A finished run's directory.")],
    mechanism: Annotated[
        str,
        typer.Option(
            "--mechanism", help="gate-drop, critic, t1-injection, sage-round, memory-prior or t4-injection."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="Directory for the forks and attribution.json.")
    ],
    limit: Annotated[
        int | None, typer.Option("--limit", help="A seeded sample of N events (default: every one).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample and the bootstrap.")] = 0,
    workers: Annotated[int, typer.Option("--workers", help="Parallel forks (one JVM each).")] = 1,
) -> None:
    """Fork every logged event of a mechanism with it off at that step only: what did it change?

    Rerunning the same command resumes (finished forks are read back, unfinished ones played again);
    an --out holding a file no fastslow attribute wrote, the parent run, another attribution's work or
    a live attribute's is refused before anything is written."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from fastslow.eval.attribute import PointResult, describe, plan_attribution, play_attribution
    from fastslow.vocab import MECHANISMS

    if mechanism not in MECHANISMS:
        raise UsageError(f"--mechanism {mechanism!r}: one of {', '.join(MECHANISMS)}")
    # every refusal (the parent, --out: a user's file, the parent itself, another attribution's
    # directory, one in use) before the progress bar or any file
    todo = plan_attribution(run_dir, mechanism, out, limit=limit, seed=seed, workers=workers)
    if todo.replay_caveat is not None:
        instead = (
            f"the next of {len(todo.reserve)} seeded draws replaces each"
            if todo.reserve
            else "each is counted as not replayed (no --limit: no other point to draw)"
        )
        err_console.print(
            f"note: {run_dir} {todo.replay_caveat}; a point whose forks do not replay it is reported, "
            f"and {instead}",
            highlight=False,
        )
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"{mechanism} forks", total=len(todo.chosen))

        def advance(result: PointResult, done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        payload = play_attribution(todo, workers=workers, on_point=advance)
    console.print(describe(payload), highlight=False)
    print(json.dumps({k: v for k, v in payload.items() if k != "points"}))
