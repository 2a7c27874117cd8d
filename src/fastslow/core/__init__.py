"""The bottom layer: the types every component shares (paper §3's loop state) and nothing else.

``step.StepResult`` (what the environment returns), ``trajectory.Trajectory`` / ``Turn`` (what an episode
has done so far). They import only ``fastslow.events`` and the standard library, so a Protocol module
built on them loads no environment, model or JVM code.
"""
