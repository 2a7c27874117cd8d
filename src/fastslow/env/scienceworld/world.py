"""ScienceWorld as a ``fastslow.env.world.World``: today's functions, unchanged, behind the seam.

The task table (``fastslow.env.tasks``), the episode sets (``fastslow.env.episodes.select_episodes``) and
the adapter (``fastslow.env.scienceworld.adapter.ScienceWorldAdapter``, imported when an env is made) are
ScienceWorld's own modules; this one only wraps them, so a ScienceWorld run does exactly what it did
before the seam existed. The configured step limit is every task's (SwiftSage's 300).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastslow.core.semantics import (
    Alternative,
    AnswerBoxes,
    CommitmentRules,
    Feedback,
    PromptFacts,
    WorldEvidence,
    WorldSemantics,
)
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld import answer_boxes as boxes
from fastslow.env.scienceworld import gold, grounding, paraphrase
from fastslow.env.scienceworld import semantics as sw
from fastslow.env.scienceworld.authors import AUTHORS
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.env.scienceworld.tasks import all_tasks, get_task
from fastslow.env.scienceworld.valid import FOCUS_COUNT
from fastslow.env.scienceworld.wrappers import ValidFilter
from fastslow.env.tasks import TaskInfo
from fastslow.env.wrappers import Env

if TYPE_CHECKING:
    from pathlib import Path

    from fastslow.core.authors import AuthorsProfile, Demo
    from fastslow.core.focus import FocusJudge
    from fastslow.core.procedures import TaskProcedures
    from fastslow.env.bench import AdapterBench, SampleText
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


VALID_FILTERS: dict[str, Callable[[Env], Env]] = {"none": lambda env: env, "authors": ValidFilter}
"""The valid-action views by ``env.valid_filter``: ScienceWorld's own list, or the authors' filter."""


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

    @staticmethod
    def answer_boxes(task_description: str, history: Sequence[tuple[str, str, int]]) -> AnswerBoxes | None:
        """The thermometer tasks' boxes (``answer_boxes``)."""
        return boxes.answer_boxes(task_description, history)


EVIDENCE: WorldEvidence = ScienceWorldEvidence()


class ScienceWorldCommitment:
    """ScienceWorld's focus rules (``CommitmentRules``; ``FocusObject`` is what a focus landed on): the
    functions of ``fastslow.env.scienceworld.semantics`` that Swift's safety policy applies."""

    @staticmethod
    def landed(target: str, observation: str, look: str, inventory: str) -> sw.FocusObject | None:
        return sw.landed_object(target, observation, look, inventory)

    @staticmethod
    def same(now: sw.FocusObject, earlier: sw.FocusObject) -> bool:
        return now.same(earlier)

    @staticmethod
    def repeats(target: str, look: str, inventory: str, landed: Sequence[sw.FocusObject]) -> bool:
        return sw.focus_repeats(target, look, inventory, landed) is not None

    @staticmethod
    def contents_mismatch(target: str, look: str, inventory: str, task_description: str) -> bool:
        return sw.focus_contents_mismatch(target, look, inventory, task_description) is not None

    @staticmethod
    def destinations(task_description: str) -> frozenset[str]:
        return sw.task_destinations(task_description)

    @staticmethod
    def names_part_of_phrase(target: str, task_description: str) -> bool:
        return sw.names_part_of_focus_phrase(target, task_description)

    @staticmethod
    def asks_which(observation: str) -> bool:
        """ScienceWorld's "Ambiguous request" question (``semantics.AMBIGUOUS``) opens the observation."""
        return observation.startswith(sw.AMBIGUOUS)

    # SRM's general focus rules (reflection.focus, reflection.gate)
    non_targets: frozenset[str] = sw.NON_OBJECTS

    @staticmethod
    def target(action: str) -> str | None:
        return sw.focus_target(action)

    @staticmethod
    def head(target: str) -> str:
        return sw.focus_head(target)

    @staticmethod
    def confirmed(observation: str) -> str | None:
        return sw.focus_confirmed(observation)

    @staticmethod
    def stated_count(task_description: str) -> int | None:
        return sw.stated_focus_count(task_description)

    @staticmethod
    def instructed_count(task_description: str) -> int:
        return sw.instructed_focus_count(task_description)

    @staticmethod
    def authors_budget(task_id: int) -> int:
        """``valid.FOCUS_COUNT``, 1 for an unknown task id, as their lookup defaults."""
        return FOCUS_COUNT.get(task_id, 1)

    @staticmethod
    def repeated(target: str, look: str, inventory: str, landed: Sequence[sw.FocusObject]) -> str | None:
        earlier = sw.focus_repeats(target, look, inventory, landed)
        return None if earlier is None else str(earlier.name)

    @staticmethod
    def unnamed_contents(target: str, look: str, inventory: str, task_description: str) -> str | None:
        return sw.focus_contents_mismatch(target, look, inventory, task_description)


