"""AMM stores (paper §3.1): ``open_store`` picks the backend named in the config or by a location."""

from __future__ import annotations

import os

from fastslow.memory.config import AmmConfig
from fastslow.memory.stores.base import BulkStore, MemoryStore, MemoryStoreError

__all__ = ["BulkStore", "MemoryStore", "MemoryStoreError", "open_location", "open_store"]


def open_store(cfg: AmmConfig) -> BulkStore:
    """The store a run configuration names."""
    if cfg.store == "postgres":
        from fastslow.memory.stores.postgres import PostgresStore

        dsn = cfg.dsn or os.environ.get("FASTSLOW_PG_DSN", "")
        if not dsn:
            raise MemoryStoreError("amm.store=postgres needs amm.dsn or the FASTSLOW_PG_DSN variable")
        return PostgresStore(
            dsn, cfg.table, max_terms=cfg.retrieval.query_terms, max_postings=cfg.retrieval.max_postings
        )
    from fastslow.memory.stores.sqlite import SqliteStore

    return SqliteStore(cfg.path, max_terms=cfg.retrieval.query_terms, max_postings=cfg.retrieval.max_postings)


def open_location(location: str, table: str = "amm_memories") -> BulkStore:
    """A store given by the CLI: a ``postgresql://`` DSN or an SQLite file path."""
    if location.startswith(("postgres://", "postgresql://")):
        from fastslow.memory.stores.postgres import PostgresStore

        return PostgresStore(location, table)
    from fastslow.memory.stores.sqlite import SqliteStore

    return SqliteStore(location)
