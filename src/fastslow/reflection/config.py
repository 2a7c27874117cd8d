"""SRM configuration, paper §3.2: the ``srm:`` section (Gate-1, stagnation detector, Critic switch).

Defaults are the authors' thresholds (docs/srm.md, "Configuration"). The Critic's own knobs (kind, model,
budget, cooldown, back-off) live in the top-level ``critic:`` section so there is one place to set them.

Two profiles share these sections. The defaults are fastslow's own SRM (the fast pathway, ``swift-srm``
and ``swift-amm-srm``). ``configs/srm.yaml`` (and ``full``, ``paper-srm``, ``paper-full`` through it) sets
the fields marked "authors" below to the behaviour of the paper's authors' final loop
(docs/fidelity.md, rows R1-R16): the Critic runs only on an empty buffer and replaces it, only injected
calls count, same-observation stagnation tests, a Swift action Gate-1 drops is a failure message.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from fastslow.models.config import ModelConfig
from fastslow.models.shape import ConstrainMode
from fastslow.strict import StrictModel

RepairRule = Literal["normalize", "alias", "teleport", "qualifier", "fuzzy"]
ALL_REPAIRS: list[RepairRule] = ["normalize", "alias", "teleport", "qualifier", "fuzzy"]


class GateConfig(StrictModel):
    """SRM Gate-1: normalize, check admissibility, repair or drop every action before env.step."""

    enabled: bool = True
    """Run Gate-1 on every action (whatever its source) when SRM is on."""
    repairs: list[RepairRule] = list(ALL_REPAIRS)
    """Repair rules tried in this order when an action is not in the valid set as written:
    normalize (case, spaces, articles, punctuation), alias (known verb/command/object paraphrases),
    teleport ("go to X" -> "teleport to X" under the easy simplification), qualifier (add or drop a
    unique container/location qualifier), fuzzy (a unique close match, same verb)."""
    fuzzy_threshold: float = Field(default=90.0, ge=0, le=100)
    """fuzzy: minimum rapidfuzz ratio (0-100) between the normalized action and a valid action."""
    fuzzy_margin: float = Field(default=3.0, ge=0, le=100)
    """fuzzy: the best match must beat the second best by this much, or the repair is ambiguous."""
    fuzzy_focus: bool = False
    """fuzzy: also repair ``focus on`` actions. Off: a wrong focus fails the task (-100)."""
    focus_rules: bool = True
    """Apply the task-specific focus rules (focus budget per task, no repeated focus, focus target named
    in the task description where the task names it)."""
    focus_limit: int | None = Field(default=None, ge=0)
    """Focus actions allowed per episode; None = the per-task number of focus actions in gold paths."""
    refuse_avoided: bool = False
    """Also drop the actions on the avoid list of the latest stagnation report, for ``stagnation.window``
    steps after it. Off by default: the paper's Gate-1 checks validity and constraints; the avoid list
    is advice for the Critic (and a loop like waiting for water to boil can look stuck)."""
    focus_budget: Literal["gold", "authors"] = "gold"
    """Where the focus budget comes from. gold: the per-task number of focus actions in gold paths,
    counting the focuses ScienceWorld confirmed. authors: their ``focus_on_count`` per task id
    (ScienceWorld's ``valid.FOCUS_COUNT``), counting every executed ``focus on`` action whatever its
    answer."""
    drop_as_failure: bool = False
    """authors: a drop of Swift's (valid) action is a failure message ``GATE_INVALID:<reason>`` for the
    authors' loop (``controller.loop: authors``): the iteration ends without an env step, which forces
    Sage on the next one, and a second drop in the same step takes their gate-drop-loop break (Sage
    forced once more, else look around / inventory / wait). Off: the drop leaves Swift without a valid
    action and the loop's invalid-action rule decides."""


class StagnationConfig(StrictModel):
    """SRM stagnation detector: deterministic diagnostics over the recent trajectory after each step."""

    enabled: bool = True
    """Run the detector after each env step when SRM is on."""
    window: int = Field(default=5, ge=2)
    """Recent steps the detector looks at."""
    min_step: int = Field(default=5, ge=0)
    """No report before this many env steps."""
    repeated_observation: int = Field(default=3, ge=2, validate_default=True)
    """Same observation this many times in a row."""
    repeated_action: int = Field(default=2, ge=2, validate_default=True)
    """Same action this many times in a row, the repeats without effect."""
    verb_loop: int = Field(default=3, ge=2, validate_default=True)
    """Same verb this many times in a row, none of them with effect."""
    invalid_loop: int = Field(default=3, ge=2, validate_default=True)
    """Failure observations (no known action, ambiguous, can't, ...) within the window."""
    navigation_steps: int = Field(default=4, ge=1, validate_default=True)
    """Navigation actions within the window that make a navigation loop..."""
    navigation_max_states: int = Field(default=2, ge=1)
    """...when they visit at most this many distinct (room, inventory) states."""
    repeat_after: int = Field(default=5, ge=1)
    """Steps before the same pattern is reported again while the agent stays stuck (1: every step it
    holds, as the authors' detector reports)."""
    no_effect: Literal["state", "observation"] = "state"
    """What "without effect" means. state: the step changed neither the score nor the (room, inventory,
    look) state; the repeated-observation and navigation patterns also need no reward in the window.
    observation (authors): the observation repeats (whitespace and case aside) - a repeated action with
    the same observation twice, a verb run whose last two observations match, the same observation
    ``repeated_observation`` times, a full window of navigation among few (room, inventory) states -
    with no reward condition."""
    open_door_navigates: bool = False
    """Count ``open door to <room>`` as a navigation step (the authors' detector does; go/teleport always
    count)."""

    @field_validator(
        "repeated_observation", "repeated_action", "verb_loop", "invalid_loop", "navigation_steps"
    )
    @classmethod
    def _fits_window(cls, value: int, info: ValidationInfo) -> int:
        # Each detector looks only at the last ``window`` steps: a threshold above the window can never
        # be reached, so the detector would be on in the config and silent in every episode. The
        # defaults are validated too (validate_default), so a shorter window alone is caught.
        window = info.data.get("window")
        if window is not None and value > window:
            raise ValueError(f"{value} exceeds stagnation.window ({window}): the detector could never fire")
        return value


class SrmCriticSwitch(StrictModel):
    """Whether SRM may call the Critic; the Critic's settings are the top-level ``critic:`` section."""

    enabled: bool = True
    """Call the Critic on stagnation (within its budget, cooldown and back-off)."""


class SrmConfig(StrictModel):
    """SRM, the Self-Reflection Module (paper §3.2): Gate-1, stagnation detection, bounded Critic."""

    enabled: bool = False
    """Master switch; off = the plain SwiftSage loop (the baseline and +AMM configurations)."""
    gate: GateConfig = GateConfig()
    """Gate-1 settings."""
    stagnation: StagnationConfig = StagnationConfig()
    """Stagnation detector settings."""
    critic: SrmCriticSwitch = SrmCriticSwitch()
    """Critic switch (its settings: top-level ``critic:``)."""


class CriticConfig(StrictModel):
    """The SRM Critic, called when the agent stagnates (paper §3.2; same model as Sage in §4)."""

    model: ModelConfig = ModelConfig()
    """Language model the Critic diagnoses with (default: the embedded offline model)."""
    kind: Literal["llm", "rules"] = "llm"
    """llm = the paper's Critic (prompt critic.j2, ``model`` answers); rules = a deterministic Critic that
    proposes untried task-relevant actions and unvisited rooms from the stagnation report."""
    budget: int = Field(default=3, ge=0)
    """Critic calls allowed per episode (paper: 3; 6 lowered the score from 64.33 to 52.95)."""
    cooldown: int = Field(default=5, ge=0)
    """Env steps after a call before the next one."""
    backoff: int = Field(default=10, ge=0)
    """Env steps after an ineffective call before the next one (replaces the cooldown)."""
    effect_window: int = Field(default=5, ge=1)
    """A call is effective if the score increases within this many env steps after it."""
    max_actions: int = Field(default=5, ge=1)
    """Actions kept from one call (the paper's Critic outputs at most 5)."""
    history: int = Field(default=10, ge=0)
    """Recent turns shown in the Critic's prompt."""
    timing: Literal["report", "empty_buffer"] = "report"
    """When a report may call the Critic. report: at the step of the report, whatever the buffer holds.
    empty_buffer (authors): only while the buffer is empty; a report made while it holds actions waits
    (``pending_steps``) for the buffer to run dry and is cancelled by a reward in between."""
    pending_steps: int = Field(default=2, ge=0)
    """empty_buffer: a waiting report is still answered this many of the authors' loop steps after it
    (their ``pending_age <= 2``); older, it is dropped."""
    inject: Literal["append", "replace"] = "append"
    """append: the Critic's actions queue behind what the buffer holds. replace (authors): they become
    the buffer."""
    charge: Literal["every_call", "injected"] = "every_call"
    """What the budget and the cooldown count. every_call: each model call. injected (authors): only
    calls whose actions went into the buffer; an empty, low-quality or same-state answer costs nothing."""
    backoff_on: Literal["no_score_gain", "same_state_actions"] = "no_score_gain"
    """What starts the ``backoff``. no_score_gain: a call with no score increase within
    ``effect_window`` steps. same_state_actions (authors): an answer repeating the actions of the last
    injected call in the same state (room, inventory, observation)."""
    prompt_actions: Literal["sample", "all"] = "sample"
    """Valid actions in the prompt. sample: 40 task-relevant ones and unvisited rooms. all (authors): the
    whole valid set minus looks, room inspections and actions on the air or the agent; the answer's
    actions are kept only when they are in that list (no avoid-list filter)."""
    prompt_budget_tokens: int = Field(default=0, ge=0)
    """0: no limit. Otherwise, with ``prompt_actions: all``, a prompt estimated above this many tokens
    (``models.CHARS_PER_TOKEN``) lists only the most task-relevant valid actions that fit, then fewer
    history turns; the answer may still name any valid action of the whole list. The embedded
    configurations set it for SmolLM2's 4,096-token context (docs/fidelity.md R17)."""
    constrain: ConstrainMode = "none"
    """How the Critic's call (``kind: llm``) is constrained while the model generates
    (``models.shape``). none: not at all (the paper configurations). format: the answer is the shape
    ``parse_critic_reply`` reads (``llm.critic_shape``: a Diagnosis line, a Correction line, "Actions:",
    then ``max_actions`` numbered actions at most). valid: as format, with every action one of those the
    scheduler keeps from an answer (``llm.answerable``: the authors' list with ``prompt_actions: all``,
    else the valid actions not on the report's avoid list). An ``openai`` model needs a
    ``constraint_format`` with grammars (``llama_cpp``, ``vllm``, ``vllm_guided``)."""
    skip_low_quality: bool = False
    """Skip an answer whose actions all repeat the last actions (the step's and the three before) or all
    navigate (go to / teleport to / open door to), as the authors do."""
