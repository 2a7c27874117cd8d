"""A second-stage Swift ranker: LightGBM lambdarank over the linear ranker's top candidates (paper §3,
Swift on CPU; a stronger learned ranker than the linear one, docs/swift.md 2b).

The linear imitation ranker (``swift/imitation.py``) scores every valid action with hashed crosses
that memorise gold paths. This stage re-orders its ``depth`` best candidates with gradient-boosted
trees over features the linear model can only add up: its own score, margin and rank; the dense
features (``features.DENSE``: named in the task, in the last observation, in the inventory, done
before, memory hints, ...); and a few more about the candidate and the state (its verb and the task
as categories, how many of its words the room shows, the step, the score, the number of valid
actions); optionally (``--semantic``) sentence-embedding similarities of the candidate with the task and
the last action (``SEMANTIC``). Candidates below ``depth`` keep the linear order.

Training (``fastslow train swift-rerank``) must not see the linear model's own training steps: there
its scores are overconfident, and trees fitted on them would learn to trust it blindly. So the linear
model is trained with ``--holdout-every N`` (its weights record the held-out episodes), and the
reranker is fitted on those held-out episodes only (stacking on out-of-sample scores), with every
``valid_every``-th of them kept for early stopping and the reported top-1.

The artifact is one JSON file: LightGBM's text model, the verb and task vocabularies, the depth, the
feature names, the embedding space of the semantic columns (or none), the sha256 of the linear weights it
was fitted on (a reranker never runs on top of other weights) and the training report.

Contract: ``RerankSwift.propose`` returns the same kind of ``Proposal`` as the linear ranker; its
confidence is the linear model's softmax probability of the chosen action over all valid actions (the
trees' lambdarank scores are not probabilities), so ``swift.min_confidence`` keeps its meaning, and its
candidates' scores are the pool's linear scores in the reranked order (the safety policy adds its
penalties to them on the linear scale).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.trajectory import Trajectory
from fastslow.errors import UsageError
from fastslow.swift.features import (
    DENSE,
    ActionTable,
    FloatArray,
    IntArray,
    Scratch,
    SwiftState,
    dense_features,
    linear_scores,
    words,
)
from fastslow.swift.imitation import ImitationSwift, SwiftWeights

FORMAT = 1
DEFAULT_DEPTH = 30
EXTRA = (
    "linear_score",
    "linear_margin",
    "linear_rank",
    "linear_prob",
    "verb",
    "task",
    "in_look",
    "n_words",
    "navigation",
    "same_verb_as_last",
    "last_reward",
    "step",
    "score",
    "log_n_valid",
)
FEATURES: tuple[str, ...] = (*EXTRA, *DENSE)
"""Column order of the reranker's feature matrix."""
SEMANTIC = ("sem_task", "sem_task_gap", "sem_last_action")
"""Optional columns after ``FEATURES``: cosine similarities of sentence embeddings of the candidate with
the task description (and its gap to the pool's best) and with the last action. Only texts that recur
(the task, valid actions), so a decision's encodings are nearly all cache hits: the last observation,
new at every step, would cost a MiniLM forward pass per decision (+21 ms p50 measured, over the 10 ms
budget) and is left out."""

Encoder = Callable[[Sequence[str]], FloatArray]
"""Texts -> L2-normalised rows (``fastslow.models.embeddings``' ``Embedder.encode``), injected by the
caller: Swift sits beside ``models`` in the layers and imports none of it."""


def feature_names(semantic: bool) -> tuple[str, ...]:
    return (*FEATURES, *SEMANTIC) if semantic else FEATURES


def semantic_features(strings: Sequence[str], state: SwiftState, encode: Encoder) -> FloatArray:
    """The ``SEMANTIC`` columns of the candidates ``strings``."""
    last = state.history[-1][0] if state.history else None
    queries = [state.task_description] if last is None else [state.task_description, last]
    vectors = np.asarray(encode([*strings, *queries]), dtype=np.float32)
    actions = vectors[: len(strings)]
    sem = np.zeros((len(strings), len(SEMANTIC)), dtype=np.float32)
    if not len(strings):
        return sem
    sem[:, 0] = actions @ vectors[len(strings)]
    sem[:, 1] = sem[:, 0] - sem[:, 0].max()
    if last is not None:
        sem[:, 2] = actions @ vectors[-1]
    return sem


