"""SQLite AMM store (paper §3.1): one file, FTS5 BM25 ranking, safe with several writer processes.

Concurrency: WAL journal (readers never block the writer), a busy timeout so a writer waits for the
lock instead of failing, and every write in one ``BEGIN IMMEDIATE`` transaction, so N processes
appending at once lose nothing. A task-filtered search (the retriever's usual call) reads only the
(task, tag) slice tokens of the ``scoped`` column (see ``scoped_token``) instead of ranking every record
sharing a common word and filtering afterwards, and only the rarest of them (``prune_by_frequency``,
fed by the ``slice_terms`` counts): that keeps search latency flat as the store grows.

Hybrid ranking (``amm.retrieval.ranking: hybrid``): opened with an embedder, the store writes each
record's vector into the ``vec`` column (float32 bytes, ``vec_model`` names the embedder) and
``vector_search`` ranks by cosine similarity over them (``stores.vectors``). A file written before those
columns existed gets them when it is opened for writing (``ALTER TABLE``, in the transaction that
creates the schema); its rows get vectors the first time a vector search reads them.

Failures carry SQLite's own cause (``database or disk is full (SQLITE_FULL)``, ``database disk image is
malformed (SQLITE_CORRUPT)``) in a ``MemoryStoreError``; rows that are not records are skipped with a
warning (``bad_rows``). ``readonly=True`` opens an existing file for inspection without changing a byte
of it (``fastslow memory stats|search|export``).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import numpy as np

from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores.base import (
    BadRows,
    MemoryStoreError,
    meta_token,
    prune_by_frequency,
    query_terms,
    scoped_query,
    scoped_text,
)
from fastslow.memory.stores.vectors import VectorIndex, encode_in_batches, from_blob, to_blob
from fastslow.models.embeddings import Embedder, FloatArray

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    task TEXT NOT NULL,
    tag TEXT NOT NULL,
    created REAL NOT NULL,
    data TEXT NOT NULL,
    vec BLOB,
    vec_model TEXT
);
CREATE INDEX IF NOT EXISTS memories_task_tag ON memories (task, tag, created);
CREATE TABLE IF NOT EXISTS slice_terms (token TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (body, meta, scoped, tokenize = 'unicode61');
"""
_TABLES = ("memories", "memories_fts", "slice_terms")
_COLUMNS: dict[str, tuple[str, ...]] = {
    "memories": ("rid", "id", "task", "tag", "created", "data"),
    "memories_fts": ("body", "meta", "scoped"),
    "slice_terms": ("token", "n"),
}
"""The columns each of fastslow's tables must have for a file to be taken as a store (``vec`` and
``vec_model`` are not among them: a writable open adds them to a file written before they existed)."""
# Columns added after the first stores were written; a writable open adds them to an older file.
_VECTOR_COLUMNS = (("vec", "BLOB"), ("vec_model", "TEXT"))


def _meta(record: MemoryRecord) -> str:
    return f"{meta_token('tk', record.task_name)} {meta_token('tg', record.tag)}"


def describe(exc: sqlite3.Error) -> str:
    """SQLite's message plus its result code name, e.g. ``database or disk is full (SQLITE_FULL)``."""
    name = getattr(exc, "sqlite_errorname", None)
    return f"{exc} ({name})" if name and name not in str(exc) else str(exc)


