"""Env wrappers around the ScienceWorld adapter; the episode step limit is one (paper §4: SwiftSage's
evaluation caps an episode at a fixed number of env steps, 300 in the paper).

Gymnasium's ``TimeLimit`` is the model: the limit is not part of the environment's dynamics, so the
adapter knows nothing about it and a wrapper ends the episode. ``TimeLimit(env, n)`` turns the n-th
step of an episode that is still running into ``EndState.STEP_LIMIT``; a step that ends the episode on
its own (success, -100 failure) keeps its end state, so success at step n is a success. Nothing else
of the ``StepResult`` changes.

``ValidFilter(env)`` replaces ``StepResult.valid_actions`` by the paper authors' filtered list
(``fastslow.env.valid.filter_valid``) after every reset and step (``env.valid_filter: authors``): the
filter is their evaluation code's view of a state, not ScienceWorld's, so it is a wrapper too. The
runner stacks them as ``TimeLimit(ValidFilter(adapter))``; ``unwrapped`` sees through both.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, Self

from fastslow.core.step import StepResult
from fastslow.env.tasks import get_task
from fastslow.env.valid import filter_valid
from fastslow.errors import EnvError
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


class ValidFilter(Wrapper):
    """Show the agent the paper authors' valid actions (``fastslow.env.valid.filter_valid``).

    The filter needs the task id (some tasks are exempt from its focus and examine rules) and the task
    description (both constant for an episode): the id comes from ``reset``'s task, an id or a name
    (``fastslow.env.tasks.get_task``), the description from the ``StepResult``. Only
    ``valid_actions`` changes; the environment still accepts any action.
    """

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self._task_id: int | None = None

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        task_id = get_task(task).task_id
        self._task_id = None  # a failed reset leaves no episode to filter for
        result = self.env.reset(task, variation, gold=gold)
        self._task_id = task_id
        return self._filtered(result)

    def step(self, action: str) -> StepResult:
        result = self.env.step(action)
        return self._filtered(result)

    def _filtered(self, result: StepResult) -> StepResult:
        if self._task_id is None:
            raise EnvError("no episode loaded: call reset() first")
        valid = filter_valid(result.valid_actions, self._task_id, result.task_description)
        return replace(result, valid_actions=valid)
