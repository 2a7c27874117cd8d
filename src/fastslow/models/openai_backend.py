"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): any OpenAI-compatible server.

The paper serves Qwen2.5-7B-Instruct-1M with vLLM; the same code talks to SGLang, Ollama, a llama.cpp
server or OpenAI itself. The client's own retries are off (``max_retries=0``): the loop below retries
connection errors, timeouts, 408, 429, 5xx and answers that are not chat completions with exponential
back-off, so each attempt is counted (and lands in the ``ModelCall`` event) and logged (at INFO). Other
errors (400, 401, 404) are not retried: repeating them cannot help.

The whole call, attempts and back-off waits together, is bounded by ``call_budget_s``: each attempt may wait
the smaller of ``timeout_s`` and the budget left, and a retry only starts while enough budget is left for it.

The body is read raw and checked here (``parse_chat_completion``) rather than left to the client: a proxy or
a wrong ``base_url`` can answer 200 with an HTML page or JSON of another shape, which the client hands back
as a ``str`` or a half-built object; such an answer is a failed (and retried) attempt, never an
AttributeError that ends the eval.

A constrained call (``models.constraint``) is sent in the form ``ModelConfig.constraint_format`` names
(``constraint_request``): llama.cpp's ``grammar``, vLLM's ``structured_outputs`` or older ``guided_*``
fields, or OpenAI's ``response_format`` JSON schema. Servers ignore fields they do not know, so a wrong
form would silently give unconstrained answers: each answer is checked (``base.check_answer``), and
``check_constraints`` sends one constrained probe before an eval so a server that refuses or ignores the
form stops the run with one line at start.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from typing import Any, TypeVar

import openai
from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from fastslow.errors import ModelUnavailableError
from fastslow.models.base import (
    Completion,
    ConstraintViolationError,
    Message,
    ModelCallError,
    check_answer,
    probe_constraints,
)
from fastslow.models.config import ConstraintFormat, ModelConfig
from fastslow.models.constraint import Choice, Constraint, ConstraintError, Grammar, Regex, to_gbnf
from fastslow.redact import redact_text

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 5.0
"""Start-up check: a server that cannot list its models within this time is treated as down."""

MIN_ATTEMPT_S = 0.5
"""A retry starts only with at least this much budget left (or ``timeout_s``, if smaller): an attempt cut
shorter cannot get an LLM reply, it would only add a request the server works on for nothing."""

SNIPPET_CHARS = 80
"""How much of a malformed body an error quotes: enough to recognise an HTML page or a proxy's message."""

PROBE_TIMEOUT_S = 30.0
"""Start-up constraint probe (``check_constraints``): one attempt, at most this long (or ``timeout_s``)."""

ANSWER_FIELD = "answer"
"""The one property of the JSON object the openai form's schema asks for (OpenAI's structured outputs
need an object at the top): the constrained answer is its value."""


class NotACompletionError(Exception):
    """An HTTP 200 whose body is not a usable chat completion (or model list)."""


class _Lenient(BaseModel):
    # Servers add their own fields (vLLM's prompt_logprobs, Ollama's system_fingerprint): only the fields
    # read below are checked.
    model_config = ConfigDict(extra="ignore")


class _ChatMessage(_Lenient):
    content: StrictStr | None = None
    """The reply; None when the model only called tools (read as empty text)."""


class _Choice(_Lenient):
    message: _ChatMessage
    """The first choice's message is the reply."""


class _Usage(_Lenient):
    prompt_tokens: int | None = Field(None, ge=0)
    """Prompt tokens the server counted (None or absent: 0)."""
    completion_tokens: int | None = Field(None, ge=0)
    """Generated tokens the server counted (None or absent: 0)."""


class _ChatCompletionBody(_Lenient):
    choices: list[_Choice] = Field(min_length=1)
    """At least one choice: a completion without one has no reply to give."""
    usage: _Usage | None = None
    """Token counts; some servers leave them out (then 0)."""


class _ModelEntry(_Lenient):
    id: StrictStr
    """The model's name as the server knows it."""


class _ModelList(_Lenient):
    data: list[_ModelEntry]
    """The served models (``GET /v1/models``)."""


_Shape = TypeVar("_Shape", bound=_Lenient)


def _snippet(body: str) -> str:
    # repr keeps the message on one line whatever the body holds (HTML has newlines).
    text = body.strip()
    return repr(text[:SNIPPET_CHARS] + ("..." if len(text) > SNIPPET_CHARS else ""))


def _parse_body(body: str, shape: type[_Shape], what: str) -> _Shape:
    try:
        return shape.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:  # json.JSONDecodeError is a ValueError
        raise NotACompletionError(f"answered 200 with a body that is not {what}: {_snippet(body)}") from exc


