"""Constrained Sage (``controller.sage.constrain``): the reply shapes against their readers on real lines,
llama.cpp's grammar engine on the grammars, ``none`` sending today's calls, a ``valid`` round of the
embedded model on a real state, and the shipped ``constrained/*`` configurations."""

from __future__ import annotations

import ctypes
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest

from fastslow.build import SAGE_PROMPTS, check_models, constrained_models
from fastslow.config import builtin_config_names, load_config
from fastslow.controller.authors import authors_grounding
from fastslow.controller.config import SageRunConfig
from fastslow.controller.parsing import (
    authors_shape,
    numbered_readable,
    numbered_shape,
    parse_actions,
    parse_authors,
    plan_shape,
)
from fastslow.controller.resolver import IndexedView, Resolver
from fastslow.controller.sage import PlanRequest, Sage
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.authors import AUTHORS as SW_AUTHORS
from fastslow.env.scienceworld.func_actions import from_func, func_forms, to_func
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.errors import UsageError
from fastslow.events import ListSink, ModelCall
from fastslow.models import Grammar, ModelConfig, make_model, to_gbnf
from fastslow.models.scripted import ScriptedModel
from fastslow.models.shape import choice_rules

TASK, VARIATION = 2, 0  # chemistry-mix: the kitchen holds ~1,000 valid actions
ROUTE = ["teleport to kitchen", "open cupboard", "pick up tin cup"]


@pytest.fixture(scope="module")
def kitchen(env: ScienceWorldAdapter) -> Trajectory:
    """A real state: the kitchen after three actions, with their observations."""
    first = env.reset(TASK, VARIATION)
    traj = Trajectory(
        TASK, get_task(TASK).name, VARIATION, first.task_description, first, semantics=SEMANTICS
    )
    for action in ROUTE:
        traj.record(action, "swift", env.step(action))
    return traj


@pytest.fixture(scope="module")
def hallway(env: ScienceWorldAdapter) -> Trajectory:
    """The episode's first state, in the hallway: short prompts for the embedded model."""
    first = env.reset(TASK, VARIATION)
    return Trajectory(
        TASK, get_task(TASK).name, VARIATION, first.task_description, first, semantics=SEMANTICS
    )


def observations(traj: Trajectory) -> list[str]:
    """Real observation lines of the state: each line of each observation, the look and the inventory
    (some hold parentheses, "(containing nothing)", which the authors' reader cannot carry)."""
    texts = [t.observation for t in traj.turns] + [traj.current.look, traj.current.inventory]
    return [" ".join(line.split()) for text in texts for line in text.splitlines() if line.strip()][:12]


# -- the shapes accept what their readers read -------------------------------------------------------------


def test_authors_shape_accepts_exactly_the_lines_the_reader_reads_as_their_call(kitchen: Trajectory) -> None:
    """Over real lines (every valid action's FUNC form with real observations after it): the shape's
    pattern matches a line exactly when ``parse_authors`` reads the intended action from it; a reply of
    shaped lines is read line by line."""
    shape = authors_shape(5, SW_AUTHORS)
    pattern = re.compile(shape.pattern())
    calls = [f for a in kitchen.current.valid_actions if (f := to_func(a)) is not None]
    obs = observations(kitchen)
    assert len(calls) > 500 and any("(" in o for o in obs) and any("(" not in o for o in obs)
    checked = 0
    for i, call in enumerate(calls):
        line = f"Action 1: {call} --> {obs[i % len(obs)]}"
        read = [p.action for p in parse_authors(line, SEMANTICS)]
        fits = len(obs[i % len(obs)]) <= 80
        assert bool(pattern.fullmatch(line)) == (read == [from_func(call)] and fits), line
        checked += 1
    plain = [o for o in obs if "(" not in o and ")" not in o and len(o) <= 80]
    lines = [f"Action {n}: {calls[n * 7]} --> {plain[n % len(plain)]}" for n in range(1, 6)]
    assert pattern.fullmatch("\n".join(lines))
    assert [p.action for p in parse_authors("\n".join(lines), SEMANTICS)] == [
        from_func(calls[n * 7]) for n in range(1, 6)
    ]
    # Lines the reader skips, misreads, or reads without an observation are not in the shape.
    for line in ("Here is my plan.", "Action 1: open cupboard --> open", "Action 1: SEE() -->", "1. SEE()"):
        assert not pattern.fullmatch(line), line
    assert checked == len(calls)


