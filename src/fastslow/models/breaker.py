"""A circuit breaker per model role (Sage, the Critic; paper §3, §3.2): a model server that keeps failing
stops costing a call budget on every call.

After ``breaker_after`` failed calls in a row (each one a ``ModelError`` after its own retries and call
budget), the role's model is treated as unavailable for ``breaker_cooldown_s`` seconds: its calls are not
sent but skipped at once (``CircuitOpenError``, a ``ModelError``, so Sage and the Critic fall back as on
a failed call and the episode goes on; ``call_model`` logs each skip as a ``model_call`` event with
``skipped`` set). The first call after the cool-down is sent: an answer closes the breaker, a failure
opens it for another cool-down. A hung server with a call budget of B seconds thus costs about
``breaker_after`` x B, then one B per cool-down, instead of B on every call.

A constrained call whose answer broke its constraint (``ConstraintViolationError``: cut short by
``max_tokens``, or the server ignored the constraint) counts as an answer, not a failure: the server is
there, and skipping its calls would not help.

The console gets one line when the breaker opens and one when it closes; the failed calls in between
are in the event log (``model_call`` events with ``error`` or ``skipped``), not on the console.

Scope: one breaker per role per agent, and a worker process builds one agent (one per seed), so the
state is per worker process and role; workers do not share it, and each one finds out for itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from fastslow.errors import ModelError
from fastslow.models.base import (
    ChatModel,
    CircuitOpenError,
    Completion,
    ConstraintViolationError,
    FoldSystem,
    Message,
)
from fastslow.models.config import ModelConfig
from fastslow.models.constraint import Constraint

log = logging.getLogger(__name__)


class CircuitBreaker:
    """``inner`` behind a circuit breaker for one role (``sage``, ``critic``); a ``ChatModel`` itself.

    ``after`` failed calls in a row open it for ``cooldown_s`` seconds (0: never opens). ``clock`` is
    the monotonic time source (seconds)."""

    def __init__(
        self,
        inner: ChatModel,
        role: str,
        after: int,
        cooldown_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.model = inner.model
        self.role = role
        self.after = after
        self.cooldown_s = cooldown_s
        self.clock = clock
        self.failures = 0
        """Failed calls in a row (reset by an answer)."""
        self.open_until: float | None = None
        """While ``clock()`` is before this, calls are skipped; None: closed."""
        self.skipped = 0
        """Calls skipped since the breaker last opened from closed (reported when it closes)."""
        self.last_error = ""

    @property
    def is_open(self) -> bool:
        """The role is unavailable now: its next call would be skipped."""
        return self.open_until is not None and self.clock() < self.open_until

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        if self.open_until is not None:
            left = self.open_until - self.clock()
            if left > 0:
                self.skipped += 1
                raise CircuitOpenError(
                    f"{self.role} model unavailable after {self.failures} failed calls in a row "
                    f"(last: {self.last_error}); call skipped, next try in {left:.0f} s"
                )
        try:
            completion = self.inner.complete(
                messages, max_tokens=max_tokens, temperature=temperature, stop=stop, constraint=constraint
            )
        except ConstraintViolationError:
            # The server answered, only not within the constraint (cut short, or ignored): not an outage.
            self._answered()
            raise
        except ModelError as exc:
            self._failed(exc)
            raise
        self._answered()
        return completion

    def _answered(self) -> None:
        if self.open_until is not None:
            log.warning(
                "%s model answers again: circuit breaker closed after %d skipped calls",
                self.role,
                self.skipped,
            )
        self.failures, self.open_until, self.skipped = 0, None, 0

    def _failed(self, exc: ModelError) -> None:
        self.failures += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        if not self.after or self.failures < self.after:
            return
        reopened = self.open_until is not None
        self.open_until = self.clock() + self.cooldown_s
        if reopened:
            # A failed try after the cool-down: the outage goes on, already announced.
            log.info(
                "%s model still failing; its calls are skipped for another %g s", self.role, self.cooldown_s
            )
            return
        log.warning(
            "%s model unavailable: %d calls in a row failed (last: %s); its calls are skipped for %g s "
            "(model.breaker_cooldown_s), the agent goes on without it",
            self.role,
            self.failures,
            self.last_error,
            self.cooldown_s,
        )

    def check_available(self) -> None:
        self.inner.check_available()

    def check_constraints(self) -> None:
        self.inner.check_constraints()


def guard(model: ChatModel, role: str, cfg: ModelConfig) -> ChatModel:
    """``model`` behind a ``CircuitBreaker`` for ``role`` with ``cfg``'s ``breaker_after`` and
    ``breaker_cooldown_s``; ``model`` itself when ``breaker_after`` is 0. A ``FoldSystem`` model keeps
    its fold outermost (``call_model`` recognises it to log the folded messages)."""
    if not cfg.breaker_after:
        return model
    if isinstance(model, FoldSystem):
        return FoldSystem(guard(model.inner, role, cfg))
    return CircuitBreaker(model, role, cfg.breaker_after, cfg.breaker_cooldown_s)