def parse_chat_completion(body: str) -> tuple[str, int, int]:
    """Text, prompt tokens and completion tokens of a chat-completion body; ``NotACompletionError`` if the
    body is not one (not JSON, no ``choices``, a choice without a ``message``, a non-text ``content``)."""
    parsed = _parse_body(body, _ChatCompletionBody, "a chat completion")
    usage = parsed.usage or _Usage()
    return (
        parsed.choices[0].message.content or "",
        usage.prompt_tokens or 0,
        usage.completion_tokens or 0,
    )


def constraint_request(form: ConstraintFormat, constraint: Constraint) -> dict[str, Any]:
    """The request fields that send ``constraint`` in ``form``: ``{"extra_body": {...}}`` (fields the
    openai client does not know, merged over the config's ``extra_body``) or ``{"response_format": ...}``.
    A constraint the form cannot carry (any, for ``none``; a grammar, for ``openai``) is a
    ``ConstraintError``."""
    if form == "none":
        raise ConstraintError(
            "a constrained call, but model.constraint_format is none: the server's form for constraints is "
            "not configured (set it to llama_cpp, vllm, vllm_guided or openai; docs/models.md)"
        )
    if form == "llama_cpp":
        return {"extra_body": {"grammar": to_gbnf(constraint)}}
    if form in ("vllm", "vllm_guided"):
        value: list[str] | str
        if isinstance(constraint, Choice):
            key, value = "choice", list(constraint.options)
        elif isinstance(constraint, Regex):
            key, value = "regex", constraint.body  # vLLM matches the whole answer: no anchors needed
        else:
            key, value = "grammar", constraint.gbnf  # vLLM's xgrammar and guidance backends read GBNF
        if form == "vllm":
            return {"extra_body": {"structured_outputs": {key: value}}}
        return {"extra_body": {f"guided_{key}": value}}
    if isinstance(constraint, Grammar):
        raise ConstraintError(
            "a grammar constraint, but model.constraint_format is openai: OpenAI's response_format has no "
            "grammar (use a choice or a regex, or a server with grammars: llama_cpp, vllm)"
        )
    answer: dict[str, Any] = {"type": "string"}
    if isinstance(constraint, Choice):
        answer["enum"] = list(constraint.options)
    else:
        answer["pattern"] = (
            f"^(?:{constraint.body})$"  # a JSON-schema pattern matches anywhere unless anchored
        )
    schema = {
        "type": "object",
        "properties": {ANSWER_FIELD: answer},
        "required": [ANSWER_FIELD],
        "additionalProperties": False,
    }
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "constrained_answer", "strict": True, "schema": schema},
        }
    }


