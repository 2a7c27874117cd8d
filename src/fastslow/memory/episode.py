"""AMM hooks the controller calls (paper §3.1): the write hook and triggers T1-T4.

- ``after_step`` (after every env step, once the step is recorded in the trajectory): salience-gated
  write, then the T3 / T2 checks, which only retrieve and cache.
- ``swift_proposed`` (Swift proposed, through the controller's ``AmmHook``): T1 when Swift failed, and
  T2 at the authors' counts of steps without progress when it did not.
- ``t1_ladder`` (T1): retry Swift with success-only memories, then with success+near-miss memories; if
  no retry gives an acceptable proposal, the controller escalates to Sage.
- ``t4`` (Sage is about to plan): a block of success and near-miss memories for the planning prompt.
- ``critic_evidence`` (full system): memories for the LLM Critic's prompt.

Two trigger profiles share this code (``amm.retrieval``, docs/fidelity.md rows M-T1 to M-T5): fastslow's
(the defaults, which the fast-pathway configurations keep) and the paper authors' final loop
(``configs/amm.yaml``): T1 climbs one rung per Swift failure in a row, also fires when a forcing rule
sends the iteration to Sage, retries Swift whatever the search found and with the scores hidden, and a
valid retry is Swift's action; T2 fires at 4 and 8 steps without progress; T4 adds avoidance memories
after failure messages; the Critic gets a search of its own.

AMM is informational: every method returns evidence or a proposal for the controller to arbitrate,
none executes anything, and every failure leaves the baseline input unchanged (``MemoryFallback``).
A search that skipped stored rows that are not records (bad JSON, missing fields) is logged the same
way (reason ``store_error: ...``, counted in metrics.json's ``store_errors``), though the records it did
read are still used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fastslow.core.proposal import MemoryHint, Proposal
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.events import EventSink, MemoryFallback, MemoryInjection, MemoryPrior, MemoryTrigger
from fastslow.memory.config import AmmConfig, SalienceConfig, T3Rule
from fastslow.memory.injection import Audience, InjectionResult, format_memory_block
from fastslow.memory.prior import ActionPrior, PriorWeights, fitted
from fastslow.memory.records import MemoryRecord, Tag
from fastslow.memory.retrieval import MemoryRetriever, dedup_key, writer_name
from fastslow.memory.salience import (
    STORE_ERROR,
    TAGGINGS,
    MemoryWriter,
    is_invalid_feedback,
)
from fastslow.memory.stores import BulkStore, MemoryStore, MemoryStoreError
from fastslow.vocab import NAVIGATION_LOOP

if TYPE_CHECKING:
    # mypy proves here that records can be handed to Swift as they are.
    _HINT: type[MemoryHint] = MemoryRecord

T1_RUNGS: tuple[tuple[str, tuple[Tag, ...]], ...] = (
    ("success", ("success",)),
    ("success+near-miss", ("success", "near-miss")),
)
PLANNING_TAGS: tuple[Tag, ...] = ("success", "near-miss")
ALL_TAGS: tuple[Tag, ...] = ("success", "near-miss", "avoidance")
AVOIDANCE: tuple[Tag, ...] = ("avoidance",)

T1_EXEMPT_FORCING = frozenset({"focus_before_sage"})
"""Forcing rules (``controller.arbiter.Rule`` values) on which T1 does not fire even with
``t1_on_forced``: the authors' loop passes its forcing reason to skip T1 when their focus gate forced Sage."""
CRITIC_REFUSALS: tuple[str, ...] = (
    "no known action matches",
    "you can't",
    "you cannot",
    "not allowed",
    "doesn't seem possible",
    "invalid action",
)
"""Phrases (lower case, substrings) of an observation that refuses the action, as the paper authors'
Critic block reads them (ScienceWorld's refusals): AMM's fresh Critic evidence leaves out a record whose
observation holds one."""
CRITIC_FAILURE_SIGNAL: tuple[str, ...] = (*CRITIC_REFUSALS[:5], "not possible", "cannot")
"""Phrases (lower case, substrings) of the last two observations that are the authors' failure signal of
the recent history: AMM's fresh Critic evidence then includes an avoidance memory."""
CRITIC_SEARCH_K = 10
"""``critic_evidence: fresh``: records each Critic search returns before ranking (the authors' top 10)."""
CRITIC_AVOIDANCE_K = 1
"""``critic_evidence: fresh``: avoidance memories the Critic gets at most (the authors: 1)."""
NAVIGATION_PATTERN = NAVIGATION_LOOP
"""SRM's navigation stagnation pattern: a report of only this one brings no avoidance memory (the
authors' "move spam" exception); every other pattern is one of their failure signals."""


