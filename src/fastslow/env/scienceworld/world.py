"""ScienceWorld as a ``fastslow.env.world.World``: today's functions, unchanged, behind the seam.

The task table (``fastslow.env.tasks``), the episode sets (``fastslow.env.episodes.select_episodes``) and
the adapter (``fastslow.env.scienceworld.adapter.ScienceWorldAdapter``, imported when an env is made) are
ScienceWorld's own modules; this one only wraps them, so a ScienceWorld run does exactly what it did
before the seam existed. The configured step limit is every task's (SwiftSage's 300).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from fastslow.core.semantics import Alternative, Feedback, WorldEvidence, WorldSemantics
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld import paraphrase
from fastslow.env.scienceworld import semantics as sw
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.env.scienceworld.tasks import all_tasks, get_task
from fastslow.env.scienceworld.wrappers import ValidFilter
from fastslow.env.tasks import TaskInfo
from fastslow.env.wrappers import Env

if TYPE_CHECKING:
    from fastslow.env.config import EnvConfig
    from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
    from fastslow.env.world import World


CRITIC_VERBS: dict[str, int] = {
    "pick up": 0,
    "read": 0,
    "open": 1,
    "look at": 2,
    "activate": 2,
    "mix": 2,
    "pour": 3,
    "move": 3,
    "use": 4,
    "connect": 4,
    "dunk": 4,
    "look in": 5,
    "close": 5,
    "deactivate": 5,
    "put down": 6,
}
"""The rules Critic's verbs in ScienceWorld, most useful first for getting unstuck (take and read what
the task names, open containers, look, operate devices, move things). Left out: focus is irreversible
(a wrong one fails the task), eat and flush destroy objects, navigation is proposed separately, wait,
look around and inventory change nothing."""


class ScienceWorldEvidence:
    """ScienceWorld's readers of evidence (``WorldEvidence``): its judgement tasks' "If ..." sentences,
    thermometer readings, device states and container listings (``fastslow.env.scienceworld.semantics``)."""

    states_of_matter = sw.STATES_OF_MATTER

    @staticmethod
    def alternatives(task_description: str) -> tuple[Alternative, ...]:
        return sw.conditional_alternatives(task_description)

    @staticmethod
    def reading(observation: str) -> float | None:
        return sw.thermometer_reading(observation)

    @staticmethod
    def device_states(text: str) -> frozenset[str]:
        return sw.device_states(text)

    @staticmethod
    def described_contents(text: str) -> dict[str, tuple[str, ...]]:
        return sw.described_contents(text)


EVIDENCE: WorldEvidence = ScienceWorldEvidence()


class ScienceWorldSemantics:
    """ScienceWorld's answers to ``fastslow.core.semantics.WorldSemantics``: the functions of
    ``fastslow.env.scienceworld.semantics`` and Gate-1's paraphrase tables
    (``fastslow.env.scienceworld.paraphrase``)."""

    name = "scienceworld"
    success_score = sw.SUCCESS_SCORE
    failure_score = sw.FAILURE_SCORE
    default_failure_markers = sw.DEFAULT_FAILURE_MARKERS
    navigation_verbs = sw.NAVIGATION_VERBS
    argument_joiners = sw.ARGUMENT_JOINERS
    commitment_verb: str | None = sw.FOCUS
    evidence: WorldEvidence | None = EVIDENCE

    @staticmethod
    def normalize(action: str) -> str:
        return sw.normalize(action)

    @staticmethod
    def verb_of(action: str) -> str:
        return sw.verb_of(action)

    @staticmethod
    def arguments(action: str) -> list[str]:
        return sw.arguments(action)

    @staticmethod
    def rewrite(norm: str) -> str:
        return paraphrase.apply_aliases(norm)

    @staticmethod
    def reroute(norm: str) -> str | None:
        return paraphrase.reroute(norm)

    @staticmethod
    def strip_qualifiers(norm: str) -> str:
        return paraphrase.strip_qualifiers(norm)

    critic_verbs: Mapping[str, int] = CRITIC_VERBS

    @staticmethod
    def exploration_moves(look: str, valid_actions: Sequence[str], visited: Iterable[str]) -> list[str]:
        """The "teleport to" actions towards rooms not in ``visited``."""
        seen = set(visited)
        prefix = sw.TELEPORT + " "
        return [a for a in valid_actions if a.startswith(prefix) and a[len(prefix) :] not in seen]

    @staticmethod
    def go_to(place: str) -> tuple[str, ...]:
        """ "teleport to <room>" (the "easy" simplification's), and "go to <room>" (without it)."""
        return (sw.teleport_to(place), f"go to {place}")

    @staticmethod
    def location(look: str) -> str:
        """ "This room is called the kitchen." -> "kitchen" (``room_of``)."""
        return sw.room_of(look)

    @staticmethod
    def places(valid_actions: Sequence[str], visited: Iterable[str] = ()) -> set[str]:
        """The rooms (``known_rooms``: teleport targets and rooms visited)."""
        return sw.known_rooms(valid_actions, visited)

    @staticmethod
    def classify_feedback(observation: str, markers: Iterable[str] | None = None) -> Feedback:
        return sw.classify_feedback(observation, sw.DEFAULT_FAILURE_MARKERS if markers is None else markers)


SEMANTICS = ScienceWorldSemantics()
"""ScienceWorld's ``WorldSemantics`` (``World.semantics``; ``Trajectory.semantics`` of its episodes)."""


class ScienceWorld:
    """ScienceWorld's 30 tasks (ids: alphabetical task names, as SwiftSage and the paper number them)."""

    name = "scienceworld"
    packages: tuple[str, ...] = ("scienceworld",)
    semantics: WorldSemantics = SEMANTICS

    def make_env(self, env: EnvConfig) -> ScienceWorldAdapter:
        from fastslow.env.scienceworld.adapter import ScienceWorldAdapter

        return ScienceWorldAdapter(
            env.simplification, jvm_timeout_s=env.jvm_timeout_s, hash_codes=env.hash_codes
        )

    def wrap(self, env: Env, settings: EnvConfig) -> Env:
        """The authors' valid-action filter (``wrappers.ValidFilter``) with ``env.valid_filter: authors``."""
        return ValidFilter(env) if settings.valid_filter == "authors" else env

    def tasks(self) -> tuple[TaskInfo, ...]:
        return all_tasks()

    def task(self, task: int | str) -> TaskInfo:
        """By id (0-29), ScienceWorld name or SwiftSage id (``1-1``): ``tasks.get_task``."""
        return get_task(task)

    def family(self, task_id: int) -> str:
        """The topic of the task's SwiftSage id (``1`` of ``1-1``: matter, measurement, ...)."""
        return get_task(task_id).swiftsage_id.split("-")[0]

    def select(
        self,
        set_name: str,
        tasks: str | None = None,
        variations: str | None = None,
        limit_per_task: int | None = None,
    ) -> list[Episode]:
        """``episodes.select_episodes``: test, dev, warmup, train, all; ``--tasks`` takes ids."""
        return select_episodes(set_name, tasks, variations, limit_per_task)

    def step_limit(self, task_id: int, configured: int) -> int:
        return configured

    def replay_caveat(self, env: EnvConfig) -> str | None:
        """On the JVM's own identity hash codes ScienceWorld's object order depends on the JVM's
        history and timing (``fastslow.env.scienceworld``, Determinism); on constant codes it does not."""
        if env.hash_codes == "default":
            return (
                "was played on the JVM's own identity hash codes (env.hash_codes: default), so "
                "ScienceWorld's object order may differ when its steps are replayed"
            )
        return None


WORLD: World = ScienceWorld()
