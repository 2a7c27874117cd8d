"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): the protocol every backend meets.

Sage and the Critic only ever see ``ChatModel.complete``: messages in; text, token usage and latency out.
``call_model`` is the one place a call is turned into a typed ``ModelCall`` event, so every call of every
backend is logged the same way, failures included, and token and latency metrics come from the logs.

A call may pass a ``Constraint`` (``models.constraint``: a choice among strings, a regular expression, a
GBNF grammar): the backend makes the model generate only answers that satisfy it, and an answer that still
does not (cut short by ``max_tokens``, a server that ignored the constraint) is a
``ConstraintViolationError``, never returned as if it did. ``check_constraints()`` finds a server that
cannot do it, before an eval.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict

from fastslow.errors import ModelError, ModelUnavailableError
from fastslow.events import EventSink, ModelCall
from fastslow.models.constraint import Choice, Constraint, ConstraintError, violation

CHARS_PER_TOKEN = 4.0
"""Characters per token when a prompt's size is estimated before it is sent (Sage's
``lite_above_tokens`` and ``prompt_budget_tokens``, the Critic's ``prompt_budget_tokens``): about what
cl100k, the authors' count, gives for English text."""


def estimate_tokens(text: str) -> int:
    """A prompt's size in tokens, estimated from its length (``CHARS_PER_TOKEN``)."""
    return int(len(text) / CHARS_PER_TOKEN)


class Message(TypedDict):
    """One chat message in the OpenAI shape, which every backend (and chat template) understands."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    """What a model call returns: the text plus what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    """Wall time of the whole call, retries and back-off included: what the agent waited."""
    attempts: int
    """Requests made, retries included (1 when the first one succeeded)."""
    model: str
    backend: str
    cached: bool = False
    """Served by the response cache (``models.cache``), not by the model: the text and token counts are
    the stored answer's, ``latency_s`` the look-up's, ``attempts`` 0."""


