"""Cleaning a model's action text before it is compared with a world's valid actions (any world)."""

from __future__ import annotations

import re
from functools import lru_cache

_QUOTES = re.compile(r"[`\"“”‘’*]")
_TRAILING = re.compile(r"[\s.;:!,]+$")
_EDGE_APOSTROPHES = re.compile(r"^'+|'+$")


@lru_cache(maxsize=1 << 16)
def clean(action: str) -> str:
    """Lower-case, unquoted, single-spaced action text (no trailing punctuation); every word kept."""
    text = _QUOTES.sub("", action).strip().lower()
    text = _TRAILING.sub("", text)
    text = _EDGE_APOSTROPHES.sub("", text)
    return " ".join(text.split())