def test_numbered_shape_accepts_the_valid_actions_the_reader_reads(kitchen: Trajectory) -> None:
    """SwiftSage's numbered reply: a valid action the reader reads back as itself is a shaped line,
    and every shaped line is read as its action and observation."""
    shape = numbered_shape(5, SEMANTICS)
    pattern = re.compile(shape.pattern())
    readable = numbered_readable(kitchen.current.valid_actions, SEMANTICS)
    assert len(readable) > 0.9 * len(kitchen.current.valid_actions)
    obs = [o[:80].strip() for o in observations(kitchen) if not set(o) & set("[]`")]
    obs = [o for o in obs if not o.endswith(")")]  # the reader strips a closing parenthesis
    for i, action in enumerate(readable):
        line = f"1. {action} -> {obs[i % len(obs)]}"
        assert pattern.fullmatch(line), line
        assert [(p.action, p.expected) for p in parse_actions(line, SEMANTICS)] == [
            (action, obs[i % len(obs)])
        ]
    for line in ("Here is the plan:", "1. look around.", "- look around -> x", "1. look around"):
        assert not pattern.fullmatch(line), line


def test_plan_shape_is_five_answers_within_the_reply_cap() -> None:
    shape = plan_shape("authors", 384)
    reply = "\n".join(f"Answer {n}: answer {n}." for n in range(1, 6))
    assert re.fullmatch(shape.pattern(), reply)
    assert not re.fullmatch(shape.pattern(), reply.rsplit("\n", 1)[0])  # four answers
    assert re.fullmatch(plan_shape("swiftsage", 384).pattern(), "\n".join(f"{n}. a" for n in range(1, 6)))
    assert "Answer 5: " in to_gbnf(shape.constraint())


# -- llama.cpp's grammar engine runs the same shapes --------------------------------------------------------


class Engine:
    """llama.cpp's grammar sampler on the embedded GGUF's vocabulary: does a grammar accept a text."""

    def __init__(self) -> None:
        import llama_cpp

        from fastslow.models.local_backend import _vocab_only

        self.lib = llama_cpp
        self.llama = _vocab_only()
        self.vocab = llama_cpp.llama_model_get_vocab(self.llama.model)
        self.eos = llama_cpp.llama_vocab_eos(self.vocab)

    def _allowed(self, sampler: Any, token: int) -> bool:
        lib = self.lib
        data = (lib.llama_token_data * 1)(lib.llama_token_data(token, 0.0, 0.0))
        candidates = lib.llama_token_data_array(data, 1, -1, False)
        lib.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return not math.isinf(data[0].logit)

    def accepts(self, grammar: Grammar, text: str) -> bool:
        from fastslow.models.local_backend import check_gbnf

        gbnf = to_gbnf(grammar)
        check_gbnf(gbnf)
        sampler = self.lib.llama_sampler_init_grammar(self.vocab, gbnf.encode(), b"root")
        try:
            for token in self.llama.tokenize(text.encode(), add_bos=False, special=False):
                if not self._allowed(sampler, token):
                    return False
                self.lib.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, self.eos)
        finally:
            self.lib.llama_sampler_free(sampler)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine()


def test_choice_rules_accept_exactly_their_options(engine: Engine) -> None:
    options = [
        "look around",
        "look at cup",
        "open door to kitchen",
        "open door to hallway",
        "open",
        "MOVE(a, b)",
    ]
    grammar = Grammar("\n".join(["root ::= item", *choice_rules("item", options)]))
    for text in options:
        assert engine.accepts(grammar, text), text
    for text in ("look", "look at", "open door", "open door to", "opened", "MOVE(a, b", "look around "):
        assert not engine.accepts(grammar, text), text