COMMITMENT: CommitmentRules[sw.FocusObject] = ScienceWorldCommitment()


PROMPT_FACTS = PromptFacts(
    agent="does science experiments in ScienceWorld, a text world",
    critic_world="ScienceWorld, a text-based science simulator",
    action_forms=(
        "look around | look at OBJ | look in OBJ | read OBJ | inventory | task",
        "teleport to LOC | open OBJ | close OBJ | activate OBJ | deactivate OBJ",
        "pick up OBJ | put down OBJ | move OBJ to OBJ | pour OBJ into OBJ | dunk OBJ into OBJ | mix OBJ",
        "connect OBJ to OBJ | disconnect OBJ | use OBJ on OBJ | eat OBJ | flush OBJ",
        "wait | wait1 | focus on OBJ",
    ),
    places_word="a room",
    rules=(
        '"focus on OBJ" tells the world which object the task is about; focusing on a wrong object fails '
        "the task,",
        "so focus only on an object the task names. Use object names exactly as the observations write them.",
    ),
    example_actions=(
        ("teleport to kitchen", "You teleport to the kitchen."),
        ("look around", "This room is called the kitchen."),
    ),
    navigation_forms=("go to", "teleport to", "open door to"),
    first_words=frozenset(
        {
            *["look", "teleport", "go", "open", "close", "activate", "deactivate", "pick", "put", "move"],
            *["pour", "dunk", "mix", "connect", "disconnect", "use", "eat", "flush", "wait", "wait1"],
            *["wait2", "focus", "read", "inventory", "task", "examine", "take"],
        }
    ),
    func_joiners=(
        ("move", "to"),
        ("connect", "to"),
        ("pour", "into"),
        ("dunk", "into"),
        ("use", "on"),
        ("put", "in"),
    ),
)
"""What Sage's and the Critic's prompts say about ScienceWorld."""


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

    @staticmethod
    def content_words(text: str) -> set[str]:
        """``semantics.content_words``: without ``DESCRIPTION_STOPWORDS``, one-letter words left out."""
        return sw.content_words(text)

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

    commitment: CommitmentRules[Any] | None = COMMITMENT
    restart_actions = frozenset({sw.RESET_TASK})
    invalid_reply: str | None = sw.NO_MATCH
    observe_only = sw.OBSERVE_ONLY

    @staticmethod
    def gold_spellings(action: str) -> list[str]:
        """The renames of ScienceWorld's gold paths (``gold.rename_candidates``)."""
        return gold.rename_candidates(action)

    @staticmethod
    def simplify_gold(actions: Sequence[str]) -> list[str]:
        """The "easy" rewrite (``gold.rewrite_for_easy``): doors open, teleports."""
        return gold.rewrite_for_easy(actions)

    authors: AuthorsProfile | None = AUTHORS
    prompt_facts = PROMPT_FACTS
    rooms = sw.ROOMS
    idle_actions: tuple[str, ...] = ("wait", "wait1", "wait2")
    action_word = sw.ACTION_WORD

    @staticmethod
    def paraphrases(action: str) -> tuple[str, ...]:
        """SwiftSage's synonyms (``grounding.paraphrases``)."""
        return grounding.paraphrases(action)

    @staticmethod
    def walked(action: str, observation: str) -> tuple[str, str] | None:
        """A teleport as a walk: "teleport" read as "go" in the action and its observation (SwiftSage's
        T5 format)."""
        if not action.startswith(sw.TELEPORT):
            return None
        return action.replace("teleport", "go"), observation.replace("teleport", "go")

    @staticmethod
    def ambiguity_options(observation: str) -> dict[str, str]:
        """The options of an "Ambiguous request", ScienceWorld's locations removed (``semantics.
        ambiguous_options``, ``strip_locations``)."""
        options = sw.ambiguous_options(observation)
        return {str(i): sw.strip_locations(option) for i, option in enumerate(options)}


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
        return VALID_FILTERS[settings.valid_filter](env)

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

    def sage_demos(self, task_id: int) -> tuple[Demo, ...]:
        """(): ScienceWorld's demos are the authors' profile's, in their FUNC grammar (``AUTHORS.demos``)."""
        return ()

    def replay_caveat(self, env: EnvConfig) -> str | None:
        """On the JVM's own identity hash codes ScienceWorld's object order depends on the JVM's
        history and timing (``fastslow.env.scienceworld``, Determinism); on constant codes it does not."""
        if env.hash_codes == "default":
            return (
                "was played on the JVM's own identity hash codes (env.hash_codes: default), so "
                "ScienceWorld's object order may differ when its steps are replayed"
            )
        return None

    def bench_env(self, tasks: str | None, steps: int | None, say: Callable[[str], None]) -> AdapterBench:
        """Gold paths through the stock wrapper and the adapter, without and with "easy"
        (``bench.adapter_bench``); takes ``--tasks``, refuses ``--steps``."""
        from fastslow.env.scienceworld.bench import adapter_bench

        return adapter_bench(tasks, steps, say)

    @property
    def sample_text(self) -> SampleText:
        """``bench.SAMPLE_TEXT``: ScienceWorld's rooms and verbs, its tasks' objects, typical observations."""
        from fastslow.env.scienceworld.bench import SAMPLE_TEXT

        return SAMPLE_TEXT

    def rebuild_task_table(self, out: Path | None, say: Callable[[str], None]) -> Path:
        """``tasktable.write_task_table``: every task loaded on one JVM, the test set's gold paths
        measured (minutes)."""
        from fastslow.env.scienceworld.tasktable import write_task_table

        return write_task_table(out, say)

    def task_procedures(self) -> TaskProcedures:
        """``procedures.logic.TaskLogic``: the task procedures and judgements of one worker (docs/swift.md,
        "Task procedures")."""
        from fastslow.env.scienceworld.procedures.logic import TaskLogic

        return TaskLogic()

    def focus_judge(self) -> FocusJudge:
        """``procedures.focus.TaskFocusRules``: per-task budgets, the named-target rule, the task orders."""
        from fastslow.env.scienceworld.procedures.focus import TaskFocusRules

        return TaskFocusRules()

    def rebuild_knowledge(
        self,
        name: str,
        out: Path | None,
        tasks: Sequence[int] | None,
        per_task: int | None,
        say: Callable[[str], None],
        commit: str | None,
    ) -> tuple[Path, dict[str, int]]:
        """``procedures.knowledge.rebuild``: substances, paints, circuits, focus-budgets; and sage-demos,
        the authors' demo trajectories (``demos.build_demos``, 2 per task)."""
        if name == "sage-demos":
            import json

            from fastslow.env.scienceworld.demos import build_demos, demos_path

            data = build_demos(tasks, progress=say, commit=commit)
            target = out or demos_path()
            target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            return target, {"tasks": len(data["demos"]), "demos": sum(len(d) for d in data["demos"].values())}
        from fastslow.env.scienceworld.procedures.knowledge import rebuild

        return rebuild(name, out, tasks, per_task, say, commit)


WORLD: World = ScienceWorld()
