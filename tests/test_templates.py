"""The one prompt-template environment (fastslow.templates): every prompt renders byte for byte as it did
with the environment each module used to build for itself.

Each module's former environment is written out below (``OLD``: loader, StrictUndefined and its layout
flags, copied from the module before the change); the test renders every prompt on a real state through
the module's own code path, once as it is and once with the module's templates taken from its former
environment, and compares the bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import jinja2
import pytest

import fastslow.controller.sage as sage_mod
import fastslow.memory.injection as injection_mod
import fastslow.reflection.critic.llm as critic_mod
import fastslow.swift.t5_format as t5_mod
from fastslow.controller.config import SageRunConfig
from fastslow.controller.sage import PlanRequest, Sage
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.events import StagnationReport
from fastslow.memory.injection import format_memory_block
from fastslow.memory.records import MemoryRecord, Tag
from fastslow.models.scripted import ScriptedModel
from fastslow.templates import prompt_env, prompt_template

_LOADER = jinja2.PackageLoader("fastslow", "prompts")
OLD: dict[str, jinja2.Environment] = {
    "sage": jinja2.Environment(
        loader=_LOADER,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    ),
    "critic": jinja2.Environment(
        loader=_LOADER, undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    ),
    "injection": jinja2.Environment(
        loader=_LOADER, undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False
    ),
    "t5": jinja2.Environment(loader=_LOADER, undefined=jinja2.StrictUndefined, autoescape=False),
}


@pytest.fixture(scope="module")
def traj(env: ScienceWorldAdapter) -> Trajectory:
    """Two rooms, a refusal and an invalid action: every loop of every template has something in it."""
    first = env.reset(0, 0)
    traj = Trajectory(0, "boil", 0, first.task_description, first, semantics=SEMANTICS)
    for action in ["teleport to kitchen", "open table", "look around", "xyzzy"]:
        traj.record(action, "swift", env.step(action))
    return traj


def _record(action: str, tag: Tag, observation: str = "You did it.") -> MemoryRecord:
    return MemoryRecord(
        task_id=0,
        task_name="boil",
        task_family="1",
        episode_id="e",
        step=3,
        room="kitchen",
        inventory="a thermometer",
        recent=("go to kitchen -> You move to the kitchen.",),
        action=action,
        observation=observation,
        score_before=2,
        score_after=5,
        tag=tag,
        subtag="progress",
    )


def _prompts(traj: Trajectory) -> dict[str, Any]:
    """Every prompt the four modules render, through their own code paths."""
    sage = Sage(ScriptedModel([]), SageRunConfig())
    request = PlanRequest(
        traj=traj,
        step=traj.current.steps,
        failures=[traj.turns[1], traj.turns[3]],
        suggestion=["open fridge", "look around"],
        memories=["a memory line"],
        memory_block="<<< BEGIN RETRIEVED MEMORIES\nx\n<<< END RETRIEVED MEMORIES >>>",
    )
    report = StagnationReport(
        step=4, pattern="invalid_loop", evidence_steps=[2, 4], avoid=["xyzzy"], constraints=["a constraint"]
    )
    records = [
        _record("activate stove", "success"),
        _record("move metal pot to stove", "near-miss"),
        _record("xyzzy", "avoidance", "No known action matches that input."),
    ]
    cur = traj.current
    return {
        "sage_plan": [m["content"] for m in sage.messages(request)],
        "sage_plan_bare": [m["content"] for m in sage.messages(PlanRequest(traj=traj, step=4))],
        "sage_ground": [m["content"] for m in sage._ground_messages(request, "1. open fridge")],
        "sage_retry": sage_mod.render("sage_ground_retry.j2", world=SEMANTICS.prompt_facts),
        "critic": critic_mod.render_critic_prompt(report, traj, ["a memory"]),
        "critic_bare": critic_mod.render_critic_prompt(report, traj),
        **{
            f"memory_{audience}_{budget}": format_memory_block(records, budget, audience).text
            for audience in ("swift", "sage", "critic")
            for budget in (5000, 450)
        },
        "t5": t5_mod.render_trajectory(traj, records[:1]),
        "t5_bare": t5_mod.render_v4(
            traj.task_description, 0, [], cur.look, cur.inventory, [], semantics=SEMANTICS
        ),
    }


def _old_templates(env: jinja2.Environment) -> Callable[..., jinja2.Template]:
    def get(name: str, **_layout: bool) -> jinja2.Template:
        return env.get_template(name)

    return get


MODULES: dict[str, ModuleType] = {
    "sage": sage_mod,
    "critic": critic_mod,
    "injection": injection_mod,
    "t5": t5_mod,
}


def test_every_prompt_renders_byte_identical(traj: Trajectory, monkeypatch: pytest.MonkeyPatch) -> None:
    now = _prompts(traj)
    for name, module in MODULES.items():
        monkeypatch.setattr(module, "prompt_template", _old_templates(OLD[name]))
    before = _prompts(traj)
    for key, text in now.items():
        assert text == before[key], key
    # The comparison is not vacuous: every prompt rendered, and the layouts do differ.
    assert all(now.values())
    assert now["critic"].endswith("\n") and not now["sage_retry"].endswith("\n")


def test_one_cached_environment_per_layout() -> None:
    assert prompt_env() is prompt_env()
    assert prompt_env(trim=True) is not prompt_env()
    assert prompt_template("critic.j2", keep_trailing_newline=True) is prompt_template(
        "critic.j2", keep_trailing_newline=True
    )
    env = prompt_env()
    assert isinstance(env.undefined, type) and issubclass(env.undefined, jinja2.StrictUndefined)
    assert env.autoescape is False
    with pytest.raises(jinja2.UndefinedError):
        prompt_template("swift_t5.j2").render()
