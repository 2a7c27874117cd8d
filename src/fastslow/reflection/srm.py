"""SRM, paper §3.2: the three per-episode components built from a run configuration in one call.

The controller's ``SrmHook`` builds one ``Srm`` per episode and calls it at two points of its loop
(docs/srm.md): ``gate.check`` right before every env.step, ``after_step`` right after it.
``Srm.for_episode`` returns None when ``srm.enabled`` is off, so the baseline builds no SRM hook at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastslow.core.focus import FocusJudge
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.events import EventSink, StagnationReport
from fastslow.models import ChatModel
from fastslow.reflection.config import CriticConfig, SrmConfig
from fastslow.reflection.critic import Critic, MemoryFetch, make_critic
from fastslow.reflection.gate import Gate1, GateConstraints
from fastslow.reflection.stagnation import StagnationDetector


@dataclass
class Srm:
    gate: Gate1 | None
    """None when ``srm.gate.enabled`` is off: actions go to the environment unchecked."""
    detector: StagnationDetector | None
    critic: Critic | None
    """None when the detector or ``srm.critic.enabled`` is off (the Critic only answers reports)."""
    last_report: StagnationReport | None = None
    """The latest stagnation report; its avoid list is what ``constraints()`` hands Gate-1."""

    @classmethod
    def for_episode(
        cls,
        srm: SrmConfig,
        critic_cfg: CriticConfig,
        first: StepResult,
        *,
        sink: EventSink,
        model: ChatModel | None = None,
        markers: tuple[str, ...] | None = None,
        judge: FocusJudge | None = None,
    ) -> Srm | None:
        """SRM for one episode, or None when SRM is off. ``model`` overrides ``critic.model`` (shared
        client, scripted model in tests); it is only built for ``critic.kind: llm``. ``judge``: the
        task-specific focus rules Gate-1, the detector's constraints and the Critic's prompt apply
        (``procedures.enabled``); None: their general rules alone."""
        if not srm.enabled:
            return None
        gate = Gate1(srm.gate, sink=sink, judge=judge) if srm.gate.enabled else None
        detector = (
            StagnationDetector(srm.stagnation, sink=sink, first=first, markers=markers, judge=judge)
            if srm.stagnation.enabled
            else None
        )
        critic = (
            make_critic(critic_cfg, sink=sink, model=model, focus_budget=srm.gate.focus_budget, judge=judge)
            if detector is not None and srm.critic.enabled
            else None
        )
        return cls(gate, detector, critic)

    def constraints(self, traj: Trajectory) -> GateConstraints:
        """Gate-1 constraints at this step: with ``srm.gate.refuse_avoided``, the avoid list of a report
        still inside its window."""
        report = self.last_report
        if (
            report is None
            or self.detector is None
            or self.gate is None
            or not self.gate.config.refuse_avoided
        ):
            return GateConstraints()
        if traj.current.steps - report.step >= self.detector.config.window:
            return GateConstraints()
        return GateConstraints(avoid=frozenset(report.avoid))

    def after_step(
        self,
        traj: Trajectory,
        memories: MemoryFetch = None,
        *,
        buffer_empty: bool = True,
    ) -> list[str]:
        """Detector, then Critic: the actions for the FIFO buffer (often none). ``memories`` fetches
        AMM's evidence for the Critic; it is called only when a Critic call is actually made.
        ``buffer_empty``: the buffer holds no action after this step (``critic.timing: empty_buffer``
        makes a report wait otherwise)."""
        report = self.detector.update(traj) if self.detector is not None else None
        if report is not None:
            self.last_report = report
        if self.critic is None:
            return []
        return self.critic.maybe_call(report, traj, memories, buffer_empty=buffer_empty)

    def on_buffer_empty(self, traj: Trajectory, memories: MemoryFetch = None) -> list[str]:
        """The buffer is empty before the next decision: a report that waited for it may call the
        Critic now (``critic.timing: empty_buffer``; otherwise nothing waits)."""
        if self.critic is None:
            return []
        return self.critic.on_buffer_empty(traj, memories)

    @property
    def replaces_buffer(self) -> bool:
        """The Critic's actions replace the buffer instead of queueing (``critic.inject: replace``)."""
        return self.critic is not None and self.critic.config.inject == "replace"

    def finish(self, traj: Trajectory) -> None:
        """Episode over: settle the effect of a Critic call still in its window."""
        if self.critic is not None:
            self.critic.finish(traj)
