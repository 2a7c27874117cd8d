"""The ``controller:`` config section: SwiftSage's arbitration, buffer and stop rules (paper §3, baseline).

Defaults reproduce SwiftSage as the paper ran it (docs/controller.md lists where each number comes
from); every rule can be switched off or re-tuned from YAML, so an ablation is a config diff.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fastslow.models.shape import ConstrainMode
from fastslow.strict import StrictModel


class EscalationConfig(StrictModel):
    """When Swift's action is kept and when Sage is called instead (SwiftSage's arbitration)."""

    min_actions: int = Field(default=10, ge=0)
    """Swift is always kept (unless a forcing rule fires) while fewer actions than this have been taken."""
    sage_interval: int = Field(default=5, ge=0)
    """Swift is kept while fewer steps than this have passed since the last Sage call."""
    # >= 1 for the windows read as list[-n:]: n = 0 would be the whole history, not none of it.
    reward_window: int = Field(default=5, ge=1)
    """Swift is kept if any of the last this-many steps earned a positive reward."""
    repeat_window: int = Field(default=3, ge=1)
    """Swift is kept if its action is not among the last this-many actions; otherwise the
    no-progress rule escalates (when the three conditions above also fail)."""
    no_action_streak: int = Field(default=2, ge=0)
    """Force Sage after this many consecutive Swift proposals without a valid action (0 = off)."""
    failure_streak: int = Field(default=2, ge=0)
    """Force Sage after this many consecutive failure observations (0 = off)."""
    focus_needs_sage: bool = True
    """Force Sage when Swift wants to ``focus on`` something before Sage has been called in the episode
    (a wrong focus ends the task at -100)."""
    max_consecutive_sage: int = Field(default=2, ge=0)
    """After this many Sage calls with no Swift-chosen action in between, Swift acts (0 = no limit)."""
    sage_cooldown: int = Field(default=2, ge=0)
    """Env steps that must pass after a Sage call before the next one (at most one call per env step
    always holds). With ``controller.loop: authors``: Swift's invalid top prediction does not call Sage
    within this many steps of the last call (forcing rules ignore it), and the LoopGuard keeps the
    forcing rules off for this many steps minus one."""


class BufferConfig(StrictModel):
    """The FIFO action buffer Sage (and, with SRM, the Critic) fill and the controller drains."""

    size: int = Field(default=5, ge=1)
    """Most actions one plan may put in the buffer (SwiftSage: the first 5 parsed actions)."""
    failure_limit: int = Field(default=2, ge=0)
    """Clear the buffer after this many consecutive failure observations from buffered actions (0 = never)."""
    scan_limit: int = Field(default=0, ge=0)
    """Most buffered heads tried per timestep before the rest is cleared and Swift acts (0 = all; the
    authors' loop: 5)."""
    expected_alias: bool = False
    """A head that cannot run is tried once more as its planned expected observation, when that text is
    itself an action (the authors' guessed-observation alias)."""
    defer_unseen_focus: bool = False
    """A focus head whose target is not among the valid actions yet is moved after the buffer's next
    teleport instead of dropped (the authors' loop with SRM: their Gate-1 "target not observed yet")."""


class SageRunConfig(StrictModel):
    """How the controller prompts and parses Sage (the model itself is ``sage.model``).

    Two prompt profiles (``prompt``). The defaults are the ``swiftsage`` profile; the paper
    configurations (``baseline`` and what extends it) set the ``authors`` profile and its values
    (docs/fidelity.md, rows P1-P11)."""

    prompt: Literal["swiftsage", "authors"] = "swiftsage"
    """swiftsage: a system message with the action forms, then SwiftSage's five questions over the last
    ``history_turns`` steps, and a grounding call asking for numbered actions, parsed leniently and retried
    ``parse_retries`` times (``prompts/sage_plan.j2``, ``sage_ground.j2``). authors: the paper authors'
    prompts (ScienceWorld's ``AuthorsProfile``: ``env/scienceworld/authors_prompts.py``,
    ``prompts/sage_authors_*.j2``): one user message each, with demo trajectories of the task from train
    gold paths (``env/scienceworld/demos.py``), their cleaned history,
    the looks of other visited rooms, what was focused on, Swift's valid top prediction as an "instinct",
    the failure messages since Sage last ran, the five questions with the task's focus whitelist, and a
    grounding reply in FUNC(args) form of which the first ``parse_lines`` lines are read."""
    history_turns: int = Field(default=10, ge=0)
    """swiftsage: recent steps (action, observation, reward) shown to Sage; older ones are left out.
    authors: the entries the "lite" planning history keeps (theirs: 15); the full history keeps all."""
    # >= 3: a clipped look ends in "...", which needs three characters of room.
    max_look_chars: int = Field(default=600, ge=3)
    """Each visited room's look text is clipped to this many characters (the current room is shown whole)."""
    # >= 1: the prompt takes failures[-n:], and n = 0 would list every failure, not none.
    max_failures: int = Field(default=5, ge=1)
    """Most recent failed actions listed in the planning prompt."""
    swift_candidates: int = Field(default=3, ge=0)
    """Swift's top candidates shown to Sage as a suggestion."""
    demo: bool = False
    """swiftsage: show Sage, after the task, one solved train episode of the task's game as
    ``action -> observation`` lines (``World.sage_demos``: TextWorldExpress's, built from its train gold
    paths by ``fastslow data sage-demos --world textworldexpress``). A world without such demos refuses
    it (ScienceWorld's demos are the authors' profile's, in their FUNC grammar: ``prompt: authors``)."""
    plan_max_tokens: int = Field(default=384, ge=1)
    """Cap on tokens the planning call may generate."""
    ground_max_tokens: int = Field(default=256, ge=1)
    """Cap on tokens the grounding call may generate."""
    parse_retries: int = Field(default=1, ge=0)
    """Extra grounding calls when the reply yields no usable action (SwiftSage: one retry; the authors:
    none)."""
    ground_history_turns: int = Field(default=10, ge=0)
    """authors: history entries (FUNC form) in the grounding prompt (their k = 10)."""
    lite_above_tokens: int = Field(default=8000, ge=0)
    """authors: estimated tokens (``models.CHARS_PER_TOKEN``) of the full planning prompt, memories
    included, at or above which it is rebuilt "lite": the last ``history_turns`` entries without their
    actions, no other rooms' looks and no memory block (theirs: 8000 cl100k tokens). 0: always lite."""
    prompt_budget_tokens: int = Field(default=0, ge=0)
    """authors: estimated tokens a prompt may take; a longer one leaves out, in turn, the oldest history
    entries, the second demo (grounding), the end of the plan's advice (grounding) and the demo lines
    from the last, until it fits (0: no limit, the authors'). Keep it under the model's context window
    minus the reply cap: llama.cpp refuses a prompt that does not fit, and the round ends in an error."""
    parse_lines: int = Field(default=5, ge=1)
    """authors: lines of the grounding reply that are read (theirs: the first 5)."""
    constrain: ConstrainMode = "none"
    """How Sage's two calls are constrained while the model generates (``models.shape``). none: not at
    all (the paper configurations). format: the planning reply is five answer lines and the grounding
    reply numbered action lines in the shape the profile's reader reads (``parsing.authors_shape``:
    ``Action n: FUNC(args) --> observation``; ``parsing.numbered_shape``: ``n. action -> observation``).
    valid: as format, with every action one of the state's valid actions the controller's grounding
    admits, as the reader reads it (their FUNC form, ``env.func_actions.func_forms``, for the authors'
    profile). An ``openai`` model needs a ``constraint_format`` with grammars (``llama_cpp``, ``vllm``,
    ``vllm_guided``)."""
    strict_history: bool = False
    """authors: True = an action in the grounding history that has no FUNC form ("inventory", "look in
    X", "put down X") ends the round as an error, as the authors' public ``eval_utils`` fails on it (their
    planning call has already been made); False (the paper configurations) leaves such steps out: that
    ``eval_utils`` is older than their final loop, and the failure would end every later Sage round of
    the episode (docs/fidelity.md P8)."""


class ControllerConfig(StrictModel):
    """The SwiftSage controller: arbitration, Sage prompting, buffer and stop rules (agent kind swiftsage)."""

    escalation: EscalationConfig = EscalationConfig()
    """Rules that decide between Swift and Sage."""
    buffer: BufferConfig = BufferConfig()
    """Action-buffer settings."""
    sage: SageRunConfig = SageRunConfig()
    """Sage prompt and parse settings."""
    ground_cutoff: float = Field(default=80.0, ge=0, le=100)
    """Lowest rapidfuzz similarity (0-100) at which planned text (Sage, Critic) or Swift's text is mapped to a
    valid action; below it the action is not valid (skipped in the buffer, retried in Sage's round)."""
    early_stop_min_steps: int = Field(default=100, ge=0)
    """SwiftSage's early stop: after at least this many env steps ... (0 = off)."""
    # >= 1: a window of 0 steps never holds a reward, so the stop would fire at early_stop_min_steps.
    early_stop_window: int = Field(default=30, ge=1)
    """... stop if none of the last this-many steps earned a positive reward."""
    # ScienceWorld numbers the options of an ambiguous request; any other reply is not an answer.
    ambiguous_answer: str = Field(default="0", pattern=r"^[0-9]+$")
    """Reply to ScienceWorld's "Ambiguous request" question (SwiftSage answers 0: the first option)."""
    loop: str = Field(default="swiftsage", pattern=r"^(swiftsage|authors|[A-Za-z_][\w.]*:[A-Za-z_]\w*)$")
    """The arbitration profile (``fastslow.build.PROFILES``). swiftsage: SwiftSage's arbitration as its
    paper describes it (``escalation.SwiftSageArbiter``: the first of Swift's ranked candidates that
    grounds, fuzzy grounding, streak rules). authors: the paper's authors' final loop
    (``authors.AuthorsArbiter``: Swift's top prediction after their rewrites, exact membership, their
    forcing rules and LoopGuard, nothing invalid executed); the paper configurations use it
    (docs/fidelity.md). Any other profile by its import path, ``package.module:PROFILE`` (an
    ``arbiter.Profile``; docs/controller.md, "A third profile")."""
    focus_gate: bool = False
    """The authors' focus rules without SRM (``controller.authors.FocusGate``): before Sage has focused,
    Swift's focus runs only on a task focus target or its third try; focus actions past the task's focus
    count are dropped. With SRM the authors use Gate-1's focus limit instead (leave this off)."""
    sage_enabled: bool = True
    """False: Swift acts alone, Sage is never called (the fast-pathway configurations, e.g. swift-srm)."""
    swift_policy: bool = False
    """Re-score Swift's valid candidates with the Swift-only safety policy (no-effect rule, loop penalty,
    focus rule; ``swift:`` section) before the controller picks one (the hook ``hooks.PolicyHook``)."""
    warmup: bool = False
    """Set by ``fastslow eval --warmup`` on the warm-up episodes (AMM writes even in frozen mode); the
    evaluation episodes run with False. Not meant to be set in a YAML file."""
