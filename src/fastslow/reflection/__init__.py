"""SRM, the Self-Reflection Module (paper §3.2): Gate-1, the stagnation detector and the bounded Critic.

Kept import-light on purpose: ``fastslow.config`` imports ``reflection.config``, so this package must
not import the components (which import the run configuration) at package import time.
"""
