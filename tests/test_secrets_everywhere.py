"""No password a run is given leaves the process (issue 49): whatever URL-valued setting holds it
(``sage.model.base_url``, ``critic.model.base_url``, ``amm.dsn``), it is in no file of the run
directory (event logs, run.json, config.yaml, metrics.json, the response cache), no file of its report,
no answer of the viewer, and no console line, even where a model error quotes the URL
(``model_call.error``, ``sage_call.error``, ``critic_call.error``, ``env_step.reason``, a circuit
breaker's log line).

The fast tests check each way out on its own, without ScienceWorld: the event writer (every field, the
line still valid JSON), the pre-check that keeps it cheap, the openai backend's errors and log lines,
log records and uncaught exceptions' tracebacks, the console's step lines. One end-to-end run then
plays an episode against a real loopback model server that refuses every chat request, with a
distinct password in each setting, and greps every byte that came out."""

from __future__ import annotations

import http.client
import io
import json
import logging
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from fastslow.errors import ModelUnavailableError
from fastslow.eval.live import StepPrinter
from fastslow.eval.report import write_report
from fastslow.events import (
    CriticCall,
    EndState,
    EnvStep,
    EpisodeEnd,
    Event,
    JsonlWriter,
    MemoryFallback,
    MemoryWrite,
    ModelCall,
    SageCall,
    parse_event,
    read_events,
)
from fastslow.models.base import ModelCallError
from fastslow.models.config import ModelConfig
from fastslow.models.openai_backend import OpenAIChatModel
from fastslow.redact import may_hold_secret, redact_argv, redact_data, redact_json, redact_text
from fastslow.view.server import serve
from models.loopback_servers import Answer, CannedServer

PW = "PW-4b1e0c77"
URL = f"http://u:{PW}@127.0.0.1:9/v1"
ERROR = f"ModelCallError: {URL} (canned) failed after 1 attempt(s): HTTP 400: bad request"

REFUSED = Answer('{"error": {"message": "bad request"}}', status=400)
"""Every chat request refused at once (400 is not retried), so each call's error quotes the URL."""


def _events() -> list[Event]:
    """One event of each kind a model error, a store error or an environment error lands in."""
    return [
        ModelCall(
            step=4,
            role="sage_plan",
            backend="openai",
            model="canned",
            error=ERROR,
            messages=[{"role": "user", "content": f"connect with api_key: {PW}, then plan"}],
        ),
        SageCall(step=4, rule="failure_messages", model_calls=1, parsed=[], actions=[], error=ERROR),
        EnvStep(
            step=5,
            action="look around",
            source="fallback",
            reason=f"failure_messages: sage failed ({ERROR}): nearest valid",
            observation="This room is called the kitchen.",
            score=0,
            reward=0,
            moves=5,
            end=EndState.RUNNING,
            n_valid=30,
            duration_ms=1.5,
        ),
        CriticCall(step=6, kind="llm", pattern="repeated_action", budget_left=2, error=ERROR),
        # A secret whose value holds a quote and a comma: masked whole, the line stays JSON.
        MemoryFallback(step=6, trigger="write", target="store", reason=f'store_error: HF_TOKEN={PW}",x'),
        EpisodeEnd(end=EndState.ERROR, final_score=0, steps=6, moves=6, wall_s=1.0, error=ERROR),
    ]


def test_the_event_writer_masks_every_string_it_writes(tmp_path: Path) -> None:
    path = tmp_path / "events" / "13-0006.jsonl"
    plain = MemoryWrite(step=3, record_id="r1", tag="success", subtag="milestone")
    with JsonlWriter(path) as writer:
        for event in [plain, *_events()]:
            writer.emit(event)
    data = path.read_bytes()
    assert PW.encode() not in data
    events = [parse_event(line) for line in data.decode().splitlines()]  # each line still an event
    assert len(events) == 7 and all(
        type(a) is type(b) for a, b in zip(events, [plain, *_events()], strict=True)
    )
    masked = ERROR.replace(PW, "***")
    for event in events[1:]:
        shown = event.model_dump(mode="json")
        assert masked in json.dumps(shown) or "HF_TOKEN=***" in json.dumps(shown)
    assert isinstance(events[1], ModelCall) and events[1].messages is not None
    assert events[1].messages[0]["content"] == "connect with api_key: ***, then plan"
    # A line with nothing to hide is written exactly as before (the same bytes, no copy).
    first = data.split(b"\n", 1)[0].decode()
    assert first == plain.model_dump_json()
    assert redact_json(first) is first


