"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): any OpenAI-compatible server.

The paper serves Qwen2.5-7B-Instruct-1M with vLLM; the same code talks to SGLang, Ollama, a llama.cpp
server or OpenAI itself. The client's own retries are off (``max_retries=0``): the loop below retries
connection errors, timeouts, 429 and 5xx with exponential back-off, so each attempt is counted (and lands in
the ``ModelCall`` event) and logged. Other errors (400, 401, 404) are not retried: repeating them cannot help.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any

import openai

from fastslow.errors import ModelUnavailableError
from fastslow.models.base import Completion, Message, ModelCallError
from fastslow.models.config import ModelConfig

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 5.0
"""Start-up check: a server that cannot list its models within this time is treated as down."""


def _is_retryable(exc: openai.OpenAIError) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    return isinstance(exc, openai.APIStatusError) and (
        exc.status_code in (408, 429) or exc.status_code >= 500
    )


def _describe(exc: openai.OpenAIError) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"


class OpenAIChatModel:
    """Chat completions from an OpenAI-compatible endpoint, with bounded, logged retries."""

    backend = "openai"

    def __init__(self, cfg: ModelConfig) -> None:
        if not cfg.model:
            raise ModelUnavailableError("the openai backend needs model: <name as the server knows it>")
        api_key = "EMPTY"  # local servers (vLLM, Ollama, llama.cpp) accept any key
        if cfg.api_key_env is not None:
            api_key = os.environ.get(cfg.api_key_env, "")
            if not api_key:
                raise ModelUnavailableError(
                    f"environment variable {cfg.api_key_env} (api_key_env) is not set"
                )
        self.model = cfg.model
        self.cfg = cfg
        self._client = openai.OpenAI(
            base_url=cfg.base_url, api_key=api_key, timeout=cfg.timeout_s, max_retries=0
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> Completion:
        cfg = self.cfg
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": cfg.max_tokens if max_tokens is None else max_tokens,
            "temperature": cfg.temperature if temperature is None else temperature,
        }
        stops = list(cfg.stop if stop is None else stop)
        if stops:
            request["stop"] = stops
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.extra_body:
            request["extra_body"] = cfg.extra_body

        start = time.perf_counter()
        attempts = cfg.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                response = self._client.chat.completions.create(**request)
                break
            except openai.OpenAIError as exc:
                if not _is_retryable(exc) or attempt == attempts:
                    raise ModelCallError(
                        f"{cfg.base_url} ({self.model}) failed after {attempt} attempt(s): {_describe(exc)}",
                        attempts=attempt,
                    ) from exc
                delay = cfg.backoff_s * 2 ** (attempt - 1)
                log.warning(
                    "model call to %s: attempt %d/%d failed (%s); retrying in %.2f s",
                    cfg.base_url,
                    attempt,
                    attempts,
                    _describe(exc),
                    delay,
                )
                time.sleep(delay)
        latency = time.perf_counter() - start

        if not response.choices:
            raise ModelCallError(f"{cfg.base_url} ({self.model}) returned no choices", attempts=attempt)
        usage = response.usage
        return Completion(
            text=response.choices[0].message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            latency_s=latency,
            attempts=attempt,
            model=self.model,
            backend=self.backend,
        )

    def check_available(self) -> None:
        """List the server's models with a short timeout; fail in one line if the server is not there."""
        client = self._client.with_options(timeout=min(CHECK_TIMEOUT_S, self.cfg.timeout_s), max_retries=0)
        try:
            served = [m.id for m in client.models.list()]
        except openai.OpenAIError as exc:
            raise ModelUnavailableError(
                f"model server {self.cfg.base_url} is not answering ({_describe(exc)}); "
                "start it or point model.base_url at one"
            ) from exc
        if self.model not in served:
            # llama.cpp and some proxies answer for any model name, so this is only worth a warning.
            log.warning("%s does not list model %s (it lists %s)", self.cfg.base_url, self.model, served[:5])
