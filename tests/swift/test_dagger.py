"""DAgger's on-policy rows (eval/dagger.py): the gold-path expert, the recorder on real ScienceWorld
episodes, and `fastslow data dagger` + `fastslow train swift --data GOLD --data DAGGER` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.semantics import OBSERVE_ONLY
from fastslow.eval.dagger import ExpertRecorder, GoldPath, GoldPointer, read_gold_paths
from fastslow.swift.data import read_episodes
from fastslow.swift.imitation import SwiftWeights
from fastslow.swift.train import label_of


def test_pointer_follows_the_path_skips_what_the_agent_left_out_and_reads_scores() -> None:
    path = GoldPath(
        ("teleport to kitchen", "look around", "open cupboard", "pick up cup", "focus on cup", "wait"),
        (0, 0, 0, 0, 50, 50),
    )
    valid = [
        "look around",
        "teleport to kitchen",
        "teleport to hallway",
        "open cupboard",
        "pick up cup",
        "focus on cup",
        "wait",
    ]
    p = GoldPointer(path)
    assert p.label(valid) == ("teleport to kitchen", "teleport to kitchen")
    p.advance("teleport to hallway", valid, 0)  # a detour: the expert still asks for the gold step
    assert p.label(valid) == ("teleport to kitchen", "teleport to kitchen")
    p.advance("teleport to kitchen", valid, 0)
    # the gold path's "look around" is left out: it changes nothing
    assert p.label(valid) == ("open cupboard", "open cupboard")
    p.advance("pick up cup", valid, 0)  # "open cupboard" was not needed: skipped
    assert p.label(valid) == ("focus on cup", "focus on cup")
    assert p.label(["look around"]) is None  # the next gold step is not valid here: no row
    p.advance("teleport to hallway", valid, 50)  # the score the gold path reaches at "focus on cup"
    assert p.label(valid) == ("wait", "wait")
    p.advance("wait", valid, 50)
    assert p.label(valid) is None  # the path is done


def test_pointer_does_not_skip_the_preparation_after_a_reward() -> None:
    """Reaching the score of step 1 moves the pointer past step 1, not past the steps after it that
    score nothing (they prepare the next reward)."""
    path = GoldPath(("a", "b", "c", "d"), (0, 10, 10, 100))
    valid = ["a", "b", "c", "d", "x"]
    p = GoldPointer(path)
    p.advance("x", valid, 10)
    assert p.label(valid) == ("c", "c")


def test_recorder_labels_gold_states_and_a_detour_on_real_episodes(gold_dir: Path) -> None:
    """Played along its own gold path, every recorded label is the action taken; after a detour to
    another room the label is the gold step still to do, and following the path again goes on."""
    paths = read_gold_paths(gold_dir)
    ((task_id, variation), path) = next(iter(paths.items()))
    rows = next(read_episodes(gold_dir))
    recorder = ExpertRecorder(ScienceWorldAdapter(simplification="easy"), paths)
    try:
        result = recorder.reset(task_id, variation)
        for action in path.actions:
            result = recorder.step(action)
        assert result.score == 100

        # each state's label: the next gold step that is not observe-only, where it has a spelling (read
        # in the recorded state: ScienceWorld may name a growing plant otherwise in another JVM)
        def expected(t: int, valid: list[str]) -> str | None:
            j = next(j for j in range(t, len(path.actions)) if path.actions[j] not in OBSERVE_ONLY)
            return label_of(path.actions[j], valid)

        assert len(recorder.rows) >= len(rows) // 2
        played = [rows[r["step"]]["gold_action"] for r in recorder.rows]
        assert [r["agent_action"] for r in recorder.rows] == played
        for r in recorder.rows:
            assert r["label"] == expected(r["step"], r["valid_actions"]) and r["source"] == "dagger"
            if r["agent_action"] not in OBSERVE_ONLY:
                assert r["agent_action"] == r["gold_action"]
        missing = [t for t in range(len(rows)) if t not in {r["step"] for r in recorder.rows}]
        assert all(expected(t, rows[t]["valid_actions"]) is None for t in missing)

        # a detour where the gold path needs a labelled step: the expert keeps asking for that step
        k = next(r["step"] for r in recorder.rows if r["agent_action"] not in OBSERVE_ONLY)
        result = recorder.reset(task_id, variation)
        for action in path.actions[:k]:
            result = recorder.step(action)
        wanted = label_of(path.actions[k], result.valid_actions)
        ahead = {label_of(a, result.valid_actions) for a in path.actions[k : k + 3]}
        detour = next(a for a in ("inventory", "look around") if a in result.valid_actions and a not in ahead)
        assert detour not in {label_of(a, result.valid_actions) for a in path.actions}
        result = recorder.step(detour)
        result = recorder.step(path.actions[k])
        detoured = [r for r in recorder.rows if r["step"] >= k]
        assert [r["label"] for r in detoured[:2]] == [wanted, wanted]
        assert [r["agent_action"] for r in detoured[:2]] == [detour, path.actions[k]]
        assert detoured[1]["history"][-1]["action"] == detour
        assert len(detoured) == 2  # the next gold step has no valid spelling there: no third row yet
    finally:
        recorder.close()


def test_data_dagger_then_train_on_gold_and_on_policy_rows(
    gold_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fastslow data dagger` plays swift-only on the gold dataset's variation and writes labelled rows;
    a rerun resumes; `fastslow train swift` reads both datasets and its provenance names each."""
    out = tmp_path / "dagger"
    args = ["data", "dagger", "--gold", str(gold_dir), "--out", str(out), "--workers", "1"]
    main(args)
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["episodes"] == 1 and first["examples"] > 0 and first["skipped"] == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["split"], manifest["kind"], manifest["config"]) == ("train", "dagger", "swift-only")
    rows = [row for episode in read_episodes(out) for row in episode]
    assert len(rows) == first["examples"]
    for row in rows:
        assert row["label"] in row["valid_actions"]
        assert row["label"] == label_of(row["gold_action"], row["valid_actions"])
        assert row["agent_action"] in row["valid_actions"] or row["agent_action"]
    main(args)
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again == {**first, "skipped": 1}

    weights = tmp_path / "w.npz"
    both = ["--data", str(gold_dir), "--data", str(out)]
    main(["train", "swift", *both, "--epochs", "1", "--out", str(weights)])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    gold_rows = sum(len(r) for r in read_episodes(gold_dir))
    assert report["rows"] == gold_rows + len(rows)
    data = SwiftWeights.load(weights).meta["provenance"]["data"]
    assert [d["kind"] for d in data] == ["gold", "dagger"]
    assert [d["dir"] for d in data] == [str(gold_dir), str(out)]


def test_data_dagger_refuses_what_is_not_a_train_gold_dataset(
    tmp_path: Path, gold_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line and exit code 2, nothing written: a folder that is no gold dataset, or one of dev."""
    out = tmp_path / "o"
    with pytest.raises(SystemExit) as exc:
        main(["data", "dagger", "--gold", str(tmp_path), "--out", str(out)])
    assert exc.value.code == 2 and "is not a gold dataset" in capsys.readouterr().err
    fake = tmp_path / "dev"
    fake.mkdir()
    manifest = json.loads((gold_dir / "manifest.json").read_text())
    (fake / "manifest.json").write_text(json.dumps({**manifest, "split": "dev"}))
    with pytest.raises(SystemExit) as exc:
        main(["data", "dagger", "--gold", str(fake), "--out", str(out)])
    assert exc.value.code == 2 and "only train ones may be played" in capsys.readouterr().err
    assert not out.exists()
