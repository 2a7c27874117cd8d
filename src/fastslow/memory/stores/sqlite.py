"""SQLite AMM store (paper §3.1): one file, FTS5 BM25 ranking, safe with several writer processes.

Concurrency: WAL journal (readers never block the writer), a busy timeout so a writer waits for the
lock instead of failing, and every write in one ``BEGIN IMMEDIATE`` transaction, so N processes
appending at once lose nothing. A task-filtered search (the retriever's usual call) reads only the
(task, tag) slice tokens of the ``scoped`` column (see ``scoped_token``) instead of ranking every record
sharing a common word and filtering afterwards, and only the rarest of them (``prune_by_frequency``,
fed by the ``slice_terms`` counts): that keeps search latency flat as the store grows.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores.base import (
    MemoryStoreError,
    meta_token,
    prune_by_frequency,
    query_terms,
    scoped_query,
    scoped_text,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    task TEXT NOT NULL,
    tag TEXT NOT NULL,
    created REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_task_tag ON memories (task, tag, created);
CREATE TABLE IF NOT EXISTS slice_terms (token TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (body, meta, scoped, tokenize = 'unicode61');
"""


def _meta(record: MemoryRecord) -> str:
    return f"{meta_token('tk', record.task_name)} {meta_token('tg', record.tag)}"


class SqliteStore:
    """AMM records in one SQLite file."""

    def __init__(
        self, path: str | Path, busy_timeout_s: float = 60.0, max_terms: int = 16, max_postings: int = 400
    ) -> None:
        self.path = Path(path)
        self.max_terms = max_terms
        self.max_postings = max_postings
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE) so the write lock is taken
            # up front and a concurrent writer waits on the busy timeout instead of failing mid-way.
            self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            # Searches read many small pages of the FTS index; mapping the file saves a syscall each.
            self._db.execute("PRAGMA mmap_size = 268435456")
            self._db.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            raise MemoryStoreError(f"sqlite store {self.path}: {exc}") from exc

    def _insert(self, record: MemoryRecord, freq: Counter[str]) -> None:
        scoped = scoped_text(record)
        freq.update(scoped.split())
        cur = self._db.execute(
            "INSERT INTO memories (id, task, tag, created, data) VALUES (?, ?, ?, ?, ?)",
            (record.id, record.task_name, record.tag, record.created, record.to_json()),
        )
        self._db.execute(
            "INSERT INTO memories_fts (rowid, body, meta, scoped) VALUES (?, ?, ?, ?)",
            (cur.lastrowid, record.search_text(), _meta(record), scoped),
        )

    def add(self, record: MemoryRecord) -> None:
        self.add_many([record])

    def add_many(self, records: Iterable[MemoryRecord]) -> int:
        n = 0
        freq: Counter[str] = Counter()
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for record in records:
                    self._insert(record, freq)
                    n += 1
                # Document frequency of each slice token, in the same transaction (prune_by_frequency).
                self._db.executemany(
                    "INSERT INTO slice_terms (token, n) VALUES (?, ?) "
                    "ON CONFLICT (token) DO UPDATE SET n = n + excluded.n",
                    sorted(freq.items()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"sqlite store {self.path}: write failed: {exc}") from exc
        return n

    def search(
        self, query: str, tags: Sequence[str] | None = None, task: str | None = None, k: int = 5
    ) -> list[MemoryRecord]:
        if k <= 0:
            return []
        terms = query_terms(query, self.max_terms)
        try:
            if not terms:
                return self._newest(tags, task, k)
            if task:
                # Only the (task, tag) slices' rarest tokens are read: see scoped_token, prune_by_frequency.
                tokens = scoped_query(terms, task, tags)
                marks = ", ".join("?" for _ in tokens)
                freq = self._db.execute(f"SELECT token, n FROM slice_terms WHERE token IN ({marks})", tokens)
                tokens = prune_by_frequency(dict(freq.fetchall()), self.max_postings)
                if not tokens:
                    return []
                match = f"scoped : ({' OR '.join(tokens)})"
                weights = "0.0, 0.0, 1.0"
            else:
                match = f"body : ({' OR '.join(terms)})"
                if tags:
                    match += f" AND meta : ({' OR '.join(meta_token('tg', t) for t in tags)})"
                weights = "1.0, 0.0, 0.0"
            rows = self._db.execute(
                "SELECT m.data FROM memories_fts JOIN memories m ON m.rid = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts, {weights}) LIMIT ?",
                (match, k),
            ).fetchall()
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"sqlite store {self.path}: search failed: {exc}") from exc
        return [MemoryRecord.from_json(row[0]) for row in rows]

    def _newest(self, tags: Sequence[str] | None, task: str | None, k: int) -> list[MemoryRecord]:
        sql = "SELECT data FROM memories WHERE 1 = 1"
        params: list[object] = []
        if task:
            sql += " AND task = ?"
            params.append(task)
        if tags:
            sql += f" AND tag IN ({', '.join('?' for _ in tags)})"
            params.extend(tags)
        sql += " ORDER BY created DESC LIMIT ?"
        params.append(k)
        return [MemoryRecord.from_json(row[0]) for row in self._db.execute(sql, params).fetchall()]

    def count(self) -> int:
        try:
            return int(self._db.execute("SELECT count(*) FROM memories").fetchone()[0])
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"sqlite store {self.path}: {exc}") from exc

    def iter_all(self) -> Iterator[MemoryRecord]:
        try:
            rows = self._db.execute("SELECT data FROM memories ORDER BY rid")
            for row in rows:
                yield MemoryRecord.from_json(row[0])
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"sqlite store {self.path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()
