"""call_model: one typed ModelCall event per call, failures included, then the error goes to the caller."""

from __future__ import annotations

import pytest

from fastslow.errors import ModelError
from fastslow.events import ListSink, ModelCall, parse_event
from fastslow.models import Message, call_model
from fastslow.models.scripted import ScriptedModel

PROMPT: list[Message] = [{"role": "user", "content": "what should I do next"}]


def only_event(sink: ListSink) -> ModelCall:
    (event,) = sink.events
    assert isinstance(event, ModelCall)
    return event


def test_success_event() -> None:
    sink = ListSink()
    c = call_model(ScriptedModel(["open door"]), PROMPT, sink=sink, role="sage_plan", step=12)
    event = only_event(sink)
    assert (event.backend, event.model, event.role, event.step) == ("scripted", "scripted", "sage_plan", 12)
    assert (event.prompt_tokens, event.completion_tokens, event.attempts) == (5, 2, 1)
    assert event.latency_s == c.latency_s >= 0
    assert event.error is None
    assert event.messages == [{"role": "user", "content": "what should I do next"}]
    assert event.completion == "open door"
    assert parse_event(event.model_dump_json()) == event  # survives the JSONL round trip


def test_failure_event_then_reraise() -> None:
    sink = ListSink()
    model = ScriptedModel([])
    with pytest.raises(ModelError):
        call_model(model, PROMPT, sink=sink, role="critic", step=40)
    event = only_event(sink)
    assert event.error is not None and event.error.startswith("ModelCallError: scripted model used up")
    assert (event.role, event.step, event.completion, event.completion_tokens) == ("critic", 40, None, 0)


def test_text_can_be_left_out_of_the_log() -> None:
    sink = ListSink()
    call_model(ScriptedModel(["x"]), PROMPT, sink=sink, role="bench", step=0, record_text=False)
    event = only_event(sink)
    assert event.messages is None and event.completion is None
