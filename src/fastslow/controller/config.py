"""The ``controller:`` config section: SwiftSage's arbitration, buffer and stop rules (paper §3, baseline).

Defaults reproduce SwiftSage as the paper ran it (docs/controller.md lists where each number comes
from); every rule can be switched off or re-tuned from YAML, so an ablation is a config diff.
"""

from __future__ import annotations

from fastslow.strict import StrictModel


class EscalationConfig(StrictModel):
    """When Swift's action is kept and when Sage is called instead (SwiftSage's arbitration)."""

    min_actions: int = 10
    """Swift is always kept (unless a forcing rule fires) while fewer actions than this have been taken."""
    sage_interval: int = 5
    """Swift is kept while fewer steps than this have passed since the last Sage call."""
    reward_window: int = 5
    """Swift is kept if any of the last this-many steps earned a positive reward."""
    repeat_window: int = 3
    """Swift is kept if its action is not among the last this-many actions; otherwise the
    no-progress rule escalates (when the three conditions above also fail)."""
    no_action_streak: int = 2
    """Force Sage after this many consecutive Swift proposals without a valid action (0 = off)."""
    failure_streak: int = 2
    """Force Sage after this many consecutive failure observations (0 = off)."""
    failure_markers: list[str] = ["can't", "not", "doesn't"]
    """Words that make an observation a failure message (matched as whole words, case-insensitive);
    "No known action matches that input." always counts."""
    focus_needs_sage: bool = True
    """Force Sage when Swift wants to ``focus on`` something before Sage has been called in the episode
    (a wrong focus ends the task at -100)."""
    max_consecutive_sage: int = 2
    """After this many Sage calls with no Swift-chosen action in between, Swift acts (0 = no limit)."""
    sage_cooldown: int = 2
    """Env steps that must pass after a Sage call before the next one (at most one call per env step
    always holds)."""


class BufferConfig(StrictModel):
    """The FIFO action buffer Sage (and later the Critic) fill and the controller drains."""

    size: int = 5
    """Most actions one plan may put in the buffer (SwiftSage: the first 5 parsed actions)."""
    failure_limit: int = 2
    """Clear the buffer after this many consecutive failure observations from buffered actions (0 = never)."""


class SageRunConfig(StrictModel):
    """How the controller prompts and parses Sage (the model itself is ``sage.model``)."""

    history_turns: int = 10
    """Recent steps (action, observation, reward) shown to Sage; older ones are left out (short prompts)."""
    max_look_chars: int = 600
    """Each visited room's look text is clipped to this many characters (the current room is shown whole)."""
    max_failures: int = 5
    """Most recent failed actions listed in the planning prompt."""
    swift_candidates: int = 3
    """Swift's top candidates shown to Sage as a suggestion."""
    plan_max_tokens: int = 384
    """Cap on tokens the planning call may generate."""
    ground_max_tokens: int = 256
    """Cap on tokens the grounding call may generate."""
    parse_retries: int = 1
    """Extra grounding calls when the reply yields no usable action (SwiftSage: one retry)."""


class ControllerConfig(StrictModel):
    """The SwiftSage controller: arbitration, Sage prompting, buffer and stop rules (agent kind swiftsage)."""

    escalation: EscalationConfig = EscalationConfig()
    """Rules that decide between Swift and Sage."""
    buffer: BufferConfig = BufferConfig()
    """Action-buffer settings."""
    sage: SageRunConfig = SageRunConfig()
    """Sage prompt and parse settings."""
    ground_cutoff: float = 80.0
    """Lowest rapidfuzz similarity (0-100) at which planned text (Sage, Critic) or Swift's text is mapped to a
    valid action; below it the action is not valid (skipped in the buffer, retried in Sage's round)."""
    early_stop_min_steps: int = 100
    """SwiftSage's early stop: after at least this many env steps ... (0 = off)."""
    early_stop_window: int = 30
    """... stop if none of the last this-many steps earned a positive reward."""
    ambiguous_answer: str = "0"
    """Reply to ScienceWorld's "Ambiguous request" question (SwiftSage answers 0: the first option)."""
    sage_enabled: bool = True
    """False: Swift acts alone, Sage is never called (the fast-pathway configurations, e.g. swift-srm)."""
    swift_policy: bool = False
    """Re-score Swift's valid candidates with the Swift-only safety policy (no-effect rule, loop penalty,
    focus rule; ``swift:`` section) before the controller picks one, as ``agent.kind: swift`` does."""
    warmup: bool = False
    """Set by ``fastslow eval --warmup`` on the warm-up episodes (AMM writes even in frozen mode); the
    evaluation episodes run with False. Not meant to be set in a YAML file."""
