"""``fastslow bench llm``'s Sage round: what one Sage round (planning, then grounding; paper §3, System 2)
of a configuration costs on this machine, on a real state, cold and with each kind of reuse side by side.

The round is the configured Sage's own (``Sage.plan``): its prompt profile, prompt budget, reply caps
and constraint (``controller.sage.constrain``; a ``valid`` grammar is built from the state's valid
actions as in an episode), on its configured model. The state is a dev episode of boil (task 0, the
first dev variation), reached by its gold path rewritten for the ``easy`` simplification (a gold action
the valid actions do not list is skipped): the first round after ``ROUND_AT`` actions, the second one
action later, as two rounds of one episode follow each other. The instinct line (the authors' profile)
names the next gold action.

Ways (``seconds``):

- ``cold``: every call on an empty KV cache, as the first call of a process (the embedded model only);
- ``reuse``: the second round right after the first, with llama-cpp-python's own reuse (the prefix a
  prompt shares with the call before it; ``prefix_states`` 0); for a server, whatever it reuses;
- ``prefix``: the same with kept prefix states (``model.prefix_states``, the default when it is 0; the
  embedded model only), which is how the configuration plays;
- ``cached``: the second round asked again through the response cache (``models.cache``).

The first call of each model object (loading) is not timed.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fastslow.build import SAGE_PROMPTS
from fastslow.config import RunConfig
from fastslow.controller.sage import PlanRequest, Sage, SagePlan
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env.config import DEFAULT_WORLD, EnvConfig
from fastslow.env.world import get_world
from fastslow.events import EventSink, ListSink, ModelCall
from fastslow.models import ChatModel, Completion, Message, make_model
from fastslow.models.base import call_model
from fastslow.models.cache import CachedModel, ResponseCache
from fastslow.models.config import PREFIX_STATES_DEFAULT, ModelConfig
from fastslow.models.constraint import Constraint
from fastslow.swift.data import match_valid, rewrite_for_easy

TASK = 0
"""Boil: a long task whose rounds carry a long history, the Sage rounds that cost most."""
ROUND_AT = 12
"""Gold actions taken before the first round (the second comes one action later)."""


@dataclass(frozen=True)
class FixtureRounds:
    """The two planning requests of the fixture episode and where they come from."""

    first: PlanRequest
    second: PlanRequest
    variation: int
    actions: tuple[str, ...]
    """The gold actions taken before the second round."""


def fixture_rounds(simplification: str = "easy") -> FixtureRounds:
    """Replay the fixture episode on a fresh JVM: the two rounds' requests, each on its own copy of the
    trajectory (the steps after a round do not change it), with the gold action taken next as the
    instinct. The failures a request lists are the steps the authors' failure test
    (``WorldSemantics.authors``) calls failed, as their loop collects them."""
    world = get_world(DEFAULT_WORLD)
    authors = world.semantics.authors
    if authors is None:  # ScienceWorld's semantics always carry the authors' profile
        raise RuntimeError(f"world {world.name} has no authors' profile")
    episode = world.select("dev", tasks=str(TASK), limit_per_task=1)[0]
    env = world.make_env(EnvConfig(simplification=simplification))
    try:
        env.reset(TASK, episode.variation, gold=True)
        path = rewrite_for_easy(env.gold_actions) if simplification == "easy" else list(env.gold_actions)
        result = env.reset(TASK, episode.variation)
        traj = Trajectory(
            TASK, world.task(TASK).name, episode.variation, result.task_description, result, world.semantics
        )
        failures: list[Turn] = []
        taken: list[str] = []
        states: list[tuple[Trajectory, list[Turn]]] = []
        for action in path:
            if len(taken) == ROUND_AT + 2:
                break
            valid = match_valid(action, result.valid_actions)
            if valid is None:
                # ScienceWorld's gold agent picks up a pot it already holds (boil, on constant hash
                # codes, action 13), which the valid actions do not list: skipped.
                continue
            if len(taken) in (ROUND_AT, ROUND_AT + 1):
                states.append((copy.deepcopy(traj), list(failures)))
            result = env.step(valid)
            traj.record(valid, "oracle", result)
            taken.append(valid)
            if authors.failed(traj.turns[-1].observation):
                failures.append(traj.turns[-1])
    finally:
        env.close()
    if len(taken) < ROUND_AT + 2:
        raise RuntimeError(
            f"only {len(taken)} of the gold path's actions are valid in turn, not {ROUND_AT + 2}"
        )
    first, second = (
        PlanRequest(state, state.current.steps, fails, instinct=taken[len(state.turns)])
        for state, fails in states
    )
    return FixtureRounds(first, second, episode.variation, tuple(taken[: ROUND_AT + 1]))


class _Cold:
    """A model whose every call starts on an empty KV cache (``LocalChatModel.forget`` first)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.backend: str = inner.backend
        self.model: str = inner.model

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        self.inner.forget()
        return self.inner.complete(  # type: ignore[no-any-return]
            messages, max_tokens=max_tokens, temperature=temperature, stop=stop, constraint=constraint
        )

    def check_available(self) -> None:
        self.inner.check_available()

    def check_constraints(self) -> None:
        self.inner.check_constraints()


