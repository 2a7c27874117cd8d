"""The LightGBM second stage of Swift (swift/rerank.py): fitted only on episodes the linear weights held
out, saved and loaded whole, tied to its linear weights, and played through the config on real
ScienceWorld."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.errors import UsageError
from fastslow.eval.evaluate import evaluate
from fastslow.events import SwiftProposal, read_events
from fastslow.models.embeddings import MINILM_NAME, minilm_available, minilm_encoder
from fastslow.swift import check_swift, make_proposer
from fastslow.swift.config import SwiftConfig
from fastslow.swift.data import episode_file, replay_episode, write_manifest
from fastslow.swift.features import ActionTable
from fastslow.swift.imitation import ImitationSwift, SwiftWeights
from fastslow.swift.rerank import (
    FEATURES,
    SEMANTIC,
    Encoder,
    Pool,
    Reranker,
    RerankSettings,
    RerankSwift,
    add_semantic,
    pool_features,
    sha256_of,
    train_rerank,
)
from fastslow.swift.train import Example, TrainSettings, load_examples, train

pytest.importorskip("lightgbm")

#: identify-life-stages-2 (14-16 step gold paths) and find-non-living-thing (2 steps): train variations.
EPISODES = [(13, v) for v in get_task(13).variations["train"][:4]] + [
    (17, v) for v in get_task(17).variations["train"][:2]
]


@pytest.fixture(scope="module")
def gold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gold")
    env = ScienceWorldAdapter(simplification="easy")
    try:
        for task_id, variation in EPISODES:
            rows, _ = replay_episode(env, task_id, variation)
            with gzip.open(episode_file(out, task_id, variation), "wt", encoding="utf-8") as fh:
                fh.writelines(json.dumps(row) + "\n" for row in rows)
    finally:
        env.close()
    write_manifest(out, "train", len(EPISODES), "easy")
    return out


@pytest.fixture(scope="module")
def fitted(gold: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, object]]:
    """Linear weights holding every 2nd episode out, and a reranker fitted through the command."""
    root = tmp_path_factory.mktemp("fitted")
    weights, _ = train(gold, TrainSettings(epochs=2, holdout_every=2))
    linear = root / "linear.npz"
    weights.save(linear)
    rerank = root / "rerank.json"
    main(["train", "swift-rerank", "--data", str(gold), "--weights", str(linear), "--out", str(rerank)])
    return linear, rerank, weights.meta


def test_the_reranker_learns_only_from_held_out_episodes(
    fitted: tuple[Path, Path, dict[str, object]], gold: Path
) -> None:
    linear, path, meta = fitted
    held = meta["held_out"]
    assert isinstance(held, list) and 0 < len(held) < len(EPISODES)
    reranker = Reranker.load(path)
    assert set(reranker.meta["episodes"]) == set(held)
    assert set(reranker.meta["valid_episodes"]) < set(held)
    assert reranker.linear_sha256 == sha256_of(linear)
    report = reranker.meta
    assert report["train_steps"] > 0 and report["valid_steps"] > 0 and report["rounds"] >= 1
    assert 0 <= float(report["valid_top1_rerank"]) <= 1 and 0 <= float(report["valid_top1_linear"]) <= 1
    # loaded whole: the same scores as the booster it was saved from, on a real pool
    table = ActionTable(SEMANTICS)
    examples, _, _ = load_examples(gold, table)
    weights = SwiftWeights.load(linear)
    pool = pool_features(
        table, examples[3].ids, examples[3].state, weights.w, 30, reranker.verbs, reranker.tasks
    )
    assert pool.x.shape == (min(30, len(examples[3].ids)), len(FEATURES))
    again = Reranker.load(path)
    assert np.array_equal(reranker.booster.predict(pool.x), again.booster.predict(pool.x))


def test_weights_that_held_nothing_out_are_refused(gold: Path) -> None:
    weights, _ = train(gold, TrainSettings(epochs=1))
    with pytest.raises(UsageError, match="--holdout-every"):
        train_rerank(gold, weights, "x" * 64, RerankSettings(rounds=5))


def test_a_reranker_runs_only_on_the_linear_weights_it_was_fitted_on(
    fitted: tuple[Path, Path, dict[str, object]],
) -> None:
    linear, path, _ = fitted
    ours = SwiftConfig(backend="rerank", model_path=str(linear), rerank_path=str(path))
    check_swift(ours)
    assert make_proposer(ours).name == "rerank"
    packaged = SwiftConfig(backend="rerank", rerank_path=str(path))  # the packaged linear weights
    with pytest.raises(UsageError, match="other linear weights"):
        check_swift(packaged)
    with pytest.raises(UsageError, match="other linear weights"):
        make_proposer(packaged)
    with pytest.raises(ValueError, match="rerank_path"):
        SwiftConfig(backend="rerank")
    with pytest.raises(ValueError, match="only by backend rerank"):
        SwiftConfig(rerank_path=str(path))
    assert isinstance(make_proposer(SwiftConfig(model_path=str(linear))), ImitationSwift)


def test_swift_only_plays_with_the_reranker(
    fitted: tuple[Path, Path, dict[str, object]], tmp_path: Path
) -> None:
    """The config path end to end: a dev episode of task 13, Swift's proposals from the second stage."""
    linear, path, _ = fitted
    overrides = ["swift.backend=rerank", f"swift.model_path={linear}", f"swift.rerank_path={path}"]
    config = load_config("swift-only", [*overrides, "env.step_limit=6"])
    episode = Episode(13, get_task(13).variations["dev"][0])
    metrics = evaluate(config, [episode], tmp_path / "run")
    assert metrics["episodes"] == 1 and metrics["errors"] == 0
    proposals = [
        e
        for e in read_events(tmp_path / "run" / "events" / f"{episode.episode_id}.jsonl")
        if isinstance(e, SwiftProposal)
    ]
    assert proposals and all(p.proposer == "rerank" and p.candidates for p in proposals)
    # scores on the linear scale, in the reranked order: the policy's penalties compare like with like
    assert all(p.scores == sorted(p.scores, reverse=True) for p in proposals)


