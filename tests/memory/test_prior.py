"""AMM's action prior (``memory.prior``, ``amm.retrieval.prior``; issue 51, memory that helps on the job).

Real TextWorldExpress JVMs, no mocks: twx-swift-amm (prior on) plays the first 4 twc dev seeds as a stream.
Checked: a later episode's Swift top was raised by the prior to an action an earlier episode of the stream
was rewarded for, and it earned a reward again; every vote the logs show comes from an episode at an
earlier position; the fitted weights' provenance names only dev and train seeds; the paper
configurations keep the prior off.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.memory.prior import fitted, fitted_file

PRIOR_NOTE = re.compile(r", prior (.+) \(\+(\d+)\)$")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("prior") / "run"
    games = ["--set", "dev", "--tasks", "twc", "--limit-per-task", "4"]
    main(["eval", "--config", "twx-swift-amm", *games, "--stream", "--workers", "1", "--out", str(out)])
    return {p.stem: _lines(p) for p in sorted((out / "events").glob("*.jsonl"))}


def test_an_earlier_rewarded_action_raises_the_later_episodes_candidate(
    stream: dict[str, list[dict[str, Any]]],
) -> None:
    positions = {i: log[0]["stream_position"] for i, log in stream.items()}
    assert sorted(positions.values()) == [0, 1, 2, 3]
    header = stream[min(stream)][0]
    assert header["config"]["amm"]["retrieval"]["prior"] is True
    rewarded: dict[str, set[str]] = {}  # action -> episodes rewarded for it
    for episode_id, log in stream.items():
        for e in log:
            if e["event"] == "env_step" and e["reward"] > 0:
                rewarded.setdefault(e["action"].lower(), set()).add(episode_id)
    raised = []
    for episode_id, log in stream.items():
        for e in log:
            m = PRIOR_NOTE.search(e.get("reason", "")) if e["event"] == "env_step" else None
            if m is None:
                continue
            action, vote = m.group(1), int(m.group(2))
            assert action == e["action"]
            if vote == 0:
                continue  # the top changed because a candidate above it was disputed
            earlier = {w for w in rewarded.get(action.lower(), set()) if positions[w] < positions[episode_id]}
            # A positive vote needs that many earlier episodes rewarded for the action (no warm-up here).
            assert len(earlier) >= vote > 0, (episode_id, e["step"], action)
            raised.append((episode_id, action, e["reward"]))
    assert raised, "the prior never raised an action"
    assert any(reward > 0 for _, _, reward in raised), raised
    # Position 0 has no earlier episode: nothing can be endorsed there.
    first = next(i for i, k in positions.items() if k == 0)
    assert not any(episode_id == first for episode_id, _, _ in raised)


def test_the_fitted_weights_name_only_dev_and_train_seeds() -> None:
    data = fitted_file()
    weights = fitted()
    assert weights.bonus == data["bonus"] >= 0 and weights.penalty == data["penalty"] >= 0
    provenance = data["provenance"]
    text = json.dumps(provenance)
    assert "--set test" not in text and '"test"' not in text
    assert provenance["sets"] and set(provenance["sets"]) <= {"dev", "train"}
    for seed in provenance["seeds"]:
        assert 10000 <= seed <= 10999 or 100 <= seed <= 199, seed  # dev, or train past the warm-up
    grid = provenance["grid"]
    chosen = [r for r in grid if (r["bonus"], r["penalty"]) == (data["bonus"], data["penalty"])]
    assert chosen, "the chosen weights are a row of the grid"


@pytest.mark.parametrize(
    "name", ["baseline", "amm", "srm", "full", "paper", "paper-amm", "paper-full", "swift-amm"]
)
def test_the_prior_is_off_outside_the_textworldexpress_fast_pathway(name: str) -> None:
    assert load_config(name).amm.retrieval.prior is False


@pytest.mark.parametrize("name", ["twx-swift-amm", "twx-swift-amm-srm"])
def test_the_prior_is_on_in_the_textworldexpress_fast_pathway(name: str) -> None:
    cfg = load_config(name)
    assert cfg.amm.enabled and cfg.amm.retrieval.prior is True
    assert cfg.amm.retrieval.prior_bonus is None and cfg.amm.retrieval.prior_penalty is None
