"""ReAct and Reflexion as plug-in agents (issue 53, ``fastslow.plugins``): the kind registry, the refusals
before a run writes anything, and both agents end to end on real ScienceWorld episodes with the real
embedded model (SmolLM2-135M-Instruct via llama.cpp) and with llama.cpp's real OpenAI-compatible server
on a loopback port: every action a valid action of its state, every model call logged with its tokens,
the metrics computed from the logs, and Reflexion's second trial prompted with the first one's
reflection."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastslow.build import check_models, make_agent, required_models
from fastslow.config import RunConfig, agent_kinds, load_config
from fastslow.core.step import StepResult
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.wrappers import Wrapper
from fastslow.errors import UsageError
from fastslow.eval.evaluate import evaluate
from fastslow.eval.metrics import controller_usage
from fastslow.eval.report import load_run, write_report
from fastslow.eval.runner import run_episode
from fastslow.events import EnvStep, EpisodeEnd, Event, ListSink, ModelCall, TrialEnd, read_events
from fastslow.plugins.react import parse_reply
from integration.llama_server import SERVED_MODEL, serve_llama

FIND = Episode(17, get_task(17).variations["dev"][0])
"""find-animal-longest-life-span (a short task), its first dev variation."""
BOIL = Episode(0, get_task(0).variations["dev"][0])
"""boil: no two or three steps complete it, so Reflexion's first trial fails and a second one follows."""


class Recorder(Wrapper):
    """Keeps the valid actions of every state the agent chose in (reset and steps, trial after trial)."""

    def __init__(self, env: ScienceWorldAdapter) -> None:
        super().__init__(env)
        self.states: list[tuple[str, ...]] = []

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        result = self.env.reset(task, variation, gold=gold)
        self.states.append(result.valid_actions)
        return result

    def step(self, action: str) -> StepResult:
        result = self.env.step(action)
        self.states.append(result.valid_actions)
        return result


def play(env: ScienceWorldAdapter, config: RunConfig, episode: Episode) -> tuple[list[Event], Recorder]:
    recorder, sink = Recorder(env), ListSink()
    run_episode(recorder, make_agent(config), episode, config, sink)
    return sink.events, recorder


def acted_in_valid_states(events: list[Event], recorder: Recorder) -> None:
    """Every step's action was a valid action of the state it was chosen in (states in log order: the
    reset of each trial, then each step; the state after a trial's last step is never acted in)."""
    trial_ends = {e.step for e in events if isinstance(e, TrialEnd) and e.next}
    states = iter(recorder.states)
    state = next(states)
    for e in events:
        if isinstance(e, EnvStep):
            assert e.source == "llm", e
            assert e.action in state, f"step {e.step}: {e.action!r} is not a valid action there"
            state = next(states)
            if e.step in trial_ends:
                state = next(states)  # the reset of the next trial


def calls(events: list[Event], role: str) -> list[ModelCall]:
    return [e for e in events if isinstance(e, ModelCall) and e.role == role]


# -- the registry and the refusals ------------------------------------------------------------------------


def test_kinds_are_the_builtins_and_the_plugin_modules() -> None:
    assert agent_kinds()[:2] == ("oracle", "swiftsage")
    assert {"react", "reflexion"} <= set(agent_kinds())
    for name, kind in [("react", "react"), ("reflexion", "reflexion")]:
        for suffix in ("", "-openai"):
            config = load_config(name + suffix)
            assert config.agent.kind == kind
    assert set(required_models(load_config("reflexion"))) == {"act", "reflect"}


def test_an_unknown_kind_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(UsageError) as err:
        load_config("react", ["agent.kind=reactt"])
    message = str(err.value)
    assert "\n" not in message and "unknown agent kind 'reactt'" in message
    assert "oracle, swiftsage, react, reflexion" in message
    with pytest.raises(UsageError, match=r"agent\.settings is for plug-in agents"):
        load_config("oracle", ["agent.settings.history_steps=3"])


def test_settings_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(UsageError, match=r"agent\.settings\.history_stepz"):
        evaluate(load_config("react", ["agent.settings.history_stepz=3"]), [FIND], out)
    with pytest.raises(UsageError, match=r"agent\.settings\.max_trials"):
        evaluate(load_config("reflexion", ["agent.settings.max_trials=0"]), [FIND], out)
    assert not out.exists()


def test_a_server_without_grammars_is_refused_for_constrained_actions() -> None:
    config = load_config("react-openai", ["sage.model.constraint_format=none"])
    with pytest.raises(UsageError, match="constraint_format none"):
        check_models(config)  # refused before the (absent) server is asked anything


def test_demos_are_refused_where_the_world_has_none() -> None:
    with pytest.raises(UsageError, match=r"agent\.settings\.demo"):
        check_models(load_config("react", ["agent.settings.demo=true"]))


def test_replies_are_read_by_their_act_line() -> None:
    assert parse_reply("Think: go outside\nAct: teleport to outside").action == "teleport to outside"
    assert parse_reply("Think: go outside\nAct: teleport to outside").thought == "go outside"
    assert parse_reply("open door to kitchen.").action == "open door to kitchen"
    assert parse_reply("Think: nothing to do").action is None
    assert parse_reply("act: 'look around'\n").action == "look around"


# -- the embedded model -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def react_episode(env: ScienceWorldAdapter) -> tuple[list[Event], Recorder]:
    return play(env, load_config("react", ["env.step_limit=4"]), FIND)


