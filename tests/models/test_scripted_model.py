"""The scripted backend: deterministic replies for tests, and a record of what it was asked."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from fastslow.errors import ModelError
from fastslow.models import Message, ModelConfig, make_model
from fastslow.models.scripted import ScriptedModel


def ask(text: str) -> list[Message]:
    return [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]


def test_replies_in_order_and_records_prompts() -> None:
    model = ScriptedModel(["go to kitchen", "open fridge"])
    first = model.complete(ask("where now?"))
    second = model.complete(ask("and then?"))
    assert (first.text, second.text) == ("go to kitchen", "open fridge")
    assert model.prompts == [ask("where now?"), ask("and then?")]
    assert (first.prompt_tokens, first.completion_tokens) == (4, 3)  # whitespace-separated words
    assert (first.backend, first.model, first.attempts) == ("scripted", "scripted", 1)


def test_used_up_replies_are_a_model_error() -> None:
    model = ScriptedModel(["only one"])
    model.complete(ask("a"))
    with pytest.raises(ModelError, match="used up its 1 replies"):
        model.complete(ask("b"))
    assert len(model.prompts) == 2  # the failed call was still asked


def test_cycled_replies() -> None:
    model = ScriptedModel(["a", "b"], cycle=True)
    assert [model.complete(ask("x")).text for _ in range(5)] == ["a", "b", "a", "b", "a"]


def test_callable_replies_see_the_conversation() -> None:
    def echo_last(messages: Sequence[Message]) -> str:
        return messages[-1]["content"].upper()

    model = ScriptedModel(echo_last)
    assert model.complete(ask("look around")).text == "LOOK AROUND"


def test_recorded_prompts_are_copies() -> None:
    model = ScriptedModel(["ok"])
    messages = ask("first")
    model.complete(messages)
    messages[1]["content"] = "changed later"
    assert model.prompts[0][1]["content"] == "first"


def test_made_from_config() -> None:
    model = make_model(ModelConfig(kind="scripted", replies=["x", "y"], cycle=True, model="fake-sage"))
    model.check_available()
    assert [model.complete(ask("q")).text for _ in range(3)] == ["x", "y", "x"]
    assert model.model == "fake-sage"
