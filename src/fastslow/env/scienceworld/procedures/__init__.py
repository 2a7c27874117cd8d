"""ScienceWorld's hand-written task logic (``procedures.enabled``; docs/swift.md, "Task procedures").

Everything here knows a ScienceWorld task by its name or family: the task procedures (``matter``,
``paint``, ``incline``, ``grow``, ``circuit``) and the judgements (life stages, thermometer) of
``logic.TaskLogic`` (a ``core.procedures.TaskProcedures``), their task parsers and families (``tasks``),
the knowledge builders (``knowledge``: substances, paints, circuits and focus budgets, read from train
gold paths into ``data/``) and the task-specific focus rules Gate-1 receives (``focus.TaskFocusRules``, a
``core.focus.FocusJudge``). Nothing outside ScienceWorld's package imports this one: the rest of the
agent reaches it through ``fastslow.env.scienceworld.world`` (``World.task_procedures``,
``World.focus_judge``, ``World.rebuild_knowledge``). Like the rest of the world's package it imports only
the layers below (``fastslow.core``, ``fastslow.env``, ``fastslow.vocab``).
"""