@dataclass(frozen=True)
class T1Outcome:
    """Result of the T1 ladder: an accepted memory-conditioned proposal, or escalate (``proposal`` None)."""

    proposal: Proposal | None
    rung: str
    """Rung that produced the accepted proposal; ``escalate`` when none did, ``disabled`` if T1 is off,
    ``exhausted`` when ``t1_ladder: across_failures`` has no rung left for this many failures in a row."""
    records: tuple[MemoryRecord, ...] = ()
    """Memories the accepted retry saw."""
    retries: int = 0
    """Swift calls the ladder made."""


def repeated_invalid(traj: Trajectory) -> bool:
    """T3 condition: the last two actions are the same and both got the invalid-action reply."""
    turns = traj.turns
    return (
        len(turns) >= 2
        and turns[-1].action.strip().lower() == turns[-2].action.strip().lower()
        and is_invalid_feedback(traj.semantics, turns[-1].observation)
        and is_invalid_feedback(traj.semantics, turns[-2].observation)
    )


def t3_fires(traj: Trajectory, rule: T3Rule) -> bool:
    """``amm.retrieval.t3_rule`` after the step just recorded. ``first_repeat``: ``repeated_invalid``
    at the start of a streak. ``every_repeat``: the authors' test, the action equal to the one before
    (as written) and the observation exactly the world's reply to an unknown action
    (``WorldSemantics.invalid_reply``: ScienceWorld's no-match reply; never in a world without one
    such reply), at every repeat."""
    turns = traj.turns
    if len(turns) < 2:
        return False
    if rule == "every_repeat":
        reply = traj.semantics.invalid_reply
        return (
            reply is not None
            and turns[-1].action == turns[-2].action
            and turns[-1].observation.strip() == reply
        )
    action = turns[-1].action.strip().lower()
    streak_start = len(turns) < 3 or turns[-3].action.strip().lower() != action
    return repeated_invalid(traj) and streak_start


def stagnant(traj: Trajectory, window: int) -> bool:
    """T2 condition: ``window`` steps without a score gain, showing at most two distinct observations."""
    recent = traj.recent(window)
    return (
        window > 0
        and len(recent) == window
        and all(t.reward <= 0 for t in recent)
        and len({" ".join(t.observation.split()) for t in recent}) <= 2
    )


def progressed(
    traj: Trajectory, action: str, prev: StepResult, result: StepResult, cfg: SalienceConfig
) -> bool:
    """The step is a success or near-miss transition by the run's salience gate: progress, which
    restarts ``t2_at``'s count (the authors' working memory resets its cycles without progress when it
    writes one, and counts every other step, avoidance included). Whether the record was stored (the
    per-episode dedup, frozen mode) does not matter: the gate's verdict does."""
    salience = TAGGINGS[cfg.tagging].judge(traj, action, prev, result, cfg)
    return salience is not None and salience.tag != "avoidance"


