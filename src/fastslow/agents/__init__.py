"""Agents that play episodes: the gold-path oracle now; the SwiftSage controller joins them."""

from fastslow.agents.base import Agent, Decision, EarlyStop, EpisodeContext
from fastslow.agents.oracle import OracleAgent
from fastslow.config import RunConfig


def make_agent(config: RunConfig) -> Agent:
    """Build the agent named by ``config.agent.kind``."""
    kind = config.agent.kind
    if kind == "oracle":
        return OracleAgent()
    raise ValueError(f"unknown agent kind {kind!r}")


__all__ = ["Agent", "Decision", "EarlyStop", "EpisodeContext", "OracleAgent", "make_agent"]
