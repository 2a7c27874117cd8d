"""The rules Critic (paper §3.2, ``critic.kind: rules``): a deterministic backend without a model.

``RulesCritic`` proposes untried task-relevant actions (the world's ``critic_verbs``), then actions
towards unvisited places (``exploration_moves``; places first when the report is a navigation loop),
never an action the report says to avoid and never a focus. Its two candidate lists,
``relevant_actions`` and ``unvisited_rooms``, are also what the LLM Critic's prompt samples
(``reflection.critic.llm``).
"""

from __future__ import annotations

import re

from fastslow.core.trajectory import Trajectory
from fastslow.events import StagnationReport
from fastslow.reflection.critic.base import MemoryFetch
from fastslow.vocab import NAVIGATION_LOOP

_LAST_OBJECT = re.compile(r" (?:to|into|on|in) ")


def room_names(traj: Trajectory) -> set[str]:
    """The places of this state and trajectory (``WorldSemantics.places``); candidates acting on them
    are left out."""
    return traj.semantics.places(traj.current.valid_actions, traj.visited_rooms)


def relevant_actions(traj: Trajectory, limit: int) -> list[str]:
    """Valid actions on objects the task description names: useful verbs first, then more words shared
    with the task, then shorter. Actions on rooms ("move x to kitchen", "look at kitchen") and burning
    things ("use lighter on x") are left out: they rarely help and can destroy what the task needs."""
    content_words = traj.semantics.content_words
    words = content_words(traj.task_description)
    rooms = room_names(traj)
    scored = []
    for action in traj.current.valid_actions:
        verb = traj.semantics.verb_of(action)
        rank = traj.semantics.critic_verbs.get(verb)
        if rank is None:
            continue
        objects = action[len(verb) + 1 :]
        if objects in rooms or _LAST_OBJECT.split(objects)[-1] in rooms:
            continue
        if verb == "use" and "lighter" in objects:
            continue
        overlap = len(content_words(objects) & words)
        if overlap:
            scored.append((rank, -overlap, len(action), action))
    return [a for *_, a in sorted(scored)[:limit]]


def unvisited_rooms(traj: Trajectory) -> list[str]:
    """Actions towards places not seen yet (``WorldSemantics.exploration_moves``: ScienceWorld's
    teleports), those naming a word of the task first."""
    content_words = traj.semantics.content_words
    words = content_words(traj.task_description)
    cur = traj.current
    fresh = traj.semantics.exploration_moves(cur.look, cur.valid_actions, traj.visited_rooms)
    return sorted(fresh, key=lambda a: (not (content_words(a) & words), a))


class RulesCritic:
    """Deterministic Critic: untried task-relevant actions, then unvisited rooms (or rooms first when
    the agent is circling between rooms); never an action the report says to avoid, never a focus."""

    kind = "rules"

    def __init__(self, max_actions: int = 5) -> None:
        self.max_actions = max_actions

    def propose(
        self, report: StagnationReport, traj: Trajectory, memories: MemoryFetch
    ) -> tuple[str, list[str]]:
        tried = {t.action for t in traj.turns}
        avoid = set(report.avoid)
        local = [
            a
            for a in relevant_actions(traj, limit=10 * self.max_actions)
            if a not in tried and a not in avoid
        ]
        rooms = [a for a in unvisited_rooms(traj) if a not in avoid]
        # Buffered actions run in order: after a teleport the local actions of this room would be
        # dropped by Gate-1, so local ones go first unless the loop is itself about navigation.
        n_local = 0 if report.pattern == NAVIGATION_LOOP else min(3, len(local))
        actions = local[:n_local] + rooms
        actions = (actions + local[n_local:])[: self.max_actions]
        diagnosis = (
            f"{report.pattern} over steps {', '.join(map(str, report.evidence_steps))}; "
            f"trying {min(n_local, len(actions))} untried task-relevant action(s) and unvisited rooms."
        )
        return diagnosis, actions