needs_minilm = pytest.mark.skipif(not minilm_available(), reason="the embed extra (MiniLM) is not installed")


@pytest.fixture(scope="module")
def semantic(
    fitted: tuple[Path, Path, dict[str, object]], gold: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A reranker fitted through the command with MiniLM's similarity columns, on the same linear weights."""
    if not minilm_available():
        pytest.skip("the embed extra (MiniLM) is not installed")
    linear, _, _ = fitted
    out = tmp_path_factory.mktemp("semantic") / "rerank-semantic.json"
    main(
        [
            "train",
            "swift-rerank",
            "--data",
            str(gold),
            "--weights",
            str(linear),
            "--semantic",
            "--out",
            str(out),
        ]
    )
    return out


@needs_minilm
def test_the_semantic_columns_are_minilm_cosines_of_the_candidate(
    fitted: tuple[Path, Path, dict[str, object]], semantic: Path, gold: Path
) -> None:
    linear, _, _ = fitted
    reranker = Reranker.load(semantic)
    assert reranker.embedder == MINILM_NAME and reranker.features == (*FEATURES, *SEMANTIC)
    table = ActionTable(SEMANTICS)
    examples, _, _ = load_examples(gold, table)
    example = next(e for e in examples if len(e.state.history) >= 2)
    name, encode = minilm_encoder()
    assert name == reranker.embedder
    w = SwiftWeights.load(linear).w

    def pool_of(e: Example, encoder: Encoder | None = None) -> Pool:
        return pool_features(table, e.ids, e.state, w, 30, reranker.verbs, reranker.tasks, encode=encoder)

    pool = pool_of(example, encode)
    assert pool.x.shape == (min(30, len(example.ids)), len(FEATURES) + len(SEMANTIC))
    actions = [table.strings[i] for i in example.ids[pool.positions].tolist()]
    last_action = example.state.history[-1][0]
    a = encode(actions)
    task, action = encode([example.state.task_description, last_action])
    sem = pool.x[:, len(FEATURES) :]
    assert np.allclose(sem[:, 0], a @ task, atol=1e-5)
    assert np.allclose(sem[:, 1], a @ task - (a @ task).max(), atol=1e-5)
    assert np.allclose(sem[:, 2], a @ action, atol=1e-5)
    # training encodes every distinct text once, in bulk: the same columns as a decision's own calls
    bulk = [pool_of(e) for e in examples[:5]]
    add_semantic(bulk, examples[:5], table, encode, lambda _line: None)
    for e, trained in zip(examples[:5], bulk, strict=True):
        live = pool_of(e, encode)
        assert np.allclose(trained.x, live.x, atol=1e-4)
    # the same model and its predictions after a reload
    assert np.array_equal(reranker.booster.predict(pool.x), Reranker.load(semantic).booster.predict(pool.x))


@needs_minilm
def test_a_semantic_reranker_needs_the_embedding_space_it_was_fitted_in(
    fitted: tuple[Path, Path, dict[str, object]], semantic: Path
) -> None:
    linear, _, _ = fitted
    config = SwiftConfig(backend="rerank", model_path=str(linear), rerank_path=str(semantic))
    with pytest.raises(UsageError, match="reads sentence embeddings"):
        make_proposer(config)
    lexical = ("lexical-hash", lambda texts: np.zeros((len(texts), 8), dtype=np.float32))
    with pytest.raises(UsageError, match=f"fitted on {MINILM_NAME} embeddings, not lexical-hash"):
        make_proposer(config, embedder=lambda: lexical)
    assert isinstance(make_proposer(config, embedder=minilm_encoder), RerankSwift)


@needs_minilm
def test_swift_only_plays_with_the_semantic_reranker(
    fitted: tuple[Path, Path, dict[str, object]], semantic: Path, tmp_path: Path
) -> None:
    """The config path composes MiniLM for a reranker that reads it: a dev episode of task 13."""
    linear, _, _ = fitted
    overrides = ["swift.backend=rerank", f"swift.model_path={linear}", f"swift.rerank_path={semantic}"]
    config = load_config("swift-only", [*overrides, "env.step_limit=6"])
    episode = Episode(13, get_task(13).variations["dev"][0])
    metrics = evaluate(config, [episode], tmp_path / "run")
    assert metrics["episodes"] == 1 and metrics["errors"] == 0
    proposals = [
        e
        for e in read_events(tmp_path / "run" / "events" / f"{episode.episode_id}.jsonl")
        if isinstance(e, SwiftProposal)
    ]
    assert proposals and all(p.proposer == "rerank" and p.candidates for p in proposals)
