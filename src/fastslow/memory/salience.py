"""AMM write hook and salience gate (paper §3.1, "post-step write hook").

After every env step the controller hands the writer the trajectory, the state before the step, the
action and the state after it. The gate keeps only informative transitions:

- success: terminal success (score 100), a milestone gain (>= ``milestone_reward``), a rewarded focus;
- near-miss: partial progress (``small_reward`` <= gain < milestone) - the bulk of the paper's writes;
- avoidance: explicit invalid-action feedback, a task-ending failure (-100), a score loss.

Invalid-action feedback is the world's reply to an action it does not know (``Feedback.invalid`` of the
episode's ``WorldSemantics``; ScienceWorld's no-match reply), whatever the run's failure markers: an
ambiguity prompt or a refusal ("The table is not openable.") says nothing about the action in another
state, so neither is stored. Scores, rooms and the focus-like commitment are the world's too.

Shaping actions (wait, wait1, wait2) are never stored. A store error is logged as a ``MemoryFallback``
and swallowed: memory is informational and must never end an episode.

``tagging: authors`` (the paper configurations) is the authors' gate instead (``classify_authors``): their
``amm/tagging.py`` fed as their loop feeds it - the gain over the best score so far, the episode's end
flag, their reply phrases for a refused action - and their record shape (``build_record``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fastslow.core.semantics import AVOIDANCE_FEEDBACK, WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.world import get_world
from fastslow.events import EndState, EventSink, MemoryFallback, MemoryWrite
from fastslow.memory.config import SalienceConfig
from fastslow.memory.records import MemoryRecord, Tag, inventory_summary, one_line
from fastslow.memory.stores.base import MemoryStore, MemoryStoreError

STORE_ERROR = "store_error: "
"""Prefix of every ``MemoryFallback`` reason caused by the store, followed by the store's own message."""


@dataclass(frozen=True)
class Salience:
    tag: Tag
    subtag: str


def shaping_actions(semantics: WorldSemantics, cfg: SalienceConfig) -> Sequence[str]:
    """``amm.write.shaping_actions``, or the world's idle actions when it names none."""
    return cfg.shaping_actions if cfg.shaping_actions is not None else semantics.idle_actions


def is_invalid_feedback(semantics: WorldSemantics, observation: str) -> bool:
    """The world did not know the action: an avoidance record, and no step of a record's context."""
    return semantics.classify_feedback(observation) in AVOIDANCE_FEEDBACK


def classify(
    semantics: WorldSemantics, action: str, prev: StepResult, result: StepResult, cfg: SalienceConfig
) -> Salience | None:
    """The salience gate: the record type of an informative transition, None for an uninformative one."""
    act = action.strip().lower()
    success, failure = semantics.success_score, semantics.failure_score
    commit = semantics.commitment_verb
    focus = commit is not None and act.startswith(commit)
    if act in {a.lower() for a in shaping_actions(semantics, cfg)}:
        return None
    gain = result.score - prev.score
    # Only the step that reaches the end state is terminal; steps played after it (the env keeps
    # reporting the end state) are not evidence of anything.
    if result.score >= success > prev.score:
        return Salience("success", "terminal")
    failed = result.end is EndState.FAILURE or result.score <= failure
    if failed and prev.end is not EndState.FAILURE and prev.score > failure:
        return Salience("avoidance", "task-failure") if cfg.store_failure else None
    if gain >= cfg.milestone_reward:
        return Salience("success", "focus" if focus else "milestone")
    if gain > 0 and focus:
        # Focusing on the right object is a subgoal of its own in ScienceWorld, however small its reward.
        return Salience("success", "focus")
    if gain >= cfg.small_reward:
        return Salience("near-miss", "progress")
    if gain < 0:
        return Salience("avoidance", "score-loss")
    if cfg.store_invalid and is_invalid_feedback(semantics, result.observation):
        return Salience("avoidance", "invalid-action")
    return None


AUTHORS_REFUSALS = (
    "no known action matches that input",
    "you can't do that",
    "that doesn't exist",
    "invalid action",
    "not possible",
    "unknown action",
)
"""Observation phrases the authors' gate takes for a refused action (substrings, lower case)."""
AUTHORS_SUBTAGS = (
    "terminal_task_completion",
    "milestone",
    "subgoal_focus",
    "partial",
    "delayed_reward",
    "invalid_action",
    "terminal_incorrect",
)
"""The subtags the authors' gate writes (their taxonomy in ``amm/tagging.py``)."""


