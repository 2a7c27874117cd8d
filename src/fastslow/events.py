"""Typed, versioned trajectory events written as JSONL while a run goes (paper §4, Appendices D-E).

Every metric fastslow reports is computed from these logs, never from in-memory counters alone, so a
run can be re-scored, compared or audited after the fact. One file holds one episode: an
``episode_start`` header, then one event per env step and per model call, then ``episode_end``.
A file without ``episode_end`` is an unfinished episode (crash, kill) and is ignored by metrics. The
file is named for its episode (``<episode_id>.jsonl``; a copy set aside under ``events/failed/`` adds a
suffix: ``<episode_id>.attempt1.jsonl``), and ``iter_events`` refuses any other shape.

One step convention: every event's ``step`` is the number of env steps the episode had taken when the
event was emitted (``StepResult.steps``; ``reset`` is 0). The ``env_step`` of the n-th action is emitted
after it and carries n; everything decided before that action (Swift's proposal, Gate-1, an escalation,
a Sage round and its model calls, a buffer pop) carries n - 1; what follows it (memory writes, the
stagnation detector, the Critic) carries n.

Fields with a fixed vocabulary (escalation rules, stagnation patterns, AMM triggers and targets, model
roles, ...) are typed with the Literals of ``fastslow.vocab``: a value outside them does not parse, and
``iter_events`` reports the file and line (``CorruptLogError``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import IO, Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from fastslow.errors import CorruptLogError
from fastslow.manifest import record_writing, record_written
from fastslow.redact import redact_json
from fastslow.vocab import (
    CriticEffectReason,
    CriticKind,
    EscalationBlock,
    EscalationRule,
    FallbackTarget,
    FallbackTrigger,
    MemoryTag,
    MemoryTarget,
    ModelRole,
    StagnationPattern,
    StepSource,
)
from fastslow.vocab import MemoryTrigger as MemoryTrigger  # re-exported: memory.episode, memory.retrieval

SCHEMA_VERSION = 1


class EndState(StrEnum):
    """How an episode stands after a step: still running, or why it ended."""

    RUNNING = "running"
    SUCCESS = "success"  # score reached 100
    FAILURE = "failure"  # the task failed: ScienceWorld reports score -100 and ends the episode
    STEP_LIMIT = "step_limit"  # the configured env-step limit was reached
    EARLY_STOP = "early_stop"  # the agent gave up (e.g. SwiftSage's long run without reward)
    ERROR = "error"  # the environment or agent raised a typed error (e.g. the JVM died)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    t: float = Field(default_factory=time.time)
    """Wall-clock time (Unix seconds) when the event was created."""


class ForkOrigin(BaseModel):
    """Where a fork comes from (``fastslow fork``): the parent run's episode, replayed up to ``at``."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    run_dir: str
    """The parent run's directory, as given to ``fastslow fork``."""
    run_id: str
    """The parent run's id (its run.json)."""
    config_name: str
    """The configuration that played the parent episode."""
    at: int
    """The first step the fork plays itself: steps 1..at-1 replay the parent's actions."""


class JvmHistory(BaseModel):
    """What the ScienceWorld JVM that played an episode had played before it. On the JVM's own identity
    hash codes (``env.hash_codes: default``) ScienceWorld orders objects in its texts by those codes,
    which depend on everything the JVM ran before: a fork of such an episode replays these episodes
    first to come near the same JVM state. On constant codes (the default) the order does not depend on
    them, and a fork starts a fresh JVM."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    episodes: list[str]
    """Episode ids of the run, in the order the JVM played them before this one ([]: a fresh JVM)."""
    gold: bool
    """Whether its resets generated the gold path (another JVM computation)."""


class EpisodeStart(_Event):
    """Episode header: everything needed to reproduce and interpret the rest of the file."""

    event: Literal["episode_start"] = "episode_start"
    schema_version: int = SCHEMA_VERSION
    """Version of this event schema; bumped on incompatible changes."""
    episode_id: str
    """Stable id ``<task_id>-<variation>`` (plus ``-s<seed>`` when seeded), unique within a run."""
    task_id: int
    task_name: str
    variation: int
    split: str
    """Variation split the episode belongs to (train, dev, test)."""
    config_name: str
    config: dict[str, Any]
    """The fully resolved run configuration."""
    versions: dict[str, str]
    """Package versions: fastslow, scienceworld, python, ..."""
    git_commit: str | None = None
    task_description: str = ""
    seed: int | None = None
    jvm: JvmHistory | None = None
    """The JVM's history before this episode, when a run's worker played it (None: not known)."""
    fork: ForkOrigin | None = None
    """Set in a fork's log: the parent episode and step it continues from; None in a run's own."""
    world: str = "scienceworld"
    """The world the episode was played in (``env.world``; ``fastslow.env.world``), which ``task_id``
    and ``variation`` belong to. Logs written before a second world existed have no such field: they
    are ScienceWorld's, the default."""
    stream_position: int | None = None
    """``fastslow eval --stream`` (``eval.stream``): the episode's place in its task's stream,
    0 for the task's first episode of the run's recorded order (run.json ``episodes``). It played on a
    copy of the run's AMM store holding the warm-up's records and those of every episode (of any task)
    at a smaller position, and no other. None: not a stream run (every log written before streams)."""


