"""SRM Gate-1, paper §3.2: the check every action passes right before env.step, whatever its source.

Order of work: resolve the proposed text to one valid action (exact, then the configured repair rules,
each deterministic and only taken when the match is unique), then check the runtime constraints on the
resolved action (avoid list, focus budget, repeated focus, places, contents, and the task-specific focus
rules of the ``core.focus.FocusJudge`` it is given, if any: ScienceWorld's task logic). An action that
fails either step is dropped with a reason code; a dropped action never reaches the environment, so it
costs no env step, and the controller moves on to its next candidate.

The authors' profile (configs/srm.yaml; docs/fidelity.md rows R9-R12) counts the focus budget as their
loop does (``focus_budget: authors``: every executed focus against their per-task count, checked first),
and marks a drop of Swift's action as a failure message for their loop (``drop_as_failure``, applied by
the controller's SRM hook).

The focus constraints act on the world's commitment only (``WorldSemantics.commitment_verb``) and read
it through the world's ``CommitmentRules`` (``traj.semantics.commitment``): in a world without one
(TextWorldExpress) they never apply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz, process

from fastslow.core.focus import FocusJudge, FocusView
from fastslow.core.semantics import CommitmentRules, WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.events import EventSink, GateDecision, GateOutcome
from fastslow.reflection.config import GateConfig
from fastslow.reflection.focus import (
    FOCUS_BUDGETS,
    confirmed_foci,
    focus_limit_for,
    focus_usage,
)


@dataclass(frozen=True)
class GateConstraints:
    """Runtime constraints the controller passes with each check (besides the valid-action set)."""

    focus_limit: int | None = None
    """Overrides the configured / per-task focus budget for this episode."""
    avoid: frozenset[str] = field(default_factory=frozenset)
    """Exact actions to refuse (e.g. the avoid list of a live stagnation report)."""


class _Drop(Exception):
    """Ends a check with DROP: a reason code and the evidence for it."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


@dataclass
class _ValidIndex:
    """Canonical forms of one valid-action set; rebuilt only when the set changes."""

    actions: tuple[str, ...]
    by_norm: dict[str, list[str]]
    by_bare: dict[str, list[str]]
    """Keyed by the normalized form without container/location qualifiers."""
    by_verb: dict[str, list[str]]
    """Normalized forms grouped by verb, for fuzzy matching within one verb."""

    @classmethod
    def build(cls, actions: tuple[str, ...], semantics: WorldSemantics) -> _ValidIndex:
        by_norm: dict[str, list[str]] = {}
        by_bare: dict[str, list[str]] = {}
        for action in actions:
            norm = semantics.normalize(action)
            by_norm.setdefault(norm, []).append(action)
            by_bare.setdefault(semantics.strip_qualifiers(norm), []).append(action)
        by_verb: dict[str, list[str]] = {}
        for norm in by_norm:
            by_verb.setdefault(semantics.verb_of(norm), []).append(norm)
        return cls(actions=actions, by_norm=by_norm, by_bare=by_bare, by_verb=by_verb)


def _unique(rule: str, options: list[str] | None) -> str | None:
    """The one valid action a rule found; several would make the repair a guess: DROP ambiguous."""
    if not options:
        return None
    distinct = sorted(set(options))
    if len(distinct) > 1:
        raise _Drop("ambiguous", f"{rule}: {' | '.join(distinct[:5])}")
    return distinct[0]


