"""``metrics.json`` as a versioned, typed record (paper §4-5 and Appendices C-E: what a run measured).

``eval.metrics.run_metrics`` computes a run's metrics from its event logs only and returns a
``RunMetrics``; ``fastslow eval`` writes it as ``DIR/metrics.json`` and ``fastslow report`` reads it back
with ``read_run_metrics``, which validates it, so a report never tables a file it misreads.
inspect_ai's ``EvalLog`` is the model: a versioned pydantic record with a reader that refuses what it
cannot interpret. A metrics.json written before the format was versioned (no ``format_version``), by a
newer fastslow, or by something else is refused with one line (``UsageError``).

The JSON field names, values and key order are part of the format (the README and the tests read
them); ``format_version`` comes first. Counters keyed by open-ended codes (Gate-1 drop reasons, repair
rules, fallback reasons) stay dictionaries; fixed key sets (AMM tags, triggers, targets) are sub-models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from fastslow.env.config import DEFAULT_WORLD
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.events import EndState, GateOutcome
from fastslow.vocab import StagnationPattern

METRICS_FORMAT = 7
"""Version of metrics.json; 1 was the unversioned file of fastslow <= 0.1 (no ``format_version``), 2 had
only the strict score (-100 as 0) as ``mean_score``, 3 had no ``mechanisms.paper``, 4 counted the avoidance
search of the authors' T4 as a T4 trigger of its own, 5 had no ``usage.step_shares`` and its
``usage.swift_step_share`` counted every step labelled ``swift``, 6 had no ``usage.sage_rounds`` and the
other counters of answers that held an action (`fastslow report` recomputes older
formats from the logs; logs written before the ``procedure`` and ``fallback`` sources label those steps
``swift``, and count there as Swift's)."""
METRICS_FILE = "metrics.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_attribute_docstrings=True)


# -- scores --------------------------------------------------------------------------------------------


class TaskMetrics(_Record):
    """One task: its episodes' means (both score conventions) and counts."""

    name: str
    group: str
    """short, medium or long (by mean gold-path length of the task's test episodes)."""
    episodes: int
    mean_score: float | None
    """Mean episode score in the paper's convention (never decreasing; -100 / early stop keep the last
    non-negative score reached)."""
    mean_score_strict: float | None
    """Mean score at termination, -100 counted as 0."""
    success_rate: float | None
    steps_at_success: float | None
    """Mean env steps of the successful episodes; None without any."""
    failures: int
    """Episodes that ended at -100."""


class GroupMetrics(_Record):
    """Short / Medium / Long: macro means over the group's tasks."""

    tasks: list[int]
    episodes: int
    mean_score: float | None
    mean_score_strict: float | None
    success_rate: float | None
    steps_at_success: float | None


class Ci95(_Record):
    """Seeded 95% bootstrap intervals of the headline means; both absent (``{}``) when every task has one
    episode (nothing to resample)."""

    mean_score: tuple[float, float] | None = None
    mean_score_strict: tuple[float, float] | None = None
    success_rate: tuple[float, float] | None = None

    @model_serializer(mode="wrap")
    def _absent_not_null(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class SeedRow(_Record):
    episodes: int
    mean_score: float | None
    mean_score_strict: float | None
    success_rate: float | None


class Spread(_Record):
    """Mean and sample standard deviation over seeds (std None with a single seed)."""

    mean: float | None
    std: float | None


class SeedSpread(_Record):
    """``--seeds`` runs: each seed's headline means, and their spread."""

    seeds: list[int]
    per_seed: dict[str, SeedRow]
    """By seed, as a string key (JSON object keys are strings)."""
    mean_score: Spread
    mean_score_strict: Spread
    success_rate: Spread


class EpisodeResult(_Record):
    """One finished episode, as its log's ``episode_start`` and ``episode_end`` say (the one episode-result
    type: metrics are computed from these and metrics.json lists them)."""

    model_config = ConfigDict(frozen=True)

    episode_id: str
    task_id: int
    variation: int
    end: EndState
    final_score: int
    steps: int
    wall_s: float
    error: str | None
    seed: int | None = None
    best_score: int = 0
    """The best non-negative score the episode reached (its env_step scores): the paper's episode score."""
    world: str = DEFAULT_WORLD
    """The world the episode was played in (its header's ``world``), whose task table names its task.
    Written only for a world other than ScienceWorld: a ScienceWorld record is as it was before a
    second world existed, and a record without the field is ScienceWorld's."""

    @model_serializer(mode="wrap")
    def _world_when_not_default(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("world") == DEFAULT_WORLD:
            data.pop("world")
        return data

    @property
    def success(self) -> bool:
        return max(self.final_score, self.best_score) >= get_world(self.world).semantics.success_score

    @property
    def score(self) -> float:
        """The paper's (SwiftSage's) episode score: never decreasing, a -100 failure or an early stop
        keeps the last non-negative score reached."""
        return float(max(self.best_score, self.final_score, 0))

    @property
    def score_strict(self) -> float:
        """The score at termination, -100 (task failure) counted as 0."""
        return float(max(self.final_score, 0))


# -- usage and mechanisms ------------------------------------------------------------------------------


class StepShares(_Record):
    """The fraction of env steps of each source (``vocab.StepSource``), pooled over finished episodes;
    they add up to 1 (each rounded to 6 places). None without any env step."""

    swift: float | None
    """The learned Swift's ranking chose the action."""
    procedure: float | None
    """Hand-written task logic (a task procedure or a judgement) decided it, even when the learned Swift
    ranked the same action first; the step's ``reason`` names the rule."""
    fallback: float | None
    """The controller's own pick: neither Swift's ranking nor a procedure gave an action that may run."""
    sage: float | None
    """Sage's plan, from the buffer."""
    critic: float | None
    """SRM's Critic's actions, from the buffer."""
    llm: float | None = None
    """A single-process agent's language model chose it (ReAct, Reflexion: ``fastslow.plugins``); absent
    from metrics.json files written before those agents existed."""
    oracle: float | None
    """The gold path (the oracle agent)."""
    scripted: float | None
    """An agent replaying a fixed list of actions."""


class Usage(_Record):
    """Controller counters and cost proxies (paper Appendix E), pooled over finished episodes."""

    episodes: int
    env_steps: int
    swift_step_share: float | None
    """Env steps whose action the learned Swift's ranking chose (``step_shares.swift``): procedure and
    fallback steps are not counted (``mechanisms.paper.swift_step_share`` counts them, as the authors'
    loop would)."""
    buffer_step_share: float | None
    """Env steps whose action came from the buffer (Sage or Critic plans)."""
    step_shares: StepShares
    """Every source's share of the env steps."""
    system2_calls_per_episode: float | None
    llm_tokens_per_action: float | None
    llm_seconds_per_episode: float | None
    model_calls: int
    model_call_errors: int
    model_call_errors_by_role: dict[str, int]
    model_calls_skipped: int = 0
    """Calls not sent because the role's circuit breaker was open (0 in files written before it)."""
    model_calls_skipped_by_role: dict[str, int] = {}
    model_cache_hits: int = 0
    """Calls the run's response cache answered (``model_call`` events with ``cached``): not in
    ``model_calls``, the tokens or the seconds (0 in files written before the cache existed)."""
    model_cache_hits_by_role: dict[str, int] = {}
    model_cache_hit_rate: float | None = None
    """``model_cache_hits`` / (``model_cache_hits`` + ``model_calls``); None without model calls."""
    sage_rounds: int = 0
    """Sage rounds that got a reply (``sage_call`` events without ``error``; 0 in files written before
    this counter)."""
    sage_rounds_with_actions: int = 0
    """Of those, rounds that grounded at least one action onto the state's valid actions (``actions``:
    what the buffer received)."""
    critic_answers: int = 0
    """LLM Critic calls that got a reply (``critic_call`` events of kind llm without a model error)."""
    critic_answers_with_actions: int = 0
    """Of those, answers that kept at least one valid action (``actions``), injected or not."""
    sage_round_s_median: float | None = None
    """Median wall time of a Sage round's model calls (``sage_call.latency_s``, rounds that got a reply;
    cache hits take ~0 s); None without one."""
    system2_action_rate: float | None = None
    """(``sage_rounds_with_actions`` + ``critic_answers_with_actions``) / (``sage_rounds`` +
    ``critic_answers``): how often the LLM's answer held an action the loop could run; None without
    any."""
    wall_s_per_episode: float | None


class PerTag(_Record):
    success: float | None
    near_miss: float | None = Field(alias="near-miss")
    avoidance: float | None


class PerTrigger(_Record):
    T1: float | None
    T2: float | None
    T3: float | None
    T4: float | None


class PerTarget(_Record):
    swift: float | None
    sage: float | None
    critic: float | None


class MemoryMetrics(_Record):
    """AMM activity per episode (paper Appendix D)."""

    episodes: int
    writes_per_episode: float | None
    writes_by_tag_per_episode: PerTag
    triggers_per_episode: PerTrigger
    injections_per_episode: PerTarget
    fallbacks_per_episode: float | None
    store_errors: int
    """Fallbacks caused by a failing store (``store_error``), in total: a broken store, not a quiet one."""


class SrmMetrics(_Record):
    """SRM activity (paper §3.2): pooled counts and per-episode means."""

    episodes: int
    gate_outcomes: dict[GateOutcome, int]
    gate_drops_by_reason: dict[str, int]
    gate_repairs_by_rule: dict[str, int]
    stagnation_by_pattern: dict[StagnationPattern, int]
    critic_calls: int
    critic_effective_calls: int
    gate_drops_per_episode: float | None
    gate_repairs_per_episode: float | None
    stagnation_reports_per_episode: float | None
    critic_calls_per_episode: float | None
    critic_effective_calls_per_episode: float | None


class PaperCounters(_Record):
    """The mechanism counters of the paper's Appendix D/E, per finished episode, each defined as the
    paper's authors' code counts it (docs/fidelity.md, row C1); the paper's own values are in
    ``eval.metrics.PAPER_COUNTERS``. fastslow's broader counters are in ``memory``, ``srm`` and ``usage``."""

    episodes: int
    memory_writes: float | None
    """Records written (authors: a ``write_success`` / ``write_nearmiss`` / ``write_avoidance`` call;
    here ``memory_write`` events). Paper: 4.48 (+AMM), 4.89 (full)."""
    memory_writes_near_miss: float | None
    """Of those, near-miss records (the paper: "mostly near-miss")."""
    t1_triggers: float | None
    """T1 ladder runs: Swift failed (or Sage was forced) and memories were retrieved for a Swift retry;
    one per ladder, whatever its rungs. Paper: 17.13 (+AMM), 12.15 (full)."""
    t4_triggers: float | None
    """T4 triggers: Sage planned with memory planning on, one per planning search (the avoidance search
    the authors' T4 adds after failure messages is part of it). Paper: 19.13 (+AMM), 11.77 (full)."""
    swift_injections: float | None
    """Memory blocks put into a Swift retry (one per rung that injected). Paper: 30.81, 23.03."""
    sage_injections: float | None
    """Memory blocks put into Sage's planning prompt. Paper: 19.13, 11.77."""
    gate_drops: float | None
    """Gate-1 DROP decisions (authors: ``DROP_INVALID`` from ``SRMGate.pre_execute`` on what they gate:
    Swift's top-1, buffer heads, the ambiguity answer; in the authors' loop, ``controller.loop: authors``,
    fastslow's Gate-1 judges the same candidates: docs/fidelity.md, row R9). Paper: 20.03 (+SRM), 17.48
    (full)."""
    critic_effective_calls: float | None
    """Critic calls whose actions were injected into the buffer (the authors' "effective": the only
    calls their budget counts; empty, low-quality and same-state answers are not). Paper: 1.35, 1.29."""
    system2_calls: float | None
    """Sage rounds (authors: steps on which ``findValidActionWithSystem2`` used System 2; the Critic is
    counted on its own). Paper: 24.6 (baseline) to 14.1 (full)."""
    swift_step_share: float | None
    """Env steps whose action the controller's Swift branch sent, as a fraction of all env steps (pooled):
    every step not from the buffer, as the authors' loop counts it (Swift's ranking, its fallbacks).
    The authors have no hand-written task procedures; a run with them counts the procedure steps here
    as Swift's (``usage.step_shares`` tells the learned Swift, the procedures and the fallbacks apart).
    Paper: 44.08% (baseline), 49.16% (+AMM), 57.13% (+SRM), 62.01% (full)."""
    buffer_step_share: float | None
    """Env steps whose action came from the buffer (Sage or Critic plans). Paper: 55.92% to 37.99%."""


class Mechanisms(_Record):
    memory: MemoryMetrics
    srm: SrmMetrics
    paper: PaperCounters
    """The Appendix D/E counters as the paper's authors define them."""


# -- the file ------------------------------------------------------------------------------------------


class RunMetrics(_Record):
    """``metrics.json``: a run's metrics, computed from its event logs only (``eval.metrics``)."""

    format_version: int = METRICS_FORMAT
    """Version of this record; bumped when a field changes meaning or shape."""
    episodes: int
    tasks: int
    mean_score: float | None
    """The headline: macro mean over tasks of each task's mean episode score in the paper's (and
    SwiftSage's) convention: an episode's score never decreases, and a -100 failure or an early stop keeps
    the last non-negative score reached."""
    mean_score_strict: float | None
    """Macro mean over tasks of each task's mean final score, -100 counted as 0."""
    mean_score_raw: float | None
    """Macro mean of the final scores with -100 kept."""
    success_rate: float | None
    """Macro mean over tasks of the success rate (final score 100)."""
    success_rate_micro: float | None
    """Success rate over episodes."""
    steps_at_success: float | None
    ci95: Ci95
    failures: int
    errors: int
    """Episodes the environment broke (``EndState.ERROR``)."""
    end_states: dict[EndState, int]
    wall_s_per_episode: float | None
    seeds: SeedSpread | None = None
    """Only with seeded episodes (``--seeds``); absent from the JSON otherwise."""
    per_group: dict[str, GroupMetrics]
    per_task: dict[str, TaskMetrics]
    """By task id, as a string key."""
    episode_results: list[EpisodeResult]
    usage: Usage
    mechanisms: Mechanisms

    @model_serializer(mode="wrap")
    def _seeds_only_when_seeded(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.seeds is None:
            data.pop("seeds", None)
        return data

    def to_json(self) -> dict[str, Any]:
        """The JSON object metrics.json holds (field names as written, e.g. ``near-miss``)."""
        return self.model_dump(mode="json", by_alias=True)


def read_run_metrics(run_dir: Path) -> RunMetrics:
    """``DIR/metrics.json`` validated as a ``RunMetrics``; ``UsageError`` (one line) when there is none or
    it is not one this fastslow can read."""
    path = run_dir / METRICS_FILE
    if not path.is_file():
        raise UsageError(f"{run_dir} is not a finished run (no {METRICS_FILE})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not a fastslow metrics file (not a JSON object)")
    version = data.get("format_version")
    if version is None:
        what = "an older fastslow (unversioned)" if "per_task" in data else "something other than fastslow"
        raise UsageError(
            f"{path} was written by {what}: no format_version; this fastslow reads format "
            f"{METRICS_FORMAT} (rerun the eval into a new --out to report it)"
        )
    if version != METRICS_FORMAT:
        raise UsageError(
            f"{path} has metrics format {version!r}; this fastslow reads format {METRICS_FORMAT}"
        )
    try:
        return RunMetrics.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise UsageError(f"{path} is not a valid metrics record ({where}: {err['msg']})") from None