class ReplayEnd(_Event):
    """A fork finished replaying its parent's prefix (``fastslow fork``): what was checked and how
    exactly it matched. Comes after the last replayed ``env_step``; a mismatch ends the episode instead
    (its ``episode_end`` names the step and the field)."""

    event: Literal["replay_end"] = "replay_end"
    step: int
    """Env steps replayed (the fork's first own step is ``step + 1``)."""
    checked: list[str]
    """The fields of every replayed step compared with the parent's log (all equal, or the fork ends)."""
    agreed: int
    """Replayed steps at which the fork's agent, asked first, chose the parent's action itself (every
    one under the parent's configuration, unless ScienceWorld or a model answered differently)."""
    history_steps: int = 0
    """Steps of the episodes the parent's JVM played before this one, replayed first on the fork's
    fresh JVM (``EpisodeStart.jvm``), each observation checked."""


class EnvStep(_Event):
    """One call to ScienceWorld's step: exactly one per agent timestep."""

    event: Literal["env_step"] = "env_step"
    step: int
    """Env steps taken, this one included: the n-th action of the episode carries n."""
    action: str
    source: StepSource
    """Who chose the action (``vocab.StepSource``): swift, procedure, fallback, sage, critic, oracle,
    scripted."""
    reason: str = ""
    """Why that source acted (e.g. the rule that escalated to Sage; for a ``procedure`` step the rule
    that decided, ``vocab.ProcedureRule``, first)."""
    observation: str
    score: int
    reward: int
    moves: int
    """ScienceWorld's own move counter (does not advance on every action)."""
    end: EndState
    n_valid: int
    """Size of the valid-action set after the step."""
    duration_ms: float
    """Time spent inside the environment adapter for this step."""


class ModelCall(_Event):
    """One call to a language model (Sage, Critic, benchmark), successful or not."""

    event: Literal["model_call"] = "model_call"
    step: int
    """Env step at which the call was made (0 before the first step)."""
    role: ModelRole
    """Why the model was called: sage_plan, sage_ground, critic, bench, bench_warmup, bench_prompt,
    bench_gen."""
    backend: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    """Number of attempts, retries included."""
    error: str | None = None
    """Typed error name and message when the call failed after all retries."""
    messages: list[dict[str, str]] | None = None
    completion: str | None = None
    skipped: str | None = None
    """Why the call was not sent (its role's circuit breaker is open after failed calls in a row: no
    attempt, no error, no tokens); None for a call that was sent."""
    constraint: str | None = None
    """The kind of constraint the call passed (``models.constraint``: choice, regex, grammar); None for an
    unconstrained call (and in logs written before constraints existed)."""
    cached: bool = False
    """The answer came from the run's response cache (``models.cache``): the same request was answered
    before at temperature 0, and this one was not sent. The text and the token counts are the stored
    answer's; ``latency_s`` is the look-up's and ``attempts`` is 0. Metrics count such calls apart
    (``usage.model_cache_hits``), never as model work. False in logs written before the cache existed."""


class EpisodeEnd(_Event):
    """Episode footer; its presence marks the episode as finished."""

    event: Literal["episode_end"] = "episode_end"
    end: EndState
    final_score: int
    """Score at termination as ScienceWorld reports it (-100 on task failure)."""
    steps: int
    moves: int
    wall_s: float
    error: str | None = None


