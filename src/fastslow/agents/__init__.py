"""The agent seam of the episode loop and the agents below the controller (the gold-path oracle).

Agents are assembled from a configuration by ``fastslow.build.make_agent``; agents that are not part of
SwiftSage (ReAct, Reflexion) are plug-ins, one module each under ``fastslow.plugins``."""

from fastslow.agents.base import Agent, Decision, EarlyStop, EpisodeContext, Trials
from fastslow.agents.oracle import OracleAgent

__all__ = ["Agent", "Decision", "EarlyStop", "EpisodeContext", "OracleAgent", "Trials"]