def unwrap_json_answer(text: str) -> str:
    """The answer inside the JSON object the openai form asks for (``{"answer": "..."}``);
    ``ConstraintViolationError`` when the text is not such an object (cut short, or the server ignored
    ``response_format``)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    answer = value.get(ANSWER_FIELD) if isinstance(value, dict) else None
    if not isinstance(answer, str):
        raise ConstraintViolationError(
            f"answered {_snippet(text)}, not the JSON object {{{ANSWER_FIELD!r}: ...}} its response_format "
            "asked for"
        )
    return answer


def _check_grammar(gbnf: str) -> None:
    """llama.cpp's parser on a grammar about to go to llama.cpp's server, which dies on one it cannot
    parse (a segmentation fault in llama-cpp-python 0.3's server): skipped where the embedded model's
    llama-cpp-python and GGUF are not installed."""
    from fastslow.models.local_backend import check_gbnf

    try:
        check_gbnf(gbnf)
    except ModelUnavailableError as exc:
        log.debug("grammar sent unchecked: %s", exc)


def _is_retryable(exc: Exception) -> bool:
    if isinstance(exc, NotACompletionError):  # a proxy hiccup, like a 502 page: the next try may work
        return True
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    return isinstance(exc, openai.APIStatusError) and (
        exc.status_code in (408, 429) or exc.status_code >= 500
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, NotACompletionError):
        return str(exc)
    if isinstance(exc, openai.APIStatusError):
        return redact_text(f"HTTP {exc.status_code}: {exc.message}")
    return redact_text(f"{type(exc).__name__}: {exc}")  # a client error may quote the request's URL


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
        # The server as errors and log lines name it: base_url without its password, if it has one (an
        # error becomes an event field, a console line, a report's data).
        self.where = redact_text(cfg.base_url)
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
        constraint: Constraint | None = None,
    ) -> Completion:
        cfg = self.cfg
        limit = cfg.max_tokens if max_tokens is None else max_tokens
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "max_tokens": limit,
            "temperature": cfg.temperature if temperature is None else temperature,
        }
        stops = list(cfg.stop if stop is None else stop)
        if stops:
            request["stop"] = stops
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.extra_body:
            request["extra_body"] = cfg.extra_body
        if constraint is not None:
            fields = constraint_request(cfg.constraint_format, constraint)
            if cfg.constraint_format == "llama_cpp" and isinstance(constraint, Grammar):
                _check_grammar(constraint.gbnf)
            if "extra_body" in fields:
                request["extra_body"] = {**cfg.extra_body, **fields.pop("extra_body")}
            request.update(fields)

        start = time.perf_counter()
        deadline = start + cfg.call_budget_s
        min_attempt = min(cfg.timeout_s, MIN_ATTEMPT_S)
        attempts = cfg.max_retries + 1
        attempt = 0
        while True:
            attempt += 1
            # The first attempt always runs; a retry is only started (below) with min_attempt left, less
            # whatever the back-off sleep overshot (hence the floor: the client needs a positive timeout).
            timeout = min(cfg.timeout_s, max(deadline - time.perf_counter(), 0.01))
            try:
                raw = self._client.chat.completions.with_raw_response.create(**request, timeout=timeout)
                text, prompt_tokens, completion_tokens = parse_chat_completion(raw.text)
                break
            except (openai.OpenAIError, NotACompletionError) as exc:
                failed = f"{self.where} ({self.model}) failed after {attempt} attempt(s)"
                if not _is_retryable(exc) or attempt == attempts:
                    raise ModelCallError(f"{failed}: {_describe(exc)}", attempts=attempt) from exc
                delay = cfg.backoff_s * 2 ** (attempt - 1)
                left = max(deadline - time.perf_counter(), 0.0)
                if left - delay < min_attempt:
                    # Neither the wait nor the retry fits: stop now rather than sleep into the deadline.
                    raise ModelCallError(
                        f"{failed}: its call budget of {cfg.call_budget_s:g} s ran out ({left:.2f} s left,"
                        f" a retry needs {delay:.2f} s back-off + {min_attempt:.2f} s);"
                        f" last error: {_describe(exc)}",
                        attempts=attempt,
                    ) from exc
                # Not a warning: the ModelCall event counts the attempts, and a console line per retry
                # would repeat on every call while a server is down (models.breaker speaks for that).
                log.info(
                    "model call to %s: attempt %d/%d failed (%s); retrying in %.2f s",
                    self.where,
                    attempt,
                    attempts,
                    _describe(exc),
                    delay,
                )
                time.sleep(delay)
        if constraint is not None and cfg.constraint_format == "openai":
            try:
                text = unwrap_json_answer(text)
            except ConstraintViolationError as exc:
                raise ConstraintViolationError(
                    f"{self.backend} model {self.model} {exc}", attempts=attempt
                ) from exc
        completion = Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=time.perf_counter() - start,
            attempts=attempt,
            model=self.model,
            backend=self.backend,
        )
        return check_answer(completion, constraint, limit)

    def check_available(self) -> None:
        """List the server's models with a short timeout; fail in one line if the server is not there or
        answers something that is not a model list (a web page, another API)."""
        url = f"{self.where.rstrip('/')}/models"
        client = self._client.with_options(timeout=min(CHECK_TIMEOUT_S, self.cfg.timeout_s), max_retries=0)
        try:
            raw = client.models.with_raw_response.list()
            listed = _parse_body(raw.text, _ModelList, "a model list")
        except openai.OpenAIError as exc:
            raise ModelUnavailableError(
                f"model server {self.where} is not answering ({_describe(exc)}); "
                "start it or point model.base_url at one"
            ) from exc
        except NotACompletionError as exc:
            raise ModelUnavailableError(
                f"{url} {exc}; is model.base_url the server's OpenAI-compatible root (ending in /v1)?"
            ) from exc
        served = [m.id for m in listed.data]
        if self.model not in served:
            # llama.cpp and some proxies answer for any model name, so this is only worth a warning.
            log.warning("%s does not list model %s (it lists %s)", self.where, self.model, served[:5])

    def check_constraints(self) -> None:
        """One constrained probe in the configured form (``base.probe_constraints``): one attempt, at most
        ``PROBE_TIMEOUT_S``. A server that refuses it (an HTTP error) or ignores it (an answer outside the
        probe's choice) fails in one line, as does ``constraint_format: none``."""
        fmt = self.cfg.constraint_format
        where = f"model server {self.where} ({self.model})"
        hint = "; set model.constraint_format to the form the server speaks (docs/models.md)"
        if fmt == "none":
            raise ModelUnavailableError(
                f"{where}: constrained calls are used but model.constraint_format is none{hint}"
            )
        timeout = min(self.cfg.timeout_s, PROBE_TIMEOUT_S)
        once = self.cfg.model_copy(update={"max_retries": 0, "timeout_s": timeout, "call_budget_s": timeout})
        probe_constraints(OpenAIChatModel(once), f"{where} with constraint_format {fmt}", hint)