class TrialEnd(_Event):
    """A trial of an agent that plays several trials of one episode ended (Reflexion, Shinn et al. 2023:
    ``agents.base.Trials``, ``fastslow.plugins.reflexion``). The runner writes one after every trial of
    such an agent, the last included; a ``next`` one starts from a fresh reset of the same task and
    variation, its ``env_step`` events numbered on from ``step`` (one episode, one log, steps 1..n), and
    the episode's ``episode_end`` is the last trial's outcome."""

    event: Literal["trial_end"] = "trial_end"
    step: int
    """Env steps of the episode (every trial so far) when this trial ended."""
    trial: int
    """The trial that ended, from 1."""
    end: EndState
    """How it ended (completed, failed, step_limit, early_stop)."""
    score: int
    """Its score at the end."""
    steps: int
    """Env steps this trial took."""
    next: bool
    """Another trial follows (the agent asked for one: the task was not completed and trials are left)."""


class MemoryWrite(_Event):
    """AMM stored a record: the salience gate found the transition informative (paper §3.1, App. D)."""

    event: Literal["memory_write"] = "memory_write"
    step: int
    """Env step whose transition was stored."""
    record_id: str
    tag: MemoryTag
    """success, near-miss or avoidance."""
    subtag: str
    """Why: terminal, milestone, focus, progress, invalid-action, task-failure, score-loss."""


class MemoryRetrieval(_Event):
    """AMM searched its store because a trigger fired (paper §3.1, App. D)."""

    event: Literal["memory_retrieval"] = "memory_retrieval"
    step: int
    """Env steps taken when the trigger fired."""
    trigger: MemoryTrigger
    rung: str = ""
    """T1 ladder rung (success, success+near-miss); empty for other triggers."""
    n: int
    """Number of records returned."""
    ids: list[str]
    """Record ids, best first."""
    latency_ms: float = 0.0
    writers: list[str] | None = None
    """Provenance (``amm.provenance``, on in ``fastslow eval --stream``): the episode that wrote each
    record of ``ids``, in the same order, named relative to the run: ``13-0027`` (an evaluation episode
    of this run), ``warmup/13-0001`` (this run's warm-up), or the record's full ``<run_id>/...`` key
    when another run wrote it (a store shared on purpose). None: not recorded (every log before it)."""


class MemoryInjection(_Event):
    """A memory block went into a model's input (paper §3.1, App. D)."""

    event: Literal["memory_injection"] = "memory_injection"
    step: int
    trigger: MemoryTrigger
    target: MemoryTarget
    n: int
    """Records in the block after dedup, filtering and truncation."""
    chars: int
    """Length of the injected block."""
    text: str = ""
    """The block as the model got it (logs before this field: empty)."""


class MemoryPrior(_Event):
    """AMM's action prior (paper §3.1, AMM on the fast pathway; ``memory.prior``) changed the
    top of Swift's proposal: the action it put first, and the earlier episodes whose records voted for
    it. Logged only with ``amm.retrieval.prior`` on, and only at a step whose top it changed (a re-rank
    that leaves the top alone changes no action), so logs of every configuration without the prior are
    as before. ``fastslow attribute --mechanism memory-prior`` forks at these events."""

    event: Literal["memory_prior"] = "memory_prior"
    step: int
    """Env steps taken when Swift proposed (the action chosen becomes env step ``step + 1``)."""
    proposed: str
    """The top of the proposal the prior re-ranked: Swift's own (or, when T1 rescued the step, the T1
    retry's), which the step would have taken first without the prior."""
    action: str
    """The action the prior put first."""
    vote: int
    """``action``'s vote: earlier episodes rewarded for it minus those that lost score with it."""
    proposed_vote: int
    """``proposed``'s vote (negative when the prior demoted it; an action this episode lost score with,
    or a rival of an endorsed one, loses ``penalty`` with a vote of 0)."""
    endorsed_by: list[str]
    """Provenance: the episodes whose records endorsed ``action`` then disputed it (named as
    ``MemoryRetrieval.writers`` names them: ``13-0027``, ``warmup/13-0001``, another run's full key)."""
    disputed_by: list[str]
    """The episodes whose records disputed ``proposed`` (same naming)."""
    rivals: list[str] = []
    """When ``proposed`` had no vote but lost ``penalty`` as a rival: the endorsed actions (comparison
    form) with its verb and first object that made it one ("put cup in trash can" for "put cup in
    sink")."""
    records: list[str]
    """Ids of the records behind those votes: ``action``'s, ``proposed``'s, then the rivals'. Empty
    only when the prior acted on this episode's own steps alone (``proposed`` lost score earlier in
    it)."""


