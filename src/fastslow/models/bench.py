"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): throughput of a backend.

Sage prompts are long (state, valid actions, memories) and its replies short, so the two speeds that
decide an episode's wall time are measured apart: prompt processing (one long prompt, one generated token)
and generation (a short prompt asking for a long answer). ``fastslow bench llm`` prints the result as JSON.

What a whole Sage round costs, with its prompts, caps and constraint, is ``fastslow.bench.sage``.
"""

from __future__ import annotations

from typing import Any

from fastslow.events import EventSink, ListSink
from fastslow.models.base import ChatModel, Completion, Message, call_model

_OBJECTS = ["beaker", "thermometer", "stove", "orange juice", "seed jar", "flower pot", "battery", "wire"]
_PLACES = ["kitchen", "workshop", "greenhouse", "hallway", "art studio", "bedroom", "outside", "foundry"]


def long_prompt(words: int) -> str:
    """ScienceWorld-like filler text of about ``words`` words (each line differs, so nothing repeats)."""
    lines: list[str] = []
    count = 0
    i = 0
    while count < words:
        obj, place = _OBJECTS[i % len(_OBJECTS)], _PLACES[(i * 3) % len(_PLACES)]
        line = f"Observation {i}: you see a {obj} in the {place}, next to item number {i * 7 % 101}."
        lines.append(line)
        count += len(line.split())
        i += 1
    return "\n".join(lines)


def _call_summary(c: Completion, role: str) -> dict[str, Any]:
    return {
        "role": role,
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "latency_s": round(c.latency_s, 4),
    }


def bench_llm(
    model: ChatModel,
    *,
    prompt_words: int = 600,
    gen_tokens: int = 128,
    sink: EventSink | None = None,
) -> dict[str, Any]:
    """Measure prompt-processing and generation speed (tokens/s) of ``model``.

    A one-token warm-up call comes first, so loading the model (local) or opening the connection is not
    counted. Generation speed subtracts the short prompt's share of the latency, estimated at the measured
    prompt speed. Every call is also emitted to ``sink`` as a ``ModelCall`` with a ``bench_*`` role.
    """
    sink = sink if sink is not None else ListSink()
    system: Message = {"role": "system", "content": "You are a helpful assistant."}

    def run(role: str, user: str, max_tokens: int) -> Completion:
        messages: list[Message] = [system, {"role": "user", "content": user}]
        return call_model(
            model, messages, sink=sink, role=role, step=0, max_tokens=max_tokens, temperature=0.0
        )

    warmup = run("bench_warmup", "Say hello.", 1)
    prompt = run(
        "bench_prompt",
        "Read these observations, then name the first object.\n" + long_prompt(prompt_words),
        1,
    )
    gen = run(
        "bench_gen",
        "Count from 1 to 200, writing every number as a word, separated by commas.",
        gen_tokens,
    )

    prompt_tok_s = prompt.prompt_tokens / prompt.latency_s if prompt.latency_s > 0 else 0.0
    gen_prompt_s = gen.prompt_tokens / prompt_tok_s if prompt_tok_s > 0 else 0.0
    gen_s = max(gen.latency_s - gen_prompt_s, 1e-9)
    return {
        "backend": model.backend,
        "model": model.model,
        "prompt_tokens": prompt.prompt_tokens,
        "prompt_tok_s": round(prompt_tok_s, 1),
        "gen_tokens": gen.completion_tokens,
        "gen_tok_s": round(gen.completion_tokens / gen_s, 1),
        "calls": [
            _call_summary(warmup, "bench_warmup"),
            _call_summary(prompt, "bench_prompt"),
            _call_summary(gen, "bench_gen"),
        ],
    }
