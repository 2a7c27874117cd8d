"""Agents that play episodes: the gold-path oracle now; the SwiftSage controller joins them."""

from fastslow.agents.base import Agent, Decision, EarlyStop, EpisodeContext
from fastslow.agents.oracle import OracleAgent
from fastslow.config import RunConfig


def make_agent(config: RunConfig) -> Agent:
    """Build the agent named by ``config.agent.kind``."""
    kind = config.agent.kind
    if kind == "oracle":
        return OracleAgent()
    if kind == "swift":
        from fastslow.agents.swift_agent import SwiftAgent
        from fastslow.swift import make_policy, make_proposer

        proposer = make_proposer(config.swift, top_k=config.swift.rerank_pool)
        return SwiftAgent(proposer, make_policy(config.swift), config.swift.focus_min_confidence)
    if kind == "swiftsage":
        from fastslow.controller.controller import build_swiftsage

        return build_swiftsage(config)
    raise ValueError(f"unknown agent kind {kind!r}")


__all__ = ["Agent", "Decision", "EarlyStop", "EpisodeContext", "OracleAgent", "make_agent"]
