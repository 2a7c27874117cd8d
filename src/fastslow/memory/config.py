"""AMM configuration (paper §3.1; defaults from the authors' settings, listed in docs/amm.md, "Defaults").

Every mechanism sits behind its own flag so ablations (e.g. "T1 injection off", paper §5 sensitivity)
are config diffs. AMM is informational: none of these settings can change which action executes.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, FieldSerializationInfo, field_serializer, field_validator, model_validator

from fastslow.redact import SECRETS_CONTEXT_KEY as SECRETS_CONTEXT_KEY
from fastslow.redact import redact_text, wants_secrets
from fastslow.strict import StrictModel

StoreKind = Literal["sqlite", "postgres"]
MemoryMode = Literal["online", "frozen"]
BudgetUnit = Literal["chars", "tokens"]
T1Ladder = Literal["within_step", "across_failures"]
CriticEvidence = Literal["cache", "fresh"]
T3Rule = Literal["first_repeat", "every_repeat"]
TaggingProfile = Literal["fastslow", "authors"]
RankingKind = Literal["bm25", "hybrid"]
QueryStyle = Literal["state", "authors"]
EmbedderChoice = Literal["auto", "minilm", "lexical"]

TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,56}$")
"""A PostgreSQL table name the store accepts: it is interpolated into SQL, so only a plain lower-case
identifier, with room for the ``_terms`` suffix within PostgreSQL's 63 characters."""


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***``, in URL and in key=value form (``fastslow.redact``).

    ``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db`` (also a ``?password=``
    query parameter); ``host=h password='se cret'`` -> ``host=h password=***``.
    """
    return redact_text(dsn)


class SalienceConfig(StrictModel):
    """The write-side gate: which transitions become records (paper §3.1, write hook)."""

    tagging: TaggingProfile = "fastslow"
    """Which gate tags the transitions. ``fastslow``: the rules below (near-miss from ``small_reward``,
    shaping actions never stored, avoidance at -100 and on a score loss), records keep the state before
    the step. ``authors``: the authors' ``amm/tagging.py`` as their loop calls it (docs/amm.md, "Salience
    gate"): the gain is the rise over the best score so far, any positive gain below the milestone is
    near-miss (``small_reward`` unused, as in their code), a rewarded wait is near-miss/delayed_reward,
    every episode end but 100 (step limit included) is avoidance/terminal_incorrect, their subtag names;
    records hold the task description, the room, inventory and look after the step, the whole
    observation and the 4 preceding turns (with the step itself their 5 recent actions)."""
    milestone_reward: int = Field(default=20, ge=1)
    """A score gain of at least this is a success/milestone memory (authors' threshold 20)."""
    small_reward: int = Field(default=5, ge=1)
    """A score gain of at least this (and below the milestone) is near-miss progress; smaller gains are
    not stored (authors' small-reward threshold 5, which their own gate never reads: unused with
    ``tagging: authors``)."""
    shaping_actions: list[str] | None = None
    """Actions never stored whatever happened: waiting lets time pass, it is not a reusable step. With
    ``tagging: authors`` a rewarded step starting with one of them is near-miss/delayed_reward instead.
    None: the world's idle actions (``WorldSemantics.idle_actions``: ScienceWorld's wait, wait1, wait2;
    none in TextWorldExpress)."""
    store_invalid: bool = True
    """Store explicit invalid-action feedback ("No known action matches that input.") as avoidance."""
    store_failure: bool = True
    """Store a task-ending failure (score -100) as avoidance."""
    dedup_per_episode: bool = True
    """Store a given (tag, subtag, action) at most once per episode, so a loop of the same invalid
    action writes one avoidance record, not fifty (the authors' writer has no such check: off in amm.yaml)."""
    observation_chars: int = Field(default=300, ge=20)
    """Observations are cut to this length in a record: records are compact, not transcripts (fastslow
    gate; the authors' keeps the whole observation)."""
    recent_turns: int = Field(default=3, ge=0)
    """How many preceding (action -> observation) turns a record keeps as recent context (fastslow gate;
    the authors' keeps 4)."""


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
    observations (the AMM-side check; SRM has its own detector). Unused when ``t2_at`` is set."""
    # -- trigger profile: the defaults are fastslow's triggers, configs/amm.yaml sets the authors' ------
    t1_ladder: T1Ladder = "within_step"
    """How T1 climbs its two rungs. ``within_step``: both in one timestep (success-only memories and a
    Swift retry, then success + near-miss memories and another retry, then escalate). ``across_failures``
    (the authors' ``findValidActionWithSystem2``): one rung per Swift failure, chosen by the number of
    Swift failures in a row before this one: none, success-only; one, success + near-miss; two or more,
    no T1. The count restarts when Swift's top prediction is valid (a T1 retry included), when an action
    comes from the buffer (Sage's or the Critic's) and on every iteration a forcing rule sent to Sage."""
    t1_on_forced: bool = False
    """T1 also fires when a forcing rule of the authors' loop sends the iteration to Sage (two iterations
    without an env step, two failure messages, a Gate-1 drop loop; not the focus rule, which the authors
    exempt), whether or not Swift's own proposal was valid; a valid memory-conditioned Swift proposal
    then runs instead of Sage. Needs ``t1_settles`` (otherwise the forcing rule would still call Sage)."""
    t1_settles: bool = False
    """A proposal T1 made valid is Swift's action for the iteration, without the arbitration rules (the
    authors return it at once, before their no-progress rule). False: it is arbitrated like any
    Swift proposal (the no-progress rule may still call Sage)."""
    t1_retry_without_memories: bool = False
    """Retry Swift even when the rung found no memory to show (the authors' retry does not depend on
    what the search returned); False skips the rung, logging ``MemoryFallback(no_records)``."""
    t1_inject: bool = True
    """Show the retrieved memories to the retried Swift. False = the authors' "T1 injection off"
    sensitivity (``--disable-swift-injection``): T1 still retrieves (logged) and retries Swift, with
    no memories and no ``MemoryInjection``."""
    t1_zero_scores: bool = False
    """The retried Swift sees every score and reward of the episode as 0: the authors' retry rebuilds
    Swift's input with zero placeholders, so it reads "Score: 0" and "+0" on every history line."""
    t2_at: list[int] = []
    """Fire T2 when Swift's top prediction is valid and exactly this many env steps in a row have made
    no progress (no success or near-miss transition by the salience gate): the authors' thresholds 4
    (success memories) and 8 (success + near-miss memories): the first threshold retrieves success
    memories, every later one success and near-miss. Empty: fastslow's ``stagnation_window`` check
    after each step."""
    t3_rule: T3Rule = "first_repeat"
    """When T3 fires. ``first_repeat``: the last two actions are the same and both got the invalid-action
    reply, once per streak. ``every_repeat`` (the authors' loop): after every step whose action repeats
    the previous one and whose observation is exactly ScienceWorld's "No known action matches that
    input.", so a streak fires at each repeat."""
    t4_avoidance_on_failures: bool = False
    """At T4, when failure messages were seen since Sage last planned (the authors' failed-action
    list, ``AuthorsProfile.failed``), also retrieve avoidance memories; they fill the T4 block's slots
    (``t4_k`` in all) that success and near-miss memories left, as the authors' planning block keeps
    the first five of the success list followed by the avoidance list."""
    critic_evidence: CriticEvidence = "cache"
    """What the LLM Critic reads from AMM. ``cache``: the records T3 (else T2) cached, avoidance
    included. ``fresh`` (the authors' ``amm/retrieve_for_critic.py``): a new success + near-miss
    search at the call, without records whose observation is a refusal, ranked by same task, same room,
    a positive reward (a focus last when the focus budget is spent), the best ``critic_k``; plus one
    avoidance memory when the recent steps show failures."""
    critic_k: int = Field(default=3, ge=1)
    """``critic_evidence: fresh``: success and near-miss memories given to the Critic (authors: 3, of
    the 10 their search returns)."""

    prior: bool = False
    """AMM's action prior (``memory.prior``, paper §3.1 on the fast pathway; docs/amm.md): on every
    Swift proposal, a valid action that other episodes of the run (the warm-up included) were rewarded
    for gains ``prior_bonus`` and one they lost score with loses ``prior_penalty`` (votes of the current
    task's records, by episode). Off: the paper configurations' AMM; the fast-pathway configurations
    with AMM switch it on."""
    prior_bonus: float | None = Field(default=None, ge=0.0)
    """The prior's bonus in Swift's score units; None: the value fitted on dev streams
    (``memory/data/prior.json``, which records how)."""
    prior_penalty: float | None = Field(default=None, ge=0.0)
    """The prior's penalty in Swift's score units; None: the fitted value (``memory/data/prior.json``)."""

    @model_validator(mode="after")
    def _forced_t1_settles(self) -> RetrievalConfig:
        # On a forced iteration the arbitration would send Swift's rescued proposal to Sage anyway.
        if self.t1_on_forced and not self.t1_settles:
            raise ValueError("amm.retrieval.t1_on_forced needs amm.retrieval.t1_settles: true")
        if any(n < 1 for n in self.t2_at) or sorted(set(self.t2_at)) != self.t2_at:
            raise ValueError("amm.retrieval.t2_at must list distinct positive step counts, ascending")
        return self

    query_terms: int = Field(default=16, ge=1)
    """At most this many distinct content words go into a full-text query (bounds search latency)."""
    max_postings: int = Field(default=400, ge=1)
    """A task-filtered search uses only its rarest words whose postings add up to at most this many
    records, so its cost stays flat as the store grows (see ``stores.base.prune_by_frequency``)."""
    ranking: RankingKind = "bm25"
    """How records are ranked for a query. ``bm25``: full-text BM25 alone. ``hybrid``: the authors'
    Letta archival search, a BM25 list and an embedding-similarity list fused by reciprocal rank
    (``rrf_k``, ``vector_weight``, ``fts_weight``); each record's vector is computed when it is written
    and stored with it."""
    query: QueryStyle = "state"
    """The search text. ``state``: the last action and observation, room, inventory and task, most
    specific first (``retrieval.state_query``). ``authors``: their structured query (``retrieval.
    authors_query``): task, state line (room, inventory, last rewards, score), last five actions and
    observations, and lines naming what the trigger's rung looks for (issue, tag scope, tag hint, a
    sentence of intent), so the rungs differ only in those lines; the Critic's searches show rewards
    and score as 0, as their ``retrieve_for_critic``."""
    filter_tags: bool = True
    """Keep only records whose tag the trigger asks for. False = the authors' Letta search: every
    record competes, a trigger's tags only shape its query wording."""
    embedder: EmbedderChoice = "auto"
    """hybrid: the sentence embedder. ``auto`` = MiniLM (all-MiniLM-L6-v2) when the ``embed`` extra is
    installed, else the lexical stand-in (hashed words and trigrams, not a semantic model); the run
    says which it used (run.json ``starts[].memory_embedder``, and the start-up line of ``eval``)."""
    rrf_k: int = Field(default=60, ge=1)
    """Reciprocal rank fusion constant: a record ranked r in a list adds ``weight / (rrf_k + r)``
    (Letta: 60, the constant of Cormack et al. 2009)."""
    rrf_depth: int = Field(default=10, ge=1)
    """Candidates each list (BM25, embedding) contributes to the fusion, at least the k asked for
    (Letta fetches ``top_k`` from each; the authors ask for 10)."""
    vector_weight: float = Field(default=0.5, ge=0.0)
    """Weight of the embedding list in the fusion (Letta: 0.5)."""
    fts_weight: float = Field(default=0.5, ge=0.0)
    """Weight of the BM25 list in the fusion (Letta: 0.5)."""


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
    provenance: bool = False
    """Log, in every ``memory_retrieval`` event, the episode that wrote each record returned
    (``writers``; the learning curve's sources, ``eval.curve``). ``fastslow eval --stream`` turns it on;
    off (the default) leaves the event logs of every configuration as they were. Changes nothing an
    agent sees."""
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
        # Every dump is a record or a display, except the config the harness ships to its own workers.
        return dsn if wants_secrets(info.context) else redact_dsn(dsn)

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
