"""Swift's config section (paper §3: the fast proposer; SwiftSage's Flan-T5 or the embedded imitation
model), owned by the component and composed into ``RunConfig`` by ``fastslow.config``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from fastslow.strict import StrictModel


class SwiftConfig(StrictModel):
    """Swift, the fast proposer (paper §3; SwiftSage's Flan-T5 policy, or the embedded imitation model)."""

    backend: Literal["imitation", "rerank", "t5"] = "imitation"
    """imitation = embedded CPU ranker shipped in the package; rerank = the imitation ranker's top
    candidates re-ordered by a LightGBM reranker (``swift/rerank.py``, the rank extra); t5 = a local
    Flan-T5 seq2seq checkpoint."""
    model_path: str | None = None
    """imitation and rerank: the linear weights file (.npz) from `fastslow train swift`, or
    ``packaged:NAME`` for a weights file shipped in the package (``swift/weights/NAME``, e.g.
    ``packaged:twx-imitation.npz``, TextWorldExpress's Swift); default: the packaged ScienceWorld
    model. t5: directory of a seq2seq checkpoint (required)."""
    rerank_path: str | None = None
    """rerank: the reranker file from `fastslow train swift-rerank` (required; fitted on the linear
    weights of ``model_path``, which it checks)."""
    top_k: int = Field(default=5, ge=1)
    """Ranked candidates returned per decision (SwiftSage keeps the top 5 beams)."""
    min_confidence: float = Field(default=0.1, ge=0, le=1)
    """Below this top-candidate confidence Swift counts as failed for the controller."""
    num_beams: int = Field(default=5, ge=1)
    """t5: beams for beam search (SwiftSage: 5)."""
    max_new_tokens: int = Field(default=16, ge=1)
    """t5: longest generated action in tokens (SwiftSage: 16)."""
    rerank_pool: int = Field(default=50, ge=1)
    """With the safety policy (``controller.swift_policy``): top candidates it re-scores before acting."""
    repeat_penalty: float = Field(default=6.0, ge=0, allow_inf_nan=False)
    """Safety policy: score penalty per execution of the same action in the last `loop_window` steps."""
    loop_window: int = Field(default=10, ge=1)
    """Safety policy: how many recent steps the loop penalty looks at."""
    focus_rule: bool = True
    """Safety policy: the general focus rule: focus only on objects named in the task or focused on in
    training, never on rooms, never twice on the same object, never on contents the task does not name.
    The task procedures and judgements are a component of their own (``procedures.enabled``)."""

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        # A config naming swift.procedures is refused with the key that holds the switch.
        if isinstance(data, dict) and "procedures" in data:
            raise ValueError(
                "swift.procedures is gone: the hand-written task logic has its own switch, "
                "procedures.enabled (true/false)"
            )
        return data

    def weights_file(self) -> Path | None:
        """The linear weights file ``model_path`` names (imitation, rerank): None for the packaged
        default, the shipped file for ``packaged:NAME``, else the path as given."""
        if not self.model_path:
            return None
        if self.model_path.startswith(PACKAGED):
            return Path(str(resources.files("fastslow.swift") / "weights" / self.model_path[len(PACKAGED) :]))
        return Path(self.model_path)

    @model_validator(mode="after")
    def _packaged_weights(self) -> SwiftConfig:
        if self.model_path and self.model_path.startswith(PACKAGED):
            name = self.model_path[len(PACKAGED) :]
            if self.backend == "t5" or not name.endswith(".npz") or "/" in name or "\\" in name:
                raise ValueError(
                    f"{PACKAGED}NAME names a .npz weights file shipped in fastslow (swift/weights/) for "
                    f"backend imitation or rerank; got {self.model_path!r}, backend {self.backend}"
                )
        return self

    @model_validator(mode="after")
    def _t5_knobs_need_t5(self) -> SwiftConfig:
        # A beam setting on the imitation ranker would be silently ignored; compared with the default
        # (not "was it set") so a config read back from its own dump stays valid.
        if self.backend != "t5":
            changed = [f for f in ("num_beams", "max_new_tokens") if getattr(self, f) != _DEFAULTS[f]]
            if changed:
                raise ValueError(
                    f"{', '.join(changed)} is used only by backend t5 (this Swift is {self.backend}): "
                    "set swift.backend=t5 and swift.model_path, or remove it"
                )
        if (self.backend == "rerank") != (self.rerank_path is not None):
            raise ValueError(
                "swift.backend=rerank needs swift.rerank_path (a file from `fastslow train swift-rerank`)"
                if self.backend == "rerank"
                else f"swift.rerank_path is used only by backend rerank (this Swift is {self.backend})"
            )
        return self


_DEFAULTS = {"num_beams": 5, "max_new_tokens": 16}
PACKAGED = "packaged:"
"""``swift.model_path``'s prefix for a weights file shipped in the package (``SwiftConfig.weights_file``):
a configuration names it wherever fastslow is installed."""
