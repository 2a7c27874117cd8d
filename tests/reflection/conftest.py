"""Fixtures of the SRM tests: real ScienceWorld states, played once per session."""

from __future__ import annotations

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from reflection.helpers import PLAN, State, play


@pytest.fixture(scope="session")
def states(env: ScienceWorldAdapter) -> dict[str, State]:
    """``{"mix:kitchen": State, ...}``, one per PLAN entry."""
    return {name: play(env, task, variation, actions) for name, (task, variation, actions) in PLAN.items()}
