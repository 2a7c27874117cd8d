"""Metrics computed from event logs only (paper §4 and Appendix C).

- score, the paper's convention (``mean_score``, the headline): SwiftSage's evaluation, which the paper's
  authors kept, never lets an episode's score go down, and a -100 task failure or SwiftSage's early stop
  keeps the last non-negative score reached; so an episode scores the best non-negative score it reached.
- strict score (``mean_score_strict``): the score at termination with -100 counted as 0; the raw mean
  (-100 kept) and the number of failures are reported beside both.
- success: the episode reached 100 (the same in both conventions).
- Steps@Succ: mean env steps of successful episodes.
- Aggregation: mean over the episodes of a task, then the macro mean over tasks; groups (Short /
  Medium / Long by oracle length) average the task means of their tasks.

The counter families below return plain dictionaries (each is also used on its own); ``run_metrics``
puts them together into the typed, versioned ``records.RunMetrics`` that metrics.json holds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from fastslow import vocab
from fastslow.env.world import World, get_world
from fastslow.errors import UsageError
from fastslow.eval.records import EpisodeResult, RunMetrics
from fastslow.events import (
    CriticCall,
    CriticEffect,
    EndState,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    Event,
    GateDecision,
    GateOutcome,
    MemoryFallback,
    MemoryInjection,
    MemoryRetrieval,
    MemoryWrite,
    ModelCall,
    SageCall,
    StagnationReport,
    TrialEnd,
    iter_events,
)

Scoring = Callable[[EpisodeResult], float]
CONVENTIONS: dict[str, Scoring] = {"": lambda e: e.score, "_strict": lambda e: e.score_strict}
"""Key suffix -> episode score: every ``mean_score`` has its strict twin ``mean_score_strict``."""


def summarize_log(path: Path) -> EpisodeResult | None:
    """Summary of one episode log; None if the episode never finished (no episode_end).

    An episode of several trials (Reflexion's, ``TrialEnd``) is scored by its last trial in both
    conventions: the best score counts from the last trial's first step, and the final score is
    ``episode_end``'s (the last trial's); its ``steps`` are those of every trial."""
    start: EpisodeStart | None = None
    end: EpisodeEnd | None = None
    best = 0
    for event in iter_events(path):
        if isinstance(event, EnvStep):
            best = max(best, event.score)
        elif isinstance(event, TrialEnd) and event.next:
            best = 0  # another trial follows: the episode is scored by its last one
        elif isinstance(event, EpisodeStart):
            start = event
        elif isinstance(event, EpisodeEnd):
            end = event
    if start is None or end is None:
        return None
    return EpisodeResult(
        episode_id=start.episode_id,
        task_id=start.task_id,
        variation=start.variation,
        end=end.end,
        final_score=end.final_score,
        steps=end.steps,
        wall_s=end.wall_s,
        error=end.error,
        seed=start.seed,
        best_score=best,
        world=start.world,
    )


def torn_line(path: Path) -> int | None:
    """The number of a log's last line when that line is incomplete, else None.

    The event writer ends every line with a newline, so a file that ends otherwise was cut short: a run
    killed mid-write, or a file truncated since (``events.iter_events`` skips such a line)."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            return None
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return None
        fh.seek(0)
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) + 1


def _mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return round(fmean(vals), 4) if vals else None


def _block(episodes: list[EpisodeResult]) -> dict[str, Any]:
    successes = [e for e in episodes if e.success]
    return {
        "episodes": len(episodes),
        **{f"mean_score{k}": _mean(map(score, episodes)) for k, score in CONVENTIONS.items()},
        "success_rate": _mean(float(e.success) for e in episodes),
        "steps_at_success": _mean(e.steps for e in successes),
        "failures": sum(e.end is EndState.FAILURE for e in episodes),
    }


BOOTSTRAP_RESAMPLES = 2000


