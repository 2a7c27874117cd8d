"""SRM wired the way docs/srm.md tells the controller to: Gate-1 before every env.step (a drop costs no
step, the next candidate is tried), detector + Critic after every step, Critic actions into the FIFO
buffer; then the SRM counters computed back from the JSONL log. Also: the config section and its
paper defaults."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from fastslow.config import RunConfig, load_config
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.errors import UsageError
from fastslow.eval.metrics import srm_usage
from fastslow.events import (
    EndState,
    EpisodeEnd,
    EpisodeStart,
    FanOut,
    GateDecision,
    JsonlWriter,
    ListSink,
    read_events,
)
from fastslow.reflection.srm import Srm
from reflection.helpers import act, start


def test_loop_with_gate_detector_and_rules_critic(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    config = load_config("oracle", ["srm.enabled=true", "critic.kind=rules"])
    log = tmp_path / "events" / "02-0000.jsonl"
    memory = ListSink()
    with JsonlWriter(log) as writer:
        sink = FanOut(writer, memory)
        # a log begins with its episode's header (events.iter_events reads no other)
        header = EpisodeStart(
            episode_id="02-0000", task_id=2, task_name="t", variation=0, split="train",
            config_name=config.name, config={}, versions={},
        )  # fmt: skip
        sink.emit(header)
        traj = start(env)
        srm = Srm.for_episode(config.srm, config.critic, traj.current, sink=sink)
        assert srm is not None and srm.gate is not None
        buffer: deque[str] = deque()
        for _ in range(15):
            # A stuck "Swift": an unparseable action first, then the same look again and again.
            candidates = (
                [(buffer.popleft(), "critic")]
                if buffer
                else [("Fly!", "swift"), ("look at picture", "swift")]
            )
            for proposed, source in candidates:
                decision = srm.gate.check(proposed, traj.current, traj, srm.constraints(traj), source=source)
                if decision.accepted:
                    act(env, traj, decision.action, source)
                    break
            else:
                act(env, traj, "look around", "fallback")  # every Critic action dropped: the loop goes on
            buffer.extend(srm.after_step(traj))
        srm.finish(traj)
        sink.emit(
            EpisodeEnd(end=EndState.STEP_LIMIT, final_score=traj.current.score, steps=15, moves=0, wall_s=1)
        )
    assert len(traj.turns) == 15 and "Fly!" not in {t.action for t in traj.turns}
    assert {t.source for t in traj.turns} >= {"swift", "critic"}
    decisions = [e for e in memory.events if isinstance(e, GateDecision)]
    assert len(decisions) > 15  # drops cost checks, never env steps
    usage = srm_usage([read_events(log)])
    assert usage["episodes"] == 1
    assert usage["gate_drops_by_reason"]["not_admissible"] >= 5
    assert usage["stagnation_by_pattern"].get("repeated_action", 0) >= 1
    assert 1 <= usage["critic_calls"] <= 3
    assert usage["gate_drops_per_episode"] == usage["gate_outcomes"]["drop"]
    assert usage["critic_calls_per_episode"] == usage["critic_calls"]


def test_srm_off_means_no_component(env: ScienceWorldAdapter) -> None:
    traj = start(env)
    assert Srm.for_episode(RunConfig().srm, RunConfig().critic, traj.current, sink=ListSink()) is None
    no_critic = load_config(
        "oracle", ["srm.enabled=true", "srm.critic.enabled=false", "srm.gate.enabled=false"]
    )
    srm = Srm.for_episode(no_critic.srm, no_critic.critic, traj.current, sink=ListSink())
    assert srm is not None and srm.gate is None and srm.detector is not None and srm.critic is None


def test_config_defaults_are_the_papers() -> None:
    cfg = RunConfig()
    assert cfg.srm.enabled is False  # baseline by default
    s = cfg.srm.stagnation
    assert (s.window, s.min_step, s.repeated_observation, s.repeated_action, s.verb_loop) == (5, 5, 3, 2, 3)
    assert (s.navigation_steps, s.navigation_max_states) == (4, 2)
    c = cfg.critic
    assert (c.kind, c.budget, c.cooldown, c.backoff, c.max_actions) == ("llm", 3, 5, 10, 5)
    over = load_config("oracle", ["critic.budget=6", "srm.gate.repairs=[normalize, alias]"])
    assert over.critic.budget == 6 and over.srm.gate.repairs == ["normalize", "alias"]
    with pytest.raises(UsageError, match="unknown key"):
        load_config("oracle", ["srm.gate.typo=1"])
    with pytest.raises(UsageError):
        load_config("oracle", ["srm.gate.repairs=[guess]"])
