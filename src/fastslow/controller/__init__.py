"""The SwiftSage controller (paper §3 baseline): arbitration, Sage planner, action buffer, grounding.

Import the agent from ``fastslow.controller.controller``; this package init stays light because
``fastslow.config`` imports the ``controller:`` config section from here.
"""
