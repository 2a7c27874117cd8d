"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): a scripted model for tests.

Deterministic replies let tests drive the real controller and the real ScienceWorld through the same
``ChatModel`` seam the LLM backends use, and check what the agent asked (``prompts``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from fastslow.models.base import Completion, ConstraintViolationError, Message, ModelCallError
from fastslow.models.constraint import Constraint, violation

Responder = Callable[[Sequence[Message]], str]
"""Computes a reply from the conversation (for tests whose answer depends on the prompt)."""


class ScriptedModel:
    """Replies from a list, in order (cycled, or a ``ModelError`` once used up), or from a callable.

    A reply is returned exactly as scripted: ``max_tokens``, ``temperature`` and ``stop`` are ignored.
    Token counts are whitespace-separated words. A call with a ``constraint`` gets the same reply, checked
    against it: one that does not satisfy a ``Choice`` or ``Regex`` is a ``ConstraintViolationError`` (a
    test scripted a reply its caller's constraint forbids); a ``Grammar`` is not checked."""

    backend = "scripted"

    def __init__(self, replies: Sequence[str] | Responder, *, cycle: bool = False, model: str = "scripted"):
        self.model = model
        self._replies: list[str] | None = None if callable(replies) else list(replies)
        self._responder: Responder | None = replies if callable(replies) else None
        self._cycle = cycle
        self._next = 0
        self.prompts: list[list[Message]] = []
        """Every conversation received, in call order (copied: later changes by the caller are not seen)."""
        self.constraints: list[Constraint | None] = []
        """The constraint of every call, in call order (None: an unconstrained call)."""

    def _reply(self, messages: Sequence[Message]) -> str:
        if self._responder is not None:
            return self._responder(messages)
        assert self._replies is not None
        if self._next >= len(self._replies):
            if not self._cycle or not self._replies:
                raise ModelCallError(f"scripted model used up its {len(self._replies)} replies")
            self._next = 0
        reply = self._replies[self._next]
        self._next += 1
        return reply

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        start = time.perf_counter()
        self.prompts.append([Message(role=m["role"], content=m["content"]) for m in messages])
        self.constraints.append(constraint)
        text = self._reply(messages)
        why = None if constraint is None else violation(constraint, text)
        if why is not None:
            raise ConstraintViolationError(f"scripted model {self.model} {why}")
        return Completion(
            text=text,
            prompt_tokens=sum(len(m["content"].split()) for m in messages),
            completion_tokens=len(text.split()),
            latency_s=time.perf_counter() - start,
            attempts=1,
            model=self.model,
            backend=self.backend,
        )

    def check_available(self) -> None:
        """Always available: nothing to reach."""

    def check_constraints(self) -> None:
        """Always able: replies are checked against each call's constraint, and no reply is used up."""
