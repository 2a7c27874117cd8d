"""Fixtures for Swift tests: a tiny gold dataset replayed from one real train episode."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from fastslow.env.scienceworld import ScienceWorldAdapter
from fastslow.env.tasks import get_task
from fastslow.swift.data import episode_file, replay_episode, write_manifest

if TYPE_CHECKING:
    pass

#: identify-life-stages-2: a 14-step gold path.
GOLD_TASK = 13


@pytest.fixture(scope="session")
def gold_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gold")
    variation = get_task(GOLD_TASK).variations["train"][0]
    # A JVM of its own: the session's shared one has played other tests' episodes, and ScienceWorld's
    # gold path (and object naming) after earlier resets can differ, which made this data, and the
    # training test's accuracy, depend on the order the tests ran in.
    env = ScienceWorldAdapter(simplification="easy")
    try:
        rows, _ = replay_episode(env, GOLD_TASK, variation)
    finally:
        env.close()
    with gzip.open(episode_file(out, GOLD_TASK, variation), "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    write_manifest(out, "train", 1, "easy")
    return out