def test_the_grammars_accept_what_the_patterns_match(engine: Engine, kitchen: Trajectory) -> None:
    """Each shape's grammar (``format``, and ``valid`` over the state's FUNC forms) agrees with its
    pattern on shaped replies and on near misses."""
    forms = sorted(func_forms(kitchen.current.valid_actions).values())
    shape = authors_shape(3, SW_AUTHORS)
    good = [
        f"Action 1: {forms[0]} --> You see it.",
        f"Action 1: {forms[5]} --> ok\nAction 2: {forms[-1]} --> fine\nAction 3: {forms[9]} --> done",
    ]
    bad = [
        f"Action 1: {forms[0]}",
        f"Action 2: {forms[0]} --> x",
        f"Action 1: {forms[0]} --> (x)",
        "Action 1: TELEPORT(moon base) --> x",  # a valid FUNC call, not a valid action
        "\n".join(f"Action {n}: {forms[n]} --> x" for n in range(1, 5)),  # four lines
    ]
    for grammar, pattern in (
        (shape.constraint(), shape.pattern()),
        (shape.constraint(forms), shape.pattern(forms)),
    ):
        for text in good + bad:
            assert engine.accepts(grammar, text) == bool(re.fullmatch(pattern, text)), text
    assert engine.accepts(shape.constraint(), bad[3]) and not engine.accepts(shape.constraint(forms), bad[3])


# -- none sends today's calls; the modes change only the constraint ---------------------------------------

AUTHORS = SageRunConfig(
    prompt="authors", history_turns=15, parse_retries=0, max_failures=100, prompt_budget_tokens=500
)


def scripted_round(traj: Trajectory, cfg: SageRunConfig) -> list[ModelCall]:
    forms = func_forms(traj.current.valid_actions)
    reply = f"Action 1: {forms['look around']} --> You see the kitchen."
    sink = ListSink()
    replies = ["Answer 1: a\nAnswer 2: b\nAnswer 3: c\nAnswer 4: d\nAnswer 5: e", reply]
    Sage(ScriptedModel(replies), cfg, prompts=SAGE_PROMPTS[cfg.prompt]).plan(
        PlanRequest(traj, traj.current.steps), sink
    )
    return [e for e in sink.events if isinstance(e, ModelCall)]


def test_none_sends_the_unconstrained_calls_and_the_modes_only_add_a_grammar(kitchen: Trajectory) -> None:
    assert SageRunConfig().constrain == "none"
    plain = scripted_round(kitchen, AUTHORS)
    assert [(e.role, e.constraint) for e in plain] == [("sage_plan", None), ("sage_ground", None)]
    for mode in ("format", "valid"):
        constrained = scripted_round(kitchen, AUTHORS.model_copy(update={"constrain": mode}))
        assert [e.constraint for e in constrained] == ["grammar", "grammar"]
        assert [e.messages for e in constrained] == [e.messages for e in plain]
        assert [e.completion for e in constrained] == [e.completion for e in plain]


# -- a constrained round of the embedded model -----------------------------------------------------------


@pytest.fixture(scope="module")
def local() -> Iterator[Any]:
    yield make_model(ModelConfig())


PROFILES = {
    "swiftsage": (SageRunConfig(history_turns=0, swift_candidates=0, ground_max_tokens=24), "fuzzy"),
    "authors": (
        AUTHORS.model_copy(update={"prompt_budget_tokens": 1, "ground_max_tokens": 40}),
        authors_grounding,
    ),
}