def test_react_acts_on_valid_actions_with_the_embedded_model(
    react_episode: tuple[list[Event], Recorder],
) -> None:
    events, recorder = react_episode
    steps = [e for e in events if isinstance(e, EnvStep)]
    assert [s.step for s in steps] == [1, 2, 3, 4]
    acted_in_valid_states(events, recorder)
    acts = calls(events, "act")
    assert len(acts) == 4 and [c.step for c in acts] == [0, 1, 2, 3]
    for call, step in zip(acts, steps, strict=True):
        assert call.backend == "local" and call.error is None and call.constraint == "grammar"
        assert call.prompt_tokens > 0 and call.completion_tokens > 0
        assert call.completion is not None and call.completion.startswith("Think: ")
        assert call.completion.endswith(f"\nAct: {step.action}")
    # The window holds the steps before: the last call's prompt shows the first three actions.
    last_prompt = acts[-1].messages[-1]["content"] if acts[-1].messages else ""
    assert all(f"Act: {s.action}" in last_prompt for s in steps[:3])


def test_react_costs_are_computed_from_its_model_calls(react_episode: tuple[list[Event], Recorder]) -> None:
    events, _ = react_episode
    usage = controller_usage([events])
    acts = calls(events, "act")
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in acts)
    assert usage["model_calls"] == 4 and usage["env_steps"] == 4
    assert usage["llm_tokens_per_action"] == round(tokens / 4, 2)
    assert usage["step_shares"]["llm"] == 1.0 and usage["system2_calls_per_episode"] == 4
    assert usage["llm_seconds_per_episode"] == pytest.approx(sum(c.latency_s for c in acts), abs=1e-3)


@pytest.fixture(scope="module")
def reflexion_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reflexion") / "run"
    config = load_config("reflexion", ["env.step_limit=2", "agent.settings.max_trials=2"])
    evaluate(config, [BOIL], out)
    return out


@pytest.mark.slow
def test_reflexion_reflects_between_trials_of_one_episode(reflexion_run: Path) -> None:
    events: list[Event] = list(read_events(reflexion_run / "events" / f"{BOIL.episode_id}.jsonl"))
    trials = [e for e in events if isinstance(e, TrialEnd)]
    assert [(t.trial, t.step, t.steps, t.next) for t in trials] == [(1, 2, 2, True), (2, 4, 2, False)]
    assert [e.step for e in events if isinstance(e, EnvStep)] == [1, 2, 3, 4]
    end = events[-1]
    assert isinstance(end, EpisodeEnd) and end.steps == 4 and end.final_score == trials[-1].score
    (reflection,) = calls(events, "reflect")
    assert reflection.error is None and reflection.completion and reflection.completion_tokens > 0
    assert reflection.step == 2 and reflection.constraint == "grammar"
    acts = calls(events, "act")
    assert [c.step for c in acts] == [0, 1, 2, 3]
    lesson = " ".join(reflection.completion.split())
    for call in acts[:2]:  # the first trial had no reflection yet
        assert call.messages is not None and "Trial 1:" not in call.messages[-1]["content"]
    for call in acts[2:]:  # the second trial's prompts carry the first trial's reflection
        assert call.messages is not None and f"Trial 1: {lesson}" in call.messages[-1]["content"]
        assert "This is trial 2 of this task" in call.messages[-1]["content"]


@pytest.mark.slow
def test_reflexion_metrics_and_report_count_every_trial(reflexion_run: Path) -> None:
    metrics = json.loads((reflexion_run / "metrics.json").read_text())
    usage = metrics["usage"]
    assert metrics["episodes"] == 1 and usage["env_steps"] == 4 and usage["model_calls"] == 5
    assert usage["step_shares"]["llm"] == 1.0 and usage["llm_tokens_per_action"] > 0
    assert metrics["episode_results"][0]["steps"] == 4
    assert load_run(reflexion_run).metrics.usage.step_shares.llm == 1.0
    write_report([reflexion_run], reflexion_run.parent / "report")
    usage_csv = (reflexion_run.parent / "report" / "usage.csv").read_text()
    assert "reflexion" in usage_csv


# -- llama.cpp's OpenAI-compatible server -----------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_llama(tmp_path_factory.mktemp("llama_server"), n_ctx=4096) as base_url:
        yield base_url


def _through(server: str) -> list[str]:
    return [
        f"sage.model.base_url={server}",
        f"sage.model.model={SERVED_MODEL}",
        "sage.model.constraint_format=llama_cpp",
        "env.step_limit=2",
    ]


@pytest.mark.slow
def test_react_through_an_openai_compatible_server(server: str, env: ScienceWorldAdapter) -> None:
    config = load_config("react-openai", _through(server))
    check_models(config)  # the server answers and runs the grammar
    events, recorder = play(env, config, FIND)
    acted_in_valid_states(events, recorder)
    acts = calls(events, "act")
    assert len(acts) == 2
    assert all(c.backend == "openai" and c.model == SERVED_MODEL and c.error is None for c in acts)
    assert all(c.constraint == "grammar" and c.prompt_tokens > 0 and c.completion_tokens > 0 for c in acts)


@pytest.mark.slow
def test_reflexion_through_an_openai_compatible_server(server: str, env: ScienceWorldAdapter) -> None:
    config = load_config("reflexion-openai", [*_through(server), "agent.settings.max_trials=2"])
    check_models(config)
    events, recorder = play(env, config, BOIL)
    acted_in_valid_states(events, recorder)
    (reflection,) = calls(events, "reflect")
    assert reflection.backend == "openai" and reflection.error is None and reflection.completion
    lesson = " ".join(reflection.completion.split())
    second = calls(events, "act")[2]
    assert second.messages is not None and f"Trial 1: {lesson}" in second.messages[-1]["content"]
    assert [t.next for t in events if isinstance(t, TrialEnd)] == [True, False]
