"""The AMM store seam (paper §3.1): one small protocol, two backends (sqlite, postgres).

The paper keeps records in an external memory agent's archival memory; here any store that can add a
record and rank records for a free-text query, filtered by type tag and task, will do.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from fastslow.errors import FastslowError
from fastslow.memory.records import MemoryRecord, RecordError, content_words

if TYPE_CHECKING:  # the protocol names the embedder's type without loading numpy (tests/test_layers.py)
    from fastslow.models.embeddings import Embedder

log = logging.getLogger("fastslow.memory.stores")
T = TypeVar("T")


class MemoryStoreError(FastslowError):
    """The store could not be opened, written or searched; AMM falls back to the baseline input."""


class MemoryStore(Protocol):
    @property
    def bad_rows(self) -> int:
        """Stored rows that were not records (bad JSON, missing fields) and were skipped so far, each
        counted once.

        Such a row is logged as a warning naming the store and the row and left out of every result:
        one bad row must not end a search, an episode or ``fastslow memory stats``."""
        ...

    @property
    def bad(self) -> BadRows:
        """The skipped rows' bookkeeping: ``bad.skips`` grows on every read that skipped one, so AMM's
        hooks can tell which search lost rows and log it (a ``memory_fallback`` event, ``store_error``)."""
        ...

    def add(self, record: MemoryRecord) -> None: ...

    def search(
        self, query: str, tags: Sequence[str] | None = None, task: str | None = None, k: int = 5
    ) -> list[MemoryRecord]:
        """Best ``k`` records for a free-text query (full-text rank), optionally only these tags / task.
        A query without content words returns the newest matching records."""
        ...

    embedder: Embedder | None
    """hybrid ranking: computes each written record's stored vector and the query's; None = none stored."""

    def vector_search(
        self, query: str, tags: Sequence[str] | None = None, task: str | None = None, k: int = 5
    ) -> list[MemoryRecord]:
        """Best ``k`` records by cosine similarity of their stored vectors to the query's (needs
        ``embedder``; ``MemoryStoreError`` without one), optionally only these tags / task."""
        ...

    def count(self) -> int: ...

    def iter_all(self) -> Iterator[MemoryRecord]: ...


class BulkStore(MemoryStore, Protocol):
    """Stores that can also load many records in one transaction (benchmarks, imports) and close."""

    def add_many(self, records: Iterable[MemoryRecord]) -> int: ...

    def delete_episode(self, episode_id: str) -> int:
        """Remove every record of one episode, with its index entries and slice-term counts, in one
        transaction; returns how many records were removed.

        The run harness calls it before replaying an episode that did not finish (a worker killed with
        -9 and resumed), so the killed attempt's records cannot mix with the replay's."""
        ...

    def close(self) -> None: ...


class BadRows:
    """Skips rows that are not records: a warning naming the store and the row, once per row; every
    skip is counted (``skips``), so a caller can tell whether its own read lost rows."""

    def __init__(self, store: str) -> None:
        self.store = store
        self.seen: set[str] = set()
        """Ids of the rows skipped so far (each warned about once)."""
        self.skips = 0
        """Rows skipped by all reads so far: a row two reads skipped counts twice."""
        self.last = ""
        """The last skip in words, as its warning says it ("" before any)."""

    def decode(self, row_id: object, data: T, parse: Callable[[T], MemoryRecord]) -> MemoryRecord | None:
        """``parse(data)``, or None (warned and counted) if the row is not a record."""
        try:
            return parse(data)
        except RecordError as exc:
            key = str(row_id)
            self.skips += 1
            self.last = f"{self.store}: skipped row {key}: not a memory record ({exc})"
            if key not in self.seen:
                self.seen.add(key)
                log.warning("%s", self.last)
            return None


def query_terms(query: str, limit: int) -> list[str]:
    """Distinct content words of a query, first occurrence order, at most ``limit``."""
    seen: dict[str, None] = {}
    for word in content_words(query):
        seen.setdefault(word, None)
        if len(seen) >= limit:
            break
    return list(seen)


_TOKEN = re.compile(r"[^a-z0-9]")


def meta_token(prefix: str, value: str) -> str:
    """A single full-text token standing for a field value (``tkboil``, ``tgnearmiss``)."""
    return prefix + _TOKEN.sub("", value.lower())


_TAG_CODE = {"success": "s", "near-miss": "n", "avoidance": "a"}
ALL_TAGS = tuple(_TAG_CODE)


def scoped_token(task: str, tag: str, word: str) -> str:
    """A word seen in one (task, tag) slice, e.g. ``zboilszwater``.

    Indexing every word a second time under its slice lets a task- and tag-filtered search read only
    that slice's posting lists - a thirtieth of the store or less - instead of ranking every record
    that shares a common word and filtering afterwards. This keeps search time flat as the store grows.
    """
    return f"z{_TOKEN.sub('', task.lower())}{_TAG_CODE.get(tag, 'o')}z{word}"


def scoped_text(record: MemoryRecord) -> str:
    return " ".join(
        dict.fromkeys(
            scoped_token(record.task_name, record.tag, w) for w in content_words(record.search_text())
        )
    )


def prune_by_frequency(doc_freq: dict[str, int], max_postings: int) -> list[str]:
    """The rarest query tokens whose postings add up to at most ``max_postings`` (at least one token).

    BM25 weighs a token by its rarity, so the common tokens dropped here add little to the ranking,
    while each of them would pull most of a slice into the set of records to score. Capping the
    postings bounds the work per search whatever the store size (tokens absent from the store are
    dropped: they match nothing).
    """
    chosen: list[str] = []
    total = 0
    for token, n in sorted(((t, n) for t, n in doc_freq.items() if n > 0), key=lambda tn: (tn[1], tn[0])):
        if chosen and total + n > max_postings:
            break
        chosen.append(token)
        total += n
    return chosen


def scoped_query(terms: Sequence[str], task: str, tags: Sequence[str] | None) -> list[str]:
    return [scoped_token(task, tag, w) for tag in (tags or ALL_TAGS) for w in terms]
