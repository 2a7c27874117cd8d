"""What ScienceWorld returns after ``reset`` or ``step`` (paper §3: the state every component reads).

A plain frozen record: the adapter (``env/scienceworld.py``) builds it, everything else only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastslow.events import EndState


@dataclass(frozen=True)
class StepResult:
    """Everything the agent sees after ``reset`` or ``step``."""

    observation: str
    score: int
    """Current score, 0-100; -100 once the task has failed."""
    reward: int
    """Score change caused by this step."""
    moves: int
    """ScienceWorld's move counter."""
    steps: int
    """Env steps taken in this episode (``reset`` is step 0)."""
    look: str
    inventory: str
    task_description: str
    valid_actions: tuple[str, ...]
    end: EndState

    @property
    def done(self) -> bool:
        return self.end is not EndState.RUNNING
