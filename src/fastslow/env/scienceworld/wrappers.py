"""The paper authors' valid-action filter as an env wrapper (``env.valid_filter: authors``).

``ValidFilter(env)`` replaces ``StepResult.valid_actions`` by the authors' filtered list
(``fastslow.env.scienceworld.valid.filter_valid``) after every reset and step: the filter is their
evaluation code's view of a state, not ScienceWorld's, so it is a wrapper, not part of the adapter.
"""

from __future__ import annotations

from dataclasses import replace

from fastslow.core.step import StepResult
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.valid import filter_valid
from fastslow.env.wrappers import Env, Wrapper
from fastslow.errors import EnvError


class ValidFilter(Wrapper):
    """Show the agent the paper authors' valid actions (``fastslow.env.scienceworld.valid.filter_valid``).

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