class MemoryFallback(_Event):
    """AMM gave up on a write or an injection and the baseline input was used unchanged (paper §3.1)."""

    event: Literal["memory_fallback"] = "memory_fallback"
    step: int
    trigger: FallbackTrigger
    """T1-T4, or ``write`` for the write hook."""
    target: FallbackTarget | Literal[""] = ""
    """swift, sage, critic; ``store`` for a failed write, ``cache`` for a failed T2/T3 retrieval."""
    reason: str
    """no_records, over_budget, format_error, structure_check, store_error, ... (with detail). A search
    that skipped stored rows that are not records is a ``store_error`` too, though the records it did
    read may still be injected."""


class SwiftProposal(_Event):
    """Swift ranked actions for a timestep the buffer did not cover (paper §3, SwiftSage System 1)."""

    event: Literal["swift_proposal"] = "swift_proposal"
    step: int
    """Env steps taken when Swift was asked (the action it chooses becomes env step ``step + 1``)."""
    proposer: str
    """Swift model name (imitation, t5, scripted, ...)."""
    candidates: list[str]
    """Top candidates as proposed, best first."""
    scores: list[float]
    """Model scores of ``candidates``."""
    confidence: float
    """Swift's confidence in its top candidate, 0-1."""
    chosen: str | None
    """The valid action Swift's proposal grounded to; None when no candidate was valid."""


class Escalation(_Event):
    """An arbitration rule sent the timestep to Sage (paper §3, SwiftSage arbitration)."""

    event: Literal["escalation"] = "escalation"
    step: int
    rule: EscalationRule
    """invalid_action, failure_messages, focus_before_sage, no_progress."""
    detail: str = ""
    """Human-readable evidence for the rule."""
    blocked: EscalationBlock | None = None
    """Why Sage was nevertheless not called (cooldown, consecutive_sage); None when it was."""


class SageCall(_Event):
    """Summary of one Sage plan+ground round; its ModelCall events carry the same ``step``."""

    event: Literal["sage_call"] = "sage_call"
    step: int
    rule: EscalationRule
    """The escalation rule that called Sage."""
    model_calls: int
    """LLM calls made (planning, grounding, grounding retries)."""
    parsed: list[str]
    """Actions parsed from the last grounding reply, as written."""
    actions: list[str]
    """Parsed actions grounded to valid actions (what went to the buffer, before the size cap)."""
    retried: bool = False
    """True when the first grounding reply yielded no usable action and was retried."""
    error: str | None = None
    """Model error that ended the round; the controller fell back to Swift's action."""
    latency_s: float = 0.0
    """Wall time of the LLM calls of this round."""


class BufferPush(_Event):
    """Actions entered the FIFO action buffer."""

    event: Literal["buffer_push"] = "buffer_push"
    step: int
    source: str
    """sage or critic."""
    actions: list[str]
    dropped: list[str] = []
    """Actions beyond the buffer size, not buffered."""


class BufferPop(_Event):
    """The controller took the next buffered action (``skipped`` lists invalid ones passed over)."""

    event: Literal["buffer_pop"] = "buffer_pop"
    step: int
    action: str | None
    """The action executed; None when every remaining buffered action was skipped."""
    skipped: list[str] = []
    """Buffered actions dropped because no valid action matched them now."""
    deferred: list[str] = []
    """Focus actions on a target not seen yet, moved after the buffer's next teleport (the authors' loop
    with SRM, ``buffer.defer_unseen_focus``)."""
    remaining: int
    """Actions left in the buffer."""


class BufferClear(_Event):
    """The buffer was emptied early: its actions kept failing."""

    event: Literal["buffer_clear"] = "buffer_clear"
    step: int
    reason: str
    dropped: list[str]


