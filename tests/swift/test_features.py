"""Imitation Swift features: action parsing, the feature matrix, the thermometer answer-box feature."""

from __future__ import annotations

import numpy as np

from fastslow.swift.features import (
    DENSE,
    ActionTable,
    SwiftState,
    arguments,
    dense_features,
    feature_index,
    verb_of,
)

TASK = (
    "Your task is to measure the melting point of chocolate. First, focus on the thermometer. "
    "If the melting point of chocolate is above 50.0 degrees celsius, focus on the blue box. "
    "If the melting point of chocolate is below 50.0 degrees celsius, focus on the orange box."
)
ACTIONS = ["focus on blue box", "focus on orange box", "open oven"]


def state(history: list[tuple[str, str, int]]) -> SwiftState:
    return SwiftState("measure-melting-point-known-substance", TASK, 0, "", "", history, [], ACTIONS)


def box_columns(st: SwiftState) -> list[tuple[float, float]]:
    table = ActionTable()
    x = dense_features(table, table.ids(ACTIONS), st)
    agree, unmeasured = DENSE.index("box_agrees"), DENSE.index("box_unmeasured")
    return [(float(r[agree]), float(r[unmeasured])) for r in x]


def test_parsing() -> None:
    assert verb_of("focus on red box") == "focus on"
    assert arguments("move metal pot to stove") == ["metal pot", "stove"]
    assert arguments("teleport to kitchen") == ["kitchen"]


def test_feature_matrix_shapes_and_overlap() -> None:
    actions = ["focus on water", "open oven", "teleport to kitchen"]
    st = SwiftState(
        "boil", "Your task is to boil water.", 0, "", "", [("open oven", "ok", 0)], ["kitchen"], actions
    )
    table = ActionTable()
    ids = table.ids(actions)
    x = dense_features(table, ids, st)
    assert x.shape == (3, len(DENSE))
    assert x[0, DENSE.index("in_task")] == 1.0 and x[1, DENSE.index("in_task")] == 0.0
    assert x[1, DENSE.index("last_action")] == 1.0
    assert x[2, DENSE.index("visited_room")] == 1.0
    idx, val = feature_index(table, ids, st)
    assert idx.shape == val.shape and idx.min() >= 0
    small, _ = feature_index(table, ids, st, buckets=1 << 16)
    assert small.max() < 1 << 16 and np.array_equal(small, idx & ((1 << 16) - 1))


def test_box_feature_reads_the_thermometer_against_the_threshold() -> None:
    # No reading yet: both boxes are unmeasured, other actions untouched.
    assert box_columns(state([])) == [(0.0, 1.0), (0.0, 1.0), (0.0, 0.0)]
    # A solid at 20 degrees proves nothing about a 50-degree threshold ...
    solid_low = [("use thermometer on chocolate", "the thermometer measures a temperature of 20 degrees", 0)]
    assert box_columns(state(solid_low))[0] == (0.0, 1.0)
    # ... a solid at 60 proves "above", and a liquid at 40 means "below".
    solid_high = [("use thermometer on chocolate", "the thermometer measures a temperature of 60 degrees", 0)]
    assert box_columns(state(solid_high))[:2] == [(1.0, 0.0), (-1.0, 0.0)]
    liquid = [
        ("use thermometer on liquid chocolate", "the thermometer measures a temperature of 40 degrees", 0)
    ]
    assert box_columns(state(liquid))[:2] == [(-1.0, 0.0), (1.0, 0.0)]


def test_task_template_keys_are_the_same_whatever_the_cache_holds() -> None:
    """A task description's template keys (``focus on <T>`` for chocolate's task) do not depend on
    which actions, in which order, the cache met before, nor on other descriptions in between."""
    other = "Your task is to boil water. First, focus on the water."
    actions = [*ACTIONS, "focus on chocolate", "focus on water", "move chocolate to oven", "wait 10"]
    fresh = ActionTable()
    ids = fresh.ids(actions)
    want = fresh.task_keys(ids, TASK)
    table = ActionTable()
    ids = table.ids(actions)
    for part in (ids[3:5], ids[::-1], ids[:2]):  # a few at a time, reversed, with another task between
        assert (table.task_keys(part, TASK) == want[[list(ids).index(i) for i in part]]).all()
        table.task_keys(ids, other)
    assert (table.task_keys(ids, TASK) == want).all()
    # a word the task names is <T>: "focus on chocolate" here is "focus on water" in the boiling task,
    # and neither is the other action under the same task
    chocolate, water = actions.index("focus on chocolate"), actions.index("focus on water")
    assert table.task_keys(ids[[water]], other)[0] == want[chocolate]
    assert table.task_keys(ids[[chocolate]], other)[0] != want[chocolate] != want[water]
