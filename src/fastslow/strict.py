"""Base class of every config section: unknown keys are errors, field docstrings become descriptions,
and a boolean is never taken for a number.

Kept apart from ``fastslow.config`` so component configs (models, memory, reflection) can use it
without importing the whole run configuration.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

_NUMBERS = (int, float)
_SEQUENCES = (list, tuple, set, frozenset)


class StrictModel(BaseModel):
    """``extra="forbid"`` so a typo in an ablation cannot silently fall back to a default; a boolean
    where a number is meant (``-o env.step_limit=true``, ``top_k: yes``) is refused rather than read as
    1 or 0, in scalars and in lists or mappings of numbers. Numbers given as YAML ints or floats load
    as pydantic validates them (an int where a float is meant included)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and _bool_for_number(field.annotation, value):
            raise ValueError("a number is meant here, not true/false")
        return value


def _bool_for_number(annotation: Any, value: Any) -> bool:
    """Whether ``value`` holds a boolean where ``annotation`` means a number (and no boolean)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _bool_for_number(typing.get_args(annotation)[0], value)
    if origin is typing.Union or origin is types.UnionType:
        options = typing.get_args(annotation)
        if any(o is bool or o is Any or o is object for o in options):
            return False
        return any(_bool_for_number(o, value) for o in options)
    if annotation in _NUMBERS:
        return isinstance(value, bool)
    args = typing.get_args(annotation)
    if origin in _SEQUENCES and isinstance(value, _SEQUENCES) and args:
        item = args[0]
        return any(_bool_for_number(item, v) for v in value)
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return any(_bool_for_number(args[1], v) for v in value.values())
    return False