class GateOutcome(StrEnum):
    """What SRM Gate-1 did with a proposed action (paper §3.2)."""

    ACCEPT = "accept"  # in the valid set as proposed
    REPAIR = "repair"  # rewritten deterministically into a valid action
    DROP = "drop"  # refused: it never reaches the environment and costs no env step


class GateDecision(_Event):
    """SRM Gate-1 checked one proposed action right before env.step (paper §3.2)."""

    event: Literal["gate_decision"] = "gate_decision"
    step: int
    """Env steps taken so far (the action, if let through, becomes step ``step + 1``)."""
    source: str
    """Who proposed the action: swift, sage, critic, ..."""
    outcome: GateOutcome
    original: str
    """The action as proposed."""
    action: str
    """The action let through (the repaired one for REPAIR); empty for DROP."""
    rule: str = ""
    """ACCEPT: ``exact``; REPAIR: the repair rule (normalize, alias, teleport, qualifier, fuzzy)."""
    reason: str = ""
    """DROP: the reason code (empty, not_admissible, ambiguous, focus_limit, repeated_focus,
    focus_not_allowed, avoided)."""
    detail: str = ""
    """Human-readable evidence (e.g. the close matches that made a repair ambiguous)."""

    @property
    def accepted(self) -> bool:
        return self.outcome is not GateOutcome.DROP


class StagnationReport(_Event):
    """The SRM stagnation detector saw the agent stop making progress (paper §3.2)."""

    event: Literal["stagnation_report"] = "stagnation_report"
    step: int
    """Env steps taken when the threshold was crossed."""
    pattern: StagnationPattern
    """The main pattern: invalid_loop, repeated_action, repeated_observation, verb_loop, navigation_loop."""
    patterns: list[StagnationPattern] = []
    """Every pattern that crossed its threshold at this step, main one first."""
    evidence_steps: list[int] = []
    """Env steps whose turns show the pattern."""
    avoid: list[str] = []
    """Actions that should not be proposed again (the loop's actions)."""
    constraints: list[str] = []
    """Runtime constraints in words (focus budget, rooms seen, ...), for the Critic's prompt."""


class CriticCall(_Event):
    """The SRM Critic was called on a stagnation report (paper §3.2); its actions go to the buffer."""

    event: Literal["critic_call"] = "critic_call"
    step: int
    kind: CriticKind
    """llm or rules."""
    pattern: StagnationPattern
    """Pattern of the stagnation report that triggered the call."""
    diagnosis: str = ""
    proposed: list[str] = []
    """Actions parsed from the Critic's answer, before filtering."""
    actions: list[str] = []
    """Actions kept (exact valid-action strings, at most the configured number; fastslow's profile also
    drops the report's avoid list, ``critic.prompt_actions: all`` keeps those of the prompt's list)."""
    budget_left: int
    """Calls left in this episode after this one (``critic.charge: injected``: injected calls only)."""
    error: str | None = None
    """Why the call produced no actions (model error, nothing parsed), if it did not."""
    injected: bool = True
    """The actions went into the buffer (with ``critic.charge: injected`` only such calls count against
    the budget and start the cooldown)."""
    skipped: str | None = None
    """Why the answer was not injected: empty_output, low_quality_output (only recent actions or only
    navigation), same_state_same_actions (starts the back-off); None when injected or nothing to skip."""
    deferred: bool = False
    """The call answered a report that waited for the buffer to run dry (``critic.timing:
    empty_buffer``)."""


class CriticEffect(_Event):
    """Whether a Critic call led to progress (a score increase) within its effect window (paper §3.2)."""

    event: Literal["critic_effect"] = "critic_effect"
    step: int
    """Env steps taken when the effect was decided."""
    call_step: int
    """Step of the CriticCall this judges."""
    effective: bool
    score_before: int
    score_after: int
    reason: CriticEffectReason
    """score_increase, no_progress_in_window, no_actions, episode_end."""


Event = Annotated[
    EpisodeStart
    | EnvStep
    | ModelCall
    | EpisodeEnd
    | TrialEnd
    | MemoryWrite
    | MemoryRetrieval
    | MemoryInjection
    | MemoryPrior
    | MemoryFallback
    | SwiftProposal
    | Escalation
    | SageCall
    | BufferPush
    | BufferPop
    | BufferClear
    | GateDecision
    | StagnationReport
    | CriticCall
    | CriticEffect
    | ReplayEnd,
    Field(discriminator="event"),
]
_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class EventSink(Protocol):
    """Anything that accepts events: a JSONL file, a list in a test, a live view."""

    def emit(self, event: Event) -> None: ...