CATEGORICAL = ("verb", "task")
UNKNOWN = 0
"""Category id of a verb or task the training data did not have."""


def _lightgbm() -> Any:
    try:
        import lightgbm
    except ImportError as exc:  # pragma: no cover - the rank extra is part of the dev install
        raise UsageError("the reranker needs LightGBM: pip install -e '.[rank]'") from exc
    return lightgbm


def sha256_of(path: Path | None) -> str:
    """sha256 of a linear weights file, or of the packaged one (``path`` None)."""
    if path is None:
        from importlib import resources

        from fastslow.swift.imitation import ARTIFACT

        data = (resources.files("fastslow.swift") / "weights" / ARTIFACT).read_bytes()
    else:
        data = path.read_bytes()
    return hashlib.sha256(data).hexdigest()


@dataclass
class Pool:
    """One decision's candidates for the second stage: positions in the valid list and the features."""

    positions: IntArray
    """Positions (in the state's valid actions) of the linear top-``depth``, best first."""
    x: FloatArray
    """(len(positions), len(FEATURES)) feature matrix."""
    linear: FloatArray
    """Linear scores of every valid action (same order as the state's valid actions)."""
    probs: FloatArray
    """Their softmax over all valid actions (the linear ranker's confidence)."""


def pool_features(
    table: ActionTable,
    ids: IntArray,
    state: SwiftState,
    w: FloatArray,
    depth: int,
    verbs: dict[str, int],
    tasks: dict[str, int],
    box: bool = True,
    encode: Encoder | None = None,
    scratch: Scratch | None = None,
    evidence: bool = False,
    states: bool = False,
) -> Pool:
    """The linear scores of every candidate and the features of its best ``depth`` (with the
    ``SEMANTIC`` columns when ``encode`` is given; ``evidence``, ``states``: the linear weights' own, as
    in ``linear_scores``)."""
    linear = linear_scores(table, ids, state, w, box, scratch, evidence, states)
    k = min(depth, len(ids))
    top = np.argsort(-linear, kind="stable")[:k]
    best = float(linear[top[0]]) if k else 0.0
    probs = np.exp(linear - best)
    probs /= probs.sum()
    x = np.zeros((k, len(FEATURES) + (len(SEMANTIC) if encode else 0)), dtype=np.float32)
    x[:, 0] = linear[top]
    x[:, 1] = linear[top] - best
    x[:, 2] = np.arange(k)
    x[:, 3] = probs[top]
    strings = [table.strings[i] for i in ids[top].tolist()]
    verb_of, navigation = table.semantics.verb_of, table.semantics.navigation_verbs
    x[:, 4] = [verbs.get(verb_of(a), UNKNOWN) for a in strings]
    x[:, 5] = tasks.get(state.task_name, UNKNOWN)
    shown = set(words(state.look))
    last = state.history[-1] if state.history else None
    last_verb = verb_of(last[0]) if last else ""
    for j, action in enumerate(strings):
        verb = verb_of(action)
        ws = words(action[len(verb) :])
        x[j, 6] = sum(w_ in shown for w_ in ws) / max(len(ws), 1)
        x[j, 7] = len(ws)
        x[j, 8] = verb in navigation
        x[j, 9] = bool(last) and verb == last_verb
    x[:, 10] = float(last[2]) if last else 0.0
    x[:, 11] = len(state.history)
    x[:, 12] = state.score
    x[:, 13] = np.log1p(len(ids))
    x[:, len(EXTRA) : len(FEATURES)] = dense_features(table, ids[top], state, box)
    if encode is not None:
        x[:, len(FEATURES) :] = semantic_features(strings, state, encode)
    return Pool(top.astype(np.int64), x, linear, probs)


