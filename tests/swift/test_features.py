"""Imitation Swift features: action parsing and the feature matrix."""

from __future__ import annotations

from fastslow.swift.features import (
    DENSE,
    ActionTable,
    SwiftState,
    arguments,
    dense_features,
    feature_index,
    verb_of,
)


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
