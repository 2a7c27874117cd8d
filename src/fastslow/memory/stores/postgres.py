"""PostgreSQL AMM store (paper §3.1): full-text search (tsvector + GIN) on a real server via psycopg 3.

For runs whose workers sit on several machines, or that want the store outside the run directory.
Ranking is ``ts_rank``; a task-filtered search reads only the (task, tag) slice tokens (see
``scoped_token``), a cross-task search an English ``tsvector`` of the same searchable text the SQLite
store indexes. Needs the ``postgres`` extra.

The password comes from the DSN or, better, from ``password=`` (``amm.password_env``: the variable's
value, never written anywhere). Rows whose ``data`` is not a record are skipped with a warning
(``bad_rows``); ``delete_episode`` removes one episode's rows and their share of the ``_terms`` counts.

Hybrid ranking: with an embedder, each row also stores its record's vector (``vec`` bytea, float32;
``vec_model`` names the embedder) and ``vector_search`` ranks by cosine similarity over them, read
incrementally by the ``seq`` column (``stores.vectors``). A table created before these columns gets
them when a writable store opens it (``ALTER TABLE ... ADD COLUMN IF NOT EXISTS``, under the same
advisory lock as the rest of the DDL).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from fastslow.memory.config import TABLE_NAME, redact_dsn
from fastslow.memory.records import MemoryRecord, RecordError
from fastslow.memory.stores.base import (
    BadRows,
    MemoryStoreError,
    prune_by_frequency,
    query_terms,
    scoped_query,
    scoped_text,
)
from fastslow.memory.stores.vectors import VectorIndex, encode_in_batches, from_blob, to_blob
from fastslow.models.embeddings import Embedder, FloatArray

SEQ_WINDOW = 256
"""Sequence values a vector sync reads again below its cursor (rows committed out of order)."""

# Without fastupdate, new entries go straight into the GIN tree instead of a pending list that every
# search would scan linearly until the next vacuum: slower writes (a few per step), faster searches.
_GIN = "WITH (fastupdate = off)"


def _schema(table: str) -> list[str]:
    return [
        f"""CREATE TABLE IF NOT EXISTS {table} (
            id TEXT PRIMARY KEY,
            task TEXT NOT NULL,
            tag TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            body TEXT NOT NULL,
            scoped TEXT NOT NULL,
            data JSONB NOT NULL,
            tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', body)) STORED,
            tsv_scoped TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', scoped)) STORED,
            vec BYTEA,
            vec_model TEXT,
            seq BIGSERIAL
        )""",
        # Tables of earlier versions: the same columns, added in place (existing rows get a seq).
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS vec BYTEA",
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS vec_model TEXT",
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS seq BIGSERIAL",
        f"CREATE INDEX IF NOT EXISTS {table}_seq ON {table} (seq)",
        f"CREATE INDEX IF NOT EXISTS {table}_tsv ON {table} USING GIN (tsv) {_GIN}",
        f"CREATE INDEX IF NOT EXISTS {table}_tsv_scoped ON {table} USING GIN (tsv_scoped) {_GIN}",
        f"CREATE INDEX IF NOT EXISTS {table}_task_tag ON {table} (task, tag, created)",
        # delete_episode finds an episode's rows by the id inside the JSON; ->> never fails on a row.
        f"CREATE INDEX IF NOT EXISTS {table}_episode ON {table} ((data ->> 'episode_id'))",
        f"CREATE TABLE IF NOT EXISTS {table}_terms (token TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    ]


class PostgresStore:
    """AMM records in one PostgreSQL table."""

    def __init__(
        self,
        dsn: str,
        table: str = "amm_memories",
        max_terms: int = 16,
        max_postings: int = 400,
        password: str | None = None,
        readonly: bool = False,
        embedder: Embedder | None = None,
    ) -> None:
        if not TABLE_NAME.match(table):
            raise MemoryStoreError(
                f"postgres store: table name must be a lower-case identifier, got {table!r}"
            )
        try:
            import psycopg
        except ImportError as exc:
            raise MemoryStoreError("postgres store needs psycopg: pip install 'fastslow[postgres]'") from exc
        self._errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self.table = table
        self.max_terms = max_terms
        self.max_postings = max_postings
        self.readonly = readonly
        self.embedder = embedder
        """Computes the vector of every record written, and of the query in ``vector_search``; None
        (BM25 ranking) writes no vectors."""
        self._index: VectorIndex | None = None
        self._unindexed: set[str] = set()
        self._has_vec = True
        self._bad = BadRows(f"postgres store {redact_dsn(dsn)} table {table}")
        # A keyword argument overrides any password in the DSN and stays out of the DSN string, which is
        # what ends up in messages.
        try:
            # psycopg leaves a None keyword out of the connection parameters.
            self._db = psycopg.connect(dsn, autocommit=True, connect_timeout=10, password=password)
        except psycopg.Error as exc:
            raise MemoryStoreError(f"postgres store: {_scrub(str(exc), dsn, password)}") from exc
        try:
            if readonly:
                # Inspection only: the session cannot write, and a missing table is an error, not DDL.
                self._db.execute("SET default_transaction_read_only = on")
                row = self._db.execute(
                    "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                    (table, f"{table}_terms"),
                ).fetchone()
                if not (row and row[0]):
                    self._db.close()
                    raise MemoryStoreError(f"postgres table {table} is not a fastslow memory store")
                # A table of an earlier version has no vector columns; read-only cannot add them.
                cols = self._db.execute(
                    "SELECT count(*) FROM information_schema.columns WHERE table_name = %s "
                    "AND column_name IN ('vec', 'vec_model', 'seq')",
                    (table,),
                ).fetchone()
                self._has_vec = bool(cols and cols[0] == 3)
                return
            with self._db.transaction():
                # Several workers may create the table at once; the advisory lock serialises DDL.
                self._db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (table,))
                for statement in _schema(table):
                    self._db.execute(statement)
        except psycopg.Error as exc:
            raise MemoryStoreError(f"postgres store: {exc}") from exc

    @property
    def bad_rows(self) -> int:
        """Rows skipped so far because their ``data`` is not a record (each counted once)."""
        return len(self._bad.seen)

    @property
    def bad(self) -> BadRows:
        """The skipped rows' bookkeeping (``BadRows``: every skip counted, the last one in words)."""
        return self._bad

    def _row(self, record: MemoryRecord, vector: FloatArray | None) -> tuple[Any, ...]:
        blob, model = None, None
        if vector is not None and self.embedder is not None:
            blob, model = to_blob(vector), self.embedder.name
        return (
            record.id,
            record.task_name,
            record.tag,
            record.created,
            record.search_text(),
            scoped_text(record),
            record.to_json(),
            blob,
            model,
        )

    def add(self, record: MemoryRecord) -> None:
        self.add_many([record])

    def _writable(self, what: str) -> None:
        if self.readonly:
            raise MemoryStoreError(f"postgres store: {what} refused: the store is open read-only")

    def add_many(self, records: Iterable[MemoryRecord]) -> int:
        self._writable("write")
        batch = list(records)
        vectors: list[FloatArray | None] = (
            list(encode_in_batches(self.embedder, [r.search_text() for r in batch]))
            if self.embedder is not None and batch
            else [None] * len(batch)
        )
        rows = [self._row(r, v) for r, v in zip(batch, vectors, strict=True)]
        freq = Counter(token for row in rows for token in row[5].split())
        try:
            with self._db.transaction(), self._db.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {self.table} (id, task, tag, created, body, scoped, data, vec, vec_model) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    rows,
                )
                # Document frequency of each slice token (prune_by_frequency). Sorted, so concurrent
                # writers lock the counter rows in the same order and cannot deadlock.
                cur.executemany(
                    f"INSERT INTO {self.table}_terms (token, n) VALUES (%s, %s) "
                    f"ON CONFLICT (token) DO UPDATE SET n = {self.table}_terms.n + EXCLUDED.n",
                    sorted(freq.items()),
                )
                if len(rows) >= 1000:
                    # A bulk load changes the table's statistics at once; without fresh ones the planner
                    # may not use the GIN index until autovacuum gets round to it.
                    cur.execute(f"ANALYZE {self.table}")
        except self._errors as exc:
            raise MemoryStoreError(f"postgres store: write failed: {exc}") from exc
        return len(rows)

    def delete_episode(self, episode_id: str) -> int:
        """Remove one episode's rows (their tsvectors and GIN entries go with them) and their share of
        the ``_terms`` document-frequency counts, in one transaction."""
        self._writable("delete")
        try:
            with self._db.transaction(), self._db.cursor() as cur:
                deleted = cur.execute(
                    f"DELETE FROM {self.table} WHERE data ->> 'episode_id' = %s RETURNING scoped, id",
                    (episode_id,),
                ).fetchall()
                # ``scoped`` is exactly the text add_many counted: one count per record and token.
                freq = Counter(token for scoped, _ in deleted for token in scoped.split())
                tokens = sorted(freq.items())  # sorted, as in add_many: no deadlock with a writer
                cur.executemany(
                    f"UPDATE {self.table}_terms SET n = n - %s WHERE token = %s", [(n, t) for t, n in tokens]
                )
                # A token no record has any more is dropped, as if it had never been written.
                cur.execute(
                    f"DELETE FROM {self.table}_terms WHERE token = ANY(%s) AND n <= 0",
                    ([t for t, _ in tokens],),
                )
        except self._errors as exc:
            raise MemoryStoreError(f"postgres store: delete failed: {exc}") from exc
        if self._index is not None:
            self._index.discard({rec_id for _, rec_id in deleted})
        return len(deleted)

    def search(
        self, query: str, tags: Sequence[str] | None = None, task: str | None = None, k: int = 5
    ) -> list[MemoryRecord]:
        if k <= 0:
            return []
        terms = query_terms(query, self.max_terms)
        if terms and task:
            # Only the (task, tag) slices' rarest tokens are read: see scoped_token, prune_by_frequency.
            tokens = scoped_query(terms, task, tags)
            try:
                freq = self._db.execute(
                    f"SELECT token, n FROM {self.table}_terms WHERE token = ANY(%s)", [tokens]
                ).fetchall()
            except self._errors as exc:
                raise MemoryStoreError(f"postgres store: search failed: {exc}") from exc
            tokens = prune_by_frequency(dict(freq), self.max_postings)
            if not tokens:
                return []
            sql = (
                f"SELECT id, data FROM {self.table}, to_tsquery('simple', %s) AS q "
                "WHERE tsv_scoped @@ q ORDER BY ts_rank(tsv_scoped, q) DESC, created DESC LIMIT %s"
            )
            return self._fetch(sql, [" | ".join(tokens), k])
        where: list[str] = []
        params: list[Any] = []
        if terms:
            where.append("tsv @@ q")
        if task:
            where.append("task = %s")
            params.append(task)
        if tags:
            where.append("tag = ANY(%s)")
            params.append(list(tags))
        cond = " AND ".join(where) or "TRUE"
        if terms:
            sql = (
                f"SELECT id, data FROM {self.table}, to_tsquery('english', %s) AS q "
                f"WHERE {cond} ORDER BY ts_rank(tsv, q) DESC, created DESC LIMIT %s"
            )
            params = [" | ".join(terms), *params, k]
        else:
            sql = f"SELECT id, data FROM {self.table} WHERE {cond} ORDER BY created DESC LIMIT %s"
            params.append(k)
        return self._fetch(sql, params)

    def _fetch(self, sql: str, params: list[Any]) -> list[MemoryRecord]:
        try:
            rows = self._db.execute(sql, params).fetchall()
        except self._errors as exc:
            raise MemoryStoreError(f"postgres store: search failed: {exc}") from exc
        records = (self._bad.decode(rid, data, _record) for rid, data in rows)
        return [r for r in records if r is not None]

    # -- hybrid ranking: stored vectors ---------------------------------------------------------------
    def vector_search(
        self, query: str, tags: Sequence[str] | None = None, task: str | None = None, k: int = 5
    ) -> list[MemoryRecord]:
        """Best ``k`` records by cosine similarity of their stored vector to the query's, optionally only
        these tags / task (the embedding half of hybrid ranking)."""
        if k <= 0:
            return []
        if self.embedder is None:
            raise MemoryStoreError("postgres store: vector search needs a store opened with an embedder")
        if not self._has_vec:
            raise MemoryStoreError(
                f"postgres table {self.table} has no vector columns (written by an earlier version): "
                "open it writable once to add them"
            )
        index = self._sync_vectors(self.embedder)
        ids = index.top(encode_in_batches(self.embedder, [query])[0], k, tags, task)
        if not ids:
            return []
        rows = self._fetch_rows(f"SELECT id, data FROM {self.table} WHERE id = ANY(%s)", [list(ids)])
        found = {row[0]: row for row in rows}
        records = (self._bad.decode(i, found[i][1], _record) for i in ids if i in found)
        return [r for r in records if r is not None]

    def _fetch_rows(self, sql: str, params: list[Any]) -> list[Any]:
        try:
            return self._db.execute(sql, params).fetchall()
        except self._errors as exc:
            raise MemoryStoreError(f"postgres store: search failed: {exc}") from exc

    def _sync_vectors(self, embedder: Embedder) -> VectorIndex:
        """The in-memory index, after reading the rows written since the last call (by any process)."""
        if self._index is None or self._index.dim != embedder.dim:
            self._index = VectorIndex(embedder.dim)
        index = self._index
        # seq values are taken at insert but become visible at commit, so a concurrent writer's row can
        # appear below the cursor after a later one was read: the last SEQ_WINDOW values are read again
        # (ids already held are skipped). SQLite needs no window: its writes are serialised.
        # Ids first (cheap), the vectors and records only of rows not held yet.
        recent = self._fetch_rows(
            f"SELECT seq, id FROM {self.table} WHERE seq > %s ORDER BY seq",
            [max(0, index.cursor - SEQ_WINDOW)],
        )
        new = [rec_id for _, rec_id in recent if rec_id not in index and rec_id not in self._unindexed]
        if not new:
            return index
        rows = self._fetch_rows(
            f"SELECT seq, id, task, tag, vec, vec_model, data FROM {self.table} "
            "WHERE id = ANY(%s) ORDER BY seq",
            [new],
        )
        if not rows:
            return index
        have: list[tuple[str, str, str, FloatArray]] = []
        missing: list[tuple[str, str, str, MemoryRecord]] = []
        for _, rec_id, task, tag, blob, model, data in rows:
            vector = from_blob(blob, embedder.dim) if model == embedder.name else None
            if vector is not None:
                have.append((rec_id, task, tag, vector))
                continue
            record = self._bad.decode(rec_id, data, _record)
            if record is None:
                self._unindexed.add(rec_id)  # a bad row: not read again by the next syncs
            else:
                missing.append((rec_id, task, tag, record))
        if missing:
            fresh = encode_in_batches(embedder, [m[3].search_text() for m in missing])
            if not self.readonly:
                # Written back so the next process does not embed them again.
                try:
                    with self._db.transaction(), self._db.cursor() as cur:
                        cur.executemany(
                            f"UPDATE {self.table} SET vec = %s, vec_model = %s WHERE id = %s",
                            [(to_blob(v), embedder.name, m[0]) for m, v in zip(missing, fresh, strict=True)],
                        )
                except self._errors as exc:
                    raise MemoryStoreError(f"postgres store: write vectors failed: {exc}") from exc
            have += [(m[0], m[1], m[2], v) for m, v in zip(missing, fresh, strict=True)]
        if have:
            index.extend(
                [h[0] for h in have],
                [h[1] for h in have],
                [h[2] for h in have],
                np.stack([h[3] for h in have]),
            )
        index.cursor = max(index.cursor, int(recent[-1][0]))
        return index

    def count(self) -> int:
        try:
            row = self._db.execute(f"SELECT count(*) FROM {self.table}").fetchone()
        except self._errors as exc:
            raise MemoryStoreError(f"postgres store: {exc}") from exc
        return int(row[0]) if row else 0

    def iter_all(self) -> Iterator[MemoryRecord]:
        try:
            with self._db.cursor() as cur:
                for rid, data in cur.execute(f"SELECT id, data FROM {self.table} ORDER BY created, id"):
                    record = self._bad.decode(rid, data, _record)
                    if record is not None:
                        yield record
        except self._errors as exc:
            raise MemoryStoreError(f"postgres store: {exc}") from exc

    def drop(self) -> None:
        """Delete the table (tests and benchmarks clean up after themselves)."""
        self._writable("drop")
        try:
            self._db.execute(f"DROP TABLE IF EXISTS {self.table}, {self.table}_terms")
        except self._errors as exc:
            raise MemoryStoreError(f"postgres store: {exc}") from exc

    def close(self) -> None:
        self._db.close()


def _scrub(message: str, dsn: str, password: str | None) -> str:
    """A connection error's text without the password: libpq quotes parts of a malformed DSN back."""
    from psycopg import conninfo

    secrets = [password or ""]
    # A DSN psycopg cannot parse has no password to find; the regex redaction below still applies.
    with contextlib.suppress(Exception):
        secrets.append(str(conninfo.conninfo_to_dict(dsn).get("password") or ""))
    for secret in filter(None, secrets):
        message = message.replace(secret, "***")
    return redact_dsn(message)


def _record(data: Any) -> MemoryRecord:
    # psycopg decodes JSONB into Python objects; a plain text column would give a string.
    if isinstance(data, str | bytes):
        return MemoryRecord.from_json(data)
    if data is None:
        raise RecordError("data is NULL")
    return MemoryRecord.from_dict(data)
