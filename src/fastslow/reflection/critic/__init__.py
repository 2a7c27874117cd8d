"""SRM Critic, paper §3.2: a bounded corrective call on stagnation, whose actions go to the buffer.

One role per module; the package itself only re-exports the names the rest of fastslow uses:

- ``scheduler``: ``Critic``, the per-episode budget, cooldown, back-off and effect window around a
  backend, and ``make_critic``, which builds the one ``critic.kind`` names;
- ``base``: ``CriticBackend``, the contract both backends satisfy, and ``MemoryFetch``, AMM's evidence;
- ``rules``: ``RulesCritic``, the deterministic backend, and its candidate lists;
- ``llm``: ``LlmCritic``, the paper's backend: its prompt (``prompts/critic.j2``), the prompt's action
  list and constraints, and the reply parser.
"""

from fastslow.reflection.critic.base import CriticBackend, MemoryFetch
from fastslow.reflection.critic.llm import (
    LlmCritic,
    authors_constraints,
    critic_action_list,
    parse_critic_reply,
    render_critic_prompt,
)
from fastslow.reflection.critic.rules import RulesCritic, relevant_actions, unvisited_rooms
from fastslow.reflection.critic.scheduler import Critic, Signature, make_critic

__all__ = [
    "Critic",
    "CriticBackend",
    "LlmCritic",
    "MemoryFetch",
    "RulesCritic",
    "Signature",
    "authors_constraints",
    "critic_action_list",
    "make_critic",
    "parse_critic_reply",
    "relevant_actions",
    "render_critic_prompt",
    "unvisited_rooms",
]
