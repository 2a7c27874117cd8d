"""No module outside the worlds' packages writes a ScienceWorld action (issue 50): the agent takes a
world's verbs from that world's ``WorldSemantics`` (``fastslow.core.semantics``), as it takes "focus on"
(``tests/env/test_vocabulary.py``). The import side of the same rule is an import-linter contract
(pyproject.toml: "A world is its own package"), which ``tests/test_layers.py`` runs.

A ScienceWorld action literal is a string constant in code (not a docstring; comments are not strings)
that starts with one of ScienceWorld's own verbs: those no other world shares. Verbs TextWorldExpress also
has ("look around", "open", "take", "move", "read", "open door to") say nothing about which world a module
knows, so they are not searched for; and a world's package may name another world's wording
(TextWorldExpress's alias table reads a model's "pick up the key" as "take key").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "fastslow"
WORLDS = (SRC / "env" / "scienceworld", SRC / "env" / "textworldexpress")
SCIENCEWORLD_VERBS = (
    "teleport to",
    "go to",
    "pick up",
    "put down",
    "focus on",
    "wait",
    "wait1",
    "wait2",
    "activate",
    "deactivate",
    "connect",
    "disconnect",
    "pour",
    "dunk",
    "mix",
    "flush",
    "look at",
    "look in",
)
ACTION = re.compile(rf"^(?:{'|'.join(map(re.escape, SCIENCEWORLD_VERBS))})(?:\s|$)")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions (and attribute docstrings:
    a bare string statement)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    found.add(id(stmt.value))
    return found


def action_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every ScienceWorld action literal in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and ACTION.match(node.value)
    ]


def test_the_search_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(
        '"""teleport to kitchen: a docstring."""\n'
        'A = "teleport to "\n'
        'B = f"pick up {A}"\n'
        'C = ("wait", "look around", "take coin", "waiting")\n'
        '"""focus on X: an attribute docstring."""\n'
    )
    assert action_literals(sample) == [(2, "teleport to "), (3, "pick up "), (4, "wait")]


def test_no_module_outside_the_worlds_writes_a_scienceworld_action() -> None:
    found = {
        f"{path.relative_to(SRC)}:{line}": text
        for path in sorted(SRC.rglob("*.py"))
        if not any(world in path.parents for world in WORLDS)
        for line, text in action_literals(path)
    }
    assert found == {}, "ScienceWorld actions outside the worlds' packages: ask the world's semantics"
