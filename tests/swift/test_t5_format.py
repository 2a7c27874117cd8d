"""The Flan-T5 Swift input (swift/t5_format.py) is SwiftSage's v4 input byte for byte.

The fixtures ``fixtures/t5_v4_boil_0_step<N>.txt`` were made by an independent route, outside this
repository: the scripted episode below was played on a fresh ``ScienceWorldAdapter`` (a fresh JVM, as
here) and every state's observation, look, inventory and score was saved; a scratch script then ran
SwiftSage's own code on those states - ``add_current_place``, ``add_current_objects``,
``compose_instance_v4`` and ``sanitizeStr`` imported from SwiftSage v1's ``data_utils/data_utils.py``,
and ``clean_history`` executed from the source text of its ``eval_utils.py`` - driving them as
``eval_agent_fast_slow.py`` does (history seeded with "look around"/"N/A", the running lists cleaned in
place at every call, scores never lowered, ``step_id = step + 1``, the task text after its 18-character
header, ``sanitizeStr`` again on the result), and its output was written here unchanged. The files are
the exact strings: one line, ending with a space and no newline. Nothing here imports that code.

Checked at the time: our renderer matched the reference at all 24 states of this episode, and on 30
more episodes (random detours around gold paths of 30 tasks, easy and full simplifications), state by
state. The steps kept as fixtures show: history cleaning from the start (3), SwiftSage's in-place
teleport renaming, where an older duplicate survives while the newest line is still a teleport (10) and
is gone one step later (11), a trailing examine and the outside reached on foot (21), and more than ten
history lines with "look around" repeated (23).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.swift.data import episode_file, example, replay_rows, write_manifest
from fastslow.swift.t5 import seq2seq_pairs
from fastslow.swift.t5_format import (
    HistoryLine,
    as_percent_int,
    clean_history,
    decoded_action,
    history_lines,
    render_trajectory,
    render_v4,
    visited_places,
)

FIXTURES = Path(__file__).parent / "fixtures"
TASK, VARIATION = 0, 0  # boil
ACTIONS = [
    "look around",
    "teleport to kitchen",
    "examine stove",
    "pick up thermometer",
    "open cupboard",
    "pick up metal pot",
    "teleport to hallway",
    "teleport to kitchen",
    "teleport to hallway",
    "teleport to kitchen",
    "move metal pot to sink",
    "activate sink",
    "xyzzy",
    "deactivate sink",
    "go to outside",
    "go to kitchen",
    "pick up metal pot",
    "focus on substance in metal pot",
    "move metal pot to stove",
    "activate stove",
    "examine substance in metal pot",
    "look around",
    "look around",
]
FIXTURE_STEPS = (3, 10, 11, 21, 23)


class Played:
    """The episode's rendered input at every state, and its dataset rows (one per state acted in)."""

    def __init__(self, renders: list[str], rows: list[dict[str, object]]) -> None:
        self.renders, self.rows = renders, rows


@pytest.fixture(scope="module")
def played() -> Iterator[Played]:
    # A fresh JVM: ScienceWorld renames objects after a second reset in the same JVM.
    with ScienceWorldAdapter(simplification="easy") as env:
        first = env.reset(TASK, VARIATION)
        traj = Trajectory(
            TASK, get_task(TASK).name, VARIATION, first.task_description, first, semantics=SEMANTICS
        )
        renders, rows = [render_trajectory(traj)], []
        for action in ACTIONS:
            rows.append(example(traj, action, action))
            result = env.step(action)
            assert not result.done
            traj.record(action, "swift", result)
            renders.append(render_trajectory(traj))
        yield Played(renders, rows)


@pytest.mark.parametrize("step", FIXTURE_STEPS)
def test_input_is_swiftsages_byte_for_byte(played: Played, step: int) -> None:
    expected = (FIXTURES / f"t5_v4_boil_0_step{step}.txt").read_bytes().decode("utf-8")
    assert played.renders[step] == expected


def test_training_pairs_use_the_inference_format(played: Played, tmp_path: Path) -> None:
    """`fastslow train swift-t5` inputs, rebuilt from dataset rows, equal the live inference inputs."""
    rebuilt = [render_trajectory(traj) for _, traj in replay_rows(played.rows, SEMANTICS)]
    assert rebuilt == played.renders[:-1]
    with gzip.open(episode_file(tmp_path, TASK, VARIATION), "wt", encoding="utf-8") as fh:
        for row in played.rows:
            fh.write(json.dumps(row) + "\n")
    write_manifest(tmp_path, "train", 1, "easy")
    pairs = seq2seq_pairs(tmp_path)
    assert [source for source, _ in pairs] == played.renders[:-1]
    assert len(pairs) == len(ACTIONS)


