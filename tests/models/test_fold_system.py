"""``system_message: fold``: the model gets no system message, the system prompt leads the first user
message, and the ModelCall event logs what the model got (docs/models.md: the authors' serving setup)."""

from __future__ import annotations

from collections.abc import Callable

from loopback_servers import CannedServer, completion_json

from fastslow.events import ListSink, ModelCall
from fastslow.models import FoldSystem, Message, ModelConfig, call_model, fold_system, make_model

CONVERSATION = [
    Message(role="system", content="You are Sage."),
    Message(role="user", content="Plan the task."),
    Message(role="assistant", content="1. look around"),
    Message(role="user", content="Ground it."),
]


def test_the_system_prompt_leads_the_first_user_message() -> None:
    folded = fold_system(CONVERSATION)
    assert [m["role"] for m in folded] == ["user", "assistant", "user"]
    assert folded[0]["content"] == "You are Sage.\n\nPlan the task."
    assert folded[1:] == CONVERSATION[2:]
    assert fold_system(folded) == folded  # folding twice changes nothing


def test_a_lone_system_message_still_reaches_the_model() -> None:
    assert fold_system([Message(role="system", content="rules")]) == [Message(role="user", content="rules")]


def test_fold_is_built_from_the_config_and_logged_as_sent() -> None:
    cfg = ModelConfig(kind="scripted", replies=["ok", "ok"], system_message="fold")
    model = make_model(cfg)
    assert isinstance(model, FoldSystem) and model.backend == "scripted"
    sink = ListSink()
    done = call_model(model, CONVERSATION, sink=sink, role="sage_plan", step=3)
    assert done.text == "ok"
    (event,) = [e for e in sink.events if isinstance(e, ModelCall)]
    assert event.messages is not None
    assert [m["role"] for m in event.messages] == ["user", "assistant", "user"]
    assert event.messages[0]["content"].startswith("You are Sage.")
    # The default sends the system message as it is.
    plain = make_model(ModelConfig(kind="scripted", replies=["ok"]))
    assert not isinstance(plain, FoldSystem)


def test_an_openai_server_gets_no_system_message(canned: Callable[..., CannedServer]) -> None:
    server = canned([completion_json("1. look around", {"prompt_tokens": 9, "completion_tokens": 4})])
    cfg = ModelConfig(kind="openai", base_url=server.base_url, model="canned", system_message="fold")
    done = call_model(make_model(cfg), CONVERSATION[:2], sink=ListSink(), role="sage_plan", step=0)
    assert done.text == "1. look around"
    (body,) = server.bodies
    sent = body["messages"]
    assert isinstance(sent, list)
    assert [m["role"] for m in sent] == ["user"]
    assert sent[0]["content"] == "You are Sage.\n\nPlan the task."
