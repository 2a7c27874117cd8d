"""Hand-written task logic, one component with one switch (``procedures.enabled``; docs/swift.md).

The logic knows a task by its name or family and reads its world's text, so it is the world's:
ScienceWorld's task procedures (matter, paint, incline, grow, circuit), judgements (life stages,
thermometer), knowledge files and task-specific focus rules live in
``fastslow.env.scienceworld.procedures``. This package is the world-neutral rest: the switch
(``ProceduresConfig``) and the loop hook (``hook.ProcedureHook``) that drives a world's logic through
``core.procedures.TaskProcedures``. ``fastslow.build`` asks the run's ``World`` for its logic
(``task_procedures``) and focus rules (``focus_judge``) when the switch is on; a world without them
(TextWorldExpress) answers None and the switch changes nothing there.
"""

from __future__ import annotations

from fastslow.procedures.config import ProceduresConfig

__all__ = ["ProceduresConfig"]
