"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM).

``make_model(cfg)`` builds the backend a ``ModelConfig`` names; ``call_model`` calls it and logs a typed
``ModelCall`` event. Backends are imported on demand, so loading a config does not import openai or llama.cpp.
"""

from __future__ import annotations

from fastslow.models.base import (
    CHARS_PER_TOKEN,
    ChatModel,
    CircuitOpenError,
    Completion,
    ConstraintViolationError,
    FoldSystem,
    Message,
    ModelCallError,
    call_model,
    estimate_tokens,
    fold_system,
)
from fastslow.models.config import ModelConfig
from fastslow.models.constraint import Choice, Constraint, ConstraintError, Grammar, Regex, to_gbnf


def make_model(cfg: ModelConfig) -> ChatModel:
    """The backend ``cfg.kind`` names. Raises ``ModelUnavailableError`` for a missing model file or API key;
    call ``check_available()`` on the result before an eval to find a server that is down."""
    backend = _backend(cfg)
    return FoldSystem(backend) if cfg.system_message == "fold" else backend


def _backend(cfg: ModelConfig) -> ChatModel:
    if cfg.kind == "openai":
        from fastslow.models.openai_backend import OpenAIChatModel

        return OpenAIChatModel(cfg)
    if cfg.kind == "local":
        from fastslow.models.local_backend import LocalChatModel

        return LocalChatModel(cfg)
    from fastslow.models.scripted import ScriptedModel

    return ScriptedModel(cfg.replies, cycle=cfg.cycle, model=cfg.model or "scripted")


__all__ = [
    "CHARS_PER_TOKEN",
    "ChatModel",
    "Choice",
    "CircuitOpenError",
    "Completion",
    "Constraint",
    "ConstraintError",
    "ConstraintViolationError",
    "FoldSystem",
    "Grammar",
    "Message",
    "ModelCallError",
    "ModelConfig",
    "Regex",
    "call_model",
    "estimate_tokens",
    "fold_system",
    "make_model",
    "to_gbnf",
]