@pytest.mark.parametrize(
    "text",
    [
        URL,
        f"postgresql://u:{PW}@h/db",
        f"host=h password={PW}",
        f"host=h PASSWORD = '{PW}'",
        f"password\n= {PW}",  # a newline between key and value: JSON writes it as \n
        f"password\t: {PW}",
        f'{{"api_key": "{PW}"}}',
        f"{{token: {PW}}}",
        f"HF_TOKEN={PW}",
        f"credentials={PW}",
        f"api_\u212aey: {PW}",  # the Kelvin sign: a case-insensitive regex reads it as a k
        f"passwd=\u00e9{PW}",
    ],
)
def test_the_pre_check_misses_no_secret(text: str) -> None:
    """Whatever ``redact_text`` or ``redact_data`` would mask, the fast pre-check flags, in the text and
    in the text as JSON (as pydantic writes it: other characters as themselves)."""
    assert redact_text(text) != text
    assert PW not in redact_text(text) and PW not in json.dumps(redact_data({"detail": text}))
    for shown in (text, json.dumps(text, ensure_ascii=False), json.dumps({"k": text}, ensure_ascii=False)):
        assert may_hold_secret(shown)
    line = json.dumps({"event": "env_step", "reason": text}, ensure_ascii=False)
    assert PW not in redact_json(line) and json.loads(redact_json(line))["event"] == "env_step"


@pytest.mark.parametrize(
    ("text", "maybe"),
    [
        ('{"prompt_tokens":12,"completion_tokens":3,"max_tokens":16}', False),
        ("amm.password_env=PG_PW api_key_env=OPENAI_KEY_VAR tokenizer=x keyboard", False),
        ("This room is called the kitchen. In it, you see: a stove, turned off.", False),
        ("You see a key, a token of appreciation.", True),  # checked in full: nothing to mask
    ],
)
def test_texts_without_secrets_are_unchanged(text: str, maybe: bool) -> None:
    assert may_hold_secret(text) is maybe
    line = json.dumps({"event": "env_step", "observation": text}, separators=(",", ":"))
    assert redact_text(text) == text and redact_json(line) is line


def test_the_openai_backends_errors_and_log_lines_name_the_server_without_its_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = CannedServer([REFUSED])
    try:
        base_url = server.base_url.replace("http://", f"http://u:{PW}@")
        model = OpenAIChatModel(ModelConfig(kind="openai", model="unlisted", base_url=base_url))
        with caplog.at_level(logging.WARNING):
            model.check_available()  # the server lists "canned" only: a warning naming the server
        with pytest.raises(ModelCallError) as failed:
            model.complete([{"role": "user", "content": "hi"}])
    finally:
        server.close()
    assert "u:***@127.0.0.1" in str(failed.value) and PW not in str(failed.value)
    assert "does not list model unlisted" in caplog.text and PW not in caplog.text
    down = OpenAIChatModel(
        ModelConfig(kind="openai", model="m", base_url=f"http://u:{PW}@127.0.0.1:9/v1", timeout_s=2)
    )
    with pytest.raises(ModelUnavailableError) as refused:
        down.check_available()  # nothing listens on port 9
    assert "u:***@127.0.0.1:9" in str(refused.value) and PW not in str(refused.value)


