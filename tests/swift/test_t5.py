"""T5 Swift (SwiftSage's configuration): fine-tune a tiny random T5 for 2 steps on real rows, decode.

Nothing is downloaded: the tokenizer is a word-level one built here from the dataset's own words, and
the model is a randomly initialised 1-layer T5. Skipped when the optional extra `t5` is missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.swift.data import read_rows
from fastslow.swift.t5 import T5Swift, seq2seq_pairs
from integration.tiny_t5 import tiny_t5

pytest.importorskip("transformers")
pytest.importorskip("torch")
pytest.importorskip("accelerate")
pytest.importorskip("tokenizers")


def tiny_checkpoint(gold_dir: Path, out: Path) -> Path:
    words = (w for source, target in seq2seq_pairs(gold_dir) for w in (source + " " + target).split())
    return tiny_t5(words, out)


def test_input_follows_swiftsage_layout(gold_dir: Path) -> None:
    """The training input of a gold step in SwiftSage's v4 layout (test_t5_format.py pins the bytes)."""
    row = list(read_rows(gold_dir))[12]
    text = seq2seq_pairs(gold_dir)[12][0]
    parts = text.split(" </s> ")
    assert parts[0].startswith("Your task is to focus on the life stages")
    assert parts[1] == f"Time: {row['step'] + 1}; Score: {row['score']};"
    assert parts[2] == "Action history:"
    assert parts[3].startswith("<extra_id_10> ") and 1 <= parts[3].count(" --> ") <= 10
    assert parts[4].startswith("Current environment: This")
    assert parts[-2:] == [" What action should you do next?", ""]
    assert "\n" not in text and "\t" not in text


def test_tiny_t5_finetunes_and_decodes(
    gold_dir: Path, tmp_path: Path, env: ScienceWorldAdapter, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fastslow train swift-t5` on the gold dataset, end to end: the command's report, then the tuned
    checkpoint played as a Swift."""
    base = tiny_checkpoint(gold_dir, tmp_path / "base")
    capsys.readouterr()
    tuned = str(tmp_path / "tuned")
    args = ["--data", str(gold_dir), "--base", str(base), "--out", tuned, "--max-steps", "2"]
    main(["train", "swift-t5", *args])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["steps"] == 2 and report["pairs"] >= 10
    swift = T5Swift(tuned, top_k=3, num_beams=5, max_new_tokens=16)
    task = get_task(13)
    first = env.reset(13, task.variations["train"][0])
    proposal = swift.propose(Trajectory(13, task.name, 0, first.task_description, first, semantics=SEMANTICS))
    assert 1 <= len(proposal.candidates) <= 3
    assert all(isinstance(c.action, str) for c in proposal.candidates)
    scores = [c.score for c in proposal.candidates]
    assert scores == sorted(scores, reverse=True)
    assert 0.0 < proposal.confidence <= 1.0
    # SwiftSage's in-place history cleaning depends on the states Swift was asked at: its own calls.
    traj = Trajectory(13, task.name, 0, first.task_description, first, semantics=SEMANTICS)
    assert swift._renamed_lines(traj) == 0
    traj.record("look around", "swift", env.step("look around"))
    traj.record("look around", "sage", env.step("look around"))
    assert swift._renamed_lines(traj) == 1
    assert swift._renamed_lines(traj) == 3