class ModelCallError(ModelError):
    """A call failed for good; ``attempts`` says how many requests were made, for the event log."""

    def __init__(self, message: str, *, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class ConstraintViolationError(ModelCallError):
    """A constrained call's answer does not satisfy its constraint: cut short by ``max_tokens``, or the
    server ignored the constraint. A failed call (the caller falls back), never a wrong answer returned."""


class CircuitOpenError(ModelError):
    """The call was not sent: its role's circuit breaker is open (``models.breaker``). Callers fall back as
    on any ``ModelError``; ``call_model`` logs it as a skipped call."""


class ChatModel(Protocol):
    """A language model Sage and the Critic can talk to; selected by ``ModelConfig.kind``."""

    backend: str
    """Backend name: openai, local, scripted."""
    model: str
    """Model name as the backend knows it (recorded in every ModelCall event)."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        """Answer the conversation; ``None`` parameters fall back to the backend's configuration.

        With a ``constraint`` the answer satisfies it (a ``Choice``: exactly one option; a ``Regex``: the
        whole text matches) or the call raises ``ConstraintViolationError``; a constraint the backend
        cannot send is a ``ConstraintError``. Without one (None) the request is exactly the unconstrained
        one. Raises ``ModelError`` when the call fails after the backend's retries."""
        ...

    def check_available(self) -> None:
        """Raise ``ModelUnavailableError`` with a one-line reason if calls cannot work (before an eval)."""
        ...

    def check_constraints(self) -> None:
        """Raise ``ModelUnavailableError`` with a one-line reason if constrained calls cannot work: the
        server refuses or ignores the constraint form configured for it (a tiny constrained probe), or no
        form is configured. Call it before an eval that will pass constraints, after ``check_available``."""
        ...


class FoldSystem:
    """A backend whose model is called without a system message (``system_message: fold``): the system
    prompt is put in front of the first user message, separated by a blank line."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.model = inner.model

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        # call_model folds before logging (the event shows what the model got); a direct call folds here.
        return self.inner.complete(
            fold_system(messages),
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            constraint=constraint,
        )

    def check_available(self) -> None:
        self.inner.check_available()

    def check_constraints(self) -> None:
        self.inner.check_constraints()


def fold_system(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every system message folded into the first user message after it."""
    pending: list[str] = []
    out: list[Message] = []
    for m in messages:
        if m["role"] == "system":
            pending.append(m["content"])
        elif m["role"] == "user" and pending:
            out.append(Message(role="user", content="\n\n".join([*pending, m["content"]])))
            pending = []
        else:
            out.append(m)
    if pending:  # a system message with no user message after it still reaches the model
        out.append(Message(role="user", content="\n\n".join(pending)))
    return out


def call_model(
    model: ChatModel,
    messages: Sequence[Message],
    *,
    sink: EventSink,
    role: str,
    step: int,
    max_tokens: int | None = None,
    temperature: float | None = None,
    stop: Sequence[str] | None = None,
    constraint: Constraint | None = None,
    record_text: bool = True,
) -> Completion:
    """Call ``model`` and emit exactly one ``ModelCall`` event, whether the call succeeds or fails.

    A failure is logged with its error and re-raised, so the caller can fall back (Sage's plan is skipped,
    Swift keeps acting) while the log still shows the attempt. A call the role's circuit breaker skipped
    (``CircuitOpenError``) is logged with ``skipped`` set, no error, no attempt and no messages (nothing
    was sent), and re-raised the same way. ``record_text`` puts the prompt and the reply into the event
    (on by default: the logs are the audit trail). A ``constraint`` is passed on to the model, and its
    kind (choice, regex, grammar) is recorded in the event. An answer the response cache served
    (``Completion.cached``, ``models.cache``) is logged with ``cached`` set.
    """
    if isinstance(model, FoldSystem):
        messages = fold_system(messages)
    kind = None if constraint is None else constraint.kind
    logged_messages = (
        [{"role": m["role"], "content": m["content"]} for m in messages] if record_text else None
    )
    start = time.perf_counter()
    try:
        completion = model.complete(
            messages, max_tokens=max_tokens, temperature=temperature, stop=stop, constraint=constraint
        )
    except CircuitOpenError as exc:
        sink.emit(
            ModelCall(
                step=step,
                role=role,
                backend=model.backend,
                model=model.model,
                attempts=0,
                skipped=str(exc),
                constraint=kind,
            )
        )
        raise
    except Exception as exc:
        sink.emit(
            ModelCall(
                step=step,
                role=role,
                backend=model.backend,
                model=model.model,
                latency_s=time.perf_counter() - start,
                attempts=exc.attempts if isinstance(exc, ModelCallError) else 1,
                error=f"{type(exc).__name__}: {exc}",
                messages=logged_messages,
                constraint=kind,
            )
        )
        raise
    sink.emit(
        ModelCall(
            step=step,
            role=role,
            backend=completion.backend,
            model=completion.model,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            latency_s=completion.latency_s,
            attempts=completion.attempts,
            messages=logged_messages,
            completion=completion.text if record_text else None,
            constraint=kind,
            cached=completion.cached,
        )
    )
    return completion


def check_answer(completion: Completion, constraint: Constraint | None, max_tokens: int) -> Completion:
    """``completion`` itself when its text satisfies ``constraint`` (or there is none); otherwise a
    ``ConstraintViolationError`` saying why, and whether ``max_tokens`` cut the answer short."""
    why = None if constraint is None else violation(constraint, completion.text)
    if why is None:
        return completion
    if completion.completion_tokens >= max_tokens:
        # A choice tells a cut-short answer (a prefix of an option) from an ignored constraint; a regex
        # cannot be matched partially here, so it only says that the limit was reached.
        if isinstance(constraint, Choice):
            if any(o.startswith(completion.text) for o in constraint.options):
                why += f" (cut short by max_tokens={max_tokens})"
        else:
            why += f" (it used all max_tokens={max_tokens}: cut short?)"
    raise ConstraintViolationError(
        f"{completion.backend} model {completion.model} {why}", attempts=completion.attempts
    )


PROBE_CONSTRAINT = Choice(("7f3kq", "q9z2x"))
"""What ``check_constraints`` asks for: two strings no model says unprompted, so a server that ignores the
constraint answers something else (it is asked to say hello) and is caught."""
PROBE_MESSAGES: list[Message] = [Message(role="user", content="Say hello.")]
PROBE_MAX_TOKENS = 16
"""Enough for either probe option even spelled one character per token."""


def probe_constraints(model: ChatModel, where: str, hint: str = "") -> None:
    """One tiny constrained call (``PROBE_CONSTRAINT``) through ``model.complete``; a failure, or an answer
    that is not one of the probe's options, is a one-line ``ModelUnavailableError`` naming ``where``, with
    ``hint`` (what to do) after it."""
    try:
        model.complete(
            PROBE_MESSAGES,
            max_tokens=PROBE_MAX_TOKENS,
            temperature=0.0,
            stop=[],
            constraint=PROBE_CONSTRAINT,
        )
    except ConstraintViolationError as exc:
        raise ModelUnavailableError(
            f"{where} ignored a constrained request ({_one_line(exc)}){hint}"
        ) from exc
    except (ModelError, ConstraintError) as exc:
        raise ModelUnavailableError(f"{where} failed a constrained request ({_one_line(exc)}){hint}") from exc


PROBE_ERROR_CHARS = 300
"""How much of the probe's error the start-up line quotes (a server's validation error can be long)."""


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= PROBE_ERROR_CHARS else text[: PROBE_ERROR_CHARS - 3] + "..."
