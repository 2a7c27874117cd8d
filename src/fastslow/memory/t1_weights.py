"""Learning the weights Swift gives to AMM's T1 memories (paper §3.1, T1: retrieval on Swift failure).

The embedded Swift reads retrieved memories as four dense features (``swift.features.DENSE``):
``mem_success`` / ``mem_near_miss`` / ``mem_avoid`` (the candidate is a success / near-miss / avoidance
record's action) and ``mem_overlap`` (its words overlap the good records' actions). Gold trajectories
carry no memories, so imitation cannot learn these weights; ``fastslow train swift-memory`` fits them
from what T1 would show Swift, with everything else frozen:

1. Episodes: gold trajectories (``fastslow data gold``) of train variations that neither wrote a record
   of the store (its episodes are the memories, not the questions) nor trained the linear weights
   (there Swift is overconfident and rarely fails); the weights' held-out episodes are used.
2. States: every step where Swift fails as the controller judges it (after its safety policy, which
   sees the gold path as the runner would: no valid candidate, or confidence below
   ``swift.min_confidence``). Only those states ever see a memory.
3. Memories: the T1 ladder of ``memory.episode.EpisodeMemory`` against the store (a warm-up's, i.e.
   train variations), every rung (whether a retry is accepted depends on the weights being fitted),
   each rung's shown records one example.
4. Fit: score(a) = frozen(a) + x(a) . w, with x the four memory columns and w their global weights;
   ``w`` minimises the mean listwise log-loss of the gold action plus ``l2 * |w|^2`` (convex in four
   numbers: Newton steps). The per-task and per-verb memory weights stay as training left them.

The result is the linear weights with the four global weights replaced and the fit's provenance in
``meta["memory_weights"]`` (store, episodes, examples, loss and top-1 before and after).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from fastslow.core.proposal import MemoryHint, Proposal
from fastslow.core.trajectory import Trajectory
from fastslow.env.episodes import Episode
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.events import ListSink
from fastslow.memory.config import AmmConfig
from fastslow.memory.episode import EpisodeMemory
from fastslow.memory.stores import BulkStore
from fastslow.swift.data import read_episodes, replay_rows
from fastslow.swift.features import DENSE, FloatArray, dense_features
from fastslow.swift.imitation import (
    MEMORY_WEIGHTS,
    ImitationSwift,
    SwiftWeights,
    dense_global_index,
    ranked,
)
from fastslow.swift.policy import SafetyPolicy
from fastslow.swift.train import label_of

MEMORY_FEATURES = tuple(MEMORY_WEIGHTS)
"""The fitted features, in ``DENSE`` order."""
_COLUMNS = [DENSE.index(name) for name in MEMORY_FEATURES]


@dataclass(frozen=True)
class SwiftView:
    """The Swift whose failures T1 answers, as the run configuration sets it up."""

    min_confidence: float = 0.1
    repeat_penalty: float = 6.0
    loop_window: int = 10
    focus_rule: bool = True
    rerank_pool: int = 50
    """Top raw candidates the policy re-scores (``swift.rerank_pool``)."""
    box_features: bool = False
    """Answer-box columns (hand-written task logic): off when ``procedures.enabled`` is."""


@dataclass
class Example:
    """One T1 retry: the frozen scores and memory columns of the candidates the policy left."""

    base: FloatArray
    x: FloatArray
    gold: int
    episode: str


@dataclass
class Rung:
    """What one T1 retry shows Swift, memory weights left out: raw and policy-adjusted scores of every
    valid action and their memory columns (the weights add ``x @ w`` to both)."""

    raw: FloatArray
    adjusted: FloatArray
    x: FloatArray


@dataclass
class T1State:
    """A gold state where Swift failed: the gold action, what Swift does without memories, the rungs."""

    episode: str
    gold: int
    plain: int
    """The action Swift takes when no retry is accepted (its own top after the policy)."""
    rungs: list[Rung]

    def examples(self) -> list[Example]:
        """One example per rung whose memories mark some candidate the policy left."""
        out = []
        for rung in self.rungs:
            keep = np.isfinite(rung.adjusted)
            if rung.x[keep].any():
                position = int(np.count_nonzero(keep[: self.gold]))
                out.append(Example(rung.adjusted[keep], rung.x[keep], position, self.episode))
        return out

    def decision(self, w: npt.NDArray[np.floating[Any]], view: SwiftView) -> int:
        """The action the run takes with memory weights ``w``: the first accepted rung's top, else
        ``plain`` (the ladder escalates and Swift's own proposal stands)."""
        for rung in self.rungs:
            raw = rung.raw + rung.x @ w
            adjusted = rung.adjusted + rung.x @ w
            if not _failed(raw, adjusted, view):
                return _choice(raw, adjusted, view)
        return self.plain


@dataclass(frozen=True)
class FitSettings:
    l2: float = 0.01
    """Pull of the four weights towards zero (per example, as the loss is a mean)."""
    iterations: int = 50


def store_episodes(store: BulkStore, name: str = "the store") -> set[str]:
    """The episodes (``TT-VVVV``) whose records the store holds; a UsageError when one is not a train
    variation (dev and test episodes never enter a fit)."""
    found: set[str] = set()
    world = get_world()  # ScienceWorld's: ``train swift-memory`` refuses another world
    for record in store.iter_all():
        # A run's records carry "<run id>[/warmup]/<episode id>".
        episode = Episode.from_id(record.episode_id.rsplit("/", 1)[-1])
        found.add(Episode(episode.task_id, episode.variation).episode_id)
    foreign = sorted(
        e for e in found if Episode.from_id(e).variation not in world.task(int(e[:2])).variations["train"]
    )
    if foreign:
        raise UsageError(
            f"{name} holds records of {len(foreign)} episodes that are not train variations (e.g. "
            f"{foreign[0]}): fit on a warm-up's records only (a run with amm.mode=frozen writes none after "
            "its warm-up)"
        )
    return found


def choose_episodes(
    data: Path, weights: SwiftWeights, excluded: set[str]
) -> tuple[list[list[dict[str, Any]]], dict[str, int]]:
    """The gold episodes of step 1 (module docstring), with counts of what was left out and why."""
    trained = set(_strings(weights.meta.get("episodes"))) - set(_strings(weights.meta.get("held_out")))
    chosen: list[list[dict[str, Any]]] = []
    skipped = {"in_store": 0, "trained_linear": 0}
    for rows in read_episodes(data):
        if not rows:
            continue
        name = f"{int(rows[0]['task_id']):02d}-{int(rows[0]['variation']):04d}"
        if name in excluded:
            skipped["in_store"] += 1
        elif name in trained:
            skipped["trained_linear"] += 1
        else:
            chosen.append(rows)
    return chosen, skipped


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def collect(
    episodes: Sequence[Sequence[dict[str, Any]]],
    weights: SwiftWeights,
    amm: AmmConfig,
    store: BulkStore,
    view: SwiftView = SwiftView(),
    progress: Callable[[str], None] | None = None,
) -> tuple[list[T1State], dict[str, int]]:
    """Steps 2-3: the gold states of ``episodes`` where Swift fails, with their T1 rungs, and counts
    (steps, labelled steps, Swift failures, retries)."""
    frozen = SwiftWeights(weights.w.copy(), weights.focus_words, weights.meta)
    for name in MEMORY_FEATURES:
        frozen.w[dense_global_index(name, len(frozen.w))] = 0.0
    swift = ImitationSwift(frozen, box_features=view.box_features)
    states: list[T1State] = []
    counts = {"steps": 0, "labelled": 0, "swift_failed": 0, "gold_vetoed": 0, "retries": 0}
    for n, rows in enumerate(episodes, 1):
        policy = SafetyPolicy(
            frozen.focus_words, view.repeat_penalty, view.loop_window, view.focus_rule, get_world().semantics
        )
        name = f"{int(rows[0]['task_id']):02d}-{int(rows[0]['variation']):04d}"
        memory = EpisodeMemory(amm, store, ListSink(), f"t1-fit/{name}", writable=False)
        previous = None
        for row, traj in replay_rows(rows, get_world().semantics):
            if previous is not None:
                policy.observe(previous, traj.turns[-1].action, traj.current)
            previous = traj.current
            counts["steps"] += 1
            valid = list(traj.current.valid_actions)
            label = label_of(str(row["gold_action"]), valid, traj.semantics)
            if label is None:
                continue
            counts["labelled"] += 1
            step = _Step(swift, policy, traj, valid, view.box_features)
            plain = step.scores(())
            if not _failed(plain.raw, plain.adjusted, view):
                continue
            counts["swift_failed"] += 1
            gold = valid.index(label)
            if not np.isfinite(plain.adjusted[gold]):
                counts["gold_vetoed"] += 1  # the policy vetoes the gold action: no weight brings it back
                continue
            rungs: list[Rung] = []
            with memory.retry_view(traj):
                memory.t1_ladder(traj, step.capture(rungs), accept=lambda _p: False)
            counts["retries"] += len(rungs)
            states.append(T1State(name, gold, _choice(plain.raw, plain.adjusted, view), rungs))
        if progress is not None and (n % 25 == 0 or n == len(episodes)):
            progress(f"{n}/{len(episodes)} episodes: {len(states)} states where Swift fails")
    return states, counts


def _failed(raw: FloatArray, adjusted: FloatArray, view: SwiftView) -> bool:
    """The controller's "Swift failed" as the run sees it: the confidence is the raw ranking's (the
    policy re-scores candidates, it leaves the confidence), the candidates are the policy's survivors
    among the raw top ``rerank_pool``."""
    pool = np.argsort(-raw, kind="stable")[: view.rerank_pool]
    confidence = ranked([""] * len(raw), raw, 1).confidence
    return confidence < view.min_confidence or not np.isfinite(adjusted[pool]).any()


def _choice(raw: FloatArray, adjusted: FloatArray, view: SwiftView) -> int:
    """The action the policy hook puts first: the best adjusted score among the raw top ``rerank_pool``
    (the raw order among equals)."""
    pool = np.argsort(-raw, kind="stable")[: view.rerank_pool]
    return int(pool[int(np.argmax(adjusted[pool]))])


@dataclass
class _Step:
    """One gold state as Swift and its policy score it, with or without memories."""

    swift: ImitationSwift
    policy: SafetyPolicy
    traj: Trajectory
    valid: list[str]
    box: bool

    def scores(self, memories: Sequence[MemoryHint]) -> Rung:
        """Swift's raw scores, the policy's adjusted ones, and the memory columns of every action."""
        state = self.swift.state_of(self.traj, memories)
        raw = self.swift.score_state(state, self.traj.semantics)
        adjusted = self.policy.adjust(self.valid, raw, self.traj.current, self.traj.task_name)
        table = self.swift.table_for(self.traj.semantics)
        ids = table.ids(self.valid)
        return Rung(raw, adjusted, dense_features(table, ids, state, self.box)[:, _COLUMNS])

    def capture(self, found: list[Rung]) -> Callable[[list[Any]], Proposal]:
        """A T1 retry that records what Swift would see and proposes nothing (every rung runs)."""

        def retry(memories: list[Any]) -> Proposal:
            found.append(self.scores(memories))
            return Proposal((), 0.0)

        return retry


def _loss(
    w: npt.NDArray[np.floating[Any]], examples: Sequence[Example], l2: float
) -> tuple[float, npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Mean log-loss of the gold action plus the L2 term, its gradient and Hessian."""
    k = len(w)
    total, grad, hess = 0.0, np.zeros(k), np.zeros((k, k))
    for ex in examples:
        s = ex.base + ex.x @ w
        s = s - s.max()
        p = np.exp(s)
        p /= p.sum()
        total -= float(np.log(max(p[ex.gold], 1e-300)))
        mean_x = p @ ex.x
        grad += mean_x - ex.x[ex.gold]
        centred = ex.x - mean_x
        hess += (centred * p[:, None]).T @ centred
    n = max(len(examples), 1)
    return (
        total / n + l2 * float(w @ w),
        grad / n + 2 * l2 * w,
        hess / n + 2 * l2 * np.eye(k),
    )


def top1(w: npt.NDArray[np.floating[Any]], examples: Sequence[Example]) -> float:
    """Share of examples whose gold action ranks first with the memory weights ``w``."""
    if not examples:
        return 0.0
    return sum(int(np.argmax(ex.base + ex.x @ w) == ex.gold) for ex in examples) / len(examples)


def gold_decisions(w: npt.NDArray[np.floating[Any]], states: Sequence[T1State], view: SwiftView) -> float:
    """Share of the states where the run, with memory weights ``w``, takes the gold action."""
    if not states:
        return 0.0
    return sum(int(s.decision(w, view) == s.gold) for s in states) / len(states)


def fit(examples: Sequence[Example], settings: FitSettings = FitSettings()) -> FloatArray:
    """Step 4: Newton's method with a backtracking line search from w = 0."""
    if not examples:
        raise UsageError("no T1 example: no chosen gold step failed Swift with a memory to show")
    w = np.zeros(len(MEMORY_FEATURES))
    loss, grad, hess = _loss(w, examples, settings.l2)
    for _ in range(settings.iterations):
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while t > 1e-6:
            trial = w - t * step
            trial_loss, trial_grad, trial_hess = _loss(trial, examples, settings.l2)
            if trial_loss <= loss - 1e-4 * t * float(grad @ step):
                break
            t /= 2
        else:
            break
        w, loss, grad, hess = trial, trial_loss, trial_grad, trial_hess
        if float(np.abs(grad).max()) < 1e-6:
            break
    fitted: FloatArray = w.astype(np.float32)
    return fitted


def fit_memory_weights(
    data: Path,
    weights: SwiftWeights,
    amm: AmmConfig,
    store: BulkStore,
    store_name: str,
    view: SwiftView = SwiftView(),
    settings: FitSettings = FitSettings(),
    progress: Callable[[str], None] | None = None,
) -> tuple[SwiftWeights, dict[str, Any]]:
    """Steps 1-4: the weights with the fitted memory weights, and the fit's report (also in meta)."""
    say = progress or (lambda _line: None)
    t0 = time.perf_counter()
    excluded = store_episodes(store, store_name)
    if not excluded:
        raise UsageError(f"{store_name} holds no record: fill it with a warm-up first (`--warmup`)")
    episodes, skipped = choose_episodes(data, weights, excluded)
    if not episodes:
        raise UsageError(
            f"no gold episode of {data} is left: every one wrote a record of the store or trained the "
            "linear weights (train them with --holdout-every N, or add episodes)"
        )
    say(
        f"{len(episodes)} gold episodes ({skipped['in_store']} in the store, "
        f"{skipped['trained_linear']} trained the linear weights: left out)"
    )
    states, counts = collect(episodes, weights, amm, store, view, say)
    examples = [e for state in states for e in state.examples()]
    hand = np.asarray([MEMORY_WEIGHTS[n] for n in MEMORY_FEATURES], dtype=np.float32)
    w = fit(examples, settings)
    candidates = (("no_memory", np.zeros(len(w), dtype=np.float32)), ("hand", hand), ("fitted", w))
    report: dict[str, Any] = {
        "store": store_name,
        "store_episodes": len(excluded),
        "episodes": len(episodes),
        "skipped": skipped,
        **counts,
        "states": len(states),
        "examples": len(examples),
        "l2": settings.l2,
        "weights": {n: round(float(v), 4) for n, v in zip(MEMORY_FEATURES, w, strict=True)},
        "hand_weights": dict(MEMORY_WEIGHTS),
        "loss": {name: round(_loss(v, examples, 0.0)[0], 4) for name, v in candidates},
        "top1": {name: round(top1(v, examples), 4) for name, v in candidates},
        "gold_decisions": {name: round(gold_decisions(v, states, view), 4) for name, v in candidates},
        "fit_s": round(time.perf_counter() - t0, 1),
    }
    out = SwiftWeights(weights.w.copy(), weights.focus_words, {**weights.meta, "memory_weights": report})
    for name, value in zip(MEMORY_FEATURES, w, strict=True):
        out.w[dense_global_index(name, len(out.w))] = value
    return out, report