def test_log_records_are_masked_whoever_logs_them(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        logging.getLogger("fastslow.models.breaker").warning("sage model unavailable (last: %s)", ERROR)
        logging.getLogger("httpx").info("HTTP Request: POST %s/chat/completions", URL)
        try:
            raise RuntimeError(f"cannot reach {URL}")
        except RuntimeError:
            logging.getLogger("fastslow.eval.executors").exception("worker failed")
        logging.getLogger("fastslow.eval").warning("100%% of %d episodes", 3)  # no secret: as it was
    assert PW not in caplog.text and caplog.text.count("u:***@127.0.0.1:9") == 3
    assert caplog.records[-1].args == (3,) and "100% of 3 episodes" in caplog.text


def test_an_uncaught_exceptions_traceback_is_masked() -> None:
    """In the main thread and in any other (Python's own hooks are replaced on import)."""
    script = (
        "import threading\n"
        "import fastslow.redact\n"
        "def fail():\n"
        f"    raise OSError({URL!r})\n"
        "t = threading.Thread(target=fail)\n"
        "t.start()\n"
        "t.join()\n"
        f"raise RuntimeError('cannot reach {URL}')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert PW not in done.stderr
    assert "Exception in thread" in done.stderr and "OSError: http://u:***@127.0.0.1:9/v1" in done.stderr
    assert "Traceback" in done.stderr and "RuntimeError: cannot reach http://u:***@" in done.stderr
    # A bug in a command: typer puts its own hook in place, which fastslow's entry point replaces.
    command = (
        "import fastslow.cli as cli\n"
        "@cli.app.command('boom')\n"
        "def boom() -> None:\n"
        f"    raise RuntimeError('cannot reach {URL}')\n"
        "cli.main(['boom'])\n"
    )
    done = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and PW not in done.stderr
    assert "RuntimeError: cannot reach http://u:***@127.0.0.1:9/v1" in done.stderr


def test_a_url_valued_command_line_option_is_recorded_masked() -> None:
    """``--ray-address`` is the one URL-valued setting given as an option, not in the config: run.json's
    command records it through ``redact_argv``."""
    argv = ["fastslow", "eval", "--ray-address", f"ray://u:{PW}@head:10001", f"--ray-address=ray://u:{PW}@h"]
    assert redact_argv(argv)[2:] == ["--ray-address", "ray://u:***@head:10001", "--ray-address=ray://u:***@h"]


def test_the_consoles_step_lines_are_masked() -> None:
    """``fastslow run`` prints every event as it comes (errors included) before any file is written."""
    out = io.StringIO()
    printer = StepPrinter(Console(file=out, width=400, color_system=None))
    for event in _events():
        printer.emit(event)
    assert PW not in out.getvalue() and "u:***@127.0.0.1:9" in out.getvalue()


# --- end to end ---------------------------------------------------------------------------------------


@pytest.fixture
def amm_dsn(request: pytest.FixtureRequest) -> Iterator[tuple[str, str] | None]:
    """(the test server's DSN, a fresh table) for a PostgreSQL store; None without a server (the run
    then checks the two model URLs on the SQLite store)."""
    try:
        dsn: str = request.getfixturevalue("pg_dsn")
    except pytest.skip.Exception:
        yield None
        return
    from fastslow.memory.stores.postgres import PostgresStore

    table = f"secrets_{uuid.uuid4().hex[:8]}"
    yield dsn, table
    PostgresStore(dsn, table).drop()


def _with_password(dsn: str, secret: str) -> str:
    """The test server's DSN as a URL holding ``secret`` as its password (trust auth accepts any)."""
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    p = conninfo_to_dict(dsn)
    user, db = quote(str(p.get("user", "postgres"))), p.get("dbname", "postgres")
    return f"postgresql://{user}:{secret}@{p.get('host', '127.0.0.1')}:{p.get('port', '5432')}/{db}"


def _viewer_answers(run: Path) -> str:
    """The viewer's page and every answer of its API for ``run``, over HTTP, as one text."""
    server = serve([run])
    texts: list[str] = []

    def get(path: str) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        try:
            conn.request("GET", path)
            answer = conn.getresponse()
            assert answer.status == 200, path
            return answer.read().decode()
        finally:
            conn.close()

    try:
        texts += [get("/"), get("/api/runs"), get("/api/attributions")]
        episodes = get("/api/runs/0/episodes")
        texts += [episodes, *(get(f"/api/runs/0/episodes/{e['id']}") for e in json.loads(episodes))]
    finally:
        server.shutdown()
    return "\n".join(texts)


def _files_holding(folder: Path, secret: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_no_password_of_any_url_setting_leaves_a_run(amm_dsn: tuple[str, str] | None, tmp_path: Path) -> None:
    """`fastslow eval` of one episode (8 steps: Sage fails at step 4 and 7, the Critic at 6, AMM writes)
    with a password in each URL-valued setting, `fastslow report`, the viewer: grep every byte."""
    secrets = {k: f"PW{k}{uuid.uuid4().hex}" for k in ("sage", "critic", "amm")}
    server = CannedServer([REFUSED])
    base = server.base_url.removeprefix("http://")
    overrides = [
        "sage.model.kind=openai",
        "sage.model.model=canned",
        f"sage.model.base_url=http://u:{secrets['sage']}@{base}",
        "sage.model.breaker_after=1",  # the breaker's console line quotes the last error
        "critic.model.kind=openai",
        "critic.model.model=unlisted",  # the start-up check's warning names the server
        f"critic.model.base_url=http://u:{secrets['critic']}@{base}",
        "amm.retrieval.t1=false",  # T1 would stand in for the forced Sage rounds
        "amm.retrieval.ranking=bm25",  # no sentence embedder to load: half the run's time
        "env.step_limit=8",
    ]
    if amm_dsn is not None:
        dsn, table = amm_dsn
        overrides += [
            "amm.store=postgres",
            f"amm.table={table}",
            f"amm.dsn={_with_password(dsn, secrets['amm'])}",
        ]
    else:
        del secrets["amm"]
    out = tmp_path / "run"
    fastslow = [sys.executable, "-m", "fastslow.cli"]
    command = [*fastslow, "eval", "--config", "full", "--set", "test", "--tasks", "13"]
    command += ["--limit-per-task", "1", "--out", str(out)]
    for override in overrides:
        command += ["-o", override]
    consoles = []
    try:
        for args in (command, [*fastslow, "report", str(out)]):
            done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
            assert done.returncode == 0, done.stderr[-2000:]
            consoles.append(done.stdout + done.stderr)
    finally:
        server.close()
    events = [e for p in sorted((out / "events").glob("*.jsonl")) for e in read_events(p)]
    # The run did put the URLs where the issue found them, masked.
    failed = {e.role for e in events if isinstance(e, ModelCall) and e.error and "u:***@" in e.error}
    assert failed == {"sage_plan", "critic"}
    assert any(isinstance(e, SageCall) and e.error and "u:***@" in e.error for e in events)
    assert any(isinstance(e, CriticCall) and e.error and "u:***@" in e.error for e in events)
    assert any(isinstance(e, EnvStep) and "u:***@" in e.reason for e in events)
    if amm_dsn is not None:
        assert any(isinstance(e, MemoryWrite) for e in events), "the workers could not use the DSN"
    console = "\n".join(consoles)
    assert "does not list model unlisted" in console and "sage model unavailable" in console
    # A log an older fastslow wrote, quoting a password: its report is masked too.
    older = tmp_path / "older"
    shutil.copytree(out, older, ignore=shutil.ignore_patterns("report"))
    log = next((older / "events").glob("*.jsonl"))
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    step = next(r for r in rows if r["event"] == "env_step")
    step["reason"] = f"sage failed ({URL})"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_report([older], older / "report")
    assert PW not in (older / "report" / "report.html").read_text()
    answers = _viewer_answers(out) + _viewer_answers(older)
    for name, secret in secrets.items():
        assert _files_holding(out, secret) == [], name  # the run directory and its report/ folder
        assert secret not in console, name
        assert secret not in answers, name
    assert PW not in answers and "u:***@" in answers
