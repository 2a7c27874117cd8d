"""The arbitration profile registry (``fastslow.build.PROFILES``): a name, or a profile's import path."""

from __future__ import annotations

import pytest

from fastslow.agents.base import Decision
from fastslow.build import PROFILES, profile
from fastslow.controller import authors, escalation
from fastslow.controller.arbiter import Arbiter, ArbiterBase, Block, Escalate, Rule
from fastslow.errors import UsageError


def test_a_profile_is_found_by_name_or_by_import_path() -> None:
    assert PROFILES == {"swiftsage": escalation.PROFILE, "authors": authors.PROFILE}
    assert profile("swiftsage") is escalation.PROFILE
    assert profile("fastslow.controller.authors:PROFILE") is authors.PROFILE
    assert authors.PROFILE.authors_only and not escalation.PROFILE.authors_only


def test_an_import_path_that_names_no_profile_is_refused() -> None:
    with pytest.raises(UsageError, match="no profile"):
        profile("fastslow.controller.authors:NOTHING")
    with pytest.raises(UsageError, match="not a Profile"):
        profile("fastslow.controller.arbiter:ArbiterBase")


def test_both_arbiters_take_their_defaults_from_the_base() -> None:
    assert issubclass(escalation.SwiftSageArbiter, ArbiterBase)
    assert issubclass(authors.AuthorsArbiter, ArbiterBase)


def test_the_base_answers_every_question_the_arbiter_is_asked() -> None:
    """A profile overrides only what differs: ``ArbiterBase`` has every ``Arbiter`` member."""
    asked = {name for name in vars(Arbiter) if not name.startswith("_")} | set(Arbiter.__annotations__)
    assert "start_iteration" in asked and "sage_planned" in asked
    assert asked <= set(dir(ArbiterBase))


def test_a_blocked_escalation_carries_the_action_in_sages_place() -> None:
    look = Decision("look around", "swift")
    assert Escalate(Rule.NO_PROGRESS, "stuck", Block.COOLDOWN, lambda: look).instead is not None
    with pytest.raises(ValueError, match="exactly when Sage is blocked"):
        Escalate(Rule.NO_PROGRESS, "stuck", Block.COOLDOWN)
    with pytest.raises(ValueError, match="exactly when Sage is blocked"):
        Escalate(Rule.NO_PROGRESS, "stuck", None, lambda: look)
