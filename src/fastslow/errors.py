"""Typed exceptions. A usage error becomes a one-line message and exit code 2 at the CLI boundary;
the others end an episode with a typed reason instead of a hang or a traceback."""

from __future__ import annotations


class FastslowError(Exception):
    """Base class of every error fastslow raises on purpose."""


class UsageError(FastslowError):
    """Bad input from the user (unknown task, bad config key, unwritable path): exit code 2."""


class EnvError(FastslowError):
    """The ScienceWorld JVM died, hung past its timeout, or answered garbage. Ends the episode."""


class ModelError(FastslowError):
    """A language-model call failed after its retries; the controller falls back and the episode goes on."""


class ModelUnavailableError(ModelError):
    """The model backend cannot be reached at start-up: raised before any episode starts (exit 2)."""
