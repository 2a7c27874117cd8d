"""A model server that fails during an eval (paper §4: Sage on an OpenAI-compatible server) does not
abort the run and does not hide: every episode ends, the failed calls have their own counter in
metrics.json, the console says so once, and the report carries a warning.

The server is a real loopback HTTP server answering every chat request with the same bad answer: a
500, or a 200 whose body is an HTML page (which used to abort the eval with an AttributeError)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from loopback_servers import Answer, CannedServer, completion_json

from fastslow.events import EpisodeEnd, ModelCall, read_events


@pytest.mark.parametrize(
    "answer",
    [
        Answer('{"error": "overloaded"}', status=500),
        # the backend's own test covers an HTML page with 200 (test_openai_answers.py); the end-to-end
        # run of that answer repeats this one's path, so it runs with the slow tests
        pytest.param(
            Answer("<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
            marks=pytest.mark.slow,
        ),
    ],
    ids=["http-500", "200-html"],
)
def test_failed_model_calls_are_counted_and_told(
    answer: Answer, canned: Callable[..., CannedServer], tmp_path: Path
) -> None:
    server = canned([answer])
    out = tmp_path / "run"
    args = ["eval", "--config", "baseline", "--set", "test", "--tasks", "13", "--limit-per-task", "1"]
    for override in (
        "sage.model.kind=openai",
        f"sage.model.base_url={server.base_url}",
        "sage.model.model=canned",
        "sage.model.max_retries=1",
        "sage.model.backoff_s=0",
        "env.step_limit=12",
    ):
        args += ["-o", override]
    proc = subprocess.run(
        [sys.executable, "-m", "fastslow.cli", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    log = next((out / "events").glob("*.jsonl"))
    events = read_events(log)
    assert isinstance(events[-1], EpisodeEnd)
    failed = [e for e in events if isinstance(e, ModelCall) and e.error]
    assert failed and all(e.attempts == 2 for e in failed)
    usage = json.loads((out / "metrics.json").read_text())["usage"]
    assert usage["model_call_errors"] == len(failed) == usage["model_calls"]
    by_role = usage["model_call_errors_by_role"]
    assert set(by_role) <= {"sage_plan", "sage_ground"} and sum(by_role.values()) == len(failed)
    console = " ".join(proc.stdout.split())
    for role in by_role:  # once per role, however many calls of that role failed
        assert console.count(f"warning: {role} model call failed") == 1, proc.stdout
    report = subprocess.run(
        [sys.executable, "-m", "fastslow.cli", "report", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr
    assert f"{len(failed)} of {len(failed)} model calls failed" in (out / "report" / "report.md").read_text()


def test_a_model_list_that_is_not_json_is_one_line_before_anything_is_written(
    canned: Callable[..., CannedServer], tmp_path: Path
) -> None:
    server = canned([completion_json("1. look around")], models=Answer("<html>login</html>", "text/html"))
    out = tmp_path / "run"
    args = ["eval", "--config", "baseline", "--set", "test", "--tasks", "13", "--limit-per-task", "1"]
    args += ["-o", "sage.model.kind=openai", "-o", f"sage.model.base_url={server.base_url}"]
    args += ["-o", "sage.model.model=canned", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "fastslow.cli", *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and server.base_url in lines[0] and "not a model list" in lines[0], proc.stderr
    assert not out.exists()
