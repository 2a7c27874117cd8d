"""Prompt-prefix reuse of the embedded model (``model.prefix_states``): a prompt is evaluated only from
where it leaves the longest prefix of a kept llama.cpp state, not just of the previous call's. Counted
with llama.cpp's own counters of decoded tokens, on the real SmolLM2-135M."""

from __future__ import annotations

import llama_cpp
import numpy as np

from fastslow.models import Completion, Message, ModelConfig
from fastslow.models.bench import long_prompt
from fastslow.models.local_backend import LocalChatModel, PrefixStates

PLAN = "Plan the next steps from these observations.\n" + long_prompt(40)
GROUND = "Turn the plan into actions; what you saw:\n" + long_prompt(45)


def ask(head: str, question: str) -> list[Message]:
    return [{"role": "user", "content": f"{head}\nQuestion: {question}"}]


def evaluated(model: LocalChatModel, messages: list[Message], max_tokens: int = 2) -> tuple[Completion, int]:
    """The completion and how many prompt tokens llama.cpp decoded for it."""
    ctx = model.llama.ctx
    llama_cpp.llama_perf_context_reset(ctx)
    done = model.complete(messages, max_tokens=max_tokens, temperature=0.0)
    perf = llama_cpp.llama_perf_context(ctx)
    return done, perf.n_p_eval + perf.n_eval - done.completion_tokens  # each answer token is decoded


def test_each_prompt_continues_from_its_own_previous_round() -> None:
    """Sage's rounds: planning, grounding, a Critic call in between; then the next round's planning
    and grounding prompts, which share a long head with the previous round's own."""
    # n_ctx values no other test uses: models of their own, loaded with these settings
    kept = LocalChatModel(ModelConfig(n_ctx=1280, prefix_states=3))
    assert isinstance(kept.llama.cache, PrefixStates)
    calls = [
        ask(PLAN, "which object comes first?"),
        ask(GROUND, "which action comes first?"),
        [{"role": "user", "content": "Is looking around useful now? Answer yes or no."}],
        ask(PLAN, "which room comes last?"),
        ask(GROUND, "which action comes last?"),
    ]
    counts = [evaluated(kept, messages) for messages in calls]
    for (done, n), cold in zip(counts[3:], counts[:2], strict=True):
        assert n < 25 < cold[1] - 60 and done.prompt_tokens > 80  # only the question and template tail
    plain = LocalChatModel(ModelConfig(n_ctx=1280, prefix_states=0))
    assert plain.llama.cache is None
    evaluated(plain, calls[1])
    done, n = evaluated(plain, calls[3])  # llama-cpp-python alone: from grounding, the template's head
    assert n > done.prompt_tokens - 40


def test_kept_states_are_bounded_and_hold_no_score_copies() -> None:
    model = LocalChatModel(ModelConfig(n_ctx=1152, prefix_states=2))
    for word in ("beaker", "stove", "kitchen"):
        model.complete([{"role": "user", "content": f"Say {word}."}], max_tokens=2, temperature=0.0)
    states = model.llama.cache
    assert isinstance(states, PrefixStates) and len(states.states) == 2
    assert all(s.scores.shape == (1, model.llama.n_vocab()) for s in states.states.values())
    assert 0 < states.cache_size < 50_000_000
    model.forget()
    assert not states.states and model.llama.n_tokens == 0


def test_a_reused_prefix_gives_the_logits_of_a_cold_call_bit_for_bit() -> None:
    """A repeated prompt, and one that extends a kept state by one token: llama-cpp-python would
    evaluate only the last token (another kernel, other last bits); at least 2 are evaluated instead."""
    model = LocalChatModel(ModelConfig(n_ctx=1408, prefix_states=2))
    vocab = model.llama.n_vocab()

    def logits(messages: list[Message]) -> tuple[np.ndarray, int]:
        _, n = evaluated(model, messages, max_tokens=1)
        row = llama_cpp.llama_get_logits_ith(model.llama.ctx, -1)  # after the prompt and the answer
        return np.ctypeslib.as_array(row, shape=(vocab,)).copy(), n

    prompt = ask(PLAN, "which object comes first?")
    model.forget()
    cold, n_cold = logits(prompt)
    again, n_again = logits(prompt)
    assert n_again == 2 < n_cold and np.array_equal(again, cold)
