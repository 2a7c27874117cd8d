"""Swift, the fast proposer (paper §3): the embedded imitation ranker (default), its LightGBM reranker and
the Flan-T5 backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fastslow.core.proposal import MemoryHint, Proposal, Proposer, RankedAction
from fastslow.errors import UsageError
from fastslow.swift.config import SwiftConfig

if TYPE_CHECKING:  # the policy pulls in numpy and the feature code: loaded when a policy is made
    from fastslow.swift.policy import SafetyPolicy
    from fastslow.swift.rerank import Encoder


def make_proposer(
    config: SwiftConfig,
    top_k: int | None = None,
    *,
    box_features: bool = False,
    embedder: Callable[[], tuple[str, Encoder]] | None = None,
) -> Proposer:
    """Build the Swift backend named by ``config.backend``. ``box_features``: the imitation ranker reads
    the thermometer readings against the task's answer boxes (``swift.answer_box``: hand-written task
    logic, on with ``procedures.enabled``); off, those two feature columns stay 0. ``embedder``: makes
    the sentence encoder a reranker fitted with semantic columns needs (``models.embeddings.minilm_encoder``;
    the caller composes it, Swift does not import the models)."""
    k = top_k if top_k is not None else config.top_k
    if config.backend in ("imitation", "rerank"):
        from fastslow.swift.imitation import ImitationSwift, SwiftWeights

        path = config.weights_file()
        linear = ImitationSwift(SwiftWeights.load(path), top_k=k, box_features=box_features)
        if config.backend == "imitation" or config.rerank_path is None:
            return linear
        from fastslow.swift.rerank import Reranker, RerankSwift, sha256_of

        return RerankSwift(linear, Reranker.load(Path(config.rerank_path)), sha256_of(path), embedder)
    if not config.model_path:
        raise UsageError("swift.backend=t5 needs swift.model_path: a local seq2seq checkpoint directory")
    from fastslow.swift.t5 import T5Swift

    return T5Swift(
        config.model_path, top_k=k, num_beams=max(config.num_beams, k), max_new_tokens=config.max_new_tokens
    )


def check_swift(config: SwiftConfig) -> None:
    """Fail fast (UsageError) when the configured Swift checkpoint is not there - before an evaluation
    writes anything, rather than in every worker."""
    if config.backend == "t5":
        if not config.model_path:
            raise UsageError("swift.backend=t5 needs swift.model_path: a local seq2seq checkpoint directory")
        if not Path(config.model_path).is_dir():
            raise UsageError(f"T5 Swift checkpoint directory not found: {config.model_path}")
    else:
        path = config.weights_file()
        if path is not None and not path.is_file():
            raise UsageError(f"Swift model not found: {config.model_path}")
    if config.rerank_path is not None:
        from fastslow.swift.rerank import Reranker, sha256_of

        linear = sha256_of(config.weights_file())
        Reranker.load(Path(config.rerank_path)).require_linear(linear)


def make_policy(config: SwiftConfig) -> SafetyPolicy:
    """The safety policy of a Swift-only agent, with the focus targets learnt by the imitation model."""
    from fastslow.swift.policy import SafetyPolicy

    focus: dict[str, set[str]] = {}
    try:
        from fastslow.swift.imitation import SwiftWeights

        linear = config.backend in ("imitation", "rerank")
        path = config.weights_file() if linear else None
        focus = SwiftWeights.load(path).focus_words
    except UsageError:
        focus = {}
    return SafetyPolicy(
        focus_words=focus,
        repeat_penalty=config.repeat_penalty,
        window=config.loop_window,
        focus_rule=config.focus_rule,
    )


__all__ = [
    "MemoryHint",
    "Proposal",
    "Proposer",
    "RankedAction",
    "check_swift",
    "make_policy",
    "make_proposer",
]
