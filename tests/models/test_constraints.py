"""Constrained decoding (issue #30): the constraint types and their GBNF, checked by llama.cpp's own grammar
engine; the embedded model's constrained answers; the scripted model, the wrappers and ``call_model``; and
what the openai backend puts on the wire for each ``constraint_format`` (the real llama.cpp server is in
test_constraints_server.py)."""

from __future__ import annotations

import ctypes
import itertools
import math
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import llama_cpp
import pytest
from loopback_servers import CannedServer, completion_json

from fastslow.errors import ModelError, UsageError
from fastslow.events import ListSink, ModelCall
from fastslow.models import (
    Choice,
    ConstraintError,
    ConstraintViolationError,
    FoldSystem,
    Grammar,
    Message,
    ModelConfig,
    Regex,
    call_model,
    make_model,
    to_gbnf,
)
from fastslow.models.breaker import CircuitBreaker
from fastslow.models.local_backend import _vocab_only, check_gbnf
from fastslow.models.openai_backend import constraint_request
from fastslow.models.scripted import ScriptedModel

# --- llama.cpp's grammar engine as the oracle --------------------------------------------------------------


class GrammarEngine:
    """llama.cpp's GBNF parser and grammar sampler on the embedded GGUF's vocabulary (no weights): whether
    a grammar parses, and whether it accepts a text, token by token, then end of generation."""

    def __init__(self) -> None:
        self.llama = _vocab_only()
        self.vocab = llama_cpp.llama_model_get_vocab(self.llama.model)
        self.eos = llama_cpp.llama_vocab_eos(self.vocab)

    def _allowed(self, sampler: Any, token: int) -> bool:
        data = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, 0.0, 0.0))
        candidates = llama_cpp.llama_token_data_array(data, 1, -1, False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
        return not math.isinf(data[0].logit)

    def accepts(self, gbnf: str, text: str) -> bool:
        check_gbnf(gbnf)  # never hand llama.cpp a grammar it cannot parse: it would crash the process
        sampler = llama_cpp.llama_sampler_init_grammar(self.vocab, gbnf.encode(), b"root")
        assert sampler, gbnf
        try:
            for token in self.llama.tokenize(text.encode(), add_bos=False, special=False):
                if not self._allowed(sampler, token):
                    return False
                llama_cpp.llama_sampler_accept(sampler, token)
            return self._allowed(sampler, self.eos)
        finally:
            llama_cpp.llama_sampler_free(sampler)


@pytest.fixture(scope="module")
def engine() -> GrammarEngine:
    return GrammarEngine()


# --- to_gbnf ---------------------------------------------------------------------------------------------


def test_choice_is_an_alternation_of_escaped_literals() -> None:
    assert to_gbnf(Choice(("look around", "open door to kitchen"))) == (
        'root ::= "look around" | "open door to kitchen"'
    )
    tricky = Choice(('say "hi"', "back\\slash", "two\nlines", "tab\there", "café 温度 😀", "bell\x07"))
    assert to_gbnf(tricky) == (
        'root ::= "say \\"hi\\"" | "back\\\\slash" | "two\\nlines" | "tab\\there" | '
        '"café 温度 😀" | "bell\\x07"'
    )


def test_choice_accepts_exactly_its_options(engine: GrammarEngine) -> None:
    options = ('say "hi"', "back\\slash", "two\nlines", "café 温度 😀", "", "a", "ab")
    gbnf = to_gbnf(Choice(options))
    for text in options:
        assert engine.accepts(gbnf, text), text
    for text in ("say hi", 'say "hi', "back\\\\slash", "two lines", "cafe", "abc", "b", " a"):
        assert not engine.accepts(gbnf, text), text


def test_choice_takes_a_list_and_needs_an_option() -> None:
    assert Choice(["a", "b"]).options == ("a", "b")  # type: ignore[arg-type]
    with pytest.raises(ConstraintError, match="at least one option"):
        Choice(())
    with pytest.raises(ConstraintError, match="must be strings"):
        Choice(("a", 1))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pattern", "gbnf"),
    [
        ("(look around|open door to [a-z]+)", 'root ::= ("look around" | "open door to " [a-z]+)'),
        ("^look|go$", 'root ::= "look" | "go"'),
        (r"x{2}y{2,}z{,3}w{1,4}v{,}", 'root ::= "x"{2} "y"{2,} "z"{0,3} "w"{1,4} "v"{0,}'),
        (r"[\w.-]+@\d\.com", 'root ::= [a-zA-Z0-9_.\\x2D]+ "@" [0-9] ".com"'),
        (r"[^]a]", "root ::= [^\\x5Da]"),
        (r".\s\D\W", "root ::= [^\\x0A] [ \\x09\\x0A\\x0D\\x0C\\x0B] [^0-9] [^a-zA-Z0-9_]"),
        (r"\S", "root ::= [^ \\x09\\x0A\\x0D\\x0C\\x0B]"),
        (r"(?:ab)?c*|", 'root ::= ("ab")? "c"* | ""'),
        (r"\$\^\(\)\[\]\{\}\|\?\*\+\.\\", 'root ::= "$^()[]{}|?*+.\\\\"'),
        (r"\x41\u00e9\n\t", 'root ::= "Aé\\n\\t"'),
        ("a{}b{x", 'root ::= "a{}b{x"'),
        (r'say "(yes|no)"', 'root ::= "say \\"" ("yes" | "no") "\\""'),
    ],
)
def test_regex_to_gbnf(pattern: str, gbnf: str) -> None:
    assert to_gbnf(Regex(pattern)) == gbnf