class Gate1:
    """Normalize -> admissible? -> repair -> constraints -> ACCEPT / REPAIR / DROP, one event per check."""

    def __init__(
        self,
        config: GateConfig | None = None,
        *,
        sink: EventSink | None = None,
        judge: FocusJudge | None = None,
    ) -> None:
        self.config = config or GateConfig()
        self.sink = sink
        self.judge = judge
        """The task-specific focus rules (``procedures.enabled``); None: the general rules alone."""
        self._index: _ValidIndex | None = None
        self._traj: Trajectory | None = None
        self._sent: dict[tuple[int, str], tuple[str, str]] = {}
        """The look and inventory each focus action was checked in, by (turn index it would become,
        action): what the object it landed on held then (``landed_foci``)."""

    def _valid_index(self, result: StepResult, semantics: WorldSemantics) -> _ValidIndex:
        if self._index is None or self._index.actions is not result.valid_actions:
            self._index = _ValidIndex.build(result.valid_actions, semantics)
        return self._index

    def check(
        self,
        action: str,
        result: StepResult,
        traj: Trajectory,
        constraints: GateConstraints | None = None,
        *,
        source: str = "swift",
    ) -> GateDecision:
        """Decide whether ``action`` may be executed in the state ``result``; log and return the decision."""
        constraints = constraints or GateConstraints()
        try:
            final, rule = self._resolve(action, result, traj.semantics)
            self._enforce(final, traj, constraints)
        except _Drop as drop:
            return self._decide(result, source, action, "", drop.reason, drop.detail)
        return self._decide(result, source, action, final, rule)

    def check_answer(
        self,
        answer: str,
        completes: str,
        result: StepResult,
        traj: Trajectory,
        constraints: GateConstraints | None = None,
        *,
        source: str = "swift",
    ) -> GateDecision:
        """An option number answering ScienceWorld's "Ambiguous request", judged as the action it
        completes: answering ``0`` to an ambiguous ``focus on paint`` is a focus on the paint listed as 0,
        so the runtime constraints (focus rules, avoid list) apply to ``completes``. No repair: the
        number is one ScienceWorld offered, or it is dropped."""
        constraints = constraints or GateConstraints()
        try:
            if answer not in result.valid_actions:
                raise _Drop("not_admissible", f"'{answer}' is not one of the offered options")
            self._enforce(completes, traj, constraints)
        except _Drop as drop:
            return self._decide(
                result, source, answer, "", drop.reason, f"answers '{completes}': {drop.detail}"
            )
        return self._decide(result, source, answer, answer, "answer", detail=f"answers '{completes}'")

    def _decide(
        self,
        result: StepResult,
        source: str,
        original: str,
        action: str,
        rule_or_reason: str,
        detail: str = "",
    ) -> GateDecision:
        """Log and return one decision: DROP when ``action`` is empty (``rule_or_reason`` is the reason
        code), else ACCEPT (unchanged text) or REPAIR (``rule_or_reason`` is the repair rule)."""
        if not action:
            outcome, rule, reason = GateOutcome.DROP, "", rule_or_reason
        else:
            outcome = GateOutcome.ACCEPT if action == original else GateOutcome.REPAIR
            rule, reason = rule_or_reason, ""
        decision = GateDecision(
            step=result.steps,
            source=source,
            outcome=outcome,
            original=original,
            action=action,
            rule=rule,
            reason=reason,
            detail=detail,
        )
        if self.sink is not None:
            self.sink.emit(decision)
        return decision

    # -- admissibility and repair ----------------------------------------------------------------
    def _resolve(self, action: str, result: StepResult, semantics: WorldSemantics) -> tuple[str, str]:
        """(valid action, rule), or raise _Drop."""
        # Most actions are valid as written; the canonical index (3-5 ms for ~1k actions) is only
        # built when a repair is needed, once per valid-action set.
        if action in result.valid_actions:
            return action, "exact"
        norm = semantics.normalize(action)
        if not norm:
            raise _Drop("empty", "nothing left after normalization")
        found = self._repair(norm, self._valid_index(result, semantics), semantics)
        if found is None:
            raise _Drop("not_admissible", f"no valid action matches '{norm}'")
        return found

    def _repair(self, norm: str, index: _ValidIndex, semantics: WorldSemantics) -> tuple[str, str] | None:
        """The repair rules in ``gate.repairs``' order, each asking the world's semantics."""
        rules = self.config.repairs
        form = norm
        if "normalize" in rules and (hit := _unique("normalize", index.by_norm.get(form))):
            return hit, "normalize"
        if "alias" in rules:
            aliased = semantics.rewrite(form)
            if aliased != form:
                form = aliased
                if hit := _unique("alias", index.by_norm.get(form)):
                    return hit, "alias"
        if "teleport" in rules and (rerouted := semantics.reroute(form)) is not None:
            if hit := _unique("teleport", index.by_norm.get(rerouted)):
                return hit, "teleport"
            if semantics.verb_of(rerouted) in index.by_verb:
                form = rerouted
        if "qualifier" in rules and (hit := self._qualifier(form, index, semantics)):
            return hit, "qualifier"
        if "fuzzy" in rules and (hit := self._fuzzy(form, index, semantics)):
            return hit, "fuzzy"
        return None

    def _qualifier(self, form: str, index: _ValidIndex, semantics: WorldSemantics) -> str | None:
        """Add or drop a container/location qualifier ("water" <-> "water in metal pot").

        Only when one side's words contain the other's: "water in cup" is never turned into
        "water in sink", which would be a different object.
        """
        options = index.by_bare.get(semantics.strip_qualifiers(form))
        if not options:
            return None
        words = set(form.split())
        compatible = []
        for option in options:
            other = set(semantics.normalize(option).split())
            if words <= other or other <= words:
                compatible.append(option)
        return _unique("qualifier", compatible)

    def _fuzzy(self, form: str, index: _ValidIndex, semantics: WorldSemantics) -> str | None:
        """A unique close match with the same verb (a typo or a slightly different object name); the
        world's commitment (a focus) only with ``gate.fuzzy_focus``."""
        verb = semantics.verb_of(form)
        if verb == semantics.commitment_verb and not self.config.fuzzy_focus:
            return None
        pool = index.by_verb.get(verb)
        if not pool:
            return None
        matches = process.extract(form, pool, scorer=fuzz.ratio, limit=2)
        if not matches or matches[0][1] < self.config.fuzzy_threshold:
            return None
        if len(matches) > 1 and matches[0][1] - matches[1][1] < self.config.fuzzy_margin:
            raise _Drop("ambiguous", f"fuzzy: {matches[0][0]} | {matches[1][0]}")
        return _unique("fuzzy", index.by_norm[matches[0][0]])

    # -- runtime constraints ---------------------------------------------------------------------
    def _enforce(self, action: str, traj: Trajectory, constraints: GateConstraints) -> None:
        """Raise _Drop if a runtime constraint forbids the resolved action."""
        if action in constraints.avoid:
            raise _Drop("avoided", "on the avoid list of the current stagnation report")
        commit, rules = traj.semantics.commitment_verb, traj.semantics.commitment
        if not self.config.focus_rules or commit is None or not action.startswith(commit + " "):
            return  # the focus rules judge the world's commitment only
        if rules is None:
            return  # (a world with a commitment verb has its rules: WorldSemantics.commitment)
        target = action[len(commit) + 1 :]
        limit = constraints.focus_limit
        if limit is None:
            limit = self.config.focus_limit
        if FOCUS_BUDGETS[self.config.focus_budget].checked_first:
            # The authors check their focus cap before anything else: every focus sent counts.
            used, limit = focus_usage(traj, self.config.focus_budget, limit)
            if used >= limit:
                raise _Drop("focus_limit", f"{used} of {limit} focus actions used")
        cur = traj.current
        done = self.landed_foci(traj)
        self._sent[len(traj.turns), action] = (cur.look, cur.inventory)
        repeat = rules.repeated(target, cur.look, cur.inventory, done)
        if repeat is not None:
            raise _Drop("repeated_focus", f"'{target}' is the {repeat}, focused on already")
        if limit is None:
            limit = focus_limit_for(traj.semantics, traj.task_name, traj.task_description, self.judge)
        if len(done) >= limit:
            raise _Drop("focus_limit", f"{len(done)} of {limit} focus actions used")
        if rules.head(target) in _places(traj, rules):
            # Rooms, the agent and the inventory are never what a task asks to focus on.
            raise _Drop("focus_not_allowed", f"'{target}' is a place, not an object")
        judge = self.judge
        if judge is not None and not judge.names_target(traj.task_name, traj.task_description, target):
            raise _Drop("focus_not_allowed", f"'{target}' is not named in the task description")
        contents = rules.unnamed_contents(target, cur.look, cur.inventory, traj.task_description)
        if contents is not None:
            raise _Drop("focus_not_allowed", f"'{target}' holds {contents}, which the task does not name")
        if judge is not None:
            view = FocusView(
                target,
                traj.task_name,
                traj.task_description,
                cur.look,
                cur.inventory,
                cur.valid_actions,
                confirmed_foci(traj),
                [(t.action, t.observation) for t in traj.turns],
            )
            why = judge.refusal(view)
            if why is not None:
                raise _Drop("focus_not_allowed", why)

    def landed_foci(self, traj: Trajectory) -> list[Any]:
        """The distinct objects the confirmed foci of ``traj`` landed on (``CommitmentRules.landed``: the
        world's records, opaque here), each with what it held when Gate-1 let its focus through (unknown
        for a focus it never saw); [] in a world without a commitment."""
        if traj is not self._traj:
            self._traj, self._sent = traj, {}
        rules = traj.semantics.commitment
        if rules is None:
            return []
        objects: list[Any] = []
        for i, turn in enumerate(traj.turns):
            target = rules.target(turn.action)
            if target is None:
                continue
            look, inventory = self._sent.get((i, turn.action), ("", ""))
            landed = rules.landed(target, turn.observation, look, inventory)
            if landed is not None and not any(rules.same(landed, o) for o in objects):
                objects.append(landed)
        return objects


def _places(traj: Trajectory, rules: CommitmentRules[Any]) -> set[str]:
    """Never a focus target: the world's places known now, and its ``non_targets`` (the agent, the
    inventory)."""
    return traj.semantics.places(traj.current.valid_actions, traj.visited_rooms) | rules.non_targets
