"""AMM configuration (paper §3.1; defaults from the authors' settings, see PAPER_FACTS.md "AMM").

Every mechanism sits behind its own flag so ablations (e.g. "T1 injection off", paper §5 sensitivity)
are config diffs. AMM is informational: none of these settings can change which action executes.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, FieldSerializationInfo, field_serializer, field_validator, model_validator

from fastslow.strict import StrictModel

StoreKind = Literal["sqlite", "postgres"]
MemoryMode = Literal["online", "frozen"]
BudgetUnit = Literal["chars", "tokens"]

SECRETS_CONTEXT_KEY = "secrets"
"""Serialization context key: ``model_dump(context={"secrets": True})`` keeps the DSN's password.

Every other dump (config.yaml, run.json, event headers, ``fastslow config show``) redacts it; only the
harness, shipping the config to its own worker processes, needs the real DSN."""

TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,56}$")
"""A PostgreSQL table name the store accepts: it is interpolated into SQL, so only a plain lower-case
identifier, with room for the ``_terms`` suffix within PostgreSQL's 63 characters."""

_URL_DSN = re.compile(r"^(?P<scheme>postgres(?:ql)?://)(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_URL_QUERY_PASSWORD = re.compile(r"(?P<key>[?&]password=)[^&#]*", re.IGNORECASE)
# libpq keyword form: password=secret, password = 'se cret', password='it\'s' (backslash escapes).
_KV_PASSWORD = re.compile(r"\b(?P<key>password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s']\S*)", re.IGNORECASE)


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***``, in URL and in key=value form.

    ``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db`` (also a ``?password=``
    query parameter); ``host=h password='se cret'`` -> ``host=h password=***``.
    """
    url = _URL_DSN.match(dsn)
    if url is None:
        return _KV_PASSWORD.sub(lambda m: m.group("key") + "***", dsn)
    rest = url.group("rest")
    # The authority ends at the first / ? or #; its user info ends at its last @ (a raw @ in a
    # password is a user's mistake, but must not leak the part after it either).
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        authority = f"{userinfo}@{host}"
    tail = _URL_QUERY_PASSWORD.sub(lambda m: m.group("key") + "***", tail)
    return url.group("scheme") + authority + tail


class SalienceConfig(StrictModel):
    """The write-side gate: which transitions become records (paper §3.1, write hook)."""

    milestone_reward: int = Field(default=20, ge=1)
    """A score gain of at least this is a success/milestone memory (authors' threshold 20)."""
    small_reward: int = Field(default=5, ge=1)
    """A score gain of at least this (and below the milestone) is near-miss progress; smaller gains are
    not stored (authors' small-reward threshold 5)."""
    shaping_actions: list[str] = ["wait", "wait1", "wait2"]
    """Actions never stored whatever happened: waiting lets time pass, it is not a reusable step."""
    store_invalid: bool = True
    """Store explicit invalid-action feedback ("No known action matches that input.") as avoidance."""
    store_failure: bool = True
    """Store a task-ending failure (score -100) as avoidance."""
    dedup_per_episode: bool = True
    """Store a given (tag, subtag, action) at most once per episode, so a loop of the same invalid
    action writes one avoidance record, not fifty."""
    observation_chars: int = Field(default=300, ge=20)
    """Observations are cut to this length in a record: records are compact, not transcripts."""
    recent_turns: int = Field(default=3, ge=0)
    """How many preceding (action -> observation) turns a record keeps as recent context."""


class RetrievalConfig(StrictModel):
    """Read side: trigger-driven retrieval (paper §3.1, T1-T4)."""

    t1: bool = True
    """T1: on Swift failure, retry Swift with memories (success-only, then success+near-miss)."""
    t2: bool = True
    """T2: on stagnation, retrieve and cache (no model input changes in the AMM-only configuration)."""
    t3: bool = True
    """T3: on a repeated invalid action, retrieve and cache (no model input changes in AMM-only)."""
    t4: bool = True
    """T4: when Sage plans, add success and near-miss memories to its planning prompt."""
    t1_k: int = Field(default=3, ge=1)
    """Memories per T1 rung given to Swift (authors: 3)."""
    t4_k: int = Field(default=5, ge=1)
    """Memories given to Sage at T4 (authors: 5)."""
    cache_k: int = Field(default=5, ge=1)
    """Memories cached at T2/T3."""
    same_task_first: bool = True
    """Search the current task's memories first and fill up from other tasks only if too few."""
    stagnation_window: int = Field(default=5, ge=2)
    """T2 fires when the last this-many steps gained no score and showed at most 2 distinct
    observations (the AMM-side check; SRM has its own detector)."""
    query_terms: int = Field(default=16, ge=1)
    """At most this many distinct content words go into a full-text query (bounds search latency)."""
    max_postings: int = Field(default=400, ge=1)
    """A task-filtered search uses only its rarest words whose postings add up to at most this many
    records, so its cost stays flat as the store grows (see ``stores.base.prune_by_frequency``)."""


class InjectionConfig(StrictModel):
    """Bounded, delimited prompt augmentation (paper §3.1, prompt augmentation)."""

    unit: BudgetUnit = "chars"
    """Unit of the budgets below; tokens are counted as words and punctuation marks (approximate)."""
    swift_budget: int = Field(default=900, ge=1)
    """Largest memory block given to Swift."""
    sage_budget: int = Field(default=2000, ge=1)
    """Largest memory block given to Sage."""
    critic_budget: int = Field(default=1500, ge=1)
    """Largest memory block given to the Critic (full system only)."""
    observation_chars: int = Field(default=160, ge=20)
    """Observations are cut to this length in the block before any further compression."""


class AmmConfig(StrictModel):
    """The Adaptive Memory Module (paper §3.1). Off unless ``enabled``."""

    enabled: bool = False
    """Master switch; off reproduces the baseline exactly."""
    store: StoreKind = "sqlite"
    """Memory backend: sqlite (one local file) or postgres (a PostgreSQL server, ``dsn``)."""
    path: str | None = None
    """SQLite file of the store (shared by every worker process of a run). None = the run's own store,
    ``<run dir>/memory.sqlite``, so two runs never share memories unless a path names one on purpose."""
    dsn: str = ""
    """PostgreSQL connection string; empty means the FASTSLOW_PG_DSN environment variable. A password
    in it is written as ``***`` in every dump (config.yaml, run.json, event headers): use
    ``password_env`` instead of putting one here."""
    password_env: str | None = None
    """postgres: name of the environment variable holding the password (e.g. FASTSLOW_PG_PASSWORD); the
    password itself never goes into a config or a log. None = the DSN (or libpq's own ways, such as
    ``~/.pgpass``) provides it."""
    table: str = "amm_memories"
    """PostgreSQL table holding the records (created if missing); a lower-case SQL identifier."""
    mode: MemoryMode = "online"
    """online: keep writing during evaluation; frozen: read-only after the warm-up episodes."""
    write: SalienceConfig = SalienceConfig()
    """Salience gate of the write hook."""
    retrieval: RetrievalConfig = RetrievalConfig()
    """Triggers and retrieval sizes."""
    injection: InjectionConfig = InjectionConfig()
    """Prompt-block budgets."""

    @field_validator("table")
    @classmethod
    def _table_is_identifier(cls, table: str) -> str:
        # The name is interpolated into SQL statements: anything but a plain identifier is refused here,
        # when the config is loaded, not at the first query of a worker.
        if not TABLE_NAME.match(table):
            raise ValueError(
                "must be a lower-case SQL identifier (a-z, 0-9, _, not starting with a digit, at most "
                f"57 characters), got {table!r}"
            )
        return table

    @field_validator("password_env")
    @classmethod
    def _env_name(cls, name: str | None) -> str | None:
        # A name, not a value: something with '=' or spaces is most likely the password pasted in.
        if name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError("must be the name of an environment variable (letters, digits, _)")
        return name

    @field_serializer("dsn")
    def _dump_dsn(self, dsn: str, info: FieldSerializationInfo) -> str:
        context = info.context
        if isinstance(context, dict) and context.get(SECRETS_CONTEXT_KEY) is True:
            return dsn
        return redact_dsn(dsn)

    @model_validator(mode="after")
    def _store_fields_fit_store(self) -> AmmConfig:
        # A path on a PostgreSQL store (or a DSN on an SQLite one) would be silently ignored.
        if self.store == "postgres" and self.path:
            raise ValueError("amm.path is used only by store sqlite (this store is postgres): remove it")
        if self.store == "sqlite":
            unused = [
                f
                for f, default in (("dsn", ""), ("password_env", None), ("table", "amm_memories"))
                if getattr(self, f) != default
            ]
            if unused:
                raise ValueError(
                    f"{', '.join('amm.' + f for f in unused)} is used only by store postgres (this store is "
                    "sqlite): add -o amm.store=postgres, or remove it"
                )
        return self
