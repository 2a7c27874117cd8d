"""The ``fastslow`` command line: run, eval, episodes, report, view, bench, data, config.

Bad input (unknown task, variation, config key, wrong type, unwritable output) prints one line on
stderr and exits with code 2 before anything is written.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
import yaml
from rich.console import Console
from rich.text import Text

from fastslow.config import RunConfig, load_config
from fastslow.errors import CorruptLogError, FastslowError, ModelUnavailableError, OutputError, UsageError
from fastslow.memory.cli import memory_app

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Dual-process agents on text worlds: ScienceWorld, TextWorldExpress.",
)
bench_app = typer.Typer(
    no_args_is_help=True, help="Benchmarks; each ends with one JSON line of headline figures."
)
data_app = typer.Typer(no_args_is_help=True, help="Build the data files fastslow ships or trains on.")
config_app = typer.Typer(no_args_is_help=True, help="Inspect configurations.")
app.add_typer(bench_app, name="bench")
app.add_typer(data_app, name="data")
app.add_typer(config_app, name="config")
train_app = typer.Typer(no_args_is_help=True, help="Train Swift models from a gold dataset.")
app.add_typer(train_app, name="train")
app.add_typer(memory_app, name="memory")

# markup=False: what these consoles print quotes user text (a config name, a task selection, an --out
# path, an error message quoting any of them), and rich would read "[/b]" in it as a closing tag and
# raise. Styling is given as Text objects or style= instead.
console = Console(markup=False)
err_console = Console(stderr=True, markup=False)


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


def _config(name: str, overrides: list[str] | None) -> RunConfig:
    return load_config(name, overrides or [])


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

    cfg = _config(config, override)
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
    from fastslow.build import check_models, sampled_models
    from fastslow.env.episodes import Episode, parse_seeds, with_seeds
    from fastslow.env.world import get_world
    from fastslow.eval.evaluate import (
        check_executor,
        check_memory_regime,
        check_out_dir,
        check_warmup,
        prepare_out_dir,
        warmup_spec,
    )
    from fastslow.eval.live import eval_with_progress, warmup_with_progress
    from fastslow.eval.rundir import check_claim, claim_run, run_lock
    from fastslow.eval.stream import check_stream

    cfg = _config(config, override)
    selected = get_world(cfg.env.world).select(set_name, tasks, variations, limit_per_task)
    if seeds is not None:
        selected = with_seeds(selected, parse_seeds(seeds))
    check_executor(workers, executor, ray_address)
    if stream:
        check_stream(cfg)
    if warmup_config is not None and not warmup:
        raise UsageError("--warmup-config chooses who plays the warm-up: add --warmup")
    if restart and extend:
        raise UsageError("--restart discards the run in DIR and --extend adds to it: choose one")
    player = _config(warmup_config, []) if warmup_config else None
    if warmup:
        check_warmup(cfg, player)
    check_memory_regime(cfg, warmup)
    check_models(cfg)  # the evaluation's models, before hours of warm-up are spent
    if player is not None:
        check_models(player)
    check_out_dir(out)
    ids, overrides = [e.episode_id for e in selected], list(override or [])
    spec = warmup_spec(cfg, player) if warmup else None
    # every refusal of claim_run, before DIR is created
    check_claim(
        out, cfg, ids, overrides=overrides, warmup=spec, restart=restart, extend=extend, stream=stream
    )
    prepare_out_dir(out)
    with run_lock(out):
        record = claim_run(
            out,
            cfg,
            ids,
            overrides=overrides,
            warmup=spec,
            workers=workers,
            executor=executor,
            restart=restart,
            extend=extend,
            stream=stream,
        )
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


@app.command()
def report(
    dirs: Annotated[list[Path], typer.Argument(help="Finished run directories (with metrics.json).")],
    out: Annotated[
        Path | None, typer.Option("--out", parser=out_path, help="Report directory (default: DIR/report).")
    ] = None,
) -> None:
    """The paper's tables (markdown + CSV), figures, and an HTML report with a trajectory viewer.

    Every output counts the episodes whose logs can be read whole; each log left out, and each other
    warning of the report, is one line on stderr and in the report's Warnings. A report that fails
    leaves --out as it was."""
    import csv

    from rich.table import Table

    from fastslow.eval.report import write_report

    def warn(line: str) -> None:
        err_console.print(f"warning: {line}", style="yellow", highlight=False, markup=False, soft_wrap=True)

    target = out or dirs[0] / "report"
    html_path = write_report(dirs, target, on_warning=warn)
    with open(target / "main.csv", newline="", encoding="utf-8") as fh:
        head, *rows = list(csv.reader(fh))
    col = {name: i for i, name in enumerate(head)}
    table = Table("config", "episodes", "score, paper (95% CI)", "strict (95% CI)", "success", "-100")
    table.title = "Main results (report.md has every table)"
    for row in rows:
        ci, ci_strict = row[col["95% CI"]], row[col["95% CI (strict)"]]
        table.add_row(
            row[col["config"]],
            row[col["episodes"]],
            row[col["score (paper)"]] + (f" ({ci})" if ci != "-" else ""),
            row[col["score (strict)"]] + (f" ({ci_strict})" if ci_strict != "-" else ""),
            row[col["success"]],
            row[col["-100 failures"]],
        )
    console.print(table)
    console.print(f"report written to {target} (open {html_path})")


@app.command()
def view(
    dirs: Annotated[list[Path], typer.Argument(help="Finished run directories (with metrics.json).")],
    port: Annotated[int, typer.Option("--port", help="Port, 0-65535; 0 picks a free one.")] = 8765,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to bind (default loopback only); requests are answered only for this name, "
            "127.0.0.1, localhost and [::1].",
        ),
    ] = "127.0.0.1",
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in the default browser.")
    ] = False,
) -> None:
    """Serve the trajectory viewer over run directories on 127.0.0.1 (or --host) until Ctrl-C: runs and their
    tables, episodes filtered by task, outcome, source and mechanism, one episode's timeline, the same
    episode in several runs side by side."""
    import time
    import webbrowser

    from fastslow.view.server import check_port, serve

    check_port(port)  # before any run is read or any socket bound
    try:
        server = serve(dirs, port, host)
    except OSError as exc:
        raise UsageError(f"--host {host} --port {port}: {exc.strerror or exc}") from exc
    console.print(f"fastslow viewer on {server.url} ({len(dirs)} runs; Ctrl-C stops it)")
    if open_browser:
        webbrowser.open(server.url)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()


@bench_app.command("env")
def bench_env_cmd(
    tasks: TasksOpt = None,
    world: Annotated[
        str, typer.Option("--world", help="scienceworld (default) or textworldexpress.")
    ] = "scienceworld",
    steps: Annotated[
        int | None,
        typer.Option("--steps", help="TextWorldExpress: random-policy steps through each API (2000)."),
    ] = None,
) -> None:
    """Replay gold paths through the stock wrapper and ours; print steps/s of each and the ratio.

    ScienceWorld runs twice: with no simplification (the full action space, ~2,000-2,900 valid actions
    per step, where the stock wrapper's per-element copy dominates) - the headline - and with "easy"
    (the paper's setting, ~800 valid actions, where the JVM's own enumeration is a larger share of each
    step). TextWorldExpress (``--world textworldexpress``) plays --steps random valid actions over the
    benchmark's games through the package's own API and the adapter in lockstep. Each world runs its
    own comparison (``World.bench_env``).
    """
    from fastslow.env.world import get_world

    def say(line: str) -> None:
        # A line the world does not indent heads what follows (a simplification, a world).
        console.print(line, highlight=False, style=None if line.startswith(" ") else "bold")

    result = get_world(world).bench_env(tasks, steps, say)
    for line in result.mismatches[:20]:
        err_console.print(Text.assemble(("mismatch", "red"), f" {line}"))
    print(json.dumps(result.headline))
    if result.mismatches:
        raise typer.Exit(1)


@bench_app.command("view")
def bench_view_cmd(
    dirs: Annotated[list[Path], typer.Argument(help="Finished run directories (with metrics.json).")],
) -> None:
    """Seconds the viewer takes in headless Chromium, cold: runs page, first run's episode list, its
    first episode, and that episode compared across the runs (needs chromium, chromium-driver, selenium)."""
    from fastslow.view.timing import bench_view

    timings = bench_view(dirs)
    t = timings
    console.print(
        f"{t['runs']} runs: server start {t['server_start_s']:.2f} s, runs page {t['runs_page_s']:.2f} s, "
        f"episode list ({t['episodes_listed']} episodes) {t['episode_list_s']:.2f} s, first episode "
        f"{t['first_episode_s']:.2f} s (from opening the viewer: {t['to_first_episode_s']:.2f} s), "
        f"comparison {t['compare_s']:.2f} s"
    )
    print(json.dumps(timings))


@bench_app.command("step")
def bench_step_cmd(
    config: ConfigOpt = "swift-srm",
    override: OverrideOpt = None,
    resets: Annotated[int, typer.Option("--resets", help="Timed env resets per episode.")] = 3,
    profile: Annotated[
        bool,
        typer.Option("--profile", help="Also print the top functions of act + observe (cProfile)."),
    ] = False,
    top: Annotated[int, typer.Option("--top", help="Functions in the --profile summary.")] = 10,
) -> None:
    """Agent vs env milliseconds per step on fixed fast-pathway test episodes, and env reset time.

    Agent = agent.act + agent.observe, env = env.step, timed side by side in one loop; the JSON line
    has means, p50/p95, their ratio, valid actions per step and reset p50/p95 (no gold path)."""
    import cProfile

    from fastslow.bench.step import DEFAULT_EPISODES, bench_step, profile_summary
    from fastslow.env.world import require_scienceworld

    cfg = _config(config, override)
    require_scienceworld(cfg.env, "bench step")
    if resets < 1:
        raise UsageError(f"--resets must be >= 1, got {resets}")
    if cfg.agent.kind == "oracle":
        raise UsageError("bench step times a deciding agent: choose a fast-pathway config (e.g. swift-srm)")
    profiler = cProfile.Profile() if profile else None
    console.print(
        Text.assemble((cfg.name, "bold"), f": {len(DEFAULT_EPISODES)} test episodes, {resets} resets each")
    )
    result = bench_step(
        cfg, resets=resets, profile=profiler, progress=lambda s: console.print("  " + s, highlight=False)
    )
    head = result.headline()
    console.print(
        f"  {head['steps']} steps at {head['mean_valid_actions']} valid actions/step: agent "
        f"{head['agent_ms_per_step']} ms/step, env {head['env_ms_per_step']} ms/step, ratio "
        f"{head['agent_env_ratio']} (target <= {head['target_agent_env_ratio']}); reset p50 "
        f"{head['reset_ms_p50']} ms (target <= {head['target_reset_ms_p50']})",
        highlight=False,
    )
    if profiler is not None:
        console.print(
            Text.assemble(
                ("act + observe, top functions by cumulative time", "bold"), " (times inflated by it)"
            )
        )
        console.print(profile_summary(profiler, top), highlight=False, markup=False)
    print(json.dumps(head))


@bench_app.command("llm")
def bench_llm_cmd(
    config: Annotated[
        str,
        typer.Option(
            "--config",
            "-c",
            help="Config whose Sage (or Critic) model is timed, and whose Sage plays the round.",
        ),
    ] = "baseline",
    override: OverrideOpt = None,
    role: Annotated[str, typer.Option("--role", help="Which configured model: sage or critic.")] = "sage",
    prompt_words: Annotated[int, typer.Option("--prompt-words", help="Length of the long prompt.")] = 600,
    gen_tokens: Annotated[int, typer.Option("--gen-tokens", help="Tokens to generate.")] = 128,
    sage_round: Annotated[
        bool,
        typer.Option(
            "--sage-round/--no-sage-round",
            help="Also time one Sage round of the config (planning + grounding) on a dev state: cold, "
            "with prefix reuse, from the response cache (minutes on the embedded model).",
        ),
    ] = True,
) -> None:
    """Prompt-processing and generation tokens/s of the configured Sage (or Critic) model, and the
    seconds of one Sage round of the config, cold and with each kind of reuse."""
    from fastslow.bench.sage import bench_sage_round
    from fastslow.env.world import require_scienceworld
    from fastslow.models import make_model
    from fastslow.models.bench import bench_llm

    cfg = _config(config, override)
    if sage_round:
        require_scienceworld(cfg.env, "bench llm's Sage round (--no-sage-round times the model alone)")
    if role not in ("sage", "critic"):
        raise UsageError(f"--role must be sage or critic, got '{role}'")
    model_cfg = cfg.sage.model if role == "sage" else cfg.critic.model
    model = make_model(model_cfg)
    model.check_available()
    result = bench_llm(model, prompt_words=prompt_words, gen_tokens=gen_tokens)
    console.print(
        f"{result['backend']}/{result['model']}: prompt {result['prompt_tokens']} tok at "
        f"{result['prompt_tok_s']} tok/s, generation {result['gen_tokens']} tok "
        f"at {result['gen_tok_s']} tok/s"
    )
    summary = {k: v for k, v in result.items() if k != "calls"}
    if sage_round:
        sage = bench_sage_round(cfg)

        def secs(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f} s"

        console.print(
            f"Sage round of {sage['config']} ({sage['profile']} prompts, constrain {sage['constrain']}, "
            f"{'+'.join(map(str, sage['prompt_tokens']))} prompt tok, "
            f"{'+'.join(map(str, sage['completion_tokens']))} answer tok, {sage['admitted']} of "
            f"{sage['parsed']} parsed actions valid): cold {secs(sage['cold_s'])} | llama.cpp reuse "
            f"{secs(sage['reuse_s'])} | {sage['prefix_states'] or 'kept'} prefix states "
            f"{secs(sage['prefix_s'])} | response cache {secs(sage['cached_s'])}; same answers: "
            f"{'yes' if sage['same_answers'] else 'no'}",
            highlight=False,
        )
        summary["sage_round"] = sage
    print(json.dumps(summary))


@bench_app.command("swift")
def bench_swift_cmd(
    config: ConfigOpt = "swift-only",
    override: OverrideOpt = None,
    actions: Annotated[int, typer.Option("--actions", help="Valid actions per decision.")] = 3000,
    decisions: Annotated[int, typer.Option("--decisions", help="Decisions to time.")] = 200,
) -> None:
    """Milliseconds per Swift decision (features, ranking, safety policy) at ~3,000 valid actions."""
    from fastslow.bench.swift import bench_swift
    from fastslow.models.embeddings import minilm_encoder
    from fastslow.swift import make_policy, make_proposer

    cfg = _config(config, override)
    proposer = make_proposer(
        cfg.swift,
        top_k=cfg.swift.rerank_pool,
        box_features=cfg.procedures.enabled,
        embedder=minilm_encoder,
    )
    result = bench_swift(proposer, make_policy(cfg.swift), n_actions=actions, decisions=decisions)
    console.print(
        f"{result['proposer']}: {result['decisions']} decisions at {result['valid_actions']} valid actions: "
        f"p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms"
    )
    print(json.dumps(result))


@bench_app.command("memory")
def bench_memory_cmd(
    sizes: Annotated[str, typer.Option("--sizes", help="Store sizes.")] = "1000,10000,100000",
    queries: Annotated[int, typer.Option("--queries", help="Searches timed per size.")] = 200,
    stores: Annotated[str, typer.Option("--stores", help="sqlite, postgres or both.")] = "sqlite,postgres",
    pg_dsn: Annotated[
        str | None,
        typer.Option("--pg-dsn", help="PostgreSQL DSN (default: FASTSLOW_PG_DSN or a temp server)."),
    ] = None,
    rankings: Annotated[
        str, typer.Option("--rankings", help="bm25 (filtered), hybrid (unfiltered, stored vectors) or both.")
    ] = "bm25,hybrid",
    embedder: Annotated[
        str, typer.Option("--embedder", help="hybrid: auto (MiniLM if installed), minilm or lexical.")
    ] = "auto",
) -> None:
    """AMM retrieval latency (p50/p95 ms) of each store and ranking at each size."""
    from fastslow.bench.memory import bench_memory
    from fastslow.models.embeddings import EmbedderKind

    try:
        size_list = tuple(int(x) for x in sizes.split(","))
    except ValueError as exc:
        raise UsageError(f"--sizes must be comma-separated integers, got '{sizes}'") from exc
    kinds = tuple(x.strip() for x in stores.split(",") if x.strip())
    if not kinds or any(k not in ("sqlite", "postgres") for k in kinds) or any(n <= 0 for n in size_list):
        raise UsageError("--stores must list sqlite and/or postgres and --sizes positive integers")
    ranks = tuple(x.strip() for x in rankings.split(",") if x.strip())
    if not ranks or any(r not in ("bm25", "hybrid") for r in ranks):
        raise UsageError(f"--rankings must list bm25 and/or hybrid, got '{rankings}'")
    if embedder not in ("auto", "minilm", "lexical"):
        raise UsageError(f"--embedder must be auto, minilm or lexical, got '{embedder}'")
    kind: EmbedderKind = "minilm" if embedder == "minilm" else "lexical" if embedder == "lexical" else "auto"
    result = bench_memory(size_list, queries, kinds, pg_dsn, lambda line: console.print(line), ranks, kind)
    print(json.dumps(result))


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

    cfg = _config(config, override)
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


def _provenance(
    data: Path | list[Path], command: list[str], focus_data: list[Path] | None = None
) -> dict[str, object]:
    """What an artifact was trained from: the command (with every setting that shapes the artifact), the
    datasets (each manifest's sha256, split, kind and size; ``data`` one entry per dataset when there
    are several; ``focus_data`` those read for their focus steps only) and the code (package versions,
    git commit, hash of the sources)."""
    import hashlib

    from fastslow.eval.rundir import code_identity
    from fastslow.swift.data import MANIFEST

    def entry(d: Path) -> dict[str, object]:
        raw = (d / MANIFEST).read_bytes()
        manifest = json.loads(raw)
        return {
            "dir": str(d),
            "manifest_sha256": hashlib.sha256(raw).hexdigest(),
            "split": manifest.get("split"),
            "kind": manifest.get("kind", "gold"),
            "episodes": manifest.get("episodes"),
            "examples": manifest.get("examples"),
        }

    dirs = data if isinstance(data, list) else [data]
    return {
        "command": ["fastslow", "train", *command],
        "data": entry(dirs[0]) if len(dirs) == 1 else [entry(d) for d in dirs],
        **({"focus_data": [entry(d) for d in focus_data]} if focus_data else {}),
        **code_identity(),
    }


@train_app.command("swift")
def train_swift_cmd(
    data: Annotated[
        list[Path],
        typer.Option(
            "--data",
            help="Gold dataset directory (`fastslow data gold`); repeat it to add more, e.g. DAgger's "
            "on-policy rows (`fastslow data dagger`).",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", parser=out_path, help="Weights file (default: the packaged model)."),
    ] = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the data.")] = 3,
    holdout_every: Annotated[
        int, typer.Option("--holdout-every", help="Hold out every n-th episode (0 = none).")
    ] = 0,
    hash_bits: Annotated[
        int, typer.Option("--hash-bits", help="Hashed weight vector of 2**N buckets (16-24).")
    ] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the negative sampling and order.")] = 0,
    seeds: Annotated[
        int,
        typer.Option("--seeds", help="Fit seeds --seed.. --seed+N-1 and ship the mean of their weights."),
    ] = 1,
    focus_data: Annotated[
        list[Path] | None,
        typer.Option(
            "--focus-data",
            help="Gold dataset read for its focus steps only: more objects each task focuses on, the "
            "examples unchanged (repeatable).",
        ),
    ] = None,
    evidence: Annotated[
        bool,
        typer.Option(
            "--evidence/--no-evidence",
            help="Evidence keys: the words that tell a task's conditional alternatives apart, crossed "
            "with what the agent has observed (docs/swift.md 2g).",
        ),
    ] = True,
    object_states: Annotated[
        bool,
        typer.Option(
            "--object-states/--no-object-states",
            help="Object-state keys: the words the look adds to the object a candidate names, such as a "
            "plant's stage (docs/swift.md 2h).",
        ),
    ] = True,
) -> None:
    """Train the embedded imitation Swift (CPU, numpy) and write its weights."""
    from fastslow.swift import imitation
    from fastslow.swift.data import require_dataset
    from fastslow.swift.train import TrainSettings, train

    if not 16 <= hash_bits <= 24:
        raise UsageError(f"--hash-bits must be 16-24 (got {hash_bits})")
    if seeds < 1:
        raise UsageError(f"--seeds must be at least 1 (got {seeds})")
    target = out or Path(imitation.__file__).parent / "weights" / imitation.ARTIFACT
    settings = TrainSettings(
        epochs=epochs,
        holdout_every=holdout_every,
        hash_bits=hash_bits,
        seed=seed,
        seeds=seeds,
        evidence=evidence,
        object_states=object_states,
    )
    focus_dirs = list(focus_data or [])
    for d in [*data, *focus_dirs]:
        require_dataset(d)  # before minutes of reading
    weights, report = train(data, settings, progress=lambda s: console.print(s), focus_data=focus_dirs)
    weights.meta["provenance"] = _provenance(
        data,
        [
            "swift",
            "--epochs",
            str(epochs),
            "--holdout-every",
            str(holdout_every),
            "--hash-bits",
            str(hash_bits),
            "--seed",
            str(seed),
            *(["--seeds", str(seeds)] if seeds > 1 else []),
            *([] if evidence else ["--no-evidence"]),
            *([] if object_states else ["--no-object-states"]),
        ],
        focus_dirs,
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    weights.save(target)
    console.print(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB)")
    print(json.dumps(report))


@train_app.command("swift-rerank")
def train_swift_rerank_cmd(
    data: Annotated[Path, typer.Option("--data", help="Gold dataset directory (`fastslow data gold`).")],
    weights: Annotated[
        Path,
        typer.Option("--weights", help="Linear weights from `fastslow train swift --holdout-every N`."),
    ],
    out: Annotated[Path, typer.Option("--out", parser=out_path, help="Reranker file to write (JSON).")],
    depth: Annotated[int, typer.Option("--depth", help="Linear top candidates it re-orders.")] = 30,
    rounds: Annotated[int, typer.Option("--rounds", help="Most boosting rounds.")] = 400,
    semantic: Annotated[
        bool,
        typer.Option(
            "--semantic",
            help="Add MiniLM sentence-embedding similarities of each candidate (extra `embed`).",
        ),
    ] = False,
) -> None:
    """Fit the LightGBM reranker on the episodes the linear weights held out (extra `rank`)."""
    from fastslow.models.embeddings import minilm_encoder
    from fastslow.swift.imitation import SwiftWeights
    from fastslow.swift.rerank import RerankSettings, sha256_of, train_rerank

    if depth < 2 or rounds < 1:
        raise UsageError("--depth must be at least 2 and --rounds at least 1")
    linear = SwiftWeights.load(weights)
    reranker, report = train_rerank(
        data,
        linear,
        sha256_of(weights),
        RerankSettings(depth=depth, rounds=rounds),
        progress=lambda s: console.print(s, highlight=False),
        embedder=minilm_encoder() if semantic else None,
    )
    command = [
        "swift-rerank",
        "--depth",
        str(depth),
        "--rounds",
        str(rounds),
        *(["--semantic"] if semantic else []),
    ]
    reranker.meta["provenance"] = {**_provenance(data, command), "linear_sha256": reranker.linear_sha256}
    out.parent.mkdir(parents=True, exist_ok=True)
    reranker.save(out)
    console.print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    print(json.dumps(report))


@train_app.command("swift-memory")
def train_swift_memory_cmd(
    data: Annotated[Path, typer.Option("--data", help="Gold dataset directory (`fastslow data gold`).")],
    store: Annotated[
        str, typer.Option("--store", help="AMM store a warm-up filled (RUN/memory.sqlite, or a DSN).")
    ],
    out: Annotated[Path, typer.Option("--out", parser=out_path, help="Weights file to write (.npz).")],
    weights: Annotated[
        Path | None,
        typer.Option("--weights", help="Linear weights to start from (default: the packaged model)."),
    ] = None,
    config: ConfigOpt = "swift-amm",
    override: OverrideOpt = None,
    l2: Annotated[float, typer.Option("--l2", help="Pull of the four weights towards zero.")] = 0.01,
) -> None:
    """Fit the weights Swift gives to T1 memories on gold states where it fails (memory/t1_weights.py)."""
    from fastslow.env.world import require_scienceworld
    from fastslow.memory.stores import MemoryStoreError, is_dsn, open_location
    from fastslow.memory.stores.vectors import embedder_for
    from fastslow.memory.t1_weights import FitSettings, SwiftView, fit_memory_weights
    from fastslow.swift.imitation import SwiftWeights

    cfg = _config(config, override)
    require_scienceworld(cfg.env, "train swift-memory")
    if not cfg.amm.enabled or not cfg.amm.retrieval.t1:
        raise UsageError(f"config {cfg.name} does not run T1 (amm.enabled, amm.retrieval.t1)")
    if l2 < 0:
        raise UsageError("--l2 must be at least 0")
    if not is_dsn(store) and not Path(store).is_file():
        raise UsageError(f"memory store not found: {store}")
    linear = SwiftWeights.load(weights)
    try:
        opened = open_location(
            store,
            cfg.amm.table,
            readonly=True,
            password_env=cfg.amm.password_env,
            embedder=embedder_for(cfg.amm.retrieval),
            max_terms=cfg.amm.retrieval.query_terms,
        )
    except MemoryStoreError as exc:
        raise UsageError(str(exc)) from exc
    view = SwiftView(
        min_confidence=cfg.swift.min_confidence,
        repeat_penalty=cfg.swift.repeat_penalty,
        loop_window=cfg.swift.loop_window,
        focus_rule=cfg.swift.focus_rule,
        rerank_pool=cfg.swift.rerank_pool,
        box_features=cfg.procedures.enabled,
    )
    try:
        fitted, report = fit_memory_weights(
            data,
            linear,
            cfg.amm,
            opened,
            store if is_dsn(store) else Path(store).name,
            view,
            FitSettings(l2=l2),
            progress=lambda s: console.print(s, highlight=False),
        )
    finally:
        opened.close()
    # the report (kept in the weights' meta) names the store; a DSN is not repeated here
    report["provenance"] = _provenance(data, ["swift-memory", "--config", cfg.name, "--l2", str(l2)])
    out.parent.mkdir(parents=True, exist_ok=True)
    fitted.save(out)
    console.print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    print(json.dumps(report))


@train_app.command("swift-t5")
def train_swift_t5_cmd(
    data: Annotated[Path, typer.Option("--data", help="Gold dataset directory (`fastslow data gold`).")],
    base: Annotated[Path, typer.Option("--base", help="Local seq2seq checkpoint, e.g. Flan-T5.")],
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="Directory for the fine-tuned checkpoint.")
    ],
    max_steps: Annotated[int, typer.Option("--max-steps", help="Stop after N steps (-1 = epochs).")] = -1,
    epochs: Annotated[float, typer.Option("--epochs", help="Passes over the data.")] = 1.0,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Per-device batch size.")] = 8,
    learning_rate: Annotated[float, typer.Option("--lr", help="Learning rate.")] = 1e-4,
) -> None:
    """Fine-tune a seq2seq Swift (SwiftSage's Flan-T5 setup) with the HF trainer (extra `t5`)."""
    from fastslow.swift.t5 import train_t5

    report = train_t5(
        data,
        base,
        out,
        max_steps=max_steps,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        progress=lambda s: console.print(s),
    )
    console.print(f"wrote {out}")
    print(json.dumps(report))


@config_app.command("show")
def config_show(config: ConfigOpt = "oracle", override: OverrideOpt = None) -> None:
    """Print the resolved configuration as YAML."""
    print(yaml.safe_dump(_config(config, override).model_dump(mode="json"), sort_keys=False), end="")


RESUMABLE = frozenset({"eval", "attribute"})
"""Commands whose rerun resumes what an interrupted one left (their Ctrl-C line says so)."""
INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells report it."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-line errors and exit code 2 for bad input, whatever layer detects it; Ctrl-C
    is one line and exit code 130 (the command's workers are stopped on the way out)."""
    root = logging.getLogger()
    if not any(isinstance(f, _QuietCtrlC) for f in root.filters):
        root.addFilter(_QuietCtrlC())
    try:
        result = app(args=argv, standalone_mode=False)
    except (UsageError, ModelUnavailableError, OutputError, CorruptLogError) as exc:
        _fail(str(exc), 2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted(argv)
    except typer.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click's way of reporting Ctrl-C
            _interrupted(argv)
        _fail("aborted", INTERRUPTED)
    except FastslowError as exc:
        if _by_ctrl_c(exc):
            _interrupted(argv)
        _fail(f"{type(exc).__name__}: {exc}", 1)
    except Exception as exc:
        if _by_ctrl_c(exc):
            _interrupted(argv)
        # Command-line parsing errors (missing option, bad integer) come from the click layer under
        # typer, whose module path differs between typer versions; they all carry these two members.
        format_message = getattr(exc, "format_message", None)
        if callable(format_message) and isinstance(getattr(exc, "exit_code", None), int):
            _fail(str(format_message()), 2)
        from fastslow.redact import excepthook

        # A bug's traceback may quote a model server's URL: printed masked, as every line fastslow
        # writes is (typer's own hook, which app() put in place, would print it whole).
        sys.excepthook = excepthook
        raise
    if result == INTERRUPTED:  # typer's way of reporting Ctrl-C outside standalone mode: Exit(130)
        _interrupted(argv)
    if isinstance(result, int) and result:
        sys.exit(result)


class _QuietCtrlC(logging.Filter):
    """Drops a record that logs a KeyboardInterrupt (py4j logs Ctrl-C inside a JVM call with its
    traceback on the root logger), and every record after it: Ctrl-C is under way, what is logged
    from there on is the noise of its unwinding (the JVM the same Ctrl-C killed), and ``main`` says
    it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt):
            logging.disable(logging.CRITICAL)
            return False
        return True


def _by_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while Ctrl-C was being handled: py4j 0.10.9 answers a
    KeyboardInterrupt inside a JVM call with an AttributeError of its own (``shutdown_socket``), and a
    JVM that Ctrl-C killed too can surface as an error of the call in flight."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _interrupted(argv: list[str] | None) -> NoReturn:
    """One line for Ctrl-C, exit 130 (the command has stopped its workers and released its lock)."""
    args = sys.argv[1:] if argv is None else argv
    command = next((a for a in args if not a.startswith("-")), "")
    resume = ": what finished is kept; rerun the same command to resume" if command in RESUMABLE else ""
    err_console.print(f"interrupted (Ctrl-C){resume}", markup=False, highlight=False, soft_wrap=True)
    logging.disable(logging.CRITICAL)  # the exit closes JVMs that Ctrl-C killed: py4j would log each
    sys.exit(INTERRUPTED)


def _fail(message: str, code: int) -> None:
    from fastslow.redact import redact_text

    # An error may quote an override or a DSN; the console shows it as every record does.
    err_console.print(f"error: {redact_text(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
