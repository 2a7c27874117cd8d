"""`fastslow view`'s server against hostile input, over real HTTP (``http.client``) on a real oracle run
of three short dev episodes: a forged ``Host`` header (DNS rebinding) gets 403; a port outside
0-65535 is one line and exit 2 before anything is read; a run with a corrupted middle line in one log
and another log cut to half its size still lists every episode, marks those two with the reason, and
answers every request with JSON (an unreadable episode: 422 with the reason), never a dropped
connection; no answer holds a password a run record or a log was given."""

from __future__ import annotations

import http.client
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.eval.evaluate import evaluate
from fastslow.view.server import ViewerServer, serve

PW = "pw-5f0d2a"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "oracle"
    evaluate(load_config("oracle"), select_episodes("dev", tasks="7,13,17", limit_per_task=1), out)
    return out


@pytest.fixture
def server(run: Path) -> Iterator[ViewerServer]:
    s = serve([run])
    yield s
    s.shutdown()


def get(server: ViewerServer, path: str, host: str | None = "own") -> tuple[int, Any]:
    """GET ``path`` with the given ``Host`` header (``own``: the server's; None: no header)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", f"127.0.0.1:{server.port}" if host == "own" else host)
        conn.endheaders()
        answer = conn.getresponse()
        assert answer.getheader("Content-Type", "").startswith(("application/json", "text/html"))
        body = answer.read()
        return answer.status, json.loads(body) if path.startswith("/api") else body.decode()
    finally:
        conn.close()


def test_only_requests_for_its_own_host_are_answered(server: ViewerServer) -> None:
    port = server.port
    for host in (
        "127.0.0.1",
        f"127.0.0.1:{port}",
        "localhost",
        f"LocalHost:{port}",
        f"[::1]:{port}",
        "[::1]",
    ):
        status, runs = get(server, "/api/runs", host)
        assert status == 200 and runs[0]["episodes"] == 3, host
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1.evil.example",
                 f"localhost.:{port}", "", None):  # fmt: skip
        for path in ("/", "/api/runs", "/api/runs/0/episodes"):
            status, body = get(server, path, host)
            assert status == 403, (host, path)
            assert "own host" in (body["error"] if isinstance(body, dict) else body)


def test_the_bound_host_is_served_too(run: Path) -> None:
    s = serve([run], 0, host="127.0.0.2")  # any 127/8 address is loopback on Linux
    try:
        assert s.url == f"http://127.0.0.2:{s.port}/"
        conn = http.client.HTTPConnection("127.0.0.2", s.port, timeout=30)
        conn.request("GET", "/api/runs")  # Host: 127.0.0.2:PORT
        assert conn.getresponse().status == 200
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.2", s.port, timeout=30)
        conn.request("GET", "/api/runs", headers={"Host": "rebound.example"})
        assert conn.getresponse().status == 403
        conn.close()
    finally:
        s.shutdown()


@pytest.mark.parametrize("port", ["70000", "-1", "65536"])
def test_a_port_out_of_range_is_one_line(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a directory that holds no run: the port is checked before any run is read or socket bound
    with pytest.raises(SystemExit) as exc:
        main(["view", str(tmp_path / "no-run"), "--port", port])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: --port must be 0-65535 (0 picks a free port), got {port}"


@pytest.fixture
def damaged(run: Path, tmp_path: Path) -> Path:
    """A copy of the run with a corrupted middle line in 13-0004's log and 17-0062's log cut to half."""
    copy = tmp_path / "damaged"
    shutil.copytree(run, copy)
    log = copy / "events" / "13-0004.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[len(lines) // 2] = '{"event": "env_step", "step": 3, garbage\n'
    log.write_text("".join(lines))
    cut = copy / "events" / "17-0062.jsonl"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    return copy


def test_corrupt_and_cut_logs_are_marked_never_dropped(run: Path, damaged: Path) -> None:
    s = serve([damaged])
    try:
        status, runs = get(s, "/api/runs")
        assert status == 200 and len(runs) == 1
        status, episodes = get(s, "/api/runs/0/episodes")
        assert status == 200
        by_id = {e["id"]: e for e in episodes}
        assert sorted(by_id) == ["07-0150", "13-0004", "17-0062"]
        corrupt, cut, intact = by_id["13-0004"], by_id["17-0062"], by_id["07-0150"]
        assert corrupt["outcome"] == "unreadable" and corrupt["score"] is None
        assert f"line {len(lines(run, '13-0004')) // 2 + 1} is not a valid event" in corrupt["problem"]
        assert corrupt["task_id"] == 13  # its header is still read
        assert cut["outcome"] == "unreadable" and "cut off" in cut["problem"]
        assert intact["outcome"] == "success" and "problem" not in intact
        # the intact episode is listed exactly as in the undamaged run
        original = serve([run])
        try:
            assert next(e for e in get(original, "/api/runs/0/episodes")[1] if e["id"] == "07-0150") == intact
        finally:
            original.shutdown()

        status, answer = get(s, "/api/runs/0/episodes/13-0004")
        assert (
            status == 422 and "13-0004.jsonl line" in answer["error"] and "Traceback" not in answer["error"]
        )
        status, answer = get(s, "/api/runs/0/episodes/17-0062")
        assert status == 200 and "cut off" in answer["problem"]
        status, answer = get(s, "/api/runs/0/episodes/07-0150")
        assert status == 200 and answer["problem"] is None and answer["end"]["final_score"] == 100
        # the server goes on answering after those
        assert get(s, "/api/runs/0/episodes")[0] == 200
        assert get(s, "/api/runs/9/episodes/07-0150") == (404, {"error": "no such episode"})
        assert get(s, "/api/runs/" + "9" * 5000 + "/episodes")[0] == 404
    finally:
        s.shutdown()


def lines(run: Path, episode: str) -> list[str]:
    return (run / "events" / f"{episode}.jsonl").read_text().splitlines()


def test_no_answer_holds_a_password(run: Path, tmp_path: Path) -> None:
    """A run.json written before redaction existed, and a log line quoting a DSN: served redacted."""
    copy = tmp_path / "old"
    shutil.copytree(run, copy)
    record = json.loads((copy / "run.json").read_text())
    dsn = f"postgresql://u:{PW}@127.0.0.1:5432/db"
    record["overrides"] = [f"amm.dsn={dsn}", f"amm.password={PW}"]
    record["starts"][0]["command"] = ["fastslow", "eval", "-o", f"amm.dsn={dsn}", "--api-key", PW]
    (copy / "run.json").write_text(json.dumps(record))
    log = copy / "events" / "07-0150.jsonl"
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    step = next(r for r in rows if r["event"] == "env_step")
    step["observation"] = f"store failed: connection to {dsn} refused; host=h password={PW}"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = serve([copy])
    try:
        answers = [
            get(s, p)[1] for p in ("/api/runs", "/api/runs/0/episodes", "/api/runs/0/episodes/07-0150")
        ]
    finally:
        s.shutdown()
    text = json.dumps(answers)
    assert PW not in text
    assert "amm.dsn=postgresql://u:***@127.0.0.1:5432/db" in text and "password=***" in text
    assert answers[0][0]["starts"][0]["command"][-2:] == ["--api-key", "***"]