@dataclass
class Reranker:
    """A fitted second stage: the booster and what its features were built with."""

    booster: Any
    depth: int
    verbs: dict[str, int]
    tasks: dict[str, int]
    linear_sha256: str
    meta: dict[str, Any]
    embedder: str | None = None
    """Name of the sentence-embedding space of the ``SEMANTIC`` columns (None: fitted without them)."""

    @property
    def features(self) -> tuple[str, ...]:
        return feature_names(self.embedder is not None)

    def save(self, path: Path) -> None:
        payload = {
            "format": FORMAT,
            "depth": self.depth,
            "features": list(self.features),
            "embedder": self.embedder,
            "verbs": self.verbs,
            "tasks": self.tasks,
            "linear_sha256": self.linear_sha256,
            "meta": self.meta,
            "booster": self.booster.model_to_string(),
        }
        path.write_text(json.dumps(payload) + "\n", encoding="utf-8")

    def require_linear(self, sha256: str) -> None:
        """``UsageError`` unless ``sha256`` is that of the linear weights this reranker was fitted on."""
        if self.linear_sha256 != sha256:
            raise UsageError(
                "the reranker was fitted on other linear weights (sha256 "
                f"{self.linear_sha256[:12]}, given {sha256[:12]}): give swift.model_path those, or refit it"
            )

    @classmethod
    def load(cls, path: Path) -> Reranker:
        if not path.is_file():
            raise UsageError(f"reranker not found: {path}")
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{path} is not a fastslow reranker ({exc})") from exc
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise UsageError(f"{path} is not a fastslow reranker of format {FORMAT}")
        embedder = payload.get("embedder")
        if payload["features"] != list(feature_names(embedder is not None)):
            raise UsageError(
                f"{path} was fitted on other features: retrain it with `fastslow train swift-rerank`"
            )
        booster = _lightgbm().Booster(model_str=payload["booster"])
        return cls(
            booster,
            int(payload["depth"]),
            dict(payload["verbs"]),
            dict(payload["tasks"]),
            str(payload["linear_sha256"]),
            dict(payload["meta"]),
            None if embedder is None else str(embedder),
        )


class RerankSwift:
    """``Proposer``: the linear ranker's top ``depth`` re-ordered by the reranker (module contract)."""

    name = "rerank"

    def __init__(
        self,
        linear: ImitationSwift,
        reranker: Reranker,
        linear_sha256: str,
        embedder: Callable[[], tuple[str, Encoder]] | None = None,
    ) -> None:
        """``embedder``: makes the sentence encoder (its space's name, its ``encode``); called only
        when the reranker was fitted with the ``SEMANTIC`` columns, and refused unless its space is the
        one they were fitted in."""
        reranker.require_linear(linear_sha256)
        self.linear = linear
        self.reranker = reranker
        self.top_k = linear.top_k
        self.encode: Encoder | None = None
        if reranker.embedder is not None:
            if embedder is None:
                raise UsageError("this reranker reads sentence embeddings: no embedder was given")
            name, self.encode = embedder()
            if name != reranker.embedder:
                raise UsageError(
                    f"this reranker was fitted on {reranker.embedder} embeddings, not {name}: "
                    "install the embed extra (pip install -e '.[embed]')"
                )

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        state = self.linear.state_of(traj, memories)
        if not state.valid_actions:
            return Proposal((), 0.0)
        linear = self.linear
        table = linear.table_for(traj.semantics)
        ids = table.ids(state.valid_actions)
        r = self.reranker
        pool = pool_features(
            table,
            ids,
            state,
            linear.weights.w,
            r.depth,
            r.verbs,
            r.tasks,
            linear.box_features,
            self.encode,
            linear.scratch,
            linear.weights.evidence,
            linear.weights.states,
        )
        # one thread: LightGBM's OpenMP start costs more than 30 rows of trees (1.5 ms against 0.13 ms)
        second = np.asarray(r.booster.predict(pool.x.astype(np.float64), num_threads=1), dtype=np.float64)
        order = pool.positions[np.argsort(-second, kind="stable")]
        chosen = order[: self.top_k].tolist()
        if len(chosen) < self.top_k:
            rest = np.argsort(-pool.linear, kind="stable")[len(order) :]
            chosen += rest[: self.top_k - len(chosen)].tolist()
        # The pool's linear scores, handed out in the reranked order: the safety policy's penalties keep
        # the linear scale, and candidates below the pool stay below it.
        scores = dict(zip(order.tolist(), pool.linear[pool.positions].tolist(), strict=True))
        confidence = float(pool.probs[chosen[0]])
        ranked = tuple(
            RankedAction(state.valid_actions[i], float(scores.get(i, pool.linear[i]))) for i in chosen
        )
        return Proposal(ranked, confidence)