def _connect_readonly(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    # A URI with mode=ro: SQLite then never writes the file, creates no journal for a rollback-mode
    # file and cannot switch it to WAL; a plain connect would create tables in whatever file it got.
    uri = path.resolve().as_uri() + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        db.execute("PRAGMA query_only = 1")
    except sqlite3.Error as exc:
        raise MemoryStoreError(f"sqlite store {path}: {describe(exc)}") from exc
    return db


def _refuse_foreign(path: Path, db: sqlite3.Connection, required: Sequence[str]) -> None:
    """``MemoryStoreError`` when the database lacks one of the ``required`` tables, when one of
    fastslow's tables it has lacks a column a store has (``_COLUMNS``), or when it is not SQLite.
    Reads only."""
    try:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorname", None) == "SQLITE_NOTADB":
            raise MemoryStoreError(f"{path} is not a SQLite database ({exc})") from exc
        raise MemoryStoreError(f"sqlite store {path}: {describe(exc)}") from exc
    missing = [t for t in required if t not in names]
    if missing:
        raise MemoryStoreError(f"{path} is not a fastslow memory store (no {missing[0]} table)")
    # A table of the same name is not enough: someone else's "memories" table would otherwise pass,
    # and the writable open would switch the file to WAL before its first CREATE INDEX failed.
    for table in (t for t in _TABLES if t in names):
        try:
            have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorname", None) == "SQLITE_CORRUPT":
                # A damaged store (the FTS table's constructor reads its pages), not a foreign one:
                # its operations report the corruption with SQLite's result code.
                continue
            raise MemoryStoreError(
                f"{path} is not a fastslow memory store ({table}: {describe(exc)})"
            ) from exc
        absent = [c for c in _COLUMNS[table] if c not in have]
        if absent:
            raise MemoryStoreError(
                f"{path} is not a fastslow memory store (its {table} table has no {absent[0]} column)"
            )


def check_store_file(path: str | Path, busy_timeout_s: float = 60.0, count: bool = True) -> int:
    """The records in ``path`` (0 for a missing or empty file, or a database without tables: these may
    become a store); ``MemoryStoreError`` when it is a file fastslow must not write a store into: not
    SQLite, or an SQLite database with tables but no ``memories`` table, or whose ``memories`` (or
    ``memories_fts``, ``slice_terms``) table lacks a column of a store's (someone else's data). Reads
    only: not a byte of the file changes. ``count=False`` skips the count (and returns 0)."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise MemoryStoreError(f"{path} is not a file")
    if not path.exists() or path.stat().st_size == 0:
        return 0
    db = _connect_readonly(path, busy_timeout_s)
    try:
        try:
            has_tables = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").fetchone()
        except sqlite3.Error:
            has_tables = True  # _refuse_foreign names the error
        if not has_tables:
            return 0
        _refuse_foreign(path, db, ("memories",))
        if not count:
            return 0
        try:
            return int(db.execute("SELECT count(*) FROM memories").fetchone()[0])
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"sqlite store {path}: count failed: {describe(exc)}") from exc
    finally:
        db.close()


class SqliteStore:
    """AMM records in one SQLite file.

    ``readonly`` opens an existing file read-only (``mode=ro``): no directory, table or WAL switch is
    created, and a file without fastslow's tables, or that is not SQLite at all, is refused with a
    ``MemoryStoreError`` saying so. A writable open refuses an existing file that is someone else's
    (``check_store_file``) before it writes anything.
    """

    def __init__(
        self,
        path: str | Path,
        busy_timeout_s: float = 60.0,
        max_terms: int = 16,
        max_postings: int = 400,
        readonly: bool = False,
        embedder: Embedder | None = None,
    ) -> None:
        self.path = Path(path)
        self.embedder = embedder
        """Computes the vector of every record written, and of the query in ``vector_search``; None
        (BM25 ranking) writes no vectors."""
        self._index: VectorIndex | None = None
        self.max_terms = max_terms
        self.max_postings = max_postings
        self.readonly = readonly
        self._bad = BadRows(f"sqlite store {self.path}")
        if readonly:
            self._db = self._open_readonly(busy_timeout_s)
            self._has_vec = {c for c, _ in _VECTOR_COLUMNS} <= self._columns()
            return
        # Before the first write (the WAL switch rewrites the file's header): never turn someone
        # else's database into a store.
        check_store_file(self.path, busy_timeout_s, count=False)
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
        except sqlite3.Error as exc:
            raise MemoryStoreError(f"sqlite store {self.path}: {describe(exc)}") from exc
        except OSError as exc:
            raise MemoryStoreError(f"sqlite store {self.path}: {exc}") from exc
        with self._transaction("create"):
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            # Checked inside the write transaction: two processes opening an old file at once add
            # the columns once (the second sees them once it holds the lock).
            have = self._columns()
            for name, kind in _VECTOR_COLUMNS:
                if name not in have:
                    self._db.execute(f"ALTER TABLE memories ADD COLUMN {name} {kind}")
        self._has_vec = True

    def _columns(self) -> set[str]:
        return {row[1] for row in self._db.execute("PRAGMA table_info(memories)")}

    def _open_readonly(self, busy_timeout_s: float) -> sqlite3.Connection:
        if not self.path.is_file():
            raise MemoryStoreError(f"{self.path}: no such file")
        db = _connect_readonly(self.path, busy_timeout_s)
        try:
            _refuse_foreign(self.path, db, _TABLES)
        except MemoryStoreError:
            db.close()
            raise
        return db

    @property
    def bad_rows(self) -> int:
        """Rows skipped so far because they are not records (each counted once)."""
        return len(self._bad.seen)

    @property
    def bad(self) -> BadRows:
        """The skipped rows' bookkeeping (``BadRows``: every skip counted, the last one in words)."""
        return self._bad

    def _error(self, what: str, exc: sqlite3.Error) -> MemoryStoreError:
        return MemoryStoreError(f"sqlite store {self.path}: {what} failed: {describe(exc)}")

    def _rollback(self) -> None:
        # After some errors (SQLITE_FULL, SQLITE_CORRUPT, SQLITE_IOERR, SQLITE_NOMEM) SQLite has already
        # rolled the transaction back; an unconditional ROLLBACK would then raise "cannot rollback - no
        # transaction is active" and that error, not the real cause, would reach the events.
        try:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the error being handled is the one to report; this connection is finished anyway

    @contextmanager
    def _transaction(self, what: str) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` ... ``COMMIT``; any SQLite error becomes a ``MemoryStoreError``."""
        if self.readonly:
            raise MemoryStoreError(f"sqlite store {self.path}: {what} refused: the store is open read-only")
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._error(what, exc) from exc
        try:
            yield
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise self._error(what, exc) from exc
        except BaseException:
            self._rollback()
            raise

    def _insert(self, record: MemoryRecord, freq: Counter[str], vector: FloatArray | None) -> None:
        blob, model = None, None
        if vector is not None and self.embedder is not None:
            blob, model = to_blob(vector), self.embedder.name
        self._insert_row(record, freq, blob, model)

    def _insert_row(
        self, record: MemoryRecord, freq: Counter[str], blob: bytes | None, model: str | None
    ) -> None:
        scoped = scoped_text(record)
        freq.update(scoped.split())
        cur = self._db.execute(
            "INSERT INTO memories (id, task, tag, created, data, vec, vec_model) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.task_name, record.tag, record.created, record.to_json(), blob, model),
        )
        self._db.execute(
            "INSERT INTO memories_fts (rowid, body, meta, scoped) VALUES (?, ?, ?, ?)",
            (cur.lastrowid, record.search_text(), _meta(record), scoped),
        )

    def add(self, record: MemoryRecord) -> None:
        self.add_many([record])

    def add_many(self, records: Iterable[MemoryRecord]) -> int:
        batch = list(records)
        # Embedded before the write lock is taken: a model call must not hold up other writers.
        vectors: list[FloatArray | None] = (
            list(encode_in_batches(self.embedder, [r.search_text() for r in batch]))
            if self.embedder is not None and batch
            else [None] * len(batch)
        )
        n = 0
        freq: Counter[str] = Counter()
        with self._transaction("write"):
            for record, vector in zip(batch, vectors, strict=True):
                self._insert(record, freq, vector)
                n += 1
            # Document frequency of each slice token, in the same transaction (prune_by_frequency).
            self._db.executemany(
                "INSERT INTO slice_terms (token, n) VALUES (?, ?) "
                "ON CONFLICT (token) DO UPDATE SET n = n + excluded.n",
                sorted(freq.items()),
            )
        return n

    def copy_episode(self, source: SqliteStore, episode_id: str) -> int:
        """Make this store's records of ``episode_id`` exactly ``source``'s: its records there are
        removed (``delete_episode``), then ``source``'s are added in the order ``source`` wrote them,
        each with its stored vector as it is (nothing is embedded again); returns how many were added.

        ``fastslow eval --stream`` merges each episode's records from the copy of the store it played
        on into the run's store this way (``eval.stream``). Running it twice leaves the same records: a
        merge cut short by a kill is simply done again. Rows of ``source`` that are not records are
        skipped as every read skips them."""
        cols = "vec, vec_model" if source._has_vec else "NULL, NULL"
        try:
            rows = source._db.execute(
                f"SELECT rid, data, {cols} FROM memories WHERE CASE WHEN json_valid(data) "
                "THEN json_extract(data, '$.episode_id') END = ? ORDER BY rid",
                (episode_id,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise source._error("read", exc) from exc
        found = [
            (source._bad.decode(rid, data, MemoryRecord.from_json), blob, model)
            for rid, data, blob, model in rows
        ]
        self.delete_episode(episode_id)
        freq: Counter[str] = Counter()
        with self._transaction("write"):
            for record, blob, model in found:
                if record is not None:
                    self._insert_row(record, freq, blob, model)
            self._db.executemany(
                "INSERT INTO slice_terms (token, n) VALUES (?, ?) "
                "ON CONFLICT (token) DO UPDATE SET n = n + excluded.n",
                sorted(freq.items()),
            )
        return sum(record is not None for record, _, _ in found)

    def delete_episodes(self, episode_ids: Sequence[str]) -> int:
        """Remove the records of every episode in ``episode_ids`` (as ``delete_episode`` removes one)
        in one transaction; returns how many were removed."""
        if not episode_ids:
            return 0
        return self._delete_where("$.episode_id", "IN", json.dumps(list(episode_ids)))

    def delete_episode(self, episode_id: str) -> int:
        """Remove one episode's records, their FTS rows and their share of the ``slice_terms`` counts."""
        return self._delete_where("$.episode_id", "=", episode_id)

    def delete_created_after(self, t: float) -> int:
        """Remove every record created after ``t`` (Unix seconds), as ``delete_episode`` removes them:
        the store as it was at ``t`` (a fork's copy of its parent's store, ``eval/fork.py``)."""
        return self._delete_where("$.created", ">", t)

    def _delete_where(self, field: str, op: Literal["=", ">", "IN"], value: str | float) -> int:
        # IN: ``value`` is a JSON array, read by json_each (one parameter however many values).
        operand = "(SELECT value FROM json_each(?))" if op == "IN" else "?"
        with self._transaction("delete"):
            # The fields live only in the JSON. json_valid first: json_extract raises on a bad row, and
            # one bad row must not make an episode undeletable (CASE evaluates lazily).
            rows = self._db.execute(
                "SELECT m.rid, f.scoped, m.id FROM memories AS m "
                "LEFT JOIN memories_fts AS f ON f.rowid = m.rid "
                f"WHERE CASE WHEN json_valid(m.data) THEN json_extract(m.data, ?) END {op} {operand}",
                (field, value),
            ).fetchall()
            rids = [(rid,) for rid, _, _ in rows]
            # The FTS row's scoped text is exactly what add_many counted (one per record and token).
            freq = Counter(token for _, scoped, _ in rows for token in (scoped or "").split())
            self._db.executemany("DELETE FROM memories_fts WHERE rowid = ?", rids)
            self._db.executemany("DELETE FROM memories WHERE rid = ?", rids)
            tokens = sorted(freq.items())
            self._db.executemany(
                "UPDATE slice_terms SET n = n - ? WHERE token = ?", [(n, t) for t, n in tokens]
            )
            # A token no record has any more is dropped, as if it had never been written.
            self._db.executemany(
                "DELETE FROM slice_terms WHERE token = ? AND n <= 0", [(t,) for t, _ in tokens]
            )
        if self._index is not None:
            self._index.discard({rid for _, _, rid in rows})
        return len(rids)

    def _decode(self, rows: Iterable[tuple[int, str]]) -> list[MemoryRecord]:
        records = (self._bad.decode(rid, data, MemoryRecord.from_json) for rid, data in rows)
        return [r for r in records if r is not None]

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
                "SELECT m.rid, m.data FROM memories_fts JOIN memories m ON m.rid = memories_fts.rowid "
                f"WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts, {weights}) LIMIT ?",
                (match, k),
            ).fetchall()
        except sqlite3.Error as exc:
            raise self._error("search", exc) from exc
        return self._decode(rows)

    def _newest(self, tags: Sequence[str] | None, task: str | None, k: int) -> list[MemoryRecord]:
        sql = "SELECT rid, data FROM memories WHERE 1 = 1"
        params: list[object] = []
        if task:
            sql += " AND task = ?"
            params.append(task)
        if tags:
            sql += f" AND tag IN ({', '.join('?' for _ in tags)})"
            params.extend(tags)
        sql += " ORDER BY created DESC LIMIT ?"
        params.append(k)
        try:
            rows = self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._error("search", exc) from exc
        return self._decode(rows)

    # -- hybrid ranking: stored vectors ---------------------------------------------------------------
    def vector_search(
        self, query: str, tags: Sequence[str] | None = None, task: str | None = None, k: int = 5
    ) -> list[MemoryRecord]:
        """Best ``k`` records by cosine similarity of their stored vector to the query's, optionally only
        these tags / task (the embedding half of hybrid ranking)."""
        if k <= 0:
            return []
        embedder = self._need_embedder()
        index = self._sync_vectors(embedder)
        ids = index.top(encode_in_batches(embedder, [query])[0], k, tags, task)
        return self._by_ids(ids)

    def _need_embedder(self) -> Embedder:
        if self.embedder is None:
            raise MemoryStoreError(
                f"sqlite store {self.path}: vector search needs a store opened with an embedder"
            )
        return self.embedder

    def _sync_vectors(self, embedder: Embedder) -> VectorIndex:
        """The in-memory index, after reading the rows written since the last call (by any process)."""
        if self._index is None or self._index.dim != embedder.dim:
            self._index = VectorIndex(embedder.dim)
        index = self._index
        cols = "vec, vec_model" if self._has_vec else "NULL, NULL"
        try:
            rows = self._db.execute(
                f"SELECT rid, id, task, tag, {cols}, data FROM memories WHERE rid > ? ORDER BY rid",
                (index.cursor,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise self._error("search", exc) from exc
        if not rows:
            return index
        have: list[tuple[str, str, str, FloatArray]] = []
        missing: list[tuple[int, str, str, str, MemoryRecord]] = []
        for rid, rec_id, task, tag, blob, model, data in rows:
            vector = from_blob(blob, embedder.dim) if model == embedder.name else None
            if vector is not None:
                have.append((rec_id, task, tag, vector))
                continue
            record = self._bad.decode(rid, data, MemoryRecord.from_json)
            if record is not None:
                missing.append((rid, rec_id, task, tag, record))
        if missing:
            fresh = encode_in_batches(embedder, [m[4].search_text() for m in missing])
            if not self.readonly:
                # Written back so the next process (or the next open) does not embed them again.
                with self._transaction("write vectors"):
                    self._db.executemany(
                        "UPDATE memories SET vec = ?, vec_model = ? WHERE rid = ?",
                        [(to_blob(v), embedder.name, m[0]) for m, v in zip(missing, fresh, strict=True)],
                    )
            have += [(m[1], m[2], m[3], v) for m, v in zip(missing, fresh, strict=True)]
        if have:
            index.extend(
                [h[0] for h in have],
                [h[1] for h in have],
                [h[2] for h in have],
                np.stack([h[3] for h in have]),
            )
        index.cursor = int(rows[-1][0])
        return index

    def _by_ids(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """Records by id in the given order; ids deleted meanwhile (by another process) are skipped."""
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        try:
            rows = self._db.execute(f"SELECT id, rid, data FROM memories WHERE id IN ({marks})", list(ids))
            found = {rec_id: (rid, data) for rec_id, rid, data in rows.fetchall()}
        except sqlite3.Error as exc:
            raise self._error("search", exc) from exc
        return self._decode([found[i] for i in ids if i in found])

    def copy_to(self, target: str | Path) -> None:
        """A consistent copy of the whole store (its committed state, vectors and indexes included) in
        the file ``target``, through SQLite's backup API; ``target`` is overwritten."""
        try:
            dest = sqlite3.connect(target)
            try:
                self._db.backup(dest)
            finally:
                dest.close()
        except sqlite3.Error as exc:
            raise self._error(f"copy to {target}", exc) from exc

    def count(self) -> int:
        """Rows in the store (a bad row counts: it is there, it is just skipped when read)."""
        try:
            return int(self._db.execute("SELECT count(*) FROM memories").fetchone()[0])
        except sqlite3.Error as exc:
            raise self._error("count", exc) from exc

    def iter_all(self) -> Iterator[MemoryRecord]:
        try:
            for rid, data in self._db.execute("SELECT rid, data FROM memories ORDER BY rid"):
                record = self._bad.decode(rid, data, MemoryRecord.from_json)
                if record is not None:
                    yield record
        except sqlite3.Error as exc:
            raise self._error("read", exc) from exc

    def close(self) -> None:
        self._db.close()
