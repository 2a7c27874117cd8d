"""Constrained decoding (issue #30) against llama.cpp's real OpenAI-compatible server (`python -m
llama_cpp.server` on the embedded GGUF, loopback): the llama_cpp form's answers satisfy their constraints,
and the start-up probe catches, in one line, a server that ignores the configured form (vLLM's fields,
which llama.cpp's server drops) or refuses it (OpenAI's json_schema, which it answers with an HTTP error).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from fastslow.errors import ModelUnavailableError
from fastslow.events import ListSink, ModelCall
from fastslow.models import (
    ChatModel,
    Choice,
    ConstraintError,
    ConstraintViolationError,
    Grammar,
    Message,
    ModelConfig,
    Regex,
    call_model,
    make_model,
)
from integration.llama_server import SERVED_MODEL, serve_llama

ACTIONS = ("look around", "open door to kitchen", "pick up thermometer")
KITCHEN: list[Message] = [
    {"role": "system", "content": "You are an agent in a house. Answer with the next action only."},
    {"role": "user", "content": "You are in the hallway. The kitchen door is closed. What do you do next?"},
]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a `python -m llama_cpp.server` on a free loopback port: one thread, small context."""
    with serve_llama(tmp_path_factory.mktemp("llama_server")) as base_url:
        yield base_url


def served(base_url: str, form: str) -> ChatModel:
    return make_model(
        ModelConfig.model_validate(
            {
                "kind": "openai",
                "base_url": base_url,
                "model": SERVED_MODEL,
                "max_tokens": 16,
                "timeout_s": 30.0,
                "max_retries": 0,
                "constraint_format": form,
            }
        )
    )


def test_llama_cpp_form_choice(llama_server: str) -> None:
    model = served(llama_server, "llama_cpp")
    model.check_constraints()
    sink = ListSink()
    c = call_model(model, KITCHEN, sink=sink, role="sage_plan", step=4, constraint=Choice(ACTIONS))
    assert c.text in ACTIONS
    assert 0 < c.completion_tokens <= 16
    (event,) = sink.events
    assert isinstance(event, ModelCall) and event.constraint == "choice" and event.error is None


def test_llama_cpp_form_regex_and_grammar(llama_server: str) -> None:
    model = served(llama_server, "llama_cpp")
    pattern = "(look around|open door to [a-z]+)"
    assert re.fullmatch(pattern, model.complete(KITCHEN, constraint=Regex(pattern)).text)
    grammar = Grammar('root ::= verb " " noun\nverb ::= "open" | "close"\nnoun ::= "door" | "window" | "box"')
    assert re.fullmatch("(open|close) (door|window|box)", model.complete(KITCHEN, constraint=grammar).text)


def test_same_answer_in_process_and_on_the_server(llama_server: str) -> None:
    """Same GGUF, same grammar, temperature 0: the embedded backend and the server agree."""
    constraint = Choice(ACTIONS)
    local = make_model(ModelConfig(max_tokens=16, n_ctx=1024))
    remote = served(llama_server, "llama_cpp")
    assert (
        local.complete(KITCHEN, constraint=constraint).text
        == remote.complete(KITCHEN, constraint=constraint).text
    )


def test_a_bad_grammar_never_reaches_the_server(llama_server: str) -> None:
    model = served(llama_server, "llama_cpp")
    with pytest.raises(ConstraintError, match="Undefined rule identifier 'noun'"):
        model.complete(KITCHEN, constraint=Grammar('root ::= "open " noun'))
    model.check_available()  # still up: llama.cpp's server dies on a grammar it cannot parse


def test_probe_catches_a_server_that_ignores_the_form(llama_server: str) -> None:
    """llama.cpp's server drops vLLM's fields without a word and answers unconstrained."""
    for form in ("vllm", "vllm_guided"):
        model = served(llama_server, form)
        with pytest.raises(ModelUnavailableError) as info:
            model.check_constraints()
        message = str(info.value)
        assert "\n" not in message
        assert f"constraint_format {form} ignored a constrained request" in message
        assert "set model.constraint_format" in message and "cut short" not in message
        with pytest.raises(ConstraintViolationError, match="not one of"):
            model.complete(KITCHEN, constraint=Choice(ACTIONS))


def test_probe_catches_a_server_that_refuses_the_form(llama_server: str) -> None:
    """llama.cpp's server knows response_format types text and json_object only: json_schema is an error."""
    model = served(llama_server, "openai")
    with pytest.raises(ModelUnavailableError) as info:
        model.check_constraints()
    message = str(info.value)
    assert "\n" not in message and len(message) < 600
    assert "constraint_format openai failed a constrained request" in message and "HTTP 500" in message


def test_probe_without_a_form(llama_server: str) -> None:
    model = served(llama_server, "none")
    model.check_available()
    with pytest.raises(ModelUnavailableError, match=r"model\.constraint_format is none") as info:
        model.check_constraints()
    assert "\n" not in str(info.value)
    with pytest.raises(ConstraintError, match="constraint_format is none"):
        model.complete(KITCHEN, constraint=Choice(ACTIONS))
