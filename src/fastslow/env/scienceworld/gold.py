"""ScienceWorld's gold paths as training data reads them (``WorldSemantics.gold_spellings`` and
``simplify_gold``; docs/swift.md, "Gold-trajectory dataset"), moved here from ``swift.data`` unchanged.

- **Spellings.** ScienceWorld's gold paths write some actions otherwise than its valid-action list:
  "examine X" for "look at X", "pick up X in inventory" for "pick up X", "pour A in <room> in B" for
  "pour A into B" (``rename_candidates``).
- **The "easy" simplification.** Gold paths are written for the full game, so under "easy" (doors start
  open, teleport) they are rewritten before replay: "open door to X" is dropped, "go to <room>" becomes
  "teleport to <room>" and consecutive teleports merge (``rewrite_for_easy``). ``swift.data`` keeps the
  rewritten path only if it still reaches score 100.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_POUR = re.compile(r"^pour (.+?) in (?:.+?) in (.+)$")


def rename_candidates(action: str) -> list[str]:
    """Spellings of a gold action that ScienceWorld's valid-action list may use instead."""
    out: list[str] = []
    if " in inventory" in action:
        out.append(action.replace(" in inventory", ""))
    for a in [action, *out]:
        if a.startswith("examine "):
            out.append("look at " + a[len("examine ") :])
        match = _POUR.match(a)
        if match:
            out.append(f"pour {match.group(1)} into {match.group(2)}")
            out.append(f"pour {match.group(1)} in {match.group(2)}")
    return out


def rewrite_for_easy(actions: Sequence[str]) -> list[str]:
    """Drop door opening, teleport instead of walking, merge consecutive teleports."""
    out: list[str] = []
    for action in actions:
        if action.startswith("open door to "):
            continue
        if action.startswith("go to "):
            action = "teleport to " + action[len("go to ") :]
        if action.startswith("teleport to ") and out and out[-1].startswith("teleport to "):
            out[-1] = action
            continue
        out.append(action)
    return out
