"""Sage's authors' profile (``controller.sage.prompt: authors``): prompts, parse, demos, on real states.

The fixtures ``fixtures/sage_authors_{plan,plan_lite,ground}.txt`` are our prompts for the state that
``SCRIPT`` reaches (boil, test variation 21, a fresh ScienceWorld 1.2.3 JVM). They were checked by an
independent route, outside this repository: the same episode was played again, the authors' loop lists
kept as ``eval_agent_fast_slow.py`` keeps them (actions seeded with "look around", observations with
"N/A", the room after each step by their ``get_current_room``, the latest look of each room, every
failure message by their ``is_action_failed``), and a scratch script executed the authors'
``compose_prompt_to_plan`` (versions "full" and "lite") and ``compose_prompt_to_nextactions`` from the
source text of their ``eval_utils.py`` (with ``formalize_action``/``recover_action`` from their
``data_utils.py``) on that state, with our shipped demos in their list form. Section by section, in the
same order, the two carry the same content: the demo (text form in the plan, FUNC form and both demos in
the grounding), the task, the 18 history entries of the full plan (moves alone, "repeated 1" after
entry 15) and the last 15 of the lite one (observations only, other rooms left out), the looks of the
bathroom and the hallway, the current look and inventory, "focused on nothing", the instinct, the three
failure messages, the five questions with the whitelist "substance"; in the grounding the last 10 FUNC
history lines (examine and look-around steps left out), the advice with "Question" read "Advice", and the
same 10 allowed action types. The deliberate differences are the wording, whitespace (a multi-line
observation is one line here) and the order of the failure messages (theirs is a set's). Nothing here
imports their code; the fixtures are our output, unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.helpers import ScriptedSwift, is_plan_prompt, sage_replies
from fastslow.build import build_swiftsage
from fastslow.config import AgentConfig, EnvConfig, RunConfig, load_config
from fastslow.controller.authors_sage import AuthorsPrompts
from fastslow.controller.config import ControllerConfig, SageRunConfig
from fastslow.controller.parsing import PlanFormatError, parse_authors
from fastslow.controller.sage import PlanRequest, Sage
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.demos import build_demo, demos_for, demos_path, fold_repeats, load_demos
from fastslow.env.scienceworld.func_actions import from_func, to_func
from fastslow.env.scienceworld.tasks import all_tasks, get_task
from fastslow.env.scienceworld.valid import authors_failed
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.errors import UsageError
from fastslow.eval.runner import run_episode
from fastslow.events import ListSink
from fastslow.models import estimate_tokens
from fastslow.models.scripted import ScriptedModel

FIXTURES = Path(__file__).parent / "fixtures"
TASK, VARIATION = 0, 21  # boil, a test variation ("boil lead")
SCRIPT = [
    "teleport to kitchen",
    "pick up thermometer",
    "open cupboard",
    "pick up metal pot",
    "teleport to hallway",
    "look around",
    "teleport to kitchen",
    "move metal pot to sink",
    "activate sink",
    "deactivate sink",
    "pick up metal pot",
    "focus on substance in metal pot",
    "look around",
    "examine metal pot",
    "look around",
    "examine stove",
    "look around",
    "open table",
]
INSTINCT = "move metal pot to stove"
PLAN = "Question 1: You need water and a pot.\nQuestion 2: The pot is in the cupboard."
State = tuple[Trajectory, list[Turn]]
AUTHORS = SageRunConfig(prompt="authors", history_turns=15, parse_retries=0, max_failures=100)


def play(env: ScienceWorldAdapter, task: int, variation: int, actions: list[str]) -> State:
    """The trajectory after ``actions`` and its failure messages (the authors' test)."""
    first = env.reset(task, variation)
    traj = Trajectory(
        task, get_task(task).name, variation, first.task_description, first, semantics=SEMANTICS
    )
    failures = []
    for action in actions:
        traj.record(action, "swift", env.step(action))
        if authors_failed(traj.turns[-1].observation):
            failures.append(traj.turns[-1])
    return traj, failures


@pytest.fixture(scope="module")
def state(env: ScienceWorldAdapter) -> State:
    return play(env, TASK, VARIATION, SCRIPT)


def prompts(state: State, cfg: SageRunConfig = AUTHORS, **request: object) -> dict[str, str]:
    traj, failures = state
    req = PlanRequest(traj, traj.current.steps, failures, instinct=INSTINCT, **request)  # type: ignore[arg-type]
    sage = Sage(ScriptedModel(["unused"]), cfg, prompts=AuthorsPrompts)
    lite = Sage(
        ScriptedModel(["unused"]), cfg.model_copy(update={"lite_above_tokens": 0}), prompts=AuthorsPrompts
    )
    return {
        "plan": sage.messages(req)[0]["content"],
        "plan_lite": lite.messages(req)[0]["content"],
        "ground": sage._ground_messages(req, PLAN)[0]["content"],
    }


# -- prompts ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["plan", "plan_lite", "ground"])
def test_prompts_on_a_real_state_are_the_checked_fixtures(state: State, name: str) -> None:
    assert prompts(state)[name] == (FIXTURES / f"sage_authors_{name}.txt").read_text(encoding="utf-8")


def test_the_plan_prompt_has_the_authors_sections_in_their_order(state: State) -> None:
    text = prompts(state)["plan"]
    marks = [
        "Example task: ",
        "Now I have a new experiment",
        "The rooms here are",
        "What I have done for this task so far",
        "What I saw in rooms I visited before:",
        "Where I am now:",
        "In your inventory",
        "I have not focused on anything yet.",
        "I am not sure what to do next.",
        f"My first thought is to {INSTINCT} now",
        "Some of my earlier actions failed:",
        *(f"Question {n}:" for n in range(1, 6)),
    ]
    places = [text.index(mark) for mark in marks]
    assert places == sorted(places)
    assert "A focus is only possible on these: substance." in text
    # One user message: the authors send no system message.
    traj, failures = state
    messages = Sage(ScriptedModel(["x"]), AUTHORS, prompts=AuthorsPrompts).messages(
        PlanRequest(traj=traj, step=1, failures=failures)
    )
    assert [m["role"] for m in messages] == ["user"]
    assert "My first thought" not in messages[0]["content"]  # no instinct: no line


def test_the_grounding_prompt_has_two_demos_the_history_in_func_form_and_the_format(
    state: State,
) -> None:
    text = prompts(state)["ground"]
    demos = demos_for(TASK)
    assert f"Example task 1: {demos[0].task}" in text and f"Example task 2: {demos[1].task}" in text
    history = text.split("My last 10 actions and what I observed:\n")[1].split("\nI have not focused")[0]
    assert len(history.splitlines()) == 10
    assert history.splitlines()[-1] == "- (in kitchen) Action: OPEN(table) --> The table is not openable."
    assert "EXAMINE(" not in history and "SEE()" not in history  # examine cleaned, look around not in demo
    assert "Advice 1: You need water" in text and "Question" not in text.split("advised me:")[1]
    assert text.endswith(
        "Action 1: FUNC(arguments) --> expected observation\n"
        "Action 2: FUNC(arguments) --> expected observation\n..."
    )


def test_a_long_plan_prompt_goes_lite_and_drops_the_memory_block(state: State) -> None:
    block = "<<< BEGIN RETRIEVED MEMORIES\nm\n<<< END RETRIEVED MEMORIES >>>"
    full = prompts(state, memory_block=block)["plan"]
    assert full.startswith(block) and "What I saw in rooms" in full
    short = AUTHORS.model_copy(update={"lite_above_tokens": estimate_tokens(full)})
    lite = prompts(state, short, memory_block=block)["plan"]
    assert lite == prompts(state)["plan_lite"]  # the authors rebuild it without memories or looks
    history = lite.split("what I observed:\n")[1].split("\nWhere I am now")[0].splitlines()
    # Lite: observations only; two kitchen looks say the same and are listed once (15 of 18 entries).
    assert len(history) == 15 and history[-1].startswith("15. ") and "-->" not in "".join(history)


def test_an_over_long_prompt_is_clipped_to_the_budget(state: State) -> None:
    full = prompts(state)
    budget = 1500
    clipped = prompts(state, AUTHORS.model_copy(update={"prompt_budget_tokens": budget}))
    for name in ("plan", "ground"):
        assert estimate_tokens(full[name]) > budget >= estimate_tokens(clipped[name])
    assert "Question 5:" in clipped["plan"] and "Answer in this format:" in clipped["ground"]
    assert "Example task 2:" not in clipped["ground"]
    # A budget no prompt can meet: everything that may go is gone, and the rest is still sent.
    tiny = prompts(state, AUTHORS.model_copy(update={"prompt_budget_tokens": 10}))
    assert "Question 5:" in tiny["plan"] and "- (in " not in tiny["plan"]
    assert "Answer in this format:" in tiny["ground"] and "Action: " not in tiny["ground"]


# -- parse and round -------------------------------------------------------------------------------------
def test_parse_reads_func_lines_of_the_first_five_lines() -> None:
    reply = "\n".join(
        [
            "Action 1: TELEPORT(kitchen) --> You teleport to the kitchen.",
            "Here is my plan.",
            "Action 2: PICK(thermometer) -->",
            "Action 3: open cupboard",  # no FUNC form: skipped
            "Action 4: ACTIVATE(stove) --> The stove is now activated.",
            "Action 5: MOVE(metal pot, stove) --> moved",
        ]
    )
    parsed = parse_authors(reply, SEMANTICS)
    assert [p.action for p in parsed] == ["teleport to kitchen", "pick up thermometer", "activate stove"]
    assert [p.expected for p in parsed] == ["You teleport to the kitchen.", "", "The stove is now activated."]
    repeated = parse_authors(
        "Action 1: WAIT() --> You wait.\nRepeat it until it boils\nAction 2: SEE()", SEMANTICS
    )
    assert [p.action for p in repeated] == ["wait"] * 6
    with pytest.raises(PlanFormatError):
        parse_authors("Repeat the above\nAction 1: WAIT()", SEMANTICS)
    assert from_func("MOVE(a, b)") == "move a to b" and to_func("pour a into b") == "POUR(a, b)"
    assert to_func("inventory") is None and from_func("teleport to kitchen") is None


def test_a_round_reads_five_lines_and_is_not_retried(state: State) -> None:
    traj, failures = state
    lines = [f"Action {i}: OPEN(cupboard) --> open" for i in range(1, 8)]
    model = ScriptedModel(["plan", "\n".join(lines)])
    plan = Sage(model, AUTHORS, prompts=AuthorsPrompts).plan(
        PlanRequest(traj=traj, step=18, failures=failures), ListSink()
    )
    assert plan.model_calls == 2 and not plan.retried and len(plan.parsed) == 5
    sage = Sage(ScriptedModel(["plan", "I do not know."]), AUTHORS, prompts=AuthorsPrompts)
    nothing = sage.plan(PlanRequest(traj=traj, step=18), ListSink())
    assert nothing.model_calls == 2 and not nothing.retried and nothing.parsed == () and nothing.error is None


def test_a_history_action_outside_the_grammar_ends_the_round(env: ScienceWorldAdapter) -> None:
    traj, _ = play(env, TASK, VARIATION, ["teleport to kitchen", "inventory"])
    request = PlanRequest(traj=traj, step=2)
    strict = AUTHORS.model_copy(update={"strict_history": True})  # the public eval_utils' behaviour
    plan = Sage(ScriptedModel(["plan", "Action 1: OPEN(cupboard)"]), strict, prompts=AuthorsPrompts).plan(
        request, ListSink()
    )
    assert plan.model_calls == 1 and plan.error and plan.error.startswith("HistoryGrammarError")
    # The paper configurations' default leaves the step out of the grounding history.
    plan = Sage(ScriptedModel(["plan", "Action 1: OPEN(cupboard)"]), AUTHORS, prompts=AuthorsPrompts).plan(
        request, ListSink()
    )
    assert plan.error is None and [a.action for a in plan.parsed] == ["open cupboard"]


# -- demos -----------------------------------------------------------------------------------------------
def test_shipped_demos_come_only_from_train_variations() -> None:
    data = json.loads(demos_path().read_text(encoding="utf-8"))
    assert data["split"] == "train" and data["simplification"] == "easy"
    demos = load_demos()
    assert sorted(demos) == [t.task_id for t in all_tasks()]
    for info in all_tasks():
        assert len(demos[info.task_id]) == 2
        for demo in demos[info.task_id]:
            assert info.split_of(demo.variation) == "train"
            starts = ("- (in ", "Repeat the previous")
            assert demo.lines and all(line.startswith(starts) for line in demo.lines)


def test_the_command_reproduces_a_task_demo(tmp_path: Path) -> None:
    out = tmp_path / "demos.json"
    cmd = [sys.executable, "-m", "fastslow.cli", "data", "sage-demos", "--tasks", "3", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    made = json.loads(out.read_text(encoding="utf-8"))["demos"]
    shipped = json.loads(demos_path().read_text(encoding="utf-8"))["demos"]
    assert list(made) == ["3"] and made["3"] == shipped["3"]


def test_no_demo_from_a_dev_or_test_variation(env: ScienceWorldAdapter) -> None:
    for split in ("dev", "test"):
        with pytest.raises(UsageError, match="not a train variation"):
            build_demo(env, 3, get_task(3).variations[split][0])


def test_repeated_blocks_are_folded() -> None:
    steps = [(a, a.upper()) for a in ["a", "b", "c", "b", "c", "b", "c", "d", "d", "d", "e"]]
    assert fold_repeats(steps) == [
        "A", "B", "C", "Repeat the previous 2 actions for 2 more times.",
        "D", "Repeat the previous action for 2 more times.", "E",
    ]  # fmt: skip


# -- configurations --------------------------------------------------------------------------------------
def test_swiftsage_and_the_fast_pathway_keep_todays_sage_settings() -> None:
    for name in ("swiftsage", "swift-only", "swift-srm", "swift-amm", "swift-amm-srm"):
        assert load_config(name, []).controller.sage == SageRunConfig(), name
    for name in ("baseline", "amm", "srm", "full", "paper", "paper-full"):
        sage = load_config(name, []).controller.sage
        assert sage.prompt == "authors" and sage.parse_retries == 0 and sage.history_turns == 15, name
    paper = load_config("paper", []).controller.sage
    assert (paper.plan_max_tokens, paper.ground_max_tokens, paper.prompt_budget_tokens) == (2048, 3072, 0)


def _authors_run(env: ScienceWorldAdapter, swift: ScriptedSwift, step_limit: int) -> tuple[list[str], int]:
    """Plays task 13 in the authors' loop with the authors' prompts; (planning prompts, Sage rounds)."""
    cfg = ControllerConfig(loop="authors", sage=AUTHORS)
    config = RunConfig(
        name="t", env=EnvConfig(step_limit=step_limit), agent=AgentConfig(kind="swiftsage"), controller=cfg
    )
    model = ScriptedModel(sage_replies("1. look around"))
    sink = ListSink()
    run_episode(env, build_swiftsage(config, swift=swift, sage_model=model), Episode(13, 0), config, sink)
    plans = [p[-1]["content"] for p in model.prompts if is_plan_prompt(p)]
    return plans, len([e for e in sink.events if e.event == "sage_call"])


def test_the_instinct_is_swifts_valid_top_prediction_and_none_otherwise(env: ScienceWorldAdapter) -> None:
    """Swift's valid "look around" ten times calls Sage (no progress) with it as the instinct; an invalid
    top prediction calls Sage with none."""
    plans, rounds = _authors_run(env, ScriptedSwift(["look around"]), 12)
    assert rounds and "My first thought is to look around now" in plans[0]
    plans, rounds = _authors_run(env, ScriptedSwift(["dance wildly"]), 4)
    assert rounds and "My first thought" not in plans[0]
