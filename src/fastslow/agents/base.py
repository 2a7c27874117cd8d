"""The agent seam of the episode loop (paper §3: the controller is one such agent).

An agent sees each StepResult, returns one Decision per timestep, and is told what the step did.
Exactly one env.step happens per Decision; anything an agent does between steps (asking Swift,
calling Sage, Gate-1 drops) happens inside ``act``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from fastslow.core.semantics import WorldSemantics
from fastslow.core.step import StepResult
from fastslow.env.tasks import TaskInfo
from fastslow.errors import FastslowError
from fastslow.events import EndState, EventSink
from fastslow.vocab import ProcedureRule, StepSource


class EarlyStop(FastslowError):
    """Raised by ``act`` when the agent gives up (e.g. SwiftSage's stop after a long run without reward)."""


@dataclass(frozen=True)
class Decision:
    action: str
    source: StepSource
    """Who chose the action (``vocab.StepSource``): swift, procedure, fallback, sage, critic, oracle, ..."""
    reason: str = ""
    """Why this source acted (e.g. the escalation rule that called Sage); shown in the live view."""
    rule: ProcedureRule | None = None
    """A ``procedure`` step's rule (also first in ``reason``); None for every other source."""


@dataclass
class EpisodeContext:
    """What an agent may know about the episode besides the observations."""

    task: TaskInfo
    variation: int
    episode_id: str
    sink: EventSink
    semantics: WorldSemantics
    """What the world's text means (``World.semantics``): the episode's ``Trajectory.semantics``."""
    gold_actions: tuple[str, ...] = field(default=())
    run_id: str = ""
    """The run this episode belongs to ("" outside a run directory)."""

    @property
    def memory_key(self) -> str:
        """The id AMM records of this episode carry: ``<run_id>/<episode_id>``, so a store shared by
        several runs (on purpose) tells whose records are whose, and a replay can remove its own."""
        return f"{self.run_id}/{self.episode_id}" if self.run_id else self.episode_id


class Agent(Protocol):
    needs_gold: bool
    """True if the agent needs ScienceWorld's gold path (costs ~0.3-10 s per reset)."""

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None: ...

    def act(self, result: StepResult) -> Decision: ...

    def observe(self, decision: Decision, result: StepResult) -> None: ...


@runtime_checkable
class Trials(Protocol):
    """An agent that may play several trials of one episode (Reflexion, Shinn et al., NeurIPS 2023:
    after a failed trial the environment is reset to the same task and variation and the agent tries
    again, carrying what it learned). Any ``Agent`` with this method is one (``runner.run_episode``).

    When a trial ends (the env says done, or ``act`` raised ``EarlyStop``), the runner asks
    ``next_trial(end, result)``: True resets the env to the same variation and calls ``reset`` again
    (the agent keeps what it carries across trials), False ends the episode with this trial's outcome.
    The runner logs a ``TrialEnd`` event after every trial; ``env_step`` events number on across trials.
    ``EpisodeContext.sink`` is the same for every trial, so calls made here are in the episode's log.
    A fork's replay (``eval.replay``) plays trials the same way and checks each end of a trial inside
    its prefix against the parent's ``TrialEnd``; ``next_trial`` is asked there as in any run."""

    def next_trial(self, end: EndState, result: StepResult) -> bool: ...