REGEX_CASES = [
    # pattern, the alphabet of the exhaustive short strings, longer examples
    ("(look around|open door to [a-z]+)", "lokd ", ("look around", "open door to kitchen", "open door to ")),
    ("a{2,3}b?", "ab", ("aaab",)),
    ("(ab|c)*d", "abcd", ("abcabd", "ababcd")),
    (r"[^a-c]x", "abdx-\n", ()),
    (r"\d+(\.\d{1,2})?", "1.0a", ("12.34", "12.345", "1.")),
    (r"[\w-]+", "a_-! ", ("open-door_2",)),
    (".?a", "a\nb", ()),
    (r"[]a-]b", "]a-b", ()),
    (r"\s?\S", " \ta", ()),
    ("^(a|)b$", "ab$^", ()),
    ("caf[éè] [à-ä]", "cé à", ("café à", "cafè ä", "cafe a", "café å")),
    (r'"x\\"', 'x"\\', ()),
]
MAX_TEXTS = 2000
"""Exhaustive strings per case: as long as the alphabet allows within this many."""


def short_texts(alphabet: str) -> set[str]:
    texts: set[str] = set()
    for n in itertools.count():
        more = {"".join(p) for p in itertools.product(alphabet, repeat=n)}
        if len(texts) + len(more) > MAX_TEXTS:
            return texts
        texts |= more
    raise AssertionError("unreachable")


@pytest.mark.parametrize(("pattern", "alphabet", "examples"), REGEX_CASES)
def test_regex_grammar_accepts_what_re_fullmatch_does(
    engine: GrammarEngine, pattern: str, alphabet: str, examples: tuple[str, ...]
) -> None:
    """Every short string over the alphabet, and the examples: llama.cpp's engine running the converted
    grammar agrees with Python's ``re.fullmatch`` on each."""
    gbnf = to_gbnf(Regex(pattern))
    matched = 0
    for text in sorted(short_texts(alphabet) | set(examples)):
        expected = re.fullmatch(pattern, text) is not None
        assert engine.accepts(gbnf, text) == expected, (pattern, gbnf, text)
        matched += expected
    assert matched > 0  # the case exercises accepted strings, not only rejected ones


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        ("a*?", "lazy quantifier"),
        ("a++", "possessive quantifier"),
        ("(?=a)a", "group construct '(?='"),
        ("(?P<x>a)", "group construct '(?P'"),
        ("(?i)a", "group construct '(?i'"),
        (r"\bword", "word boundary"),
        (r"(a)\1", "backreference"),
        ("a^b", "anchor '^'"),
        ("a$b", "anchor '$'"),
        (r"[\D]", "negated class \\D inside"),
        (r"\Aa", "anchor \\A"),
    ],
)
def test_unsupported_regex_is_one_line_naming_the_construct(pattern: str, named: str) -> None:
    with pytest.raises(ConstraintError) as info:
        Regex(pattern)
    message = str(info.value)
    assert named in message and "not supported" in message and "\n" not in message
    assert isinstance(info.value, UsageError) and isinstance(info.value, ValueError)


