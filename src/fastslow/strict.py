"""Base class of every config section: unknown keys are errors, field docstrings become descriptions.

Kept apart from ``fastslow.config`` so component configs (models, memory, reflection) can use it
without importing the whole run configuration.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """``extra="forbid"`` so a typo in an ablation cannot silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=True)
