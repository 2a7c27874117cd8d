"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): throughput of a backend.

Sage prompts are long (state, valid actions, memories) and its replies short, so the two speeds that
decide an episode's wall time are measured apart: prompt processing (one long prompt, one generated token)
and generation (a short prompt asking for a long answer). ``fastslow bench llm`` prints the result as JSON.

``bench_sage_round`` times what an episode actually pays per Sage round, planning then grounding, on
Sage's real prompts for a real state (``SAGE_ROUNDS``), cold and with each kind of reuse side by side:
llama.cpp's prefix reuse (``ModelConfig.prefix_states``) and the response cache (``models.cache``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from fastslow.events import EventSink, ListSink
from fastslow.models.base import ChatModel, Completion, Message, call_model
from fastslow.models.cache import CachedModel, ResponseCache
from fastslow.models.config import PREFIX_STATES_DEFAULT, ModelConfig

SAGE_ROUNDS = Path(__file__).parent / "data" / "sage_rounds.json"
"""Sage's messages for two rounds of one real episode (boil, test variation 21, after 18 and 19 actions),
planning and grounding, in both prompt profiles, as Sage renders them (``scripts/sage_round_fixture.py``
writes the file; its first round is the state of the Sage prompt tests)."""
Profile = Literal["authors", "fastslow"]

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


def sage_rounds(profile: Profile = "authors") -> list[dict[str, list[Message]]]:
    """The two rounds of ``SAGE_ROUNDS`` in ``profile``: each ``{"plan": messages, "ground": messages}``."""
    data = json.loads(SAGE_ROUNDS.read_text(encoding="utf-8"))
    rounds: list[dict[str, list[Message]]] = data[profile]
    return rounds


def bench_sage_round(
    cfg: ModelConfig,
    *,
    profile: Profile = "authors",
    plan_max_tokens: int = 64,
    ground_max_tokens: int = 64,
    sink: EventSink | None = None,
) -> dict[str, Any]:
    """Seconds of one Sage round (planning, then grounding, temperature 0) of the model ``cfg`` names,
    on the second round of ``sage_rounds(profile)``, side by side:

    - ``cold_s``: each of the two calls on an empty KV cache, as the first call of a process (the
      embedded model only; None for a server, whose caches the client cannot empty);
    - ``reuse_s``: right after the first round, with llama-cpp-python's own reuse only (the prefix the
      prompt shares with the previous call: ``prefix_states`` 0); for a server: whatever it reuses;
    - ``prefix_s``: the same with kept prefix states (``cfg.prefix_states``, or the default when it is
      0; the embedded model only, else None);
    - ``cached_s``: the round asked again through the response cache, which answers both calls.

    ``same_answers`` says whether every way answered both calls with the same text (greedy decoding
    on a KV cache filled in other batches can differ in the last bits, and so pick another token where
    two are nearly tied). The first call of each model object (loading) is not timed. Replies are
    capped at ``plan_max_tokens`` and ``ground_max_tokens`` (Sage's own caps are larger; generation
    costs the same in every column). Every call is emitted to ``sink`` as a ``ModelCall``."""
    from fastslow.models import make_model

    sink = sink if sink is not None else ListSink()
    first, second = sage_rounds(profile)
    limits = {"plan": plan_max_tokens, "ground": ground_max_tokens}
    local = cfg.kind == "local"
    kept = (cfg.prefix_states or PREFIX_STATES_DEFAULT) if local else 0

    def one_round(
        model: ChatModel, messages: dict[str, list[Message]], fresh: ChatModel | None = None
    ) -> list[Completion]:
        done = []
        for stage in ("plan", "ground"):
            if fresh is not None:
                _forget(fresh)
            role = "sage_plan" if stage == "plan" else "sage_ground"
            done.append(
                call_model(
                    model,
                    messages[stage],
                    sink=sink,
                    role=role,
                    step=0,
                    max_tokens=limits[stage],
                    temperature=0.0,
                )
            )
        return done

    def loaded(update: dict[str, Any]) -> ChatModel:
        model = make_model(cfg.model_copy(update=update))
        hello = [Message(role="user", content="Say hello.")]
        call_model(model, hello, sink=sink, role="bench_warmup", step=0, max_tokens=1, temperature=0.0)
        return model

    plain = loaded({"prefix_states": 0} if local else {})
    timed: dict[str, list[Completion] | None] = dict.fromkeys(("cold", "reuse", "prefix", "cached"))
    if local:
        timed["cold"] = one_round(plain, second, fresh=plain)
        _forget(plain)
    cache = ResponseCache(None)
    cached = CachedModel(plain, cache, cfg)
    one_round(cached, first)
    timed["reuse"] = one_round(cached, second)
    timed["cached"] = one_round(cached, second)
    if local:
        states = loaded({"prefix_states": kept})
        one_round(states, first)
        timed["prefix"] = one_round(states, second)
    texts = [[c.text for c in done] for done in timed.values() if done is not None]
    reuse = timed["reuse"]
    assert reuse is not None
    return {
        "backend": plain.backend,
        "model": plain.model,
        "profile": profile,
        "prompt_tokens": [c.prompt_tokens for c in reuse],
        "completion_tokens": [c.completion_tokens for c in reuse],
        **{f"{way}_s": _seconds(done) for way, done in timed.items()},
        "prefix_states": kept if local else None,
        "cache_hits": cache.hits,
        "same_answers": all(t == texts[0] for t in texts),
    }


def _seconds(done: list[Completion] | None) -> float | None:
    return None if done is None else round(sum(c.latency_s for c in done), 3)


def _forget(model: ChatModel) -> None:
    """Empty an embedded model's KV cache (``LocalChatModel.forget``); the next call starts cold."""
    from fastslow.models.local_backend import LocalChatModel

    if isinstance(model, LocalChatModel):
        model.forget()