# -- training -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RerankSettings:
    depth: int = DEFAULT_DEPTH
    rounds: int = 400
    """Most boosting rounds; early stopping on the validation episodes picks fewer."""
    learning_rate: float = 0.05
    leaves: int = 31
    valid_every: int = 4
    """Every n-th held-out episode validates (early stopping, the reported top-1) instead of training."""
    seed: int = 0


def add_semantic(
    pools: Sequence[Pool],
    examples: Sequence[Any],
    table: ActionTable,
    encode: Encoder,
    say: Callable[[str], None],
) -> None:
    """Append the ``SEMANTIC`` columns to each training pool: every distinct text encoded once, in large
    batches (a call per decision, as at play time, spends most of its time on per-call overhead)."""
    t0 = time.perf_counter()
    texts: dict[str, None] = {}
    for pool, e in zip(pools, examples, strict=True):
        texts.update(dict.fromkeys(table.strings[i] for i in e.ids[pool.positions].tolist()))
        texts[e.state.task_description] = None
        if e.state.history:
            texts[e.state.history[-1][0]] = None
    ordered = list(texts)
    vectors = np.asarray(encode(ordered), dtype=np.float32)
    row = {text: i for i, text in enumerate(ordered)}

    def lookup(batch: Sequence[str]) -> FloatArray:
        return vectors[[row[t] for t in batch]]

    for pool, e in zip(pools, examples, strict=True):
        strings = [table.strings[i] for i in e.ids[pool.positions].tolist()]
        pool.x = np.hstack([pool.x, semantic_features(strings, e.state, lookup)])
    say(f"{len(ordered)} distinct texts encoded ({time.perf_counter() - t0:.0f} s)")


