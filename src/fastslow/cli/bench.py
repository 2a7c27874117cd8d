"""``fastslow bench``: the benchmarks, each ending with one JSON line of headline figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from fastslow.cli._common import ConfigOpt, OverrideOpt, TasksOpt, console, err_console, run_config
from fastslow.errors import UsageError

bench_app = typer.Typer(
    no_args_is_help=True, help="Benchmarks; each ends with one JSON line of headline figures."
)


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

    cfg = run_config(config, override)
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

    cfg = run_config(config, override)
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

    cfg = run_config(config, override)
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
