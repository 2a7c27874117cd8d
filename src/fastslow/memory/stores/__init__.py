"""AMM stores (paper §3.1): ``open_store`` picks the backend named in the config or by a location.

A run's store has one owner in each process: ``shared_store`` opens it on first use, every agent and
harness call of that process shares it, and it is closed when the process exits.
"""

from __future__ import annotations

import atexit
import os
from typing import TYPE_CHECKING

from fastslow.memory.config import AmmConfig
from fastslow.memory.stores.base import BulkStore, MemoryStore, MemoryStoreError

if TYPE_CHECKING:  # numpy stays unloaded until a store with vectors is opened (tests/test_layers.py)
    from fastslow.models.embeddings import Embedder

__all__ = [
    "BulkStore",
    "MemoryStore",
    "MemoryStoreError",
    "is_dsn",
    "open_location",
    "open_store",
    "release_store",
    "shared_store",
]


def is_dsn(location: str) -> bool:
    """Whether a CLI location names a PostgreSQL server (a ``postgresql://`` URL) rather than a file."""
    return location.startswith(("postgres://", "postgresql://"))


def env_password(name: str | None) -> str | None:
    """The password held by the environment variable ``name`` (``amm.password_env``); None if no name.

    The variable must be set (an empty value counts: a server may accept it): a missing one is a
    one-line ``MemoryStoreError`` before any connection is tried, not libpq's "no password supplied".
    """
    if name is None:
        return None
    password = os.environ.get(name)
    if password is None:
        raise MemoryStoreError(f"amm.password_env names the environment variable {name}, which is not set")
    return password


def open_store(cfg: AmmConfig) -> BulkStore:
    """The store a run configuration names."""
    from fastslow.memory.stores.vectors import embedder_for

    if cfg.store == "postgres":
        from fastslow.memory.stores.postgres import PostgresStore

        dsn = cfg.dsn or os.environ.get("FASTSLOW_PG_DSN", "")
        if not dsn:
            raise MemoryStoreError("amm.store=postgres needs amm.dsn or the FASTSLOW_PG_DSN variable")
        return PostgresStore(
            dsn,
            cfg.table,
            max_terms=cfg.retrieval.query_terms,
            max_postings=cfg.retrieval.max_postings,
            password=env_password(cfg.password_env),
            embedder=embedder_for(cfg.retrieval),
        )
    from fastslow.memory.stores.sqlite import SqliteStore

    if not cfg.path:
        # No default file: a store shared by accident would mix two runs' memories.
        raise MemoryStoreError("amm.path is not set: the run harness places the store in the run directory")
    return SqliteStore(
        cfg.path,
        max_terms=cfg.retrieval.query_terms,
        max_postings=cfg.retrieval.max_postings,
        embedder=embedder_for(cfg.retrieval),
    )


_SHARED: dict[tuple[str, str | None, str, str | None, str], BulkStore] = {}
"""The stores this process has opened, one per location."""


def _key(cfg: AmmConfig) -> tuple[str, str | None, str, str | None, str]:
    return (cfg.store, cfg.path, cfg.dsn, cfg.password_env, cfg.table)


def shared_store(cfg: AmmConfig) -> BulkStore:
    """This process's store for ``cfg``'s location: opened once, shared, closed at exit (or when
    ``release_store`` is called)."""
    key = _key(cfg)
    store = _SHARED.get(key)
    if store is None:
        store = open_store(cfg)
        _SHARED[key] = store
        atexit.register(store.close)
    return store


def release_store(cfg: AmmConfig) -> None:
    """Close this process's store for ``cfg``'s location now, if it is open; the next ``shared_store``
    opens it again. ``fastslow eval --stream`` plays each episode on a store of its own and releases it
    when the episode ends, so a worker does not keep one open file per episode it played."""
    store = _SHARED.pop(_key(cfg), None)
    if store is not None:
        atexit.unregister(store.close)
        store.close()


def open_location(
    location: str,
    table: str = "amm_memories",
    readonly: bool = False,
    password_env: str | None = None,
    embedder: Embedder | None = None,
    max_terms: int = 16,
) -> BulkStore:
    """A store given by the CLI: a ``postgresql://`` DSN or an SQLite file path.

    ``readonly`` opens an existing store for inspection only: nothing is created or changed in it
    (``SqliteStore(readonly=True)``, ``PostgresStore(readonly=True)``). ``embedder``: vectors for hybrid
    ranking are written with every record and ``vector_search`` works (``stores.vectors``).
    ``max_terms``: content words a full-text search reads (``amm.retrieval.query_terms``).
    """
    if is_dsn(location):
        from fastslow.memory.stores.postgres import PostgresStore

        return PostgresStore(
            location,
            table,
            readonly=readonly,
            password=env_password(password_env),
            embedder=embedder,
            max_terms=max_terms,
        )
    from fastslow.memory.stores.sqlite import SqliteStore

    return SqliteStore(location, readonly=readonly, embedder=embedder, max_terms=max_terms)