@contextmanager
def scores_hidden(traj: Trajectory) -> Iterator[Trajectory]:
    """``traj`` with every score and reward 0 while the block runs (the authors' T1 retry input).

    The trajectory object itself is changed and restored, not copied: Swift proposers may key state on
    the episode's trajectory (the T5 Swift's history renaming), which a copy would reset."""
    turns, current = traj.turns, traj.current
    traj.turns = [replace(t, score=0, reward=0) for t in turns]
    traj.current = replace(current, score=0, reward=0)
    try:
        yield traj
    finally:
        traj.turns, traj.current = turns, current


def focus_spent(traj: Trajectory) -> bool:
    """The task's focus budget is used up: as many focus actions executed as the authors' per-task focus
    count (their Critic ranks a memory's focus action last then). The focus is the world's commitment
    (``WorldSemantics.commitment``, its ``authors_budget``): never spent in a world without one."""
    rules, verb = traj.semantics.commitment, traj.semantics.commitment_verb
    if rules is None or verb is None:
        return False
    used = sum(1 for t in traj.turns if t.action.strip().lower().startswith(verb + " "))
    return used >= rules.authors_budget(traj.task_id)


def rank_for_critic(records: Sequence[MemoryRecord], traj: Trajectory) -> list[MemoryRecord]:
    """The fresh Critic evidence in the authors' order: records of the same task (the same description
    when the record has one) first, then the same room, then a positive reward, a focus last once the
    focus budget is spent; ties keep the search's order. Avoidance records and records whose
    observation is a refusal are left out."""
    room = traj.room.strip().lower()
    spent = focus_spent(traj)
    verb = traj.semantics.commitment_verb
    task = (traj.current.task_description or traj.task_description).strip().lower()

    def same_task(r: MemoryRecord) -> bool:
        # The authors compare task descriptions (one variation's wording); a record of fastslow's gate
        # has none, so its task name decides.
        if r.task_description and task:
            return task in r.task_description.strip().lower()
        return r.task_name == traj.task_name

    def key(r: MemoryRecord) -> tuple[int, int]:
        score = (
            1000 * same_task(r)
            + 100 * (bool(room) and r.room.strip().lower() == room)
            + 10 * (r.reward > 0)
            - (spent and verb is not None and r.action.strip().lower().startswith(verb))
        )
        return -score, -r.reward

    kept = [
        r
        for r in records
        if r.tag != "avoidance" and not any(m in r.observation.lower() for m in CRITIC_REFUSALS)
    ]
    return sorted(kept, key=key)


def critic_wants_avoidance(traj: Trajectory, patterns: Sequence[str] | None) -> bool:
    """The Critic's fresh evidence includes an avoidance memory: the stagnation report names a pattern
    other than the navigation loop, or (no such pattern) the last two observations show a failure.
    A report of only the navigation loop never does. ``patterns`` None: the report is not known."""
    if patterns:
        return not all(p == NAVIGATION_PATTERN for p in patterns)
    recent = " ".join(t.observation.lower() for t in traj.recent(2))
    return any(k in recent for k in CRITIC_FAILURE_SIGNAL)