def test_not_a_regex_and_grammar_without_root() -> None:
    with pytest.raises(ConstraintError, match="not a regular expression"):
        Regex("(a")
    with pytest.raises(ConstraintError, match="root rule"):
        Grammar('answer ::= "a"')


def test_grammar_is_used_as_given() -> None:
    gbnf = 'root ::= verb " " noun\nverb ::= "open" | "close"\nnoun ::= [a-z]+'
    assert to_gbnf(Grammar(gbnf)) == gbnf


def test_every_produced_grammar_parses(engine: GrammarEngine) -> None:
    produced = [to_gbnf(Regex(pattern)) for pattern, _, _ in REGEX_CASES]
    produced += [to_gbnf(Choice(("a", 'q"', "\\", "\n", "é", "\x00x")))]
    for gbnf in produced:
        check_gbnf(gbnf)  # raises ConstraintError if llama.cpp's parser rejects it
        llama_cpp.llama_grammar.LlamaGrammar.from_string(gbnf, verbose=False)


def test_a_grammar_llama_cpp_cannot_parse_is_a_one_line_error(engine: GrammarEngine) -> None:
    with pytest.raises(ConstraintError) as info:
        check_gbnf('root ::= "open" noun')
    assert "Undefined rule identifier 'noun'" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConstraintError, match="unexpected end of input"):
        check_gbnf('root ::= "a')


# --- the embedded model ----------------------------------------------------------------------------------

ACTIONS = ("look around", "open door to kitchen", "pick up thermometer")
KITCHEN: list[Message] = [
    {"role": "system", "content": "You are an agent in a house. Answer with the next action only."},
    {"role": "user", "content": "You are in the hallway. The kitchen door is closed. What do you do next?"},
]


@pytest.fixture(scope="module")
def local() -> Iterator[Any]:
    yield make_model(ModelConfig(max_tokens=16))


def test_embedded_choice_returns_exactly_one_option(local: Any) -> None:
    sink = ListSink()
    local.complete(KITCHEN, max_tokens=4)  # load and warm up: the timing below is one constrained call
    start = time.perf_counter()
    c = call_model(local, KITCHEN, sink=sink, role="sage_plan", step=2, constraint=Choice(ACTIONS))
    elapsed = time.perf_counter() - start
    assert c.text in ACTIONS
    assert 0 < c.completion_tokens <= 16 and elapsed < 10
    (event,) = sink.events
    assert isinstance(event, ModelCall) and event.constraint == "choice" and event.completion == c.text


def test_embedded_regex_answer_matches(local: Any) -> None:
    pattern = "(look around|open door to [a-z]+)"
    c = local.complete(KITCHEN, constraint=Regex(pattern))
    assert re.fullmatch(pattern, c.text), c.text


def test_embedded_grammar_answer_is_a_sentence(local: Any) -> None:
    grammar = Grammar('root ::= verb " " noun\nverb ::= "open" | "close"\nnoun ::= "door" | "window" | "box"')
    c = local.complete(KITCHEN, constraint=grammar)
    assert re.fullmatch("(open|close) (door|window|box)", c.text), c.text


def test_embedded_answer_cut_short_is_a_violation(local: Any) -> None:
    with pytest.raises(ConstraintViolationError, match=r"it used all max_tokens=2: cut short\?") as info:
        local.complete(KITCHEN, max_tokens=2, constraint=Regex("[a-z]{20,30}"))
    assert isinstance(info.value, ModelError)  # the caller falls back, as on any failed call


def test_embedded_choice_cut_short_says_so(local: Any) -> None:
    with pytest.raises(ConstraintViolationError, match="cut short by max_tokens=1"):
        local.complete(KITCHEN, max_tokens=1, constraint=Choice(ACTIONS))


def test_embedded_refuses_a_bad_grammar_without_crashing(local: Any) -> None:
    with pytest.raises(ConstraintError, match="Undefined rule identifier"):
        local.complete(KITCHEN, constraint=Grammar("root ::= action"))
    assert local.complete(KITCHEN, max_tokens=2).text  # the process (and the model) are still there


def test_embedded_check_constraints_passes(local: Any) -> None:
    local.check_constraints()


# --- scripted model, wrappers, call_model ---------------------------------------------------------------

QUESTION: list[Message] = [{"role": "user", "content": "What next?"}]


