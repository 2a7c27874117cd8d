"""The LLM side of the agent on TextWorldExpress (issue 50): Sage's prompts, grounding, constrained shapes
and the Critic's prompt speak the episode's world, from its ``WorldSemantics`` and its train demos; the
paper authors' profile is ScienceWorld's and is refused elsewhere in one line.

Every state is a real TextWorldExpress state (one JVM for the module). The model is scripted where a test
reads a prompt (what is sent does not depend on the reply); the embedded SmolLM2 plays the configurations
in the slow end-to-end test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastslow.build import check_world
from fastslow.cli import main
from fastslow.config import load_config
from fastslow.controller.config import SageRunConfig
from fastslow.controller.grounding import Grounder
from fastslow.controller.parsing import numbered_readable, numbered_shape, parse_actions
from fastslow.controller.sage import PlanRequest, Sage
from fastslow.core.trajectory import Trajectory
from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter
from fastslow.env.textworldexpress.benchmark import FOLDS, load_benchmark
from fastslow.env.textworldexpress.demos import demos_for, demos_path, load_demos
from fastslow.env.textworldexpress.semantics import SEMANTICS
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.events import EnvStep, ModelCall, StagnationReport, read_events
from fastslow.models.scripted import ScriptedModel
from fastslow.reflection.critic.llm import critic_action_list, critic_shape, render_critic_prompt

COOKING, TWC, COIN = 0, 1, 2
DEV = 10000
CONFIGS = ("twx-constrained-baseline", "twx-constrained-amm", "twx-constrained-srm", "twx-constrained-full")
SCIENCEWORLD_WORDS = re.compile(r"teleport|focus on|ScienceWorld|science experiment|wait1")


@pytest.fixture(scope="module")
def twx() -> Iterator[TextWorldExpressAdapter]:
    adapter = TextWorldExpressAdapter()
    yield adapter
    adapter.close()


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``fastslow ARGS`` in this process: (exit code, stdout, stderr)."""
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def start(env: TextWorldExpressAdapter, game: int, seed: int = DEV) -> Trajectory:
    first = env.reset(game, seed)
    info = get_world("textworldexpress").task(game)
    return Trajectory(info.task_id, info.name, seed, first.task_description, first, SEMANTICS)


def test_sage_prompts_speak_textworldexpress_and_show_a_train_demo(twx: TextWorldExpressAdapter) -> None:
    traj = start(twx, COOKING)
    traj.record("look around", "swift", twx.step("look around"))
    cfg = load_config("twx-constrained-baseline").controller.sage
    messages = Sage(ScriptedModel(["x"]), cfg).messages(PlanRequest(traj=traj, step=1))
    system, user = messages[0]["content"], messages[1]["content"]
    assert "TextWorldExpress" in system and "move LOC | open door to LOC" in system
    assert not SCIENCEWORLD_WORDS.search(system + user)
    demo = demos_for(COOKING)[0]
    assert f"(task: {demo.task})" in user and all(line in user for line in demo.lines)
    # the demo is a train episode's, never one the evaluation plays
    assert demo.variation in FOLDS["train"]
    assert all(d.variation in load_benchmark().set_seeds("train") for ds in load_demos().values() for d in ds)
    off = Sage(ScriptedModel(["x"]), SageRunConfig(prompt="swiftsage")).messages(
        PlanRequest(traj=traj, step=1)
    )
    assert "An example" not in off[1]["content"]


