"""Fixtures for AMM tests: both real stores (SQLite file, PostgreSQL server) behind one parameter."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastslow.memory.stores import BulkStore
from fastslow.memory.stores.postgres import PostgresStore
from fastslow.memory.stores.sqlite import SqliteStore

# pg_dsn (a PostgreSQL server's DSN, or skip) is in tests/conftest.py: tests outside this folder use it too.


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
