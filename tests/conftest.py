"""Shared fixtures. Tests use the real ScienceWorld JVM; one adapter is shared per session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fastslow.env.scienceworld import ScienceWorldAdapter


def java_children() -> list[int]:
    """PIDs of ScienceWorld JVMs started by this test process."""
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and b"scienceworld.jar" in cmd:
            pids.append(int(entry))
    return pids


@pytest.fixture(scope="session")
def env() -> Iterator[ScienceWorldAdapter]:
    adapter = ScienceWorldAdapter(simplification="easy", step_limit=300)
    yield adapter
    adapter.close()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No java process may survive the test suite."""
    from fastslow.env.scienceworld import _close_all

    _close_all()
    leftover = java_children()
    if leftover:
        session.exitstatus = 1
        print(f"\nERROR: ScienceWorld JVMs survived the test suite: {leftover}")