def best_score_before(traj: Trajectory, step: int) -> int:
    """The best non-negative score reached before env step ``step``: the authors' ``last_score``.

    Their loop never lets the score it tracks fall (a -100 or a loss keeps the last best), and the
    reward it hands the gate is the rise above that best, never a drop.
    """
    return max((t.score for t in traj.turns if t.step < step and t.score >= 0), default=0)


def classify_authors(
    semantics: WorldSemantics, action: str, result: StepResult, best_before: int, cfg: SalienceConfig
) -> Salience | None:
    """The authors' gate on one transition, in their order of precedence.

    Eventful steps only (the episode ended, the score rose above its best, or the reply refuses the
    action); then: the end (100 is a success, any other end - a -100 failure, the step limit - an
    avoidance), a refusal phrase, a rewarded focus, a milestone gain, a rewarded wait, any other gain.
    """
    act = action.strip().lower()
    obs = result.observation.strip().lower()
    # Their "true" score: the best so far unless this step beat it (a -100 keeps the best).
    score = result.score if result.score > best_before else best_before
    gain = score - best_before
    refused = any(phrase in obs for phrase in AUTHORS_REFUSALS)
    if result.done:
        if score == semantics.success_score:
            return Salience("success", "terminal_task_completion")
        return Salience("avoidance", "terminal_incorrect") if cfg.store_failure else None
    if refused:
        return Salience("avoidance", "invalid_action") if cfg.store_invalid else None
    if gain <= 0:
        return None
    commit = semantics.commitment_verb
    if commit is not None and (act.startswith(commit.split()[0]) or f"you {commit}" in obs):
        return Salience("success", "subgoal_focus")
    if gain >= cfg.milestone_reward:
        return Salience("success", "milestone")
    shaping = [a.lower() for a in shaping_actions(semantics, cfg)]
    waited = semantics.authors.wait_replies if semantics.authors is not None else ()
    if any(act.startswith(a) for a in shaping) or any(p in obs for p in waited):
        return Salience("near-miss", "delayed_reward")
    return Salience("near-miss", "partial")


def build_record(
    traj: Trajectory,
    action: str,
    prev: StepResult,
    result: StepResult,
    salience: Salience,
    episode_id: str,
    cfg: SalienceConfig,
    world: str = "scienceworld",
) -> MemoryRecord:
    """A compact record of the transition; recent context excludes the step being recorded. ``world``:
    the run's (``env.world``), whose task table gives the record's ``task_family``."""
    family = get_world(world).family(traj.task_id)
    return TAGGINGS[cfg.tagging].record(traj, action, prev, result, salience, episode_id, cfg, family)


def _fastslow_record(
    traj: Trajectory,
    action: str,
    prev: StepResult,
    result: StepResult,
    salience: Salience,
    episode_id: str,
    cfg: SalienceConfig,
    family: str,
) -> MemoryRecord:
    """This project's record: state before the step, the observation clipped, the last valid turns."""
    # Invalid no-op steps changed nothing: they are not part of the path that led here.
    earlier = [
        t
        for t in traj.turns
        if t.step < result.steps and not is_invalid_feedback(traj.semantics, t.observation)
    ]
    # One line per turn: raw observations carry newlines and tabs, and a recent line is shown as one
    # "earlier:" line of a prompt block, where a line break would start a line of its own.
    recent = tuple(
        f"{one_line(t.action)} -> {one_line(t.observation)[:80]}"
        for t in earlier[-cfg.recent_turns :]
        if cfg.recent_turns
    )
    return MemoryRecord(
        task_id=traj.task_id,
        task_name=traj.task_name,
        task_family=family,
        episode_id=episode_id,
        step=result.steps,
        room=traj.semantics.location(prev.look) or traj.room,
        inventory=inventory_summary(prev.inventory),
        recent=recent,
        action=action.strip(),
        observation=result.observation.strip()[: cfg.observation_chars],
        score_before=prev.score,
        score_after=result.score,
        tag=salience.tag,
        subtag=salience.subtag,
    )


AUTHORS_RECENT = 4
"""Turns before the step in an authors'-gate record: with the step itself, their 5 recent actions."""
AUTHORS_RECENT_CHARS = 100
"""Each recent observation is cut to this length (their ``recent_obs``)."""


