"""What a person watching a run sees: a live step table for ``run``, a progress bar for ``eval``.

Both are event sinks or callbacks on top of the same runner; nothing here changes what is logged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import fmean
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from fastslow.agents import make_agent
from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld import ScienceWorldAdapter
from fastslow.eval.evaluate import evaluate, prepare_out_dir, run_warmup
from fastslow.eval.runner import EpisodeOutcome, run_episode
from fastslow.events import (
    BufferClear,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    Escalation,
    Event,
    FanOut,
    JsonlWriter,
    ModelCall,
    SageCall,
)

SOURCE_STYLE = {"oracle": "cyan", "swift": "green", "sage": "magenta", "critic": "yellow"}


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class StepPrinter:
    """Prints one line per env step (and per model call) as events arrive."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def emit(self, event: Event) -> None:
        if isinstance(event, EpisodeStart):
            self.console.rule(
                f"task {event.task_id} {event.task_name} · variation {event.variation} · {event.split}"
            )
            self.console.print(_clip(event.task_description, 400), style="dim")
            table = Table.grid(padding=(0, 1))
            for _ in range(5):
                table.add_column()
            table.add_row("[bold]step", "[bold]source", "[bold]action", "[bold]score", "[bold]observation")
            self.console.print(table)
        elif isinstance(event, EnvStep):
            style = SOURCE_STYLE.get(event.source, "white")
            reward = (
                f" (+{event.reward})" if event.reward > 0 else (f" ({event.reward})" if event.reward else "")
            )
            self.console.print(
                f"{event.step:>4} [{style}]{event.source:<7}[/{style}] {_clip(event.action, 48):<48} "
                f"{event.score:>4}{reward:<6} [dim]{_clip(event.observation, 70)}[/dim]",
                highlight=False,
            )
            if event.reason and event.source not in ("oracle", "swift"):
                self.console.print(f"     [dim]why: {_clip(event.reason, 100)}[/dim]", highlight=False)
        elif isinstance(event, ModelCall):
            status = f"[red]{event.error}[/red]" if event.error else "ok"
            self.console.print(
                f"     [dim]{event.role}: {event.backend}/{event.model} {event.prompt_tokens}+"
                f"{event.completion_tokens} tok {event.latency_s:.1f}s {status}[/dim]",
                highlight=False,
            )
        elif isinstance(event, Escalation):
            outcome = f"sage {event.blocked}, swift acts" if event.blocked else "calling sage"
            self.console.print(
                f"     [magenta]escalate[/magenta] [dim]{event.rule}: {_clip(event.detail, 70)} "
                f"-> {outcome}[/dim]",
                highlight=False,
            )
        elif isinstance(event, SageCall):
            result = f"[red]{_clip(event.error, 60)}[/red]" if event.error else f"{len(event.actions)} act."
            retry = " (retried)" if event.retried else ""
            self.console.print(
                f"     [magenta]sage[/magenta] [dim]{event.model_calls} calls {event.latency_s:.1f}s: "
                f"{result}{retry} {_clip(' | '.join(event.actions), 80)}[/dim]",
                highlight=False,
            )
        elif isinstance(event, BufferClear):
            self.console.print(f"     [dim]buffer cleared: {event.reason}[/dim]", highlight=False)
        elif isinstance(event, EpisodeEnd):
            self.console.rule(
                f"{event.end.value} · score {event.final_score} · {event.steps} steps · {event.wall_s:.1f}s"
                + (f" · {event.error}" if event.error else "")
            )


def play_one(config: RunConfig, episode: Episode, out: Path | None, console: Console) -> EpisodeOutcome:
    """``fastslow run``: one episode with the live view; events go to OUT/events/<episode>.jsonl."""
    out = out or Path("runs") / f"{config.name}-{episode.episode_id}-{time.strftime('%Y%m%d-%H%M%S')}"
    prepare_out_dir(out)
    agent = make_agent(config)
    path = out / "events" / f"{episode.episode_id}.jsonl"
    path.unlink(missing_ok=True)
    with (
        ScienceWorldAdapter(
            config.env.simplification, config.env.step_limit, config.env.jvm_timeout_s
        ) as env,
        JsonlWriter(path) as writer,
    ):
        outcome = run_episode(env, agent, episode, config, FanOut(writer, StepPrinter(console)))
    console.print(f"event log: {path}")
    return outcome


ProgressCallback = Callable[[EpisodeOutcome | None, int, int], None]


@contextmanager
def _progress_bar(console: Console, label: str, total: int | None) -> Iterator[ProgressCallback]:
    """A rich progress bar (ETA, running mean score, last episode) and the ``on_episode`` callback
    that moves it (``total`` None: learnt from the first callback)."""
    scores: list[float] = []
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}"),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task(label, total=total, status="")

        def on_episode(outcome: EpisodeOutcome | None, done: int, total: int) -> None:
            if outcome is not None:
                scores.append(max(outcome.final_score, 0))
                last = f"{outcome.episode} -> {outcome.final_score} ({outcome.end.value})"
            else:
                last = "already done"
            mean = f"mean {fmean(scores):.1f}" if scores else ""
            progress.update(bar, completed=done, total=total, status=f"{mean} · last {last}")

        yield on_episode


def eval_with_progress(
    config: RunConfig,
    episodes: list[Episode],
    out: Path,
    console: Console,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
) -> dict[str, Any]:
    """``fastslow eval`` with a progress bar showing ETA and the running mean score."""
    with _progress_bar(console, config.name, len(episodes)) as on_episode:
        return evaluate(
            config,
            episodes,
            out,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
            on_episode=on_episode,
        )


def warmup_with_progress(
    config: RunConfig,
    out: Path,
    console: Console,
    agent: RunConfig | None = None,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
) -> list[EpisodeOutcome]:
    """``fastslow eval --warmup``: the warm-up episodes (``run_warmup``) under their own progress bar."""
    label = f"warm-up ({(agent or config).name})"
    with _progress_bar(console, label, None) as on_episode:
        return run_warmup(
            config,
            out,
            agent=agent,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
            on_episode=on_episode,
        )
