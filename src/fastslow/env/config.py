"""The environment's config section (paper §4: the environment settings of the evaluation), owned by
``env`` and composed into ``RunConfig`` by ``fastslow.config``: which world a run plays (``world``,
``fastslow.env.world``), ScienceWorld's settings, and those every world shares (step limit, JVM timeout)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from fastslow.strict import StrictModel

SWIFTSAGE_FAILURE_MARKERS: tuple[str, ...] = ("can't", "not", "doesn't")
"""SwiftSage's failure-message words, ``env.failure_markers``' default (ScienceWorld's semantics reads
refusals with them; a world that reads refusals by its own rules ignores them)."""
SCIENCEWORLD_SIMPLIFICATIONS: tuple[str, ...] = (
    "teleportAction",
    "selfWateringFlowerPots",
    "openContainers",
    "openDoors",
    "noElectricalAction",
)
"""ScienceWorld's simplification labels: ``SimplifierProcessor.getPossibleSimplifications()`` in the
simulator (scienceworld.jar, ``scienceworld/runtime/SimplifierProcessor.scala``), listed in the Python
wrapper's ``ScienceWorldEnv.get_possible_simplifications``. Kept here so a config is checked without
starting a JVM; tests/test_config.py compares it with the running simulator's list."""
SIMPLIFICATION_PRESETS: tuple[str, ...] = ("easy",)
"""Names the wrapper's ``ScienceWorldEnv.load`` accepts besides the labels: easy = all of them."""

WorldName = Literal["scienceworld", "textworldexpress"]
"""The worlds fastslow plays (``fastslow.env.world.get_world`` imports each one's package)."""
DEFAULT_WORLD: WorldName = "scienceworld"
"""The world of a config, a log header or a metrics record that names none (everything written before
a second world existed)."""
SCIENCEWORLD_ONLY: dict[str, object] = {
    "simplification": "easy",
    "valid_filter": "none",
    "hash_codes": "constant",
}
"""Settings only ScienceWorld reads, with their defaults: another world refuses any other value rather
than ignore it (``EnvConfig`` checks). ``jvm_per_episode`` is not one: every world's adapter starts a
fresh JVM after ``close``, so it means the same in each."""


class EnvConfig(StrictModel):
    """The environment of a run: its world, and that world's settings (ScienceWorld's: paper §4,
    SwiftSage's evaluation setup)."""

    world: WorldName = DEFAULT_WORLD
    """The text world the run plays: "scienceworld" (the paper's, 30 tasks; ``fastslow.env.tasks``) or
    "textworldexpress" (TextWorldExpress's games as ``fastslow.env.textworldexpress``'s benchmark.yaml
    defines them: task ids are game indices, variations TWX seeds). The world decides the adapter,
    the task table, the episode sets and each task's step limit (``fastslow.env.world.World``).
    ScienceWorld's own settings (``SCIENCEWORLD_ONLY``: ``simplification``, ``valid_filter``, ...) must
    stay at their defaults in another world: a config that changes them there is refused."""
    simplification: str = "easy"
    """Comma-separated ScienceWorld simplifications, no spaces ("" = none); "easy" = teleport, open
    doors/containers, self-watering pots, no electrical actions outside electrical tasks. ScienceWorld
    only."""
    step_limit: int = Field(default=300, ge=1)
    """Maximum env steps per episode (SwiftSage used 300; its baselines 100). In TextWorldExpress an
    episode stops at the smaller of this and its game's own limit (benchmark.yaml)."""
    jvm_timeout_s: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    """A single JVM call taking longer than this ends the episode with a typed error instead of hanging."""
    jvm_per_episode: bool = False
    """Start a fresh ScienceWorld JVM for every episode (costs a JVM start, ~4 CPU-s, per episode).
    Only matters with ``hash_codes: default``: then ScienceWorld orders objects by the JVM's history, so
    an episode's texts depend on what its worker's JVM played before; with this on they do not, and
    ``fastslow fork`` / ``attribute`` replay nothing before the episode (docs/forks.md)."""
    hash_codes: Literal["constant", "default"] = "constant"
    """The ScienceWorld JVM's identity hash codes, which order everything ScienceWorld keeps in sets
    (objects in texts, ambiguity options, valid actions, which object ticks first: ``fastslow.env.
    scienceworld``). "constant": all equal (``-XX:hashCode=2``), so an episode is a function of its task,
    variation and actions: the same on any JVM whatever it played before (a fork replays no JVM history),
    for ~20% more JVM time per step. "default": the JVM's own, lazily drawn codes: texts depend on the
    JVM's history and even on timing, so two fresh JVMs can disagree on the same actions (runs made
    before this setting existed played this; ``fastslow fork`` reads their headers so). ScienceWorld
    only."""
    failure_markers: list[str] = list(SWIFTSAGE_FAILURE_MARKERS)
    """Words that make an observation a refusal (``Feedback.failure``; whole words, case-insensitive):
    one set for SwiftSage's failure messages, SRM's invalid loop and everything else that classifies
    ScienceWorld's feedback (``fastslow.env.scienceworld.semantics``). "No known action matches that
    input." is invalid input whatever the markers."""
    valid_filter: Literal["none", "authors"] = "none"
    """Which valid actions the agent is shown. "none": ScienceWorld's own list. "authors": the paper
    authors' filtered list (``fastslow.env.scienceworld.valid.filter_valid``: "open door to <room>" and
    "wait"/"wait1" added; focus on the agent, the air or a room, focus/examine actions sharing no word
    with the task description, and door actions other than opening removed), applied to every
    ``StepResult`` by the ``ValidFilter`` env wrapper. The paper configurations use "authors"; the fast
    pathway (Swift) is measured with both. ScienceWorld only."""

    @field_validator("failure_markers")
    @classmethod
    def _words(cls, value: list[str]) -> list[str]:
        # A blank marker would match between any two spaces and make every observation a failure.
        blank = [i for i, marker in enumerate(value) if not marker.strip()]
        if blank:
            raise ValueError(f"a failure marker must be a word, not blank (item {blank[0]})")
        return value

    @field_validator("simplification")
    @classmethod
    def _known_simplifications(cls, value: str) -> str:
        # Our adapter calls the simulator's load directly, which skips the wrapper's check: an unknown
        # label would load a broken game and score -100 at step 0 instead of failing here.
        known = (*SIMPLIFICATION_PRESETS, *SCIENCEWORLD_SIMPLIFICATIONS)
        unknown = [name for name in value.split(",") if name and name not in known]
        if unknown:
            raise ValueError(
                f"unknown simplification {', '.join(map(repr, unknown))}; ScienceWorld knows "
                f"{', '.join(known)} (comma-separated, no spaces; '' = none)"
            )
        return value

    @model_validator(mode="after")
    def _world_settings(self) -> EnvConfig:
        # ScienceWorld's settings mean nothing to another world's adapter: a run that asked for them
        # would quietly play without them, so it is refused instead.
        if self.world != "scienceworld":
            for key, default in SCIENCEWORLD_ONLY.items():
                value = getattr(self, key)
                if value != default:
                    raise ValueError(
                        f"env.{key} {value!r} is a ScienceWorld setting; env.world {self.world} has no "
                        f"such thing (leave it at {default!r})"
                    )
        return self