class ListSink:
    """Keeps events in memory (tests, live views)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


class FanOut:
    """Sends each event to several sinks (e.g. the JSONL file and the live view)."""

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = sinks

    def emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink.emit(event)


class JsonlWriter:
    """Appends one JSON line per event and flushes it, so a killed run loses at most one line. Every
    line is written with its secrets masked (``fastslow.redact.redact_json``): a model error that quotes
    ``http://u:PW@host/v1`` is logged as ``http://u:***@host/v1``, in whatever field it lands."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        record_writing(path)  # in a claimed run directory, the log is the run's own from its first line
        self._fh: IO[str] | None = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def emit(self, event: Event) -> None:
        if self._fh is None:
            raise ValueError(f"event log {self.path} is closed")
        self._fh.write(redact_json(event.model_dump_json()) + "\n")
        self._fh.flush()
        if isinstance(event, EpisodeEnd):
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            record_written(self.path)

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_event(line: str) -> Event:
    return _EVENT_ADAPTER.validate_json(line)


def log_episode_id(path: Path) -> str:
    """The episode a log's file name says it holds: the name up to its first dot (episode ids have
    none), so ``13-0027-s1.jsonl`` and its set-aside copy ``13-0027-s1.attempt1.jsonl`` both hold
    ``13-0027-s1``."""
    return path.name.split(".", 1)[0]


def iter_events(path: Path) -> Iterator[Event]:
    """Yield the events of one episode's log. The writer ends every line with a newline, so only a last
    line without one can be torn (a run killed mid-write, a file cut short): it is yielded when it is
    still a whole event and skipped otherwise.

    ``CorruptLogError``, naming the file and the line, for any other line that is not a valid event (or
    not UTF-8), and for a file that is not one episode (``check_episode``): a first event that is not
    ``episode_start``, an ``episode_start`` of another episode than the file's name says
    (``log_episode_id``), or a second ``episode_start`` (two logs concatenated). Every reader of the
    logs (metrics, resume, report, viewer, fork, attribute) reads through here, so each treats such a
    file as it treats a corrupt line. An empty file (a run killed before its header) yields nothing."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    try:
        lines = data[:end].decode("utf-8").split("\n")[:-1]
    except UnicodeDecodeError as exc:
        raise CorruptLogError(f"event log {path} is not UTF-8 text ({exc.reason})") from exc
    first = True
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            event = parse_event(line)
        except ValueError as exc:
            why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise CorruptLogError(f"event log {path} line {i + 1} is not a valid event: {why}") from None
        check_episode(path, i + 1, event, first)
        first = False
        yield event
    tail = data[end:]
    if tail.strip():
        try:
            event = parse_event(tail.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return  # torn mid-line (a cut may split a character too)
        check_episode(path, len(lines) + 1, event, first)
        yield event


def check_episode(path: Path, line: int, event: Event, first: bool) -> None:
    """``CorruptLogError`` when ``event``, at ``line`` of the log at ``path`` (``first``: its first
    event), breaks the one-episode shape: a log begins with the ``episode_start`` of the episode it is
    named for and holds no other. Without this, two logs run together would be read as the last one's
    episode (its header and end win), counted twice and their own episode lost."""
    if first and not isinstance(event, EpisodeStart):
        raise CorruptLogError(
            f"event log {path} line {line} is {event.event}, not the episode_start a log begins with"
        )
    if not isinstance(event, EpisodeStart):
        return
    if not first:
        raise CorruptLogError(
            f"event log {path} line {line} is a second episode_start, of {event.episode_id}: "
            "a log holds one episode"
        )
    named = log_episode_id(path)
    if event.episode_id != named:
        raise CorruptLogError(
            f"event log {path} line {line} starts episode {event.episode_id}, "
            f"but the file is named for {named}"
        )


def read_events(path: Path) -> list[Event]:
    return list(iter_events(path))


def dump_events(events: Iterable[Event]) -> str:
    return "".join(json.dumps(e.model_dump(mode="json")) + "\n" for e in events)
