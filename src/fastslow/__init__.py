"""fastslow: dual-process language agents (SwiftSage + AMM + SRM) on ScienceWorld.

The public surface is what a user types; everything else is internal.
"""

from fastslow.config import RunConfig, load_config
from fastslow.events import EndState, read_events

__version__ = "0.1.0"

__all__ = ["EndState", "RunConfig", "__version__", "load_config", "read_events"]
