"""Shared fixtures. Tests use the real ScienceWorld JVM; one adapter is shared per session."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _ours(pid: int) -> bool:
    """A JVM this test session started: a descendant of pytest, or an orphan (its parent was killed)."""
    me, parent = os.getpid(), _ppid(pid)
    if parent == 1:
        return True
    while parent > 1:
        if parent == me:
            return True
        parent = _ppid(parent)
    return False


def scienceworld_jvms() -> set[int]:
    """PIDs of the running ScienceWorld JVMs that this test session is responsible for."""
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if b"scienceworld.jar" in cmd and b"py4j" in cmd and _ours(int(entry)):
            pids.add(int(entry))
    return pids


_JVMS_BEFORE: set[int] = set()

SHARED_FIXTURE_MODULES = frozenset(
    {
        "tests/test_viewer.py",  # two real runs, ~90 s
        "tests/test_viewer_server.py",
        "tests/test_step_sources.py",
        "tests/procedures/test_measurement.py",
        "tests/swift/test_t5_format.py",
        "tests/swift/test_rerank.py",  # six gold replays and two fits, ~20 s
        "tests/memory/test_t1_weights.py",  # six gold replays, a fit and a store, ~10 s
        "tests/test_fork.py",  # a five-episode run and its forks, ~35 s
        "tests/test_fork_trials.py",  # a two-trial Reflexion run with the embedded model, ~20 s
        "tests/test_one_episode_log.py",  # a two-episode oracle run, ~20 s
        "tests/test_attribute_safety.py",  # a parent run and a clean attribution of it, ~40 s
        "tests/test_stream.py",  # three stream runs (one with a warm-up), ~40 s
    }
)
"""Modules whose module-scoped fixtures cost seconds to minutes: under ``pytest -n`` each is sent to
one worker as a whole. Split over two workers, each would build the fixtures, and a worker tears a
module's fixtures down whenever its next test comes from another module (xdist's ``load``)."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """xdist's ``load`` scheduling, except that each of ``SHARED_FIXTURE_MODULES`` is one unit of work
    (pytest-xdist's own ``loadgroup`` marks do not group under pytest 9). Other ``--dist`` modes are
    left as they are."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureModules(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in SHARED_FIXTURE_MODULES else nodeid

    return SharedFixtureModules(config, log)


TEST_ORDER_VAR = "FASTSLOW_TEST_ORDER"
"""Run the suite in another order, to show that no test depends on what ran before it (the shared JVM
above all): ``reverse`` (modules last to first, and each module's tests last to first) or
``shuffle:SEED`` (modules, then each module's tests, in a seeded random order). A module's tests stay
together either way, so its module-scoped fixtures are built once. Unset: collection order."""


def _test_order() -> tuple[str, int]:
    order = os.environ.get(TEST_ORDER_VAR, "")
    if order in ("", "reverse"):
        return order, 0
    kind, _, seed = order.partition(":")
    if kind == "shuffle" and seed.isdigit():
        return kind, int(seed)
    raise pytest.UsageError(f"{TEST_ORDER_VAR}={order!r}: use reverse or shuffle:SEED (SEED an integer)")


def pytest_report_header(config: pytest.Config) -> str | None:
    order, seed = _test_order()
    if not order:
        return None
    return f"test order ({TEST_ORDER_VAR}): {order}" + (f", seed {seed}" if order == "shuffle" else "")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Reorder the collected tests as ``FASTSLOW_TEST_ORDER`` says (every xdist worker collects the same
    order: the seed fixes it)."""
    order, seed = _test_order()
    if not order:
        return
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    groups = list(modules.values())
    if order == "reverse":
        groups.reverse()
        for group in groups:
            group.reverse()
    else:
        rng = random.Random(seed)
        rng.shuffle(groups)
        for group in groups:
            rng.shuffle(group)
    items[:] = [item for group in groups for item in group]


def pytest_sessionstart(session: pytest.Session) -> None:
    _JVMS_BEFORE.update(scienceworld_jvms())


@pytest.fixture(scope="session")
def env() -> Iterator[ScienceWorldAdapter]:
    adapter = ScienceWorldAdapter(simplification="easy")
    yield adapter
    adapter.close()


PG_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "start-postgres.sh"


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """FASTSLOW_PG_DSN if set (CI starts a server), else a throwaway cluster from the script, else skip."""
    dsn = os.environ.get("FASTSLOW_PG_DSN")
    if dsn:
        yield dsn
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("postgres store: psycopg is not installed (pip install -e '.[postgres]')")
    if shutil.which("bash") is None or not PG_SCRIPT.is_file():
        pytest.skip(f"postgres store: no FASTSLOW_PG_DSN and no {PG_SCRIPT}")
    workdir = Path(tempfile.mkdtemp(prefix="fastslow-pg-test-"))
    proc = subprocess.run(
        [str(PG_SCRIPT), "start", str(workdir)], capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"postgres store: no FASTSLOW_PG_DSN and start-postgres.sh failed: {reason}")
    try:
        yield proc.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([str(PG_SCRIPT), "stop", str(workdir)], capture_output=True, timeout=60, check=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No java process may survive the test suite."""
    from fastslow.env.scienceworld.adapter import _close_all

    _close_all()
    # JVMs of killed subprocesses notice their closed stdin and exit; give them a moment.
    deadline = time.monotonic() + 15
    while (leftover := scienceworld_jvms() - _JVMS_BEFORE) and time.monotonic() < deadline:
        time.sleep(0.5)
    if leftover:
        session.exitstatus = 1
        print(f"\nERROR: ScienceWorld JVMs survived the test suite: {leftover}")
