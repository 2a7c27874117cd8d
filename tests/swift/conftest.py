"""Fixtures for Swift tests: a tiny gold dataset replayed from one real train episode."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.swift.data import episode_file, replay_episode, write_manifest

#: identify-life-stages-2: a 14-step gold path.
GOLD_TASK = 13


ReplayGold = Callable[[Path, int, int], list[dict[str, Any]]]


def _replay_gold(out: Path, task_id: int, variation: int) -> list[dict[str, Any]]:
    """Replay one train variation's gold path into dataset folder ``out`` (its file and a manifest, as
    ``fastslow data gold`` writes them) and return the rows.

    A JVM of its own: the session's shared one has played other tests' episodes, and ScienceWorld's
    gold path (and object naming) after earlier resets can differ, which made this data, and the
    training test's accuracy, depend on the order the tests ran in."""
    env = ScienceWorldAdapter(simplification="easy")
    try:
        rows, _ = replay_episode(env, task_id, variation)
    finally:
        env.close()
    with gzip.open(episode_file(out, task_id, variation), "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    write_manifest(out, "train", 1, "easy")
    return rows


@pytest.fixture(scope="session")
def replay_gold() -> ReplayGold:
    """``replay_gold(out, task_id, variation)``: a gold dataset of one real train episode in ``out``."""
    return _replay_gold


@pytest.fixture(scope="session")
def gold_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gold")
    _replay_gold(out, GOLD_TASK, get_task(GOLD_TASK).variations["train"][0])
    return out