class EpisodeMemory:
    """AMM for one episode."""

    def __init__(
        self,
        cfg: AmmConfig,
        store: MemoryStore,
        sink: EventSink,
        episode_id: str,
        writable: bool = True,
        world: str = "scienceworld",
    ) -> None:
        self.cfg = cfg
        self.sink = sink
        self.writer = MemoryWriter(store, cfg.write, sink, episode_id, writable, world)
        self.retriever = MemoryRetriever(
            store, cfg.retrieval, sink, provenance=episode_id if cfg.provenance else None
        )
        self.cache: dict[MemoryTrigger, list[MemoryRecord]] = {}
        """Records retrieved at T2/T3, kept for the Critic; never injected in the AMM-only configuration."""
        self._last_t2_step = -(10**9)
        self.swift_failures = 0
        """Swift failures in a row before the current proposal (``t1_ladder: across_failures``)."""
        self.no_progress = 0
        """Env steps in a row without a success or near-miss transition (``t2_at``)."""
        self.failures_since_plan = 0
        """Failure messages (the authors' test, ``AuthorsProfile.failed``) since T4 last ran (for
        ``t4_avoidance_on_failures``)."""
        self.episode_id = episode_id
        self._prior: ActionPrior | None = None
        """``amm.retrieval.prior``: the votes of the other episodes' records, read at the first proposal."""
        self._prior_weights: PriorWeights | None = None

    # -- write side ---------------------------------------------------------------------------------
    def after_step(
        self, traj: Trajectory, action: str, prev: StepResult, result: StepResult
    ) -> MemoryRecord | None:
        """Write hook plus T3/T2 checks. Call after ``traj.record(action, source, result)``."""
        record = self.writer.after_step(traj, action, prev, result)
        rcfg = self.cfg.retrieval
        self.no_progress = (
            0 if progressed(traj, action, prev, result, self.cfg.write) else self.no_progress + 1
        )
        authors = traj.semantics.authors  # their failure test; a world without their profile has none
        if authors is not None and authors.failed(result.observation):
            self.failures_since_plan += 1
        if rcfg.t3 and t3_fires(traj, rcfg.t3_rule):
            self.t3(traj)
        elif (
            rcfg.t2
            and not rcfg.t2_at
            and stagnant(traj, rcfg.stagnation_window)
            and result.steps - self._last_t2_step >= rcfg.stagnation_window
        ):
            self._last_t2_step = result.steps
            self.t2(traj)
        return record

    # -- read side ----------------------------------------------------------------------------------
    def _fallback(self, traj: Trajectory, trigger: MemoryTrigger, target: str, reason: str) -> None:
        self.sink.emit(MemoryFallback(step=traj.current.steps, trigger=trigger, target=target, reason=reason))

    def _retrieve(
        self,
        trigger: MemoryTrigger,
        target: str,
        traj: Trajectory,
        k: int,
        tags: Sequence[Tag],
        rung: str = "",
    ) -> list[MemoryRecord]:
        """``retriever.retrieve``, plus one ``store_error`` fallback event for ``target`` when the search
        skipped rows that are not records (the store warns once per row; the event marks every search
        that lost rows, so metrics count them as the store errors they are)."""
        bad = self.retriever.store.bad
        before = bad.skips
        records = self.retriever.retrieve(trigger, traj, k, tags, rung=rung)
        skipped = bad.skips - before
        if skipped:
            more = f" (and {skipped - 1} more in this search)" if skipped > 1 else ""
            self._fallback(traj, trigger, target, f"{STORE_ERROR}{bad.last}{more}")
        return records

    def _block(
        self,
        traj: Trajectory,
        trigger: MemoryTrigger,
        records: list[MemoryRecord],
        audience: Audience,
        *,
        tags: Sequence[Tag] | None = None,
        ordered: bool = False,
    ) -> InjectionResult:
        icfg = self.cfg.injection
        budget = {"swift": icfg.swift_budget, "sage": icfg.sage_budget, "critic": icfg.critic_budget}[
            audience
        ]
        block = format_memory_block(
            records, budget, audience, icfg.unit, icfg.observation_chars, tags=tags, ordered=ordered
        )
        if block.ok:
            self.sink.emit(
                MemoryInjection(
                    step=traj.current.steps,
                    trigger=trigger,
                    target=audience,
                    n=len(block.records),
                    chars=block.chars,
                    text=block.text or "",
                )
            )
        else:
            self._fallback(traj, trigger, audience, block.fallback or "unknown")
        return block

    def swift_proposed(
        self,
        traj: Trajectory,
        *,
        failed: bool,
        forced: str | None,
        retry: Callable[[list[MemoryRecord]], Proposal],
        accept: Callable[[Proposal], bool] | None = None,
        again: bool = False,
    ) -> T1Outcome | None:
        """Swift proposed for this loop iteration: T1 if it fires (its outcome; None if it did not), else
        T2 at the authors' no-progress counts; keeps the count of Swift failures in a row.

        ``failed``: the controller's "Swift failed" test on the proposal; ``forced``: the forcing rule
        sending the iteration to Sage (None: none holds); ``again``: a later iteration of the same env
        step, whose proposal the hooks already saw. fastslow's profile: T1 fires when Swift failed,
        forced or not, once per env step. ``t1_on_forced``: also whenever a forcing rule other than
        ``T1_EXEMPT_FORCING`` holds, on every such iteration.
        """
        rcfg = self.cfg.retrieval
        if again and not rcfg.t1_on_forced:
            return None
        fires = forced not in T1_EXEMPT_FORCING if forced is not None and rcfg.t1_on_forced else failed
        outcome = self.t1_ladder(traj, retry, accept) if fires else None
        if forced is not None:
            # The authors' count: Swift is not expected to act when Sage is forced.
            self.swift_failures = 0
        elif failed:
            rescued = outcome is not None and outcome.proposal is not None
            self.swift_failures = 0 if rescued else self.swift_failures + 1
        else:
            self.swift_failures = 0
            self.t2_count(traj)
        return outcome

    def prior(self, traj: Trajectory, proposal: Proposal, off: bool = False) -> tuple[Proposal, str]:
        """``amm.retrieval.prior``: ``proposal`` re-ranked by the action prior (``memory.prior``) and a
        note for the step's reason when its top changed (``, prior <action> (+<vote>)``), with a
        ``MemoryPrior`` event naming the episodes and records behind the change. The prior is read from
        the store once per episode, at its first proposal; a store error leaves the proposal as it is
        (``MemoryFallback(T1, swift, store_error: ...)``) and the episode without a prior.

        ``off`` (``fastslow attribute``'s ``memory-prior`` fork, ``config.Intervention``): the prior is
        read as usual (so a later step finds it as it would have) but ``proposal`` comes back as it is,
        with no note and no event."""
        rcfg = self.cfg.retrieval
        if not rcfg.prior:
            return proposal, ""
        if self._prior is None:
            self._prior_weights = fitted(rcfg.prior_bonus, rcfg.prior_penalty)
            try:
                records = list(self.retriever.store.iter_all())
            except MemoryStoreError as exc:
                self._fallback(traj, "T1", "swift", f"{STORE_ERROR}{exc}")
                records = []
            self._prior = ActionPrior.from_records(records, traj.task_name, self.episode_id, traj.semantics)
        assert self._prior_weights is not None
        steps = ((t.action, t.reward) for t in traj.turns)
        if off:
            return proposal, ""
        prior = self._prior
        revised = prior.revise(proposal, traj.current.valid_actions, steps, self._prior_weights)
        top = revised.top
        if top is None or top == proposal.top:
            return revised, ""
        # The episodes are named as a retrieval's ``writers`` are, relative to this episode's run.
        proposed = proposal.top or ""
        rivals = prior.rivals(proposed) if proposed and prior.vote(proposed) == 0 else []
        self.sink.emit(
            MemoryPrior(
                step=traj.current.steps,
                proposed=proposed,
                action=top,
                vote=prior.vote(top),
                proposed_vote=prior.vote(proposed) if proposed else 0,
                endorsed_by=[writer_name(e, self.episode_id) for e in prior.endorsers(top)],
                disputed_by=[writer_name(e, self.episode_id) for e in prior.disputers(proposed)],
                rivals=rivals,
                records=list(
                    dict.fromkeys(  # the rival may be ``action`` itself: each record once
                        [
                            *prior.records(top),
                            *(prior.records(proposed) if proposed else []),
                            *(r for rival in rivals for r in prior.records(rival)),
                        ]
                    )
                ),
            )
        )
        return revised, f", prior {top} ({prior.vote(top):+d})"

    def t1_ladder(
        self,
        traj: Trajectory,
        retry: Callable[[list[MemoryRecord]], Proposal],
        accept: Callable[[Proposal], bool] | None = None,
    ) -> T1Outcome:
        """Swift failed: retry it with memories, success-only first, then success+near-miss.

        ``retry`` calls Swift with the given memories; ``accept`` says whether a proposal is good enough
        (default: its top action is in the current valid set). A rung whose records equal the previous
        rung's is skipped, since the retry would see the same evidence. ``t1_ladder: across_failures``
        runs only the rung of the current count of Swift failures in a row; ``t1_retry_without_memories``
        retries a rung that found nothing to show (with no memories); ``t1_inject`` off retries with no
        memories whatever was found.
        """
        rcfg = self.cfg.retrieval
        if not rcfg.t1:
            return T1Outcome(None, "disabled")
        ok = accept or (lambda p: p.top is not None and p.top in traj.current.valid_actions)
        rungs = T1_RUNGS
        if rcfg.t1_ladder == "across_failures":
            if self.swift_failures >= len(T1_RUNGS):
                return T1Outcome(None, "exhausted")
            rungs = T1_RUNGS[self.swift_failures : self.swift_failures + 1]
        previous: tuple[str, ...] | None = None
        retries = 0
        for rung, tags in rungs:
            try:
                records = self._retrieve("T1", "swift", traj, rcfg.t1_k, tags, rung=rung)
            except MemoryStoreError as exc:
                self._fallback(traj, "T1", "swift", f"{STORE_ERROR}{exc}")
                break
            ids = tuple(r.id for r in records)
            if ids == previous:
                continue
            previous = ids
            shown: tuple[MemoryRecord, ...] = ()
            if rcfg.t1_inject:
                block = self._block(traj, "T1", records, "swift")
                if not block.ok and not rcfg.t1_retry_without_memories:
                    continue
                shown = block.records if block.ok else ()
            proposal = retry(list(shown))
            retries += 1
            if ok(proposal):
                return T1Outcome(proposal, rung, shown, retries)
        return T1Outcome(None, "escalate", retries=retries)

    @contextmanager
    def retry_view(self, traj: Trajectory) -> Iterator[Trajectory]:
        """The trajectory a T1 retry's Swift reads: scores hidden with ``t1_zero_scores``, else as is."""
        if not self.cfg.retrieval.t1_zero_scores:
            yield traj
            return
        with scores_hidden(traj) as hidden:
            yield hidden

    def t4(self, traj: Trajectory) -> InjectionResult:
        """Sage is about to plan: the memory block for its planning prompt (``text`` None: use baseline).

        With ``t4_avoidance_on_failures`` and failure messages since the last plan (and T3's avoidance
        retrieval on), avoidance memories fill the slots of ``t4_k`` the planning memories left."""
        rcfg = self.cfg.retrieval
        failures, self.failures_since_plan = self.failures_since_plan, 0
        if not rcfg.t4:
            return InjectionResult(None, fallback="disabled")
        try:
            records = self._retrieve("T4", "sage", traj, rcfg.t4_k, PLANNING_TAGS)
            avoid: list[MemoryRecord] = []
            if rcfg.t4_avoidance_on_failures and rcfg.t3 and failures:
                avoid = self._retrieve("T4", "sage", traj, rcfg.t4_k, AVOIDANCE, rung="avoidance")
        except MemoryStoreError as exc:
            self._fallback(traj, "T4", "sage", f"{STORE_ERROR}{exc}")
            return InjectionResult(None, fallback=f"{STORE_ERROR}{exc}")
        ids = {r.id for r in records}
        fill = [r for r in avoid if r.tag == "avoidance" and r.id not in ids][
            : max(rcfg.t4_k - len(records), 0)
        ]
        if not fill:
            return self._block(traj, "T4", records, "sage")
        return self._block(traj, "T4", records + fill, "sage", tags=ALL_TAGS, ordered=True)

    def _cache(
        self, trigger: MemoryTrigger, traj: Trajectory, tags: Sequence[Tag] = ALL_TAGS, rung: str = ""
    ) -> list[MemoryRecord]:
        try:
            records = self._retrieve(trigger, "cache", traj, self.cfg.retrieval.cache_k, tags, rung=rung)
        except MemoryStoreError as exc:
            self._fallback(traj, trigger, "cache", f"{STORE_ERROR}{exc}")
            records = []
        self.cache[trigger] = records
        return records

    def t2(self, traj: Trajectory) -> list[MemoryRecord]:
        """Stagnation: retrieve and cache; changes no model input in the AMM-only configuration."""
        return self._cache("T2", traj)

    def t2_count(self, traj: Trajectory) -> list[MemoryRecord] | None:
        """``t2_at``: T2 when the count of steps without progress is one of the thresholds (the first
        retrieves success memories, a later one success and near-miss), cached as ``t2`` caches; None
        when it does not fire."""
        rcfg = self.cfg.retrieval
        if not rcfg.t2 or self.no_progress not in rcfg.t2_at:
            return None
        rung, tags = T1_RUNGS[0] if self.no_progress == rcfg.t2_at[0] else T1_RUNGS[1]
        return self._cache("T2", traj, tags, rung)

    def t3(self, traj: Trajectory) -> list[MemoryRecord]:
        """Repeated invalid action: retrieve and cache; no model input changes in the AMM-only config."""
        return self._cache("T3", traj)

    def critic_evidence(self, traj: Trajectory, patterns: Sequence[str] | None = None) -> InjectionResult:
        """Full system: the Critic's memory block. ``critic_evidence: cache``: the cached T3 (else T2)
        records, consuming the cache. ``fresh``: a search of its own (``rank_for_critic``), plus one
        avoidance memory when ``critic_wants_avoidance`` (``patterns``: the stagnation report's)."""
        rcfg = self.cfg.retrieval
        if rcfg.critic_evidence == "cache":
            trigger: MemoryTrigger = "T3" if self.cache.get("T3") else "T2"
            records = self.cache.pop(trigger, [])
            return self._block(traj, trigger, records, "critic")
        # The Critic is called on stagnation, T2's condition: its searches are logged as T2 rungs.
        try:
            found = self._retrieve("T2", "critic", traj, CRITIC_SEARCH_K, PLANNING_TAGS, rung="critic")
            avoid: list[MemoryRecord] = []
            if rcfg.t3 and critic_wants_avoidance(traj, patterns):
                avoid = self._retrieve(
                    "T2", "critic", traj, CRITIC_SEARCH_K, AVOIDANCE, rung="critic-avoidance"
                )
        except MemoryStoreError as exc:
            self._fallback(traj, "T2", "critic", f"{STORE_ERROR}{exc}")
            return InjectionResult(None, fallback=f"{STORE_ERROR}{exc}")
        worked = rank_for_critic(found, traj)[: rcfg.critic_k]
        seen = {dedup_key(r) for r in worked}
        warn = [r for r in avoid if r.tag == "avoidance" and dedup_key(r) not in seen][:CRITIC_AVOIDANCE_K]
        return self._block(traj, "T2", worked + warn, "critic", ordered=True)


class Amm:
    """AMM for a run (one per worker process): hands out per-episode hooks over the process's store,
    which it does not own (``memory.stores.shared_store`` opens and closes it). ``world``: the run's
    (``env.world``), whose task table names a record's task family."""

    def __init__(self, cfg: AmmConfig, store: BulkStore, world: str = "scienceworld") -> None:
        self.cfg = cfg
        self.store = store
        self.world = world

    def episode(self, episode_id: str, sink: EventSink, warmup: bool = False) -> EpisodeMemory:
        """Hooks for one episode; frozen mode writes only during warm-up episodes."""
        writable = warmup or self.cfg.mode == "online"
        return EpisodeMemory(self.cfg, self.store, sink, episode_id, writable, self.world)