def test_grounding_and_reading_use_the_worlds_words(twx: TextWorldExpressAdapter) -> None:
    traj = start(twx, COIN)
    valid = traj.current.valid_actions
    grounder = Grounder(valid, SEMANTICS)
    hit = grounder.ground("Pick up the coin.", cutoff=80)
    assert "take coin" not in valid or (hit is not None and hit.action == "take coin")
    door = next(a for a in valid if a.startswith("open door to "))
    assert (grounder.ground(door.upper() + ".", cutoff=80) or pytest.fail("no grounding")).action == door
    # a hyphenated object is one action word here, so the constrained list can write it
    line = "1. take clean teal T-shirt -> You take it."
    assert re.fullmatch(numbered_shape(5, SEMANTICS).pattern(), line)
    assert [p.action for p in parse_actions(line, SEMANTICS)] == ["take clean teal T-shirt"]
    assert numbered_readable(valid, SEMANTICS) == list(valid)
    # a one-line reply is an action only when it starts like one of this world's
    assert [p.action for p in parse_actions("move north", SEMANTICS)] == ["move north"]
    assert parse_actions("teleport to kitchen", SEMANTICS) == []


def test_the_critic_prompt_and_shape_speak_textworldexpress(twx: TextWorldExpressAdapter) -> None:
    traj = start(twx, TWC)
    for action in ("look around", "look around", "inventory"):
        traj.record(action, "swift", twx.step(action))
    report = StagnationReport(step=3, pattern="repeated_action", evidence_steps=[1, 2])
    prompt = render_critic_prompt(report, traj, all_actions=True)
    assert "acting in TextWorldExpress" in prompt and "(move / open door to)" in prompt
    assert not SCIENCEWORLD_WORDS.search(prompt)
    listed = critic_action_list(traj)
    assert listed and set(listed) <= set(traj.current.valid_actions) and "look around" not in listed
    assert "[a-zA-Z0-9-]" in critic_shape(5, SEMANTICS).item


def test_the_authors_profile_is_refused_on_textworldexpress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in CONFIGS:
        check_world(load_config(name))  # SwiftSage's arbitration and prompts: no authors' part
    paper = load_config("constrained/baseline", ["env.world=textworldexpress", "env.valid_filter=none"])
    with pytest.raises(UsageError, match=r"controller\.loop: authors.*ScienceWorld only"):
        check_world(paper)
    with pytest.raises(UsageError, match="has no plain demo"):
        check_world(load_config("baseline", ["controller.sage.demo=true"]))
    args = ["run", "-t", "coin", "-v", str(DEV), "-c", "constrained/baseline", "-o", "env.valid_filter=none"]
    code, _, err = cli(capsys, *args, "-o", "env.world=textworldexpress", "--out", str(tmp_path / "r"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "authors" in err, err
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_the_constrained_configs_play_a_twx_episode_with_the_embedded_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The full configuration plays a coin dev episode to 16 steps with SmolLM2: Sage is called, every
    model call answered, and every action the env got was one it knew."""
    out = tmp_path / "full"
    # coin dev seed 10002: Swift wanders until SwiftSage's no-progress rule calls Sage
    args = ["eval", "-c", "twx-constrained-full", "--set", "dev", "--tasks", "coin", "--variations", "10002"]
    code, _, err = cli(capsys, *args, "-o", "env.step_limit=16", "--out", str(out))
    assert code == 0, err
    assert json.loads((out / "metrics.json").read_text())["episodes"] == 1
    log = read_events(next((out / "events").glob("*.jsonl")))
    calls = [e for e in log if isinstance(e, ModelCall)]
    assert calls and all(c.error is None for c in calls)
    valid_steps = [e for e in log if isinstance(e, EnvStep)]
    assert valid_steps and all(not e.observation.startswith("Unknown action") for e in valid_steps)


def test_the_command_rebuilds_the_shipped_demos(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``fastslow data sage-demos --world textworldexpress`` replays the cached train gold paths into the
    file the package ships (the commit it was built at aside)."""
    out = tmp_path / "demos.json"
    code, stdout, err = cli(capsys, "data", "sage-demos", "--world", "textworldexpress", "--out", str(out))
    assert code == 0, err
    assert json.loads(stdout.strip().splitlines()[-1]) == {"tasks": 7, "demos": 7}
    built, shipped = json.loads(out.read_text()), json.loads(demos_path().read_text())
    for data in (built, shipped):
        data["provenance"].pop("commit")
    assert built == shipped
