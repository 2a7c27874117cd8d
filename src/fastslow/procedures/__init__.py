"""Hand-written task logic, one component with one switch (``procedures.enabled``; docs/swift.md).

Everything here knows a task by its name or family: the task procedures (``matter``, ``paint``,
``incline``, ``grow``, ``circuit``) and the judgements (life stages, thermometer) of ``logic.TaskLogic``,
their task parsers and families (``tasks``), the knowledge builders (``knowledge``: substances, paints,
circuits and focus budgets, read from train gold paths) and the task-specific focus rules Gate-1 receives
(``focus.TaskFocusRules``, a ``core.focus.FocusJudge``). ``fastslow.build`` composes them into the
controller's ``ProcedureHook``, SRM and Swift when the switch is on. Only the layers above import this
package (the controller's hooks, the config, the build, the CLI's knowledge commands): Swift, the safety
policy and SRM receive what they need of it.
"""

from __future__ import annotations

from fastslow.procedures.config import ProceduresConfig

__all__ = ["ProceduresConfig"]
