"""Env wrappers around a world's adapter; the episode step limit is one (paper §4: SwiftSage's
evaluation caps an episode at a fixed number of env steps, 300 in the paper).

Gymnasium's ``TimeLimit`` is the model: the limit is not part of the environment's dynamics, so the
adapter knows nothing about it and a wrapper ends the episode. ``TimeLimit(env, n)`` turns the n-th
step of an episode that is still running into ``EndState.STEP_LIMIT``; a step that ends the episode on
its own (success, -100 failure) keeps its end state, so success at step n is a success. Nothing else
of the ``StepResult`` changes.

A world may add its own wrappers (ScienceWorld: the paper authors' valid-action filter,
``fastslow.env.scienceworld.wrappers.ValidFilter``), which its ``World.make_env`` stacks under the
runner's ``TimeLimit``; ``unwrapped`` sees through them all.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, Self

from fastslow.core.step import StepResult
from fastslow.events import EndState


class Env(Protocol):
    """What the episode loop needs from an environment: the adapter, or a wrapper around it."""

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult: ...

    def step(self, action: str) -> StepResult: ...

    @property
    def gold_actions(self) -> tuple[str, ...]:
        """Gold action sequence of the current episode (empty unless reset with ``gold=True``)."""
        ...

    def close(self) -> None: ...


class Wrapper:
    """An ``Env`` around another one; everything passes through unless a subclass changes it."""

    def __init__(self, env: Env) -> None:
        self.env = env

    @property
    def unwrapped(self) -> Env:
        """The innermost environment (the adapter), through any stack of wrappers."""
        env = self.env
        while isinstance(env, Wrapper):
            env = env.env
        return env

    @property
    def gold_actions(self) -> tuple[str, ...]:
        return self.env.gold_actions

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        return self.env.reset(task, variation, gold=gold)

    def step(self, action: str) -> StepResult:
        return self.env.step(action)

    def close(self) -> None:
        self.env.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TimeLimit(Wrapper):
    """End an episode with ``EndState.STEP_LIMIT`` once ``max_steps`` env steps were taken.

    Steps are counted here, from the last ``reset`` (which is step 0), as Gymnasium's wrapper counts
    its elapsed steps; they equal ``StepResult.steps``. ``close`` and ``gold_actions`` pass through.
    """

    def __init__(self, env: Env, max_steps: int) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        super().__init__(env)
        self.max_steps = max_steps
        self._elapsed = 0

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        self._elapsed = 0
        return self.env.reset(task, variation, gold=gold)

    def step(self, action: str) -> StepResult:
        result = self.env.step(action)
        self._elapsed += 1
        if result.end is EndState.RUNNING and self._elapsed >= self.max_steps:
            return replace(result, end=EndState.STEP_LIMIT)
        return result