def _loaded(cfg: ModelConfig, sink: EventSink) -> ChatModel:
    model = make_model(cfg)
    hello = [Message(role="user", content="Say hello.")]
    call_model(model, hello, sink=sink, role="bench_warmup", step=0, max_tokens=1, temperature=0.0)
    return model


def bench_sage_round(config: RunConfig, *, sink: EventSink | None = None) -> dict[str, Any]:
    """Seconds of the fixture's second Sage round under ``config`` (module docstring), side by side.

    Returns the seconds of each way (None where it does not apply), the round's prompt and completion
    tokens (of the ``reuse`` round), the actions the round parsed and the ones valid now (admitted),
    the kept prefix states, the cache hits, and ``same_answers``: whether every way answered every call
    with the same text (greedy decoding on a KV cache filled in other batches can differ in the last
    bits and so pick another token where two are nearly tied). Every call is emitted to ``sink``."""
    sink = sink if sink is not None else ListSink()
    rounds = fixture_rounds(config.env.simplification)
    model_cfg = config.sage.model
    ctl = config.controller
    local = model_cfg.kind == "local"
    kept = (model_cfg.prefix_states or PREFIX_STATES_DEFAULT) if local else 0

    def play(model: Any, request: PlanRequest) -> tuple[SagePlan, list[ModelCall]]:
        calls = ListSink()
        sage = Sage(
            model,
            ctl.sage,
            max_actions=ctl.buffer.size,
            cutoff=ctl.ground_cutoff,
            prompts=SAGE_PROMPTS[ctl.sage.prompt],
        )
        plan = sage.plan(request, calls)
        for event in calls.events:
            sink.emit(event)
        if plan.error is not None:
            raise RuntimeError(f"the Sage round failed: {plan.error}")
        return plan, [e for e in calls.events if isinstance(e, ModelCall)]

    plain = _loaded(model_cfg.model_copy(update={"prefix_states": 0} if local else {}), sink)
    timed: dict[str, tuple[SagePlan, list[ModelCall]] | None] = dict.fromkeys(
        ("cold", "reuse", "prefix", "cached")
    )
    if local:
        timed["cold"] = play(_Cold(plain), rounds.second)
        plain.forget()  # type: ignore[attr-defined]
    cache = ResponseCache(None)
    cached = CachedModel(plain, cache, model_cfg)
    play(cached, rounds.first)
    timed["reuse"] = play(cached, rounds.second)
    timed["cached"] = play(cached, rounds.second)
    if local:
        states = _loaded(model_cfg.model_copy(update={"prefix_states": kept}), sink)
        play(states, rounds.first)
        timed["prefix"] = play(states, rounds.second)
    texts = [[c.completion for c in done[1]] for done in timed.values() if done is not None]
    reuse = timed["reuse"]
    assert reuse is not None
    plan, calls = reuse
    return {
        "backend": plain.backend,
        "model": plain.model,
        "config": config.name,
        "profile": ctl.sage.prompt,
        "constrain": ctl.sage.constrain,
        "episode": {"task": TASK, "variation": rounds.variation, "actions": len(rounds.actions)},
        "prompt_tokens": [c.prompt_tokens for c in calls],
        "completion_tokens": [c.completion_tokens for c in calls],
        **{f"{way}_s": None if done is None else round(done[0].latency_s, 3) for way, done in timed.items()},
        "parsed": len(plan.parsed),
        "admitted": len(plan.actions),
        "prefix_states": kept if local else None,
        "cache_hits": cache.hits,
        "same_answers": all(t == texts[0] for t in texts),
    }
