"""Learning Swift's T1 memory weights (memory/t1_weights.py): real gold replays of train variations, a
real SQLite store filled by AMM's own write path, the fit through the command."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.events import ListSink
from fastslow.memory.episode import EpisodeMemory
from fastslow.memory.stores import open_store
from fastslow.memory.t1_weights import (
    MEMORY_FEATURES,
    Example,
    FitSettings,
    _loss,
    choose_episodes,
    collect,
    fit,
    store_episodes,
)
from fastslow.swift.data import episode_file, read_episodes, replay_episode, replay_rows, write_manifest
from fastslow.swift.imitation import MEMORY_WEIGHTS, SwiftWeights, dense_global_index
from fastslow.swift.train import TrainSettings, train

#: find-animal-like tasks have 6-step gold paths whose teleports and moves recur across variations.
EPISODES = [(6, v) for v in get_task(6).variations["train"][:6]]


def _name(rows: list[dict[str, Any]]) -> str:
    return f"{int(rows[0]['task_id']):02d}-{int(rows[0]['variation']):04d}"


def write(memory: EpisodeMemory, rows: list[dict[str, Any]]) -> None:
    """AMM's write path over one gold episode, step by step as the controller calls it."""
    previous = None
    for _, traj in replay_rows(rows, SEMANTICS):
        if previous is not None:
            memory.after_step(traj, traj.turns[-1].action, previous, traj.current)
        previous = traj.current


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Gold rows, linear weights holding every 2nd episode out, and a store written from two of the
    episodes those weights trained on (AMM's salience gate deciding what is kept)."""
    root = tmp_path_factory.mktemp("t1fit")
    gold = root / "gold"
    gold.mkdir()
    env = ScienceWorldAdapter(simplification="easy")
    try:
        for task_id, variation in EPISODES:
            rows, _ = replay_episode(env, task_id, variation)
            with gzip.open(episode_file(gold, task_id, variation), "wt", encoding="utf-8") as fh:
                fh.writelines(json.dumps(row) + "\n" for row in rows)
    finally:
        env.close()
    write_manifest(gold, "train", len(EPISODES), "easy")
    weights, _ = train(gold, TrainSettings(epochs=1, holdout_every=2))
    linear = root / "linear.npz"
    weights.save(linear)
    db = root / "memory.sqlite"
    amm = load_config("swift-amm", [f"amm.path={db}"]).amm
    store = open_store(amm)
    held = set(weights.meta["held_out"])  # type: ignore[arg-type]
    writers = [rows for rows in read_episodes(gold) if _name(rows) not in held][:2]
    for rows in writers:
        # named as a run's warm-up names its episodes
        write(EpisodeMemory(amm, store, ListSink(), f"0123abcd/warmup/{_name(rows)}"), rows)
    written = store_episodes(store)
    store.close()
    return {"gold": gold, "linear": linear, "db": db, "held": held, "written": written, "amm": amm}


def test_the_fit_reads_held_out_episodes_against_the_store(
    fixture: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(fixture["written"]) == 2 and not fixture["written"] & fixture["held"]
    out = tmp_path / "fitted.npz"
    main(
        [
            "train", "swift-memory", "--data", str(fixture["gold"]), "--store", str(fixture["db"]),
            "--weights", str(fixture["linear"]), "--out", str(out),
        ]
    )  # fmt: skip
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # the questions: the held-out episodes; the store's episodes and the other trained one left out
    assert report["episodes"] == len(fixture["held"]) == 3
    assert report["skipped"] == {"in_store": 2, "trained_linear": 1}
    assert report["store_episodes"] == 2
    assert 0 < report["swift_failed"] <= report["labelled"] <= report["steps"]
    assert 0 < report["states"] <= report["swift_failed"] - report["gold_vetoed"]
    assert 0 < report["examples"] <= report["retries"]
    assert set(report["gold_decisions"]) == {"no_memory", "hand", "fitted"}
    assert all(0 <= v <= 1 for v in report["gold_decisions"].values())
    # the convex fit is at least as good as the hand-set weights and no memory, on its own examples
    assert report["loss"]["fitted"] <= report["loss"]["hand"] + 0.05
    assert report["loss"]["fitted"] <= report["loss"]["no_memory"] + 0.05
    linear = SwiftWeights.load(fixture["linear"])
    fitted = SwiftWeights.load(out)
    columns = [dense_global_index(n, len(linear.w)) for n in MEMORY_FEATURES]
    assert [round(float(fitted.w[c]), 2) for c in columns] == pytest.approx(
        [report["weights"][n] for n in MEMORY_FEATURES], abs=0.02
    )
    others = np.ones(len(linear.w), dtype=bool)
    others[columns] = False
    assert np.array_equal(fitted.w[others], linear.w[others])  # nothing else changes
    assert fitted.meta["memory_weights"] == report
    assert fitted.meta["held_out"] == linear.meta["held_out"]
    assert fitted.focus_words == linear.focus_words


def test_the_fitted_weights_minimise_the_objective(fixture: dict[str, Any]) -> None:
    weights = SwiftWeights.load(fixture["linear"])
    db = fixture["db"]
    store = open_store(fixture["amm"])
    try:
        episodes, _ = choose_episodes(fixture["gold"], weights, store_episodes(store))
        states, counts = collect(episodes, weights, fixture["amm"], store)
    finally:
        store.close()
    examples = [e for state in states for e in state.examples()]
    assert db.is_file() and examples and counts["swift_failed"] >= len(states) > 0
    assert all(0 <= e.gold < len(e.base) and np.isfinite(e.base).all() for e in examples)
    settings = FitSettings()
    w = fit(examples, settings)
    best = _loss(w, examples, settings.l2)[0]
    hand = np.asarray([MEMORY_WEIGHTS[n] for n in MEMORY_FEATURES])
    for other in (np.zeros(4), hand, w + 0.5, w - 0.5):
        assert best <= _loss(other, examples, settings.l2)[0] + 1e-6
    assert float(np.abs(_loss(w, examples, settings.l2)[1]).max()) < 1e-3  # a stationary point


def test_newton_recovers_the_weights_that_generated_the_choices() -> None:
    """Maximum likelihood on choices sampled from softmax(base + x.w): the fit finds w."""
    rng = np.random.default_rng(0)
    truth = np.asarray([2.5, 0.8, -3.0, 1.2])
    examples = []
    for _ in range(1500):
        base = rng.normal(size=6).astype(np.float32)
        x = (rng.random((6, 4)) < 0.3).astype(np.float32)
        s = base + x @ truth
        p = np.exp(s - s.max())
        gold = int(rng.choice(6, p=p / p.sum()))
        examples.append(Example(base, x, gold, "synthetic"))
    w = fit(examples, FitSettings(l2=0.0))
    assert w == pytest.approx(truth, abs=0.35)


def store_episodes_unchecked(store: Any) -> list[str]:
    return [r.episode_id for r in store.iter_all()]


def test_bad_input_is_one_line(
    fixture: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["train", "swift-memory", "--data", str(fixture["gold"]), "--out", str(tmp_path / "w.npz")]
    cases = [
        (["--store", str(tmp_path / "missing.sqlite")], "memory store not found"),
        (["--store", str(fixture["db"]), "--config", "swift-only"], "does not run T1"),
        (["--store", str(fixture["db"]), "--l2", "-1"], "--l2"),
    ]
    empty = load_config("swift-amm", [f"amm.path={tmp_path / 'empty.sqlite'}"]).amm
    open_store(empty).close()
    cases.append((["--store", str(tmp_path / "empty.sqlite")], "holds no record"))
    # a store that also holds a dev episode's records (an online run's) is refused
    mixed = load_config("swift-amm", [f"amm.path={tmp_path / 'mixed.sqlite'}"]).amm
    store = open_store(mixed)
    dev = get_task(6).variations["dev"][0]
    rows = next(iter(read_episodes(fixture["gold"])))
    write(EpisodeMemory(mixed, store, ListSink(), f"0123abcd/06-{dev:04d}"), rows)
    assert store_episodes_unchecked(store)
    store.close()
    cases.append((["--store", str(tmp_path / "mixed.sqlite")], "not train variations"))
    for extra, message in cases:
        with pytest.raises(SystemExit) as exc:
            main([*base, *extra])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "w.npz").exists()