def bootstrap_ci(
    by_task: dict[int, list[EpisodeResult]], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> dict[str, list[float]]:
    """95% percentile-bootstrap intervals of the macro mean score and success rate.

    Episodes are resampled with replacement within each task (the tasks are fixed by the protocol), then
    averaged per task and over tasks exactly as the point estimates are. Seeded: same logs, same interval.
    With one episode in every task there is nothing to resample: no interval (``{}``) rather than a
    zero-width one that would look like certainty; a task with one episode among others adds none.
    """
    if not by_task or all(len(eps) < 2 for eps in by_task.values()):
        return {}
    rng = np.random.default_rng(seed)
    measures: dict[str, Scoring] = {f"mean_score{k}": f for k, f in CONVENTIONS.items()}
    measures["success_rate"] = lambda e: float(e.success)
    sums = {key: np.zeros(resamples) for key in measures}
    for eps in by_task.values():
        # One index draw per task serves every measure: the intervals describe the same resamples.
        idx = rng.integers(0, len(eps), size=(resamples, len(eps)))
        for key, measure in measures.items():
            sums[key] += np.array([measure(e) for e in eps])[idx].mean(axis=1)
    n_tasks = len(by_task)

    def interval(values: np.ndarray[Any, Any]) -> list[float]:
        lo, hi = np.percentile(values / n_tasks, [2.5, 97.5])
        return [round(float(lo), 4), round(float(hi), 4)]

    return {key: interval(values) for key, values in sums.items()}


def seed_spread(episodes: list[EpisodeResult]) -> dict[str, Any]:
    """With ``--seeds``: the headline macro means of each seed's episodes, and their mean and sample
    standard deviation over seeds (the spread researchers report as mean ± std)."""
    by_seed: dict[int, list[EpisodeResult]] = defaultdict(list)
    for ep in episodes:
        if ep.seed is not None:
            by_seed[ep.seed].append(ep)
    per_seed: dict[str, dict[str, Any]] = {}
    for seed in sorted(by_seed):
        by_task: dict[int, list[EpisodeResult]] = defaultdict(list)
        for ep in by_seed[seed]:
            by_task[ep.task_id].append(ep)
        per_seed[str(seed)] = {
            "episodes": len(by_seed[seed]),
            **{
                f"mean_score{k}": _mean(fmean(map(score, eps)) for eps in by_task.values())
                for k, score in CONVENTIONS.items()
            },
            "success_rate": _mean(fmean(float(e.success) for e in eps) for eps in by_task.values()),
        }

    def spread(key: str) -> dict[str, float | None]:
        values = [row[key] for row in per_seed.values() if row[key] is not None]
        std = round(float(np.std(values, ddof=1)), 4) if len(values) > 1 else None
        return {"mean": _mean(values), "std": std}

    return {
        "seeds": [int(s) for s in per_seed],
        "per_seed": per_seed,
        **{f"mean_score{k}": spread(f"mean_score{k}") for k in CONVENTIONS},
        "success_rate": spread("success_rate"),
    }


def episodes_world(episodes: Iterable[EpisodeResult]) -> World:
    """The world the episodes were played in (ScienceWorld for none); ``UsageError`` when they come from
    several: a task id means another task in each, so their metrics cannot be pooled."""
    worlds = sorted({ep.world for ep in episodes})
    if len(worlds) > 1:
        raise UsageError(f"episodes of several worlds ({', '.join(worlds)}) cannot be scored together")
    return get_world(*worlds)


def compute_metrics(episodes: list[EpisodeResult]) -> dict[str, Any]:
    """The metrics.json payload: headline macro means plus per-task and per-group breakdowns; with seeded
    episodes also ``seeds`` (per-seed headline and its spread). The headline pools every seed's
    episodes of a task into that task's mean. Task names and length groups are those of the episodes'
    world (``episodes_world``)."""
    world = episodes_world(episodes)
    by_task: dict[int, list[EpisodeResult]] = defaultdict(list)
    for ep in episodes:
        by_task[ep.task_id].append(ep)
    per_task: dict[str, dict[str, Any]] = {}
    for task_id in sorted(by_task):
        info = world.task(task_id)
        per_task[str(task_id)] = {"name": info.name, "group": info.group, **_block(by_task[task_id])}

    def macro(task_ids: list[str], key: str) -> float | None:
        return _mean(v for t in task_ids if (v := per_task[t][key]) is not None)

    groups: dict[str, list[str]] = defaultdict(list)
    for key, row in per_task.items():
        groups[row["group"]].append(key)
    per_group = {
        group: {
            "tasks": [int(t) for t in ids],
            "episodes": sum(per_task[t]["episodes"] for t in ids),
            **{f"mean_score{k}": macro(ids, f"mean_score{k}") for k in CONVENTIONS},
            "success_rate": macro(ids, "success_rate"),
            "steps_at_success": _mean(e.steps for e in episodes if e.success and str(e.task_id) in ids),
        }
        for group, ids in sorted(groups.items())
    }
    all_ids = list(per_task)
    ends: dict[str, int] = defaultdict(int)
    for ep in episodes:
        ends[ep.end.value] += 1
    seeded = any(e.seed is not None for e in episodes)
    return {
        "episodes": len(episodes),
        "tasks": len(per_task),
        **{f"mean_score{k}": macro(all_ids, f"mean_score{k}") for k in CONVENTIONS},
        "mean_score_raw": _mean(fmean(e.final_score for e in by_task[int(t)]) for t in all_ids),
        "success_rate": macro(all_ids, "success_rate"),
        "success_rate_micro": _mean(float(e.success) for e in episodes),
        "steps_at_success": _mean(e.steps for e in episodes if e.success),
        "ci95": bootstrap_ci(by_task),
        "failures": sum(e.end is EndState.FAILURE for e in episodes),
        "errors": sum(e.end is EndState.ERROR for e in episodes),
        "end_states": dict(sorted(ends.items())),
        "wall_s_per_episode": _mean(e.wall_s for e in episodes),
        **({"seeds": seed_spread(episodes)} if seeded else {}),
        "per_group": per_group,
        "per_task": per_task,
        "episode_results": [e.model_dump(mode="json") for e in episodes],
    }


BUFFER_SOURCES = vocab.BUFFER_SOURCES
"""EnvStep sources whose actions came out of the action buffer."""
SWIFT_BRANCH = vocab.SWIFT_BRANCH
"""EnvStep sources of the controller's Swift branch (the authors count them all as Swift's steps)."""


SYSTEM2_CALL_ROLES = ("critic", "act", "reflect")
"""Model-call roles that count one System-2 call each (a Sage round, two calls, counts once)."""


def controller_usage(episodes: Iterable[Iterable[Event]]) -> dict[str, Any]:
    """Controller counters of the paper's Appendix E, from the events of finished episodes.

    - ``step_shares``: the fraction of env steps of each source (``vocab.StepSource``: swift, procedure,
      fallback, sage, critic, oracle, scripted), pooled over episodes; they add up to 1 (rounded to 6
      places). A ``procedure`` step is one whose action hand-written task logic decided, even when the
      learned Swift ranked the same action first;
    - ``swift_step_share``: the learned Swift's share (``step_shares.swift``: procedure and fallback steps
      are not Swift's here; ``mechanisms.paper.swift_step_share`` counts them as Swift's, as the authors'
      loop would); ``buffer_step_share``: actions from the buffer (Sage or Critic plans);
    - ``system2_calls_per_episode``: Sage rounds (``sage_call`` events) plus Critic model calls per episode
      (a plug-in agent's ``act`` and ``reflect`` calls count one each: ReAct's LLM decides every step);
    - ``llm_tokens_per_action``: prompt + completion tokens of every model call / env steps;
    - ``llm_seconds_per_episode``: summed model-call latency per episode;
    - ``model_calls`` / ``model_call_errors`` (by role): calls made and calls that failed for good
      (after their retries); a failed call still counts as a System-2 call - it was made and waited
      for - so the error counter is what tells a run with a broken server from a normal one;
    - ``model_calls_skipped`` (by role): calls a role's open circuit breaker did not send (``skipped``);
      they are in none of the counters above;
    - ``model_cache_hits`` (by role): calls the run's response cache answered (``cached``: the same
      temperature-0 request was answered before, ``models.cache``); they are not model work, so not in
      ``model_calls``, the tokens or the seconds above (a Critic call still counts as a System-2 call:
      the agent asked for it); ``model_cache_hit_rate`` = hits / (hits + ``model_calls``);
    - ``sage_rounds`` / ``sage_rounds_with_actions``: Sage rounds that got a reply, and those that grounded
      at least one action onto the valid list; ``critic_answers`` / ``critic_answers_with_actions``: the
      same for the LLM Critic (a call whose model failed is neither); ``system2_action_rate``: both
      ``with_actions`` over both totals (the parse rate constrained decoding raises);
      ``sage_round_s_median``: the median wall time of those rounds' model calls.
    Episodes without ``episode_end`` are skipped, as in the score metrics.
    """
    n_eps = steps = system2 = tokens = calls = 0
    rounds = rounds_acting = answers = answers_acting = 0
    round_s: list[float] = []
    by_source: dict[str, int] = dict.fromkeys(vocab.STEP_SOURCES, 0)
    errors: dict[str, int] = defaultdict(int)
    skipped: dict[str, int] = defaultdict(int)
    hits: dict[str, int] = defaultdict(int)
    llm_s = 0.0
    for events in episodes:
        evs = list(events)
        if not any(isinstance(e, EpisodeEnd) for e in evs):
            continue
        n_eps += 1
        for e in evs:
            if isinstance(e, EnvStep):
                steps += 1
                by_source[e.source] += 1
            elif isinstance(e, SageCall):
                system2 += 1
                if e.error is None:
                    rounds += 1
                    rounds_acting += bool(e.actions)
                    round_s.append(e.latency_s)
            elif isinstance(e, CriticCall) and e.kind == "llm":
                if e.error in (None, vocab.CRITIC_NO_ACTIONS, vocab.CRITIC_NO_VALID_ACTIONS):
                    answers += 1
                    answers_acting += bool(e.actions)
            elif isinstance(e, ModelCall) and e.skipped:
                skipped[e.role] += 1
            elif isinstance(e, ModelCall) and e.cached:
                hits[e.role] += 1
                system2 += e.role in SYSTEM2_CALL_ROLES
            elif isinstance(e, ModelCall):
                calls += 1
                tokens += e.prompt_tokens + e.completion_tokens
                llm_s += e.latency_s
                system2 += e.role in SYSTEM2_CALL_ROLES
                if e.error:
                    errors[e.role] += 1
    buffer_steps = sum(by_source[s] for s in BUFFER_SOURCES)
    return {
        "episodes": n_eps,
        "env_steps": steps,
        "swift_step_share": round(by_source["swift"] / steps, 4) if steps else None,
        "buffer_step_share": round(buffer_steps / steps, 4) if steps else None,
        "step_shares": {s: round(n / steps, 6) if steps else None for s, n in by_source.items()},
        "system2_calls_per_episode": round(system2 / n_eps, 4) if n_eps else None,
        "llm_tokens_per_action": round(tokens / steps, 2) if steps else None,
        "llm_seconds_per_episode": round(llm_s / n_eps, 3) if n_eps else None,
        "model_calls": calls,
        "model_call_errors": sum(errors.values()),
        "model_call_errors_by_role": dict(sorted(errors.items())),
        "model_calls_skipped": sum(skipped.values()),
        "model_calls_skipped_by_role": dict(sorted(skipped.items())),
        "model_cache_hits": sum(hits.values()),
        "model_cache_hits_by_role": dict(sorted(hits.items())),
        "model_cache_hit_rate": (
            round(sum(hits.values()) / (sum(hits.values()) + calls), 4) if hits or calls else None
        ),
        "sage_rounds": rounds,
        "sage_rounds_with_actions": rounds_acting,
        "critic_answers": answers,
        "critic_answers_with_actions": answers_acting,
        "sage_round_s_median": round(float(np.median(round_s)), 3) if round_s else None,
        "system2_action_rate": (
            round((rounds_acting + answers_acting) / (rounds + answers), 4) if rounds or answers else None
        ),
    }


MEMORY_TAGS = vocab.MEMORY_TAGS
MEMORY_TRIGGERS = vocab.MEMORY_TRIGGERS
MEMORY_TARGETS = vocab.MEMORY_TARGETS


def _is_trigger(e: MemoryRetrieval) -> bool:
    """Whether a T2-T4 retrieval is a trigger of its own: not the Critic's search for evidence, not the
    avoidance search T4 adds to its planning search (one T4 per planning, as the authors count it)."""
    return not e.rung.startswith("critic") and not (e.trigger == "T4" and e.rung == "avoidance")


def memory_episode(events: Iterable[Event]) -> dict[str, Any]:
    """AMM counters of one episode (paper Appendix D): writes by tag and subtag, T1-T4 triggers,
    injections by target and fallbacks by reason (the reason's code, before any ``:`` detail).

    A T1 trigger is one env step on which the T1 ladder retrieved (fastslow's ladder climbs its rungs
    within one step; the authors' moves one rung per failure in a row, one retrieval per step), not one
    retrieval per rung. A T4 trigger is one planning search: the avoidance search that the authors' T4
    adds after failure messages (rung ``avoidance``) belongs to it. The Critic's own searches (rung
    ``critic...``) are Critic evidence, not T2.
    """
    writes = dict.fromkeys(MEMORY_TAGS, 0)
    subtags: dict[str, int] = defaultdict(int)
    triggers = dict.fromkeys(MEMORY_TRIGGERS, 0)
    retrievals = 0
    injections = dict.fromkeys(MEMORY_TARGETS, 0)
    injected_chars = 0
    fallbacks: dict[str, int] = defaultdict(int)
    t1_steps: set[int] = set()
    for e in events:
        if isinstance(e, MemoryWrite):
            writes[e.tag] = writes.get(e.tag, 0) + 1
            subtags[f"{e.tag}/{e.subtag}"] += 1
        elif isinstance(e, MemoryRetrieval):
            retrievals += 1
            if e.trigger == "T1":
                t1_steps.add(e.step)
            elif _is_trigger(e):
                triggers[e.trigger] += 1
        elif isinstance(e, MemoryInjection):
            injections[e.target] += 1
            injected_chars += e.chars
        elif isinstance(e, MemoryFallback):
            fallbacks[e.reason.split(":")[0]] += 1
    triggers["T1"] = len(t1_steps)
    return {
        "writes": sum(writes.values()),
        "writes_by_tag": writes,
        "writes_by_subtag": dict(sorted(subtags.items())),
        "triggers": triggers,
        "retrievals": retrievals,
        "injections": injections,
        "injected_chars": injected_chars,
        "fallbacks": dict(sorted(fallbacks.items())),
    }


def _finished_rows(
    episodes: Iterable[Iterable[Event]], per_episode: Callable[[list[Event]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """``per_episode`` counters of every finished episode (one with ``episode_end``)."""
    rows = []
    for events in episodes:
        evs = list(events)
        if any(isinstance(e, EpisodeEnd) for e in evs):
            rows.append(per_episode(evs))
    return rows


def _row_mean(rows: list[dict[str, Any]], get: Callable[[dict[str, Any]], float]) -> float | None:
    """Mean of ``get(row)`` over the rows, 4 decimals; None without rows."""
    return round(fmean(get(r) for r in rows), 4) if rows else None


def memory_usage(episodes: Iterable[Iterable[Event]]) -> dict[str, Any]:
    """Per-episode means of the AMM counters over finished episodes (paper Appendix D: writes/episode,
    T1 and T4 triggers, Swift and Sage injections)."""
    rows = _finished_rows(episodes, memory_episode)
    n = len(rows)

    def mean(get: Any) -> float | None:
        return _row_mean(rows, get)

    return {
        "episodes": n,
        "writes_per_episode": mean(lambda r: r["writes"]),
        "writes_by_tag_per_episode": {t: mean(lambda r, t=t: r["writes_by_tag"][t]) for t in MEMORY_TAGS},
        "triggers_per_episode": {t: mean(lambda r, t=t: r["triggers"][t]) for t in MEMORY_TRIGGERS},
        "injections_per_episode": {t: mean(lambda r, t=t: r["injections"][t]) for t in MEMORY_TARGETS},
        "fallbacks_per_episode": mean(lambda r: sum(r["fallbacks"].values())),
        # A store that cannot be written or read turns into fallbacks; counted on their own so a broken
        # store is not mistaken for a quiet memory (MemoryFallback reasons "store_error: <cause>").
        "store_errors": sum(r["fallbacks"].get("store_error", 0) for r in rows),
    }


def srm_episode(events: Iterable[Event]) -> dict[str, Any]:
    """SRM counters of one episode (paper §3.2 and its mechanism logs): Gate-1 outcomes, drops by reason,
    repairs by rule, checks by source; stagnation reports by main pattern; Critic calls, effective and
    ineffective calls (from ``critic_effect``), actions the Critic handed to the buffer."""
    outcomes = {o.value: 0 for o in GateOutcome}
    drops: dict[str, int] = defaultdict(int)
    repairs: dict[str, int] = defaultdict(int)
    sources: dict[str, int] = defaultdict(int)
    patterns: dict[str, int] = defaultdict(int)
    calls = effective = ineffective = critic_actions = 0
    for e in events:
        if isinstance(e, GateDecision):
            outcomes[e.outcome.value] += 1
            sources[e.source] += 1
            if e.outcome is GateOutcome.DROP:
                drops[e.reason] += 1
            elif e.outcome is GateOutcome.REPAIR:
                repairs[e.rule] += 1
        elif isinstance(e, StagnationReport):
            patterns[e.pattern] += 1
        elif isinstance(e, CriticCall):
            calls += 1
            critic_actions += len(e.actions)
        elif isinstance(e, CriticEffect):
            effective += e.effective
            ineffective += not e.effective
    return {
        "gate_checks": sum(outcomes.values()),
        "gate_outcomes": outcomes,
        "gate_drops_by_reason": dict(sorted(drops.items())),
        "gate_repairs_by_rule": dict(sorted(repairs.items())),
        "gate_checks_by_source": dict(sorted(sources.items())),
        "stagnation_reports": sum(patterns.values()),
        "stagnation_by_pattern": dict(sorted(patterns.items())),
        "critic_calls": calls,
        "critic_effective_calls": effective,
        "critic_ineffective_calls": ineffective,
        "critic_actions": critic_actions,
    }


def srm_usage(episodes: Iterable[Iterable[Event]]) -> dict[str, Any]:
    """SRM counters pooled over finished episodes, with the paper's per-episode means (Gate-1 drops per
    episode, Critic calls and effective Critic calls per episode)."""
    rows = _finished_rows(episodes, srm_episode)
    n = len(rows)

    def pooled(key: str) -> dict[str, int]:
        total: dict[str, int] = defaultdict(int)
        for r in rows:
            for k, v in r[key].items():
                total[k] += v
        return dict(sorted(total.items()))

    def mean(get: Any) -> float | None:
        return _row_mean(rows, get)

    return {
        "episodes": n,
        "gate_outcomes": pooled("gate_outcomes"),
        "gate_drops_by_reason": pooled("gate_drops_by_reason"),
        "gate_repairs_by_rule": pooled("gate_repairs_by_rule"),
        "stagnation_by_pattern": pooled("stagnation_by_pattern"),
        "critic_calls": sum(r["critic_calls"] for r in rows),
        "critic_effective_calls": sum(r["critic_effective_calls"] for r in rows),
        "gate_drops_per_episode": mean(lambda r: r["gate_outcomes"]["drop"]),
        "gate_repairs_per_episode": mean(lambda r: r["gate_outcomes"]["repair"]),
        "stagnation_reports_per_episode": mean(lambda r: r["stagnation_reports"]),
        "critic_calls_per_episode": mean(lambda r: r["critic_calls"]),
        "critic_effective_calls_per_episode": mean(lambda r: r["critic_effective_calls"]),
    }


PAPER_COUNTERS: dict[str, dict[str, float]] = {
    "memory_writes": {"amm": 4.48, "full": 4.89},
    "t1_triggers": {"amm": 17.13, "full": 12.15},
    "t4_triggers": {"amm": 19.13, "full": 11.77},
    "swift_injections": {"amm": 30.81, "full": 23.03},
    "sage_injections": {"amm": 19.13, "full": 11.77},
    "gate_drops": {"srm": 20.03, "full": 17.48},
    "critic_effective_calls": {"srm": 1.35, "full": 1.29},
    "system2_calls": {"baseline": 24.6, "full": 14.1},
    "swift_step_share": {"baseline": 0.4408, "amm": 0.4916, "srm": 0.5713, "full": 0.6201},
    "buffer_step_share": {"baseline": 0.5592, "full": 0.3799},
}
"""The paper's Appendix D/E values per configuration (per episode; shares as fractions), for the report."""


PAPER_COUNTER_KEYS = (
    "memory_writes",
    "memory_writes_near_miss",
    "t1_triggers",
    "t4_triggers",
    "swift_injections",
    "sage_injections",
    "gate_drops",
    "critic_effective_calls",
    "system2_calls",
)
"""The per-episode means of ``PaperCounters`` (the two step shares are pooled instead)."""


def paper_episode(events: Iterable[Event]) -> dict[str, int]:
    """One episode's Appendix D/E counters as the paper's authors count them (``records.PaperCounters``)."""
    row = dict.fromkeys((*PAPER_COUNTER_KEYS, "env_steps", "swift_steps", "buffer_steps"), 0)
    t1_steps: set[int] = set()
    for e in events:
        if isinstance(e, MemoryWrite):
            row["memory_writes"] += 1
            row["memory_writes_near_miss"] += e.tag == "near-miss"
        elif isinstance(e, MemoryRetrieval):
            # One T1 trigger per step that retrieved for a Swift retry, whatever its rungs (memory_episode).
            if e.trigger == "T1":
                t1_steps.add(e.step)
            row["t4_triggers"] += e.trigger == "T4" and _is_trigger(e)
        elif isinstance(e, MemoryInjection):
            row["swift_injections"] += e.target == "swift"
            row["sage_injections"] += e.target == "sage"
        elif isinstance(e, GateDecision):
            row["gate_drops"] += e.outcome is GateOutcome.DROP
        elif isinstance(e, CriticCall):
            row["critic_effective_calls"] += e.injected and bool(e.actions)
        elif isinstance(e, SageCall):
            row["system2_calls"] += 1
        elif isinstance(e, EnvStep):
            row["env_steps"] += 1
            # The authors' loop has no procedures: every action not from the buffer is Swift's there.
            row["swift_steps"] += e.source in SWIFT_BRANCH
            row["buffer_steps"] += e.source in BUFFER_SOURCES
    row["t1_triggers"] = len(t1_steps)
    return row


def paper_counters(episodes: Iterable[Iterable[Event]]) -> dict[str, Any]:
    """Per-episode means of ``paper_episode`` over finished episodes; the step shares are pooled."""
    rows = _finished_rows(episodes, paper_episode)
    steps = sum(r["env_steps"] for r in rows)
    out: dict[str, Any] = {"episodes": len(rows)}
    for key in PAPER_COUNTER_KEYS:
        out[key] = round(fmean(r[key] for r in rows), 4) if rows else None
    out["swift_step_share"] = round(sum(r["swift_steps"] for r in rows) / steps, 4) if steps else None
    out["buffer_step_share"] = round(sum(r["buffer_steps"] for r in rows) / steps, 4) if steps else None
    return out


def run_metrics(events_dir: Path, episode_ids: Iterable[str]) -> RunMetrics:
    """The whole metrics.json of a run: scores (``compute_metrics``), ``usage`` (controller counters and
    cost proxies, Appendix E) and ``mechanisms`` (AMM and SRM activity, Appendix D), all from the logs
    of the given episodes, validated as a ``RunMetrics`` (``.to_json()`` is the file's content). Each
    counter family streams the logs again, so memory stays flat."""
    paths = [p for i in episode_ids if (p := events_dir / f"{i}.jsonl").exists()]
    summaries = [s for s in (summarize_log(p) for p in paths) if s is not None]
    metrics = compute_metrics(summaries)

    def logs() -> Iterator[Iterator[Event]]:
        return (iter_events(p) for p in paths)

    metrics["usage"] = controller_usage(logs()) | {"wall_s_per_episode": metrics["wall_s_per_episode"]}
    metrics["mechanisms"] = {
        "memory": memory_usage(logs()),
        "srm": srm_usage(logs()),
        "paper": paper_counters(logs()),
    }
    return RunMetrics.model_validate(metrics)
