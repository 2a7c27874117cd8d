"""Attribution and forks of AMM's action prior in a ``--stream`` run (issue 51 part 3; ``memory.prior``,
``events.MemoryPrior``, ``eval.fork``, ``eval.attribute``).

Real TextWorldExpress JVMs and SQLite stores, no mocks: twx-swift-amm (the prior on) plays the first 4 twc
dev seeds as a stream. Checked: each ``memory_prior`` event names a change the step's action shows, and
every episode it names as an endorser played at an earlier stream position; ``attribute --mechanism
memory-prior`` forks whose control repeats the parent and whose off-fork's first own action is Swift's own
top; a fork of a stream episode plays on the store as that episode read it (no record of its position or
later, whenever written), and a configuration without the prior logs no such event. And ``--mechanism
t4-injection``: a Sage round forked with T4 off plans on the prompt without the memory block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fastslow.cli import main
from fastslow.eval.attribute import Point, attribute, mechanism_points
from fastslow.eval.fork import fork_episode, read_parent
from fastslow.events import EnvStep, EpisodeStart, MemoryInjection, MemoryPrior, ModelCall, read_events
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores.sqlite import SqliteStore

GAMES = ["--set", "dev", "--tasks", "twc", "--limit-per-task", "4"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("prior-attr") / "run"
    main(["eval", "--config", "twx-swift-amm", *GAMES, "--stream", "--workers", "1", "--out", str(out)])
    return out


def _positions(run: Path) -> dict[str, int]:
    out = {}
    for log in (run / "events").glob("*.jsonl"):
        start = read_events(log)[0]
        assert isinstance(start, EpisodeStart) and start.stream_position is not None
        out[start.episode_id] = start.stream_position
    return out


def _records(path: Path) -> list[MemoryRecord]:
    store = SqliteStore(path, readonly=True)
    try:
        return list(store.iter_all())
    finally:
        store.close()


def test_each_prior_event_names_its_change_and_earlier_endorsers(run: Path) -> None:
    positions = _positions(run)
    seen = 0
    for log in sorted((run / "events").glob("*.jsonl")):
        events = read_events(log)
        steps = {e.step: e for e in events if isinstance(e, EnvStep)}
        for e in (e for e in events if isinstance(e, MemoryPrior)):
            seen += 1
            assert e.action != e.proposed
            # The step's reason carries the prior's note, for the action it put first.
            assert f", prior {e.action} ({e.vote:+d})" in steps[e.step + 1].reason
            assert len(set(e.records)) == len(e.records)
            if e.vote > 0:
                assert e.endorsed_by and e.records
            if e.rivals:
                assert e.proposed_vote == 0 and e.records
            # No warm-up here: every endorser and disputer is an episode of this run, played earlier.
            for writer in e.endorsed_by + e.disputed_by:
                assert positions[writer] < positions[log.stem], (log.stem, e.step, writer)
            # its vote: its endorsers less its disputers (who are not logged)
            assert e.vote <= len(e.endorsed_by)
    assert seen, "the prior never changed Swift's top"
    assert mechanism_points(run, "memory-prior")


def test_attribution_forks_the_prior_off_at_one_step(run: Path, tmp_path: Path) -> None:
    payload = attribute(run, "memory-prior", tmp_path, limit=3, seed=0)
    assert payload["diverged"] == 0 and payload["replayed"] == payload["exact"] == 3
    score = payload["score"]
    assert score["better"] + score["same"] + score["worse"] == 3
    for row in payload["points"]:
        point = Point(**row["point"])
        assert row["control"] == row["parent"]  # the control repeated the parent: the same scores
        parent = read_events(run / "events" / f"{point.episode}.jsonl")
        (event,) = [e for e in parent if isinstance(e, MemoryPrior) and e.step == point.step]
        base = tmp_path / "forks" / point.name
        off = read_events(base / "off" / "events" / f"{point.episode}.jsonl")
        start = off[0]
        assert isinstance(start, EpisodeStart)
        assert start.config["intervention"] == {"mechanism": "memory-prior", "step": point.step}
        (first,) = [e for e in off if isinstance(e, EnvStep) and e.step == point.at]
        assert first.action == event.proposed and ", prior " not in first.reason
        # off at that step only: no prior event there, and the same prior acts at later steps
        assert not [e for e in off if isinstance(e, MemoryPrior) and e.step == point.step]
        control = read_events(base / "control" / "events" / f"{point.episode}.jsonl")
        (same,) = [e for e in control if isinstance(e, EnvStep) and e.step == point.at]
        assert same.action == event.action


def test_a_fork_of_a_stream_episode_reads_the_store_the_episode_read(run: Path, tmp_path: Path) -> None:
    positions = _positions(run)
    run_id = json.loads((run / "run.json").read_text(encoding="utf-8"))["run_id"]
    episode = max(positions, key=lambda i: positions[i])  # the last position: every other is earlier
    k = positions[episode]
    final = _records(run / "memory.sqlite")
    assert {r.episode_id for r in final} == {f"{run_id}/{i}" for i in positions}
    parent = read_parent(run, episode)
    result = fork_episode(parent, 1, parent.config, tmp_path / "fork")
    before = [r for r in final if positions[r.episode_id.split("/", 1)[1]] < k]
    assert result.store is not None
    assert result.store["copied"] == len(final)
    assert result.store["copied"] - result.store["removed_later"] - result.store["removed_own"] == len(before)
    # The fork's store: what the episode read (the earlier positions' records, ids and all) plus the
    # fork's own writes (under its own run id), nothing of the parent's episodes at k or later.
    fork_id = json.loads((tmp_path / "fork" / "run.json").read_text(encoding="utf-8"))["run_id"]
    records = _records(tmp_path / "fork" / "memory.sqlite")
    inherited = {r.id for r in records if not r.episode_id.startswith(f"{fork_id}/")}
    assert inherited == {r.id for r in before}
    # ... so the fork under the parent's configuration repeats it step for step
    mine = [
        (e.action, e.score)
        for e in read_events(tmp_path / "fork" / "events" / f"{episode}.jsonl")
        if isinstance(e, EnvStep)
    ]
    theirs = [(s.action, s.score) for s in parent.steps]
    assert mine == theirs


def test_without_the_prior_no_prior_event_is_logged(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "off"
    args = ["--config", "twx-swift-amm", *GAMES[:4], "--limit-per-task", "2", "--stream"]
    main(["eval", *args, "-o", "amm.retrieval.prior=false", "--out", str(out)])
    logs: list[dict[str, Any]] = [
        json.loads(line) for p in (out / "events").glob("*.jsonl") for line in p.read_text().splitlines()
    ]
    assert logs and not [e for e in logs if e["event"] == "memory_prior"]


def test_t4_switched_off_at_one_step_leaves_sage_its_baseline_prompt(tmp_path: Path) -> None:
    """A scripted Sage (the real controller and world) on twx-constrained-amm, a stream of two twc dev
    episodes: the second's Sage round gets T4 memories from the first; forked with T4 off there, the
    round plans on the prompt without the block."""
    run = tmp_path / "run"
    sage = ["sage.model.kind=scripted", 'sage.model.replies=["1. look around"]', "sage.model.cycle=true"]
    overrides = [*sage, "controller.sage.constrain=none", "env.step_limit=30"]
    args = ["--config", "twx-constrained-amm", "--set", "dev", "--tasks", "twc", "--limit-per-task", "2"]
    main(["eval", *args, "--stream", *(a for o in overrides for a in ("-o", o)), "--out", str(run)])
    points = mechanism_points(run, "t4-injection")
    assert points
    payload = attribute(run, "t4-injection", tmp_path / "attr", limit=1)
    assert payload["replayed"] == payload["exact"] == 1
    point = Point(**payload["points"][0]["point"])
    base = tmp_path / "attr" / "forks" / point.name

    def plan_prompts(kind: str) -> list[str]:
        events = read_events(base / kind / "events" / f"{point.episode}.jsonl")
        calls = [
            e for e in events if isinstance(e, ModelCall) and e.role == "sage_plan" and e.step == point.step
        ]
        assert calls
        return [m["content"] for c in calls for m in c.messages or []]

    def injected(kind: str) -> list[MemoryInjection]:
        events = read_events(base / kind / "events" / f"{point.episode}.jsonl")
        return [
            e for e in events if isinstance(e, MemoryInjection) and e.trigger == "T4" and e.step == point.step
        ]

    (block,) = injected("control")
    assert any(block.text in m for m in plan_prompts("control"))
    assert not injected("off") and not any("RETRIEVED MEMORIES" in m for m in plan_prompts("off"))
