"""Embedded imitation Swift: training, proposals, memories, speed (paper §3, Swift)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastslow.bench.swift import bench_swift
from fastslow.cli import main
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.semantics import is_focus
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.errors import UsageError
from fastslow.swift.data import read_rows
from fastslow.swift.features import ContextSums, SwiftState, feature_index, linear_scores, words
from fastslow.swift.imitation import MEMORY_WEIGHTS, ImitationSwift, SwiftWeights, dense_global_index
from fastslow.swift.policy import SafetyPolicy
from fastslow.swift.train import GradientSums, TrainSettings, accuracy, label_of, load_examples, train


@dataclass(frozen=True)
class Hint:
    action: str
    observation: str
    tag: str


def test_training_fits_gold_actions_and_roundtrips(gold_dir: Path, tmp_path: Path) -> None:
    weights, report = train(gold_dir, TrainSettings(epochs=4))
    assert report["labelled"] >= 10
    path = tmp_path / "w.npz"
    weights.save(path)
    loaded = SwiftWeights.load(path)
    swift = ImitationSwift(loaded)
    examples, focus, _ = load_examples(gold_dir, swift.table_for(SEMANTICS))
    assert accuracy(loaded.w, swift.table_for(SEMANTICS), examples, loaded.evidence) >= 0.9
    assert focus["identify-life-stages-2"]
    # The gold action of every training step is proposed first.
    rows = list(read_rows(gold_dir))
    state = SwiftState.from_row(rows[1])
    top = state.valid_actions[int(np.argmax(swift.score_state(state, SEMANTICS)))]
    assert top == rows[1]["label"]


def test_weights_of_more_buckets_train_score_and_refuse_other_sizes(gold_dir: Path, tmp_path: Path) -> None:
    """``hash_bits`` sizes the weight vector; scoring reads the size from the weights; a file whose
    vector is not a power of two is refused."""
    weights, _ = train(gold_dir, TrainSettings(epochs=1, hash_bits=18))
    assert len(weights.w) == 1 << 18
    rows = list(read_rows(gold_dir))
    state = SwiftState.from_row(rows[1])
    swift = ImitationSwift(weights)
    assert state.valid_actions[int(np.argmax(swift.score_state(state, SEMANTICS)))] == rows[1]["label"]
    odd = tmp_path / "odd.npz"
    SwiftWeights(np.zeros(1000, dtype=np.float32)).save(odd)
    with pytest.raises(UsageError, match="power of two"):
        SwiftWeights.load(odd)


def test_gradient_sums_are_np_unique_and_bincount_without_the_sort() -> None:
    """Training's per-index sums equal the sort-based ones bit for bit (float32 values summed in
    float64, in the order they come), and the scratch is clean for the next call."""
    rng = np.random.default_rng(0)
    sums = GradientSums(1 << 12)
    for n in (1, 5_000, 32_000):
        flat = rng.integers(0, 1 << 12, n)
        flat[: n // 3] = flat[0]  # one index many times over
        values = rng.standard_normal(n).astype(np.float32)
        uniq, summed = sums(flat, values)
        want, inverse = np.unique(flat, return_inverse=True)
        order = np.argsort(uniq)
        assert np.array_equal(uniq[order], want)
        assert summed.dtype == np.float64
        assert np.array_equal(summed[order], np.bincount(inverse, weights=values))


def test_the_command_is_seeded_and_its_weights_name_their_data_and_code(
    gold_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fastslow train swift` twice on the same data: identical weights (only the training time differs),
    whose provenance names the
    dataset (its manifest's sha256 and size), the command and the code that trained them."""
    paths = [tmp_path / "a.npz", tmp_path / "b.npz"]
    for path in paths:
        main(["train", "swift", "--data", str(gold_dir), "--epochs", "1", "--out", str(path)])
    capsys.readouterr()
    first, second = (SwiftWeights.load(path) for path in paths)
    assert np.array_equal(first.w, second.w) and first.focus_words == second.focus_words
    timing = ("train_s",)
    assert {k: v for k, v in first.meta.items() if k not in timing} == {
        k: v for k, v in second.meta.items() if k not in timing
    }
    provenance = first.meta["provenance"]
    manifest = (gold_dir / "manifest.json").read_bytes()
    assert provenance["data"] == {
        "dir": str(gold_dir),
        "manifest_sha256": hashlib.sha256(manifest).hexdigest(),
        "split": "train",
        "kind": "gold",
        "episodes": json.loads(manifest)["episodes"],
        "examples": json.loads(manifest)["examples"],
    }
    assert provenance["command"] == [
        *("fastslow", "train", "swift", "--epochs", "1", "--holdout-every", "0", "--hash-bits", "20"),
        *("--seed", "0"),
    ]
    assert provenance["source"] and "git_commit" in provenance and provenance["fastslow"]
    other = tmp_path / "c.npz"
    main(["train", "swift", "--data", str(gold_dir), "--epochs", "1", "--seed", "1", "--out", str(other)])
    capsys.readouterr()
    reseeded = SwiftWeights.load(other)
    assert not np.array_equal(reseeded.w, first.w)
    assert reseeded.meta["provenance"]["command"][-2:] == ["--seed", "1"]
    both = tmp_path / "d.npz"
    main(["train", "swift", "--data", str(gold_dir), "--epochs", "1", "--seeds", "2", "--out", str(both)])
    capsys.readouterr()
    mean = SwiftWeights.load(both)
    # the seeds' mean, as saved (float16): the ensemble of the two rankers in one weight vector
    expected = ((first.w + reseeded.w) / 2).astype(np.float16).astype(np.float32)
    assert np.allclose(mean.w, expected, atol=2e-3)
    assert mean.meta["seeds"] == [0, 1] and mean.meta["provenance"]["command"][-2:] == ["--seeds", "2"]


