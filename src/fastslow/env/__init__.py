"""The worlds fastslow plays, behind one seam (paper §4 for ScienceWorld;
docs/worlds.md for TextWorldExpress).

World-neutral here: the ``Env`` Protocol and wrappers (``wrappers``), the run's env settings
(``config``), episodes and selections (``episodes``), task records (``tasks``) and the ``World``
registry (``world.get_world``). Each world lives in its own package, ``fastslow.env.scienceworld`` and
``fastslow.env.textworldexpress``, which nothing outside it imports (an import-linter contract): the
rest of fastslow reaches a world through ``get_world(name)`` and its ``WorldSemantics``.
"""
