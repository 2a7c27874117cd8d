"""AMM, the Adaptive Memory Module (paper §3.1): salience-gated episodic memory, trigger-driven retrieval.

What the controller uses: ``fastslow.memory.episode.Amm`` (one per process, owns the store) and the
``EpisodeMemory`` it hands out per episode (``after_step``, ``t1_ladder``, ``t4``, ``t2``/``t3``). How to call
them is in docs/amm.md. Everything is off unless ``amm.enabled``.
"""