def _authors_record(
    traj: Trajectory, action: str, result: StepResult, salience: Salience, episode_id: str, family: str
) -> MemoryRecord:
    """The authors' record: state after the step, the whole observation, the best score before it and
    the score it reached (their ``REWARD`` line), the last turns as they were (refusals included)."""
    best = best_score_before(traj, result.steps)
    earlier = [t for t in traj.turns if t.step < result.steps][-AUTHORS_RECENT:]
    return MemoryRecord(
        task_id=traj.task_id,
        task_name=traj.task_name,
        task_family=family,
        episode_id=episode_id,
        step=result.steps,
        room=traj.semantics.location(result.look) or traj.room,
        inventory=inventory_summary(result.inventory),
        recent=tuple(
            f"{one_line(t.action)} -> {one_line(t.observation)[:AUTHORS_RECENT_CHARS]}" for t in earlier
        ),
        action=action.strip(),
        observation=result.observation.strip(),
        score_before=best,
        score_after=max(best, result.score),
        tag=salience.tag,
        subtag=salience.subtag,
        task_description=result.task_description or traj.task_description,
        look=result.look.strip(),
    )


class Tagging(Protocol):
    """A salience gate with its record shape (``amm.salience.tagging``; paper §3.1, the write hook)."""

    def judge(
        self, traj: Trajectory, action: str, prev: StepResult, result: StepResult, cfg: SalienceConfig
    ) -> Salience | None:
        """The record type of the transition ``prev`` -> ``result`` by ``action``; None: not stored."""
        ...

    def record(
        self,
        traj: Trajectory,
        action: str,
        prev: StepResult,
        result: StepResult,
        salience: Salience,
        episode_id: str,
        cfg: SalienceConfig,
        family: str,
    ) -> MemoryRecord:
        """The record of a transition the gate kept (``family``: the task's, from the world)."""
        ...


class FastslowTagging:
    """This project's gate (``classify``) and record (``tagging: fastslow``)."""

    def judge(
        self, traj: Trajectory, action: str, prev: StepResult, result: StepResult, cfg: SalienceConfig
    ) -> Salience | None:
        return classify(traj.semantics, action, prev, result, cfg)

    record = staticmethod(_fastslow_record)


class AuthorsTagging:
    """The authors' gate (``classify_authors``) and record shape (``tagging: authors``)."""

    def judge(
        self, traj: Trajectory, action: str, prev: StepResult, result: StepResult, cfg: SalienceConfig
    ) -> Salience | None:
        if prev.done:  # the authors' loop stops at the end: nothing after it is a transition
            return None
        return classify_authors(traj.semantics, action, result, best_score_before(traj, result.steps), cfg)

    def record(
        self,
        traj: Trajectory,
        action: str,
        prev: StepResult,
        result: StepResult,
        salience: Salience,
        episode_id: str,
        cfg: SalienceConfig,
        family: str,
    ) -> MemoryRecord:
        return _authors_record(traj, action, result, salience, episode_id, family)


TAGGINGS: dict[str, Tagging] = {"fastslow": FastslowTagging(), "authors": AuthorsTagging()}
"""The salience gates by ``amm.salience.tagging``."""


class MemoryWriter:
    """The write hook of one episode. ``writable=False`` is the frozen mode after warm-up; ``world``: the
    run's (``env.world``), whose task table gives a record's family."""

    def __init__(
        self,
        store: MemoryStore,
        cfg: SalienceConfig,
        sink: EventSink,
        episode_id: str,
        writable: bool = True,
        world: str = "scienceworld",
    ) -> None:
        self.store = store
        self.cfg = cfg
        self.sink = sink
        self.episode_id = episode_id
        self.writable = writable
        self.world = world
        self.tagging = TAGGINGS[cfg.tagging]
        """The salience gate and record shape (``amm.salience.tagging``), chosen here once."""
        self._seen: set[tuple[str, str, str]] = set()

    def after_step(
        self, traj: Trajectory, action: str, prev: StepResult, result: StepResult
    ) -> MemoryRecord | None:
        """Store the transition if it is salient; returns the stored record (None if nothing was stored)."""
        if not self.writable:
            return None
        salience = self.tagging.judge(traj, action, prev, result, self.cfg)
        if salience is None:
            return None
        key = (salience.tag, salience.subtag, action.strip().lower())
        if self.cfg.dedup_per_episode and key in self._seen:
            return None
        record = build_record(traj, action, prev, result, salience, self.episode_id, self.cfg, self.world)
        try:
            self.store.add(record)
        except MemoryStoreError as exc:
            # Same reason code as the read paths (episode.py): metrics count "store_error:" fallbacks.
            self.sink.emit(
                MemoryFallback(
                    step=result.steps, trigger="write", target="store", reason=f"{STORE_ERROR}{exc}"
                )
            )
            return None
        self._seen.add(key)
        self.sink.emit(
            MemoryWrite(step=result.steps, record_id=record.id, tag=record.tag, subtag=record.subtag)
        )
        return record
