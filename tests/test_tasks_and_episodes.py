import time
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.env.episodes import MAX_SEEDS
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.env.scienceworld.tasks import all_tasks, get_task
from fastslow.env.tasks import length_group
from fastslow.errors import UsageError

# SwiftSage's grouping by mean oracle length (PAPER_FACTS); tasks 3 and 26 sit near a boundary.
SWIFTSAGE_GROUPS = {
    "short": {3, 5, 6, 7, 8, 13, 17, 18, 19, 25},
    "medium": {2, 4, 12, 20, 26, 27, 28, 29},
    "long": {0, 1, 9, 10, 11, 14, 15, 16, 21, 22, 23, 24},
}


def test_task_table_is_alphabetical_with_swiftsage_ids() -> None:
    tasks = all_tasks()
    assert len(tasks) == 30
    assert [t.name for t in tasks] == sorted(t.name for t in tasks)
    assert get_task(0).name == "boil" and get_task(0).swiftsage_id == "1-1"
    assert get_task(29).name == "use-thermometer" and get_task(29).swiftsage_id == "2-1"
    assert get_task("1-1") is get_task("boil") is get_task("0") is get_task(0)


def test_splits_are_disjoint_and_cover_all_variations() -> None:
    for t in all_tasks():
        train, dev, test = (set(t.variations[s]) for s in ("train", "dev", "test"))
        assert not (train & dev or train & test or dev & test)
        assert train | dev | test == set(range(t.n_variations))


def test_groups_follow_oracle_lengths_and_mostly_agree_with_swiftsage() -> None:
    assert length_group(20) == "short" and length_group(20.5) == "medium" and length_group(51) == "long"
    disagree = [t.task_id for t in all_tasks() if t.task_id not in SWIFTSAGE_GROUPS[t.group]]
    assert set(disagree) <= {3, 26}, disagree


def test_set_sizes() -> None:
    assert len(select_episodes("test")) == 271
    assert len(select_episodes("warmup")) == 60
    assert len(select_episodes("dev")) <= 300
    assert len(select_episodes("test", limit_per_task=1)) == 30


def test_explicit_selections() -> None:
    eps = select_episodes("test", tasks="0,3,5-8", limit_per_task=2)
    assert sorted({e.task_id for e in eps}) == [0, 3, 5, 6, 7, 8]
    assert all(e.variation in get_task(e.task_id).variations["test"] for e in eps)
    eps = select_episodes("all", tasks="13", variations="0-2")
    assert [(e.task_id, e.variation) for e in eps] == [(13, 0), (13, 1), (13, 2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"set_name": "nope"}, "unknown episode set"),
        ({"tasks": "30"}, "unknown task id 30"),
        ({"tasks": "a-b"}, "bad task selection"),
        ({"tasks": "0", "variations": "0-2"}, "selection is empty"),
        ({"limit_per_task": 0}, "limit-per-task"),
    ],
)
def test_bad_selections(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        select_episodes(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tasks", "0-99999999999"], "unknown task id 99999999999 (task ids run from 0 to 29)"),
        (["--variations", "0-99999999999"], "variation ids run from 0 to 1385 in the task with the most"),
        (["--tasks", "3", "--variations", "7,99999999999"], "variation ids run from 0 to 35 in tasks 3"),
        (["--seeds", "0-99999999999"], f"bad seed selection '0-99999999999': more than {MAX_SEEDS} seeds"),
        (["--seeds", "4294967296"], "seed 4294967296 is too large (at most 2147483647)"),
        (["--variations", "5-2"], "range 5-2 runs backwards"),
    ],
)
def test_a_huge_selection_is_one_line_before_anything_is_allocated(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each range is bounded by what exists (30 tasks, a task's variations, a sane number of seeds)
    on the numbers as written: no list of 10^11 ids is built, so the refusal is immediate."""
    out = tmp_path / "r"
    started = time.monotonic()
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--config", "oracle", "--set", "all", *argv, "--out", str(out)])
    assert time.monotonic() - started < 5
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert not out.exists()