def train_rerank(
    data: Path,
    weights: SwiftWeights,
    linear_sha256: str,
    settings: RerankSettings = RerankSettings(),
    progress: Callable[[str], None] | None = None,
    embedder: tuple[str, Encoder] | None = None,
) -> tuple[Reranker, dict[str, Any]]:
    """Fit the second stage on the episodes of ``data`` the linear ``weights`` held out (module
    docstring); returns the reranker and a report with both stages' top-1 on the validation episodes.
    ``embedder`` (its space's name, its encoder) adds the ``SEMANTIC`` columns."""
    from fastslow.swift.train import dataset_semantics, load_examples

    lgb = _lightgbm()
    say = progress or (lambda _line: None)
    encode = embedder[1] if embedder is not None else None
    t0 = time.perf_counter()
    listed = weights.meta.get("held_out", [])
    held = {str(e) for e in listed} if isinstance(listed, list) else set()
    if not held:
        raise UsageError(
            "these linear weights held no episode out: train them with `fastslow train swift "
            "--holdout-every N`, so the reranker learns from scores on steps the linear model did not see"
        )
    table = ActionTable(dataset_semantics(data))
    examples, _, stats = load_examples(data, table, only=held)
    if not examples:
        raise UsageError(f"{data} holds none of the episodes these weights held out")
    episodes = sorted({e.episode for e in examples})
    valid_eps = set(episodes[:: settings.valid_every]) if len(episodes) > 1 else set()
    verbs: dict[str, int] = {}
    tasks: dict[str, int] = {}
    for e in examples:
        tasks.setdefault(e.state.task_name, len(tasks) + 1)
        for i in e.ids.tolist():
            verbs.setdefault(table.semantics.verb_of(table.strings[i]), len(verbs) + 1)
    parts: dict[bool, tuple[list[FloatArray], list[FloatArray], list[int]]] = {
        True: ([], [], []),
        False: ([], [], []),
    }
    linear_hits = {True: 0, False: 0}
    steps = {True: 0, False: 0}
    skipped = 0
    scratch = Scratch()
    pools = [
        pool_features(
            table,
            e.ids,
            e.state,
            weights.w,
            settings.depth,
            verbs,
            tasks,
            scratch=scratch,
            evidence=weights.evidence,
            states=weights.states,
        )
        for e in examples
    ]
    if encode is not None:
        add_semantic(pools, examples, table, encode, say)
    for e, pool in zip(examples, pools, strict=True):
        is_valid = e.episode in valid_eps
        steps[is_valid] += 1
        linear_hits[is_valid] += int(pool.positions[0] == e.gold)
        where = np.flatnonzero(pool.positions == e.gold)
        if not len(where):
            skipped += 1  # the gold action is below the pool: the second stage cannot pick it
            continue
        y = np.zeros(len(pool.positions), dtype=np.float32)
        y[where[0]] = 1.0
        xs, ys, groups = parts[is_valid]
        xs.append(pool.x)
        ys.append(y)
        groups.append(len(y))
    say(f"{steps[False]} training and {steps[True]} validation steps ({time.perf_counter() - t0:.0f} s)")
    if not parts[False][2]:
        raise UsageError("no training step has its gold action in the linear top-depth")
    names = feature_names(encode is not None)
    categorical = [names.index(c) for c in CATEGORICAL]
    params = {
        "objective": "lambdarank",
        "metric": "ndcg",
        "ndcg_eval_at": [1],
        "learning_rate": settings.learning_rate,
        "num_leaves": settings.leaves,
        "min_data_in_leaf": 20,
        "seed": settings.seed,
        "deterministic": True,
        "num_threads": 1,
        "verbose": -1,
    }

    def dataset(key: bool, reference: Any = None) -> Any:
        xs, ys, groups = parts[key]
        return lgb.Dataset(
            np.concatenate(xs),
            np.concatenate(ys),
            group=groups,
            feature_name=list(names),
            categorical_feature=categorical,
            reference=reference,
            free_raw_data=False,
        )

    train_set = dataset(False)
    callbacks = [lgb.log_evaluation(0)]
    valid_sets = []
    if parts[True][2]:
        valid_sets = [dataset(True, train_set)]
        callbacks.append(lgb.early_stopping(30, verbose=False))
    booster = lgb.train(params, train_set, settings.rounds, valid_sets=valid_sets, callbacks=callbacks)
    report: dict[str, Any] = {
        **stats,
        "train_steps": steps[False],
        "valid_steps": steps[True],
        "gold_below_depth": skipped,
        "rounds": booster.best_iteration or booster.current_iteration(),
        "train_s": round(time.perf_counter() - t0, 1),
    }
    if steps[True]:
        hits = 0
        for x, y in zip(parts[True][0], parts[True][1], strict=True):
            scores = booster.predict(x.astype(np.float64), num_iteration=report["rounds"], num_threads=1)
            hits += int(y[int(np.argmax(scores))] == 1.0)
        report["valid_top1_linear"] = round(linear_hits[True] / steps[True], 4)
        report["valid_top1_rerank"] = round(hits / steps[True], 4)
    say(f"fitted {report['rounds']} rounds in {report['train_s']} s")
    meta = {**report, "episodes": episodes, "valid_episodes": sorted(valid_eps)}
    reranker = Reranker(
        booster, settings.depth, verbs, tasks, linear_sha256, meta, embedder[0] if embedder else None
    )
    return reranker, report
