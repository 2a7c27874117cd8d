"""AMM and SRM composed with the plug-in agents ReAct and Reflexion (issue 53, point 2;
``fastslow.plugins._hooks``): the same module hooks SwiftSage's controller walks, walked by the
single-process loop.

Real components throughout: the real TextWorldExpress JVM (a run of a dozen steps takes a second), the
real AMM store (SQLite), Gate-1, stagnation detector and rules Critic. The agent's model is the
``scripted`` one where the point is the composition logic (an unconstrained action Gate-1 must repair
or drop, a trial whose rewarded step AMM must remember): a fixed reply is the one deterministic way to
send such an action. The embedded LLM and llama.cpp's server play ``react-amm-srm`` on ScienceWorld in
the slow tests at the end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastslow.build import check_models, make_agent, required_models
from fastslow.config import RunConfig, load_config
from fastslow.env.episodes import Episode
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.eval.attribute import plan_attribution, play_attribution
from fastslow.eval.evaluate import check_warmup, evaluate
from fastslow.eval.metrics import controller_usage
from fastslow.eval.runner import run_episode
from fastslow.events import (
    BufferPop,
    BufferPush,
    CriticCall,
    EnvStep,
    Event,
    GateDecision,
    ListSink,
    MemoryInjection,
    MemoryRetrieval,
    MemoryWrite,
    ModelCall,
    TrialEnd,
    read_events,
)

TWX = ["env.world=textworldexpress"]
COIN = Episode(2, 10000)
"""TextWorldExpress coin, dev seed 10000: the coin is five rooms away, so looking around stagnates."""
TWC = Episode(1, 10000)
"""TextWorldExpress twc, dev seed 10000: "take key" at the second step is rewarded (+12)."""


def scripted(*replies: str) -> list[str]:
    """Overrides for a scripted act model with ``replies`` (cycled), unconstrained (a reply is read
    as the paper's ReAct reads it)."""
    return [
        "agent.settings.constrain=none",
        "sage.model.kind=scripted",
        f"sage.model.replies={json.dumps(list(replies))}",
        "sage.model.cycle=true",
    ]


def modules(tmp_path: Path, *, amm: bool = True) -> list[str]:
    """SRM with the rules Critic (and AMM on a store of its own)."""
    srm = ["srm.enabled=true", "critic.kind=rules"]
    return [*srm, "amm.enabled=true", f"amm.path={tmp_path / 'memory.sqlite'}"] if amm else srm


@pytest.fixture(scope="module")
def twx() -> Iterator[object]:
    env = get_world("textworldexpress").make_env(load_config("react", TWX).env)
    yield env
    env.close()


def play(env: object, config: RunConfig, episode: Episode) -> list[Event]:
    sink = ListSink()
    run_episode(env, make_agent(config), episode, config, sink)  # type: ignore[arg-type]
    return sink.events


def of(events: list[Event], kind: type[Event]) -> list[Event]:
    return [e for e in events if isinstance(e, kind)]


def prompts(events: list[Event]) -> list[str]:
    return [
        c.messages[-1]["content"] if c.messages else ""
        for c in of(events, ModelCall)
        if isinstance(c, ModelCall) and c.role == "act"
    ]


# -- no module: the agent as it was ------------------------------------------------------------------------


def test_without_modules_react_logs_no_module_event(twx: object) -> None:
    config = load_config("react", [*TWX, "env.step_limit=3", *scripted("Think: t\nAct: look around")])
    events = play(twx, config, COIN)
    kinds = {e.event for e in events}
    assert kinds == {"episode_start", "model_call", "env_step", "episode_end"}
    assert [e.source for e in of(events, EnvStep)] == ["llm"] * 3  # type: ignore[attr-defined]
    assert set(required_models(config)) == {"act"}


# -- SRM: Gate-1 on the model's actions, the Critic's actions from the buffer --------------------------------


@pytest.fixture(scope="module")
def gated(twx: object, tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    """ReAct, unconstrained, with AMM and SRM on coin: a repairable action, two unknown ones, then
    looking around until the stagnation detector reports and the rules Critic answers."""
    replies = [
        "Think: the doors\nAct: Open the door to north",
        "Think: x\nAct: Take the coin",
        "Think: y\nAct: fly to the moon",
        "Think: z\nAct: look around",
    ]
    tmp = tmp_path_factory.mktemp("gated")
    config = load_config("react", [*TWX, "env.step_limit=14", *scripted(*replies), *modules(tmp)])
    return play(twx, config, COIN)


def test_gate1_repairs_and_drops_the_models_unconstrained_actions(gated: list[Event]) -> None:
    gates = [g for g in of(gated, GateDecision) if isinstance(g, GateDecision) and g.source == "llm"]
    first = gates[0]
    assert (first.outcome, first.original) == ("repair", "Open the door to north")
    assert first.action == "open door to north"
    steps = {e.step: e for e in of(gated, EnvStep) if isinstance(e, EnvStep)}
    assert steps[1].action == "open door to north" and steps[1].source == "llm"
    drops = [g for g in gates if g.outcome == "drop"]
    assert [g.original for g in drops[:2]] == ["Take the coin", "fly to the moon"]
    assert all(g.reason == "not_admissible" for g in drops)
    # A dropped action never runs: the step is the fallback's, its reason Gate-1's.
    dropped = steps[drops[0].step + 1]
    assert (dropped.action, dropped.source) == ("look around", "fallback")
    assert "gate dropped 'Take the coin' (not_admissible" in dropped.reason
    # The model's next prompt says its action was refused and what ran instead.
    after = prompts(gated)[drops[0].step + 1]
    assert 'Your action "Take the coin" was refused (not_admissible' in after
    assert '"look around" ran instead.' in after
    assert "was refused" not in prompts(gated)[drops[0].step]


def test_the_critics_actions_run_as_critic_steps_through_the_buffer(gated: list[Event]) -> None:
    calls = [c for c in of(gated, CriticCall) if isinstance(c, CriticCall)]
    assert calls and calls[0].kind == "rules" and calls[0].actions
    pushes = [p for p in of(gated, BufferPush) if isinstance(p, BufferPush)]
    assert pushes and pushes[0].source == "critic" and pushes[0].step == calls[0].step
    pops = [p for p in of(gated, BufferPop) if isinstance(p, BufferPop) and p.action]
    critic = [e for e in of(gated, EnvStep) if isinstance(e, EnvStep) and e.source == "critic"]
    assert critic and [e.action for e in critic] == [p.action for p in pops]
    assert critic[0].step == calls[0].step + 1 and critic[0].reason.startswith(f"critic @{calls[0].step}")
    # Each buffered action passed Gate-1 as the Critic's.
    assert {g.source for g in of(gated, GateDecision) if isinstance(g, GateDecision)} == {"llm", "critic"}
    # No model call while the buffer ran: the window shows who chose those steps.
    acts = [c.step for c in of(gated, ModelCall) if isinstance(c, ModelCall)]
    assert not {e.step - 1 for e in critic} & set(acts)
    later = [p for p in prompts(gated) if "(chosen by the critic)" in p]
    assert later


def test_metrics_count_the_critic_and_fallback_steps(gated: list[Event]) -> None:
    usage = controller_usage([gated])
    steps = [e for e in of(gated, EnvStep) if isinstance(e, EnvStep)]
    shares = usage["step_shares"]
    for source in ("llm", "critic", "fallback"):
        n = sum(e.source == source for e in steps)
        assert n > 0 and shares[source] == pytest.approx(n / len(steps), abs=1e-6)
    assert usage["model_calls"] == sum(e.source != "critic" for e in steps)


def test_amm_asks_for_memories_at_the_first_step_and_writes_after_steps(gated: list[Event]) -> None:
    t4 = [r for r in of(gated, MemoryRetrieval) if isinstance(r, MemoryRetrieval) and r.trigger == "T4"]
    assert [r.step for r in t4] == [0]  # no failure feedback on coin's looks: one retrieval
    assert not of(gated, MemoryInjection)  # an empty store: nothing to inject, the baseline prompt


# -- AMM across Reflexion's trials ---------------------------------------------------------------------------


def test_a_later_trial_retrieves_what_amm_wrote_in_an_earlier_one(twx: object, tmp_path: Path) -> None:
    replies = ["Think: a\nAct: look around", "Think: b\nAct: take key", "Take the key first, then explore."]
    overrides = [*TWX, "env.step_limit=2", "agent.settings.max_trials=2", *scripted(*replies)]
    config = load_config("reflexion", [*overrides, *modules(tmp_path)])
    events = play(twx, config, TWC)
    trials = [(t.trial, t.next) for t in of(events, TrialEnd) if isinstance(t, TrialEnd)]
    assert trials == [(1, True), (2, False)]
    writes = [w for w in of(events, MemoryWrite) if isinstance(w, MemoryWrite)]
    assert writes and writes[0].step == 2 and writes[0].tag == "near-miss"  # "take key": +12, progress
    t4 = [r for r in of(events, MemoryRetrieval) if isinstance(r, MemoryRetrieval) and r.trigger == "T4"]
    # Each trial asks at its first step; the hooks number the second trial's states on (step 2).
    assert [(r.step, r.n) for r in t4][:2] == [(0, 0), (2, t4[1].n)] and t4[1].n >= 1
    assert writes[0].record_id in t4[1].ids
    (injected,) = [i for i in of(events, MemoryInjection) if isinstance(i, MemoryInjection)][:1]
    assert injected.step == 2 and injected.target == "sage" and "take key" in injected.text
    second = prompts(events)[2]
    assert injected.text.strip() in second and "This is trial 2 of this task" in second
    assert injected.text.strip() not in prompts(events)[0]


# -- the plug-in interface's refusals and roles --------------------------------------------------------------


def test_the_llm_critic_is_a_role_of_the_agent_and_checked_before_a_run(tmp_path: Path) -> None:
    assert set(required_models(load_config("react-amm-srm"))) == {"act", "critic"}
    assert set(required_models(load_config("reflexion-amm-srm"))) == {"act", "reflect", "critic"}
    assert set(required_models(load_config("react-amm-srm", ["critic.kind=rules"]))) == {"act"}
    server = ["critic.model.kind=openai", "critic.model.model=m", "critic.model.constraint_format=openai"]
    with pytest.raises(UsageError, match=r"critic\.constrain valid needs grammars"):
        check_models(load_config("react-amm-srm", server))
    out = tmp_path / "run"
    with pytest.raises(UsageError, match="oracle"):
        check_warmup(load_config("react-amm-srm"), load_config("oracle", ["amm.enabled=true"]))
    assert check_warmup(load_config("react-amm-srm"), None).agent.kind == "react"
    assert not out.exists()


def test_the_shipped_configs_compose_the_modules_of_constrained_full() -> None:
    full, react = load_config("constrained/full"), load_config("react")
    for name in ("react-amm-srm", "reflexion-amm-srm"):
        config = load_config(name)
        assert (config.amm, config.srm, config.critic) == (full.amm, full.srm, full.critic)
        assert config.procedures.enabled and config.env == react.env
        assert config.agent.settings["constrain"] == "valid"
    assert load_config("reflexion-amm-srm").agent.kind == "reflexion"


# -- forks and attribution of a ReAct run with SRM -----------------------------------------------------------


@pytest.fixture(scope="module")
def react_srm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("react-srm") / "run"
    replies = ["Think: x\nAct: Take the coin", "Think: z\nAct: look around"]
    config = load_config("react", [*TWX, "env.step_limit=7", *scripted(*replies), *modules(out, amm=False)])
    evaluate(config, [COIN], out)
    return out


@pytest.mark.parametrize("mechanism", ["gate-drop", "critic"])
def test_attribute_forks_a_react_run_and_the_control_repeats_its_parent(
    react_srm_run: Path, tmp_path: Path, mechanism: str
) -> None:
    plan = plan_attribution(react_srm_run, mechanism, tmp_path / mechanism)  # type: ignore[arg-type]
    result = play_attribution(plan, workers=1)
    assert result["replayed"] == len(plan.chosen) > 0 and result["diverged"] == 0
    assert result["exact"] == len(plan.chosen)  # every control fork repeats its parent
    log = react_srm_run / "events" / f"{COIN.episode_id}.jsonl"
    parent = [e for e in read_events(log) if isinstance(e, EnvStep)]
    for point in plan.chosen:
        fork = tmp_path / mechanism / "forks" / point.name / "off" / "events" / f"{point.episode}.jsonl"
        off = [e for e in read_events(fork) if isinstance(e, EnvStep)]
        at = point.at - 1
        assert [e.action for e in off[:at]] == [e.action for e in parent[:at]]
        if mechanism == "critic":  # the Critic's actions never reach the buffer: the model acts
            assert parent[at].source == "critic" and off[at].source != "critic"
        elif parent[at].source == "fallback":  # Gate-1 not consulted: the model's text runs as written
            assert (off[at].action, off[at].source) == ("Take the coin", "llm")


# -- react-amm-srm on ScienceWorld through llama.cpp's OpenAI-compatible server ---------------------------


@pytest.mark.slow
def test_react_amm_srm_through_an_openai_compatible_server(tmp_path: Path) -> None:
    """The shipped configuration, its act and Critic models on a loopback server, its store warmed up by
    the fast pathway (swift-amm) on two train episodes of the task: Gate-1 checks every model action,
    AMM's T4 block from the warm store is in the first prompt, AMM writes, metrics count it all."""
    from fastslow.env.scienceworld.tasks import get_task
    from integration.llama_server import SERVED_MODEL, serve_llama

    find = Episode(17, get_task(17).variations["dev"][0])
    warm = [Episode(17, v) for v in get_task(17).variations["train"][:2]]
    out = tmp_path / "run"
    with serve_llama(tmp_path, n_ctx=4096) as base_url:
        server = [
            f"{role}.model.{key}={value}"
            for role in ("sage", "critic")
            for key, value in [
                ("kind", "openai"),
                ("base_url", base_url),
                ("model", SERVED_MODEL),
                ("constraint_format", "llama_cpp"),
            ]
        ]
        config = load_config("react-amm-srm", [*server, "env.step_limit=8"])
        check_models(config)  # the server answers and runs both grammars
        evaluate(
            config, [find], out, warmup=True, warmup_episodes=warm, warmup_agent=load_config("swift-amm")
        )
    events = read_events(out / "events" / f"{find.episode_id}.jsonl")
    acts = [c for c in of(events, ModelCall) if isinstance(c, ModelCall) and c.role == "act"]
    assert acts and all(c.backend == "openai" and c.error is None and c.constraint == "grammar" for c in acts)
    steps = [e for e in of(events, EnvStep) if isinstance(e, EnvStep)]
    assert len(steps) == 8
    gates = [g for g in of(events, GateDecision) if isinstance(g, GateDecision)]
    llm = [e for e in steps if e.source == "llm"]
    assert len([g for g in gates if g.source == "llm"]) == len(acts) and len(llm) <= len(acts)
    assert all(g.accepted for g in gates if g.source == "llm" and g.step + 1 in {e.step for e in llm})
    t4 = [r for r in of(events, MemoryRetrieval) if isinstance(r, MemoryRetrieval) and r.trigger == "T4"]
    assert t4 and t4[0].step == 0 and t4[0].n > 0  # the warm store's records
    injected = [i for i in of(events, MemoryInjection) if isinstance(i, MemoryInjection)]
    assert injected and injected[0].step == 0
    assert acts[0].messages is not None and injected[0].text.strip() in acts[0].messages[-1]["content"]
    metrics = json.loads((out / "metrics.json").read_text())
    usage = metrics["usage"]
    assert usage["env_steps"] == 8 and sum(v or 0 for v in usage["step_shares"].values()) == pytest.approx(1)
    assert usage["step_shares"]["llm"] == pytest.approx(len(llm) / 8, abs=1e-6)