def test_scripted_checks_replies_against_the_constraint() -> None:
    model = ScriptedModel(["open door to kitchen", "dance", "x", "anything at all"])
    assert model.complete(QUESTION, constraint=Choice(ACTIONS)).text == "open door to kitchen"
    with pytest.raises(
        ConstraintViolationError, match=r"scripted model scripted answered 'dance', not one of"
    ):
        model.complete(QUESTION, constraint=Choice(ACTIONS))
    with pytest.raises(ConstraintViolationError, match="does not match the pattern"):
        model.complete(QUESTION, constraint=Regex("[0-9]+"))
    assert model.complete(QUESTION, constraint=Grammar('root ::= "a"')).text == "anything at all"
    assert [type(c).__name__ for c in model.constraints] == ["Choice", "Choice", "Regex", "Grammar"]


def test_scripted_unconstrained_and_check_constraints_use_no_reply() -> None:
    model = ScriptedModel(["free text"])
    model.check_constraints()
    assert model.complete(QUESTION).text == "free text"
    assert model.constraints == [None]


def test_fold_and_breaker_pass_the_constraint_on() -> None:
    inner = ScriptedModel(["look around"], cycle=True)
    model = FoldSystem(CircuitBreaker(inner, "sage", after=1, cooldown_s=60))
    sink = ListSink()
    c = call_model(model, KITCHEN, sink=sink, role="sage_plan", step=0, constraint=Choice(ACTIONS))
    assert c.text == "look around" and inner.constraints == [Choice(ACTIONS)]
    model.check_constraints()
    assert isinstance(sink.events[0], ModelCall) and sink.events[0].constraint == "choice"


def test_a_violation_does_not_open_the_breaker() -> None:
    breaker = CircuitBreaker(ScriptedModel(["dance"], cycle=True), "sage", after=1, cooldown_s=60)
    for _ in range(3):
        with pytest.raises(ConstraintViolationError):
            breaker.complete(QUESTION, constraint=Choice(ACTIONS))
    assert not breaker.is_open and breaker.failures == 0


def test_call_model_records_the_kind_on_failed_and_skipped_calls() -> None:
    sink = ListSink()
    with pytest.raises(ConstraintViolationError):
        call_model(
            ScriptedModel(["dance"]), QUESTION, sink=sink, role="critic", step=1, constraint=Regex("a+")
        )
    breaker = CircuitBreaker(ScriptedModel([]), "sage", after=1, cooldown_s=60)  # used up: fails
    for _ in range(2):
        with pytest.raises(ModelError):
            call_model(breaker, QUESTION, sink=sink, role="sage_plan", step=1, constraint=Choice(("a",)))
    call_model(ScriptedModel(["free"]), QUESTION, sink=sink, role="sage_plan", step=1)
    events = [e for e in sink.events if isinstance(e, ModelCall)]
    assert [(e.constraint, bool(e.error), bool(e.skipped)) for e in events] == [
        ("regex", True, False),
        ("choice", True, False),
        ("choice", False, True),
        (None, False, False),
    ]


def test_model_call_events_without_the_field_still_read() -> None:
    line = '{"event": "model_call", "step": 1, "role": "sage_plan", "backend": "b", "model": "m"}'
    old = ModelCall.model_validate_json(line)
    assert old.constraint is None


# --- the openai backend's wire forms --------------------------------------------------------------------