@pytest.mark.parametrize("profile", ["swiftsage", pytest.param("authors", marks=pytest.mark.slow)])
def test_a_valid_round_of_the_embedded_model_plans_actions_the_resolver_admits(
    local: Any, hallway: Trajectory, profile: str
) -> None:
    """SmolLM2-135M, which left alone rarely writes a valid action, grounds into actions the resolver
    admits once its reply is constrained to the state's valid actions: every line it completed (the
    reply cap may cut the last one short). Short prompts and capped replies; the authors' profile (the
    paper configurations', whose prompts are longer) runs with the slow tests."""
    base, grounding = PROFILES[profile]
    cfg = base.model_copy(update={"constrain": "valid", "plan_max_tokens": 16})
    resolver = Resolver(80, [], fallback_when_unresolved=False, grounding=grounding)  # type: ignore[arg-type]
    view = IndexedView(hallway.current, hallway)
    sink = ListSink()
    plan = Sage(local, cfg, prompts=SAGE_PROMPTS[cfg.prompt]).plan(
        PlanRequest(hallway, hallway.current.steps, ground=lambda t: resolver.ground(t, view)), sink
    )
    calls = [e for e in sink.events if isinstance(e, ModelCall)]
    assert [(e.role, e.constraint, e.error) for e in calls] == [
        ("sage_plan", "grammar", None),
        ("sage_ground", "grammar", None),
    ]
    assert plan.error is None and plan.actions, calls[-1].completion
    parsed = [a.action for a in plan.parsed]
    admitted = [a for a in parsed if resolver.resolve(a, "sage", view) is not None]
    assert admitted and admitted[: len(parsed) - 1] == parsed[:-1], calls[-1].completion


# -- the shipped configurations --------------------------------------------------------------------------


LAPTOP_SAGE = {
    "constrain": "valid",
    "prompt": "swiftsage",
    "history_turns": 3,
    "max_look_chars": 100,
    "max_failures": 2,
    "plan_max_tokens": 50,
    "ground_max_tokens": 64,
}
"""What the constrained configurations change in ``controller.sage`` (docs/controller.md)."""


@pytest.mark.parametrize("name", ["baseline", "amm", "srm", "full"])
def test_constrained_configs_differ_from_theirs_only_in_the_switches_and_the_sizes(name: str) -> None:
    constrained, plain = load_config(f"constrained/{name}"), load_config(name)
    assert constrained.critic.constrain == "valid"
    assert constrained.name == f"constrained-{name}" and constrained.description
    a, b = constrained.model_dump(), plain.model_dump()
    assert {k: a["controller"]["sage"][k] for k in LAPTOP_SAGE} == LAPTOP_SAGE
    llm_critic = plain.srm.enabled and plain.srm.critic.enabled and plain.critic.kind == "llm"
    if llm_critic:  # the Critic's prompt and answer sized too where it is called
        assert (a["critic"]["prompt_budget_tokens"], a["critic"]["model"]["max_tokens"]) == (1000, 192)
    for dump in (a, b):
        for key in LAPTOP_SAGE:
            dump["controller"]["sage"].pop(key)
        dump["critic"].pop("constrain")
        if llm_critic:
            dump["critic"].pop("prompt_budget_tokens")
            dump["critic"]["model"].pop("max_tokens")
        dump.pop("name")
        dump.pop("description")
    assert a == b


def test_every_other_shipped_config_keeps_none() -> None:
    """Constrained decoding is the constrained/ configurations' and TextWorldExpress's LLM ones' (whose
    Sage and Critic are sized for a laptop as constrained/'s are), and ReAct's and Reflexion's with the
    modules of constrained/full; every other keeps the paper's none."""
    names = [*builtin_config_names(), "sensitivity/full-critic6", "sensitivity/paper-full-no-t1"]
    with_full = ("react-amm-srm", "reflexion-amm-srm")
    for name in names:
        cfg = load_config(name)
        constrained = name.startswith("twx-constrained-") or name in with_full
        expected = ("valid", "valid") if constrained else ("none", "none")
        assert (cfg.controller.sage.constrain, cfg.critic.constrain) == expected, name


def test_the_start_up_check_refuses_a_server_form_without_grammars() -> None:
    """``constraint_format: openai`` has no grammar: a constrained role is refused before any request."""
    server = [
        "sage.model.kind=openai",
        "sage.model.base_url=http://127.0.0.1:9/v1",
        "sage.model.model=m",
        "sage.model.constraint_format=openai",
    ]
    config = load_config("constrained/baseline", server)
    assert constrained_models(config) == {"controller.sage.constrain": config.sage.model}
    with pytest.raises(UsageError, match=r"controller\.sage\.constrain .* constraint_format openai"):
        check_models(config)
    assert constrained_models(load_config("baseline", server)) == {}