class _Turn:
    def __init__(self, action: str, observation: str, score: int) -> None:
        self.action, self.observation, self.score = action, observation, score


def test_scores_never_decrease_and_gains_are_rises() -> None:
    lines = history_lines(
        [_Turn("a", "o", 10), _Turn("b", "o", 5), _Turn("c", "o", 20), _Turn("d", "o", -100)]
    )
    assert [(h.action, h.best, h.gain) for h in lines] == [
        ("look around", 0, 0),
        ("a", 10, 10),
        ("b", 10, 0),
        ("c", 20, 10),
        ("d", 20, 0),
    ]
    assert lines[0].observation == "N/A"


def test_scores_print_as_swiftsages_fractions_do() -> None:
    assert [as_percent_int(s) for s in (0, 3, 29, 57, 58, 67, 100)] == [0, 3, 28, 56, 57, 67, 100]


def _line(action: str, observation: str = "o") -> HistoryLine:
    return HistoryLine(action, observation, 0, 0)


def test_clean_history_rules() -> None:
    lines = [
        _line("look around"),
        _line("look around"),
        _line("examine stove"),
        _line("teleport to kitchen", "You teleport to the kitchen."),
        _line("open door to kitchen"),
    ]
    cleaned = clean_history(lines, SEMANTICS)
    # The seed line recurs within two lines: only the later copy stays; examine goes; teleports walk.
    assert [(h.action, h.observation) for h in cleaned] == [
        ("look around", "o"),
        ("go to kitchen", "You go to the kitchen."),
        ("open door to kitchen", "o"),
    ]


def test_clean_history_compares_with_the_newest_line_unrenamed() -> None:
    teleports = [_line("teleport to hallway"), _line("teleport to kitchen"), _line("teleport to hallway")]
    # The newest line is still a "teleport" when SwiftSage compares: the older "go to hallway" stays.
    assert [h.action for h in clean_history(teleports, SEMANTICS)] == [
        "go to hallway",
        "go to kitchen",
        "go to hallway",
    ]
    # One step later it has been renamed in place, and the older copy is a duplicate.
    later = [*teleports, _line("look around")]
    assert [h.action for h in clean_history(later, SEMANTICS)] == [
        "go to kitchen",
        "go to hallway",
        "look around",
    ]
    # Swift not asked since the first line (e.g. Sage's plan ran): the later teleports were never renamed.
    assert [h.action for h in clean_history(later, SEMANTICS, renamed=1)] == [
        "go to hallway",
        "go to kitchen",
        "go to hallway",
        "look around",
    ]


def test_visited_places_follow_the_walk() -> None:
    walk = ["You move to the foundry.", "You move to the outside.", "x", "You move to the greenhouse."]
    # Started outside (the look never names the outside): the first room is the first walked into.
    assert visited_places(["foundry", "greenhouse"], ["The door is open.", *walk]) == [
        "foundry",
        "outside",
        "greenhouse",
    ]
    # Started in the kitchen; a teleport says no "move to the", so the outside it leads to is not listed.
    assert visited_places(
        ["kitchen", "hallway"], ["You teleport to the outside.", "You move to the hallway."]
    ) == [
        "kitchen",
        "hallway",
    ]
    assert visited_places(["kitchen"], ["You move through the door to the outside."]) == ["kitchen"]


def test_layout_without_rooms_and_with_memories() -> None:
    class Memory:
        tag, action, observation = "success", "activate stove", "The stove is now activated."

    description = "Task Description:\nBoil water.\n"
    bare = render_v4(
        description, 0, [], "a room\n\ta green house (that is open)", "nothing", [], semantics=SEMANTICS
    )
    assert bare == (
        "Boil water. |  </s> Time: 1; Score: 0; </s> Action history: </s>"
        " <extra_id_10> look around (+0) --> N/A | "
        " </s> Current environment: a room | a greenhouse  </s> Current inventory: nothing </s> "
        " What action should you do next? </s> "
    )
    with_memory = render_v4(description, 0, [], "a room", "nothing", [], [Memory()], semantics=SEMANTICS)
    assert with_memory.endswith(
        " </s> Memories: success: activate stove --> The stove is now activated. |  </s> "
        " What action should you do next? </s> "
    )


def test_decoded_action_as_swiftsage_reads_it() -> None:
    assert decoded_action("<pad> look  around</s>") == "look around"
    assert decoded_action("<pad> <extra_id_0> open door <extra_id_1> junk</s>") == "open door"
    assert decoded_action("<pad></s>") == ""
