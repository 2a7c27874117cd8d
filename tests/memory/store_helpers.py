"""Raw access to real AMM store files and tables, for tests that plant or inspect rows directly."""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path
from typing import Any

from fastslow.memory.stores import BulkStore
from fastslow.memory.stores.postgres import PostgresStore

PAGE = 4096


def corrupt_second_half(path: Path, seed: int = 0) -> int:
    """Overwrite the second half of a closed SQLite file's pages with random bytes; returns pages hit.

    Page 1 (the header and the start of the schema) and the early pages that hold the schema survive,
    so the file still opens; the later pages, where the rows, the FTS index and the counts were last
    written, are garbage: SQLite itself reports SQLITE_CORRUPT when it reads them.
    """
    pages = path.stat().st_size // PAGE
    rng = random.Random(seed)
    with open(path, "r+b") as fh:
        for page in range(pages // 2, pages):
            fh.seek(page * PAGE)
            fh.write(rng.randbytes(PAGE))
    return pages - pages // 2


def plant_sqlite_row(path: Path, row_id: str, data: str, body: str, scoped: str) -> int:
    """Insert a row with arbitrary ``data`` (and its FTS entry, so searches reach it) with sqlite3."""
    db = sqlite3.connect(path)
    try:
        with db:
            cur = db.execute(
                "INSERT INTO memories (id, task, tag, created, data) VALUES (?, 'boil', 'success', ?, ?)",
                (row_id, time.time() + 1000, data),
            )
            db.execute(
                "INSERT INTO memories_fts (rowid, body, meta, scoped) VALUES (?, ?, 'tkboil tgsuccess', ?)",
                (cur.lastrowid, body, scoped),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid
    finally:
        db.close()


def plant_postgres_row(store: PostgresStore, row_id: str, data_json: str, body: str, scoped: str) -> None:
    """Insert a row whose JSONB ``data`` is not a record, with psycopg (same server, same table)."""
    store._db.execute(
        f"INSERT INTO {store.table} (id, task, tag, created, body, scoped, data) "
        "VALUES (%s, 'boil', 'success', %s, %s, %s, %s::jsonb)",
        (row_id, time.time() + 1000, body, scoped, data_json),
    )


def term_counts(store: BulkStore) -> dict[str, int]:
    """The document-frequency side table of either backend, read with SQL."""
    if isinstance(store, PostgresStore):
        rows: list[Any] = store._db.execute(f"SELECT token, n FROM {store.table}_terms").fetchall()
    else:
        rows = store._db.execute("SELECT token, n FROM slice_terms").fetchall()  # type: ignore[attr-defined]
    return {token: int(n) for token, n in rows}
