"""Fixtures for the model tests (Sage/Critic models, paper §3 and §4): the loopback servers of
loopback_servers.py, started per test and closed after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from loopback_servers import MODEL_LIST, Answer, CannedServer, SilentServer


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    """A SilentServer; its ``connections`` count the attempts a client made."""
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture
def silent_server(silent: SilentServer) -> str:
    """Base URL of a SilentServer."""
    return silent.base_url


@pytest.fixture
def canned() -> Iterator[Callable[..., CannedServer]]:
    """Factory: ``canned(chat_answers, models_answer)`` starts a CannedServer, closed after the test."""
    started: list[CannedServer] = []

    def start(chat: list[Answer], models: Answer = MODEL_LIST) -> CannedServer:
        started.append(CannedServer(chat, models))
        return started[-1]

    yield start
    for server in started:
        server.close()
