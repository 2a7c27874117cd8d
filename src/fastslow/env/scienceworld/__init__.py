"""ScienceWorld (paper §4): the adapter, the task table, episode sets, the paper authors' valid-action
filter and the world's semantics.

Nothing outside this package imports it (an import-linter contract); the rest of fastslow reaches it as
``fastslow.env.world.get_world("scienceworld")``, whose ``WORLD`` is ``fastslow.env.scienceworld.world``.
The adapter module (py4j, the JVM) is loaded only when an env is made.
"""
