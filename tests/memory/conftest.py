"""Fixtures for AMM tests: both real stores (SQLite file, PostgreSQL server) behind one parameter."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastslow.memory.stores import BulkStore
from fastslow.memory.stores.postgres import PostgresStore
from fastslow.memory.stores.sqlite import SqliteStore

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "start-postgres.sh"


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
    if shutil.which("bash") is None or not SCRIPT.is_file():
        pytest.skip(f"postgres store: no FASTSLOW_PG_DSN and no {SCRIPT}")
    workdir = Path(tempfile.mkdtemp(prefix="fastslow-pg-test-"))
    proc = subprocess.run(
        [str(SCRIPT), "start", str(workdir)], capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        reason = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"postgres store: no FASTSLOW_PG_DSN and start-postgres.sh failed: {reason}")
    try:
        yield proc.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([str(SCRIPT), "stop", str(workdir)], capture_output=True, timeout=60, check=False)


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(location, table) of an empty store of each kind; the postgres table is dropped afterwards."""
    if request.param == "sqlite":
        yield str(tmp_path / "memory.sqlite"), "amm_memories"
        return
    dsn: str = request.getfixturevalue("pg_dsn")
    table = f"test_{uuid.uuid4().hex[:12]}"
    yield dsn, table
    PostgresStore(dsn, table).drop()


@pytest.fixture
def store(store_location: tuple[str, str]) -> Iterator[BulkStore]:
    location, table = store_location
    opened: BulkStore = (
        PostgresStore(location, table) if location.startswith("postgresql://") else SqliteStore(location)
    )
    yield opened
    opened.close()
