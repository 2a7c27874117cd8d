"""fastslow: dual-process language agents (SwiftSage + AMM + SRM) on ScienceWorld.

The public surface is what a user types; everything else is internal. The names load on first use, so
importing one component (``fastslow.core.proposal``, say) does not pull in every other one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["EndState", "RunConfig", "__version__", "load_config", "read_events"]

if TYPE_CHECKING:
    from fastslow.config import RunConfig, load_config
    from fastslow.events import EndState, read_events


def __getattr__(name: str) -> Any:
    if name in ("RunConfig", "load_config"):
        from fastslow import config

        return getattr(config, name)
    if name in ("EndState", "read_events"):
        from fastslow import events

        return getattr(events, name)
    raise AttributeError(name)
