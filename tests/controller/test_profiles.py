"""The arbitration profile registry (``fastslow.build.PROFILES``): a name, or a profile's import path."""

from __future__ import annotations

import pytest

from fastslow.build import PROFILES, profile
from fastslow.controller import authors, escalation
from fastslow.controller.arbiter import ArbiterBase
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
