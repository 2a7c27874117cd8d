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


class RunDirError(UsageError):
    """An output directory that holds another run, is in use, or cannot be identified: exit code 2."""


class OutputError(FastslowError):
    """A run's output cannot be written (disk full, read-only file system): exit code 2, and what was
    already written stays, so the same command resumes once the cause is fixed."""


class CorruptLogError(FastslowError):
    """An event log has a line that is not a valid event (not a torn last line): exit code 2 when it
    is read for a report; on resume the episode is replayed and the bad file kept aside."""
