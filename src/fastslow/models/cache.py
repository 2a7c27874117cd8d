"""Sage/Critic model backends, paper §3 and §4 (Qwen2.5-7B via vLLM): an exact-prompt response cache.

At temperature 0 a model's answer is a function of the request, so a request answered once in a run need
not be sent again: ``CachedModel`` looks the request up in a ``ResponseCache`` and returns the stored
answer (``Completion.cached``; ``call_model`` logs it as a ``model_call`` event with ``cached`` set), or
calls the model and stores what it answered. A call at any other temperature always goes to the model,
and so does every call when the role's ``model.response_cache`` is off.

The key (``request_key``) is the exact request: the messages as sent (after a ``system_message: fold``),
``max_tokens``, the stop sequences and the constraint (its kind and content), with ``None`` read as the
model's configured default; and the model: backend, name, and the settings that shape its answer
(``ANSWER_FIELDS``: server, seed, extra request fields, constraint form; GGUF file and context size).
Timeouts, retries, the circuit breaker and thread counts change how an answer is obtained, not which,
and are not in it. A failed call (a ``ModelError``, a broken constraint) stores nothing.

Scope: one cache per run. ``fastslow eval`` keeps it in the run directory, ``DIR/model_cache.sqlite``
(``CACHE_FILE``), an SQLite file rather than a dictionary in each worker process, for two reasons: the
run's worker processes share it (WAL journal, a busy timeout, ``INSERT OR IGNORE``, so concurrent
writers lose nothing and the first answer stored is the one every later call gets), and it outlives
the processes, so a resumed run replays an unfinished episode's calls from it instead of recomputing
them (minutes per episode with the embedded model). That stays correct because a run directory
refuses a resume by another configuration or other code (``eval.rundir``) and the key names the model
and its settings; ``--restart`` deletes the file with the run's other files. ``fastslow run`` (one
episode, no resume) keeps the cache in memory (``ResponseCache(None)``).

The cache never fails a call: a file it cannot open, read or write (a full disk, someone else's
database) is reported once as a warning, and from then on every call goes to the model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fastslow.models.base import ChatModel, Completion, FoldSystem, Message
from fastslow.models.config import USED_BY, ModelConfig
from fastslow.models.constraint import Constraint

log = logging.getLogger(__name__)

CACHE_FILE = "model_cache.sqlite"
"""The response cache's file in a run directory."""
KEY_VERSION = 1
"""Part of every key: a change of what the key covers changes every key, so old entries are never hit."""
ANSWER_FIELDS = ("base_url", "extra_body", "constraint_format", "seed", "model_path", "n_ctx")
"""The ``ModelConfig`` fields besides the backend and model name that can change an answer, in the key
(each only for the kinds that use it)."""
_TABLE = "model_answers"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {_TABLE} (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID
"""


@dataclasses.dataclass(frozen=True)
class Answer:
    """A stored answer: what the model said, its token counts, and how long it took then."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float


def constraint_key(constraint: Constraint | None) -> dict[str, Any] | None:
    """``constraint`` as plain data for the key: its kind and fields (options, pattern or grammar)."""
    if constraint is None:
        return None
    return {"kind": constraint.kind, **dataclasses.asdict(constraint)}


def model_identity(model: ChatModel, cfg: ModelConfig) -> dict[str, Any]:
    """What names the model in a key: backend, model name, and ``cfg``'s ``ANSWER_FIELDS`` its kind uses."""
    fields = {f: getattr(cfg, f) for f in ANSWER_FIELDS if cfg.kind in USED_BY.get(f, (cfg.kind,))}
    return {"backend": model.backend, "model": model.model, **fields}


def request_key(
    identity: Mapping[str, Any],
    messages: Sequence[Message],
    *,
    max_tokens: int,
    stop: Sequence[str],
    constraint: Constraint | None,
) -> str:
    """The key of a temperature-0 request: a SHA-256 over its canonical JSON (sorted keys, no spaces),
    so equal requests have equal keys in every process and every run."""
    payload = {
        "v": KEY_VERSION,
        "model": dict(identity),
        "messages": [[m["role"], m["content"]] for m in messages],
        "max_tokens": max_tokens,
        "stop": list(stop),
        "constraint": constraint_key(constraint),
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_cache_file(path: Path) -> bool:
    """Whether ``path`` is a response cache (an SQLite file with the cache's table), read-only."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_TABLE,)
            ).fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return found is not None


class ResponseCache:
    """Answers by request key: in an SQLite file shared by processes (``path``), or in memory (None).

    The file is opened on first use, so a run whose calls are never cacheable creates none. ``hits``
    and ``stored`` count this object's look-ups that found an answer and the answers it stored."""

    def __init__(self, path: Path | None, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self.hits = 0
        self.stored = 0
        self._memory: dict[str, Answer] = {}
        self._db: sqlite3.Connection | None = None
        self._failed: str | None = None
        """Why the file is not used (reported once); None while it works."""
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self._failed is not None or self.path is None:
            return self._db
        try:
            if self.path.exists() and not is_cache_file(self.path) and self.path.stat().st_size:
                raise sqlite3.DatabaseError("the file is not a fastslow response cache")
            db = sqlite3.connect(
                self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            self._fail(exc)
            return None
        self._db = db
        return db

    def _fail(self, exc: Exception) -> None:
        self._failed = f"{type(exc).__name__}: {exc}"
        log.warning(
            "response cache %s cannot be used (%s); model calls are sent without it", self.path, self._failed
        )
        if self._db is not None:
            self._db.close()
            self._db = None

    def get(self, key: str) -> Answer | None:
        """The answer stored under ``key``, or None."""
        with self._lock:
            found = self._memory.get(key)
            db = self._connect()
            if found is None and db is not None:
                try:
                    row = db.execute(
                        f"SELECT text, prompt_tokens, completion_tokens, latency_s FROM {_TABLE} "
                        "WHERE key = ?",
                        (key,),
                    ).fetchone()
                except sqlite3.Error as exc:
                    self._fail(exc)
                    row = None
                if row is not None:
                    found = Answer(str(row[0]), int(row[1]), int(row[2]), float(row[3]))
            if found is not None:
                self.hits += 1
            return found

    def put(self, key: str, answer: Answer) -> None:
        """Store ``answer`` under ``key``; an answer already stored there (by another worker) stays."""
        with self._lock:
            if self.path is None:
                self._memory.setdefault(key, answer)
                self.stored += 1
                return
            db = self._connect()
            if db is None:
                return
            try:
                db.execute(
                    f"INSERT OR IGNORE INTO {_TABLE} VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        answer.text,
                        answer.prompt_tokens,
                        answer.completion_tokens,
                        answer.latency_s,
                        time.time(),
                    ),
                )
            except sqlite3.Error as exc:
                self._fail(exc)
                return
            self.stored += 1

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class CachedModel:
    """``inner`` behind a ``ResponseCache``; a ``ChatModel`` itself. ``cfg`` is the role's model section:
    its defaults complete a call's ``None`` parameters, and it names the model in the key."""

    def __init__(self, inner: ChatModel, cache: ResponseCache, cfg: ModelConfig) -> None:
        self.inner = inner
        self.cache = cache
        self.cfg = cfg
        self.backend = inner.backend
        self.model = inner.model
        self.identity = model_identity(inner, cfg)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        constraint: Constraint | None = None,
    ) -> Completion:
        cfg = self.cfg
        if (cfg.temperature if temperature is None else temperature) != 0:
            return self.inner.complete(
                messages, max_tokens=max_tokens, temperature=temperature, stop=stop, constraint=constraint
            )
        start = time.perf_counter()
        key = request_key(
            self.identity,
            messages,
            max_tokens=cfg.max_tokens if max_tokens is None else max_tokens,
            stop=cfg.stop if stop is None else stop,
            constraint=constraint,
        )
        found = self.cache.get(key)
        if found is not None:
            return Completion(
                text=found.text,
                prompt_tokens=found.prompt_tokens,
                completion_tokens=found.completion_tokens,
                latency_s=time.perf_counter() - start,
                attempts=0,
                model=self.model,
                backend=self.backend,
                cached=True,
            )
        completion = self.inner.complete(
            messages, max_tokens=max_tokens, temperature=temperature, stop=stop, constraint=constraint
        )
        self.cache.put(
            key,
            Answer(
                completion.text, completion.prompt_tokens, completion.completion_tokens, completion.latency_s
            ),
        )
        return completion

    def check_available(self) -> None:
        self.inner.check_available()

    def check_constraints(self) -> None:
        self.inner.check_constraints()


def cache_responses(model: ChatModel, cfg: ModelConfig, cache: ResponseCache | None) -> ChatModel:
    """``model`` behind ``cache`` (a ``CachedModel``) when ``cfg.response_cache`` is on; ``model`` itself
    without a cache, with the switch off, or for a scripted model (by ``cfg.kind`` or by the model's
    backend: scripted replies are a sequence, not a function of the prompt). A ``FoldSystem`` model
    keeps its fold outermost (``call_model`` recognises it to log the folded messages)."""
    if isinstance(model, FoldSystem):
        return FoldSystem(cache_responses(model.inner, cfg, cache))
    if cache is None or not cfg.response_cache or "scripted" in (cfg.kind, model.backend):
        return model
    return CachedModel(model, cache, cfg)
