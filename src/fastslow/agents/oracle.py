"""Gold-path replay agent: plays ScienceWorld's own gold action sequence.

Not part of the paper's method: an upper bound and a harness check. ``fastslow eval --config oracle``
must reach score 100 on every episode, which exercises the adapter, episode sets, event log and
metrics end to end before any model is involved.
"""

from __future__ import annotations

from fastslow.agents.base import Decision, EarlyStop, EpisodeContext
from fastslow.core.step import StepResult


class OracleAgent:
    needs_gold = True

    def __init__(self) -> None:
        self._actions: tuple[str, ...] = ()
        self._next = 0

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        if not ctx.gold_actions:
            raise EarlyStop(f"ScienceWorld generated no gold path for {ctx.episode_id}")
        self._actions, self._next = ctx.gold_actions, 0

    def act(self, result: StepResult) -> Decision:
        if self._next >= len(self._actions):
            raise EarlyStop("gold path exhausted before the task was completed")
        action = self._actions[self._next]
        self._next += 1
        return Decision(action, "oracle", f"gold step {self._next}/{len(self._actions)}")

    def observe(self, decision: Decision, result: StepResult) -> None:
        """The oracle ignores feedback: it replays the path as recorded."""