def test_constraint_request_per_form() -> None:
    choice, regex, grammar = Choice(("a", "b")), Regex("^open [a-z]+$"), Grammar('root ::= "x"')
    assert constraint_request("llama_cpp", choice) == {"extra_body": {"grammar": 'root ::= "a" | "b"'}}
    assert constraint_request("llama_cpp", regex) == {"extra_body": {"grammar": 'root ::= "open " [a-z]+'}}
    assert constraint_request("llama_cpp", grammar) == {"extra_body": {"grammar": 'root ::= "x"'}}
    assert constraint_request("vllm", choice) == {
        "extra_body": {"structured_outputs": {"choice": ["a", "b"]}}
    }
    assert constraint_request("vllm", regex) == {
        "extra_body": {"structured_outputs": {"regex": "open [a-z]+"}}
    }
    assert constraint_request("vllm", grammar) == {
        "extra_body": {"structured_outputs": {"grammar": 'root ::= "x"'}}
    }
    assert constraint_request("vllm_guided", choice) == {"extra_body": {"guided_choice": ["a", "b"]}}
    assert constraint_request("vllm_guided", regex) == {"extra_body": {"guided_regex": "open [a-z]+"}}
    assert constraint_request("vllm_guided", grammar) == {"extra_body": {"guided_grammar": 'root ::= "x"'}}
    schema = constraint_request("openai", choice)["response_format"]
    assert schema["type"] == "json_schema" and schema["json_schema"]["strict"] is True
    assert schema["json_schema"]["schema"] == {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["a", "b"]}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    pattern = constraint_request("openai", regex)["response_format"]["json_schema"]["schema"]["properties"]
    assert pattern == {"answer": {"type": "string", "pattern": "^(?:open [a-z]+)$"}}
    with pytest.raises(ConstraintError, match="no grammar"):
        constraint_request("openai", grammar)
    with pytest.raises(ConstraintError, match="constraint_format is none"):
        constraint_request("none", choice)


def openai_cfg(base_url: str, **overrides: object) -> ModelConfig:
    fields: dict[str, object] = {"kind": "openai", "base_url": base_url, "model": "canned", "max_tokens": 8}
    fields.update(overrides)
    return ModelConfig.model_validate(fields)


def test_unconstrained_requests_are_unchanged(canned: Callable[..., CannedServer]) -> None:
    server = canned([completion_json("hi")])
    model = make_model(openai_cfg(server.base_url, constraint_format="llama_cpp"))
    model.complete(QUESTION)
    model.complete(QUESTION, constraint=None)
    expected = {"model": "canned", "messages": QUESTION, "max_tokens": 8, "temperature": 0.0}
    assert server.bodies == [expected, expected]


def test_vllm_form_merges_with_extra_body(canned: Callable[..., CannedServer]) -> None:
    server = canned([completion_json("b")])
    cfg = openai_cfg(server.base_url, constraint_format="vllm", extra_body={"top_k": 5})
    assert make_model(cfg).complete(QUESTION, constraint=Choice(("a", "b"))).text == "b"
    assert server.bodies[0]["top_k"] == 5
    assert server.bodies[0]["structured_outputs"] == {"choice": ["a", "b"]}


def test_openai_form_unwraps_the_json_answer(canned: Callable[..., CannedServer]) -> None:
    server = canned([completion_json('{"answer": "open door to kitchen"}'), completion_json("open door")])
    model = make_model(openai_cfg(server.base_url, constraint_format="openai"))
    assert model.complete(QUESTION, constraint=Regex("open door to [a-z]+")).text == "open door to kitchen"
    assert server.bodies[0]["response_format"]["type"] == "json_schema"  # type: ignore[index]
    with pytest.raises(ConstraintViolationError, match="not the JSON object"):
        model.complete(QUESTION, constraint=Choice(("open door",)))


def test_an_answer_outside_the_constraint_is_a_violation(canned: Callable[..., CannedServer]) -> None:
    server = canned([completion_json("Hello there", usage={"prompt_tokens": 3, "completion_tokens": 2})])
    model = make_model(openai_cfg(server.base_url, constraint_format="vllm_guided"))
    with pytest.raises(ConstraintViolationError, match="answered 'Hello there', not one of"):
        model.complete(QUESTION, constraint=Choice(("a", "b")))
    assert server.bodies[0]["guided_choice"] == ["a", "b"]


def test_none_form_refuses_constrained_calls_before_sending(canned: Callable[..., CannedServer]) -> None:
    server = canned([completion_json("a")])
    model = make_model(openai_cfg(server.base_url))
    with pytest.raises(ConstraintError) as info:
        model.complete(QUESTION, constraint=Choice(("a", "b")))
    assert "constraint_format is none" in str(info.value) and "\n" not in str(info.value)
    assert server.posts == 0
    assert model.complete(QUESTION).text == "a"  # unconstrained calls are as before


def test_constraint_format_is_an_openai_field() -> None:
    with pytest.raises(ValueError, match="constraint_format is used only by kind openai"):
        ModelConfig(kind="local", constraint_format="vllm")
    dumped = ModelConfig(kind="openai", model="m", constraint_format="vllm").model_dump()
    assert dumped["constraint_format"] == "vllm"
    assert "constraint_format" not in ModelConfig().model_dump()