def test_focus_data_widens_the_focus_words_and_nothing_else(
    gold_dir: Path,
    replay_gold: Callable[[Path, int, int], list[dict[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--focus-data D`: D's gold focus steps join the focus words (another train variation of the task
    focuses on another plant), the weights stay those of the training data alone, and the provenance
    names D."""
    other = tmp_path / "other"
    other.mkdir()
    task_id = int(next(read_rows(gold_dir))["task_id"])
    rows = replay_gold(other, task_id, get_task(task_id).variations["train"][1])
    plain, wide = tmp_path / "plain.npz", tmp_path / "wide.npz"
    main(["train", "swift", "--data", str(gold_dir), "--epochs", "1", "--out", str(plain)])
    main(
        [
            "train",
            "swift",
            "--data",
            str(gold_dir),
            "--focus-data",
            str(other),
            "--epochs",
            "1",
            "--out",
            str(wide),
        ]
    )
    capsys.readouterr()
    a, b = SwiftWeights.load(plain), SwiftWeights.load(wide)
    assert np.array_equal(a.w, b.w)
    task = rows[0]["task_name"]
    labels = [label_of(r["gold_action"], r["valid_actions"]) for r in rows]
    focus_labels = [label for label in labels if label is not None and is_focus(label)]
    added = b.focus_words[task] - a.focus_words[task]
    assert focus_labels and added, "the second variation focuses on objects the first did not"
    assert a.focus_words[task] < b.focus_words[task]
    assert added <= {w for label in focus_labels for w in words(label)}
    assert b.meta["focus_steps_added"] == len(focus_labels)
    assert b.meta["provenance"]["focus_data"][0]["dir"] == str(other)
    # A folder that is no dataset: one line, exit 2, no weights written.
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "train",
                "swift",
                "--data",
                str(gold_dir),
                "--focus-data",
                str(tmp_path / "none"),
                "--out",
                str(tmp_path / "x.npz"),
            ]
        )
    assert exc.value.code == 2 and "is not a gold dataset" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()


def test_packaged_model_proposes_valid_ranked_actions(env: ScienceWorldAdapter) -> None:
    task = get_task(0)
    variation = task.variations["test"][0]
    first = env.reset(0, variation)
    traj = Trajectory(0, task.name, variation, first.task_description, first, semantics=SEMANTICS)
    swift = ImitationSwift(top_k=5)
    proposal = swift.propose(traj)
    assert len(proposal.candidates) == 5
    assert all(c.action in first.valid_actions for c in proposal.candidates)
    scores = [c.score for c in proposal.candidates]
    assert scores == sorted(scores, reverse=True)
    assert 0.0 < proposal.confidence <= 1.0


def _with_memory_weights(weights: SwiftWeights, memory: dict[str, float]) -> SwiftWeights:
    w = weights.w.copy()
    for name, value in memory.items():
        w[dense_global_index(name, len(w))] = value
    return SwiftWeights(w, weights.focus_words, weights.meta)


def test_the_packaged_memory_weights_are_the_fitted_ones() -> None:
    """The packaged model's memory weights are what ``fastslow train swift-memory`` fitted (its report in
    the meta), not the hand-set ones ``fastslow train swift`` writes (issue #29, point 3)."""
    packaged = SwiftWeights.load()
    fitted = packaged.meta["memory_weights"]
    assert isinstance(fitted, dict)
    provenance = fitted["provenance"]
    assert isinstance(provenance, dict) and provenance["data"]["split"] == "train"
    for name, value in fitted["weights"].items():
        assert abs(float(packaged.w[dense_global_index(name, len(packaged.w))]) - value) < 1e-3
    assert fitted["weights"] != MEMORY_WEIGHTS


def test_memories_change_the_ranking(env: ScienceWorldAdapter) -> None:
    """The memory features move a candidate's score by their weights: the packaged ranker with the
    hand-set memory weights (the packaged ones are fitted and small, the test above)."""
    task = get_task(0)
    first = env.reset(0, task.variations["test"][0])
    traj = Trajectory(0, task.name, 0, first.task_description, first, semantics=SEMANTICS)
    swift = ImitationSwift(_with_memory_weights(SwiftWeights.load(), MEMORY_WEIGHTS), top_k=3)
    plain = swift.propose(traj)
    top, second = (c.action for c in plain.candidates[:2])
    state = SwiftState.from_trajectory(traj)
    before = swift.score_state(state, SEMANTICS).copy()
    # An avoidance memory on the top action lowers its score by the avoidance weight ...
    i = first.valid_actions.index(top)
    state.memories = [(top, "nothing happened", "avoidance")]
    assert float(swift.score_state(state, SEMANTICS)[i]) <= before[i] + MEMORY_WEIGHTS["mem_avoid"] + 1e-3
    # ... and a success memory on a low-ranked action lifts its score.
    low = next(a for a in first.valid_actions if a not in {c.action for c in plain.candidates})
    j = first.valid_actions.index(low)
    state.memories = [(low, "it worked", "success")]
    assert float(swift.score_state(state, SEMANTICS)[j]) >= before[j] + 3.0
    # Through the proposer: avoiding the top and a success on the runner-up change the ranking.
    hints = [Hint(top, "nothing happened", "avoidance"), Hint(second, "it worked", "success")]
    assert swift.propose(traj, hints).candidates[0].action == second


def test_scores_from_reused_arrays_equal_fresh_ones_bit_for_bit(env: ScienceWorldAdapter) -> None:
    """A decision's scratch arrays carry nothing from the last one: states with more, fewer and again
    more valid actions score bit for bit as with fresh arrays, and as ``(w[idx] * val).sum(axis=1)``
    over training's ``feature_index`` up to float32 rounding (``linear_scores`` groups the sum), with
    the same best action."""
    task = get_task(0)
    variation = task.variations["train"][0]
    first = env.reset(0, variation)
    traj = Trajectory(0, task.name, variation, first.task_description, first, semantics=SEMANTICS)
    swift = ImitationSwift(box_features=False)
    states = [SwiftState.from_trajectory(traj)]
    for action in [a for a in first.valid_actions if a.startswith("teleport to ")][:2]:
        traj.record(action, "scripted", env.step(action))
        states.append(SwiftState.from_trajectory(traj))
    big = max(states, key=lambda s: len(s.valid_actions))
    small = min(states, key=lambda s: len(s.valid_actions))
    assert len(big.valid_actions) > len(small.valid_actions)
    for state in (*states, big, small, big):
        reused = swift.score_state(state, SEMANTICS)
        ids = swift.table_for(SEMANTICS).ids(state.valid_actions)
        w = swift.weights
        fresh = linear_scores(
            swift.table_for(SEMANTICS), ids, state, w.w, False, evidence=w.evidence, states=w.states
        )
        assert np.array_equal(reused, fresh)
        idx, val = feature_index(
            swift.table_for(SEMANTICS),
            ids,
            state,
            False,
            buckets=len(w.w),
            evidence=w.evidence,
            states=w.states,
        )
        matrix = (w.w[idx] * val).sum(axis=1)
        np.testing.assert_allclose(reused, matrix, rtol=1e-5, atol=1e-5)
        assert np.argmax(reused) == np.argmax(matrix)


def test_context_sums_are_dropped_with_their_weights_and_task(env: ScienceWorldAdapter) -> None:
    """The sparse sums a scorer keeps per context key (``features.ContextSums``) are those of one
    weight vector and one task description: a decision with other weights, on another task, or after a
    step of this one (new context keys beside recurring ones, new actions) scores bit for bit as a
    scorer that keeps nothing, and the sums are kept only for ``limit`` context keys."""
    swift = ImitationSwift(box_features=False)
    swift.scratch.sums.limit = 12
    w = swift.weights

    def check(state: SwiftState, weights: np.ndarray) -> None:
        ids = swift.table_for(SEMANTICS).ids(state.valid_actions)
        kept = linear_scores(
            swift.table_for(SEMANTICS), ids, state, weights, False, swift.scratch, w.evidence, w.states
        )
        fresh = linear_scores(
            swift.table_for(SEMANTICS), ids, state, weights, False, evidence=w.evidence, states=w.states
        )
        assert np.array_equal(kept, fresh)

    states = []
    for task_id in (0, 13):
        task = get_task(task_id)
        variation = task.variations["train"][0]
        first = env.reset(task_id, variation)
        traj = Trajectory(task_id, task.name, variation, first.task_description, first, semantics=SEMANTICS)
        states.append(SwiftState.from_trajectory(traj))
        for action in [a for a in first.valid_actions if a.startswith("teleport to ")][:3]:
            traj.record(action, "scripted", env.step(action))
            states.append(SwiftState.from_trajectory(traj))
    doubled = w.w * 2
    for weights in (w.w, doubled, w.w):
        for state in (*states, states[0], states[-1]):
            check(state, weights)
    assert len(swift.scratch.sums._rows) <= 12
    with pytest.raises(ValueError, match="limit of at least 8"):  # keys of one call would share rows
        ContextSums(limit=4).rows(w.w, states[0].task_description, list(range(8)), 10)
    assert not np.array_equal(
        swift.score_state(states[0], SEMANTICS),
        linear_scores(
            swift.table_for(SEMANTICS),
            swift.table_for(SEMANTICS).ids(states[0].valid_actions),
            states[0],
            doubled,
            False,
        ),
    )


def test_bench_swift_reports_percentiles() -> None:
    result = bench_swift(ImitationSwift(top_k=50), SafetyPolicy(), n_actions=800, decisions=20)
    assert result["valid_actions"] == 800
    assert 0 < result["p50_ms"] <= result["p95_ms"] <= result["max_ms"]
